//! Per-operation latency measurements of a YCSB phase and YCSB's summary lines.

use std::time::Instant;

use crate::bench::histogram::Histogram;

/// Operation types, in YCSB's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpType {
    /// Read one record.
    Read,
    /// Overwrite one record.
    Update,
    /// Insert a new record.
    Insert,
    /// Read a range of records.
    Scan,
    /// Read a record, then write it.
    ReadModifyWrite,
}

impl OpType {
    /// Every type, in YCSB's order.
    pub const ALL: [OpType; 5] = [
        OpType::Read,
        OpType::Update,
        OpType::Insert,
        OpType::Scan,
        OpType::ReadModifyWrite,
    ];

    /// YCSB's measurement name.
    pub fn name(self) -> &'static str {
        match self {
            OpType::Read => "READ",
            OpType::Update => "UPDATE",
            OpType::Insert => "INSERT",
            OpType::Scan => "SCAN",
            OpType::ReadModifyWrite => "READ-MODIFY-WRITE",
        }
    }
}

/// Per-operation-type measurements of one thread or phase.
#[derive(Debug, Default, Clone)]
pub struct Measurements {
    /// Latency per operation type, in [`OpType::ALL`] order.
    pub hist: [Histogram; 5],
    /// Reads that found nothing, per operation type.
    pub not_found: [u64; 5],
    /// Key and value bytes written.
    pub user_bytes_written: u64,
    /// Key bytes of inserted records.
    pub key_bytes_inserted: u64,
    /// Records inserted.
    pub inserted: u64,
}

impl Measurements {
    /// Record one operation of type `op` that started at `start`.
    pub fn record(&mut self, op: OpType, start: Instant) {
        if let Some(h) = self.hist.get_mut(op as usize) {
            h.add(start.elapsed().as_nanos() as u64);
        }
    }
    /// Count a lookup of type `op` that found nothing.
    pub fn not_found(&mut self, op: OpType) {
        if let Some(n) = self.not_found.get_mut(op as usize) {
            *n += 1;
        }
    }
    /// Add `o` to `self`.
    pub fn merge(&mut self, o: &Measurements) {
        for (a, b) in self.hist.iter_mut().zip(o.hist.iter()) {
            a.merge(b);
        }
        for (a, b) in self.not_found.iter_mut().zip(o.not_found.iter()) {
            *a += b;
        }
        self.user_bytes_written += o.user_bytes_written;
        self.key_bytes_inserted += o.key_bytes_inserted;
        self.inserted += o.inserted;
    }
    /// Operations counted once each (the READ and UPDATE inside a read-modify-write are
    /// measured too, as YCSB does, but are not extra operations).
    pub fn operations(&self, rmw: bool) -> u64 {
        let all: u64 = self.hist.iter().map(Histogram::count).sum();
        if rmw {
            all - 2 * self.hist[OpType::ReadModifyWrite as usize].count()
        } else {
            all
        }
    }
}

/// YCSB's summary lines for one phase.
pub fn summary(m: &Measurements, ops: u64, seconds: f64) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "[OVERALL], RunTime(ms), {}\n",
        (seconds * 1000.0).round() as u64
    ));
    let tput = if seconds > 0.0 {
        ops as f64 / seconds
    } else {
        0.0
    };
    s.push_str(&format!("[OVERALL], Throughput(ops/sec), {tput}\n"));
    for op in OpType::ALL {
        let h = &m.hist[op as usize];
        if h.count() == 0 {
            continue;
        }
        let n = op.name();
        let us = |ns: f64| (ns / 1000.0).round() as u64;
        s.push_str(&format!("[{n}], Operations, {}\n", h.count()));
        s.push_str(&format!(
            "[{n}], AverageLatency(us), {}\n",
            h.mean() / 1000.0
        ));
        s.push_str(&format!("[{n}], MinLatency(us), {}\n", us(h.min() as f64)));
        s.push_str(&format!("[{n}], MaxLatency(us), {}\n", us(h.max() as f64)));
        s.push_str(&format!(
            "[{n}], 95thPercentileLatency(us), {}\n",
            us(h.percentile(95.0))
        ));
        s.push_str(&format!(
            "[{n}], 99thPercentileLatency(us), {}\n",
            us(h.percentile(99.0))
        ));
        let nf = m.not_found[op as usize];
        s.push_str(&format!("[{n}], Return=OK, {}\n", h.count() - nf));
        if nf > 0 {
            s.push_str(&format!("[{n}], Return=NOT_FOUND, {nf}\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_has_ycsb_lines() {
        let mut m = Measurements::default();
        for i in 1..=100 {
            m.hist[OpType::Read as usize].add(i * 1000);
        }
        m.not_found(OpType::Read);
        m.hist[OpType::Update as usize].add(5000);
        let s = summary(&m, 101, 2.0);
        assert!(s.starts_with("[OVERALL], RunTime(ms), 2000\n"), "{s}");
        assert!(s.contains("[OVERALL], Throughput(ops/sec), 50.5\n"), "{s}");
        assert!(s.contains("[READ], Operations, 100\n"), "{s}");
        assert!(s.contains("[READ], AverageLatency(us), 50.5\n"), "{s}");
        // Within the histogram's bucket resolution of the exact 99.
        assert!(
            s.contains("[READ], 99thPercentileLatency(us), 99\n")
                || s.contains("[READ], 99thPercentileLatency(us), 100\n"),
            "{s}"
        );
        assert!(s.contains("[READ], Return=OK, 99\n"), "{s}");
        assert!(s.contains("[READ], Return=NOT_FOUND, 1\n"), "{s}");
        assert!(s.contains("[UPDATE], Operations, 1\n"), "{s}");
        assert!(!s.contains("[SCAN]"), "{s}");
    }

    #[test]
    fn rmw_counts_once() {
        let mut m = Measurements::default();
        for _ in 0..3 {
            m.hist[OpType::Read as usize].add(1);
            m.hist[OpType::Update as usize].add(1);
            m.hist[OpType::ReadModifyWrite as usize].add(2);
        }
        m.hist[OpType::Read as usize].add(1);
        assert_eq!(m.operations(true), 4);
        assert_eq!(m.operations(false), 10);
    }
}
