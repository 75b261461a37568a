//! A whole-key bloom filter over a memtable's user keys (RocksDB's memtable bloom,
//! `memtable_prefix_bloom_size_ratio` with `memtable_whole_key_filtering`), so that a get
//! for a key the memtable does not hold skips the skiplist search: about 17 node reads,
//! most of them cache misses, in a full 64 MiB memtable.
//!
//! Layout: 64-bit words; a key's hash picks one word and sets [`PROBES`] bits in it, so an
//! add is one load and at most one atomic `fetch_or`, and a probe one load (a
//! "register-blocked" filter). Until session 20 this filter used the table filter's layout
//! (`table/bloom.rs`: 512-bit blocks, an on-disk format over a finished key set, not
//! shared) and set each bit with its own `fetch_or`: up to six locked instructions a put,
//! each of which waits for the put's earlier stores to drain. One word costs false
//! positives, but a memtable filter is dense (the tuned presets give it about 20-60 bits
//! per key): a simulation of 200,000 keys put the rate at 0.18 % at 20 bits per key and
//! 0.06 % at 30, against 0.05 % and 0.01 % for 512-bit blocks, and a false positive costs
//! only the skiplist search the filter was there to skip. Hash: `rustc-hash`'s `FxHasher`
//! over the key with a splitmix64 finish (the crate is already a dependency; a hand-written
//! filter of 60 lines over it is simpler than a crate whose filter would need a lock to be
//! filled concurrently).
//!
//! Concurrency: a writer sets a key's bits (`Relaxed` `fetch_or`) before it links the entry
//! into the skiplist (it reads the word before its search and sets the bits after it, so
//! the word's cache miss overlaps the search: `SkipList::insert_with`), and the entry
//! becomes visible to a get only through the store's published sequence number (an
//! `Acquire` load that synchronizes with the `Release` store made after the insert), which
//! the get reads before it probes the filter. So a get that may see an entry sees its bits:
//! the filter never hides a visible entry. A get racing an insert whose sequence it cannot
//! see yet may see some bits and not others; either answer is right.
//!
//! FloDB's drain is the exception (`memory/flodb/`): it moves versions that were published
//! long before, staged in the membuffer, and sets their bits only then
//! (`SkipListMemTable::note_keys`, before it links them and before it removes them from the
//! membuffer under the partition's lock). The filter alone may then hide a visible version:
//! a FloDB get is correct only because it asks the membuffer first.

use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Bits set per key, all in one 64-bit word (see the module docs for the rates).
const PROBES: u32 = 6;
/// Steps from one probe to the next (2^32 / golden ratio, odd, so the top bits mix).
const STEP: u32 = 0x9E37_79B9;

/// See the module docs.
pub(crate) struct MemBloom {
    words: Box<[AtomicU64]>,
}

impl MemBloom {
    /// A filter of about `bytes` bytes (whole 64-byte lines), or `None` below one line.
    pub(crate) fn new(bytes: usize) -> Option<MemBloom> {
        let n = bytes / 64 * 8;
        (n > 0).then(|| MemBloom {
            words: (0..n).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Bytes the filter takes.
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    fn hash(key: &[u8]) -> u64 {
        let mut h = rustc_hash::FxHasher::default();
        h.write(key);
        let mut z = h.finish() ^ (key.len() as u64).rotate_left(32);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The word for `key` and the bits the key sets in it.
    #[inline]
    fn locate(&self, key: &[u8]) -> (&AtomicU64, u64) {
        let h = Self::hash(key);
        // Multiply-shift onto the word count ("fastrange"): the high half of `h` picks the
        // word, the low half the bits, six at a time from the top of a 32-bit mix.
        let i = ((u128::from(h >> 32) * self.words.len() as u128) >> 32) as usize;
        let mut x = h as u32;
        let mut mask = 0u64;
        for _ in 0..PROBES {
            mask |= 1u64 << (x >> 26);
            x = x.wrapping_mul(STEP);
        }
        (&self.words[i.min(self.words.len() - 1)], mask)
    }

    /// Record `key` (before the entry is linked: see the module docs).
    #[inline]
    pub(crate) fn add(&self, key: &[u8]) {
        self.slot(key).set();
    }

    /// `key`'s word, read now (so that its cache miss can overlap other work), and the
    /// bits [`Slot::set`] will set in it.
    #[inline]
    pub(crate) fn slot(&self, key: &[u8]) -> Slot<'_> {
        let (word, mask) = self.locate(key);
        Slot {
            word,
            mask,
            seen: word.load(Relaxed),
        }
    }

    /// False if `key` was never added.
    #[inline]
    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        let (word, mask) = self.locate(key);
        word.load(Relaxed) & mask == mask
    }
}

/// One key's place in a [`MemBloom`], from [`MemBloom::slot`].
pub(crate) struct Slot<'a> {
    word: &'a AtomicU64,
    mask: u64,
    /// The word when the slot was made. Bits are never cleared, so bits seen set are still
    /// set; bits seen clear may have been set since, which costs only a redundant
    /// `fetch_or`.
    seen: u64,
}

impl Slot<'_> {
    /// Set the key's bits (a word already holding them costs no write to the shared line).
    #[inline]
    pub(crate) fn set(self) {
        if self.seen & self.mask != self.mask {
            self.word.fetch_or(self.mask, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_keys_are_found_and_most_others_are_not() {
        let b = MemBloom::new(64 << 10).unwrap();
        assert_eq!(b.bytes(), 64 << 10);
        for i in 0..10_000u32 {
            b.add(format!("key{i:08}").as_bytes());
        }
        for i in 0..10_000u32 {
            assert!(b.may_contain(format!("key{i:08}").as_bytes()), "{i}");
        }
        // 52 bits per key: a simulation gives about 0.01 % false positives.
        let fp = (10_000..110_000u32)
            .filter(|i| b.may_contain(format!("key{i:08}").as_bytes()))
            .count();
        assert!(fp < 200, "{fp} false positives in 100,000");
        assert!(b.may_contain(b"key00000001") && !MemBloom::new(64).unwrap().may_contain(b"x"));
        assert!(MemBloom::new(63).is_none());
    }

    #[test]
    fn concurrent_adds_are_all_found() {
        let b = std::sync::Arc::new(MemBloom::new(4096).unwrap());
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let b = std::sync::Arc::clone(&b);
                std::thread::spawn(move || {
                    for i in 0..2_000u32 {
                        b.add(&(t * 1_000_000 + i).to_be_bytes());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for t in 0..4u32 {
            for i in 0..2_000u32 {
                assert!(b.may_contain(&(t * 1_000_000 + i).to_be_bytes()));
            }
        }
    }
}
