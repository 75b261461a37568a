//! The block: the unit of reading, caching and checksumming in a table file.
//!
//! ```text
//! +---------+---------+-----+-----------+-----+-------------+------------------+
//! | entry 0 | entry 1 | ... | restart 0 | ... | restart n-1 | n: u32 LE        |
//! +---------+---------+-----+-----------+-----+-------------+------------------+
//! entry: shared varint | non_shared varint | value_len varint | key delta | value
//! ```
//!
//! Each key is stored as the number of bytes it shares with the previous key plus the rest.
//! Every `restart_interval` entries the sharing restarts (shared = 0) and the entry's offset
//! is recorded in the restart array, so a seek can binary-search the restart points and scan
//! at most one interval. Data blocks and the index block use this format; the full
//! specification is `docs/format/sst.md`.

mod builder;
mod reader;

pub use builder::BlockBuilder;
pub use reader::{Block, BlockCursor, BlockIter};

#[cfg(test)]
mod tests;
