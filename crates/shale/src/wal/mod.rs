//! The write-ahead log: record framing shared by every log file (the WAL and the MANIFEST),
//! and the write-batch payload the engine logs.
//!
//! A log file is a sequence of 32 KiB blocks. Each logical record is written as one or more
//! physical records; a physical record never crosses a block boundary, and a block tail too
//! short for a header is zero-filled. The normative byte-by-byte description, with a worked
//! example and the recovery rules, is `docs/format/wal.md`.
//!
//! ```text
//! block (32768 bytes):
//! +----------+----------+----------+-----+--------------------+
//! | record 0 | record 1 |   ...    | ... | zero pad (0..=6 B) |
//! +----------+----------+----------+-----+--------------------+
//! physical record:
//! +--------------+------------+---------+-----------------+
//! | crc: u32 LE  | len: u16 LE| type: u8| payload (len B) |
//! +--------------+------------+---------+-----------------+
//! crc = mask_crc(crc32c(type ++ payload))
//! ```
//!
//! [`LogWriter`] frames records; [`LogReader`] reads them back, tolerating a torn tail (the
//! result of a crash during a write) and reporting corruption anywhere else.
//! [`WriteBatch`] is the payload of one WAL record.

mod batch;
mod reader;
mod writer;

pub use batch::{BatchEntry, BatchIter, WriteBatch};
pub use reader::{FileSource, LogReader, LogSource};
pub use writer::{LogSink, LogWriter};

/// Size of one log block. On-disk: changing it changes the file format.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// Size of a physical record header: checksum (4) + length (2) + type (1).
pub const HEADER_SIZE: usize = 7;

/// Default bound on the size of one assembled logical record. A reader refuses to assemble
/// more than this (it is corruption, not a reason to allocate), and a writer refuses to
/// write more, so that every record a writer accepts can be read back.
pub const DEFAULT_MAX_RECORD_SIZE: usize = 512 * 1024 * 1024;

/// The type of a physical record.
///
/// On-disk: these values are stored in every record header. Never renumber them; retired
/// values stay listed here as comments. 0 is reserved: a zero header is padding, never a
/// record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum RecordType {
    /// A whole logical record in one physical record.
    Full = 1,
    /// The first fragment of a logical record.
    First = 2,
    /// A fragment strictly inside a logical record.
    Middle = 3,
    /// The final fragment of a logical record.
    Last = 4,
}

impl RecordType {
    /// Decode a type byte; `None` for 0 (padding) and unknown values.
    pub(crate) fn from_u8(b: u8) -> Option<RecordType> {
        match b {
            1 => Some(RecordType::Full),
            2 => Some(RecordType::First),
            3 => Some(RecordType::Middle),
            4 => Some(RecordType::Last),
            _ => None,
        }
    }
}

/// The stored checksum of a physical record: masked CRC32C over the type byte and payload.
#[inline]
pub(crate) fn record_checksum(typ: u8, payload: &[u8]) -> u32 {
    crate::format::mask_crc(crate::format::crc32c_two(&[typ], payload))
}

#[cfg(test)]
mod tests;

pub use crate::filename::log_file_name;
