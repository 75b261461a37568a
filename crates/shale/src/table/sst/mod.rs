//! The `sst` table format: sorted data blocks, a bloom filter over user keys, a properties
//! block, an index block and a fixed-size footer. Used by the leveled and FLSM layouts.
//!
//! ```text
//! +--------------+-----+--------------+--------+------------+-------+--------+
//! | data block 0 | ... | data block n | filter | properties | index | footer |
//! +--------------+-----+--------------+--------+------------+-------+--------+
//! ```
//!
//! Every block is followed by a 5-byte trailer (compression type, masked CRC32C). The byte
//! layout is specified in `docs/format/sst.md`.

mod block_codec;
mod builder;
mod footer;
mod format;
mod index;
mod iter;
mod reader;

pub use crate::table::format::TableSummary;
pub use crate::table::properties::TableProperties;
pub use block_codec::{decode_block, trailer};
pub use builder::TableBuilder;
pub use footer::{BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, FORMAT_VERSION, Footer, TABLE_MAGIC};
pub use format::SstFormat;
pub use iter::TableIter;
pub use reader::Table;

#[cfg(test)]
mod tests;
