//! SCAN cursors. Redis clients treat a cursor as a decimal number, but a position in an
//! ordered store is a key of up to 64 KiB. A cursor here is both:
//!
//! ```text
//! cursor = (first 5 bytes of the next key, zero-padded, big-endian) << 16 | slot
//! ```
//!
//! `slot` (1..=65535) names an entry of a table that remembers the exact next key. A SCAN
//! resumes at that key when the slot still holds this cursor; when it does not (the table
//! wrapped, or the server restarted) it resumes at the 5-byte prefix, which sorts at or
//! before the next key. So a cursor never skips a key (SCAN's guarantee), and at worst
//! returns some keys again (which SCAN allows). Cursors stay below 2^56, so clients that
//! parse them as signed 64-bit numbers are fine; 0 is the start and the end.
//!
//! Thread-safe.

use parking_lot::Mutex;

const SLOTS: usize = 65535;

/// Remembered positions, reused round-robin.
pub struct CursorTable {
    inner: Mutex<Table>,
}

struct Table {
    entries: Vec<Option<(u64, Vec<u8>)>>,
    next: usize,
}

impl Default for CursorTable {
    fn default() -> Self {
        CursorTable::new()
    }
}

impl CursorTable {
    /// An empty table.
    pub fn new() -> CursorTable {
        CursorTable {
            inner: Mutex::new(Table {
                entries: Vec::new(),
                next: 0,
            }),
        }
    }

    /// A cursor that resumes at `next_key`.
    pub fn save(&self, next_key: &[u8]) -> u64 {
        let mut prefix = [0u8; 8];
        for (d, s) in prefix[3..].iter_mut().zip(next_key) {
            *d = *s;
        }
        let mut t = self.inner.lock();
        let slot = t.next;
        t.next = (t.next + 1) % SLOTS;
        let cursor = (u64::from_be_bytes(prefix) << 16) | (slot as u64 + 1);
        if t.entries.len() <= slot {
            t.entries.resize(slot + 1, None);
        }
        t.entries[slot] = Some((cursor, next_key.to_vec()));
        cursor
    }

    /// Where `cursor` resumes: the exact key if remembered, else the lower bound its
    /// prefix gives. 0 resumes at the start (an empty key).
    pub fn resume(&self, cursor: u64) -> Vec<u8> {
        if cursor == 0 {
            return Vec::new();
        }
        let slot = (cursor & 0xffff) as usize;
        if slot > 0 {
            let t = self.inner.lock();
            if let Some(Some((c, key))) = t.entries.get(slot - 1)
                && *c == cursor
            {
                return key.clone();
            }
        }
        // The prefix with its zero padding removed is a prefix of the next key (or the
        // next key itself), so it sorts at or before it.
        let bytes = (cursor >> 16).to_be_bytes();
        let mut key = bytes[3..].to_vec();
        while key.last() == Some(&0) {
            key.pop();
        }
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_then_fallback() {
        let t = CursorTable::new();
        let c = t.save(b"user:1000");
        assert_ne!(c, 0);
        assert!(c < 1 << 56);
        assert_eq!(t.resume(c), b"user:1000");
        // A forgotten slot falls back to the prefix, which sorts before the key.
        let fresh = CursorTable::new();
        assert_eq!(fresh.resume(c), b"user:");
        let c2 = t.save(b"ab\0");
        assert_eq!(fresh.resume(c2), b"ab");
        assert_eq!(t.resume(0), b"");
    }
}
