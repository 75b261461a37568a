//! Shale: an embedded, persistent, ordered key-value store built as a log-structured
//! merge tree whose parts are swappable research designs.
//!
//! The engine is organised along four axes (see `docs/architecture.md` in the repository):
//! the memory component, value placement, the layout of tables on disk and the table
//! format, chosen by [`Options`] ([`Axes`]; a preset names a combination). The store is
//! [`Db`] ([`Db::open_read_only`] for a view that writes nothing, beside a running writer
//! too); [`verify`] checks one as its open would, without changing it; [`repair`] rebuilds
//! a damaged one's MANIFEST from its files (LevelDB's `RepairDB`); [`env`] is the file-system interface
//! (a store can run on [`env::mem::MemFs`], an in-memory file system with a crash model).

/// Declares internal modules: `pub` but hidden from the docs with the `internals` feature
/// (for the fuzz crate, the integration tests and benchmarks, which test parts directly),
/// crate-private otherwise. What a user of the store needs is re-exported below, or lives in
/// the public modules [`env`], [`error`] and [`options`].
macro_rules! internal {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code, unused_imports)]
        mod $name;
    )*};
}

internal!(
    axis, cache, compaction, db, filename, format, iter, key, layout, manifest, memory, rangedel,
    table, values, version, wal,
);
mod design;
pub mod env;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod memory_only;
pub mod options;
pub mod ttl;

pub use db::{
    CheckpointInfo, Cursor, Db, DbIterator, ForeignTable, IterOptions, LevelStats, LifetimeStats,
    LiveFile, ReadOptions, RepairReport, SetAside, Snapshot, Stats, VerifyReport, WriteBatch,
    destroy_db,
};
pub use design::{load_options, repair, verify};
pub use error::{Error, Result};
pub use memory::MemoryStats;
pub use options::{
    Axes, CompactionFilter, Compression, Decision, FilterContext, FilterReason, FloDbOptions,
    FlsmPolicy, LayoutKind, LwcOptions, MAX_KEY_SIZE, MAX_VALUE_SIZE, MAX_WRITE_BUFFER_SIZE,
    MemoryKind, NewTableCheck, Options, PresetSettings, TableKind, ValuesKind, WalRecoveryMode,
    WriteOptions,
};
pub use values::{PlacementChecked, PlacementStats, RecoveredLog};
