//! What a benchmark prints: db_bench's result line, the amplification line, and JSON.

use std::path::Path;

use crate::bench::histogram::Histogram;
use crate::engine::{Counters, EngineFlags};
use crate::json::{BenchJson, EngineJson, KindJson, LevelJson};

/// Storage I/O of this process from `/proc/self/io`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Bytes this process caused to be read from storage.
    pub read_bytes: u64,
    /// Bytes this process caused to be written to storage.
    pub write_bytes: u64,
    /// Written bytes that were dropped before reaching storage (truncated or deleted files).
    pub cancelled_write_bytes: u64,
}

impl IoCounters {
    /// `self - before`, field by field.
    pub fn since(&self, before: &IoCounters) -> IoCounters {
        IoCounters {
            read_bytes: self.read_bytes.saturating_sub(before.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(before.write_bytes),
            cancelled_write_bytes: self
                .cancelled_write_bytes
                .saturating_sub(before.cancelled_write_bytes),
        }
    }
}

/// Parse the text of `/proc/<pid>/io`.
pub fn parse_proc_io(text: &str) -> Option<IoCounters> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse::<u64>().ok())?
        })
    };
    Some(IoCounters {
        read_bytes: field("read_bytes")?,
        write_bytes: field("write_bytes")?,
        cancelled_write_bytes: field("cancelled_write_bytes")?,
    })
}

/// This process's I/O counters, or `None` where `/proc/self/io` is unavailable.
pub fn read_proc_io() -> Option<IoCounters> {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|t| parse_proc_io(&t))
}

/// Total size of the files under `dir`. Files that vanish during the walk (compaction
/// deletes them) are skipped.
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// The measured outcome of one benchmark.
#[derive(Debug, Clone, Default)]
pub struct BenchResult {
    /// Benchmark name.
    pub name: String,
    /// Operations done.
    pub ops: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Seconds summed over threads (db_bench's micros/op is per thread).
    pub thread_seconds: f64,
    /// Key and value bytes moved, for MB/s.
    pub bytes: u64,
    /// For reads: (found, looked up).
    pub found: Option<(u64, u64)>,
    /// Latency of each operation.
    pub hist: Histogram,
    /// For a mix of operation kinds (`updatescan`): each kind's latency.
    pub parts: Vec<(&'static str, Histogram)>,
    /// Key and value bytes of the write operations.
    pub user_bytes_written: u64,
    /// Device I/O during the benchmark, when measurable.
    pub io: Option<IoCounters>,
    /// Bytes of the store's files afterwards.
    pub db_size: u64,
    /// Key and value bytes of the live keys afterwards.
    pub live_bytes: u64,
    /// Live keys afterwards.
    pub live_keys: u64,
    /// The engine's own counters during the benchmark.
    pub engine: Option<Counters>,
    /// Operations done over time (see [`crate::bench::Timeline`]).
    pub timeline: Vec<(f64, u64)>,
}

impl BenchResult {
    /// Operations per second of wall time.
    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }
    /// Microseconds per operation per thread.
    pub fn micros_per_op(&self) -> f64 {
        self.thread_seconds * 1e6 / self.ops.max(1) as f64
    }
    /// MB/s (MiB) of key and value bytes.
    pub fn mb_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1048576.0 / self.seconds
        } else {
            0.0
        }
    }
    /// Device bytes written per user byte written.
    pub fn write_amp(&self) -> Option<f64> {
        let io = self.io?;
        (self.user_bytes_written > 0)
            .then(|| io.write_bytes as f64 / self.user_bytes_written as f64)
    }
    /// Device bytes read per operation.
    pub fn read_bytes_per_op(&self) -> Option<f64> {
        let io = self.io?;
        Some(io.read_bytes as f64 / self.ops.max(1) as f64)
    }
    /// Store bytes per live user byte.
    pub fn space_amp(&self) -> Option<f64> {
        (self.live_bytes > 0).then(|| self.db_size as f64 / self.live_bytes as f64)
    }
    /// The engine's storage bytes written per user byte written.
    pub fn engine_write_amp(&self) -> Option<f64> {
        let c = self.engine.as_ref()?;
        (self.user_bytes_written > 0)
            .then(|| c.total_written() as f64 / self.user_bytes_written as f64)
    }

    /// db_bench's line: `name : x micros/op y ops/sec z seconds n operations; m MB/s (..)`.
    pub fn line(&self) -> String {
        let mut extra = String::new();
        if self.bytes > 0 {
            extra.push_str(&format!("{:6.1} MB/s", self.mb_per_sec()));
        }
        if let Some((found, of)) = self.found {
            if !extra.is_empty() {
                extra.push(' ');
            }
            extra.push_str(&format!("({found} of {of} found)"));
        }
        format!(
            "{:<12} : {:>11.3} micros/op {} ops/sec {:.3} seconds {} operations;{}{}",
            self.name,
            self.micros_per_op(),
            self.ops_per_sec() as u64,
            self.seconds,
            self.ops,
            if extra.is_empty() { "" } else { " " },
            extra
        )
    }

    /// One line per kind of operation of a mix: its count and latency percentiles.
    pub fn part_lines(&self) -> Vec<String> {
        self.parts
            .iter()
            .filter(|(_, h)| h.count() > 0)
            .map(|(kind, h)| {
                let us = |q: f64| h.percentile(q) / 1000.0;
                format!(
                    "  {kind:<10} : {} operations; p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.1} micros",
                    h.count(),
                    us(50.0),
                    us(99.0),
                    us(99.9),
                    h.max() as f64 / 1000.0
                )
            })
            .collect()
    }

    /// The amplification line.
    pub fn amplification_line(&self) -> String {
        let na = || "n/a".to_string();
        let (dw, dc, dr) = match self.io {
            Some(io) => (
                mb(io.write_bytes),
                mb(io.cancelled_write_bytes),
                mb(io.read_bytes),
            ),
            None => (na(), na(), na()),
        };
        format!(
            "amplification: user_written={} device_written={dw} cancelled={dc} device_read={dr} write_amp={} read_bytes/op={} db_size={} space_amp={}",
            mb(self.user_bytes_written),
            self.write_amp().map_or_else(na, |w| format!("{w:.2}")),
            self.read_bytes_per_op()
                .map_or_else(na, |r| format!("{r:.1}")),
            mb(self.db_size),
            self.space_amp().map_or_else(na, |s| format!("{s:.2}")),
        )
    }

    /// Blocks of `kind` (`data`, `filter`, `value`) the gets of a read benchmark read from
    /// storage per lookup, when the engine counts them.
    pub fn blocks_per_get(&self, kind: &str) -> Option<f64> {
        let (_, lookups) = self.found?;
        let n = self.engine.as_ref()?.get_blocks_of(kind)?;
        (lookups > 0).then(|| n as f64 / lookups as f64)
    }

    /// The engine's own counters by cause, when it keeps them.
    pub fn engine_line(&self, engine: &str) -> Option<String> {
        let c = self.engine.as_ref()?;
        let mut s = format!("{engine} counters: written");
        for (name, n) in &c.written {
            s.push_str(&format!(" {name}={}", mb(*n)));
        }
        s.push_str(" read");
        for (name, n) in &c.read {
            s.push_str(&format!(" {name}={}", mb(*n)));
        }
        if let Some(w) = self.engine_write_amp() {
            s.push_str(&format!(" write_amp={w:.2}"));
        }
        // Reads served by the page cache never reach the device; the engine counts them.
        s.push_str(&format!(
            " read_bytes/op={:.1}",
            c.total_read() as f64 / self.ops.max(1) as f64
        ));
        // Blocks a get read from storage (block-cache misses), for read benchmarks.
        if let Some(d) = self.blocks_per_get("data") {
            s.push_str(&format!(" blocks/get data={d:.3}"));
            for kind in ["filter", "value"] {
                if let Some(n) = self.blocks_per_get(kind) {
                    s.push_str(&format!(" {kind}={n:.3}"));
                }
            }
        }
        Some(s)
    }

    /// The JSON line's fields (see docs/benchmarks.md, "JSON output fields").
    pub fn to_json(&self, setting: &JsonSetting<'_>) -> BenchJson {
        let us = |ns: f64| ns / 1000.0;
        let has = self.hist.count() > 0;
        let p = |q: f64| has.then(|| us(self.hist.percentile(q)));
        let names = |v: &[(&'static str, u64)]| -> Vec<(String, u64)> {
            v.iter().map(|&(n, b)| (n.to_string(), b)).collect()
        };
        BenchJson {
            benchmark: self.name.clone(),
            engine: setting.engine.to_string(),
            design: setting.design.to_string(),
            settings: setting.settings.to_string(),
            num: setting.num,
            threads: setting.threads,
            key_size: setting.key_size,
            value_size: setting.value_size,
            value_size_dist: setting.value_size_dist.map(str::to_string),
            write_buffer_size: setting.write_buffer_size,
            ops: self.ops,
            seconds: self.seconds,
            ops_per_sec: self.ops_per_sec(),
            micros_per_op: self.micros_per_op(),
            mb_per_sec: self.mb_per_sec(),
            user_bytes_written: self.user_bytes_written,
            device_bytes_written: self.io.map(|i| i.write_bytes),
            device_bytes_cancelled: self.io.map(|i| i.cancelled_write_bytes),
            device_bytes_read: self.io.map(|i| i.read_bytes),
            write_amp: self.write_amp(),
            read_bytes_per_op: self.read_bytes_per_op(),
            db_size_bytes: self.db_size,
            live_keys: self.live_keys,
            space_amp: self.space_amp(),
            found: self.found.map(|f| f.0),
            lookups: self.found.map(|f| f.1),
            p50_us: p(50.0),
            p75_us: p(75.0),
            p99_us: p(99.0),
            p999_us: p(99.9),
            max_us: has.then(|| us(self.hist.max() as f64)),
            by_kind: self
                .parts
                .iter()
                .filter(|(_, h)| h.count() > 0)
                .map(|(kind, h)| KindJson {
                    kind: kind.to_string(),
                    ops: h.count(),
                    p50_us: us(h.percentile(50.0)),
                    p99_us: us(h.percentile(99.0)),
                    p999_us: us(h.percentile(99.9)),
                    max_us: us(h.max() as f64),
                })
                .collect(),
            engine_counters: self.engine.as_ref().map(|c| EngineJson {
                engine_bytes_written: names(&c.written),
                engine_bytes_read: names(&c.read),
                engine_write_amp: self.engine_write_amp(),
                engine_stall_micros: c.stall_micros,
                engine_levels: c
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| LevelJson {
                        level: i as u64,
                        files: l.files,
                        bytes: l.bytes,
                        bytes_written: l.written,
                    })
                    .collect(),
                engine_memory: names(&c.memory),
                engine_get_blocks_read: names(&c.get_blocks),
                engine_data_blocks_per_get: self.blocks_per_get("data"),
                engine_filter_blocks_per_get: self.blocks_per_get("filter"),
                engine_value_reads_per_get: self.blocks_per_get("value"),
            }),
            timeline: self.timeline.clone(),
        }
    }
}

/// The settings that go into every JSON line.
#[derive(Debug, Clone, Copy)]
pub struct JsonSetting<'a> {
    /// Engine name.
    pub engine: &'a str,
    /// Design preset.
    pub design: &'a str,
    /// The preset's settings (`tuned`, `paper`; `-` for a peer engine).
    pub settings: &'static str,
    /// `--num`.
    pub num: u64,
    /// `--threads`.
    pub threads: u64,
    /// `--key-size` (`None` when keys vary, as in YCSB).
    pub key_size: Option<u64>,
    /// `--value-size` (the mean size under a distribution).
    pub value_size: u64,
    /// `--value-size-dist` when it is not `fixed` (`uniform:1:200`).
    pub value_size_dist: Option<&'a str>,
    /// The memtable size the engine ran with.
    pub write_buffer_size: u64,
}

impl<'a> JsonSetting<'a> {
    /// The engine's part of the settings (its name, `design`, its memtable size); the
    /// workload's part is left zero for the caller to fill in.
    pub fn for_engine(store: &EngineFlags, design: &'a str) -> Self {
        JsonSetting {
            engine: store.engine.name(),
            design,
            settings: if store.engine == crate::engine::EngineKind::Shale {
                store.settings.name()
            } else {
                "-"
            },
            num: 0,
            threads: 0,
            key_size: None,
            value_size: 0,
            value_size_dist: None,
            write_buffer_size: store.memtable_bytes() as u64,
        }
    }
}

/// Bytes as MB (MiB) with one decimal, e.g. `95.4MB`.
pub fn mb(n: u64) -> String {
    format!("{:.1}MB", n as f64 / 1048576.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn parse(text: &str) -> Result<Value, serde_json::Error> {
        serde_json::from_str(text)
    }

    fn sample() -> BenchResult {
        let mut hist = Histogram::new();
        for i in 1..=100 {
            hist.add(i * 1000);
        }
        BenchResult {
            name: "readrandom".into(),
            ops: 2_000_000,
            seconds: 4.69,
            thread_seconds: 4.69,
            bytes: 2_000_000 * 116,
            found: Some((2_000_000, 2_000_000)),
            hist,
            parts: Vec::new(),
            user_bytes_written: 0,
            io: Some(IoCounters {
                read_bytes: 4096,
                write_bytes: 0,
                cancelled_write_bytes: 0,
            }),
            db_size: 200 << 20,
            live_bytes: 100 << 20,
            live_keys: 1000,
            engine: Some(Counters {
                written: vec![("wal", 0)],
                read: vec![("get", 8192)],
                get_blocks: vec![("data", 2_100_000), ("filter", 500_000), ("value", 0)],
                ..Default::default()
            }),
            timeline: vec![(1.0, 1_000_000), (2.0, 1_500_000), (4.69, 2_000_000)],
        }
    }

    #[test]
    fn line_matches_db_bench() {
        let r = sample();
        assert_eq!(
            r.line(),
            "readrandom   :       2.345 micros/op 426439 ops/sec 4.690 seconds 2000000 operations;   47.2 MB/s (2000000 of 2000000 found)"
        );
        let w = BenchResult {
            name: "compact".into(),
            ops: 1,
            seconds: 0.5,
            thread_seconds: 0.5,
            ..Default::default()
        };
        assert_eq!(
            w.line(),
            "compact      :  500000.000 micros/op 2 ops/sec 0.500 seconds 1 operations;"
        );
    }

    #[test]
    fn amplification_line_and_na() {
        let mut r = sample();
        let a = r.amplification_line();
        assert!(a.contains("write_amp=n/a"), "{a}");
        assert!(a.contains("space_amp=2.00"), "{a}");
        assert!(a.contains("read_bytes/op=0.0"), "{a}");
        r.io = None;
        r.user_bytes_written = 1 << 20;
        let a = r.amplification_line();
        assert!(
            a.contains("device_written=n/a") && a.contains("write_amp=n/a"),
            "{a}"
        );
        assert!(a.contains("user_written=1.0MB"), "{a}");
        let e = r.engine_line("shale").unwrap();
        assert!(
            e.contains("read get=0.0MB") && e.contains("write_amp=0.00"),
            "{e}"
        );
        assert!(
            e.contains("blocks/get data=1.050 filter=0.250 value=0.000"),
            "{e}"
        );
        r.found = None;
        let e = r.engine_line("shale").unwrap();
        assert!(!e.contains("blocks/get"), "not a read benchmark: {e}");
    }

    #[test]
    fn json_has_the_fields() {
        let r = sample();
        let s = JsonSetting {
            engine: "shale",
            design: "leveldb",
            settings: "tuned",
            num: 1000,
            threads: 1,
            key_size: Some(16),
            value_size: 100,
            value_size_dist: None,
            write_buffer_size: 4 << 20,
        };
        let text = crate::json::to_line(&r.to_json(&s)).unwrap();
        assert_eq!(text.matches('{').count(), text.matches('}').count());
        let v = parse(&text).unwrap();
        for k in [
            "benchmark",
            "engine",
            "design",
            "settings",
            "num",
            "write_buffer_size",
            "ops",
            "seconds",
            "ops_per_sec",
            "micros_per_op",
            "mb_per_sec",
            "user_bytes_written",
            "device_bytes_written",
            "device_bytes_cancelled",
            "device_bytes_read",
            "write_amp",
            "read_bytes_per_op",
            "db_size_bytes",
            "space_amp",
            "found",
            "p50_us",
            "p99_us",
        ] {
            assert!(v.get(k).is_some(), "missing {k} in {text}");
        }
        assert_eq!(v.get("benchmark"), Some(&json!("readrandom")));
        assert_eq!(v.get("found"), Some(&json!(2_000_000)));
        assert_eq!(v.get("write_amp"), Some(&Value::Null));
        match v.get("p50_us").and_then(Value::as_f64) {
            Some(p) => assert!((49.0..=52.0).contains(&p), "{p}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            v.get("engine_bytes_read").and_then(|r| r.get("get")),
            Some(&json!(8192))
        );
        assert_eq!(
            v.get("engine_get_blocks_read"),
            Some(&json!({"data": 2_100_000, "filter": 500_000, "value": 0}))
        );
        assert_eq!(v.get("engine_data_blocks_per_get"), Some(&json!(1.05)));
        assert_eq!(v.get("engine_filter_blocks_per_get"), Some(&json!(0.25)));
        assert_eq!(v.get("engine_value_reads_per_get"), Some(&json!(0.0)));
        // Read back, the line is the same result.
        let back: BenchJson = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r.to_json(&s));
        let mut w = r.clone();
        w.found = None;
        w.hist = Histogram::new();
        w.engine = None;
        let text = crate::json::to_line(&w.to_json(&s)).unwrap();
        let v = parse(&text).unwrap();
        assert_eq!(v.get("found"), Some(&Value::Null));
        assert_eq!(v.get("p99_us"), Some(&Value::Null));
        assert_eq!(
            v.get("engine_write_amp"),
            None,
            "no engine counters: no engine fields"
        );
        let back: BenchJson = serde_json::from_str(&text).unwrap();
        assert_eq!(back.engine_counters, None);
        assert_eq!(back.timeline.len(), 3);
        assert_eq!(
            v.get("timeline").and_then(|t| t.get(2)),
            Some(&json!([4.69, 2_000_000]))
        );
    }

    #[test]
    fn proc_io_parsing() {
        let text = "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 512\n";
        let io = parse_proc_io(text).unwrap();
        assert_eq!(io.read_bytes, 4096);
        assert_eq!(io.write_bytes, 8192);
        assert_eq!(io.cancelled_write_bytes, 512);
        assert!(parse_proc_io("read_bytes: 1\n").is_none());
        let later = IoCounters {
            read_bytes: 5000,
            write_bytes: 9000,
            cancelled_write_bytes: 512,
        };
        assert_eq!(later.since(&io).write_bytes, 808);
    }

    #[test]
    fn dir_size_walks_subdirectories() {
        let d = std::env::temp_dir().join(format!("shale-cli-dirsize-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("a"), [0u8; 100]).unwrap();
        std::fs::write(d.join("sub/b"), [0u8; 23]).unwrap();
        assert_eq!(dir_size(&d), 123);
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(dir_size(&d), 0);
    }
}
