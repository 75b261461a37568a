//! The table's bloom filter over user keys, and the 64-bit hash it is built on.
//!
//! One filter covers the whole table, so a point lookup for an absent key costs a few
//! memory probes and no I/O. Each key sets `k` bits chosen by double hashing from one
//! 64-bit hash; bit positions are mapped onto the array with a multiply-shift ("fastrange")
//! rather than a division. The hash and the probe sequence are part of the on-disk format:
//! changing either makes existing filters answer "absent" for present keys. See
//! `docs/format/sst.md`.
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

    /// The filter bytes: the bit array, then one byte holding the probe count.
    pub fn finish(&self) -> Vec<u8> {
        let want = (self.hashes.len() as u64).saturating_mul(self.bits_per_key as u64);
        // A floor keeps the false-positive rate of tiny tables sane.
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

/// A filter read from a table.
#[derive(Clone, Debug)]
pub struct BloomFilter {
    /// The bit array followed by the probe count.
    data: Vec<u8>,
    nbits: u64,
    k: u8,
}

impl BloomFilter {
    /// Check and wrap the bytes of a filter block.
    ///
    /// # Errors
    /// A description when the filter is shorter than two bytes, larger than the format
    /// allows, or its probe count is outside 1..=30.
    pub fn new(data: Vec<u8>) -> std::result::Result<BloomFilter, String> {
        let (&k, bits) = data
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
        if k == 0 || k > MAX_PROBES {
            return Err(format!(
                "filter probe count {k} is outside 1..={MAX_PROBES}"
            ));
        }
        Ok(BloomFilter { data, nbits, k })
    }

    /// False only if `user_key` was certainly not added.
    #[inline]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(hash64(user_key))
    }

    /// [`BloomFilter::may_contain`] for a precomputed [`hash64`].
    #[inline]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        let data = &self.data;
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

    #[test]
    fn no_false_negatives_and_low_false_positive_rate() {
        let mut b = BloomBuilder::new(10);
        for i in 0..10_000 {
            b.add_key(&key(i));
        }
        let f = BloomFilter::new(b.finish()).unwrap();
        assert_eq!(f.probes(), 7);
        for i in 0..10_000 {
            assert!(f.may_contain(&key(i)), "false negative for key {i}");
        }
        let fp = (1_000_000..1_010_000)
            .filter(|&i| f.may_contain(&key(i)))
            .count();
        let rate = fp as f64 / 10_000.0;
        assert!(rate < 0.02, "false-positive rate {rate}");
        assert!(rate > 0.001, "suspiciously low false-positive rate {rate}");
    }

    #[test]
    fn tiny_filters_work() {
        let mut b = BloomBuilder::new(10);
        b.add_key(b"only");
        let f = BloomFilter::new(b.finish()).unwrap();
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
    }
}
