//! Options: how a store is configured, and the presets that name a design.

use crate::env::Env;
use crate::error::{Error, Result};

pub mod filter;
pub(crate) mod stored;

pub use filter::{CompactionFilter, Decision, FilterContext, FilterReason};

/// The largest user key the engine accepts, in bytes.
pub const MAX_KEY_SIZE: usize = 64 * 1024;
/// The largest value the engine accepts, in bytes.
pub const MAX_VALUE_SIZE: usize = 256 * 1024 * 1024;
/// Largest [`Options::write_buffer_size`]: half of what the skiplist memtable's arenas can
/// address (2^32 cells of 8 bytes for entries, 2^32 node words), leaving room for a memtable
/// to overshoot its budget by a write group and for the chunk tails its runs skip.
pub const MAX_WRITE_BUFFER_SIZE: usize = 16 << 30;
/// The memtable size of every preset in its paper settings ([`Options::paper_preset`]):
/// LevelDB's default, which the papers' systems kept (PebblesDB on HyperLevelDB, WiscKey on
/// LevelDB 1.18) and measured with. A design's claims are about this regime, where a
/// LevelDB-style leveled tree is bound by its compactions; [`Options::default`] uses
/// 64 MiB, RocksDB's size, and the tuned presets ([`Options::preset`]) four memtables of
/// [`TUNED_WRITE_BUFFER_SIZE`] flushed as one.
pub const PRESET_WRITE_BUFFER_SIZE: usize = 4 << 20;

/// [`Options::memtable_bloom_ratio`] of the tuned presets.
pub const TUNED_MEMTABLE_BLOOM_RATIO: f64 = 0.02;

/// The default [`Options::vlog_memtable_value_max`]: separated values of up to 1 KiB are
/// kept in the memtable beside their pointers (docs/designs/wisckey.md, "Values in the
/// memtable").
pub const DEFAULT_VLOG_MEMTABLE_VALUE_MAX: usize = 1024;

/// [`Options::write_buffer_size`] of the tuned presets but `flodb`: with
/// [`TUNED_MEMTABLES_TO_MERGE`] of them flushed as one, level 0 receives 64 MiB tables, as
/// from one 64 MiB memtable, while each insert searches a 16 MiB skiplist.
pub const TUNED_WRITE_BUFFER_SIZE: usize = 16 << 20;

/// [`Options::min_memtables_to_merge`] of the tuned presets but `flodb`.
pub const TUNED_MEMTABLES_TO_MERGE: usize = 4;

/// [`Options::max_immutable_memtables`] of the tuned presets but `flodb`: the memtables
/// merged by one flush and two more that fill while it runs.
pub const TUNED_MAX_IMMUTABLE_MEMTABLES: usize = 6;

/// Block compression of table files.
///
/// On-disk: the numeric values are stored in every block trailer. Never renumber.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Compression {
    /// Blocks are stored as they are.
    #[default]
    None = 0,
    /// Blocks are compressed with LZ4 (block format); a block that does not shrink by at
    /// least 1/8 is stored uncompressed.
    Lz4 = 1,
    /// Blocks are compressed with Zstandard at its level 1 (the pure-Rust `ruzstd`
    /// encoder); a block that does not shrink by at least 1/8 is stored uncompressed.
    Zstd = 2,
}

impl Compression {
    /// `none`, `lz4` or `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// Parse `none`, `lz4` or `zstd`.
    pub fn parse(s: &str) -> Result<Compression> {
        match s {
            "none" => Ok(Compression::None),
            "lz4" => Ok(Compression::Lz4),
            "zstd" => Ok(Compression::Zstd),
            _ => Err(Error::InvalidArgument(format!(
                "unknown compression {s:?}: expected none, lz4 or zstd"
            ))),
        }
    }
}

/// The memory-component axis: where fresh writes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MemoryKind {
    /// A concurrent skiplist memtable (LevelDB).
    #[default]
    SkipList,
    /// A concurrent hash membuffer in front of the skiplist, drained into it by background
    /// threads (FloDB, `docs/designs/flodb.md`).
    FloDb,
}

/// The value-placement axis: where values live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ValuesKind {
    /// Values stored inline in the tree (LevelDB).
    #[default]
    Inline,
    /// Values separated into a value log that is also the write-ahead log (WiscKey).
    Vlog,
}

/// The layout axis: how tables are arranged and compacted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LayoutKind {
    /// Leveled compaction with disjoint tables per level (LevelDB).
    #[default]
    Leveled,
    /// Fragmented LSM: guards partition each level, tables within a guard may overlap and
    /// compaction appends to the next level instead of rewriting it (PebblesDB).
    Flsm,
    /// A trie of table containers addressed by the SHA-1 of the key; compaction moves a
    /// container's pile into its 8 children as a new sub-level each (LSM-trie). Point
    /// operations only: scans return [`Error::Unsupported`].
    Trie,
    /// Lightweight compaction: a victim table's data is appended, split by key range, to
    /// the tables below as new segments (LWC-tree, `docs/designs/lwc.md`).
    Lwc,
}

impl LayoutKind {
    /// Whether stores of this layout answer scans and cursors (a hash-ordered layout does
    /// not: [`crate::Db::iter`] and [`crate::Db::cursor`] return [`Error::Unsupported`]).
    pub fn supports_scans(self) -> bool {
        !matches!(self, LayoutKind::Trie)
    }
}

/// The table-format axis: the bytes of one table file. It follows the layout (each layout
/// reads and writes one format), so it is checked, not chosen freely.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TableKind {
    /// Sorted blocks, a bloom filter, an index and a footer (LevelDB lineage).
    #[default]
    Sst,
    /// Fixed-size buckets chosen by the key's hash, with migration between buckets and an
    /// overflow area (LSM-trie's HTable, `docs/format/htable.md`).
    HTable,
    /// A table that grows by appended segments, each committed by a footer written last
    /// (the LWC-tree's DTable, `docs/format/dtable.md`).
    DTable,
}

/// One choice on each axis: a design. Presets are names for some of them
/// ([`Options::preset`]); [`Axes::all`] lists every valid one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Axes {
    /// Where fresh writes live.
    pub memory: MemoryKind,
    /// Where values live.
    pub values: ValuesKind,
    /// How tables are arranged and compacted.
    pub layout: LayoutKind,
    /// The bytes of one table file.
    pub table: TableKind,
}

/// The names of an axis's choices, for options and the command line.
macro_rules! axis_names {
    ($kind:ident, $axis:literal, $($variant:ident = $name:literal),+ $(,)?) => {
        impl $kind {
            /// Every choice this build has.
            pub const ALL: &'static [$kind] = &[$($kind::$variant),+];

            /// The choice's name (`--
            #[doc = $axis]
            /// NAME` on the command line).
            pub fn name(self) -> &'static str {
                match self {
                    $($kind::$variant => $name),+
                }
            }

            /// The choice named `name`.
            ///
            /// # Errors
            /// [`Error::InvalidArgument`] naming the choices there are.
            pub fn parse(name: &str) -> Result<$kind> {
                $kind::ALL.iter().copied().find(|k| k.name() == name).ok_or_else(|| {
                    let names: Vec<&str> = $kind::ALL.iter().map(|k| k.name()).collect();
                    Error::InvalidArgument(format!(
                        "unknown {} {name:?}; available: {}",
                        $axis,
                        names.join(", ")
                    ))
                })
            }
        }
    };
}

axis_names!(MemoryKind, "memory", SkipList = "skiplist", FloDb = "flodb");
axis_names!(ValuesKind, "values", Inline = "inline", Vlog = "vlog");
axis_names!(
    LayoutKind,
    "layout",
    Leveled = "leveled",
    Flsm = "flsm",
    Trie = "trie",
    Lwc = "lwc"
);
axis_names!(
    TableKind,
    "table",
    Sst = "sst",
    HTable = "htable",
    DTable = "dtable"
);

impl Axes {
    /// The table format `layout` reads and writes.
    pub fn table_for(layout: LayoutKind) -> TableKind {
        match layout {
            LayoutKind::Leveled | LayoutKind::Flsm => TableKind::Sst,
            LayoutKind::Trie => TableKind::HTable,
            LayoutKind::Lwc => TableKind::DTable,
        }
    }

    /// Whether this combination answers scans and cursors ([`LayoutKind::supports_scans`]).
    pub fn supports_scans(&self) -> bool {
        self.layout.supports_scans()
    }

    /// Every valid combination: any memory component with any value placement with any
    /// layout, each layout with its table format.
    pub fn all() -> Vec<Axes> {
        let mut out = Vec::new();
        for &layout in LayoutKind::ALL {
            for &values in ValuesKind::ALL {
                for &memory in MemoryKind::ALL {
                    out.push(Axes {
                        memory,
                        values,
                        layout,
                        table: Axes::table_for(layout),
                    });
                }
            }
        }
        out
    }

    /// `layout+values+memory+table`, e.g. `leveled+vlog+skiplist+sst`.
    pub fn name(&self) -> String {
        format!(
            "{}+{}+{}+{}",
            self.layout.name(),
            self.values.name(),
            self.memory.name(),
            self.table.name()
        )
    }

    /// Whether this combination is valid: the table format is the layout's.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the format the layout needs.
    pub fn check(&self) -> Result<()> {
        let want = Axes::table_for(self.layout);
        if self.table != want {
            return Err(Error::InvalidArgument(format!(
                "the {} layout reads and writes {} tables, not {}",
                self.layout.name(),
                want.name(),
                self.table.name()
            )));
        }
        Ok(())
    }
}

/// Options of the leveled layout (ignored by the others): LevelDB's two compaction rules
/// beyond level sizes. Both only steer compaction (where outputs are cut, what is compacted
/// next), so they may change between opens. [`Options::default`] leaves both off (RocksDB
/// has neither in this form); the `leveldb` preset turns both on with LevelDB's constants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeveledOptions {
    /// A compaction into level `n` starts a new output file before the current one would
    /// overlap more than this many times [`Options::target_file_size`] of level `n + 1`
    /// (LevelDB's `kMaxGrandParentOverlapBytes`, 10 x its 2 MiB files), and a file whose
    /// range holds more than that much of level `n + 2` is merged into level `n + 1` rather
    /// than moved there. Without the limit one output can span a wide range of the level
    /// below, and its own compaction later rewrites all of it. 0 disables the limit.
    /// Default 0; the `leveldb` preset 10.
    pub max_grandparent_overlap_factor: u64,
    /// Which file of a level over its size limit is compacted: with true, the files are
    /// taken in key order, each compaction of the level starting after where the last one
    /// ended and wrapping around at the end of the key space (LevelDB's compact pointer;
    /// kept in memory, so after a reopen the rotation starts over at the first key); with
    /// false, the file with the fewest overlapping bytes in the next level per byte of its
    /// own (RocksDB's `kMinOverlappingRatio`). Default false; the `leveldb` preset true
    /// (with uniformly random writes it also rewrote about 2 % less: `docs/designs/leveldb.md`).
    pub round_robin: bool,
    /// Seek-triggered compaction (LevelDB's `allowed_seeks`): a point lookup that looks
    /// into more than one table for its key (a table whose key range holds the key, whatever
    /// its filter answers) charges the first of them one seek, as does a sample of a user
    /// iterator's reads (one per about 1 MiB read) when the sampled key falls in the range
    /// of more than one table; a table that has absorbed its allowance is compacted into the
    /// next level when no level is over its size limit. Default false; the `leveldb` preset
    /// true.
    pub seek_compaction: bool,
    /// The fewest seeks a table absorbs before it is compacted (LevelDB: 100). At least 1.
    /// Default 100.
    pub seek_compaction_min_seeks: u32,
    /// A table absorbs one seek per this many bytes of its size, when that is more than
    /// [`LeveledOptions::seek_compaction_min_seeks`] (LevelDB: 16 KiB, taking one seek to
    /// cost about as much as compacting 40 KiB). At least 1. Default 16 KiB.
    pub seek_compaction_bytes_per_seek: u64,
}

impl Default for LeveledOptions {
    fn default() -> Self {
        LeveledOptions {
            max_grandparent_overlap_factor: 0,
            round_robin: false,
            seek_compaction: false,
            seek_compaction_min_seeks: 100,
            seek_compaction_bytes_per_seek: 16 * 1024,
        }
    }
}

/// How the FLSM layout compacts a guard that holds too many tables, or that reads found
/// worth compacting (`docs/designs/pebblesdb.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FlsmPolicy {
    /// PebblesDB's rule (SOSP'17 §3.4): the guard's tables are merged and *pushed into the
    /// next level*, cut at its guards and appended to them, so a level above the last never
    /// rewrites its own data. The last level merges a guard in place (there is no level
    /// below), and so does the second-to-last when the push would land on full last-level
    /// guards holding more than `rewrite_ratio` times its bytes (the paper's 25x rule).
    #[default]
    Paper,
    /// Shale's earlier rule: the guard's newest tables are merged *in place*, in size tiers
    /// (the newest two, then each older one while it is at most half the bytes taken), and
    /// data goes down a level only when the level exceeds its byte budget. Hot guards are
    /// merged in place whole.
    Tiered,
}

impl FlsmPolicy {
    /// Every policy.
    pub const ALL: &'static [FlsmPolicy] = &[FlsmPolicy::Paper, FlsmPolicy::Tiered];

    /// `paper` or `tiered`.
    pub fn name(self) -> &'static str {
        match self {
            FlsmPolicy::Paper => "paper",
            FlsmPolicy::Tiered => "tiered",
        }
    }

    /// Parse `paper` or `tiered`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for any other name.
    pub fn parse(s: &str) -> Result<FlsmPolicy> {
        FlsmPolicy::ALL
            .iter()
            .copied()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown flsm policy {s:?}: expected paper or tiered"
                ))
            })
    }
}

/// Options of the FLSM layout (ignored by the others).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlsmOptions {
    /// What happens to a guard over `max_sstables_per_guard` tables or made hot by reads:
    /// pushed into the next level (`Paper`, the default) or merged in place in size tiers
    /// (`Tiered`). See [`FlsmPolicy`].
    pub policy: FlsmPolicy,
    /// A key is a level-1 guard when this many low bits of its guard hash are all ones.
    /// About one key in `2^top_level_bits` becomes a level-1 guard. Default 18: about 76
    /// level-1 guards at 20M keys.
    pub top_level_bits: u32,
    /// Each deeper level needs this many fewer bits (4x more guards per level at 2).
    /// Default 2.
    pub bit_decrement: u32,
    /// A guard holding more tables than this is compacted: with [`FlsmPolicy::Paper`] its
    /// tables are merged and pushed into the next level's guards (merged in place at the
    /// last level); with [`FlsmPolicy::Tiered`] its newest tables are merged in place (the
    /// newest two, then each older table while it is at most half the bytes taken). 1
    /// behaves like leveled. Default 24: with the presets' 4 MiB memtables a 20M-key load
    /// gives a level-1 guard a few hundred fragments; under the tiered policy they cost
    /// about 1.1 extra writes per byte at 24 (measured: 16 and 20 cost more, by more and
    /// smaller merges; see docs/designs/pebblesdb.md).
    pub max_sstables_per_guard: usize,
    /// The second-to-last level rewrites a guard in place instead of pushing it into the
    /// last level when the push would rewrite more than this many times its bytes (the
    /// paper's 25x rule). Default 25.
    pub rewrite_ratio: u64,
    /// Seeks that a guard holding several tables absorbs before it is compacted (pushed
    /// into the next level under [`FlsmPolicy::Paper`], merged in place at the last level
    /// and under [`FlsmPolicy::Tiered`]): the larger of this and the guard's bytes / 16 KiB
    /// / (tables - 1) (LevelDB's `allowed_seeks` rule); 0 disables seek-based compaction.
    /// Default 10.
    pub seek_compaction_trigger: u32,
    /// Gets that probe several tables of one guard charge its read budget too (as seeks
    /// do). Default true.
    pub get_compaction: bool,
    /// The aggressive level rule (PebblesDB §4.2): a level `L >= 1` holding at least this
    /// percentage of the bytes of a non-empty level `L + 1` is pushed into `L + 1`, guard by
    /// guard, so seeks meet fewer levels; 0 disables it. It is the picker's lowest-priority
    /// rule, so it runs only when no other compaction is due. Default 25 (the paper's): a
    /// load that stays in level 1 (the `pebblesdb` preset up to its 4 GiB level-1 budget)
    /// never triggers it; above that it moves level 1 down once it reaches a quarter of
    /// level 2, one extra write for at most about a fifth of the data.
    pub aggressive_ratio_percent: u64,
    /// A seek landing in a guard of the last non-empty level that holds at least this many
    /// tables seeks them on concurrent threads, then merges (PebblesDB's parallel seeks);
    /// 0 disables it (`shale bench --parallel-seeks N`). Default 0 (off): each such seek
    /// starts a thread per table (no pool), a thread costs tens of microseconds, a seek in
    /// cached blocks a few, and on the 2-core benchmark machine the data sits in the page
    /// cache, where the paper too finds threads cost more than they save. Turn it on (e.g.
    /// 4) for stores much larger than memory on devices that serve parallel reads.
    pub parallel_seek_min_tables: usize,
}

impl Default for FlsmOptions {
    fn default() -> Self {
        FlsmOptions {
            policy: FlsmPolicy::Paper,
            top_level_bits: 18,
            bit_decrement: 2,
            max_sstables_per_guard: 24,
            rewrite_ratio: 25,
            seek_compaction_trigger: 10,
            get_compaction: true,
            aggressive_ratio_percent: 25,
            parallel_seek_min_tables: 0,
        }
    }
}

/// Options of the LSM-trie layout (`layout = trie`; ignored by the others).
#[derive(Clone, Debug, PartialEq)]
pub struct TrieOptions {
    /// A container above the last level whose pile holds this many tables (sub-levels) is
    /// compacted into its 8 children. Default 8 (the paper's: as many sub-levels as the
    /// amplification factor).
    pub max_sub_levels: usize,
    /// A container of the last level is garbage-collected (its pile merged into one table,
    /// dropping shadowed versions and tombstones) once the estimated share of its entries
    /// that are garbage reaches this. In `(0, 1]`. Default 0.5.
    pub gc_garbage_ratio: f64,
    /// One key in `2^gc_sample_bits` (chosen by hash) is sampled when a compaction appends a
    /// sub-level to a last-level container: the sample's hits in the older sub-levels give
    /// the garbage estimate. In `0..=16`. Default 6 (one key in 64).
    pub gc_sample_bits: u32,
    /// The trie levels (from the root) whose filters are kept in memory: each container's
    /// filter cluster is read whole at the first get that needs it and kept while its pile
    /// is unchanged, so a get asks those levels' filters without reading. Deeper levels
    /// read one column block of their filter cluster per get (through the block cache):
    /// at most one filter block per level, the paper's bound for filters that do not fit in
    /// memory. Default 64: every level.
    pub pinned_filter_levels: usize,
}

impl Default for TrieOptions {
    fn default() -> Self {
        TrieOptions {
            max_sub_levels: 8,
            gc_garbage_ratio: 0.5,
            gc_sample_bits: 6,
            pinned_filter_levels: 64,
        }
    }
}

/// Options of the LWC layout (ignored by the others). The largest a DTable grows by appends
/// before it is divided is [`Options::target_file_size`] (the paper's band).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LwcOptions {
    /// Tables an equal division makes of an oversized DTable, each about
    /// `target_file_size / division` bytes (LWC-tree §4.4). In `2..=64`. Default 10, the
    /// paper's default (the size ratio between levels); its sensitivity study finds 12 a
    /// good choice.
    pub division: usize,
    /// A DTable holding more segments than this is divided too, whatever its size: each
    /// segment is one more filter and index a lookup may ask, and one more input of a scan.
    /// At least 2. Default 6 (the paper has no such bound): at 16, a 128-byte-value seek
    /// read 1.9x the bytes of one at 6 for 5% less write amplification (docs/designs/lwc.md).
    pub max_segments: u32,
    /// Seek-triggered compaction, LevelDB's rule adapted (`docs/designs/lwc.md`): a point
    /// lookup that looks into more than one table for its key, or into a table of more than
    /// one segment, charges the first table one seek, as does a sample of a user iterator's
    /// reads (one per about 1 MiB read); a table that has absorbed its allowance is
    /// compacted (see [`LwcOptions::seek_compaction_merges`]) when no other work is due.
    /// Default true.
    pub seek_compaction: bool,
    /// The fewest seeks a table absorbs before it is compacted (LevelDB: 100). At least 1.
    /// Default 100.
    pub seek_compaction_min_seeks: u32,
    /// A table absorbs one seek per this many bytes of its size, when that is more than
    /// [`LwcOptions::seek_compaction_min_seeks`] (LevelDB: 16 KiB). At least 1. Default
    /// 16 KiB.
    pub seek_compaction_bytes_per_seek: u64,
    /// What happens to a table due for seeks: with true, when it holds several segments
    /// they are merged (it is rewritten in its own level, as a division) and otherwise it is
    /// pushed down; with false it is pushed down by a lightweight compaction (appended to the
    /// tables below it, as LevelDB moves the file down), and only in the last level are its
    /// segments merged. Default false.
    pub seek_compaction_merges: bool,
}

impl Default for LwcOptions {
    fn default() -> Self {
        LwcOptions {
            division: 10,
            max_segments: 6,
            seek_compaction: true,
            seek_compaction_min_seeks: 100,
            seek_compaction_bytes_per_seek: 16 * 1024,
            seek_compaction_merges: false,
        }
    }
}

/// Options of the FloDB memory component (`memory = flodb`; ignored by the others). Not
/// kept in the options record: they shape nothing on disk.
#[derive(Clone, Debug, PartialEq)]
pub struct FloDbOptions {
    /// Share of [`Options::write_buffer_size`] the hash membuffer may hold; the skiplist
    /// takes the rest (the memtable switches when both together reach the write buffer
    /// size). In `0.0..=0.9`; 0 disables the membuffer (every write goes to the skiplist).
    /// Default 0.25, the paper's 1/4 : 3/4 split.
    pub membuffer_fraction: f64,
    /// Partitions of the membuffer (by key range, sampled from the previous memtable's
    /// keys; by key hash until a sample exists), each with its own lock and an equal share
    /// of its bytes; fewer when a partition would hold less than 1 KiB. In `1..=4096`.
    /// Default 64.
    pub membuffer_partitions: usize,
    /// Background threads that move membuffer entries into the skiplist, in `0..=64`; with
    /// 0 the membuffer is emptied only when a memtable is sealed or scanned (a full
    /// partition sends writes to the skiplist directly). Default 1 (the benchmark machine
    /// has 2 cores).
    pub drain_threads: usize,
    /// A partition a put found full (the put then goes to the skiplist directly, the
    /// paper's rule) is drained by the next writer to finish a write (usually that put's),
    /// once its write is published, on its own thread and holding up no other write (the
    /// last partition named wins; the drain threads take the rest): writers share the drain when the drain
    /// threads fall behind, instead of sending every later write of the partition to the
    /// skiplist one search at a time. Only partitions of key ranges; a hash partition's
    /// drain gains nothing over direct inserts. Default `true`; the `flodb` preset's paper
    /// settings turn it off (the paper's writers never drain).
    pub writer_drains: bool,
}

impl Default for FloDbOptions {
    fn default() -> Self {
        FloDbOptions {
            membuffer_fraction: 0.25,
            membuffer_partitions: 64,
            drain_threads: 1,
            writer_drains: true,
        }
    }
}

/// Options of the table format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableOptions {
    /// Target uncompressed size of a data block.
    pub block_size: usize,
    /// Keys between restart points in a data block.
    pub block_restart_interval: usize,
    /// Bloom filter bits per key; 0 disables the filter.
    pub bloom_bits_per_key: usize,
    /// Compression of data blocks.
    pub compression: Compression,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
        }
    }
}

/// How a store is configured. Start from [`Options::default`] (the leveled design with
/// RocksDB's sizes: the general-purpose choice), [`Options::preset`] (a design with the
/// settings that measure best) or [`Options::paper_preset`] (a design with the settings its
/// paper measured) and change fields.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Create the store if the directory holds none. Default true.
    pub create_if_missing: bool,
    /// Fail if a store already exists. Default false.
    pub error_if_exists: bool,
    /// The file system to use. Default: the real one.
    pub env: Env,
    /// Size of one memtable before it is frozen and flushed. Default 64 MiB, as the tuned
    /// presets; the paper presets use [`PRESET_WRITE_BUFFER_SIZE`] (4 MiB). At most
    /// [`MAX_WRITE_BUFFER_SIZE`] (16 GiB): the skiplist's arenas address 32 GiB each.
    pub write_buffer_size: usize,
    /// Bytes of a whole-key bloom filter over each skiplist memtable's keys, as a fraction
    /// of `write_buffer_size` (RocksDB's `memtable_prefix_bloom_size_ratio` with
    /// `memtable_whole_key_filtering`): a get for a key the memtable does not hold then
    /// skips the skiplist search, which in a full 64 MiB memtable reads about 17 nodes, most
    /// of them cache misses. The filter counts in the memtable's size. In `[0, 0.25]`;
    /// default 0 (none, as RocksDB and LevelDB) and in the paper presets;
    /// [`TUNED_MEMTABLE_BLOOM_RATIO`] (0.02: 328 KiB of a 16 MiB memtable, about 20 bits
    /// per key for the smallest entries, value pointers, to 60 for entries of 300 bytes) in
    /// the tuned presets: at 5M keys it made gets right after the load 1.19x-1.52x faster
    /// and the load 0.85x-1.01x as fast (`docs/benchmarks.md` [S20q]). With the `flodb`
    /// memory component the filter covers the skiplist (a staged key's bits are set when
    /// a drain moves it there): a get asks the mutable memtable's membuffer partition
    /// first, then skips the skiplist search for a key the filter refuses.
    pub memtable_bloom_ratio: f64,
    /// Frozen memtables allowed to wait for flushing before writers stop. Default 2; 6 in
    /// the tuned presets but `flodb` (room for [`Options::min_memtables_to_merge`] and the
    /// memtables filled while they flush). At least `min_memtables_to_merge`.
    pub max_immutable_memtables: usize,
    /// Frozen memtables a flush waits for and writes out as one (RocksDB's
    /// `min_write_buffer_number_to_merge`): a flush starts once this many are frozen (or
    /// when asked, [`crate::Db::flush`], or when the value placement needs its log
    /// reclaimed) and merges every frozen memtable into one flush. Smaller memtables, each
    /// `write_buffer_size`, with the tables of larger ones: an insert searches a skiplist
    /// that fits the CPU caches better, while level 0 receives as many bytes per file as
    /// with one memtable of `write_buffer_size` times this. Reads ask each frozen memtable
    /// until it is flushed. Default 1 (each memtable flushed alone, as RocksDB and
    /// LevelDB); 4 with 16 MiB memtables in the tuned presets but `flodb`
    /// (`docs/benchmarks.md` [S21q]).
    pub min_memtables_to_merge: usize,
    /// How long frozen memtables wait for [`Options::min_memtables_to_merge`] of them: once
    /// no memtable was frozen for this long, those frozen are flushed as they are, so a
    /// store that stopped writing (reads after a load) does not keep asking memtables that
    /// wait for writes that do not come. `None` waits for ever (RocksDB's
    /// `min_write_buffer_number_to_merge`). Default 1 second. Nothing waits when
    /// `min_memtables_to_merge` is 1.
    pub memtable_merge_timeout: Option<std::time::Duration>,
    /// Table format options.
    pub table: TableOptions,
    /// Byte budget of the block cache. Default 64 MiB; 0 disables it.
    pub block_cache_bytes: usize,
    /// Table files kept open at once. Default 1000. (A table's bloom filter stays in memory
    /// with its file metadata once a read has opened it, open or not: see
    /// [`crate::version::PinnedFilter`].)
    pub max_open_files: usize,
    /// Read table files and sealed value-log segments through a read-only memory map of
    /// each (`mmap`) instead of positioned reads (`pread`): a table block or a separated
    /// value read from the page cache then costs a copy and no system call. LevelDB always
    /// does this for up to 1000 table files (its POSIX `Env`, `PosixMmapReadableFile`);
    /// RocksDB's `allow_mmap_reads` (off by default). Like LevelDB, at most
    /// [`crate::env::posix::MAX_MAPPED_FILES`] files are mapped at once in a process;
    /// files past that, and file systems that cannot map (the in-memory ones), are read
    /// with `pread`. Never mapped: the write-ahead log and the MANIFEST. A value-log
    /// segment is mapped to its valid bytes once the writer has rotated out of it or an
    /// open replayed it; the one this process's writer appends to is mapped as its file
    /// stands, and mapped again when a read needs records appended since. Table blocks
    /// are lent from the map with no copy; value-log records are copied out of it.
    ///
    /// The catch, the same as LevelDB's and RocksDB's: a mapped file truncated by another
    /// program while the store is open, or a device error reading a mapped page, kills
    /// the process with `SIGBUS` where `pread` returns an error (`UNSAFE.md`,
    /// `docs/reliability.md`). Default false (RocksDB's default); true in every preset:
    /// the designs they reproduce were built on LevelDB's code or measured against LevelDB,
    /// which reads this way.
    pub mmap_reads: bool,
    /// Copy small appends to the logs (the write-ahead log, value-log segments) into a
    /// writable memory map of the space reserved ahead of the writer instead of handing
    /// each to the OS with `write(2)`: an append of a few hundred bytes then costs a copy
    /// (and a page fault per 4 KiB page) instead of a system call, about 0.5 us less per
    /// write on the benchmark machine (docs/benchmarks.md [S23q]). Appends of 512 bytes or
    /// more are written with `pwrite` either way (whole fills with larger records measured
    /// slower through the map, `docs/env.md`). The bytes on disk, syncs and what a crash leaves are the
    /// same. RocksDB's `allow_mmap_writes` (off by default); early LevelDB wrote its files
    /// through maps (`PosixMmapFile`) before it moved to `write(2)`.
    ///
    /// The catch, as with [`Options::mmap_reads`]: a device or file-system error under a
    /// mapped page of the log kills the process with `SIGBUS` where `write(2)` returns an
    /// error (`UNSAFE.md`). Only on Linux, and only for logs whose space could be reserved
    /// (`fallocate`); elsewhere the option changes nothing. Default false (RocksDB's
    /// default); true in every preset, where it measures faster.
    pub mmap_log_writes: bool,
    /// Number of levels. Default 7.
    pub num_levels: usize,
    /// Target size of a table written by compaction. Default 64 MiB.
    pub target_file_size: u64,
    /// Size of level 1 before it is compacted. Default 256 MiB.
    pub max_bytes_for_level_base: u64,
    /// Growth factor between levels. Default 10.
    pub level_size_multiplier: u64,
    /// Level-0 files that trigger a compaction. Default 4.
    pub level0_compaction_trigger: usize,
    /// Level-0 files at which each write is delayed. Default 20.
    pub level0_slowdown_trigger: usize,
    /// Level-0 files at which writes stop until compaction catches up. Default 36.
    pub level0_stop_trigger: usize,
    /// Compactions that may run at once (each on its own thread, beside the one flush
    /// thread). At least 1. Default 1, as RocksDB (one flush and one compaction job):
    /// measured on 2 cores with leveled random writes a second worker gained nothing, since
    /// a level-0 plan conflicts with every level-1 plan (`docs/benchmarks.md`). Layouts
    /// with disjoint plans (guards, partitions) gain from more.
    pub max_background_compactions: usize,
    /// Verify block checksums on every read. Default true.
    pub verify_checksums: bool,
    /// What recovery does with damage in the write-ahead log (RocksDB's
    /// `wal_recovery_mode`; see [`WalRecoveryMode`]). Default
    /// [`WalRecoveryMode::TolerateCorruptedTailRecords`]. The value log (`values = vlog`)
    /// keeps its own rules (`docs/format/vlog.md`).
    pub wal_recovery_mode: WalRecoveryMode,
    /// How a table just written (by a flush, a compaction or recovery) is read back and
    /// checked before the edit adding it commits (LevelDB's `paranoid_checks` for new
    /// tables): a file system that lost or damaged a write then fails the flush or
    /// compaction (the store turns read-only, the data stays in the log or the input
    /// tables) instead of committing a corrupt table. Default [`NewTableCheck::Quick`].
    pub verify_new_tables: NewTableCheck,
    /// Size at which the MANIFEST is rewritten as one snapshot edit into a new file (and
    /// CURRENT switched to it). Default 64 MiB; crash tests use a few KiB to exercise the
    /// switch often.
    pub max_manifest_bytes: u64,
    /// Memory component.
    pub memory: MemoryKind,
    /// Value placement.
    pub values: ValuesKind,
    /// Layout.
    pub layout: LayoutKind,
    /// Table format (must be the layout's, [`Axes::table_for`]).
    pub table_format: TableKind,
    /// Threads that resolve separated values ahead of a sequential scan (WiscKey's parallel
    /// prefetching); 0 disables prefetching. Started on the first scan that needs them, so
    /// inline placement never starts any. Default 4: each thread mostly waits on one random
    /// read, so on an SSD more threads than cores pay; four plus the scanning thread keeps
    /// five reads in flight per scan on a 2-core machine without crowding out its CPUs (the
    /// paper used 32). At most 256. Not in the options record (nothing on disk depends on
    /// it; it may change at any open): `--prefetch-threads` for `shale bench`, `shale ycsb`
    /// and the store commands.
    pub scan_prefetch_threads: usize,
    /// Entries a sequential scan reads ahead of its reader and hands to the prefetch
    /// threads (0 disables prefetching). Default 16: enough to keep every thread busy with
    /// one scan (and about 64 KiB of 4 KiB values in flight per scan). At most 4096. Not
    /// recorded, as the threads (`--prefetch-depth`).
    pub scan_prefetch_depth: usize,
    /// Steps in one direction since a seek after which a scan counts as sequential and
    /// starts reading ahead (the prefetch threshold). Default 2, so a seek and one `next`
    /// (a point-like read) never starts it; the iterator of `Db::iter` seeks on its first
    /// `next`, so its third item is the first prefetched. 1 to 1,000,000. Not
    /// recorded, as the threads (`--prefetch-after`).
    pub scan_prefetch_after: usize,
    /// Bytes of prefetched values, over all scans, that may wait to be read before the
    /// prefetch threads pause (each running thread may add one value beyond it). Default
    /// 8 MiB.
    pub scan_prefetch_bytes: usize,
    /// A scan hands value reads to the prefetch threads only while its reads take at least
    /// this many microseconds on average: a read served from the page cache (a few
    /// microseconds) is cheaper done in place than handed to another thread, a device read
    /// (tens of microseconds or more) is not. 0 prefetches whatever the reads cost.
    /// Default 10.
    pub scan_prefetch_slow_read_micros: u64,
    /// With `values = vlog`: values of at least this many bytes go to the value log and the
    /// tree holds a pointer; smaller values (and deletes) are logged in the value log too,
    /// since it is the write-ahead log, but the tree keeps them inline. 0 separates every
    /// value (the paper). Default 512.
    pub min_separated_value_size: usize,
    /// With `values = vlog`: a separated value of at most this many bytes is kept in the
    /// memtable beside its pointer (it is in the value log too; a flush writes the pointer
    /// alone to the table), so reads of what is still in memory do not go to the log; the
    /// memtable's size counts the values it keeps. 0 keeps none: the memtable holds
    /// pointers only, as in the WiscKey paper. Larger values are not kept: copying them
    /// costs writes more than it saves reads. Any size is accepted (a limit above every
    /// value keeps them all). Default 1024 (0 in `wisckey`'s paper settings)
    /// (`docs/designs/wisckey.md`, "Values in the memtable").
    pub vlog_memtable_value_max: usize,
    /// With `values = vlog`: a value-log segment is closed and a new one started once it
    /// holds this many bytes. Default 128 MiB.
    pub vlog_segment_size: u64,
    /// With `values = vlog`: run garbage collection automatically. Default true.
    pub vlog_gc: bool,
    /// With `values = vlog`: a sealed segment whose garbage is at least this fraction of its
    /// bytes is collected. Default 0.5.
    pub vlog_gc_ratio: f64,
    /// With `values = vlog`: bytes per second the automatic garbage collection may read;
    /// 0 means no limit. Default 64 MiB/s.
    pub vlog_gc_bytes_per_sec: u64,
    /// Options of the leveled layout.
    pub leveled: LeveledOptions,
    /// Options of the FLSM layout.
    pub flsm: FlsmOptions,
    /// Options of the FloDB memory component.
    pub flodb: FloDbOptions,
    /// Options of the LSM-trie layout.
    pub trie: TrieOptions,
    /// Options of the LWC layout.
    pub lwc: LwcOptions,
    /// A filter that keeps, removes or rewrites entries as flushes and compactions write
    /// them ([`filter`] says when it runs and what each decision does). A runtime option:
    /// not kept in the options record, give it at every open. Default none (the merge
    /// then does no per-entry work for it).
    pub compaction_filter: Option<std::sync::Arc<dyn CompactionFilter>>,
    /// Every value carries its expiry time (`shale::ttl::TtlDb`, `docs/format/ttl.md`):
    /// set by `TtlDb::open`, recorded in the options record and fixed, so a store of
    /// expiring values is not opened as a plain one, nor a plain one as expiring. A plain
    /// [`crate::Db`] opened with it set reads the values with their 8-byte expiry suffix.
    /// Default false.
    pub expiring_values: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            env: Env::posix(),
            write_buffer_size: 64 << 20,
            memtable_bloom_ratio: 0.0,
            max_immutable_memtables: 2,
            min_memtables_to_merge: 1,
            memtable_merge_timeout: Some(std::time::Duration::from_secs(1)),
            table: TableOptions::default(),
            block_cache_bytes: 64 << 20,
            max_open_files: 1000,
            mmap_reads: false,
            mmap_log_writes: false,
            num_levels: 7,
            target_file_size: 64 << 20,
            max_bytes_for_level_base: 256 << 20,
            level_size_multiplier: 10,
            level0_compaction_trigger: 4,
            level0_slowdown_trigger: 20,
            level0_stop_trigger: 36,
            max_background_compactions: 1,
            verify_checksums: true,
            wal_recovery_mode: WalRecoveryMode::default(),
            verify_new_tables: NewTableCheck::default(),
            max_manifest_bytes: MAX_MANIFEST_BYTES,
            memory: MemoryKind::SkipList,
            values: ValuesKind::Inline,
            layout: LayoutKind::Leveled,
            table_format: TableKind::Sst,
            scan_prefetch_threads: 4,
            scan_prefetch_depth: 16,
            scan_prefetch_after: crate::iter::prefetch::SEQUENTIAL_TRIGGER,
            scan_prefetch_bytes: 8 << 20,
            scan_prefetch_slow_read_micros: 10,
            min_separated_value_size: 512,
            vlog_memtable_value_max: DEFAULT_VLOG_MEMTABLE_VALUE_MAX,
            vlog_segment_size: 128 << 20,
            vlog_gc: true,
            vlog_gc_ratio: 0.5,
            vlog_gc_bytes_per_sec: 64 << 20,
            leveled: LeveledOptions::default(),
            flsm: FlsmOptions::default(),
            flodb: FloDbOptions::default(),
            trie: TrieOptions::default(),
            lwc: LwcOptions::default(),
            compaction_filter: None,
            expiring_values: false,
        }
    }
}

/// What recovery does when a write-ahead log is damaged, after RocksDB's
/// `WALRecoveryMode`. Each log is *known complete* through the length it had when it was
/// closed (synced at a memtable switch or at `Db::close`, `docs/format/wal.md` §4); bytes
/// beyond that, in the newest log only, may be a tail a crash tore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WalRecoveryMode {
    /// Drop a torn tail (beyond the known-complete length of the newest log, counted in
    /// `Stats::placement`); any damage inside a known-complete prefix, a missing log the
    /// MANIFEST or the log chain names, or a log of another store is
    /// [`crate::Error::Corruption`] naming the file and offset. The default.
    #[default]
    TolerateCorruptedTailRecords,
    /// As the default, but a torn tail is an error too: open succeeds only if every log
    /// reads to its end (for stores that sync every write and want to hear of any loss).
    AbsoluteConsistency,
    /// Replay up to the first damage of any kind and stop there: the store opens with the
    /// writes before it, a consistent point in time, and drops everything after it (the
    /// bytes are counted in `Stats::placement`). A log of another store is still refused.
    PointInTimeRecovery,
    /// Salvage: skip every damaged record (resuming at the next 32 KiB block) and every
    /// missing log, and replay all the rest. The result may not be a prefix of the write
    /// history; for getting data out of a damaged store. A log of another store is still
    /// refused.
    SkipAnyCorruptedRecords,
}

impl WalRecoveryMode {
    /// Every mode, with the name the command line uses.
    pub const ALL: [(WalRecoveryMode, &'static str); 4] = [
        (
            WalRecoveryMode::TolerateCorruptedTailRecords,
            "tolerate-corrupted-tail-records",
        ),
        (WalRecoveryMode::AbsoluteConsistency, "absolute-consistency"),
        (WalRecoveryMode::PointInTimeRecovery, "point-in-time"),
        (
            WalRecoveryMode::SkipAnyCorruptedRecords,
            "skip-any-corrupted-records",
        ),
    ];

    /// The mode named `name` (as in [`WalRecoveryMode::ALL`]).
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] listing the names.
    pub fn from_name(name: &str) -> crate::Result<WalRecoveryMode> {
        by_name(&Self::ALL, name, "WAL recovery mode")
    }
}

/// How much of a table just written is read back before it is committed
/// ([`Options::verify_new_tables`]). Every level reads through the file system, not the
/// writer's memory, so it sees what a later reader will.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NewTableCheck {
    /// Commit tables as written, unread.
    Off,
    /// Open the table as a reader would (its size against what was written, the footer and
    /// its checksum, the properties, index and filter blocks under their checksums, the
    /// table's identity), then read its first and last data blocks under their checksums and
    /// check they hold the smallest and largest keys. A few small reads, mostly from the
    /// page cache, and the opened table stays in the table cache for the reads that
    /// follow. Damage to a middle data block is not found: sampling one would find a single
    /// damaged block of a 2 MiB table with 4 KiB blocks once in about 500 tables, so it is
    /// not offered as a check (`docs/reliability.md`, "Damaged stores"; use `Full`). The
    /// default.
    #[default]
    Quick,
    /// As `Quick`, then read every data block under its checksum and check every
    /// invariant (`shale verify`'s table check): the whole table is read once more.
    Full,
}

impl NewTableCheck {
    /// Every level, with the name the command line uses.
    pub const ALL: [(NewTableCheck, &'static str); 3] = [
        (NewTableCheck::Off, "off"),
        (NewTableCheck::Quick, "quick"),
        (NewTableCheck::Full, "full"),
    ];

    /// The level named `name` (as in [`NewTableCheck::ALL`]).
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] listing the names.
    pub fn from_name(name: &str) -> crate::Result<NewTableCheck> {
        by_name(&Self::ALL, name, "new-table check")
    }
}

/// The value `all` names `name` (a table of values and their command-line names).
///
/// # Errors
/// [`crate::Error::InvalidArgument`] naming `what` and listing the names.
fn by_name<T: Copy>(all: &[(T, &'static str)], name: &str, what: &str) -> crate::Result<T> {
    all.iter()
        .find(|(_, n)| *n == name)
        .map(|&(m, _)| m)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|&(_, n)| n).collect();
            crate::Error::InvalidArgument(format!(
                "unknown {what} {name:?}; one of: {}",
                names.join(", ")
            ))
        })
}

/// A MANIFEST larger than this is rewritten as a snapshot into a new file (the default of
/// [`Options::max_manifest_bytes`]).
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// Which sizes a preset starts from ([`Options::preset_with`]). Both choose the same axes
/// and mechanisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PresetSettings {
    /// What measures best on this project's benchmark machine (`docs/benchmarks.md`,
    /// "Preset settings"): [`Options::default`]'s tree (RocksDB's sizes) under each design's
    /// mechanisms, with four 16 MiB memtables flushed as one ([`TUNED_WRITE_BUFFER_SIZE`],
    /// [`TUNED_MEMTABLES_TO_MERGE`]; `flodb` one of 64 MiB). What [`Options::preset`] gives.
    #[default]
    Tuned,
    /// The papers' settings: LevelDB's 4 MiB memtable, and LevelDB's tree for the designs
    /// built on it ([`Options::paper_preset`]).
    Paper,
}

impl PresetSettings {
    /// `tuned` or `paper`.
    pub fn name(self) -> &'static str {
        match self {
            PresetSettings::Tuned => "tuned",
            PresetSettings::Paper => "paper",
        }
    }

    /// Parse `tuned` or `paper`.
    pub fn parse(s: &str) -> Result<PresetSettings> {
        match s {
            "tuned" => Ok(PresetSettings::Tuned),
            "paper" => Ok(PresetSettings::Paper),
            _ => Err(Error::InvalidArgument(format!(
                "unknown preset settings {s:?}: expected tuned or paper"
            ))),
        }
    }
}

/// Every preset name: each one opens ([`Options::preset`]).
pub const PRESETS: [&str; 6] = [
    "leveldb",
    "pebblesdb",
    "wisckey",
    "flodb",
    "lwc",
    "lsm-trie",
];

impl Options {
    /// The presets that can be opened today.
    pub fn available_presets() -> Vec<&'static str> {
        PRESETS.to_vec()
    }

    /// Options for a named design, with the settings that measure best on this project's
    /// benchmark machine ([`PresetSettings::Tuned`]); [`Options::paper_preset`] gives the
    /// papers' own. The designs: `leveldb` (leveled + skiplist + inline), `pebblesdb`
    /// (flsm + skiplist + inline), `wisckey` (leveled + skiplist + vlog), `flodb` (leveled +
    /// flodb + inline), `lsm-trie` (trie + skiplist + inline, htable tables; point
    /// operations only), `lwc` (lwc + skiplist + inline, dtable tables).
    ///
    /// Every preset reads tables through memory maps ([`Options::mmap_reads`]), as LevelDB,
    /// which these designs were built on or measured against, does, and copies small log
    /// appends into a map ([`Options::mmap_log_writes`]), which measures faster.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unknown name (the message lists [`PRESETS`]).
    pub fn preset(name: &str) -> Result<Options> {
        Options::preset_with(name, PresetSettings::Tuned)
    }

    /// Options for a named design as its paper measured it: every preset runs LevelDB's
    /// 4 MiB memtable ([`PRESET_WRITE_BUFFER_SIZE`]), the size the papers measured their
    /// designs and their LevelDB baselines with, and the presets on the leveled layout
    /// (`leveldb`, `wisckey`, `flodb`, all built on LevelDB) keep LevelDB's tree
    /// ([`Options::leveldb_tree`]). Use these to reproduce a paper's comparison.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unknown name (the message lists [`PRESETS`]).
    pub fn paper_preset(name: &str) -> Result<Options> {
        Options::preset_with(name, PresetSettings::Paper)
    }

    /// Options for a named design with the given settings ([`Options::preset`],
    /// [`Options::paper_preset`]). Both settings choose the same axes and the same
    /// mechanisms; they differ in sizes (memtable, tables, levels, level-0 triggers).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unknown name (the message lists [`PRESETS`]).
    pub fn preset_with(name: &str, settings: PresetSettings) -> Result<Options> {
        // The designs were built on LevelDB's code (PebblesDB on HyperLevelDB, its fork) or
        // measured against LevelDB, whose POSIX Env reads tables through memory maps: the
        // presets read as it does.
        let base = match settings {
            PresetSettings::Paper => Options {
                write_buffer_size: PRESET_WRITE_BUFFER_SIZE,
                mmap_reads: true,
                mmap_log_writes: true,
                ..Options::default()
            },
            // A memtable bloom filter of 2 % (RocksDB's `memtable_prefix_bloom_size_ratio`
            // with whole-key filtering): a get right after a load no longer searches a full
            // 64 MiB memtable for keys it does not hold (docs/benchmarks.md [S20q]).
            // Four 16 MiB memtables flushed as one: level 0 receives what one 64 MiB
            // memtable would give it, and inserts search a smaller skiplist
            // (docs/benchmarks.md [S21q]).
            PresetSettings::Tuned => Options {
                mmap_reads: true,
                mmap_log_writes: true,
                memtable_bloom_ratio: TUNED_MEMTABLE_BLOOM_RATIO,
                write_buffer_size: TUNED_WRITE_BUFFER_SIZE,
                min_memtables_to_merge: TUNED_MEMTABLES_TO_MERGE,
                max_immutable_memtables: TUNED_MAX_IMMUTABLE_MEMTABLES,
                ..Options::default()
            },
        };
        // The designs built on a leveled LevelDB tree keep LevelDB's mechanisms (and, in the
        // paper settings, its sizes), so that each differs from the `leveldb` baseline in
        // its own axis only.
        let leveldb = match settings {
            PresetSettings::Paper => Options::leveldb_tree(base.clone()),
            PresetSettings::Tuned => Options {
                leveled: Options::leveldb_tree(base.clone()).leveled,
                ..base.clone()
            },
        };
        match name {
            "leveldb" => Ok(leveldb),
            // The paper's memtable holds pointers only; the tuned settings keep values of
            // up to 1 KiB beside them (docs/designs/wisckey.md, "Values in the memtable").
            "wisckey" => Ok(Options {
                values: ValuesKind::Vlog,
                vlog_memtable_value_max: match settings {
                    PresetSettings::Paper => 0,
                    PresetSettings::Tuned => DEFAULT_VLOG_MEMTABLE_VALUE_MAX,
                },
                ..leveldb
            }),
            // Fewer, larger levels: a level only appends, so its size limit decides how often
            // data is written again one level down, not how much of it is rewritten. Two
            // compaction workers: guards compact side by side (the paper's guard-parallel
            // compaction), so pushing a full guard down never holds up level 0. See
            // docs/designs/pebblesdb.md for the numbers behind these.
            "pebblesdb" => Ok(Options {
                layout: LayoutKind::Flsm,
                max_bytes_for_level_base: 4 << 30,
                max_background_compactions: 2,
                ..base
            }),
            // FloDB's memtable filter covers the skiplist (a staged key's bits are set as
            // the drain moves it in; gets ask the membuffer first); in the tuned settings
            // it made `readwhilewriting` 1.7x and `readrandom` 1.1x faster
            // (docs/benchmarks.md [S24q], when puts set the bits). Its memory is one
            // component of `write_buffer_size`
            // (a hash buffer before a skiplist) measured at 64 MiB and more
            // (docs/designs/flodb.md), flushed alone.
            "flodb" => Ok(match settings {
                PresetSettings::Paper => Options {
                    memory: MemoryKind::FloDb,
                    memtable_bloom_ratio: 0.0,
                    flodb: FloDbOptions {
                        writer_drains: false,
                        ..FloDbOptions::default()
                    },
                    ..leveldb
                },
                PresetSettings::Tuned => Options {
                    memory: MemoryKind::FloDb,
                    write_buffer_size: Options::default().write_buffer_size,
                    min_memtables_to_merge: 1,
                    max_immutable_memtables: Options::default().max_immutable_memtables,
                    ..leveldb
                },
            }),
            // The paper's five levels (the last one grows by sub-levels and is collected),
            // 16 filter bits per key for the many sub-levels a get may ask, and 4 KiB buckets.
            // See docs/designs/lsm-trie.md.
            "lsm-trie" => Ok(Options {
                layout: LayoutKind::Trie,
                table_format: TableKind::HTable,
                num_levels: 5,
                // Disjoint containers merge side by side: the fill is bound by the CPU of
                // the compactions (docs/designs/lsm-trie.md, "Compaction threads").
                max_background_compactions: 2,
                table: TableOptions {
                    bloom_bits_per_key: 16,
                    ..TableOptions::default()
                },
                ..base
            }),
            // Lightweight compaction: tables of up to target_file_size grow by appends and
            // are divided into lwc.division pieces.
            "lwc" => Ok(Options {
                layout: LayoutKind::Lwc,
                table_format: TableKind::DTable,
                ..base
            }),
            n => Err(Error::InvalidArgument(format!(
                "unknown design {n:?}; available: {}",
                Options::available_presets().join(", ")
            ))),
        }
    }

    /// Flush `n` frozen memtables as one ([`Options::min_memtables_to_merge`]), with room
    /// for them: [`Options::max_immutable_memtables`] is raised to at least `n + 2` (the
    /// memtables a flush waits for, and two that fill while it runs). What the CLI's
    /// `--memtables-to-merge` and Python's `min_memtables_to_merge=` set.
    pub fn set_memtables_to_merge(&mut self, n: usize) {
        self.min_memtables_to_merge = n;
        self.max_immutable_memtables = self.max_immutable_memtables.max(n.saturating_add(2));
    }

    /// `o` with LevelDB's leveled tree (its `Options` defaults and the constants of its
    /// `version_set.cc`, as of LevelDB 1.23): 2 MiB tables, level 1 of 10 MiB and each
    /// level 10 times the one above, level-0 triggers 4/8/12, outputs cut at 10 tables'
    /// worth of overlap with the level below, a level's files compacted in turn (its compact
    /// pointer), and seek-triggered compaction (100 seeks or one per 16 KiB of a table); and
    /// LevelDB's reads of table files through memory maps ([`Options::mmap_reads`]). What
    /// is not LevelDB's is listed in `docs/designs/leveldb.md`.
    pub fn leveldb_tree(o: Options) -> Options {
        Options {
            mmap_reads: true,
            target_file_size: 2 << 20,
            max_bytes_for_level_base: 10 << 20,
            level_size_multiplier: 10,
            level0_compaction_trigger: 4,
            level0_slowdown_trigger: 8,
            level0_stop_trigger: 12,
            leveled: LeveledOptions {
                max_grandparent_overlap_factor: 10,
                round_robin: true,
                seek_compaction: true,
                seek_compaction_min_seeks: 100,
                seek_compaction_bytes_per_seek: 16 * 1024,
            },
            ..o
        }
    }

    /// The choice on each axis.
    pub fn axes(&self) -> Axes {
        Axes {
            memory: self.memory,
            values: self.values,
            layout: self.layout,
            table: self.table_format,
        }
    }

    /// These options with `axes` chosen (the other settings kept).
    pub fn with_axes(mut self, axes: Axes) -> Self {
        self.memory = axes.memory;
        self.values = axes.values;
        self.layout = axes.layout;
        self.table_format = axes.table;
        self
    }

    /// Use `env` as the file system.
    pub fn with_env(mut self, env: Env) -> Self {
        self.env = env;
        self
    }

    /// Check that the options make sense together.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidArgument(m));
        self.axes().check()?;
        if self.write_buffer_size < 4096 {
            return bad(format!(
                "write_buffer_size {} is below the 4096-byte minimum",
                self.write_buffer_size
            ));
        }
        if self.write_buffer_size > MAX_WRITE_BUFFER_SIZE {
            return bad(format!(
                "write_buffer_size {} is above the {MAX_WRITE_BUFFER_SIZE}-byte maximum (the \
                 memtable's arenas address 32 GiB of entries and of nodes)",
                self.write_buffer_size
            ));
        }
        if self.num_levels < 2 || self.num_levels > 16 {
            return bad(format!("num_levels {} must be in 2..=16", self.num_levels));
        }
        if self.table.block_size < 64 || self.table.block_size > (64 << 20) {
            return bad(format!(
                "block_size {} must be in 64..=64 MiB",
                self.table.block_size
            ));
        }
        if self.table.block_restart_interval == 0 {
            return bad("block_restart_interval must be at least 1".into());
        }
        if self.table.bloom_bits_per_key > 64 {
            return bad(format!(
                "bloom_bits_per_key {} is above 64",
                self.table.bloom_bits_per_key
            ));
        }
        if self.level_size_multiplier < 2 {
            return bad("level_size_multiplier must be at least 2".into());
        }
        if self.target_file_size < 4096 {
            return bad("target_file_size must be at least 4096".into());
        }
        if !(self.level0_compaction_trigger >= 1
            && self.level0_compaction_trigger <= self.level0_slowdown_trigger
            && self.level0_slowdown_trigger <= self.level0_stop_trigger)
        {
            return bad(format!(
                "level-0 triggers must satisfy 1 <= compaction ({}) <= slowdown ({}) <= stop ({})",
                self.level0_compaction_trigger,
                self.level0_slowdown_trigger,
                self.level0_stop_trigger
            ));
        }
        if self.max_immutable_memtables == 0 {
            return bad("max_immutable_memtables must be at least 1".into());
        }
        if self.min_memtables_to_merge == 0
            || self.min_memtables_to_merge > self.max_immutable_memtables
        {
            return bad(format!(
                "min_memtables_to_merge {} must be in 1..=max_immutable_memtables ({})",
                self.min_memtables_to_merge, self.max_immutable_memtables
            ));
        }
        if self.max_background_compactions == 0 || self.max_background_compactions > 64 {
            return bad(format!(
                "max_background_compactions {} must be in 1..=64",
                self.max_background_compactions
            ));
        }
        if self.max_manifest_bytes == 0 {
            return bad("max_manifest_bytes must be at least 1".into());
        }
        if self.max_open_files < 16 {
            return bad("max_open_files must be at least 16".into());
        }
        if self.scan_prefetch_threads > 256 {
            return bad(format!(
                "scan_prefetch_threads {} is above 256",
                self.scan_prefetch_threads
            ));
        }
        if self.scan_prefetch_depth > 4096 {
            return bad(format!(
                "scan_prefetch_depth {} is above 4096",
                self.scan_prefetch_depth
            ));
        }
        if !(1..=1_000_000).contains(&self.scan_prefetch_after) {
            return bad(format!(
                "scan_prefetch_after {} must be in 1..=1000000 (steps of a scan before it \
                 reads ahead)",
                self.scan_prefetch_after
            ));
        }
        if self.vlog_segment_size < 4096 || self.vlog_segment_size > (1 << 40) {
            return bad(format!(
                "vlog_segment_size {} must be in 4096..=1 TiB",
                self.vlog_segment_size
            ));
        }
        if !(0.0..=0.25).contains(&self.memtable_bloom_ratio) {
            return bad(format!(
                "memtable_bloom_ratio {} must be in [0, 0.25]",
                self.memtable_bloom_ratio
            ));
        }
        if !(self.vlog_gc_ratio > 0.0 && self.vlog_gc_ratio <= 1.0) {
            return bad(format!(
                "vlog_gc_ratio {} must be in (0, 1]",
                self.vlog_gc_ratio
            ));
        }
        let m = &self.flodb;
        if !(0.0..=0.9).contains(&m.membuffer_fraction) {
            return bad(format!(
                "flodb.membuffer_fraction {} must be in 0.0..=0.9",
                m.membuffer_fraction
            ));
        }
        if m.membuffer_partitions == 0 || m.membuffer_partitions > 4096 {
            return bad(format!(
                "flodb.membuffer_partitions {} must be in 1..=4096",
                m.membuffer_partitions
            ));
        }
        if m.drain_threads > 64 {
            return bad(format!(
                "flodb.drain_threads {} must be in 0..=64",
                m.drain_threads
            ));
        }
        let l = &self.leveled;
        if l.max_grandparent_overlap_factor > 1 << 20 {
            return bad(format!(
                "leveled.max_grandparent_overlap_factor {} is above 2^20",
                l.max_grandparent_overlap_factor
            ));
        }
        if l.seek_compaction_min_seeks == 0 {
            return bad("leveled.seek_compaction_min_seeks must be at least 1".into());
        }
        if l.seek_compaction_bytes_per_seek == 0 {
            return bad("leveled.seek_compaction_bytes_per_seek must be at least 1".into());
        }
        let f = &self.flsm;
        if f.top_level_bits == 0 || f.top_level_bits > 63 {
            return bad(format!(
                "flsm.top_level_bits {} must be in 1..=63",
                f.top_level_bits
            ));
        }
        if f.bit_decrement > f.top_level_bits {
            return bad(format!(
                "flsm.bit_decrement {} exceeds top_level_bits {}",
                f.bit_decrement, f.top_level_bits
            ));
        }
        if f.max_sstables_per_guard == 0 {
            return bad("flsm.max_sstables_per_guard must be at least 1".into());
        }
        if f.rewrite_ratio == 0 {
            return bad("flsm.rewrite_ratio must be at least 1".into());
        }
        let t = &self.trie;
        if t.max_sub_levels < 2 || t.max_sub_levels > 64 {
            return bad(format!(
                "trie.max_sub_levels {} must be in 2..=64",
                t.max_sub_levels
            ));
        }
        if !(t.gc_garbage_ratio > 0.0 && t.gc_garbage_ratio <= 1.0) {
            return bad(format!(
                "trie.gc_garbage_ratio {} must be in (0, 1]",
                t.gc_garbage_ratio
            ));
        }
        if t.gc_sample_bits > 16 {
            return bad(format!(
                "trie.gc_sample_bits {} must be in 0..=16",
                t.gc_sample_bits
            ));
        }
        if !(2..=64).contains(&self.lwc.division) {
            return bad(format!(
                "lwc.division {} must be in 2..=64",
                self.lwc.division
            ));
        }
        if self.lwc.max_segments < 2 {
            return bad("lwc.max_segments must be at least 2".into());
        }
        if self.lwc.seek_compaction_min_seeks == 0 {
            return bad("lwc.seek_compaction_min_seeks must be at least 1".into());
        }
        if self.lwc.seek_compaction_bytes_per_seek == 0 {
            return bad("lwc.seek_compaction_bytes_per_seek must be at least 1".into());
        }
        Ok(())
    }
}

/// Options of one write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Wait until the write is durable (fsync of the log) before returning.
    pub sync: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets() {
        for name in Options::available_presets() {
            let paper = Options::paper_preset(name).unwrap();
            assert_eq!(paper.write_buffer_size, PRESET_WRITE_BUFFER_SIZE, "{name}");
            assert!(paper.validate().is_ok(), "{name}");
            let tuned = Options::preset(name).unwrap();
            assert!(tuned.validate().is_ok(), "{name}");
            assert!(
                tuned.mmap_reads && paper.mmap_reads,
                "{name} reads tables as LevelDB does"
            );
            assert!(
                tuned.mmap_log_writes && paper.mmap_log_writes,
                "{name} copies small log appends into a map"
            );
            assert_eq!(
                tuned.memtable_bloom_ratio, TUNED_MEMTABLE_BLOOM_RATIO,
                "{name}"
            );
            assert_eq!(paper.memtable_bloom_ratio, 0.0, "{name}: LevelDB has none");
            let (wbs, merge) = if tuned.memory == MemoryKind::FloDb {
                (64 << 20, 1)
            } else {
                (TUNED_WRITE_BUFFER_SIZE, TUNED_MEMTABLES_TO_MERGE)
            };
            assert_eq!(
                (tuned.write_buffer_size, tuned.min_memtables_to_merge),
                (wbs, merge),
                "{name}"
            );
            assert_eq!(
                paper.min_memtables_to_merge, 1,
                "{name}: LevelDB merges none"
            );
            // The settings change sizes only: the same axes and mechanisms.
            assert_eq!(tuned.axes(), paper.axes(), "{name}");
            assert_eq!(tuned.leveled, paper.leveled, "{name}");
            assert_eq!(tuned.flsm, paper.flsm, "{name}");
            assert_eq!(tuned.num_levels, paper.num_levels, "{name}");
            assert_eq!(
                tuned.max_background_compactions, paper.max_background_compactions,
                "{name}"
            );
        }
        for s in [PresetSettings::Tuned, PresetSettings::Paper] {
            assert_eq!(PresetSettings::parse(s.name()).unwrap(), s);
        }
        assert!(PresetSettings::parse("fast").is_err());
        let paper_leveldb = Options::paper_preset("leveldb").unwrap();
        assert_eq!(paper_leveldb.target_file_size, 2 << 20);
        assert_eq!(paper_leveldb.max_bytes_for_level_base, 10 << 20);
        assert_eq!(
            Options::paper_preset("wisckey").unwrap().target_file_size,
            2 << 20
        );
        assert!(!Options::default().mmap_reads, "RocksDB's default");
        assert!(!Options::default().mmap_log_writes, "RocksDB's default");
        assert!(Options::leveldb_tree(Options::default()).mmap_reads);
        let leveldb = Options::preset("leveldb").unwrap();
        assert_eq!(leveldb.layout, Options::default().layout);
        assert_eq!(leveldb.values, Options::default().values);
        assert_eq!(Options::default().write_buffer_size, 64 << 20);
        assert_eq!(Options::preset("wisckey").unwrap().values, ValuesKind::Vlog);
        let pebblesdb = Options::preset("pebblesdb").unwrap();
        assert_eq!(pebblesdb.layout, LayoutKind::Flsm);
        assert_eq!(pebblesdb.flsm.policy, FlsmPolicy::Paper);
        assert_eq!(pebblesdb.max_background_compactions, 2);
        assert_eq!(pebblesdb.flsm.parallel_seek_min_tables, 0);
        assert_eq!(Options::preset("flodb").unwrap().memory, MemoryKind::FloDb);
        assert!(Options::preset("flodb").unwrap().flodb.writer_drains);
        assert!(
            !Options::paper_preset("flodb").unwrap().flodb.writer_drains,
            "the paper's writers never drain"
        );
        let trie = Options::preset("lsm-trie").unwrap();
        assert_eq!(trie.layout, LayoutKind::Trie);
        assert_eq!(trie.table_format, TableKind::HTable);
        assert!(!trie.axes().supports_scans());
        assert!(leveldb.axes().supports_scans());
        assert_eq!(Options::preset("lwc").unwrap().layout, LayoutKind::Lwc);
        assert_eq!(
            Options::preset("lwc").unwrap().table_format,
            TableKind::DTable
        );
        assert!(matches!(
            Options::preset("nope"),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn validation_names_the_field() {
        let mut o = Options::default();
        assert!(o.validate().is_ok());
        o.level0_slowdown_trigger = 2;
        o.level0_compaction_trigger = 4;
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("level-0"), "{e}");
        let o = Options {
            max_background_compactions: 0,
            ..Options::default()
        };
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("max_background_compactions"), "{e}");
        for bad in [-0.1, 0.95, f64::NAN] {
            let mut o = Options::default();
            o.flodb.membuffer_fraction = bad;
            let e = o.validate().unwrap_err().to_string();
            assert!(e.contains("flodb.membuffer_fraction"), "{e}");
        }
        let mut o = Options::default();
        o.flodb.membuffer_partitions = 0;
        assert!(o.validate().is_err());
        o.flodb.membuffer_partitions = 1;
        o.flodb.drain_threads = 65;
        assert!(o.validate().is_err());
        for (merge, max) in [(0, 2), (3, 2)] {
            let o = Options {
                min_memtables_to_merge: merge,
                max_immutable_memtables: max,
                ..Options::default()
            };
            let e = o.validate().unwrap_err().to_string();
            assert!(e.contains("min_memtables_to_merge"), "{e}");
        }
        for (size, ok) in [
            (MAX_WRITE_BUFFER_SIZE, true),
            (MAX_WRITE_BUFFER_SIZE + 1, false),
        ] {
            let o = Options {
                write_buffer_size: size,
                ..Options::default()
            };
            assert_eq!(o.validate().is_ok(), ok, "{size}");
            if let Err(e) = o.validate() {
                assert!(e.to_string().contains("write_buffer_size"), "{e}");
            }
        }
    }

    #[test]
    fn prefetch_options_are_checked() {
        let o = Options::default();
        assert_eq!(
            (
                o.scan_prefetch_threads,
                o.scan_prefetch_depth,
                o.scan_prefetch_after
            ),
            (4, 16, 2)
        );
        let bad = |f: fn(&mut Options), name: &str| {
            let mut o = Options::default();
            f(&mut o);
            let e = o.validate().unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        };
        bad(|o| o.scan_prefetch_after = 0, "scan_prefetch_after");
        bad(|o| o.scan_prefetch_after = 1_000_001, "scan_prefetch_after");
        bad(|o| o.scan_prefetch_depth = 4097, "scan_prefetch_depth");
        bad(|o| o.scan_prefetch_threads = 257, "scan_prefetch_threads");
        let o = Options {
            scan_prefetch_after: 1,
            scan_prefetch_depth: 0,
            scan_prefetch_threads: 0,
            ..Options::default()
        };
        assert!(o.validate().is_ok());
    }
}
