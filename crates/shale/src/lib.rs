//! Shale: an embedded, persistent, ordered key-value store built as a log-structured
//! merge tree whose parts are swappable research designs.
//!
//! The engine is organised along four axes (see `ARCHITECTURE.md` in the repository):
//! the memory component ([`memory`]), value placement ([`values`]), the layout of tables
//! on disk ([`layout`]) and the table format ([`table`]). A preset names a combination.

pub mod cache;
pub mod compaction;
pub mod db;
mod design;
pub mod env;
pub mod error;
pub mod filename;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod iter;
pub mod key;
pub mod layout;
pub mod manifest;
pub mod memory;
pub mod options;
pub mod table;
pub mod values;
pub mod version;
pub mod wal;

pub use db::{Cursor, Db, DbIterator, IterOptions, Snapshot, Stats, VerifyReport, WriteBatch};
pub use design::verify;
pub use error::{Error, Result};
pub use options::{
    Axes, Compression, LayoutKind, MAX_KEY_SIZE, MAX_VALUE_SIZE, MemoryKind, Options, TableKind,
    ValuesKind, WalRecoveryMode, WriteOptions,
};
pub use values::{PlacementChecked, PlacementStats};
