//! A whole-key bloom filter over a memtable's user keys (RocksDB's memtable bloom,
//! `memtable_prefix_bloom_size_ratio` with `memtable_whole_key_filtering`), so that a get
//! for a key the memtable does not hold skips the skiplist search: about 17 node reads,
//! most of them cache misses, in a full 64 MiB memtable.
//!
//! Layout: 64-byte blocks of eight `AtomicU64`; a key's hash picks one block and sets
//! [`PROBES`] bits inside it, so a probe touches one cache line (the table filter's
//! cache-local layout, `table/bloom.rs`, which this does not share: that one is an on-disk
//! format over a finished key set; this one is filled while readers probe it). Hash:
//! `rustc-hash`'s `FxHasher` over the key with a splitmix64 finish (the crate is already a
//! dependency; a hand-written filter of 60 lines over it is simpler than a crate whose
//! filter would need a lock to be filled concurrently).
//!
//! Concurrency: a writer sets a key's bits (`Relaxed` `fetch_or`) before it inserts the
//! entry, and the entry becomes visible to a get only through the store's published
//! sequence number (an `Acquire` load that synchronizes with the `Release` store made after
//! the insert), which the get reads before it probes the filter. So a get that may see an
//! entry sees its bits: the filter never hides a visible entry. A get racing an insert whose
//! sequence it cannot see yet may see some bits and not others; either answer is right.

use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Bits set per key, all in one 512-bit block: with 30-60 bits per key (the presets' ratio
/// and entries of 100-300 bytes) the false-positive rate is well under 1 %.
const PROBES: u32 = 6;
/// Steps from one probe to the next inside a block (2^32 / golden ratio).
const STEP: u32 = 0x9E37_79B9;

type Block = [AtomicU64; 8];

/// See the module docs.
pub(crate) struct MemBloom {
    blocks: Box<[Block]>,
}

impl MemBloom {
    /// A filter of about `bytes` bytes (whole 64-byte blocks), or `None` below one block.
    pub(crate) fn new(bytes: usize) -> Option<MemBloom> {
        let n = bytes / 64;
        (n > 0).then(|| MemBloom {
            blocks: (0..n)
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect(),
        })
    }

    /// Bytes the filter takes.
    pub(crate) fn bytes(&self) -> usize {
        self.blocks.len() * 64
    }

    fn hash(key: &[u8]) -> u64 {
        let mut h = rustc_hash::FxHasher::default();
        h.write(key);
        let mut z = h.finish() ^ (key.len() as u64).rotate_left(32);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The block for `h` and the first probe's 32 bits.
    fn locate(&self, h: u64) -> (&Block, u32) {
        // Multiply-shift onto the block count ("fastrange"): the high half of `h` picks the
        // block, the low half the bits.
        let i = ((u128::from(h >> 32) * self.blocks.len() as u128) >> 32) as usize;
        (&self.blocks[i.min(self.blocks.len() - 1)], h as u32)
    }

    /// Record `key` (before the entry is inserted: see the module docs).
    pub(crate) fn add(&self, key: &[u8]) {
        let (block, mut x) = self.locate(Self::hash(key));
        for _ in 0..PROBES {
            let bit = x >> 23;
            let word = &block[(bit / 64) as usize];
            let mask = 1u64 << (bit % 64);
            // A bit already set costs no write to the shared line.
            if word.load(Relaxed) & mask == 0 {
                word.fetch_or(mask, Relaxed);
            }
            x = x.wrapping_mul(STEP);
        }
    }

    /// False if `key` was never added.
    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        let (block, mut x) = self.locate(Self::hash(key));
        for _ in 0..PROBES {
            let bit = x >> 23;
            if block[(bit / 64) as usize].load(Relaxed) & (1u64 << (bit % 64)) == 0 {
                return false;
            }
            x = x.wrapping_mul(STEP);
        }
        true
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
        // 52 bits per key: expect well under 1 % false positives.
        let fp = (10_000..110_000u32)
            .filter(|i| b.may_contain(format!("key{i:08}").as_bytes()))
            .count();
        assert!(fp < 1_000, "{fp} false positives in 100,000");
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
