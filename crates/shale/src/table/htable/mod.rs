//! The `htable` format of LSM-trie (USENIX ATC'15): a table of fixed-size buckets chosen by
//! a hash of the key, so that a lookup reads one bucket and no index
//! (`docs/format/htable.md`, `docs/designs/lsm-trie.md`).
//!
//! ```text
//! [bucket 0][bucket 1] … [bucket m-1]   m × bucket_size bytes; a key's home bucket is
//!                                        suffix(SHA-1(key)) mod m
//! [overflow records]                     groups too large for any bucket, fully indexed
//! [filter cluster]                       2^K column blocks: this table's column filters
//!                                        and those of the older tables of its pile
//! [migration][overflow index][cluster index][properties]   metadata blocks, each + crc32c
//! [footer]                               92 bytes: sizes, handles, version, crc, magic
//! ```
//!
//! Every version of one user key in a table is stored together (a *group*): in its home
//! bucket, in the one bucket its home migrated the key's rank range to, or in the overflow
//! area. The writer places groups when it finishes (it keeps the table in memory: a table
//! is one memtable or one child's share of a container's pile); the reader keeps the
//! migration records, the overflow index and the cluster index in memory, so a lookup
//! reads exactly one bucket (or one overflow record). The filters are asked first, through
//! the filter cluster: one column block answers for every table of the pile
//! ([`HTable::cluster_probe`], [`HTable::load_cluster`]; the trie layout does this).

pub mod cluster;
mod reader;
#[cfg(test)]
mod tests;
mod writer;

use std::sync::Arc;

use sha1::{Digest, Sha1};

use crate::env::{ReadFile, WriteFile};
use crate::error::Result;
use crate::options::TableOptions;
use crate::table::format::{TableFormat, TableId, TableIdentity, TableReadOptions, TableReader};
use crate::table::format::{TableWriter, check_identity};

pub use reader::{HTable, LoadedCluster};
pub use writer::HTableWriter;

/// Magic number at the end of every HTable file: the bytes `SHALEHTB` read as a
/// little-endian u64. On-disk: never change.
pub const HTABLE_MAGIC: u64 = 0x4254_4845_4c41_4853;

/// The HTable format version this code writes. On-disk: bump only with a reader for the
/// old version beside it. Version 2 replaced the whole-table bloom filter of version 1 by
/// column filters clustered across a pile ([`cluster`]); version 1 files are still read.
pub const FORMAT_VERSION: u32 = 2;

/// The oldest format version this code reads.
pub const OLDEST_FORMAT_VERSION: u32 = 1;

/// Length of the footer in bytes.
pub const FOOTER_LEN: usize = 92;

/// Bytes at the start of a bucket: the number of items (u16, little-endian).
pub const BUCKET_HEADER_LEN: usize = 2;

/// Bytes at the end of a bucket: the masked CRC32C of the bucket's other bytes.
pub const BUCKET_TRAILER_LEN: usize = 4;

/// The smallest and largest bucket sizes (the bucket size is `TableOptions::block_size`,
/// clamped to these; 4 KiB by default, the paper's).
pub const MIN_BUCKET_SIZE: usize = 128;
/// See [`MIN_BUCKET_SIZE`].
pub const MAX_BUCKET_SIZE: usize = 64 * 1024;

/// The writer sizes the table so its buckets hold at most this share of their capacity on
/// average (the paper's 95%), leaving room for migration.
pub const FILL_PERCENT: u64 = 95;

/// The 160-bit SHA-1 of a user key: the key's *hashkey*. Its leading bits name the trie
/// containers on the key's path, bits 64..96 are its rank inside a bucket (the HashMark
/// infix), and its last 32 bits choose its bucket.
pub type HashKey = [u8; 20];

/// The hashkey of `user_key`.
pub fn hashkey(user_key: &[u8]) -> HashKey {
    let mut h = Sha1::new();
    h.update(user_key);
    h.finalize().into()
}

/// The first 64 bits of a hashkey, big-endian (the trie path).
pub fn prefix64(h: &HashKey) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[0..8]);
    u64::from_be_bytes(b)
}

/// A key's rank inside a bucket: hashkey bits 64..96, big-endian (the paper's infix). A
/// bucket that migrated keys records the smallest rank it moved (its HashMark).
pub fn rank(h: &HashKey) -> u32 {
    u32::from_be_bytes([h[8], h[9], h[10], h[11]])
}

/// A key's home bucket among `buckets`: the hashkey's last 32 bits, big-endian, modulo
/// the bucket count (the paper's suffix).
pub fn home_bucket(h: &HashKey, buckets: u64) -> u64 {
    u64::from(u32::from_be_bytes([h[16], h[17], h[18], h[19]])) % buckets.max(1)
}

/// The bucket size a table written with `options` uses.
pub fn bucket_size(options: &TableOptions) -> usize {
    options.block_size.clamp(MIN_BUCKET_SIZE, MAX_BUCKET_SIZE)
}

/// The LSM-trie hash table format (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct HTableFormat;

impl TableFormat for HTableFormat {
    fn name(&self) -> &'static str {
        "htable"
    }

    fn builder(
        &self,
        file: WriteFile,
        options: &TableOptions,
        identity: Option<TableIdentity>,
    ) -> Box<dyn TableWriter> {
        Box::new(HTableWriter::new(file, options, identity))
    }

    fn open(
        &self,
        file: ReadFile,
        id: TableId,
        options: &TableReadOptions,
    ) -> Result<Arc<dyn TableReader>> {
        let t = HTable::open(
            file,
            id.number,
            id.size,
            options.block_cache.clone(),
            options.verify_checksums,
        )?;
        check_identity(&t, id.number, None)?;
        Ok(Arc::new(t))
    }

    fn identity(&self, file: ReadFile) -> Result<Option<TableIdentity>> {
        let len = file.len();
        // The number only keys the block cache, and there is none here.
        let t = HTable::open(file, 0, len, None, true)?;
        Ok(crate::table::format::recorded_identity(&t))
    }
}
