//! The table-format trait: how a table file is written ([`TableWriter`]) and read
//! ([`TableReader`]), chosen once per store ([`TableFormat`], from
//! [`crate::options::TableKind`]).
//!
//! The engine and the layouts see tables only through these traits: flush and compaction
//! write through [`TableFormat::builder`], the table cache opens through
//! [`TableFormat::open`] and holds `Arc<dyn TableReader>`, and reads probe a table's filter,
//! look a key up and iterate it without knowing its bytes (RocksDB's `TableFactory` /
//! `TableBuilder` / `TableReader` split). Implementations: [`super::sst::SstFormat`], and
//! [`super::dtable::DTableFormat`], which appends.
//!
//! # Generations
//!
//! A table file may grow after it was first committed (an appendable table adds segments at
//! its end and commits each with a new footer): every committed state of the file is a
//! *generation*, named by the file's size at its commit, which the MANIFEST records as the
//! file's size. A reader is opened for one generation ([`TableFormat::open`] gets the size)
//! and reads nothing past it, so a reader of an older generation stays valid while the file
//! grows, and the table cache keys open tables by number *and* size.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::cache::block_cache::BlockCache;
use crate::env::{ReadCause, ReadFile, WriteFile};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::SeqNo;
use crate::options::TableOptions;
use crate::table::bloom::BloomFilter;
use crate::table::properties::TableProperties;

/// What a finished table holds: the facts the MANIFEST records about it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableSummary {
    /// File size in bytes (the generation a reader opens, see the module docs).
    pub size: u64,
    /// Smallest internal key (empty when the table has no entries).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty when the table has no entries).
    pub largest: Vec<u8>,
    /// Smallest sequence number of any entry.
    pub smallest_seq: SeqNo,
    /// Largest sequence number of any entry.
    pub largest_seq: SeqNo,
    /// Entries (puts, pointers and tombstones).
    pub entries: u64,
    /// Tombstones among the entries.
    pub tombstones: u64,
}

/// One generation of one table file: what the table cache keys open tables by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableId {
    /// The file number.
    pub number: u64,
    /// The file's size at the committed generation (the MANIFEST's size for the file).
    pub size: u64,
}

/// Who a table is: the store that wrote it and its own file number. A table written by a
/// store records both (`docs/format/sst.md`, properties 17 and 18), so that a table file
/// replaced by another table of the same store, or by one of another store, is found when
/// it is opened ([`check_identity`]) instead of answering reads with another file's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableIdentity {
    /// The store's id (MANIFEST tag 17).
    pub store_id: u64,
    /// The table's file number.
    pub number: u64,
}

/// The identity `table` records, if it records both its store id and its number (what
/// [`TableFormat::identity`] returns for a format whose reader keeps its properties).
pub fn recorded_identity(table: &dyn TableReader) -> Option<TableIdentity> {
    let p = table.properties();
    Some(TableIdentity {
        store_id: p.store_id?,
        number: p.file_number?,
    })
}

/// Check that `table` is the file the MANIFEST lists as table `number` of the store
/// `store_id` (`None`: the store's id is unknown, e.g. a MANIFEST written before store ids
/// existed; only the number is checked). A table that records no identity (written before
/// identities existed) passes: there is nothing to compare.
///
/// The table cache runs this on every table it opens, and [`TableFormat::open`]
/// implementations check the number; `verify` can run it on the tables it opens.
///
/// # Errors
/// [`crate::Error::Corruption`] naming the table's file when its recorded file number or
/// store id differs.
pub fn check_identity(table: &dyn TableReader, number: u64, store_id: Option<u64>) -> Result<()> {
    let p = table.properties();
    if let Some(recorded) = p.file_number
        && recorded != number
    {
        return Err(crate::Error::corruption(
            table.path(),
            0,
            format!(
                "the file is table {recorded} of its store, but the MANIFEST lists it as table \
                 {number}: a table file was copied or renamed over another one"
            ),
        ));
    }
    if let (Some(recorded), Some(expected)) = (p.store_id, store_id)
        && recorded != expected
    {
        return Err(crate::Error::corruption(
            table.path(),
            0,
            format!(
                "the table belongs to another store: it records store {recorded:016x}, this \
                 store is {expected:016x}; a table copied from another store is never read"
            ),
        ));
    }
    Ok(())
}

/// How tables read their blocks (the same for every table of a store).
#[derive(Clone, Debug, Default)]
pub struct TableReadOptions {
    /// The shared block cache, if any (keyed by file number and block offset; blocks of a
    /// growing file never change, so one cache serves every generation).
    pub block_cache: Option<Arc<BlockCache>>,
    /// Whether data-block reads check their checksums (metadata reads always do).
    pub verify_checksums: bool,
}

/// A table format: makes writers and opens readers. One per store, shared.
pub trait TableFormat: Send + Sync + fmt::Debug {
    /// The format's name (`sst`), as [`crate::options::TableKind::name`] gives it.
    fn name(&self) -> &'static str;

    /// The format's durable state in a new store: what the MANIFEST's table-axis records
    /// are replayed into (e.g. an appendable table's committed segments; the version set
    /// keeps it, [`crate::version::set::VersionSet::axes`]). Default: nothing, and any table
    /// record is refused.
    fn empty_state(&self) -> Box<dyn crate::axis::AxisState> {
        Box::new(crate::axis::NoState(crate::axis::Axis::Table))
    }

    /// Whether tables of this format grow after their first commit ([`TableFormat::appender`];
    /// see the module docs). Such a table's file changes after it is committed, so a
    /// checkpoint copies its committed prefix instead of hard-linking it. Default: false.
    fn appendable(&self) -> bool {
        false
    }

    /// A writer of one more segment of generation `id` of an existing table (an appendable
    /// format only): `file` is the table file reopened after its first `id.size` bytes
    /// ([`crate::env::Env::reopen`], which cut whatever an append that never committed left
    /// there), `committed` a reader of it. Entries added go into a new segment after the
    /// committed bytes; `finish` writes the table's new metadata after the segment, syncs,
    /// and describes the whole new generation: its `size` is what the MANIFEST must record
    /// to commit the append. Until that edit commits, readers of the recorded generation see
    /// none of it, and a crash leaves it as an uncommitted tail that readers ignore and the
    /// next append cuts. `identity` must be the table's own.
    ///
    /// # Errors
    /// [`crate::Error::Unsupported`] for a format that does not append (the default);
    /// [`crate::Error::Corruption`] when generation `id` cannot be read or is another
    /// table's; I/O errors.
    fn appender(
        &self,
        file: WriteFile,
        committed: ReadFile,
        id: TableId,
        options: &TableOptions,
        identity: Option<TableIdentity>,
    ) -> Result<Box<dyn TableWriter>> {
        let _ = (file, committed, options, identity);
        Err(crate::Error::Unsupported(format!(
            "table {} cannot grow: the {} format does not append",
            id.number,
            self.name()
        )))
    }

    /// A writer of a new table into `file` (created, empty), which records `identity` in
    /// the table (`None`: a table written outside a store, which records none).
    fn builder(
        &self,
        file: WriteFile,
        options: &TableOptions,
        identity: Option<TableIdentity>,
    ) -> Box<dyn TableWriter>;

    /// Open generation `size` of table `number` from `file` (see the module docs): read and
    /// check what the reader keeps in memory, and that a file recording its own number
    /// records `number` ([`check_identity`] without a store id).
    ///
    /// # Errors
    /// [`crate::Error::Corruption`] naming the file and offset for a file shorter than
    /// `size`, damaged metadata or another table's number; I/O errors.
    fn open(
        &self,
        file: ReadFile,
        id: TableId,
        options: &TableReadOptions,
    ) -> Result<Arc<dyn TableReader>>;

    /// The identity a complete table in `file` records, read without checking it against
    /// anything: the obsolete-file sweep asks before it deletes a table no version lists,
    /// so that a table of another store dropped into the directory is left alone. `None`
    /// when the table records none or the format cannot tell. Default: `None` (such a
    /// format's unlisted tables are swept as crash debris).
    ///
    /// # Errors
    /// A file that is not a complete table (crash debris: a table cut short); I/O errors.
    fn identity(&self, file: ReadFile) -> Result<Option<TableIdentity>> {
        let _ = file;
        Ok(None)
    }
}

/// The SHA-1 of a user key ([`TableWriter::add_hashed`]).
pub type KeyDigest = [u8; 20];

/// Writes one table from entries in internal-key order. Driven by one job.
pub trait TableWriter: Send + fmt::Debug {
    /// Add an entry; keys must arrive in strictly increasing internal-key order.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a key out of order; I/O errors.
    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()>;

    /// [`TableWriter::add`] for an entry whose user key's SHA-1 the caller has already
    /// computed: `digest` must be the SHA-1 of `ikey`'s user key. A format that places keys
    /// by that hash (`htable`) uses it instead of hashing the key again; the others ignore
    /// it. A compaction of a layout that splits its output by the same hash (LSM-trie,
    /// [`crate::compaction::Partition`]) so hashes each key once.
    ///
    /// # Errors
    /// As [`TableWriter::add`].
    fn add_hashed(&mut self, ikey: &[u8], value: &[u8], digest: &KeyDigest) -> Result<()> {
        let _ = digest;
        self.add(ikey, value)
    }

    /// The size the file would have if finished now (approximately).
    fn estimated_size(&self) -> u64;

    /// Entries added so far.
    fn num_entries(&self) -> u64;

    /// Write the table's metadata, sync the file and describe it. The directory entry is
    /// the caller's to sync.
    ///
    /// # Errors
    /// I/O errors.
    fn finish(self: Box<Self>) -> Result<TableSummary>;

    /// Give up: the caller removes the file.
    fn abandon(self: Box<Self>);

    /// Say that the table will be laid on top of `pile` (a layout that keeps tables in
    /// piles, LSM-trie's containers): a format whose filters are clustered across a pile
    /// (`htable`) copies the pile's filters into this table, so that one read answers for
    /// the whole pile. Called before the first [`TableWriter::add`]. Default: ignored.
    fn lay_on(&mut self, pile: &Pile) {
        let _ = pile;
    }
}

/// The pile of tables a new table is laid on ([`TableWriter::lay_on`]).
#[derive(Debug)]
pub struct Pile {
    /// The pile's newest table.
    pub below: Arc<dyn TableReader>,
    /// The file numbers of every table of the pile, newest first.
    pub live: Vec<u64>,
    /// The most tables one cluster of filters may hold, the new table included: a new
    /// table on a cluster that is full starts a new one.
    pub max: usize,
}

/// How one read of a table is done: why (its bytes are counted under `cause`) and the
/// reader's own choices, which a user passes per read (`ReadOptions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableRead {
    /// Why the bytes are read.
    pub cause: ReadCause,
    /// Check each data block's checksum: `Some` decides for this read, `None` keeps the
    /// store's `Options::verify_checksums`.
    pub verify_checksums: Option<bool>,
    /// Keep the blocks read in the block cache (a compaction's reads never do).
    pub fill_cache: bool,
}

impl From<ReadCause> for TableRead {
    /// A read for `cause` with the store's choices: checksums as `Options::verify_checksums`
    /// says, blocks cached.
    fn from(cause: ReadCause) -> TableRead {
        TableRead {
            cause,
            verify_checksums: None,
            fill_cache: true,
        }
    }
}

/// One open generation of a table file. Immutable and shared by readers.
pub trait TableReader: Send + Sync + fmt::Debug {
    /// The file number it was opened under.
    fn file_number(&self) -> u64;

    /// The table file's path.
    fn path(&self) -> &Path;

    /// The generation's size in bytes.
    fn file_size(&self) -> u64;

    /// What the table holds (entries, tombstones, pointers, sizes).
    fn properties(&self) -> &TableProperties;

    /// The reader as [`std::any::Any`], for a layout that knows its format's own reader
    /// (the trie asks an `htable`'s filter cluster).
    fn as_any(&self) -> &dyn std::any::Any;

    /// A filter over the table's user keys that a layout may keep with the file's metadata
    /// (so later reads ask it without opening the table), if the format has one.
    fn filter(&self) -> Option<&Arc<BloomFilter>> {
        None
    }

    /// Start loading the cache line of the filter that answers `hash` (a hint).
    fn touch_filter(&self, hash: u64) {
        if let Some(f) = self.filter() {
            f.touch(hash);
        }
    }

    /// False only if the table certainly holds no entry for the user key whose
    /// [`crate::table::bloom::hash64`] is `hash`.
    fn may_contain_hash(&self, hash: u64) -> bool {
        self.filter().is_none_or(|f| f.may_contain_hash(hash))
    }

    /// The first entry whose internal key is `>= seek_key`, if its user key is `user_key`
    /// (the newest version visible at the snapshot `seek_key` encodes), as (internal key,
    /// stored value). The caller has asked the filter already.
    ///
    /// # Errors
    /// [`crate::Error::Corruption`] naming file and offset; I/O errors.
    fn lookup(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        read: TableRead,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>>;

    /// An iterator over every entry in internal-key order, reading as `read` says.
    fn iter(self: Arc<Self>, read: TableRead) -> Box<dyn InternalIterator>;

    /// About where in the file the entries at or after internal key `ikey` start (LevelDB's
    /// `ApproximateOffsetOf`): 0 before the first entry, the end of the data past the last.
    /// Reads nothing but what the reader keeps in memory.
    ///
    /// # Errors
    /// [`crate::Error::Corruption`] naming file and offset.
    fn approximate_offset_of(&self, ikey: &[u8]) -> Result<u64>;

    /// Read every byte and check every checksum and invariant the format has.
    ///
    /// # Errors
    /// [`crate::Error::Corruption`] naming file and offset.
    fn verify(&self) -> Result<()>;

    /// The cheap check of a table just written, beyond what opening it checked (see
    /// [`crate::options::NewTableCheck::Quick`]): for `sst`, its first and last data
    /// blocks. Default: [`TableReader::verify`].
    ///
    /// # Errors
    /// [`crate::Error::Corruption`] naming file and offset.
    fn verify_quick(&self) -> Result<()> {
        self.verify()
    }
}
