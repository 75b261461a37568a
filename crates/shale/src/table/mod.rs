//! The table-format axis: the bytes of one table file.
//!
//! [`format`] holds the traits every format implements (a writer, a reader of one committed
//! generation, and the format that makes both); the engine, the layouts and the table
//! cache ([`cache`]) use tables only through them. [`sst`] is the sorted-block format of
//! LevelDB lineage (leveled and FLSM layouts); [`htable`] is LSM-trie's hash table of
//! fixed-size buckets (trie layout); [`dtable`] is the LWC-tree's appendable table, a file
//! of sst segments each committed by a directory and footer at its end (`lwc` layout).
//! Blocks ([`block`]), the bloom filter
//! ([`bloom`]) and the properties block ([`properties`]) are building blocks other formats
//! may share.

pub mod block;
pub mod bloom;
pub mod cache;
pub mod dtable;
pub mod format;
pub mod htable;
pub mod properties;
pub mod sst;

pub use dtable::DTableFormat;
pub use format::{
    KeyDigest, Pile, TableFormat, TableId, TableIdentity, TableReadOptions, TableReader,
    TableSummary, TableWriter, check_identity,
};
pub use properties::TableProperties;
pub use sst::{SstFormat, Table, TableBuilder, TableIter};

#[cfg(test)]
pub(crate) mod test_fs;

pub use crate::filename::table_file_name;
