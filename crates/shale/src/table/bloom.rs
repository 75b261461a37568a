//! The table's bloom filter over user keys, and the 64-bit hash it is built on.
//!
//! One filter covers the whole table, so a point lookup for an absent key costs a few
//! memory probes and no I/O. Two layouts, told apart by the filter's last byte:
//!
//! - **cache-local** (written by this version): the bit array is cut into 64-byte blocks;
//!   a key's hash picks one block (multiply-shift, "fastrange") and all `k` bits lie in
//!   it, so a probe touches one cache line (RocksDB's "fast local bloom"). A read that asks
//!   several tables (level 0, a guard's fragments) thus pays one memory miss per table,
//!   and the misses of different tables overlap, since no table's answer decides which
//!   line the next one reads.
//! - **classic** (older tables, still read): `k` bits chosen by double hashing over the
//!   whole array, one cache line each.
//!
//! The hash and the probe sequences are part of the on-disk format: changing either makes
//! existing filters answer "absent" for present keys. See `docs/format/sst.md`.
//!
//! Thread-safety: [`BloomFilter`] is immutable and shared freely; [`BloomBuilder`] has one
//! owner.

const P1: u64 = 0x9E37_79B1_85EB_CA87;
const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P3: u64 = 0x1656_67B1_9E37_79F9;
const P4: u64 = 0x85EB_CA77_C2B2_AE63;
const P5: u64 = 0x27D4_EB2F_1656_67C5;

/// The most probes per key the format allows.
pub const MAX_PROBES: u8 = 30;

/// The largest number of bits one filter may hold: probe positions come from 32-bit values.
const MAX_BITS: u64 = 1 << 32;

/// Set in the filter's last byte (above the probe count) for the cache-local layout.
const LOCAL_FLAG: u8 = 0x80;

/// Bytes of one block of the cache-local layout (a cache line).
const BLOCK_BYTES: usize = 64;

/// Multiplier stepping from one probe to the next inside a block (2^32 / golden ratio).
const LOCAL_STEP: u32 = 0x9E37_79B9;

#[inline]
fn round(w: u64) -> u64 {
    w.wrapping_mul(P2).rotate_left(31).wrapping_mul(P1)
}

#[inline]
fn absorb(h: u64, w: u64) -> u64 {
    (h ^ round(w))
        .rotate_left(27)
        .wrapping_mul(P1)
        .wrapping_add(P4)
}

/// The 64-bit hash of the filter format ("shale64", after xxHash64's short-input path).
///
/// On-disk: filters store bits chosen by this function; never change it.
#[inline]
pub fn hash64(data: &[u8]) -> u64 {
    let mut h = P5 ^ (data.len() as u64).wrapping_mul(P1);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = absorb(h, u64::from_le_bytes(w));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = absorb(h, u64::from_le_bytes(w));
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^ (h >> 32)
}

/// Probes per key for `bits_per_key`: round(bits * ln 2), clamped to 1..=30.
pub fn probes_for(bits_per_key: usize) -> u8 {
    let k = (bits_per_key as f64 * std::f64::consts::LN_2).round();
    k.clamp(1.0, f64::from(MAX_PROBES)) as u8
}

/// Call `f` with each of the `k` bit positions of hash `h` in a filter of `nbits` bits.
#[inline]
fn for_each_probe(h: u64, k: u8, nbits: u64, mut f: impl FnMut(u64) -> bool) -> bool {
    let a = h as u32;
    let b = (h >> 32) as u32;
    let mut x = a;
    for _ in 0..k {
        if !f((u64::from(x) * nbits) >> 32) {
            return false;
        }
        x = x.wrapping_add(b);
    }
    true
}

/// Call `f` with the bit positions (0..512) of hash `h` inside its block of the cache-local
/// layout; the block is chosen separately (see [`local_block`]).
#[inline]
fn local_bits(h: u64, k: u8) -> impl Iterator<Item = u32> {
    let mut x = (h >> 32) as u32;
    (0..k).map(move |_| {
        let bit = x >> 23;
        x = x.wrapping_mul(LOCAL_STEP);
        bit
    })
}

/// The block of hash `h` in a cache-local filter of `blocks` blocks.
#[inline]
fn local_block(h: u64, blocks: u64) -> usize {
    ((u64::from(h as u32) * blocks) >> 32) as usize
}

/// Collects key hashes while a table is written, then lays out the filter.
#[derive(Debug)]
pub struct BloomBuilder {
    bits_per_key: usize,
    hashes: Vec<u64>,
}

impl BloomBuilder {
    /// A builder for about `bits_per_key` bits per key (must be at least 1).
    pub fn new(bits_per_key: usize) -> BloomBuilder {
        BloomBuilder {
            bits_per_key: bits_per_key.max(1),
            hashes: Vec::new(),
        }
    }

    /// Add a user key. Adding the same key twice is harmless but wastes space; the table
    /// builder adds each distinct user key once.
    #[inline]
    pub fn add_key(&mut self, user_key: &[u8]) {
        self.hashes.push(hash64(user_key));
    }

    /// Keys added so far.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// True when no key has been added.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// The filter bytes, cache-local layout: the bit array (64-byte blocks), then one byte
    /// holding the layout flag and the probe count.
    pub fn finish(&self) -> Vec<u8> {
        let want = (self.hashes.len() as u64).saturating_mul(self.bits_per_key as u64);
        // A floor keeps the false-positive rate of tiny tables sane.
        let nbits = want.clamp(512, MAX_BITS).div_ceil(512) * 512;
        let k = probes_for(self.bits_per_key);
        let blocks = nbits / 512;
        let mut out = vec![0u8; (nbits / 8) as usize + 1];
        for &h in &self.hashes {
            let base = local_block(h, blocks) * BLOCK_BYTES;
            for bit in local_bits(h, k) {
                if let Some(b) = out.get_mut(base + (bit / 8) as usize) {
                    *b |= 1 << (bit % 8);
                }
            }
        }
        if let Some(last) = out.last_mut() {
            *last = LOCAL_FLAG | k;
        }
        out
    }

    /// The filter bytes in the classic layout: `bits_per_key` bits per key exactly (at
    /// least 64, rounded up to a byte), then the probe count. Earlier `sst` tables hold
    /// whole-table filters in it; `htable` column filters use it because each is small
    /// (tens of keys), so the cache-local layout's 512-bit granule would waste most of it.
    pub fn finish_classic(&self) -> Vec<u8> {
        let want = (self.hashes.len() as u64).saturating_mul(self.bits_per_key as u64);
        let nbits = want.clamp(64, MAX_BITS).div_ceil(8) * 8;
        let k = probes_for(self.bits_per_key);
        let mut out = vec![0u8; (nbits / 8) as usize + 1];
        for &h in &self.hashes {
            for_each_probe(h, k, nbits, |bit| {
                if let Some(b) = out.get_mut((bit / 8) as usize) {
                    *b |= 1 << (bit % 8);
                }
                true
            });
        }
        if let Some(last) = out.last_mut() {
            *last = k;
        }
        out
    }
}

/// [`BloomFilter::may_contain_hash`] on a filter's bytes in place (no copy, no check
/// beyond what answering needs): false only if hash `h` was certainly not added. Bytes
/// that are not a filter (shorter than two bytes, a bad probe count) answer true.
#[inline]
pub fn bytes_may_contain(data: &[u8], h: u64) -> bool {
    let Some((&last, bits)) = data.split_last() else {
        return true;
    };
    let local = last & LOCAL_FLAG != 0;
    let k = last & !LOCAL_FLAG;
    if bits.is_empty() || k == 0 || k > MAX_PROBES {
        return true;
    }
    let nbits = bits.len() as u64 * 8;
    if local {
        let blocks = (bits.len() / BLOCK_BYTES) as u64;
        if blocks == 0 {
            return true;
        }
        let base = local_block(h, blocks) * BLOCK_BYTES;
        let Some(block) = bits.get(base..base + BLOCK_BYTES) else {
            return true;
        };
        return local_bits(h, k).all(|bit| {
            block
                .get((bit / 8) as usize)
                .is_none_or(|b| b & (1 << (bit % 8)) != 0)
        });
    }
    for_each_probe(h, k, nbits, |bit| {
        bits.get((bit / 8) as usize)
            .is_none_or(|b| b & (1 << (bit % 8)) != 0)
    })
}

/// A filter read from a table.
#[derive(Clone, Debug)]
pub struct BloomFilter {
    /// The bit array followed by the layout and probe-count byte.
    data: Vec<u8>,
    nbits: u64,
    k: u8,
    /// Cache-local layout (else classic).
    local: bool,
}

impl BloomFilter {
    /// Check and wrap the bytes of a filter block.
    ///
    /// # Errors
    /// A description when the filter is shorter than two bytes, larger than the format
    /// allows, its probe count is outside 1..=30, its layout byte is unknown, or a
    /// cache-local filter is not a whole number of 64-byte blocks.
    pub fn new(data: Vec<u8>) -> std::result::Result<BloomFilter, String> {
        let (&last, bits) = data
            .split_last()
            .ok_or_else(|| "empty filter block".to_string())?;
        if bits.is_empty() {
            return Err("filter block holds no bits".to_string());
        }
        let nbits = bits.len() as u64 * 8;
        if nbits > MAX_BITS {
            return Err(format!(
                "filter of {nbits} bits exceeds the {MAX_BITS}-bit maximum"
            ));
        }
        let local = last & LOCAL_FLAG != 0;
        let k = last & !LOCAL_FLAG;
        if k == 0 || k > MAX_PROBES {
            return Err(format!(
                "filter layout byte {last:#04x}: probe count {k} is outside 1..={MAX_PROBES}"
            ));
        }
        if local && bits.len() % BLOCK_BYTES != 0 {
            return Err(format!(
                "cache-local filter of {} bytes is not a whole number of {BLOCK_BYTES}-byte blocks",
                bits.len()
            ));
        }
        Ok(BloomFilter {
            data,
            nbits,
            k,
            local,
        })
    }

    /// False only if `user_key` was certainly not added.
    #[inline]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(hash64(user_key))
    }

    /// Load the cache line that [`BloomFilter::may_contain_hash`] reads first for `h`, and
    /// nothing else: a caller about to ask several filters touches all their lines first,
    /// so the memory misses overlap instead of coming one after another.
    #[inline]
    pub fn touch(&self, h: u64) {
        let at = if self.local {
            local_block(h, self.nbits / 512) * BLOCK_BYTES
        } else {
            ((u64::from(h as u32) * self.nbits) >> 32) as usize / 8
        };
        if let Some(b) = self.data.get(at) {
            std::hint::black_box(*b);
        }
    }

    /// [`BloomFilter::may_contain`] for a precomputed [`hash64`].
    #[inline]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        let data = &self.data;
        if self.local {
            // One block; every probe is read (no early exit), so the only wait is the one
            // cache miss and a caller asking several filters overlaps their misses.
            let base = local_block(h, self.nbits / 512) * BLOCK_BYTES;
            let Some(block) = data.get(base..base + BLOCK_BYTES) else {
                return true;
            };
            let mut all = true;
            for bit in local_bits(h, self.k) {
                let b = block.get((bit / 8) as usize).copied().unwrap_or(0xff);
                all &= b & (1 << (bit % 8)) != 0;
            }
            return all;
        }
        for_each_probe(h, self.k, self.nbits, |bit| {
            data.get((bit / 8) as usize)
                .is_some_and(|b| b & (1 << (bit % 8)) != 0)
        })
    }

    /// Size of the filter in bytes (bits and probe count).
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Never true for a filter accepted by [`BloomFilter::new`].
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Probes per key.
    pub fn probes(&self) -> u8 {
        self.k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Vec<u8> {
        format!("key{i:08}").into_bytes()
    }

    #[test]
    fn hash_is_stable() {
        // Pinned values: the hash is part of the on-disk format.
        // (docs/format/sst.md lists the same values, checked by an independent implementation.)
        assert_eq!(hash64(b""), 0xef46_db37_51d8_e999);
        assert_eq!(hash64(b"a"), 0x0fa3_6e60_1150_bbb6);
        assert_eq!(hash64(b"shale-bloom-test"), 0xbae4_2bfa_31a0_e44a);
        let a = hash64(b"hello");
        let b = hash64(b"hello\0");
        let c = hash64(b"hello world, 17 b");
        assert_ne!(
            a, b,
            "zero padding must not collide: the length is mixed in"
        );
        assert_ne!(a, c);
        assert_eq!(hash64(b"hello"), a);
    }

    #[test]
    fn probe_counts() {
        assert_eq!(probes_for(10), 7);
        assert_eq!(probes_for(1), 1);
        assert_eq!(probes_for(0), 1);
        assert_eq!(probes_for(64), 30);
    }

    fn fp_rate(f: &BloomFilter) -> f64 {
        let fp = (1_000_000..1_100_000)
            .filter(|&i| f.may_contain(&key(i)))
            .count();
        fp as f64 / 100_000.0
    }

    #[test]
    fn no_false_negatives_and_low_false_positive_rate() {
        let mut b = BloomBuilder::new(10);
        for i in 0..10_000 {
            b.add_key(&key(i));
        }
        for (layout, bytes) in [("cache-local", b.finish()), ("classic", b.finish_classic())] {
            let f = BloomFilter::new(bytes).unwrap();
            assert_eq!(f.probes(), 7);
            assert_eq!(f.local, layout == "cache-local");
            for i in 0..10_000 {
                assert!(
                    f.may_contain(&key(i)),
                    "{layout}: false negative for key {i}"
                );
            }
            // 10 bits per key: about 0.8% classic, about 1% cache-local (blocks fill
            // unevenly).
            let rate = fp_rate(&f);
            assert!(rate < 0.015, "{layout}: false-positive rate {rate}");
            assert!(
                rate > 0.004,
                "{layout}: suspiciously low false-positive rate {rate}"
            );
        }
    }

    #[test]
    fn filter_bytes_answer_in_place_as_the_filter_does() {
        let mut b = BloomBuilder::new(16);
        for i in 0..300 {
            b.add_key(&key(i));
        }
        for bytes in [b.finish(), b.finish_classic()] {
            let f = BloomFilter::new(bytes.clone()).unwrap();
            for i in 0..5_000 {
                let h = hash64(&key(i));
                assert_eq!(
                    bytes_may_contain(&bytes, h),
                    f.may_contain_hash(h),
                    "key {i}"
                );
            }
        }
        // Not a filter: every key passes.
        for bad in [&[][..], &[0x0b][..], &[0xff, 0x00][..], &[0x00, 0x1f][..]] {
            assert!(bytes_may_contain(bad, 42));
        }
    }

    #[test]
    fn cache_local_probes_stay_in_one_block() {
        let mut b = BloomBuilder::new(10);
        b.add_key(b"one key");
        let bytes = b.finish();
        // 10 bits for one key round up to the floor of one block (512 bits).
        assert_eq!(bytes.len(), 64 + 1);
        assert_eq!(bytes[64], 0x80 | 7);
        let set: u32 = bytes[..64].iter().map(|b| b.count_ones()).sum();
        assert!((1..=7).contains(&set), "{set} bits set");
        // Many keys: every key's bits lie in the 64 bytes its hash picks.
        let mut b = BloomBuilder::new(10);
        for i in 0..1000 {
            b.add_key(&key(i));
        }
        let bytes = b.finish();
        let blocks = (bytes.len() - 1) as u64 / 64;
        assert_eq!(blocks, 10_000_u64.div_ceil(512));
        for i in 0..1000 {
            let h = hash64(&key(i));
            let mut only = vec![0u8; bytes.len() - 1];
            let base = local_block(h, blocks) * 64;
            for bit in local_bits(h, 7) {
                only[base + (bit / 8) as usize] |= 1 << (bit % 8);
            }
            assert!(
                only.iter().zip(&bytes).all(|(o, b)| o & b == *o),
                "key {i}: its bits are set in its block"
            );
        }
    }

    #[test]
    fn tiny_filters_work() {
        let mut b = BloomBuilder::new(10);
        b.add_key(b"only");
        let f = BloomFilter::new(b.finish()).unwrap();
        assert_eq!(f.len(), 512 / 8 + 1);
        assert!(f.may_contain(b"only"));
        let f = BloomFilter::new(b.finish_classic()).unwrap();
        assert_eq!(f.len(), 64 / 8 + 1);
        assert!(f.may_contain(b"only"));
    }

    #[test]
    fn bad_filters_rejected() {
        assert!(BloomFilter::new(vec![]).is_err());
        assert!(BloomFilter::new(vec![7]).is_err());
        assert!(BloomFilter::new(vec![0xff, 0]).is_err());
        assert!(BloomFilter::new(vec![0xff, 31]).is_err());
        assert!(BloomFilter::new(vec![0xff, 30]).is_ok());
        // Cache-local: whole 64-byte blocks and a probe count in range.
        let mut v = vec![0xff; 64];
        v.push(0x80 | 7);
        assert!(BloomFilter::new(v.clone()).is_ok());
        v.insert(0, 0);
        assert!(BloomFilter::new(v).is_err(), "65 bytes of bits");
        let mut v = vec![0xff; 64];
        v.push(0x80);
        assert!(BloomFilter::new(v).is_err(), "no probes");
        let mut v = vec![0xff; 64];
        v.push(0x80 | 31);
        assert!(BloomFilter::new(v).is_err(), "31 probes");
    }
    /// Any bytes `BloomFilter::new` accepts answer without panicking, in either layout, for
    /// lengths around the block size; exactly the documented layouts are accepted.
    #[test]
    fn accepted_filters_never_panic() {
        let mut seed = 0x1234_5678_9abc_def0_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for len in [1usize, 2, 63, 64, 65, 127, 128, 129, 192, 640] {
            for last in [1u8, 7, 30, 31, 0x7f, 0x80, 0x81, 0x87, 0x9e, 0x9f, 0xff] {
                let mut v: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                v.push(last);
                let ok = BloomFilter::new(v);
                let k = last & 0x7f;
                let want_ok = (1..=30).contains(&k) && (last & 0x80 == 0 || len % 64 == 0);
                assert_eq!(ok.is_ok(), want_ok, "len {len} last {last:#x}");
                if let Ok(f) = ok {
                    for _ in 0..2000 {
                        let h = next();
                        f.touch(h);
                        let _ = f.may_contain_hash(h);
                    }
                }
            }
        }
    }
}
