//! fjall behind the [`Engine`] trait.

use std::path::Path;
use std::sync::Arc;

use fjall::compaction::Leveled;
use fjall::config::{
    BlockSizePolicy, BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
    PartitioningPolicy, PinningPolicy, RestartIntervalPolicy,
};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use shale::Compression;

use super::{Tuning, mib, peer_err};
use crate::engine::{Engine, EngineResult, Op};

const NAME: &str = "fjall";

/// The major version in Cargo.toml (the crate exports no version string).
const VERSION: &str = "3";

/// A fjall database with one keyspace.
pub struct FjallEngine {
    db: Database,
    ks: Keyspace,
    describe: Vec<String>,
}

fn err(what: &str, e: fjall::Error) -> crate::CliError {
    peer_err(NAME, what, e)
}

/// Keyspace options mirroring Shale's, and the lines that describe them.
fn keyspace_options(t: &Tuning) -> (KeyspaceCreateOptions, Vec<String>) {
    let c = &t.config;
    let s = &t.shale;
    let (compression, compression_name) = match c.compression {
        Compression::None => (CompressionType::None, "none"),
        Compression::Lz4 => (CompressionType::Lz4, "lz4"),
        // fjall's zstd needs its `zstd` feature (C); the peer runs LZ4 in its place.
        Compression::Zstd => (CompressionType::Lz4, "lz4 (fjall without zstd)"),
    };
    let filter = if c.bloom_bits > 0 {
        FilterPolicyEntry::Bloom(BloomConstructionPolicy::BitsPerKey(c.bloom_bits as f32))
    } else {
        FilterPolicyEntry::None
    };
    // fjall sizes level 1 as l0_threshold * table target size; with Shale's defaults
    // (4 * 64 MiB) that is Shale's max_bytes_for_level_base.
    let l0 = u8::try_from(s.level0_compaction_trigger).unwrap_or(u8::MAX);
    let level1 = u64::from(l0) * s.target_file_size;
    let strategy = Leveled::default()
        .with_l0_threshold(l0)
        .with_table_target_size(s.target_file_size)
        .with_level_ratio_policy(vec![s.level_size_multiplier as f32]);
    let restart = u8::try_from(s.table.block_restart_interval).unwrap_or(u8::MAX);
    let o = KeyspaceCreateOptions::default()
        .max_memtable_size(t.write_buffer_size() as u64)
        .data_block_size_policy(BlockSizePolicy::all(s.table.block_size as u32))
        .data_block_restart_interval_policy(RestartIntervalPolicy::all(restart))
        .filter_policy(FilterPolicy::all(filter))
        // fjall's default leaves the last level's filters to the optional "expect hits" mode
        // and compresses only deep levels; Shale filters and compresses every level alike.
        .expect_point_read_hits(false)
        .data_block_compression_policy(CompressionPolicy::all(compression))
        .index_block_compression_policy(CompressionPolicy::all(CompressionType::None))
        // Shale holds each open table's whole index and filter in memory.
        .index_block_pinning_policy(PinningPolicy::all(true))
        .filter_block_pinning_policy(PinningPolicy::all(true))
        .index_block_partitioning_policy(PartitioningPolicy::all(false))
        .filter_block_partitioning_policy(PartitioningPolicy::all(false))
        .compaction_strategy(Arc::new(strategy));
    let cache = if c.cache_size > 0 {
        mib(c.cache_size as u64)
    } else {
        "0 (none)".to_string()
    };
    let describe = vec![
        format!("fjall:      version {VERSION}.x, one keyspace, leveled compaction"),
        format!(
            "  memtable: max_memtable_size={} (writes stall at 4 sealed memtables; no equivalent of Shale's limit of {})",
            mib(t.write_buffer_size() as u64),
            s.max_immutable_memtables
        ),
        format!(
            "  tables:   block_size={} restart_interval={restart} bloom_bits={} (every level) compression={compression_name} (every level)",
            s.table.block_size, c.bloom_bits
        ),
        format!(
            "  cache:    cache_size={cache}, index+filter pinned for open tables, max_cached_files={}",
            s.max_open_files
        ),
        format!(
            "  levels:   table_target_size={} level 1={} (l0_threshold x target) ratio={}",
            mib(s.target_file_size),
            mib(level1),
            s.level_size_multiplier
        ),
        format!(
            "  level 0:  compaction trigger l0_threshold={l0}; slowdown at 20 and halt at 30 L0 runs are fixed in fjall (Shale: {}/{})",
            s.level0_slowdown_trigger, s.level0_stop_trigger
        ),
        "  threads:  worker_threads=2 (flush and compaction share them)".to_string(),
        "  journal:  on, uncompressed, flushed to the OS per batch, fdatasync when --sync; no byte counters"
            .to_string(),
    ];
    (o, describe)
}

impl FjallEngine {
    /// Open (or create) a database in `path` configured from `t`.
    ///
    /// # Errors
    /// fjall's open error.
    pub fn open(path: &Path, t: &Tuning) -> EngineResult<FjallEngine> {
        let (ks_opts, describe) = keyspace_options(t);
        let db = Database::builder(path)
            .cache_size(t.config.cache_size as u64)
            .worker_threads(2)
            .max_cached_files(Some(t.shale.max_open_files.max(10)))
            .manual_journal_persist(false)
            .journal_compression(CompressionType::None)
            .open()
            .map_err(|e| err("open", e))?;
        let ks = db
            .keyspace("default", || ks_opts)
            .map_err(|e| err("open keyspace", e))?;
        Ok(FjallEngine { db, ks, describe })
    }
}

impl Engine for FjallEngine {
    fn write(&self, ops: &[Op<'_>], sync: bool) -> EngineResult<()> {
        let mut b = self
            .db
            .batch()
            .durability(sync.then_some(PersistMode::SyncData));
        for op in ops {
            match *op {
                Op::Put(k, v) => b.insert(&self.ks, k, v),
                Op::Delete(k) => b.remove(&self.ks, k),
            }
        }
        b.commit().map_err(|e| err("write", e))
    }

    fn get(&self, key: &[u8]) -> EngineResult<Option<Vec<u8>>> {
        let v = self.ks.get(key).map_err(|e| err("get", e))?;
        Ok(v.map(|v| v.to_vec()))
    }

    fn seek(
        &self,
        key: &[u8],
        nexts: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> EngineResult<usize> {
        let mut n = 0;
        for g in self.ks.range(key..).take(nexts.saturating_add(1)) {
            let (k, v) = g.into_inner().map_err(|e| err("seek", e))?;
            visit(&k, &v);
            n += 1;
        }
        Ok(n)
    }

    fn scan_all(
        &self,
        reverse: bool,
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> EngineResult<u64> {
        let it: Box<dyn Iterator<Item = fjall::Guard>> = if reverse {
            Box::new(self.ks.iter().rev())
        } else {
            Box::new(self.ks.iter())
        };
        let mut n = 0;
        for g in it {
            if n >= limit {
                break;
            }
            let (k, v) = g.into_inner().map_err(|e| err("scan", e))?;
            visit(&k, &v);
            n += 1;
        }
        Ok(n)
    }

    fn flush(&self) -> EngineResult<()> {
        self.ks
            .rotate_memtable_and_wait()
            .map_err(|e| err("flush", e))
    }

    fn compact(&self) -> EngineResult<()> {
        // As in Shale and RocksDB, a full compaction includes the memtable.
        self.flush()?;
        self.ks.major_compact().map_err(|e| err("compact", e))
    }

    fn sync_to_os(&self) -> EngineResult<()> {
        self.db
            .persist(PersistMode::Buffer)
            .map_err(|e| err("persist", e))
    }

    fn stats_text(&self) -> String {
        let db = &self.db;
        let ks = &self.ks;
        let mut s = String::new();
        s.push_str(&format!(
            "fjall: tables {} (L0 {}), sealed memtables {}, keys ~{}\n",
            ks.table_count(),
            ks.l0_table_count(),
            ks.sealed_memtable_count(),
            ks.approximate_len()
        ));
        s.push_str(&format!(
            "fjall: disk {} bytes (keyspace {}), journals {} ({} bytes)\n",
            db.disk_space().unwrap_or(0),
            ks.disk_space(),
            db.journal_count(),
            db.journal_disk_space().unwrap_or(0)
        ));
        s.push_str(&format!(
            "fjall: write buffer {} bytes, outstanding flushes {}, compactions {} done, {} active, {:.3} s compacting\n",
            db.write_buffer_size(),
            db.outstanding_flushes(),
            db.compactions_completed(),
            db.active_compactions(),
            db.time_compacting().as_secs_f64()
        ));
        s.push_str(&format!(
            "fjall: cache {} of {} bytes\n",
            db.cache_size(),
            db.cache_capacity()
        ));
        s
    }

    fn describe(&self) -> Vec<String> {
        self.describe.clone()
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        // Drop would persist too, but could not report a failure.
        self.db
            .persist(PersistMode::SyncAll)
            .map_err(|e| err("close", e))
    }
}
