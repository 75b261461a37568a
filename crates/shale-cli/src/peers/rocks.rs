//! RocksDB (the `rocksdb` crate) behind the [`Engine`] trait.

use std::path::Path;

use rocksdb::statistics::{StatsLevel, Ticker};
use rocksdb::{
    BlockBasedOptions, Cache, ChecksumType, CompactOptions, DB, DBCompressionType, Options,
    WriteBatch, WriteOptions,
};
use shale::Compression;

use super::{Tuning, mib, peer_err};
use crate::engine::{Counters, Engine, EngineResult, Op};

const NAME: &str = "rocksdb";

/// A RocksDB store with one column family.
pub struct RocksEngine {
    db: DB,
    /// Kept for its statistics object, which the open store shares.
    opts: Options,
    describe: Vec<String>,
}

fn err(what: &str, e: rocksdb::Error) -> crate::CliError {
    peer_err(NAME, what, e)
}

/// RocksDB options mirroring Shale's, and the lines that describe them.
fn options(t: &Tuning) -> (Options, Vec<String>) {
    let c = &t.config;
    let s = &t.shale;
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_write_buffer_size(t.write_buffer_size());
    // Shale: one active memtable plus `max_immutable_memtables` frozen ones waiting.
    let buffers = 1 + s.max_immutable_memtables;
    o.set_max_write_buffer_number(buffers as i32);
    o.set_min_write_buffer_number_to_merge(1);
    o.set_max_open_files(s.max_open_files as i32);
    o.set_num_levels(s.num_levels as i32);
    o.set_target_file_size_base(s.target_file_size);
    o.set_max_bytes_for_level_base(s.max_bytes_for_level_base);
    o.set_max_bytes_for_level_multiplier(s.level_size_multiplier as f64);
    // Shale sizes levels statically from level 1 down; RocksDB's default sizes them from
    // the last level up.
    o.set_level_compaction_dynamic_level_bytes(false);
    o.set_level_zero_file_num_compaction_trigger(s.level0_compaction_trigger as i32);
    o.set_level_zero_slowdown_writes_trigger(s.level0_slowdown_trigger as i32);
    o.set_level_zero_stop_writes_trigger(s.level0_stop_trigger as i32);
    // Shale runs one flush thread and `max_background_compactions` compaction workers.
    o.set_max_background_jobs(1 + s.max_background_compactions as i32);
    o.set_max_subcompactions(1);
    let compression = match c.compression {
        Compression::None => DBCompressionType::None,
        Compression::Lz4 => DBCompressionType::Lz4,
        Compression::Zstd => DBCompressionType::Zstd,
    };
    o.set_compression_type(compression);
    o.set_bottommost_compression_type(compression);
    // Tickers only: histograms and timers cost time on every operation.
    o.enable_statistics();
    o.set_statistics_level(StatsLevel::ExceptHistogramOrTimers);

    let mut b = BlockBasedOptions::default();
    b.set_block_size(s.table.block_size);
    b.set_block_restart_interval(s.table.block_restart_interval as i32);
    let cache = if c.cache_size > 0 {
        b.set_block_cache(&Cache::new_lru_cache(c.cache_size));
        mib(c.cache_size as u64) + " LRU"
    } else {
        b.disable_cache();
        "none".to_string()
    };
    if c.bloom_bits > 0 {
        // A full (whole-table) filter, as Shale's tables have.
        b.set_bloom_filter(c.bloom_bits as f64, false);
    }
    // Shale keeps index and filter in memory for as long as a table is open; so does
    // RocksDB when they are not cached as blocks (its default, set explicitly here).
    b.set_cache_index_and_filter_blocks(false);
    b.set_checksum_type(ChecksumType::CRC32c);
    o.set_block_based_table_factory(&b);

    let compression_name = match c.compression {
        Compression::None => "none",
        Compression::Lz4 => "lz4",
        Compression::Zstd => "zstd",
    };
    let describe = vec![
        "  layout:   leveled, level_compaction_dynamic_level_bytes=false (static level sizes, as Shale)"
            .to_string(),
        format!(
            "  memtable: write_buffer_size={} max_write_buffer_number={buffers} (1 active + {} immutable)",
            mib(t.write_buffer_size() as u64),
            s.max_immutable_memtables
        ),
        format!(
            "  tables:   block_size={} restart_interval={} bloom_bits={} (full filter) compression={compression_name} checksum=crc32c",
            s.table.block_size, s.table.block_restart_interval, c.bloom_bits
        ),
        format!(
            "  cache:    block_cache={cache}, index+filter held by open tables, max_open_files={}",
            s.max_open_files
        ),
        format!(
            "  levels:   num_levels={} target_file_size_base={} max_bytes_for_level_base={} multiplier={}",
            s.num_levels,
            mib(s.target_file_size),
            mib(s.max_bytes_for_level_base),
            s.level_size_multiplier
        ),
        format!(
            "  level 0:  compaction_trigger={} slowdown={} stop={}; compaction_pri=min_overlapping_ratio (as Shale)",
            s.level0_compaction_trigger, s.level0_slowdown_trigger, s.level0_stop_trigger
        ),
        "  threads:  max_background_jobs=2 max_subcompactions=1".to_string(),
        "  wal:      on, fdatasync when --sync; counters from tickers (statistics, no histograms)"
            .to_string(),
    ];
    (o, describe)
}

/// The version RocksDB wrote into its info log on open (the crate does not export it).
fn logged_version(path: &Path) -> Option<String> {
    let log = std::fs::read_to_string(path.join("LOG")).ok()?;
    let at = log.find("RocksDB version:")?;
    let rest = &log[at + "RocksDB version:".len()..];
    Some(rest.lines().next()?.trim().to_string())
}

impl RocksEngine {
    /// Open (or create) a store in `path` configured from `t`.
    ///
    /// # Errors
    /// RocksDB's open error.
    pub fn open(path: &Path, t: &Tuning) -> EngineResult<RocksEngine> {
        let (opts, mut describe) = options(t);
        let db = DB::open(&opts, path).map_err(|e| err("open", e))?;
        let version = logged_version(path).unwrap_or_else(|| "?".into());
        describe.insert(0, format!("rocksdb:    version {version}"));
        Ok(RocksEngine { db, opts, describe })
    }

    fn ticker(&self, t: Ticker) -> u64 {
        self.opts.get_ticker_count(t)
    }
}

impl Engine for RocksEngine {
    fn write(&self, ops: &[Op<'_>], sync: bool) -> EngineResult<()> {
        let mut b = WriteBatch::default();
        for op in ops {
            match *op {
                Op::Put(k, v) => b.put(k, v),
                Op::Delete(k) => b.delete(k),
            }
        }
        let mut w = WriteOptions::default();
        w.set_sync(sync);
        w.disable_wal(false);
        self.db.write_opt(b, &w).map_err(|e| err("write", e))
    }

    fn get(&self, key: &[u8]) -> EngineResult<Option<Vec<u8>>> {
        let v = self.db.get_pinned(key).map_err(|e| err("get", e))?;
        Ok(v.map(|v| v.to_vec()))
    }

    fn seek(
        &self,
        key: &[u8],
        nexts: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> EngineResult<usize> {
        let mut it = self.db.raw_iterator();
        it.seek(key);
        let mut n = 0;
        while let Some((k, v)) = it.item() {
            visit(k, v);
            n += 1;
            if n > nexts {
                break;
            }
            it.next();
        }
        it.status().map_err(|e| err("seek", e))?;
        Ok(n)
    }

    fn scan_all(
        &self,
        reverse: bool,
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> EngineResult<u64> {
        let mut it = self.db.raw_iterator();
        if reverse {
            it.seek_to_last();
        } else {
            it.seek_to_first();
        }
        let mut n = 0;
        while n < limit {
            let Some((k, v)) = it.item() else { break };
            visit(k, v);
            n += 1;
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status().map_err(|e| err("scan", e))?;
        Ok(n)
    }

    fn flush(&self) -> EngineResult<()> {
        // The default FlushOptions wait for the flush to finish.
        self.db.flush().map_err(|e| err("flush", e))
    }

    fn compact(&self) -> EngineResult<()> {
        let mut c = CompactOptions::default();
        c.set_exclusive_manual_compaction(true);
        // The crate's compact_range reports no status.
        self.db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &c);
        Ok(())
    }

    fn sync_to_os(&self) -> EngineResult<()> {
        // Each write already hands its WAL record to the OS (manual_wal_flush is off);
        // this covers anything still buffered without forcing an fsync.
        self.db.flush_wal(false).map_err(|e| err("flush_wal", e))
    }

    fn stats_text(&self) -> String {
        let mut s = self
            .db
            .property_value("rocksdb.stats")
            .ok()
            .flatten()
            .unwrap_or_default();
        if let Some(l) = self.db.property_value("rocksdb.levelstats").ok().flatten() {
            s.push_str(&l);
        }
        s
    }

    fn counters(&self) -> Option<Counters> {
        let compaction_read = self.ticker(Ticker::CompactReadBytes);
        // Every table-file read goes through one reader that counts by level; compaction
        // inputs are among them, so what remains is gets, iterators and table opens.
        let table_read =
            self.ticker(Ticker::LastLevelReadBytes) + self.ticker(Ticker::NonLastLevelReadBytes);
        Some(Counters {
            written: vec![
                ("wal", self.ticker(Ticker::WalFileBytes)),
                ("flush", self.ticker(Ticker::FlushWriteBytes)),
                ("compaction", self.ticker(Ticker::CompactWriteBytes)),
            ],
            read: vec![
                ("user", table_read.saturating_sub(compaction_read)),
                ("compaction", compaction_read),
            ],
            ..Default::default()
        })
    }

    fn describe(&self) -> Vec<String> {
        self.describe.clone()
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        // Make the WAL durable (the crate's close reports no status), then close by drop.
        self.db.flush_wal(true).map_err(|e| err("close", e))?;
        drop(self);
        Ok(())
    }
}
