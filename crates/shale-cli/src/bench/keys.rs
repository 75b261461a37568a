//! Keys, values and key orders of the benchmarks.
//!
//! Keys are db_bench's: the key number as zero-padded decimal, `key_size` bytes, so key order
//! is numeric order. Values come from one buffer of pseudo-random text that compresses to
//! about half its size (db_bench's `RandomGenerator` with compression ratio 0.5).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// Write the key of number `n` into `buf` (`key_size` bytes, zero-padded decimal). Numbers
/// with more digits than `key_size` keep their low digits; [`key_fits`] rules that out.
pub fn format_key(n: u64, key_size: usize, buf: &mut Vec<u8>) {
    buf.clear();
    buf.resize(key_size, b'0');
    let mut n = n;
    for b in buf.iter_mut().rev() {
        if n == 0 {
            break;
        }
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// The key of number `n` that is never written: the written key plus a `.` suffix, so it
/// sorts right after a key that exists and lookups reach the same tables.
pub fn format_missing_key(n: u64, key_size: usize, buf: &mut Vec<u8>) {
    format_key(n, key_size, buf);
    buf.push(b'.');
}

/// True when every number below `num` has a distinct `key_size`-byte key.
pub fn key_fits(num: u64, key_size: usize) -> bool {
    let max = num.saturating_sub(1);
    let digits = max.checked_ilog10().map_or(1, |d| d as usize + 1);
    digits <= key_size
}

/// db_bench's value source: a buffer of compressible random text, handed out in slices.
#[derive(Clone)]
pub struct ValueGen {
    data: Arc<Vec<u8>>,
    pos: usize,
}

impl ValueGen {
    /// A generator for values of up to `value_size` bytes compressing to about half.
    pub fn new(value_size: usize, seed: u64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed ^ 301);
        let size = (1 << 20).max(2 * value_size);
        let mut data = Vec::with_capacity(size + 100);
        // 100-byte pieces, each 50 random printable bytes repeated: compresses to ~50%.
        while data.len() < size {
            let raw: Vec<u8> = (0..50).map(|_| b' ' + rng.random_range(0..95u8)).collect();
            data.extend_from_slice(&raw);
            data.extend_from_slice(&raw);
        }
        ValueGen {
            data: Arc::new(data),
            pos: 0,
        }
    }

    /// The next `len` bytes of the buffer (wrapping to its start).
    pub fn next(&mut self, len: usize) -> &[u8] {
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += len;
        self.data.get(start..start + len).unwrap_or_default()
    }
}

pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seeded random permutation of `0..n` computed on demand (constant memory): a 4-round
/// Feistel network over the smallest even power of two `>= n`, cycle-walking values that
/// fall outside `0..n`. The domain is below `4n`, so a lookup takes under 4 rounds on average.
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// The permutation of `0..n` for `seed`.
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = if n <= 4 {
            2
        } else {
            64 - (n - 1).leading_zeros()
        };
        let bits = bits + bits % 2;
        let mut s = seed;
        let mut keys = [0; 4];
        for k in &mut keys {
            s = splitmix64(s);
            *k = s;
        }
        Permutation {
            n,
            half_bits: bits / 2,
            keys,
        }
    }

    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let mut l = x >> self.half_bits;
        let mut r = x & mask;
        for &k in &self.keys {
            let f = splitmix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// The `i`-th element (`i < n`).
    pub fn get(&self, i: u64) -> u64 {
        let mut x = self.feistel(i);
        while x >= self.n {
            x = self.feistel(x);
        }
        x
    }
}

/// Which key numbers are live (written and not deleted), shared by worker threads.
///
/// Reads check themselves against it: a key whose bit was set before a read started must be
/// found, and with no writer running a key whose bit is clear must not be.
#[derive(Debug)]
pub struct LiveSet {
    words: Vec<AtomicU64>,
    n: u64,
}

impl LiveSet {
    /// An empty set over `0..n`.
    pub fn new(n: u64) -> Self {
        let words = n.div_ceil(64) as usize;
        LiveSet {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            n,
        }
    }

    fn slot(&self, k: u64) -> Option<(&AtomicU64, u64)> {
        if k >= self.n {
            return None;
        }
        self.words
            .get((k / 64) as usize)
            .map(|w| (w, 1u64 << (k % 64)))
    }

    /// Mark `k` live (after its put returned).
    pub fn insert(&self, k: u64) {
        if let Some((w, bit)) = self.slot(k) {
            w.fetch_or(bit, Ordering::Release);
        }
    }

    /// Mark `k` deleted (after its delete returned).
    pub fn remove(&self, k: u64) {
        if let Some((w, bit)) = self.slot(k) {
            w.fetch_and(!bit, Ordering::Release);
        }
    }

    /// Is `k` live?
    pub fn contains(&self, k: u64) -> bool {
        self.slot(k)
            .is_some_and(|(w, bit)| w.load(Ordering::Acquire) & bit != 0)
    }

    /// Mark every key live.
    pub fn fill(&self) {
        for (i, w) in self.words.iter().enumerate() {
            let start = i as u64 * 64;
            let bits = (self.n - start).min(64);
            w.store(
                if bits == 64 {
                    u64::MAX
                } else {
                    (1 << bits) - 1
                },
                Ordering::Release,
            );
        }
    }

    /// Live keys.
    pub fn count(&self) -> u64 {
        self.words
            .iter()
            .map(|w| u64::from(w.load(Ordering::Acquire).count_ones()))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_zero_padded_decimal() {
        let mut b = Vec::new();
        format_key(1234, 16, &mut b);
        assert_eq!(b, b"0000000000001234");
        format_key(0, 16, &mut b);
        assert_eq!(b, b"0000000000000000");
        format_key(u64::MAX, 24, &mut b);
        assert_eq!(b, b"000018446744073709551615");
        format_key(7, 1, &mut b);
        assert_eq!(b, b"7");
        format_missing_key(1234, 8, &mut b);
        assert_eq!(b, b"00001234.");
        // Numeric order is byte order.
        let mut prev = Vec::new();
        for n in [0u64, 1, 9, 10, 99, 100, 12345, 999_999] {
            format_key(n, 8, &mut b);
            assert!(b > prev, "{n}");
            prev = b.clone();
        }
        format_key(5, 8, &mut b);
        let mut m = Vec::new();
        format_missing_key(5, 8, &mut m);
        let mut next = Vec::new();
        format_key(6, 8, &mut next);
        assert!(b < m && m < next);
    }

    #[test]
    fn key_fit() {
        assert!(key_fits(1_000_000, 6));
        assert!(!key_fits(1_000_001, 6));
        assert!(key_fits(0, 1));
        assert!(key_fits(10, 1));
        assert!(!key_fits(11, 1));
        assert!(key_fits(u64::MAX, 20));
    }

    #[test]
    fn permutation_covers_every_key_once() {
        for n in [0u64, 1, 2, 3, 5, 64, 1000, 4097, 100_003] {
            let p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let x = p.get(i);
                assert!(x < n, "n={n} i={i} x={x}");
                assert!(!seen[x as usize], "n={n}: {x} twice");
                seen[x as usize] = true;
            }
        }
    }

    #[test]
    fn permutation_is_seeded_and_shuffled() {
        let n = 10_000;
        let a: Vec<u64> = (0..n).map(|i| Permutation::new(n, 1).get(i)).collect();
        let b: Vec<u64> = (0..n).map(|i| Permutation::new(n, 1).get(i)).collect();
        let c: Vec<u64> = (0..n).map(|i| Permutation::new(n, 2).get(i)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let fixed = a
            .iter()
            .enumerate()
            .filter(|&(i, &x)| i as u64 == x)
            .count();
        assert!(fixed < 20, "{fixed} fixed points");
        let ascending = a.windows(2).filter(|w| w[0] < w[1]).count();
        assert!((4000..6000).contains(&ascending), "{ascending}");
    }

    #[test]
    fn values_are_sized_and_compressible() {
        let mut g = ValueGen::new(100, 42);
        let v = g.next(100).to_vec();
        assert_eq!(v.len(), 100);
        assert!(v.iter().all(|&b| (b' '..=b'~').contains(&b)));
        assert_ne!(g.next(100), &v[..]);
        let distinct: std::collections::HashSet<&[u8]> = v.chunks(50).collect();
        assert_eq!(distinct.len(), 1, "each 100-byte piece is 50 bytes twice");
        let mut big = ValueGen::new(3 << 20, 1);
        assert_eq!(big.next(3 << 20).len(), 3 << 20);
        assert_eq!(big.next(3 << 20).len(), 3 << 20);
    }

    #[test]
    fn live_set_counts() {
        let s = LiveSet::new(130);
        assert_eq!(s.count(), 0);
        s.fill();
        assert_eq!(s.count(), 130);
        assert!(s.contains(129) && !s.contains(130));
        s.remove(5);
        s.remove(5);
        s.remove(500);
        assert_eq!(s.count(), 129);
        assert!(!s.contains(5));
        s.insert(5);
        assert!(s.contains(5));
        assert_eq!(s.count(), 130);
    }
}
