//! The table-format axis: the bytes of one immutable table file.
//!
//! [`sst`] is the sorted-block format of LevelDB lineage (leveled and FLSM layouts). Blocks
//! ([`block`]) and the bloom filter ([`bloom`]) are building blocks other formats may share.

pub mod block;
pub mod bloom;
pub mod cache;
pub mod sst;

pub use sst::{Table, TableBuilder, TableIter, TableProperties, TableSummary};

#[cfg(test)]
pub(crate) mod test_fs;

pub use crate::filename::table_file_name;
