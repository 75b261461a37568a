//! The storage engines a benchmark can drive: Shale, and (with the `peers` feature) other
//! embedded stores, behind one small trait so every workload runs unchanged on each.

use shale::options::LayoutKind;
use shale::{
    Compression, Db, FlsmPolicy, IterOptions, MemoryKind, Options, PresetSettings, ValuesKind,
    WriteBatch, WriteOptions,
};

use crate::CliError;

/// Result of an engine call.
pub type EngineResult<T> = Result<T, CliError>;

/// One operation of a write batch.
#[derive(Debug, Clone, Copy)]
pub enum Op<'a> {
    /// Set a key to a value.
    Put(&'a [u8], &'a [u8]),
    /// Remove a key.
    Delete(&'a [u8]),
}

/// Per-cause byte counters an engine keeps about itself (Shale's `Stats`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Bytes written to storage, by cause name.
    pub written: Vec<(&'static str, u64)>,
    /// Bytes read from storage, by cause name.
    pub read: Vec<(&'static str, u64)>,
    /// Microseconds writers were delayed or stopped (0 where the engine does not say).
    pub stall_micros: u64,
    /// Per level of the tree, when the engine reports levels (empty otherwise).
    pub levels: Vec<LevelCounters>,
    /// The memory component's own counters, by name (empty when it keeps none).
    pub memory: Vec<(&'static str, u64)>,
    /// Blocks that gets read from storage (not from the block cache), by kind: `data`
    /// (table data blocks, buckets), `filter` (filter blocks read on demand), `value`
    /// (value-log reads). Empty when the engine does not count them.
    pub get_blocks: Vec<(&'static str, u64)>,
}

/// One level's files and bytes, and the bytes written into it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelCounters {
    /// Table files.
    pub files: u64,
    /// Bytes of the level's files.
    pub bytes: u64,
    /// Bytes flushes and compactions wrote into the level.
    pub written: u64,
}

impl Counters {
    /// `self - before`, cause by cause (a cause missing from `before` counts from zero).
    pub fn since(&self, before: &Counters) -> Counters {
        let diff = |now: &[(&'static str, u64)], then: &[(&'static str, u64)]| {
            now.iter()
                .map(|&(name, n)| {
                    let old = then
                        .iter()
                        .find(|&&(c, _)| c == name)
                        .map_or(0, |&(_, o)| o);
                    (name, n.saturating_sub(old))
                })
                .collect()
        };
        // Sizes are as of now; what was written into a level counts since `before`.
        let levels = self
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| LevelCounters {
                written: l
                    .written
                    .saturating_sub(before.levels.get(i).map_or(0, |b| b.written)),
                ..*l
            })
            .collect();
        Counters {
            written: diff(&self.written, &before.written),
            read: diff(&self.read, &before.read),
            stall_micros: self.stall_micros.saturating_sub(before.stall_micros),
            levels,
            memory: diff(&self.memory, &before.memory),
            get_blocks: diff(&self.get_blocks, &before.get_blocks),
        }
    }

    /// Blocks of `kind` that gets read, if the engine counts them.
    pub fn get_blocks_of(&self, kind: &str) -> Option<u64> {
        self.get_blocks
            .iter()
            .find(|&&(k, _)| k == kind)
            .map(|&(_, n)| n)
    }

    /// Bytes written for every cause together.
    pub fn total_written(&self) -> u64 {
        self.written.iter().map(|&(_, n)| n).sum()
    }

    /// Bytes read for every cause together.
    pub fn total_read(&self) -> u64 {
        self.read.iter().map(|&(_, n)| n).sum()
    }
}

/// The operations benchmarks need. Implementations are shared by reference between worker
/// threads, so every method takes `&self`.
pub trait Engine: Send + Sync {
    /// Apply `ops` atomically; with `sync` they are durable when this returns.
    fn write(&self, ops: &[Op<'_>], sync: bool) -> EngineResult<()>;
    /// Set one key.
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> EngineResult<()> {
        self.write(&[Op::Put(key, value)], sync)
    }
    /// Remove one key.
    fn delete(&self, key: &[u8], sync: bool) -> EngineResult<()> {
        self.write(&[Op::Delete(key)], sync)
    }
    /// The value of `key`, if present.
    fn get(&self, key: &[u8]) -> EngineResult<Option<Vec<u8>>>;
    /// Position on the first key `>= key`, then call `visit` on that entry and on up to
    /// `nexts` following ones. Returns the number of entries visited.
    fn seek(
        &self,
        key: &[u8],
        nexts: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> EngineResult<usize>;
    /// Visit up to `limit` entries from the first key forwards (or the last key backwards).
    /// Returns the number of entries visited.
    fn scan_all(
        &self,
        reverse: bool,
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> EngineResult<u64>;
    /// Whether [`Engine::seek`] and [`Engine::scan_all`] work (a hash-ordered design, Shale's
    /// `lsm-trie`, answers point operations only).
    fn supports_scans(&self) -> bool {
        true
    }
    /// Write buffered data down to table files.
    fn flush(&self) -> EngineResult<()>;
    /// Compact the whole key range.
    fn compact(&self) -> EngineResult<()>;
    /// Hand buffered writes to the operating system before I/O counters are read. Engines
    /// that write through the OS on every write (Shale) need nothing here.
    fn sync_to_os(&self) -> EngineResult<()> {
        Ok(())
    }
    /// The engine's statistics as text, for the `stats` benchmark.
    fn stats_text(&self) -> String;
    /// The engine's own per-cause byte counters, when it keeps them.
    fn counters(&self) -> Option<Counters> {
        None
    }
    /// Lines describing how the engine is configured, for the settings block of a run.
    fn describe(&self) -> Vec<String> {
        Vec::new()
    }
    /// Close the store, reporting errors a drop would hide.
    fn close(self: Box<Self>) -> EngineResult<()>;
}

/// Which engine to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// Shale (this repository).
    Shale,
    /// RocksDB, through the `rocksdb` crate, configured to mirror Shale's options (static
    /// level sizes, Shale's file sizes and triggers; needs the `peers` feature).
    Rocksdb,
    /// RocksDB as its users configure it: its defaults plus its tuning guide's settings, with
    /// the run's memtable, block cache and bloom bits (needs the `peers` feature).
    RocksdbTuned,
    /// fjall (needs the `peers` feature).
    Fjall,
}

impl EngineKind {
    /// The name printed in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Shale => "shale",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::RocksdbTuned => "rocksdb-tuned",
            EngineKind::Fjall => "fjall",
        }
    }
}

/// Settings that every engine understands.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Shale preset name; other engines ignore it.
    pub design: String,
    /// The preset's settings: tuned (what measures best) or the paper's.
    pub settings: PresetSettings,
    /// Shale: axes chosen over the preset; other engines ignore them.
    pub axes: crate::axes::AxisFlags,
    /// Memtable size in bytes; `None` keeps the design's (Shale, `rocksdb-tuned`) or Shale's
    /// default (the peers that mirror [`Options::default`]).
    pub write_buffer_size: Option<usize>,
    /// Block cache size in bytes.
    pub cache_size: usize,
    /// Block compression.
    pub compression: Compression,
    /// Bloom filter bits per key.
    pub bloom_bits: usize,
    /// Data block size in bytes; `None` keeps the design's (Shale; the mirroring peers:
    /// Shale's default). `rocksdb-tuned` keeps its own 16 KiB.
    pub block_size: Option<usize>,
    /// Shale: the memtable bloom filter's share of the memtable; `None` keeps the design's.
    pub memtable_bloom_ratio: Option<f64>,
    /// Frozen memtables flushed as one (Shale's `min_memtables_to_merge`; `rocksdb-tuned`
    /// takes it as `min_write_buffer_number_to_merge`); `None` keeps the design's.
    pub memtables_to_merge: Option<usize>,
    /// Shale compaction workers; `None` keeps the design's default. Peers ignore it.
    pub max_background_compactions: Option<usize>,
    /// Level-0 files that trigger a compaction; `None` keeps the design's (peers: Shale's
    /// default).
    pub level0_compaction_trigger: Option<usize>,
    /// FLSM: tables a guard may hold before it is compacted; `None` keeps the design's.
    /// Other layouts and peers ignore it.
    pub max_sstables_per_guard: Option<usize>,
    /// FLSM: what an overflowing or hot guard does (`FlsmOptions::policy`); `None` keeps the
    /// design's. Other layouts and peers ignore it.
    pub flsm_policy: Option<FlsmPolicy>,
    /// FLSM: guards of at least this many tables at the last level holding data are sought
    /// on threads (`FlsmOptions::parallel_seek_min_tables`; 0 off); `None` keeps the
    /// design's. Other layouts and peers ignore it.
    pub parallel_seek_min_tables: Option<usize>,
    /// Value-log overrides (designs with `values = vlog`); `None` keeps the preset's.
    pub vlog: VlogSettings,
    /// FloDB memory overrides (designs with `memory = flodb`); `None` keeps the preset's.
    pub flodb: FloDbSettings,
    /// LWC layout overrides (designs with `layout = lwc`); `None` keeps the preset's.
    pub lwc: LwcSettings,
    /// Shale: read tables through memory maps (`Options::mmap_reads`); `None` keeps the
    /// design's. Peers ignore it.
    pub mmap_reads: Option<bool>,
    /// Shale: copy small log appends into a writable map (`Options::mmap_log_writes`);
    /// `None` keeps the design's. Peers ignore it.
    pub mmap_log_writes: Option<bool>,
    /// Shale: check table blocks' checksums on reads (`Options::verify_checksums`);
    /// `None` keeps the default (on). Peers ignore it.
    pub verify_checksums: Option<bool>,
    /// Shale: run the design's memory component alone ([`MemoryOnlyEngine`]).
    pub memory_only: bool,
}

/// FloDB settings that override a preset's (Shale designs with the `flodb` memory).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FloDbSettings {
    /// `FloDbOptions::membuffer_fraction`.
    pub membuffer_fraction: Option<f64>,
    /// `FloDbOptions::membuffer_partitions`.
    pub membuffer_partitions: Option<usize>,
    /// `FloDbOptions::drain_threads`.
    pub drain_threads: Option<usize>,
    /// `FloDbOptions::writer_drains`.
    pub writer_drains: Option<bool>,
}

/// LWC-tree settings that override a preset's (Shale designs with the `lwc` layout).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LwcSettings {
    /// `LwcOptions::division`.
    pub division: Option<usize>,
    /// `LwcOptions::max_segments`.
    pub max_segments: Option<u32>,
    /// `LwcOptions::seek_compaction`.
    pub seek_compaction: Option<bool>,
    /// `LwcOptions::seek_compaction_merges`.
    pub seek_compaction_merges: Option<bool>,
}

/// Value-log settings that override a preset's (Shale designs with a value log).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VlogSettings {
    /// `Options::min_separated_value_size`.
    pub min_separated_value_size: Option<usize>,
    /// `Options::vlog_memtable_value_max`.
    pub memtable_value_max: Option<usize>,
    /// `Options::vlog_segment_size`.
    pub segment_size: Option<u64>,
    /// `Options::vlog_gc`.
    pub gc: Option<bool>,
    /// `Options::vlog_gc_ratio`.
    pub gc_ratio: Option<f64>,
    /// `Options::scan_prefetch_threads`.
    pub prefetch_threads: Option<usize>,
    /// `Options::scan_prefetch_depth`.
    pub prefetch_depth: Option<usize>,
    /// `Options::scan_prefetch_after`.
    pub prefetch_after: Option<usize>,
}

/// Engine flags shared by `shale bench` and `shale ycsb` (db_bench spellings accepted).
#[derive(clap::Args, Debug, Clone)]
pub struct EngineFlags {
    /// Engine to benchmark. `rocksdb` mirrors Shale's options (static level sizes, Shale's
    /// file sizes and level-0 triggers, 64 MiB memtable); `rocksdb-tuned` is RocksDB as its
    /// tuning guide configures it (dynamic level sizes, 16 KiB blocks, index and filters in
    /// the block cache) with the --design's memtable; both take --cache-size and
    /// --bloom-bits. The peers need the `peers` build feature.
    #[arg(long, value_enum, default_value = "shale")]
    pub engine: EngineKind,
    /// Shale design preset (see --list-designs).
    #[arg(long, default_value = "leveldb")]
    pub design: String,
    /// The preset's settings: `tuned` (what measures best on the benchmark machine:
    /// RocksDB's tree, four 16 MiB memtables flushed as one) or `paper` (LevelDB's 4 MiB memtable, and
    /// LevelDB's tree for the designs built on it, as the papers measured).
    #[arg(long, default_value = "tuned", value_parser = parse_settings)]
    pub settings: PresetSettings,
    /// Shale: each axis chosen on its own, over the preset.
    #[command(flatten)]
    pub axes: crate::axes::AxisFlags,
    /// Block cache bytes.
    #[arg(long = "cache-size", alias = "cache_size", default_value_t = 64 << 20)]
    pub cache_size: usize,
    /// Memtable bytes (default: the design's, 16 MiB in the tuned presets but flodb's
    /// 64 MiB, 4 MiB in the paper settings, and so for rocksdb-tuned; 64 MiB for rocksdb
    /// and fjall).
    #[arg(long = "write-buffer-size", alias = "write_buffer_size")]
    pub write_buffer_size: Option<usize>,
    /// Block compression: none, lz4 or zstd.
    #[arg(long, alias = "compression_type", default_value = "none")]
    pub compression: String,
    /// Bloom filter bits per key (default: the design's, 10 for every preset but lsm-trie's
    /// 16; 10 for the peers).
    #[arg(long = "bloom-bits", alias = "bloom_bits")]
    pub bloom_bits: Option<usize>,
    /// Data block bytes of new tables (default: the design's, 4 KiB for every preset; the
    /// mirroring peers follow it; rocksdb-tuned keeps its 16 KiB).
    #[arg(long = "block-size", alias = "block_size")]
    pub block_size: Option<usize>,
    /// Shale: a whole-key bloom filter over each skiplist memtable, this fraction of the
    /// memtable's bytes (0 to 0.25; default: the design's, none; RocksDB's
    /// memtable_prefix_bloom_size_ratio with whole-key filtering).
    #[arg(long = "memtable-bloom-ratio")]
    pub memtable_bloom_ratio: Option<f64>,
    /// Frozen memtables a flush waits for and writes out as one table (Shale's
    /// min_memtables_to_merge, RocksDB's min_write_buffer_number_to_merge; default: the
    /// design's, 4 in the tuned presets but flodb, 1 in the paper settings; rocksdb-tuned
    /// takes the design's). Raises max_immutable_memtables to at least this plus 2.
    #[arg(long = "memtables-to-merge")]
    pub memtables_to_merge: Option<usize>,
    /// Shale compactions that may run at once (default: the design's). FLSM designs
    /// compact different guards side by side.
    #[arg(
        long = "max-background-compactions",
        visible_alias = "compaction-threads",
        alias = "max_background_compactions"
    )]
    pub max_background_compactions: Option<usize>,
    /// Level-0 files that trigger a compaction (default: the design's, 4).
    #[arg(
        long = "level0-file-num-compaction-trigger",
        alias = "level0_file_num_compaction_trigger"
    )]
    pub level0_compaction_trigger: Option<usize>,
    /// FLSM designs: tables a guard may hold before it is compacted (default: the
    /// design's, 24).
    #[arg(long = "max-sstables-per-guard", alias = "max_sstables_per_guard")]
    pub max_sstables_per_guard: Option<usize>,
    /// FLSM designs: `paper` pushes a guard over its table limit (or hot from reads) into
    /// the next level's guards, merging in place only at the last level (PebblesDB's
    /// rule); `tiered` merges its newest tables in place in size tiers (default: the
    /// design's, paper).
    #[arg(long = "flsm-policy", alias = "flsm_policy")]
    pub flsm_policy: Option<String>,
    /// FLSM designs: a seek into a guard of at least this many tables, at the last level
    /// holding data, seeks them on threads (PebblesDB's parallel seeks; 0 turns them off;
    /// default: the design's, 0).
    #[arg(
        long = "parallel-seeks",
        visible_alias = "parallel-seek-min-tables",
        alias = "parallel_seek_min_tables"
    )]
    pub parallel_seeks: Option<usize>,
    /// Value log: values of at least this many bytes are separated (0: all); default: the
    /// preset's (512 for wisckey).
    #[arg(long = "min-separated-value-size", alias = "min_separated_value_size")]
    pub min_separated_value_size: Option<usize>,
    /// Value log: separated values of at most this many bytes are kept in the memtable
    /// beside their pointers (0: pointers only, as in the paper); default: the design's
    /// (1024 in the tuned settings, 0 in the paper settings) or the store's own.
    #[arg(long = "vlog-memtable-value-max", alias = "vlog_memtable_value_max")]
    pub vlog_memtable_value_max: Option<usize>,
    /// Value log: segment size in bytes; default: the preset's (128 MiB).
    #[arg(long = "vlog-segment-size", alias = "vlog_segment_size")]
    pub vlog_segment_size: Option<u64>,
    /// Value log: automatic garbage collection on or off; default: on.
    #[arg(long = "vlog-gc", alias = "vlog_gc")]
    pub vlog_gc: Option<bool>,
    /// Value log: garbage ratio at which a segment is collected; default 0.5.
    #[arg(long = "vlog-gc-ratio", alias = "vlog_gc_ratio")]
    pub vlog_gc_ratio: Option<f64>,
    /// Separated values: threads that read a sequential scan's values ahead of it (WiscKey's
    /// parallel prefetching; 0 disables it); default: the design's (4).
    #[arg(long = "prefetch-threads", alias = "scan_prefetch_threads")]
    pub prefetch_threads: Option<usize>,
    /// Separated values: entries a sequential scan reads ahead (0 disables prefetching, at
    /// most 4096); default: the design's (16).
    #[arg(long = "prefetch-depth", alias = "scan_prefetch_depth")]
    pub prefetch_depth: Option<usize>,
    /// Separated values: steps of a scan in one direction after which it reads ahead
    /// (the prefetch threshold, 1 to 1000000); default: the design's (2).
    #[arg(
        long = "prefetch-after",
        alias = "prefetch-threshold",
        alias = "scan_prefetch_after"
    )]
    pub prefetch_after: Option<usize>,
    /// FloDB memory: share of the memtable bytes the hash membuffer holds (0 disables
    /// it); default: the design's (0.25).
    #[arg(long = "membuffer-fraction")]
    pub membuffer_fraction: Option<f64>,
    /// FloDB memory: membuffer partitions, each with its own lock; default 64.
    #[arg(long = "membuffer-partitions")]
    pub membuffer_partitions: Option<usize>,
    /// FloDB memory: threads that drain the membuffer into the skiplist; default 1.
    #[arg(long = "drain-threads")]
    pub drain_threads: Option<usize>,
    /// FloDB memory: a writer whose put found its membuffer partition full drains it once
    /// its write is published (`on`) or leaves it to the drain threads (`off`, the paper's
    /// way); default: the design's (on, off in the paper settings).
    #[arg(long = "writer-drains", value_parser = on_off)]
    pub writer_drains: Option<bool>,
    /// LWC layout: tables an equal division makes of an oversized DTable; default: the
    /// design's (10).
    #[arg(long = "lwc-division")]
    pub lwc_division: Option<usize>,
    /// Shale: read table files through memory maps (`on`, LevelDB's way and RocksDB's
    /// `allow_mmap_reads`) or with `pread` (`off`); default: the design's (on for every
    /// preset).
    #[arg(long = "mmap-reads", alias = "mmap_read", value_parser = on_off)]
    pub mmap_reads: Option<bool>,
    /// Shale: copy appends of less than 512 bytes to the logs (WAL, value-log segments) into a
    /// writable memory map of their reserved space (`on`, RocksDB's `allow_mmap_writes`)
    /// or hand each to the OS with `write(2)` (`off`); default: the design's (on for every
    /// preset).
    #[arg(long = "mmap-log-writes", alias = "mmap_writes", value_parser = on_off)]
    pub mmap_log_writes: Option<bool>,
    /// Shale: check each table block's checksum when a read takes it from a file (`on`,
    /// the default, as RocksDB's `verify_checksums`) or not (`off`, LevelDB's and plyvel's
    /// default: db_bench's `--verify_checksum`).
    #[arg(long = "verify-checksums", alias = "verify_checksum", value_parser = on_off)]
    pub verify_checksums: Option<bool>,
    /// LWC layout: a DTable holding more appended segments than this is divided; default:
    /// the design's (6).
    #[arg(long = "lwc-max-segments")]
    pub lwc_max_segments: Option<u32>,
    /// LWC layout: seek-triggered compaction (`true`/`false`), gets and scan samples that
    /// look into several tables or segments charging the first table; default: the
    /// design's (true).
    #[arg(long = "lwc-seek-compaction")]
    pub lwc_seek_compaction: Option<bool>,
    /// LWC layout: a table due for seeks has its segments merged in its own level (`true`)
    /// instead of being pushed down by a lightweight compaction (`false`); default: the
    /// design's (false).
    #[arg(long = "lwc-seek-merges")]
    pub lwc_seek_merges: Option<bool>,
}

/// A switch given as `on`/`off` (or `true`/`false`, `1`/`0`, as db_bench spells them).
fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(format!("{s:?} is not on or off")),
    }
}

/// The memtable size engine `kind` runs with: `flag` if given, else the design's (Shale, and
/// `rocksdb-tuned`, which takes the memtable of the design it is compared with) or
/// [`Options::default`]'s (the peers that mirror it).
pub fn memtable_bytes(
    kind: EngineKind,
    design: &str,
    settings: PresetSettings,
    flag: Option<usize>,
) -> usize {
    if let Some(n) = flag {
        return n;
    }
    match kind {
        EngineKind::Shale | EngineKind::RocksdbTuned => Options::preset_with(design, settings)
            .map(|o| o.write_buffer_size)
            .unwrap_or_else(|_| Options::default().write_buffer_size),
        EngineKind::Rocksdb | EngineKind::Fjall => Options::default().write_buffer_size,
    }
}

/// How memtables wait for their flush in engine `kind`: (memtables flushed as one, frozen
/// memtables allowed). `flag` (`--memtables-to-merge`) if given, with room for it, else the
/// design's (Shale, and `rocksdb-tuned`, which takes the memtables of the design it is
/// compared with) or [`Options::default`]'s (the peers that mirror it).
pub fn memtable_merging(
    kind: EngineKind,
    design: &str,
    settings: PresetSettings,
    flag: Option<usize>,
) -> (usize, usize) {
    let mut o = match kind {
        EngineKind::Shale | EngineKind::RocksdbTuned => {
            Options::preset_with(design, settings).unwrap_or_default()
        }
        EngineKind::Rocksdb | EngineKind::Fjall => Options::default(),
    };
    if let Some(n) = flag {
        o.set_memtables_to_merge(n);
    }
    (o.min_memtables_to_merge, o.max_immutable_memtables)
}

/// Parse `--settings`.
fn parse_settings(s: &str) -> Result<PresetSettings, String> {
    PresetSettings::parse(s).map_err(|e| e.to_string())
}

impl EngineConfig {
    /// The memtable size engine `kind` runs with (see [`memtable_bytes`]).
    pub fn memtable_bytes(&self, kind: EngineKind) -> usize {
        memtable_bytes(kind, &self.design, self.settings, self.write_buffer_size)
    }

    /// How memtables wait for their flush in engine `kind` (see [`memtable_merging`]).
    pub fn memtable_merging(&self, kind: EngineKind) -> (usize, usize) {
        memtable_merging(kind, &self.design, self.settings, self.memtables_to_merge)
    }
}

impl EngineFlags {
    /// The bloom bits per key the chosen engine runs with: `--bloom-bits` if given, else
    /// the design's (Shale) or [`Options::default`]'s (peers, which mirror it).
    pub fn bloom_bits(&self) -> usize {
        if let Some(n) = self.bloom_bits {
            return n;
        }
        match self.engine {
            EngineKind::Shale => Options::preset_with(&self.design, self.settings)
                .map(|o| o.table.bloom_bits_per_key)
                .unwrap_or_else(|_| Options::default().table.bloom_bits_per_key),
            EngineKind::Rocksdb | EngineKind::RocksdbTuned | EngineKind::Fjall => {
                Options::default().table.bloom_bits_per_key
            }
        }
    }

    /// The memtable size the chosen engine runs with (see [`memtable_bytes`]).
    pub fn memtable_bytes(&self) -> usize {
        memtable_bytes(
            self.engine,
            &self.design,
            self.settings,
            self.write_buffer_size,
        )
    }

    /// The engine settings these flags describe.
    ///
    /// # Errors
    /// An unknown compression name; for Shale, a design it cannot open.
    pub fn config(&self) -> EngineResult<EngineConfig> {
        match self.engine {
            EngineKind::Shale => self
                .axes
                .apply(&mut Options::preset_with(&self.design, self.settings)?)?,
            // The tuned RocksDB takes the design's memtable: the design must exist.
            EngineKind::RocksdbTuned => {
                Options::preset_with(&self.design, self.settings)?;
            }
            EngineKind::Rocksdb | EngineKind::Fjall => {}
        }
        Ok(EngineConfig {
            design: self.design.clone(),
            settings: self.settings,
            axes: self.axes.clone(),
            write_buffer_size: self.write_buffer_size,
            cache_size: self.cache_size,
            compression: Compression::parse(&self.compression)?,
            bloom_bits: self.bloom_bits(),
            block_size: self.block_size,
            memtable_bloom_ratio: self.memtable_bloom_ratio,
            memtables_to_merge: self.memtables_to_merge,
            max_background_compactions: self.max_background_compactions,
            level0_compaction_trigger: self.level0_compaction_trigger,
            max_sstables_per_guard: self.max_sstables_per_guard,
            flsm_policy: self
                .flsm_policy
                .as_deref()
                .map(FlsmPolicy::parse)
                .transpose()?,
            parallel_seek_min_tables: self.parallel_seeks,
            vlog: VlogSettings {
                min_separated_value_size: self.min_separated_value_size,
                memtable_value_max: self.vlog_memtable_value_max,
                segment_size: self.vlog_segment_size,
                gc: self.vlog_gc,
                gc_ratio: self.vlog_gc_ratio,
                prefetch_threads: self.prefetch_threads,
                prefetch_depth: self.prefetch_depth,
                prefetch_after: self.prefetch_after,
            },
            flodb: FloDbSettings {
                membuffer_fraction: self.membuffer_fraction,
                membuffer_partitions: self.membuffer_partitions,
                drain_threads: self.drain_threads,
                writer_drains: self.writer_drains,
            },
            lwc: LwcSettings {
                division: self.lwc_division,
                max_segments: self.lwc_max_segments,
                seek_compaction: self.lwc_seek_compaction,
                seek_compaction_merges: self.lwc_seek_merges,
            },
            mmap_reads: self.mmap_reads,
            mmap_log_writes: self.mmap_log_writes,
            verify_checksums: self.verify_checksums,
            memory_only: false,
        })
    }

    /// The design name for reports (`-` for engines without designs): the preset, or the
    /// combination of axes when a flag changed one.
    pub fn design_name(&self) -> String {
        if self.engine != EngineKind::Shale {
            return "-".into();
        }
        if self.axes.any() {
            let mut o = Options::preset_with(&self.design, self.settings).unwrap_or_default();
            if self.axes.apply(&mut o).is_ok() {
                return o.axes().name();
            }
        }
        self.design.clone()
    }
}

/// Shale options for `config`.
///
/// # Errors
/// An unknown or unimplemented design.
pub fn shale_options(config: &EngineConfig) -> EngineResult<Options> {
    let mut o = Options::preset_with(&config.design, config.settings)?;
    config.axes.apply(&mut o)?;
    if let Some(n) = config.write_buffer_size {
        o.write_buffer_size = n;
    }
    o.block_cache_bytes = config.cache_size;
    o.table.compression = config.compression;
    o.table.bloom_bits_per_key = config.bloom_bits;
    if let Some(n) = config.block_size {
        o.table.block_size = n;
    }
    if let Some(r) = config.memtable_bloom_ratio {
        o.memtable_bloom_ratio = r;
    }
    if config.memtables_to_merge.is_some() {
        (o.min_memtables_to_merge, o.max_immutable_memtables) =
            config.memtable_merging(EngineKind::Shale);
    }
    if let Some(n) = config.max_background_compactions {
        o.max_background_compactions = n;
    }
    if let Some(n) = config.level0_compaction_trigger {
        o.level0_compaction_trigger = n;
    }
    if let Some(n) = config.max_sstables_per_guard {
        o.flsm.max_sstables_per_guard = n;
    }
    if let Some(p) = config.flsm_policy {
        o.flsm.policy = p;
    }
    if let Some(n) = config.parallel_seek_min_tables {
        o.flsm.parallel_seek_min_tables = n;
    }
    let v = &config.vlog;
    if let Some(n) = v.min_separated_value_size {
        o.min_separated_value_size = n;
    }
    if let Some(n) = v.memtable_value_max {
        o.vlog_memtable_value_max = n;
    }
    if let Some(n) = v.segment_size {
        o.vlog_segment_size = n;
    }
    if let Some(b) = v.gc {
        o.vlog_gc = b;
    }
    if let Some(r) = v.gc_ratio {
        o.vlog_gc_ratio = r;
    }
    if let Some(n) = v.prefetch_threads {
        o.scan_prefetch_threads = n;
    }
    if let Some(n) = v.prefetch_depth {
        o.scan_prefetch_depth = n;
    }
    if let Some(n) = v.prefetch_after {
        o.scan_prefetch_after = n;
    }
    let f = &config.flodb;
    if let Some(x) = f.membuffer_fraction {
        o.flodb.membuffer_fraction = x;
    }
    if let Some(n) = f.membuffer_partitions {
        o.flodb.membuffer_partitions = n;
    }
    if let Some(n) = f.drain_threads {
        o.flodb.drain_threads = n;
    }
    if let Some(b) = f.writer_drains {
        o.flodb.writer_drains = b;
    }
    if let Some(n) = config.lwc.division {
        o.lwc.division = n;
    }
    if let Some(n) = config.lwc.max_segments {
        o.lwc.max_segments = n;
    }
    if let Some(b) = config.lwc.seek_compaction {
        o.lwc.seek_compaction = b;
    }
    if let Some(b) = config.lwc.seek_compaction_merges {
        o.lwc.seek_compaction_merges = b;
    }
    if let Some(b) = config.mmap_reads {
        o.mmap_reads = b;
    }
    if let Some(b) = config.mmap_log_writes {
        o.mmap_log_writes = b;
    }
    if let Some(b) = config.verify_checksums {
        o.verify_checksums = b;
    }
    o.validate()?;
    Ok(o)
}

/// Shale behind the [`Engine`] trait.
pub struct ShaleEngine {
    db: Db,
    describe: Vec<String>,
}

impl ShaleEngine {
    /// Shale's store `db`, described by `describe` (its settings lines).
    pub fn new(db: Db, describe: Vec<String>) -> ShaleEngine {
        ShaleEngine { db, describe }
    }
}

/// The structural settings of `o` that the common flags do not show, for the settings
/// block of a run (so a run's output says which tree it built).
pub fn shale_settings(o: &Options) -> Vec<String> {
    let mib = |n: u64| format!("{:.1} MiB", n as f64 / 1048576.0);
    // The first line is the design as `shale stats` prints it.
    let mut lines = vec![
        format!(
            "  shale:    layout={} values={} memory={}",
            o.layout.name(),
            o.values.name(),
            o.memory.name()
        ),
        format!(
            "  reads:    mmap_reads={} verify_checksums={}",
            if o.mmap_reads { "on" } else { "off" },
            if o.verify_checksums { "on" } else { "off" }
        ),
        format!(
            "  logs:     mmap_log_writes={}",
            if o.mmap_log_writes { "on" } else { "off" }
        ),
    ];
    if o.min_memtables_to_merge > 1 {
        lines.push(format!(
            "  memtable: {} frozen memtables of {} flushed as one (min_memtables_to_merge; up to {} frozen)",
            o.min_memtables_to_merge,
            mib(o.write_buffer_size as u64),
            o.max_immutable_memtables
        ));
    }
    if o.memtable_bloom_ratio > 0.0 {
        lines.push(format!(
            "  memtable: bloom filter of {} of each skiplist memtable (memtable_bloom_ratio)",
            o.memtable_bloom_ratio
        ));
    }
    if o.layout == LayoutKind::Trie {
        // The trie has no level sizes or table size targets; its backlog (the layout's
        // `backlog`) slows and stops writes at the level-0 triggers.
        let t = &o.trie;
        lines.push(format!(
            "  trie:     {} levels, max_sub_levels={} gc_garbage_ratio={} gc_sample_bits={} pinned_filter_levels={}, writes slowed/stopped at a backlog of {}/{}, {} compaction thread(s)",
            o.num_levels,
            t.max_sub_levels,
            t.gc_garbage_ratio,
            t.gc_sample_bits,
            t.pinned_filter_levels,
            o.level0_slowdown_trigger,
            o.level0_stop_trigger,
            o.max_background_compactions
        ));
    } else {
        lines.push(format!(
            "  levels:   {} levels, level 1 {} x{}, tables {}, level-0 triggers {}/{}/{}, {} compaction thread(s)",
            o.num_levels,
            mib(o.max_bytes_for_level_base),
            o.level_size_multiplier,
            mib(o.target_file_size),
            o.level0_compaction_trigger,
            o.level0_slowdown_trigger,
            o.level0_stop_trigger,
            o.max_background_compactions
        ));
    }
    if o.layout == LayoutKind::Leveled {
        let l = &o.leveled;
        lines.push(format!(
            "  leveled:  max_grandparent_overlap_factor={} round_robin={} seek_compaction={} (min {} seeks, one per {} bytes)",
            l.max_grandparent_overlap_factor,
            l.round_robin,
            l.seek_compaction,
            l.seek_compaction_min_seeks,
            l.seek_compaction_bytes_per_seek
        ));
    }
    if o.layout == LayoutKind::Flsm {
        let f = &o.flsm;
        lines.push(format!(
            "  flsm:     policy={} max_sstables_per_guard={} top_level_bits={} bit_decrement={} parallel_seek_min_tables={}",
            f.policy.name(),
            f.max_sstables_per_guard,
            f.top_level_bits,
            f.bit_decrement,
            f.parallel_seek_min_tables
        ));
    }
    if o.memory == MemoryKind::FloDb {
        let f = &o.flodb;
        lines.push(format!(
            "  flodb:    membuffer {} of the memtable in {} partitions, {} drain thread(s), writer_drains={}",
            f.membuffer_fraction,
            f.membuffer_partitions,
            f.drain_threads,
            if f.writer_drains { "on" } else { "off" }
        ));
    }
    if o.layout == LayoutKind::Lwc {
        lines.push(format!(
            "  lwc:      dtable tables up to {}, divided in {}, at most {} segments, seek_compaction={} (min {} seeks, one per {} bytes, merges={})",
            mib(o.target_file_size),
            o.lwc.division,
            o.lwc.max_segments,
            o.lwc.seek_compaction,
            o.lwc.seek_compaction_min_seeks,
            o.lwc.seek_compaction_bytes_per_seek,
            o.lwc.seek_compaction_merges
        ));
    }
    if o.values == ValuesKind::Vlog {
        lines.push(format!(
            "  vlog:     min_separated_value_size={} memtable_value_max={} segment {} gc={} \
             ratio {} prefetch_threads={} prefetch_depth={} prefetch_after={}",
            o.min_separated_value_size,
            o.vlog_memtable_value_max,
            mib(o.vlog_segment_size),
            o.vlog_gc,
            o.vlog_gc_ratio,
            o.scan_prefetch_threads,
            o.scan_prefetch_depth,
            o.scan_prefetch_after
        ));
    }
    lines
}

impl Engine for ShaleEngine {
    fn write(&self, ops: &[Op<'_>], sync: bool) -> EngineResult<()> {
        let room = ops
            .iter()
            .map(|op| match *op {
                Op::Put(k, v) => WriteBatch::entry_room(k, v),
                Op::Delete(k) => WriteBatch::entry_room(k, &[]),
            })
            .sum();
        let mut b = WriteBatch::with_capacity(room);
        for op in ops {
            match *op {
                Op::Put(k, v) => b.put(k, v),
                Op::Delete(k) => b.delete(k),
            }
        }
        self.db.write_opt(b, WriteOptions { sync })?;
        Ok(())
    }

    fn get(&self, key: &[u8]) -> EngineResult<Option<Vec<u8>>> {
        Ok(self.db.get(key)?)
    }

    fn seek(
        &self,
        key: &[u8],
        nexts: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> EngineResult<usize> {
        let mut c = self.db.cursor(IterOptions::default())?;
        c.seek(key)?;
        let mut n = 0;
        while c.valid() {
            visit(c.key(), c.value());
            n += 1;
            if n > nexts {
                break;
            }
            c.next()?;
        }
        Ok(n)
    }

    fn scan_all(
        &self,
        reverse: bool,
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> EngineResult<u64> {
        let mut c = self.db.cursor(IterOptions::default())?;
        if reverse {
            c.seek_to_last()?;
        } else {
            c.seek_to_first()?;
        }
        let mut n = 0;
        while n < limit && c.valid() {
            visit(c.key(), c.value());
            n += 1;
            if reverse {
                c.prev()?;
            } else {
                c.next()?;
            }
        }
        Ok(n)
    }

    fn supports_scans(&self) -> bool {
        self.db.supports_scans()
    }

    fn flush(&self) -> EngineResult<()> {
        Ok(self.db.flush()?)
    }

    fn compact(&self) -> EngineResult<()> {
        self.db.compact_range(None, None)?;
        // With a value log, compaction found the garbage; collect every segment holding
        // some (a no-op for designs without one).
        while self.db.run_value_gc()? > 0 {}
        Ok(())
    }

    fn stats_text(&self) -> String {
        self.db.stats().to_string()
    }

    fn counters(&self) -> Option<Counters> {
        let s = self.db.stats();
        Some(Counters {
            written: s.written.iter().map(|&(c, n)| (c.name(), n)).collect(),
            read: s.read.iter().map(|&(c, n)| (c.name(), n)).collect(),
            stall_micros: s.stall_micros,
            levels: s
                .levels
                .iter()
                .map(|l| LevelCounters {
                    files: l.files as u64,
                    bytes: l.bytes,
                    written: l.compaction_written,
                })
                .collect(),
            memory: if s.memory.is_empty() {
                Vec::new()
            } else {
                s.memory.named().to_vec()
            },
            get_blocks: shale::env::BlockKind::ALL
                .iter()
                .map(|&k| (k.name(), s.blocks_read_for(shale::env::ReadCause::Get, k)))
                .collect(),
        })
    }

    fn describe(&self) -> Vec<String> {
        self.describe.clone()
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        Ok(self.db.close()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_diff_by_name() {
        let level = |files, bytes, written| LevelCounters {
            files,
            bytes,
            written,
        };
        let before = Counters {
            written: vec![("wal", 10), ("flush", 5)],
            read: vec![("get", 1)],
            stall_micros: 100,
            levels: vec![level(2, 200, 300)],
            memory: vec![("staged", 5)],
            get_blocks: vec![("data", 10), ("filter", 1)],
        };
        let after = Counters {
            written: vec![("wal", 25), ("flush", 5), ("compaction", 7)],
            read: vec![("get", 4)],
            stall_micros: 150,
            levels: vec![level(1, 100, 400), level(3, 900, 900)],
            memory: vec![("staged", 12), ("direct", 2)],
            get_blocks: vec![("data", 30), ("filter", 1)],
        };
        let d = after.since(&before);
        assert_eq!(
            d.written,
            vec![("wal", 15), ("flush", 0), ("compaction", 7)]
        );
        assert_eq!(d.total_written(), 22);
        assert_eq!(d.total_read(), 3);
        assert_eq!(d.stall_micros, 50);
        assert_eq!(d.levels, vec![level(1, 100, 100), level(3, 900, 900)]);
        assert_eq!(d.memory, vec![("staged", 7), ("direct", 2)]);
        assert_eq!(d.get_blocks_of("data"), Some(20));
        assert_eq!(d.get_blocks_of("filter"), Some(0));
        assert_eq!(d.get_blocks_of("value"), None);
    }

    #[test]
    fn shale_options_follow_the_flags() {
        let c = EngineConfig {
            design: "leveldb".into(),
            settings: shale::PresetSettings::Tuned,
            axes: Default::default(),
            write_buffer_size: Some(1 << 20),
            cache_size: 8 << 20,
            compression: Compression::Lz4,
            bloom_bits: 10,
            block_size: None,
            memtable_bloom_ratio: None,
            memtables_to_merge: None,
            max_background_compactions: Some(3),
            level0_compaction_trigger: Some(6),
            max_sstables_per_guard: Some(40),
            flsm_policy: Some(FlsmPolicy::Tiered),
            parallel_seek_min_tables: Some(4),
            vlog: VlogSettings::default(),
            flodb: FloDbSettings::default(),
            lwc: LwcSettings::default(),
            mmap_reads: None,
            mmap_log_writes: None,
            verify_checksums: None,
            memory_only: false,
        };
        let o = shale_options(&c).unwrap();
        assert!(o.mmap_reads, "the preset's");
        assert_eq!(
            shale_settings(&o)[1],
            "  reads:    mmap_reads=on verify_checksums=on"
        );
        let pread = EngineConfig {
            mmap_reads: Some(false),
            ..c.clone()
        };
        let o = shale_options(&pread).unwrap();
        assert!(!o.mmap_reads);
        assert_eq!(
            shale_settings(&o)[1],
            "  reads:    mmap_reads=off verify_checksums=on"
        );
        let bloom = EngineConfig {
            memtable_bloom_ratio: Some(0.05),
            memtables_to_merge: None,
            ..c.clone()
        };
        let o = shale_options(&bloom).unwrap();
        assert_eq!(o.memtable_bloom_ratio, 0.05);
        assert!(
            shale_settings(&o)
                .join("\n")
                .contains("bloom filter of 0.05 of each skiplist memtable"),
        );
        // The tuned preset's own filter, none in the paper settings or when turned off.
        assert!(
            shale_settings(&shale_options(&c).unwrap())
                .join("\n")
                .contains("bloom filter of 0.02 of each skiplist memtable")
        );
        for c in [
            EngineConfig {
                settings: shale::PresetSettings::Paper,
                ..c.clone()
            },
            EngineConfig {
                memtable_bloom_ratio: Some(0.0),
                ..c.clone()
            },
        ] {
            assert!(
                !shale_settings(&shale_options(&c).unwrap())
                    .join("\n")
                    .contains("bloom filter of")
            );
        }
        assert_eq!(on_off("on"), Ok(true));
        assert_eq!(on_off("0"), Ok(false));
        assert!(on_off("maybe").is_err());
        let o = shale_options(&c).unwrap();
        assert_eq!(o.write_buffer_size, 1 << 20);
        assert_eq!(o.max_background_compactions, 3);
        assert_eq!(o.level0_compaction_trigger, 6);
        assert_eq!(o.flsm.max_sstables_per_guard, 40);
        assert_eq!(o.flsm.policy, FlsmPolicy::Tiered);
        assert_eq!(o.flsm.parallel_seek_min_tables, 4);
        assert_eq!(o.block_cache_bytes, 8 << 20);
        assert_eq!(o.table.compression, Compression::Lz4);
        assert_eq!(c.memtable_bytes(EngineKind::Rocksdb), 1 << 20);
        let preset = EngineConfig {
            write_buffer_size: None,
            design: "pebblesdb".into(),
            ..c.clone()
        };
        let tuned = Options::preset("pebblesdb").unwrap().write_buffer_size;
        assert_eq!(shale_options(&preset).unwrap().write_buffer_size, tuned);
        assert_eq!(preset.memtable_bytes(EngineKind::Shale), tuned);
        assert_eq!(preset.memtable_bytes(EngineKind::Rocksdb), 64 << 20);
        // The tuned RocksDB takes the memtable of the design it is compared with, in the
        // settings it runs with.
        assert_eq!(preset.memtable_bytes(EngineKind::RocksdbTuned), tuned);
        let paper = EngineConfig {
            settings: PresetSettings::Paper,
            ..preset.clone()
        };
        assert_eq!(
            shale_options(&paper).unwrap().write_buffer_size,
            shale::options::PRESET_WRITE_BUFFER_SIZE
        );
        assert_eq!(
            paper.memtable_bytes(EngineKind::RocksdbTuned),
            shale::options::PRESET_WRITE_BUFFER_SIZE
        );
        assert_eq!(paper.memtable_bytes(EngineKind::Rocksdb), 64 << 20);
        assert_eq!(c.memtable_bytes(EngineKind::RocksdbTuned), 1 << 20);
        let lines = shale_settings(&shale_options(&preset).unwrap()).join("\n");
        assert!(lines.contains("layout=flsm values=inline"), "{lines}");
        assert!(lines.contains("level-0 triggers 6/20/36"), "{lines}");
        assert!(
            lines.contains("policy=tiered max_sstables_per_guard=40")
                && lines.contains("parallel_seek_min_tables=4"),
            "{lines}"
        );
        assert!(!lines.contains("vlog:"), "{lines}");
        assert!(!lines.contains("leveled:"), "{lines}");
        let leveldb = shale_settings(&Options::paper_preset("leveldb").unwrap()).join("\n");
        assert!(
            leveldb.contains("tables 2.0 MiB, level-0 triggers 4/8/12")
                && leveldb.contains("max_grandparent_overlap_factor=10 round_robin=true")
                && leveldb.contains("seek_compaction=true (min 100 seeks, one per 16384 bytes)"),
            "{leveldb}"
        );
        assert!(!lines.contains("flodb:"), "{lines}");
        let trie = shale_settings(&Options::preset("lsm-trie").unwrap()).join("\n");
        assert!(
            trie.contains("trie:     5 levels, max_sub_levels=8")
                && trie.contains("slowed/stopped at a backlog of")
                && !trie.contains("levels:   "),
            "the trie's settings are its own, not the leveled tree's: {trie}"
        );
        let flodb = EngineConfig {
            design: "flodb".into(),
            flodb: FloDbSettings {
                membuffer_fraction: Some(0.5),
                membuffer_partitions: Some(8),
                drain_threads: Some(2),
                writer_drains: Some(false),
            },
            ..c.clone()
        };
        let o = shale_options(&flodb).unwrap();
        assert_eq!(
            (
                o.flodb.membuffer_fraction,
                o.flodb.membuffer_partitions,
                o.flodb.drain_threads,
                o.flodb.writer_drains
            ),
            (0.5, 8, 2, false)
        );
        let lines = shale_settings(&o).join("\n");
        assert!(
            lines.contains(
                "flodb:    membuffer 0.5 of the memtable in 8 partitions, 2 drain thread(s), writer_drains=off"
            ),
            "{lines}"
        );
        let wrong = EngineConfig {
            flodb: FloDbSettings {
                membuffer_fraction: Some(2.0),
                ..Default::default()
            },
            ..flodb
        };
        assert!(shale_options(&wrong).is_err(), "the fraction is validated");
        let lwc = EngineConfig {
            design: "lwc".into(),
            lwc: LwcSettings {
                division: Some(4),
                max_segments: Some(6),
                seek_compaction: None,
                seek_compaction_merges: Some(true),
            },
            ..c.clone()
        };
        let o = shale_options(&lwc).unwrap();
        assert_eq!((o.lwc.division, o.lwc.max_segments), (4, 6));
        assert!(o.lwc.seek_compaction && o.lwc.seek_compaction_merges);
        assert!(
            shale_settings(&o)
                .join("\n")
                .contains("divided in 4, at most 6 segments")
        );
        let one_segment = EngineConfig {
            lwc: LwcSettings {
                max_segments: Some(1),
                ..LwcSettings::default()
            },
            ..lwc
        };
        assert!(
            shale_options(&one_segment).is_err(),
            "max_segments is validated"
        );
        let bad = EngineConfig {
            design: "nope".into(),
            ..c
        };
        assert!(shale_options(&bad).is_err());
    }
}

/// Shale's memory component alone (`shale bench --memory-only`, FloDB's Fig. 17 setup):
/// writes go to the design's memory component and full memtables are dropped
/// ([`shale::memory_only::MemoryOnly`]); no log, no files, no scans.
pub struct MemoryOnlyEngine {
    m: shale::memory_only::MemoryOnly,
    describe: Vec<String>,
}

impl MemoryOnlyEngine {
    /// The memory component of the design `config` describes.
    ///
    /// # Errors
    /// Options that do not validate.
    pub fn open(config: &EngineConfig) -> EngineResult<MemoryOnlyEngine> {
        let o = shale_options(config)?;
        let mut describe = shale_settings(&o);
        describe.push(format!(
            "  memory-only: the {} memory component alone; full {:.1} MiB memtables are dropped, nothing is logged or written",
            o.memory.name(),
            o.write_buffer_size as f64 / 1048576.0
        ));
        Ok(MemoryOnlyEngine {
            m: shale::memory_only::MemoryOnly::new(&o)?,
            describe,
        })
    }

    fn unsupported(what: &str) -> CliError {
        CliError::msg(format!(
            "--memory-only runs puts, deletes and gets on the memory component alone; it has no {what}"
        ))
    }
}

impl Engine for MemoryOnlyEngine {
    fn write(&self, ops: &[Op<'_>], _sync: bool) -> EngineResult<()> {
        // One operation at a time: there is no log to make a batch atomic in.
        for op in ops {
            match *op {
                Op::Put(k, v) => self.m.put(k, v)?,
                Op::Delete(k) => self.m.delete(k)?,
            }
        }
        Ok(())
    }

    fn get(&self, key: &[u8]) -> EngineResult<Option<Vec<u8>>> {
        Ok(self.m.get(key))
    }

    fn seek(
        &self,
        _key: &[u8],
        _nexts: usize,
        _visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> EngineResult<usize> {
        Err(Self::unsupported("scans"))
    }

    fn scan_all(
        &self,
        _reverse: bool,
        _limit: u64,
        _visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> EngineResult<u64> {
        Err(Self::unsupported("scans"))
    }

    fn flush(&self) -> EngineResult<()> {
        Err(Self::unsupported("flush"))
    }

    fn compact(&self) -> EngineResult<()> {
        Err(Self::unsupported("compaction"))
    }

    fn stats_text(&self) -> String {
        format!(
            "memtables filled and dropped: {}\n{}",
            self.m.memtables_dropped(),
            self.m.stats()
        )
    }

    fn counters(&self) -> Option<Counters> {
        let s = self.m.stats();
        Some(Counters {
            memory: if s.is_empty() {
                Vec::new()
            } else {
                s.named().to_vec()
            },
            ..Default::default()
        })
    }

    fn describe(&self) -> Vec<String> {
        self.describe.clone()
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        Ok(())
    }
}

/// An in-memory engine for testing the workloads without a store.
#[cfg(test)]
pub mod mem {
    use std::collections::BTreeMap;
    use std::sync::RwLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::{Counters, Engine, EngineResult, Op};

    /// A `BTreeMap` behind a lock. With `drop_every = n > 0` it silently loses every n-th
    /// put, to check that benchmarks notice wrong answers.
    #[derive(Default)]
    pub struct MemEngine {
        map: RwLock<BTreeMap<Vec<u8>, Vec<u8>>>,
        pub drop_every: u64,
        puts: AtomicU64,
        written: AtomicU64,
    }

    impl MemEngine {
        pub fn lossy(drop_every: u64) -> Self {
            MemEngine {
                drop_every,
                ..Default::default()
            }
        }
        pub fn len(&self) -> usize {
            self.map.read().unwrap().len()
        }
    }

    impl Engine for MemEngine {
        fn write(&self, ops: &[Op<'_>], _sync: bool) -> EngineResult<()> {
            let mut m = self.map.write().unwrap();
            for op in ops {
                match *op {
                    Op::Put(k, v) => {
                        let n = self.puts.fetch_add(1, Ordering::Relaxed) + 1;
                        self.written
                            .fetch_add((k.len() + v.len()) as u64, Ordering::Relaxed);
                        if self.drop_every > 0 && n.is_multiple_of(self.drop_every) {
                            continue;
                        }
                        m.insert(k.to_vec(), v.to_vec());
                    }
                    Op::Delete(k) => {
                        m.remove(k);
                    }
                }
            }
            Ok(())
        }
        fn get(&self, key: &[u8]) -> EngineResult<Option<Vec<u8>>> {
            Ok(self.map.read().unwrap().get(key).cloned())
        }
        fn seek(
            &self,
            key: &[u8],
            nexts: usize,
            visit: &mut dyn FnMut(&[u8], &[u8]),
        ) -> EngineResult<usize> {
            let m = self.map.read().unwrap();
            let mut n = 0;
            for (k, v) in m.range(key.to_vec()..).take(nexts + 1) {
                visit(k, v);
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
            let m = self.map.read().unwrap();
            let it: Box<dyn Iterator<Item = (&Vec<u8>, &Vec<u8>)>> = if reverse {
                Box::new(m.iter().rev())
            } else {
                Box::new(m.iter())
            };
            let mut n = 0;
            for (k, v) in it.take(limit as usize) {
                visit(k, v);
                n += 1;
            }
            Ok(n)
        }
        fn flush(&self) -> EngineResult<()> {
            Ok(())
        }
        fn compact(&self) -> EngineResult<()> {
            Ok(())
        }
        fn stats_text(&self) -> String {
            format!("mem: {} keys\n", self.len())
        }
        fn counters(&self) -> Option<Counters> {
            Some(Counters {
                written: vec![("wal", self.written.load(Ordering::Relaxed))],
                read: vec![("get", 0)],
                ..Default::default()
            })
        }
        fn close(self: Box<Self>) -> EngineResult<()> {
            Ok(())
        }
    }
}
