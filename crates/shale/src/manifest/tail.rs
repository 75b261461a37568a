//! Telling a torn MANIFEST tail from a damaged last edit.
//!
//! The log reader drops a bad record at the end of a log as a torn tail. For the WAL that is
//! the right call. For the MANIFEST it is not enough: every append is synced before anything
//! depends on it, and right after a flush or compaction commits, the files it replaced are
//! deleted. Dropping a *committed* last edit therefore reverts the store to a version whose
//! files are partly gone (lost writes, resurrected deletes), and recovery then writes that
//! version to a new MANIFEST. So a dropped MANIFEST tail is accepted only when it has the
//! shape an interrupted append leaves:
//! - the file ends inside a record (a short header, or a length running past the end whose
//!   checksum does not verify over the bytes that are there), or inside a logical record
//!   whose fragments all verify;
//! - a zero header (preallocated or never-written space);
//! - a lost page: some 4 KiB-aligned page from the bad record on reads zero from the bad
//!   record (or its own start) to its end or to the end of the file, as when a file system
//!   wrote back the file's new size but not the data of an unsynced append.
//!
//! A complete record whose checksum fails, with no zero page behind it, is a flipped bit in an
//! edit that may have committed: [`crate::Error::Corruption`]. (A flip in a record whose own
//! bytes end in zeros from a page boundary to the end of the file would still pass for a lost
//! page; edits rarely end that way.)

use crate::wal::{BLOCK_SIZE, HEADER_SIZE};

/// A file system loses unsynced data in pages of this size.
const PAGE: u64 = 4096;

/// Whether `tail` (the dropped bytes, starting at file offset `start` and running to the end
/// of the file) looks like an interrupted append. See the module docs.
pub(crate) fn looks_torn(tail: &[u8], start: u64) -> bool {
    let mut pos = 0usize;
    loop {
        let off = start + pos as u64;
        // Below BLOCK_SIZE, so the cast cannot truncate.
        let left_in_block = (BLOCK_SIZE as u64 - off % BLOCK_SIZE as u64) as usize;
        if left_in_block < HEADER_SIZE {
            pos += left_in_block;
            continue;
        }
        let rest = tail.get(pos..).unwrap_or_default();
        let Some(h) = rest.get(..HEADER_SIZE) else {
            // Ends at a record boundary inside an unfinished record, or inside a header.
            return true;
        };
        if h.iter().all(|&b| b == 0) {
            return true;
        }
        let crc = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let len = usize::from(u16::from_le_bytes([h[4], h[5]]));
        let typ = h[6];
        let body = rest.get(HEADER_SIZE..).unwrap_or_default();
        if len > left_in_block - HEADER_SIZE {
            return lost_page(tail, start, pos);
        }
        let Some(payload) = body.get(..len) else {
            // The file ends inside the payload. A crash leaves a prefix whose checksum fails;
            // if the checksum verifies over everything up to the end, the record is whole and
            // only its length field is damaged.
            return crate::wal::record_checksum(typ, body) != crc;
        };
        let known = (1..=4).contains(&typ);
        if !known || crate::wal::record_checksum(typ, payload) != crc {
            return lost_page(tail, start, pos);
        }
        // A valid fragment of a record the file ends before finishing.
        pos += HEADER_SIZE + len;
    }
}

/// Whether an aligned page at or after `tail[from]` reads zero from `max(from, page start)`
/// to the page end or the end of the file.
fn lost_page(tail: &[u8], start: u64, from: usize) -> bool {
    let end = start + tail.len() as u64;
    let from_off = start + from as u64;
    let mut page = from_off - from_off % PAGE;
    while page < end {
        let lo = page.max(from_off);
        let hi = (page + PAGE).min(end);
        // Both bounds lie in [start, end], so the offsets fit the tail.
        let run = tail.get((lo - start) as usize..(hi - start) as usize);
        if run.is_some_and(|r| !r.is_empty() && r.iter().all(|&b| b == 0)) {
            return true;
        }
        page += PAGE;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::record_checksum;

    fn record(typ: u8, payload: &[u8]) -> Vec<u8> {
        let mut r = record_checksum(typ, payload).to_le_bytes().to_vec();
        r.extend_from_slice(&(payload.len() as u16).to_le_bytes());
        r.push(typ);
        r.extend_from_slice(payload);
        r
    }

    #[test]
    fn truncation_is_torn() {
        let r = record(1, &[7u8; 100]);
        for cut in 0..r.len() {
            assert!(looks_torn(&r[..cut], 64), "cut at {cut}");
        }
        // A whole FIRST fragment whose LAST never arrived.
        assert!(looks_torn(&record(2, b"abc"), 0));
    }

    #[test]
    fn flips_in_a_whole_record_are_damage() {
        let r = record(1, &[7u8; 100]);
        for i in 0..r.len() {
            for bit in 0..8 {
                let mut b = r.clone();
                b[i] ^= 1 << bit;
                assert!(!looks_torn(&b, 64), "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn zeros_are_torn() {
        assert!(looks_torn(&[0u8; 40], 0));
        // The header and the last page were written back, the page between was not.
        let mut r = record(1, &[7u8; 9000]);
        r[4096..8192].fill(0);
        assert!(looks_torn(&r, 0));
        // Only the last, partial page lost.
        let mut r = record(1, &[7u8; 5000]);
        r[4096..].fill(0);
        assert!(looks_torn(&r, 0));
    }

    #[test]
    fn block_tail_padding_is_skipped() {
        let start = (BLOCK_SIZE - 3) as u64;
        let mut t = vec![0u8; 3];
        let r = record(1, b"xyz");
        let mut bad = r.clone();
        bad[8] ^= 1;
        t.extend_from_slice(&bad);
        assert!(!looks_torn(&t, start));
        t.truncate(3 + 5);
        assert!(looks_torn(&t, start));
    }
}
