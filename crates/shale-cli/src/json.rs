//! JSON lines of benchmark results, written with serde_json.
//!
//! [`BenchJson`] is one benchmark's line (the YCSB line adds its fields around it); it
//! derives `Serialize` for `--json` and `Deserialize` for `shale report`. This module also
//! holds writing one object per line, and name-to-count maps that keep their order. serde is the de-facto standard
//! for this in Rust and serde_json writes non-finite floats as `null`, as JSON has no NaN.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::CliError;

/// `v` as one line of JSON (no trailing newline).
pub fn to_line<T: Serialize>(v: &T) -> Result<String, CliError> {
    serde_json::to_string(v).map_err(|e| CliError::msg(format!("cannot write JSON: {e}")))
}

/// `#[serde(with = "crate::json::ordered_map")]` for `Vec<(String, T)>`: written as a JSON
/// object whose fields keep the vector's order; read back from any object (in key order).
pub mod ordered_map {
    use super::*;

    /// Write the pairs as one object.
    pub fn serialize<S: Serializer, T: Serialize>(
        v: &[(String, T)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_map(v.iter().map(|(k, v)| (k, v)))
    }

    /// Read an object into pairs.
    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Vec<(String, T)>, D::Error> {
        let m = std::collections::BTreeMap::<String, T>::deserialize(d)?;
        Ok(m.into_iter().collect())
    }
}

/// One line of `--json` output: a benchmark's result and its setting. Field names are
/// stable; docs/benchmarks.md ("JSON output fields") says what each means.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchJson {
    /// Benchmark name (`ycsb-<workload>-<phase>` for YCSB).
    pub benchmark: String,
    /// Engine name.
    pub engine: String,
    /// Design preset (with axis overrides).
    pub design: String,
    /// The preset's settings (`tuned` or `paper`; `-` for a peer engine). Absent from
    /// files written before it existed.
    #[serde(default)]
    pub settings: String,
    /// `--num` (YCSB: records).
    pub num: u64,
    /// Worker threads.
    pub threads: u64,
    /// Key bytes (`null` when keys vary, as in YCSB).
    pub key_size: Option<u64>,
    /// Value bytes (the mean under a value-size distribution).
    pub value_size: u64,
    /// The value-size distribution (`uniform:MIN:MAX`), absent for fixed-size values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_size_dist: Option<String>,
    /// Memtable bytes the engine ran with.
    pub write_buffer_size: u64,
    /// Operations done.
    pub ops: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Operations per wall-clock second.
    pub ops_per_sec: f64,
    /// Microseconds per operation per thread.
    pub micros_per_op: f64,
    /// MiB of keys and values moved per second.
    pub mb_per_sec: f64,
    /// Key and value bytes written by the benchmark.
    pub user_bytes_written: u64,
    /// Device bytes written (`/proc/self/io`).
    pub device_bytes_written: Option<u64>,
    /// Device bytes written then dropped before reaching storage.
    pub device_bytes_cancelled: Option<u64>,
    /// Device bytes read.
    pub device_bytes_read: Option<u64>,
    /// Device bytes written per user byte written.
    pub write_amp: Option<f64>,
    /// Device bytes read per operation.
    pub read_bytes_per_op: Option<f64>,
    /// Bytes of the store's files afterwards.
    pub db_size_bytes: u64,
    /// Live keys afterwards.
    pub live_keys: u64,
    /// Store bytes per live key and value byte.
    pub space_amp: Option<f64>,
    /// Reads that found their key.
    pub found: Option<u64>,
    /// Reads done.
    pub lookups: Option<u64>,
    /// Latency percentiles and maximum, in microseconds.
    pub p50_us: Option<f64>,
    /// 75th percentile.
    pub p75_us: Option<f64>,
    /// 99th percentile.
    pub p99_us: Option<f64>,
    /// 99.9th percentile.
    pub p999_us: Option<f64>,
    /// Slowest operation.
    pub max_us: Option<f64>,
    /// For a benchmark mixing kinds of operation (`updatescan`): each kind's count and
    /// latency.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_kind: Vec<KindJson>,
    /// The engine's own counters, when it keeps them (absent otherwise).
    #[serde(flatten)]
    pub engine_counters: Option<EngineJson>,
    /// `[seconds since the start, operations done]` once a second and at the end.
    #[serde(default)]
    pub timeline: Vec<(f64, u64)>,
}

/// The engine's per-cause counters of one benchmark.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineJson {
    /// Bytes written to storage, by cause.
    #[serde(with = "crate::json::ordered_map")]
    pub engine_bytes_written: Vec<(String, u64)>,
    /// Bytes read from storage, by cause.
    #[serde(with = "crate::json::ordered_map")]
    pub engine_bytes_read: Vec<(String, u64)>,
    /// The engine's bytes written per user byte written.
    pub engine_write_amp: Option<f64>,
    /// Microseconds writers were delayed or stopped by the engine during the benchmark.
    #[serde(default)]
    pub engine_stall_micros: u64,
    /// Per level: its files and bytes afterwards, and bytes written into it during the
    /// benchmark (flushes into level 0, compactions into the others).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine_levels: Vec<LevelJson>,
    /// The memory component's own counters during the benchmark (FloDB's membuffer:
    /// versions staged and written directly, drains by threads, scans and seals), when it
    /// keeps any.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::json::ordered_map"
    )]
    pub engine_memory: Vec<(String, u64)>,
    /// Blocks the benchmark's gets read from storage (not served by the block cache), by
    /// kind: `data` (table data blocks: `sst` blocks, `htable` buckets and overflow
    /// records), `filter` (filter blocks read on demand: `htable` filter-cluster blocks),
    /// `value` (value-log reads). Absent when the engine does not count them.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::json::ordered_map"
    )]
    pub engine_get_blocks_read: Vec<(String, u64)>,
    /// Per lookup of a read benchmark: data blocks the gets read from storage (`data` of
    /// `engine_get_blocks_read` over `lookups`). `null` for a benchmark without lookups.
    #[serde(default)]
    pub engine_data_blocks_per_get: Option<f64>,
    /// Per lookup: filter blocks read from storage.
    #[serde(default)]
    pub engine_filter_blocks_per_get: Option<f64>,
    /// Per lookup: value-log reads.
    #[serde(default)]
    pub engine_value_reads_per_get: Option<f64>,
}

/// One kind of operation of a mixed benchmark.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KindJson {
    /// `update`, `scan`.
    pub kind: String,
    /// Operations of this kind.
    pub ops: u64,
    /// Latency percentiles and maximum, in microseconds.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Slowest operation.
    pub max_us: f64,
}

/// One level of an LSM tree in a JSON line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelJson {
    /// Level number (0: the newest).
    pub level: u64,
    /// Table files in the level afterwards.
    pub files: u64,
    /// Bytes of those files afterwards.
    pub bytes: u64,
    /// Bytes written into the level during the benchmark.
    pub bytes_written: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Sample {
        benchmark: String,
        seconds: f64,
        whole: f64,
        nan: Option<f64>,
        found: Option<u64>,
        #[serde(with = "ordered_map")]
        written: Vec<(String, u64)>,
    }

    #[test]
    fn lines_are_valid_json_with_ordered_maps() {
        let s = Sample {
            benchmark: "fill\"random\"\n\\\u{1}é".into(),
            seconds: 1.25,
            whole: 3.0,
            nan: Some(f64::NAN),
            found: None,
            written: vec![("wal".into(), 12), ("flush".into(), 0)],
        };
        let text = to_line(&s).unwrap();
        assert!(!text.contains('\n'));
        assert!(text.contains(r#""whole":3.0"#), "{text}");
        assert!(text.contains(r#""nan":null"#), "{text}");
        assert!(text.contains(r#""written":{"wal":12,"flush":0}"#), "{text}");
        let back: Sample = serde_json::from_str(&text).unwrap();
        assert_eq!(back.benchmark, s.benchmark);
        assert_eq!(back.nan, None);
        assert_eq!(back.written.len(), 2);
    }
}
