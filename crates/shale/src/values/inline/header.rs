//! The header record that starts every WAL written since store ids existed
//! (`docs/format/wal.md` §4): which store the log belongs to, its own number, and the log
//! before it with the length that log was complete through when this one was started.
//!
//! A write batch can never be taken for a header, nor a header for a batch: a batch's first
//! 8 bytes are its sequence number, whose top byte is 0 (sequence numbers stay below
//! 2^56), while the header's magic ends in `L`.

/// The header record's size.
pub(super) const HEADER_LEN: usize = 41;

/// On-disk: the first 8 bytes of a header record. Never change.
const MAGIC: [u8; 8] = *b"ShaleWAL";

/// On-disk: the header format this code writes. Version 2 logs may hold range tombstones
/// (batch entry kind 3, `Db::delete_range`), which a build reading only version 1 would
/// take for damage; it refuses a version 2 log instead.
const VERSION: u8 = 2;

/// On-disk: the oldest header format this code reads (its logs hold no range tombstone).
const VERSION_1: u8 = 1;

/// What a log's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LogHeader {
    /// The store's id (MANIFEST tag 17).
    pub store_id: u64,
    /// The log's own number (its file name's).
    pub number: u64,
    /// The log written before this one, 0 for none.
    pub prev: u64,
    /// How many bytes of `prev` were complete (synced, or replayed by recovery) when this
    /// log was started: nothing before it may be missing.
    pub prev_len: u64,
}

impl LogHeader {
    /// The header record's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_LEN);
        b.extend_from_slice(&MAGIC);
        b.push(VERSION);
        for v in [self.store_id, self.number, self.prev, self.prev_len] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// The header in `record` (a log's first record), or `None` when the record is a write
    /// batch (a log written before headers existed).
    ///
    /// # Errors
    /// A description when the record starts with the magic but is not a header this code
    /// reads (another version, another length).
    pub fn decode(record: &[u8]) -> Result<Option<LogHeader>, String> {
        if record.get(..MAGIC.len()) != Some(&MAGIC[..]) {
            return Ok(None);
        }
        let version = record.get(MAGIC.len()).copied();
        if !matches!(version, Some(VERSION_1 | VERSION)) || record.len() != HEADER_LEN {
            return Err(format!(
                "log header of version {version:?} and {} bytes; this build reads versions \
                 {VERSION_1} to {VERSION} of {HEADER_LEN} bytes",
                record.len()
            ));
        }
        let u64_at = |i: usize| {
            let start = MAGIC.len() + 1 + 8 * i;
            record
                .get(start..start + 8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_le_bytes)
        };
        Ok(Some(LogHeader {
            store_id: u64_at(0),
            number: u64_at(1),
            prev: u64_at(2),
            prev_len: u64_at(3),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_of_the_format_doc() {
        let h = LogHeader {
            store_id: 0x0123_4567_89ab_cdef,
            number: 9,
            prev: 7,
            prev_len: 4130,
        };
        let hex: String = h.encode().iter().map(|b| format!("{b:02x} ")).collect();
        assert_eq!(
            hex.trim_end(),
            "53 68 61 6c 65 57 41 4c 02 \
             ef cd ab 89 67 45 23 01 \
             09 00 00 00 00 00 00 00 \
             07 00 00 00 00 00 00 00 \
             22 10 00 00 00 00 00 00"
        );
        assert_eq!(LogHeader::decode(&h.encode()), Ok(Some(h)));
    }

    #[test]
    fn a_batch_is_not_a_header_and_a_bad_header_is_refused() {
        // A write batch: sequence 258, no entries.
        let batch = [2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(LogHeader::decode(&batch), Ok(None));
        let mut h = LogHeader {
            store_id: 1,
            number: 2,
            prev: 0,
            prev_len: 0,
        }
        .encode();
        h[8] = 1;
        assert!(LogHeader::decode(&h).is_ok(), "version 1 is still read");
        h[8] = 3;
        assert!(LogHeader::decode(&h).is_err());
        assert!(LogHeader::decode(&h[..20]).is_err());
    }
}
