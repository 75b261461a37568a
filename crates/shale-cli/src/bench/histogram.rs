//! A log-bucketed latency histogram (no dependency), printed the way db_bench prints one.
//!
//! Values are nanoseconds. Below 16 every value has its own bucket; above, each power of two
//! is split into 16 equal buckets, so a percentile is off by at most 1/16 of its value before
//! interpolation inside the bucket (which makes it much closer for smooth data).

use std::fmt::Write as _;

const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

/// Latency samples in nanoseconds.
#[derive(Clone)]
pub struct Histogram {
    buckets: Box<[u64]>,
    count: u64,
    sum: f64,
    sum_sq: f64,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish()
    }
}

/// The bucket of value `v`.
fn bucket_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS
    let sub = ((v >> (e - SUB_BITS)) as usize) & (SUB - 1);
    (e - SUB_BITS + 1) as usize * SUB + sub
}

/// The half-open value range `[lo, hi)` of bucket `i`.
fn bucket_range(i: usize) -> (f64, f64) {
    if i < SUB {
        return (i as f64, i as f64 + 1.0);
    }
    let e = (i / SUB) as i32 + SUB_BITS as i32 - 1;
    let sub = (i % SUB) as f64;
    let unit = 2f64.powi(e - SUB_BITS as i32);
    ((SUB as f64 + sub) * unit, (SUB as f64 + sub + 1.0) * unit)
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            buckets: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            sum: 0.0,
            sum_sq: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Record one sample of `nanos` nanoseconds.
    pub fn add(&mut self, nanos: u64) {
        if let Some(b) = self.buckets.get_mut(bucket_of(nanos)) {
            *b += 1;
        }
        self.count += 1;
        let f = nanos as f64;
        self.sum += f;
        self.sum_sq += f * f;
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
    }

    /// Add every sample of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Smallest sample in nanoseconds (0 when empty).
    pub fn min(&self) -> u64 {
        if self.count == 0 { 0 } else { self.min }
    }

    /// Largest sample in nanoseconds.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Mean in nanoseconds (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// Standard deviation in nanoseconds.
    pub fn std_dev(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count as f64;
        ((self.sum_sq * n - self.sum * self.sum) / (n * n))
            .max(0.0)
            .sqrt()
    }

    /// The `p`-th percentile (0..=100) in nanoseconds, interpolated inside its bucket and
    /// clamped to the observed minimum and maximum (0 when empty).
    pub fn percentile(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let threshold = self.count as f64 * (p / 100.0);
        let mut cumulative = 0.0;
        for (i, &n) in self.buckets.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let before = cumulative;
            cumulative += n as f64;
            if cumulative >= threshold {
                let (lo, hi) = bucket_range(i);
                let pos = ((threshold - before) / n as f64).clamp(0.0, 1.0);
                let r = lo + (hi - lo) * pos;
                return r.clamp(self.min as f64, self.max as f64);
            }
        }
        self.max as f64
    }

    /// db_bench's text: summary, percentiles and a bar per power of two, in microseconds.
    pub fn to_text(&self, what: &str) -> String {
        let us = |ns: f64| ns / 1000.0;
        let mut s = String::new();
        let _ = writeln!(s, "Microseconds per {what}:");
        let _ = writeln!(
            s,
            "Count: {} Average: {:.4}  StdDev: {:.2}",
            self.count,
            us(self.mean()),
            us(self.std_dev())
        );
        let _ = writeln!(
            s,
            "Min: {:.3}  Median: {:.4}  Max: {:.3}",
            us(self.min() as f64),
            us(self.percentile(50.0)),
            us(self.max as f64)
        );
        let _ = writeln!(
            s,
            "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
            us(self.percentile(50.0)),
            us(self.percentile(75.0)),
            us(self.percentile(99.0)),
            us(self.percentile(99.9)),
            us(self.percentile(99.99))
        );
        let _ = writeln!(s, "{}", "-".repeat(54));
        if self.count == 0 {
            return s;
        }
        // One row per power of two of nanoseconds keeps the table short.
        let mut cumulative = 0u64;
        let mut row_start = 0usize;
        while row_start < BUCKETS {
            let row_end = if row_start < SUB {
                SUB
            } else {
                row_start + SUB
            };
            let n: u64 = self
                .buckets
                .get(row_start..row_end.min(BUCKETS))
                .map_or(0, |r| r.iter().sum());
            if n > 0 {
                cumulative += n;
                let lo = bucket_range(row_start).0;
                let hi = bucket_range(row_end - 1).1;
                let pct = 100.0 * n as f64 / self.count as f64;
                let cum = 100.0 * cumulative as f64 / self.count as f64;
                let marks = (20.0 * n as f64 / self.count as f64).round() as usize;
                let _ = writeln!(
                    s,
                    "[ {:>12.3}, {:>12.3} ) {:>9} {:>7.3}% {:>8.3}% {}",
                    us(lo),
                    us(hi),
                    n,
                    pct,
                    cum,
                    "#".repeat(marks)
                );
            }
            row_start = row_end;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_line() {
        let mut prev_hi = 0.0;
        for i in 0..BUCKETS {
            let (lo, hi) = bucket_range(i);
            assert_eq!(lo, prev_hi, "bucket {i}");
            assert!(hi > lo);
            prev_hi = hi;
        }
        for v in [0u64, 1, 15, 16, 17, 31, 32, 33, 1000, 123_456_789, u64::MAX] {
            let (lo, hi) = bucket_range(bucket_of(v));
            assert!(lo <= v as f64 && (v as f64) < hi || v == u64::MAX, "{v}");
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_of_uniform_data() {
        let mut h = Histogram::new();
        for us in 1..=1000u64 {
            h.add(us * 1000);
        }
        assert_eq!(h.count(), 1000);
        assert_eq!(h.min(), 1000);
        assert_eq!(h.max(), 1_000_000);
        assert!((h.mean() - 500_500.0).abs() < 1e-6);
        for (p, want) in [(50.0, 500_000.0), (75.0, 750_000.0), (99.0, 990_000.0)] {
            let got = h.percentile(p);
            assert!((got - want).abs() / want < 0.02, "p{p}: {got} vs {want}");
        }
        assert_eq!(h.percentile(100.0), 1_000_000.0);
        assert_eq!(h.percentile(0.0), 1000.0);
    }

    #[test]
    fn single_value_and_empty() {
        let mut h = Histogram::new();
        assert_eq!(h.percentile(50.0), 0.0);
        assert_eq!(h.min(), 0);
        for _ in 0..10 {
            h.add(7_777);
        }
        for p in [0.0, 50.0, 99.0, 99.9, 100.0] {
            assert_eq!(h.percentile(p), 7_777.0);
        }
        assert_eq!(h.std_dev(), 0.0);
    }

    #[test]
    fn skewed_data_and_merge() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        for _ in 0..990 {
            a.add(10);
        }
        for _ in 0..10 {
            b.add(1_000_000);
        }
        a.merge(&b);
        assert_eq!(a.count(), 1000);
        // Interpolation stays inside the bucket [10, 11) of the common value.
        assert!((10.0..=11.0).contains(&a.percentile(50.0)));
        assert!((10.0..=11.0).contains(&a.percentile(99.0)));
        assert!(a.percentile(99.9) > 900_000.0);
        assert_eq!(a.max(), 1_000_000);
        let text = a.to_text("read");
        assert!(text.contains("Count: 1000"), "{text}");
        assert!(text.contains("P99.9:"), "{text}");
        assert!(text.contains("100.000%"), "{text}");
    }
}
