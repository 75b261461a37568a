//! YCSB's number generators, computed exactly as YCSB's Java code does (Gray et al.'s
//! zipfian, the scrambled variant with a precomputed zeta, skewed-latest, and the
//! acknowledged insert counter), with key numbers as `i64` like Java's `long`.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use rand::RngExt;
use rand::rngs::SmallRng;

/// YCSB's default zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Items of the zipfian behind the scrambled generator (YCSB's `ITEM_COUNT`).
pub const SCRAMBLED_ITEM_COUNT: i64 = 10_000_000_000;
/// zeta(ITEM_COUNT + 1, 0.99), precomputed by YCSB (`ScrambledZipfianGenerator.ZETAN`).
pub const SCRAMBLED_ZETAN: f64 = 26.46902820178302;

const FNV_OFFSET_BASIS_64: i64 = 0xCBF2_9CE4_8422_2325_u64 as i64;
const FNV_PRIME_64: i64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes of `val`, made
/// non-negative with `Math.abs` (whose overflow at `i64::MIN` wraps, as in Java).
pub fn fnvhash64(val: i64) -> i64 {
    let mut val = val;
    let mut hash = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        let octet = val & 0xff;
        val >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(FNV_PRIME_64);
    }
    hash.wrapping_abs()
}

/// How record numbers become keys (YCSB's `CoreWorkload.buildKeyName`): `insertorder`
/// and `zeropadding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyNames {
    /// `insertorder=ordered`: the record number itself, not its hash, so keys are inserted
    /// in key order when `zero_padding` covers every number's digits.
    pub ordered: bool,
    /// `zeropadding`: the number is written with at least this many digits, zeros in front.
    pub zero_padding: usize,
}

impl Default for KeyNames {
    /// YCSB's defaults: hashed inserts, padding 1 (none).
    fn default() -> Self {
        KeyNames {
            ordered: false,
            zero_padding: 1,
        }
    }
}

impl KeyNames {
    /// The key of record number `n`: `user` + the decimal of `n` (ordered) or of
    /// `fnvhash64(n)` (hashed), zero-padded to `zero_padding` digits.
    pub fn name(&self, n: i64, buf: &mut Vec<u8>) {
        use std::io::Write as _;
        buf.clear();
        buf.extend_from_slice(b"user");
        let num = if self.ordered { n } else { fnvhash64(n) };
        let _ = write!(buf, "{num:0width$}", width = self.zero_padding);
    }
}

/// Sum of `1 / (i + 1)^theta` for `i` in `st..n`, added to `initial` (YCSB's `zetastatic`).
pub fn zeta(st: i64, n: i64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    let mut i = st;
    while i < n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
        i += 1;
    }
    sum
}

/// YCSB's `ZipfianGenerator`: item `base` is the most popular, then `base + 1`, and so on.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: i64,
    base: i64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    count_for_zeta: i64,
}

impl Zipfian {
    /// Items `min..=max` with constant `theta`; computes zeta over all items (O(items)).
    pub fn new(min: i64, max: i64, theta: f64) -> Self {
        let zetan = zeta(0, max - min + 1, theta, 0.0);
        Zipfian::with_zetan(min, max, theta, zetan)
    }

    /// Items `min..=max` with a precomputed `zetan`.
    pub fn with_zetan(min: i64, max: i64, theta: f64, zetan: f64) -> Self {
        let items = max - min + 1;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan),
            count_for_zeta: items,
        }
    }

    /// YCSB's `nextLong(itemcount)`: when the item count grew, zeta is extended
    /// incrementally (and eta recomputed with the original item count, as YCSB does).
    pub fn next_long(&mut self, item_count: i64, rng: &mut SmallRng) -> i64 {
        if item_count > self.count_for_zeta {
            self.zetan = zeta(self.count_for_zeta, item_count, self.theta, self.zetan);
            self.count_for_zeta = item_count;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
                / (1.0 - self.zeta2theta / self.zetan);
        }
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (item_count as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as i64
    }

    /// The next item over the generator's own item count.
    pub fn next(&mut self, rng: &mut SmallRng) -> i64 {
        self.next_long(self.items, rng)
    }
}

/// YCSB's `ScrambledZipfianGenerator`: zipfian popularity spread over the key space by
/// hashing, drawn from a fixed 10^10-item zipfian with YCSB's precomputed zeta.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    min: i64,
    item_count: i64,
    zipfian: Zipfian,
}

impl ScrambledZipfian {
    /// Items `min..=max` with YCSB's constant 0.99.
    pub fn new(min: i64, max: i64) -> Self {
        ScrambledZipfian {
            min,
            item_count: max - min + 1,
            zipfian: Zipfian::with_zetan(
                0,
                SCRAMBLED_ITEM_COUNT,
                ZIPFIAN_CONSTANT,
                SCRAMBLED_ZETAN,
            ),
        }
    }

    /// The next item in `min..=max`.
    pub fn next(&mut self, rng: &mut SmallRng) -> i64 {
        let r = self.zipfian.next(rng);
        self.min + fnvhash64(r) % self.item_count
    }
}

/// YCSB's `SkewedLatestGenerator`: recently inserted records are the most popular.
#[derive(Debug, Clone)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// For an insert counter whose last acknowledged value is `last` (YCSB builds its
    /// zipfian over `last` items).
    pub fn new(last: i64) -> Self {
        SkewedLatest {
            zipfian: Zipfian::new(0, last - 1, ZIPFIAN_CONSTANT),
        }
    }

    /// The next item, given the counter's current last acknowledged value.
    pub fn next(&mut self, last: i64, rng: &mut SmallRng) -> i64 {
        last - self.zipfian.next_long(last, rng)
    }
}

/// YCSB's `AcknowledgedCounterGenerator`: hands out insert numbers, and reports as "last"
/// the highest number below which every insert has finished, so readers never pick a
/// record that is still being written.
#[derive(Debug)]
pub struct AcknowledgedCounter {
    next: AtomicI64,
    limit: AtomicI64,
    pending: Mutex<BTreeSet<i64>>,
}

impl AcknowledgedCounter {
    /// A counter whose first number is `start` (so `last()` is `start - 1`).
    pub fn new(start: i64) -> Self {
        AcknowledgedCounter {
            next: AtomicI64::new(start),
            limit: AtomicI64::new(start - 1),
            pending: Mutex::new(BTreeSet::new()),
        }
    }

    /// A fresh insert number.
    pub fn next(&self) -> i64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Mark `n` as written.
    pub fn acknowledge(&self, n: i64) {
        let mut pending = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        pending.insert(n);
        let mut limit = self.limit.load(Ordering::Acquire);
        while pending.remove(&(limit + 1)) {
            limit += 1;
        }
        self.limit.store(limit, Ordering::Release);
    }

    /// Every number `<= last()` has been acknowledged.
    pub fn last(&self) -> i64 {
        self.limit.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn key_names_follow_insert_order_and_padding() {
        let mut k = Vec::new();
        let mut h = Vec::new();
        // YCSB's defaults: hashed, no padding.
        KeyNames::default().name(7, &mut k);
        assert_eq!(k, format!("user{}", fnvhash64(7)).into_bytes());
        let ordered = KeyNames {
            ordered: true,
            zero_padding: 6,
        };
        ordered.name(42, &mut k);
        assert_eq!(k, b"user000042");
        // Ordered and padded past every number's digits: key order is record order.
        let names: Vec<Vec<u8>> = (0..2_000)
            .map(|n| {
                ordered.name(n, &mut k);
                k.clone()
            })
            .collect();
        assert!(names.windows(2).all(|w| w[0] < w[1]));
        // Unpadded, numbers of different lengths do not sort numerically (YCSB's default).
        let unpadded = KeyNames {
            ordered: true,
            zero_padding: 1,
        };
        unpadded.name(10, &mut k);
        unpadded.name(9, &mut h);
        assert!(k < h, "user10 sorts before user9");
        // Padding never truncates.
        ordered.name(12_345_678, &mut k);
        assert_eq!(k, b"user12345678");
    }

    #[test]
    fn fnv_matches_ycsb() {
        // FNV-1a of eight zero bytes, from the algorithm's definition.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        assert_eq!(fnvhash64(0), (h as i64).wrapping_abs());
        assert!(fnvhash64(0) >= 0);
        // Distinct and non-negative on a range.
        let hashes: BTreeSet<i64> = (0..10_000).map(fnvhash64).collect();
        assert_eq!(hashes.len(), 10_000);
        assert!(hashes.iter().all(|&h| h >= 0));
        let mut k = Vec::new();
        KeyNames::default().name(0, &mut k);
        assert_eq!(k, format!("user{}", fnvhash64(0)).into_bytes());
    }

    #[test]
    fn scrambled_zeta_constant_is_ycsbs() {
        // The precomputed zeta agrees with a direct computation on a prefix: the first
        // million terms already make up most of it and the sum only grows.
        let prefix = zeta(0, 1_000_000, ZIPFIAN_CONSTANT, 0.0);
        assert!(
            prefix < SCRAMBLED_ZETAN && prefix > 0.5 * SCRAMBLED_ZETAN,
            "{prefix}"
        );
    }

    #[test]
    fn incremental_zeta_equals_full() {
        let full = zeta(0, 5000, 0.99, 0.0);
        let inc = zeta(1000, 5000, 0.99, zeta(0, 1000, 0.99, 0.0));
        assert!((full - inc).abs() < 1e-9);
    }

    #[test]
    fn zipfian_stays_in_range_and_is_skewed() {
        let mut rng = SmallRng::seed_from_u64(42);
        let n = 1000i64;
        let mut z = Zipfian::new(0, n - 1, ZIPFIAN_CONSTANT);
        let mut counts = vec![0u32; n as usize];
        let draws = 100_000;
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!((0..n).contains(&v), "{v}");
            counts[v as usize] += 1;
        }
        // Item 0 is the most popular, far above the uniform 100 per item.
        let max = *counts.iter().max().unwrap();
        assert_eq!(counts[0], max);
        assert!(counts[0] > 10 * (draws / n as u32), "{}", counts[0]);
        assert!(counts[0] > counts[1] && counts[1] > counts[10]);
    }

    #[test]
    fn scrambled_zipfian_stays_in_range_and_is_skewed() {
        let mut rng = SmallRng::seed_from_u64(42);
        let (min, max) = (100i64, 10_099);
        let mut z = ScrambledZipfian::new(min, max);
        let mut counts = std::collections::HashMap::new();
        let draws = 200_000u32;
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!((min..=max).contains(&v), "{v}");
            *counts.entry(v).or_insert(0u32) += 1;
        }
        let uniform = draws / 10_000;
        let top = *counts.values().max().unwrap();
        assert!(top > 50 * uniform, "top {top} vs uniform {uniform}");
        // The hot item is not the first of the range: popularity is scattered.
        let hottest = counts
            .iter()
            .max_by_key(|&(_, c)| *c)
            .map(|(&k, _)| k)
            .unwrap();
        assert_ne!(hottest, min);
        // Same seed, same sequence.
        let mut a = SmallRng::seed_from_u64(7);
        let mut b = SmallRng::seed_from_u64(7);
        let mut za = ScrambledZipfian::new(0, 999);
        let mut zb = ScrambledZipfian::new(0, 999);
        for _ in 0..100 {
            assert_eq!(za.next(&mut a), zb.next(&mut b));
        }
    }

    #[test]
    fn skewed_latest_prefers_recent_records() {
        let mut rng = SmallRng::seed_from_u64(42);
        let mut last = 999i64;
        let mut g = SkewedLatest::new(last);
        let mut recent = 0;
        for i in 0..10_000 {
            if i % 100 == 0 {
                last += 1; // inserts keep arriving
            }
            let v = g.next(last, &mut rng);
            assert!((0..=last).contains(&v), "{v} > {last}");
            if v >= last - 10 {
                recent += 1;
            }
        }
        assert!(recent > 3000, "{recent}");
    }

    #[test]
    fn acknowledged_counter_waits_for_gaps() {
        let c = AcknowledgedCounter::new(10);
        assert_eq!(c.last(), 9);
        let (a, b, d) = (c.next(), c.next(), c.next());
        assert_eq!((a, b, d), (10, 11, 12));
        c.acknowledge(11);
        assert_eq!(c.last(), 9);
        c.acknowledge(10);
        assert_eq!(c.last(), 11);
        c.acknowledge(12);
        assert_eq!(c.last(), 12);
    }
}
