//! Latency samples in nanoseconds, kept in an HdrHistogram and printed the way db_bench
//! prints its histogram.
//!
//! The `hdrhistogram` crate (the Rust port of Gil Tene's HdrHistogram, used by tokio's and
//! many load generators' latency reports) holds the distribution with three significant
//! digits at any magnitude, so a percentile is within 0.1 % of the true value. The minimum,
//! maximum, mean and standard deviation are kept exactly beside it from the raw samples.

use std::fmt::Write as _;

/// Significant decimal digits the histogram keeps of every sample.
const SIGNIFICANT_DIGITS: u8 = 3;

/// Latency samples in nanoseconds.
#[derive(Clone)]
pub struct Histogram {
    h: hdrhistogram::Histogram<u64>,
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
            .field("count", &self.count())
            .field("min", &self.min())
            .field("max", &self.max())
            .finish()
    }
}

impl Histogram {
    /// An empty histogram.
    #[expect(
        clippy::expect_used,
        reason = "new() fails only for more than 5 significant digits; we ask for 3"
    )]
    pub fn new() -> Self {
        // A resizing histogram: it takes any u64.
        let h = hdrhistogram::Histogram::new(SIGNIFICANT_DIGITS)
            .expect("3 significant digits is a valid HdrHistogram precision");
        Histogram {
            h,
            sum: 0.0,
            sum_sq: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Record one sample of `nanos` nanoseconds.
    pub fn add(&mut self, nanos: u64) {
        // `record` grows the histogram as needed; only a value beyond what it can ever
        // track (none of u64's) would fail, and is then clamped.
        if self.h.record(nanos).is_err() {
            self.h.saturating_record(nanos);
        }
        let f = nanos as f64;
        self.sum += f;
        self.sum_sq += f * f;
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
    }

    /// Add every sample of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        if self.h.add(&other.h).is_err() {
            // Only a histogram that cannot grow refuses; record what it can hold.
            for v in other.h.iter_recorded() {
                self.h
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// Smallest sample in nanoseconds (0 when empty).
    pub fn min(&self) -> u64 {
        if self.count() == 0 { 0 } else { self.min }
    }

    /// Largest sample in nanoseconds (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Mean in nanoseconds (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.sum / self.count() as f64
        }
    }

    /// Standard deviation in nanoseconds.
    pub fn std_dev(&self) -> f64 {
        if self.count() == 0 {
            return 0.0;
        }
        let n = self.count() as f64;
        ((self.sum_sq * n - self.sum * self.sum) / (n * n))
            .max(0.0)
            .sqrt()
    }

    /// The `p`-th percentile (0..=100) in nanoseconds, clamped to the observed minimum and
    /// maximum (0 when empty).
    pub fn percentile(&self, p: f64) -> f64 {
        if self.count() == 0 {
            return 0.0;
        }
        let v = self.h.value_at_percentile(p.clamp(0.0, 100.0));
        v.clamp(self.min(), self.max()) as f64
    }

    /// db_bench's text: summary, percentiles and a bar per power of two, in microseconds.
    pub fn to_text(&self, what: &str) -> String {
        let us = |ns: f64| ns / 1000.0;
        let count = self.count();
        let mut s = String::new();
        let _ = writeln!(s, "Microseconds per {what}:");
        let _ = writeln!(
            s,
            "Count: {} Average: {:.4}  StdDev: {:.2}",
            count,
            us(self.mean()),
            us(self.std_dev())
        );
        let _ = writeln!(
            s,
            "Min: {:.3}  Median: {:.4}  Max: {:.3}",
            us(self.min() as f64),
            us(self.percentile(50.0)),
            us(self.max() as f64)
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
        // One row per power of two of nanoseconds keeps the table short; below 16 ns one row.
        // HdrHistogram's buckets never straddle a power of two, so each falls in one row.
        let mut rows: Vec<(u64, u64, u64)> = Vec::new();
        for v in self.h.iter_recorded() {
            let (lo, hi) = power_of_two_row(v.value_iterated_to());
            match rows.last_mut() {
                Some(r) if r.0 == lo => r.2 += v.count_at_value(),
                _ => rows.push((lo, hi, v.count_at_value())),
            }
        }
        let mut cumulative = 0u64;
        for (lo, hi, n) in rows {
            cumulative += n;
            let pct = 100.0 * n as f64 / count as f64;
            let cum = 100.0 * cumulative as f64 / count as f64;
            let marks = (20.0 * n as f64 / count as f64).round() as usize;
            let _ = writeln!(
                s,
                "[ {:>12.3}, {:>12.3} ) {:>9} {:>7.3}% {:>8.3}% {}",
                us(lo as f64),
                us(hi as f64),
                n,
                pct,
                cum,
                "#".repeat(marks)
            );
        }
        s
    }
}

/// The row `[lo, hi)` of the text table that holds `v` nanoseconds.
fn power_of_two_row(v: u64) -> (u64, u64) {
    if v < 16 {
        return (0, 16);
    }
    let e = 63 - v.leading_zeros();
    (1 << e, 1u64.checked_shl(e + 1).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_tile_the_line() {
        assert_eq!(power_of_two_row(0), (0, 16));
        assert_eq!(power_of_two_row(15), (0, 16));
        assert_eq!(power_of_two_row(16), (16, 32));
        assert_eq!(power_of_two_row(1000), (512, 1024));
        assert_eq!(power_of_two_row(u64::MAX), (1 << 63, u64::MAX));
        let mut h = Histogram::new();
        for v in [3u64, 20, 21, 1000, 1023, 1024, 5_000_000_000] {
            h.add(v);
        }
        let text = h.to_text("op");
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with('[')).collect();
        assert_eq!(rows.len(), 5, "{text}");
        assert!(
            rows[1].contains("0.016,") && rows[1].contains(" 2 "),
            "{text}"
        );
        assert!(
            rows[2].contains("0.512,") && rows[2].contains(" 2 "),
            "{text}"
        );
        assert!(rows[4].contains("100.000%"), "{text}");
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
