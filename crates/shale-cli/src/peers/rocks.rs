//! RocksDB (the `rocksdb` crate) behind the [`Engine`] trait, in two configurations: Shale's
//! options mirrored ([`Config::Mirror`]) and RocksDB as its users configure it
//! ([`Config::Tuned`]).

use std::path::Path;

use rocksdb::statistics::{StatsLevel, Ticker};
use rocksdb::{
    BlockBasedOptions, Cache, ChecksumType, CompactOptions, CompactionPri, DB, DBCompressionType,
    Options, WriteBatch, WriteOptions,
};
use shale::Compression;

use super::{Tuning, mib, peer_err};
use crate::engine::{Counters, Engine, EngineConfig, EngineKind, EngineResult, Op};

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

/// Which RocksDB configuration a run opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Config {
    /// Shale's options mirrored (`--engine rocksdb`): static level sizes, Shale's file sizes,
    /// level-0 triggers, open-file limit and threads, so a comparison differs in the engine.
    Mirror,
    /// RocksDB as its users configure it (`--engine rocksdb-tuned`): its defaults plus what
    /// its wiki's "Setup Options and Basic Tuning" page tells every user to set.
    Tuned,
}

/// The run's compression as RocksDB's type and the name printed for it.
fn compression(c: Compression) -> (DBCompressionType, &'static str) {
    match c {
        Compression::None => (DBCompressionType::None, "none"),
        Compression::Lz4 => (DBCompressionType::Lz4, "lz4"),
        Compression::Zstd => (DBCompressionType::Zstd, "zstd"),
    }
}

/// What both configurations set alike: creation, the run's compression on every level (RocksDB
/// would otherwise pick Snappy), and ticker statistics for the byte counters.
fn common(o: &mut Options, c: Compression) -> &'static str {
    o.create_if_missing(true);
    let (compression, name) = compression(c);
    o.set_compression_type(compression);
    o.set_bottommost_compression_type(compression);
    // Tickers only: histograms and timers cost time on every operation.
    o.enable_statistics();
    o.set_statistics_level(StatsLevel::ExceptHistogramOrTimers);
    name
}

/// The run's block cache (LRU of `--cache-size`; none at 0) and bloom filter (`--bloom-bits`
/// per key; none at 0: a full, whole-table filter over whole keys, as Shale's tables have),
/// which both configurations take. Returns whether there is a cache.
fn cache_and_bloom(b: &mut BlockBasedOptions, c: &EngineConfig) -> bool {
    if c.bloom_bits > 0 {
        b.set_bloom_filter(c.bloom_bits as f64, false);
        b.set_whole_key_filtering(true);
    }
    if c.cache_size > 0 {
        b.set_block_cache(&Cache::new_lru_cache(c.cache_size));
        true
    } else {
        b.disable_cache();
        false
    }
}

/// The closing settings line both configurations print.
const WAL_LINE: &str =
    "  wal:      on, fdatasync when --sync; counters from tickers (statistics, no histograms)";

/// RocksDB options mirroring Shale's, and the lines that describe them.
fn mirror_options(t: &Tuning) -> (Options, Vec<String>) {
    let c = &t.config;
    let s = &t.shale;
    let mut o = Options::default();
    let compression_name = common(&mut o, c.compression);
    o.set_write_buffer_size(t.write_buffer_size());
    // Shale: one active memtable plus `max_immutable_memtables` frozen ones waiting.
    let buffers = 1 + s.max_immutable_memtables;
    o.set_max_write_buffer_number(buffers as i32);
    o.set_min_write_buffer_number_to_merge(s.min_memtables_to_merge as i32);
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

    let mut b = BlockBasedOptions::default();
    b.set_block_size(s.table.block_size);
    b.set_block_restart_interval(s.table.block_restart_interval as i32);
    let cache = if cache_and_bloom(&mut b, c) {
        mib(c.cache_size as u64) + " LRU"
    } else {
        "none".to_string()
    };
    // Shale keeps index and filter in memory for as long as a table is open; so does
    // RocksDB when they are not cached as blocks (its default, set explicitly here).
    b.set_cache_index_and_filter_blocks(false);
    b.set_checksum_type(ChecksumType::CRC32c);
    o.set_block_based_table_factory(&b);

    let describe = vec![
        "  config:   mirror (`--engine rocksdb`): Shale's options mirrored, not RocksDB's defaults"
            .to_string(),
        "  layout:   leveled, level_compaction_dynamic_level_bytes=false (static level sizes, as Shale)"
            .to_string(),
        format!(
            "  memtable: write_buffer_size={} max_write_buffer_number={buffers} (1 active + {} immutable) min_write_buffer_number_to_merge={}",
            mib(t.write_buffer_size() as u64),
            s.max_immutable_memtables,
            s.min_memtables_to_merge
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
        WAL_LINE.to_string(),
    ];
    (o, describe)
}

/// The block size the tuning guide recommends (RocksDB's default is 4 KiB).
const TUNED_BLOCK_SIZE: usize = 16 << 10;
/// The guide's `bytes_per_sync`: write back table files in 1 MiB steps, not all at the end.
const TUNED_BYTES_PER_SYNC: u64 = 1 << 20;

/// Background jobs for the machine: one per core, as RocksDB's `IncreaseParallelism(cores)`
/// sets (the guide's 6 is for larger machines), and never below RocksDB's default of 2.
fn background_jobs() -> i32 {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 64) as i32)
}

/// RocksDB as its users configure it, and the lines that describe it: RocksDB's defaults,
/// plus the wiki's "Setup Options and Basic Tuning" settings (dynamic level sizes,
/// `max_background_jobs` for the machine, `bytes_per_sync` 1 MiB, min-overlapping-ratio
/// compaction priority, 16 KiB blocks, index and filter blocks in the block cache with
/// level 0's pinned, 10-bit whole-key bloom filters, an LRU block cache), with the run's
/// memtable, cache size, bloom bits and compression. Everything else is RocksDB's default;
/// [`defaults_line`] prints those from the store's OPTIONS file.
fn tuned_options(t: &Tuning) -> (Options, Vec<String>) {
    let c = &t.config;
    let mut o = Options::default();
    let compression_name = common(&mut o, c.compression);
    let memtable = c.memtable_bytes(EngineKind::RocksdbTuned);
    o.set_write_buffer_size(memtable);
    // The design's memtables: several frozen ones flushed as one, with room for them.
    let (merge, frozen) = c.memtable_merging(EngineKind::RocksdbTuned);
    let merging = if merge > 1 {
        o.set_min_write_buffer_number_to_merge(merge as i32);
        o.set_max_write_buffer_number(1 + frozen as i32);
        format!(
            " min_write_buffer_number_to_merge={merge} max_write_buffer_number={}",
            1 + frozen
        )
    } else {
        String::new()
    };
    o.set_level_compaction_dynamic_level_bytes(true);
    let jobs = background_jobs();
    o.set_max_background_jobs(jobs);
    o.set_bytes_per_sync(TUNED_BYTES_PER_SYNC);
    o.set_compaction_pri(CompactionPri::MinOverlappingRatio);

    let mut b = BlockBasedOptions::default();
    b.set_block_size(TUNED_BLOCK_SIZE);
    let cache = if cache_and_bloom(&mut b, c) {
        // Index and filter blocks share the cache with data blocks; level 0's stay pinned.
        b.set_cache_index_and_filter_blocks(true);
        b.set_pin_l0_filter_and_index_blocks_in_cache(true);
        format!(
            "block_cache={} LRU holding index and filter blocks (cache_index_and_filter_blocks=true, pin_l0_filter_and_index_blocks_in_cache=true)",
            mib(c.cache_size as u64)
        )
    } else {
        // Without a cache, index and filter can only live with the open tables.
        "block_cache=none (--cache-size 0), so index+filter held by open tables".to_string()
    };
    o.set_block_based_table_factory(&b);

    let memtable_from = match c.write_buffer_size {
        Some(_) => "--write-buffer-size".to_string(),
        None => format!("the {} design's", c.design),
    };
    let describe = vec![
        "  config:   tuned (`--engine rocksdb-tuned`): RocksDB's defaults plus its wiki's \"Setup Options and Basic Tuning\""
            .to_string(),
        format!(
            "  tuned:    level_compaction_dynamic_level_bytes=true compaction_pri=min_overlapping_ratio max_background_jobs={jobs} (the machine's cores) bytes_per_sync={}",
            mib(TUNED_BYTES_PER_SYNC)
        ),
        format!(
            "  memtable: write_buffer_size={}{merging} ({memtable_from})",
            mib(memtable as u64)
        ),
        format!(
            "  tables:   block_size={} KiB bloom_bits={} (full filter, whole keys) compression={compression_name}",
            TUNED_BLOCK_SIZE >> 10,
            c.bloom_bits
        ),
        format!("  cache:    {cache}"),
        WAL_LINE.to_string(),
    ];
    (o, describe)
}

/// RocksDB defaults the tuned configuration leaves alone, printed as RocksDB wrote them into
/// the store's newest OPTIONS file (so the line shows what ran, not what we assume).
const DEFAULTS_SHOWN: &[&str] = &[
    "max_write_buffer_number",
    "num_levels",
    "target_file_size_base",
    "max_bytes_for_level_base",
    "max_bytes_for_level_multiplier",
    "level0_file_num_compaction_trigger",
    "level0_slowdown_writes_trigger",
    "level0_stop_writes_trigger",
    "max_open_files",
    "max_subcompactions",
    "format_version",
    "checksum",
];

/// `keys`' values in the newest `OPTIONS-*` file RocksDB wrote in `path`, in `keys`' order
/// (first section wins; a missing key is left out).
pub(crate) fn options_file_values(path: &Path, keys: &[&str]) -> Vec<(String, String)> {
    let newest = std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n: u64 = name.strip_prefix("OPTIONS-")?.parse().ok()?;
            Some((n, e.path()))
        })
        .max();
    let Some(text) = newest.and_then(|(_, p)| std::fs::read_to_string(p).ok()) else {
        return Vec::new();
    };
    keys.iter()
        .filter_map(|&k| {
            text.lines()
                .find_map(|l| l.trim().strip_prefix(k)?.strip_prefix('='))
                .map(|v| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// The settings line of RocksDB's own defaults in the tuned configuration.
fn defaults_line(path: &Path) -> String {
    let values = options_file_values(path, DEFAULTS_SHOWN);
    if values.is_empty() {
        return "  defaults: RocksDB's for everything else (no OPTIONS file found to show them)"
            .to_string();
    }
    let shown: Vec<String> = values.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "  defaults: RocksDB's, from its OPTIONS file: {}",
        shown.join(" ")
    )
}

/// The version RocksDB wrote into its info log on open (the crate does not export it).
fn logged_version(path: &Path) -> Option<String> {
    let log = std::fs::read_to_string(path.join("LOG")).ok()?;
    let at = log.find("RocksDB version:")?;
    let rest = &log[at + "RocksDB version:".len()..];
    Some(rest.lines().next()?.trim().to_string())
}

impl RocksEngine {
    /// Open (or create) a store in `path` in configuration `config`, sized from `t`.
    ///
    /// # Errors
    /// RocksDB's open error.
    pub fn open(path: &Path, t: &Tuning, config: Config) -> EngineResult<RocksEngine> {
        let (opts, mut describe) = match config {
            Config::Mirror => mirror_options(t),
            Config::Tuned => tuned_options(t),
        };
        let db = DB::open(&opts, path).map_err(|e| err("open", e))?;
        let version = logged_version(path).unwrap_or_else(|| "?".into());
        describe.insert(0, format!("rocksdb:    version {version}"));
        if config == Config::Tuned {
            let at = describe.len() - 1;
            describe.insert(at, defaults_line(path));
        }
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
