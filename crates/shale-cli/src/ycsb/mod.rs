//! `shale ycsb`: the YCSB core workloads A-F, with YCSB's generators and summary lines.
//!
//! A record is one key-value pair: the key is YCSB's (`user` + fnvhash64 of the record
//! number, or the number itself with `--insert-order ordered`), the value
//! `field_count * field_length` bytes. An update writes the whole record (no read-merge of
//! one field), as key-value ports of YCSB usually do.

pub mod generators;
mod measure;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use clap::Args;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::bench::histogram::Histogram;
use crate::bench::keys::ValueGen;
use crate::bench::report::{BenchResult, JsonSetting, dir_size, read_proc_io};
use crate::bench::workloads::share;
use crate::bench::{bench_dir, open_json, parse_bool, wipe_store_dir, with_progress};
use crate::engine::{Engine, EngineFlags};
use crate::json::BenchJson;
use crate::{CliError, CliResult, EXIT_WRONG_ANSWER};
use generators::{AcknowledgedCounter, KeyNames, ScrambledZipfian, SkewedLatest};
use measure::{Measurements, OpType, summary};

/// A YCSB core workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// 50% read, 50% update, zipfian.
    A,
    /// 95% read, 5% update, zipfian.
    B,
    /// 100% read, zipfian.
    C,
    /// 95% read, 5% insert, latest.
    D,
    /// 95% scan (1..=100 records), 5% insert, zipfian.
    E,
    /// 50% read, 50% read-modify-write, zipfian.
    F,
}

/// Which phases to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// Insert the records.
    Load,
    /// Run the operations on a loaded store.
    Run,
    /// Load, then run.
    Both,
}

/// Order of the load's keys (YCSB `insertorder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InsertOrder {
    /// Keys are `user` + a hash of the record number: the load inserts in no key order.
    Hashed,
    /// Keys are `user` + the record number: with `--zero-padding` wide enough, the load
    /// inserts in key order.
    Ordered,
}

impl InsertOrder {
    /// The flag's value, as the JSON line records it.
    pub fn label(self) -> &'static str {
        match self {
            InsertOrder::Hashed => "hashed",
            InsertOrder::Ordered => "ordered",
        }
    }
}

/// `shale ycsb` flags.
#[derive(Args, Debug)]
pub struct YcsbArgs {
    /// Core workload.
    #[arg(long, value_enum, default_value = "a")]
    pub workload: Workload,
    /// Records inserted by the load phase (YCSB `recordcount`).
    #[arg(long, alias = "recordcount", default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(2..))]
    pub records: u64,
    /// Operations of the run phase (YCSB `operationcount`).
    #[arg(long, alias = "operationcount", default_value_t = 100_000)]
    pub operations: u64,
    /// Client threads.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: u64,
    /// Fields per record.
    #[arg(long = "field-count", alias = "fieldcount", default_value_t = 10)]
    pub field_count: usize,
    /// Bytes per field.
    #[arg(long = "field-length", alias = "fieldlength", default_value_t = 100)]
    pub field_length: usize,
    /// Value bytes (overrides field-count * field-length).
    #[arg(long = "value-size", alias = "value_size")]
    pub value_size: Option<usize>,
    /// Key order of the load (YCSB `insertorder`): hashed or ordered.
    #[arg(
        long = "insert-order",
        alias = "insertorder",
        value_enum,
        default_value = "hashed"
    )]
    pub insert_order: InsertOrder,
    /// Digits of the number in a key, zeros in front (YCSB `zeropadding`; 1: none).
    #[arg(long = "zero-padding", alias = "zeropadding", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..=64))]
    pub zero_padding: u64,
    /// load, run, or both.
    #[arg(long, value_enum, default_value = "both")]
    pub phase: Phase,
    /// Store directory (default: a fresh directory under the temp dir, removed afterwards).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Make every write durable before it returns.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", default_value = "false", value_parser = parse_bool,
          action = clap::ArgAction::Set)]
    pub sync: bool,
    #[command(flatten)]
    pub store: EngineFlags,
    /// Append one JSON object per phase to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Write DIR/report.html: SVG charts of the phases (see `shale report`).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

/// One line of `shale ycsb --json`: the fields of `shale bench`'s line, then the phase's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct YcsbJson {
    /// The fields every benchmark line has.
    #[serde(flatten)]
    pub bench: BenchJson,
    /// Core workload letter.
    pub workload: String,
    /// `load` or `run`.
    pub phase: String,
    /// `--records`.
    pub records: u64,
    /// `--operations`.
    pub operations: u64,
    /// `--insert-order`: `hashed` or `ordered` (lines before session 28 have none: hashed).
    #[serde(default = "hashed")]
    pub insert_order: String,
    /// Per YCSB operation type (`READ`, `UPDATE`, ...), in YCSB's order.
    #[serde(with = "crate::json::ordered_map")]
    pub operations_by_type: Vec<(String, OpJson)>,
}

fn hashed() -> String {
    "hashed".to_string()
}

/// Latency of one YCSB operation type, in microseconds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpJson {
    /// Operations of this type.
    pub ops: u64,
    /// Mean latency.
    pub avg_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 95th percentile.
    pub p95_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Slowest.
    pub max_us: f64,
    /// Lookups that found nothing.
    pub not_found: u64,
}

/// Proportions of a workload in [`OpType::ALL`] order, and whether keys follow `latest`.
pub fn mix(w: Workload) -> ([f64; 5], bool) {
    match w {
        Workload::A => ([0.5, 0.5, 0.0, 0.0, 0.0], false),
        Workload::B => ([0.95, 0.05, 0.0, 0.0, 0.0], false),
        Workload::C => ([1.0, 0.0, 0.0, 0.0, 0.0], false),
        Workload::D => ([0.95, 0.0, 0.05, 0.0, 0.0], true),
        Workload::E => ([0.0, 0.0, 0.05, 0.95, 0.0], false),
        Workload::F => ([0.5, 0.0, 0.0, 0.0, 0.5], false),
    }
}

/// YCSB's `DiscreteGenerator`: pick an operation with the given weights.
pub fn choose(weights: &[f64; 5], rng: &mut SmallRng) -> OpType {
    let sum: f64 = weights.iter().sum();
    let mut v = rng.random::<f64>() * sum;
    for (i, &w) in weights.iter().enumerate() {
        if v < w {
            return OpType::ALL.get(i).copied().unwrap_or(OpType::Read);
        }
        v -= w;
    }
    // Rounding at the top end: the last operation with a weight.
    weights
        .iter()
        .rposition(|&w| w > 0.0)
        .and_then(|i| OpType::ALL.get(i).copied())
        .unwrap_or(OpType::Read)
}

impl YcsbArgs {
    /// How record numbers become keys.
    pub fn key_names(&self) -> KeyNames {
        KeyNames {
            ordered: self.insert_order == InsertOrder::Ordered,
            zero_padding: self.zero_padding as usize,
        }
    }
}

struct Ctx<'a> {
    engine: &'a dyn Engine,
    a: &'a YcsbArgs,
    keys: KeyNames,
    value_size: usize,
    values: ValueGen,
    progress: &'a AtomicU64,
    abort: &'a AtomicBool,
}

fn on_threads<F>(ctx: &Ctx<'_>, body: F) -> CliResult<Measurements>
where
    F: Fn(usize, &mut SmallRng, &mut ValueGen, &mut Measurements) -> CliResult<()> + Sync,
{
    let threads = ctx.a.threads as usize;
    let results: Vec<CliResult<Measurements>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let body = &body;
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(
                        ctx.a.seed ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    );
                    let mut values = ctx.values.clone();
                    let mut m = Measurements::default();
                    let r = body(t, &mut rng, &mut values, &mut m).map(|()| m);
                    if r.is_err() {
                        ctx.abort.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(CliError::msg("a ycsb thread panicked")))
            })
            .collect()
    });
    let mut total = Measurements::default();
    for r in results {
        total.merge(&r?);
    }
    Ok(total)
}

fn insert(
    ctx: &Ctx<'_>,
    n: i64,
    key: &mut Vec<u8>,
    values: &mut ValueGen,
    m: &mut Measurements,
) -> CliResult<()> {
    ctx.keys.name(n, key);
    let value = values.next(ctx.value_size);
    let start = Instant::now();
    ctx.engine.put(key, value, ctx.a.sync)?;
    m.record(OpType::Insert, start);
    m.user_bytes_written += (key.len() + value.len()) as u64;
    m.key_bytes_inserted += key.len() as u64;
    m.inserted += 1;
    Ok(())
}

fn load(ctx: &Ctx<'_>) -> CliResult<Measurements> {
    let next = AtomicU64::new(0);
    on_threads(ctx, |_, _, values, m| {
        let mut key = Vec::new();
        loop {
            if ctx.abort.load(Ordering::Relaxed) {
                return Ok(());
            }
            let n = next.fetch_add(1, Ordering::Relaxed);
            if n >= ctx.a.records {
                return Ok(());
            }
            insert(ctx, n as i64, &mut key, values, m)?;
            ctx.progress.fetch_add(1, Ordering::Relaxed);
        }
    })
}

enum KeyChooser {
    Zipfian(ScrambledZipfian),
    Latest(SkewedLatest),
}

fn transactions(ctx: &Ctx<'_>) -> CliResult<Measurements> {
    let a = ctx.a;
    let (weights, latest) = mix(a.workload);
    let records = a.records as i64;
    let inserts = AcknowledgedCounter::new(records);
    // YCSB sizes the key space for the inserts it expects (with its fudge factor of 2).
    let expected_new = (a.operations as f64 * weights[OpType::Insert as usize] * 2.0) as i64;
    let chooser = if latest {
        KeyChooser::Latest(SkewedLatest::new(inserts.last()))
    } else {
        KeyChooser::Zipfian(ScrambledZipfian::new(0, records + expected_new))
    };
    on_threads(ctx, |t, rng, values, m| {
        let mut chooser = match &chooser {
            KeyChooser::Zipfian(z) => KeyChooser::Zipfian(z.clone()),
            KeyChooser::Latest(l) => KeyChooser::Latest(l.clone()),
        };
        let mut next_keynum = |rng: &mut SmallRng| loop {
            let last = inserts.last();
            let k = match &mut chooser {
                KeyChooser::Zipfian(z) => z.next(rng),
                KeyChooser::Latest(l) => l.next(last, rng),
            };
            if k <= last {
                return k;
            }
        };
        let mut key = Vec::new();
        let (lo, hi) = share(a.operations, t, a.threads as usize);
        for _ in lo..hi {
            if ctx.abort.load(Ordering::Relaxed) {
                break;
            }
            match choose(&weights, rng) {
                OpType::Read => {
                    ctx.keys.name(next_keynum(rng), &mut key);
                    let start = Instant::now();
                    let got = ctx.engine.get(&key)?;
                    m.record(OpType::Read, start);
                    if got.is_none() {
                        m.not_found(OpType::Read);
                    }
                }
                OpType::Update => {
                    ctx.keys.name(next_keynum(rng), &mut key);
                    let value = values.next(ctx.value_size);
                    let start = Instant::now();
                    ctx.engine.put(&key, value, a.sync)?;
                    m.record(OpType::Update, start);
                    m.user_bytes_written += (key.len() + value.len()) as u64;
                }
                OpType::Insert => {
                    let n = inserts.next();
                    insert(ctx, n, &mut key, values, m)?;
                    inserts.acknowledge(n);
                }
                OpType::Scan => {
                    ctx.keys.name(next_keynum(rng), &mut key);
                    let len = rng.random_range(1..=100usize);
                    let start = Instant::now();
                    ctx.engine.seek(&key, len - 1, &mut |_, _| {})?;
                    m.record(OpType::Scan, start);
                }
                OpType::ReadModifyWrite => {
                    ctx.keys.name(next_keynum(rng), &mut key);
                    let start = Instant::now();
                    let got = ctx.engine.get(&key)?;
                    m.record(OpType::Read, start);
                    if got.is_none() {
                        m.not_found(OpType::Read);
                        m.not_found(OpType::ReadModifyWrite);
                    }
                    let value = values.next(ctx.value_size);
                    let write_start = Instant::now();
                    ctx.engine.put(&key, value, a.sync)?;
                    m.record(OpType::Update, write_start);
                    m.record(OpType::ReadModifyWrite, start);
                    m.user_bytes_written += (key.len() + value.len()) as u64;
                }
            }
            ctx.progress.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    })
}

/// Key and value bytes of records `0..n`.
fn record_bytes(keys: KeyNames, n: u64, value_size: usize) -> u64 {
    let mut key = Vec::new();
    (0..n as i64)
        .map(|i| {
            keys.name(i, &mut key);
            (key.len() + value_size) as u64
        })
        .sum()
}

/// Run `shale ycsb`.
pub fn run(a: &YcsbArgs) -> CliResult {
    let value_size = a.value_size.unwrap_or(a.field_count * a.field_length);
    let config = a.store.config()?;
    let (dir, temporary) = bench_dir(a.db.as_deref(), a.phase == Phase::Run, "ycsb")?;
    if a.phase != Phase::Run {
        wipe_store_dir(&dir)?;
    }
    let mut json = open_json(a.json.as_deref())?;
    let eng = crate::engines::open(a.store.engine, &dir, &config)?;
    let progress = AtomicU64::new(0);
    let abort = AtomicBool::new(false);
    let ctx = Ctx {
        engine: eng.as_ref(),
        a,
        keys: a.key_names(),
        value_size,
        values: ValueGen::new(value_size, a.seed),
        progress: &progress,
        abort: &abort,
    };
    let mut lines = Vec::new();
    let outcome = run_phases(&ctx, &dir, &mut json, &mut lines);
    let closed = eng.close();
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    if let Some(out) = &a.report
        && !lines.is_empty()
    {
        let path = crate::plots::write_report(out, crate::plots::group_lines("ycsb", lines))?;
        eprintln!("report: {}", path.display());
    }
    let code = outcome?;
    closed?;
    Ok(code)
}

fn run_phases(
    ctx: &Ctx<'_>,
    dir: &std::path::Path,
    json: &mut Option<Box<dyn Write>>,
    lines: &mut Vec<BenchJson>,
) -> CliResult {
    let a = ctx.a;
    let workload = format!("{:?}", a.workload).to_lowercase();
    let mut out = std::io::stdout();
    writeln!(
        out,
        "# shale ycsb: workload {workload}, {} records, {} operations, {} threads, {} value bytes, engine {}, design {} ({} settings), db [{}]",
        a.records,
        a.operations,
        a.threads,
        ctx.value_size,
        a.store.engine.name(),
        a.store.design_name(),
        a.store.settings.name(),
        dir.display()
    )?;
    if let Some(n) = a.store.block_size {
        writeln!(out, "# block size {n} (--block-size)")?;
    }
    for l in ctx.engine.describe() {
        writeln!(out, "# {l}")?;
    }
    let mut live_bytes = if a.phase == Phase::Run {
        record_bytes(ctx.keys, a.records, ctx.value_size)
    } else {
        0
    };
    let mut live_keys = if a.phase == Phase::Run { a.records } else { 0 };
    let phases: &[&str] = match a.phase {
        Phase::Load => &["load"],
        Phase::Run => &["run"],
        Phase::Both => &["load", "run"],
    };
    for &phase in phases {
        writeln!(out, "# phase {phase}")?;
        out.flush()?;
        ctx.progress.store(0, Ordering::Relaxed);
        let io_before = read_proc_io();
        let counters_before = ctx.engine.counters();
        let began = Instant::now();
        let label = format!("ycsb {workload} {phase}");
        let total = if phase == "load" {
            a.records
        } else {
            a.operations
        };
        let (m, timeline) = with_progress(&label, Some(total), ctx.progress, || {
            if phase == "load" {
                load(ctx)
            } else {
                transactions(ctx)
            }
        });
        let m = m?;
        let seconds = began.elapsed().as_secs_f64();
        ctx.engine.sync_to_os()?;
        let io = match (io_before, read_proc_io()) {
            (Some(b), Some(now)) => Some(now.since(&b)),
            _ => None,
        };
        let engine_diff = match (counters_before, ctx.engine.counters()) {
            (Some(b), Some(now)) => Some(now.since(&b)),
            _ => None,
        };
        live_keys += m.inserted;
        live_bytes += m.key_bytes_inserted + m.inserted * ctx.value_size as u64;
        let rmw = phase == "run";
        let ops = m.operations(rmw);
        let mut overall = Histogram::new();
        for op in OpType::ALL {
            let inner =
                rmw && a.workload == Workload::F && matches!(op, OpType::Read | OpType::Update);
            if !inner {
                overall.merge(&m.hist[op as usize]);
            }
        }
        let reads = m.hist[OpType::Read as usize].count();
        let reads_missing = m.not_found[OpType::Read as usize];
        let result = BenchResult {
            name: format!("ycsb-{workload}-{phase}"),
            ops,
            seconds,
            thread_seconds: seconds * a.threads as f64,
            bytes: 0,
            found: (reads > 0).then_some((reads - reads_missing, reads)),
            hist: overall,
            // The YCSB line has its own per-operation fields.
            parts: Vec::new(),
            user_bytes_written: m.user_bytes_written,
            io,
            db_size: dir_size(dir),
            live_bytes,
            live_keys,
            engine: engine_diff,
            timeline,
        };
        write!(out, "{}", summary(&m, ops, seconds))?;
        writeln!(out, "{}", result.amplification_line())?;
        if let Some(l) = result.engine_line(a.store.engine.name()) {
            writeln!(out, "{l}")?;
        }
        out.flush()?;
        let design = a.store.design_name();
        let setting = JsonSetting {
            num: a.records,
            threads: a.threads,
            value_size: ctx.value_size as u64,
            ..JsonSetting::for_engine(&a.store, &design)
        };
        let per_op = OpType::ALL
            .iter()
            .filter_map(|&op| {
                let h = &m.hist[op as usize];
                (h.count() > 0).then(|| {
                    let s = OpJson {
                        ops: h.count(),
                        avg_us: h.mean() / 1000.0,
                        p50_us: h.percentile(50.0) / 1000.0,
                        p95_us: h.percentile(95.0) / 1000.0,
                        p99_us: h.percentile(99.0) / 1000.0,
                        max_us: h.max() as f64 / 1000.0,
                        not_found: m.not_found[op as usize],
                    };
                    (op.name().to_string(), s)
                })
            })
            .collect();
        let line = YcsbJson {
            bench: result.to_json(&setting),
            workload: workload.clone(),
            phase: phase.to_string(),
            records: a.records,
            operations: a.operations,
            insert_order: a.insert_order.label().to_string(),
            operations_by_type: per_op,
        };
        if let Some(j) = json.as_mut() {
            writeln!(j, "{}", crate::json::to_line(&line)?)?;
            j.flush()?;
        }
        lines.push(line.bench);
        if reads_missing > 0 {
            eprintln!(
                "error: ycsb {phase} found {} of {reads} records it read (was the store loaded with --records {}?)",
                reads - reads_missing,
                a.records
            );
            return Ok(ExitCode::from(EXIT_WRONG_ANSWER));
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_sum_to_one_and_choose_follows_them() {
        let mut rng = SmallRng::seed_from_u64(1);
        for w in [
            Workload::A,
            Workload::B,
            Workload::C,
            Workload::D,
            Workload::E,
            Workload::F,
        ] {
            let (weights, _) = mix(w);
            assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            let mut counts = [0u32; 5];
            for _ in 0..20_000 {
                counts[choose(&weights, &mut rng) as usize] += 1;
            }
            for (i, &p) in weights.iter().enumerate() {
                let f = f64::from(counts[i]) / 20_000.0;
                assert!((f - p).abs() < 0.02, "{w:?} op {i}: {f} vs {p}");
                if p == 0.0 {
                    assert_eq!(counts[i], 0);
                }
            }
        }
        assert!(mix(Workload::D).1 && !mix(Workload::A).1);
    }

    #[test]
    fn record_bytes_sum_keys() {
        let mut k = Vec::new();
        let keys = KeyNames::default();
        keys.name(0, &mut k);
        let first = k.len() as u64 + 10;
        keys.name(1, &mut k);
        assert_eq!(record_bytes(keys, 2, 10), first + k.len() as u64 + 10);
        let ordered = KeyNames {
            ordered: true,
            zero_padding: 3,
        };
        // user000 and user001: 7 bytes each.
        assert_eq!(record_bytes(ordered, 2, 10), 2 * (7 + 10));
    }
}

#[cfg(test)]
mod engine_tests {
    use super::*;
    use crate::engine::mem::MemEngine;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        a: YcsbArgs,
    }

    fn args(extra: &[&str]) -> YcsbArgs {
        let base = [
            "ycsb",
            "--records",
            "2000",
            "--operations",
            "3000",
            "--value-size",
            "50",
        ];
        Wrap::try_parse_from(base.iter().chain(extra)).unwrap().a
    }

    fn phases(e: &MemEngine, a: &YcsbArgs) -> (Measurements, Measurements) {
        let progress = AtomicU64::new(0);
        let abort = AtomicBool::new(false);
        let ctx = Ctx {
            engine: e,
            a,
            keys: a.key_names(),
            value_size: 50,
            values: ValueGen::new(50, 1),
            progress: &progress,
            abort: &abort,
        };
        let l = load(&ctx).unwrap();
        let r = transactions(&ctx).unwrap();
        (l, r)
    }

    #[test]
    fn every_workload_runs_and_finds_its_records() {
        for (w, threads) in [
            ("a", "1"),
            ("b", "2"),
            ("c", "1"),
            ("d", "3"),
            ("e", "2"),
            ("f", "1"),
        ] {
            let a = args(&["--workload", w, "--threads", threads]);
            let e = MemEngine::default();
            let (l, r) = phases(&e, &a);
            assert_eq!(l.hist[OpType::Insert as usize].count(), 2000, "{w}");
            assert_eq!(l.inserted, 2000);
            assert_eq!(r.operations(true), 3000, "{w}");
            assert_eq!(r.not_found, [0; 5], "{w}");
            assert_eq!(e.len() as u64, 2000 + r.inserted, "{w}");
            match w {
                "d" | "e" => assert!(r.inserted > 50, "{w}: {}", r.inserted),
                _ => assert_eq!(r.inserted, 0, "{w}"),
            }
            if w == "f" {
                let rmw = r.hist[OpType::ReadModifyWrite as usize].count();
                assert!(rmw > 1000);
                assert_eq!(r.hist[OpType::Update as usize].count(), rmw);
            }
            if w == "e" {
                assert!(r.hist[OpType::Scan as usize].count() > 2500);
            }
        }
    }

    #[test]
    fn an_ordered_load_writes_numbered_keys_that_every_operation_finds() {
        let a = args(&[
            "--workload",
            "e",
            "--insert-order",
            "ordered",
            "--zero-padding",
            "4",
        ]);
        let e = MemEngine::default();
        let (l, r) = phases(&e, &a);
        assert_eq!(l.inserted, 2000);
        // Record numbers, padded: user0000 ..= user1999 (the run's inserts go on from 2000).
        for n in [0, 1, 999, 1999] {
            let key = format!("user{n:04}");
            assert!(e.get(key.as_bytes()).unwrap().is_some(), "{key}");
        }
        let mut hashed = Vec::new();
        KeyNames::default().name(5, &mut hashed);
        assert!(
            e.get(&hashed).unwrap().is_none(),
            "no hashed key was written"
        );
        assert_eq!(r.not_found, [0; 5]);
        assert!(r.hist[OpType::Scan as usize].count() > 2500);
        assert_eq!(e.len() as u64, 2000 + r.inserted);
    }

    #[test]
    fn reads_of_an_unloaded_store_are_not_found() {
        let a = args(&["--workload", "c"]);
        let e = MemEngine::default();
        let progress = AtomicU64::new(0);
        let abort = AtomicBool::new(false);
        let ctx = Ctx {
            engine: &e,
            a: &a,
            keys: a.key_names(),
            value_size: 50,
            values: ValueGen::new(50, 1),
            progress: &progress,
            abort: &abort,
        };
        let r = transactions(&ctx).unwrap();
        assert_eq!(r.not_found[OpType::Read as usize], 3000);
    }
}
