//! `shale bench`: db_bench-compatible micro-benchmarks, with amplification beside speed.
//!
//! Flags keep db_bench's names (`--value_size` and `--value-size` both work, and booleans
//! take `--flag`, `--flag=1` or `--flag=false`). Each benchmark prints db_bench's result
//! line, then the amplification it caused (device bytes from `/proc/self/io`, the store's
//! size on disk) and the engine's own per-cause counters; `--json` adds one object per line.

pub mod histogram;
pub mod keys;
pub mod report;
pub mod workloads;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{ArgAction, Args};
use shale::Options;

use crate::engine::{Engine, EngineFlags, EngineKind};
use crate::json::BenchJson;
use crate::{CliError, CliResult, EXIT_WRONG_ANSWER};
use keys::{LiveSet, ValueGen, key_fits};
use report::{BenchResult, JsonSetting, dir_size, read_proc_io};
use workloads::{BENCHMARKS, Shared, Tally, ValueSizes, Workload};

impl BenchArgs {
    /// The value sizes `--value-size` and `--value-size-dist` ask for.
    ///
    /// # Errors
    /// A `--value-size-dist` that is neither `fixed` nor `uniform:MIN:MAX`.
    pub fn value_sizes(&self) -> CliResult<ValueSizes> {
        ValueSizes::parse(&self.value_size_dist, self.value_size).map_err(CliError::msg)
    }
}

/// Parse a db_bench boolean: `1`/`0`, `true`/`false`, `yes`/`no`.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("expected 1/0 or true/false, found {s:?}")),
    }
}

/// A fraction in (0, 1].
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let f: f64 = s.parse().map_err(|e| format!("{s:?}: {e}"))?;
    if f > 0.0 && f <= 1.0 {
        Ok(f)
    } else {
        Err(format!("expected a fraction in (0, 1], found {s}"))
    }
}

const DEFAULT_BENCHMARKS: &str =
    "fillseq,fillrandom,overwrite,readrandom,readseq,readreverse,compact,readrandom,stats";

/// `shale bench` flags.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Comma-separated benchmarks, run in order. Known: fillseq, fillrandom, overwrite,
    /// readrandom, readseq, readreverse, readmissing, seekrandom, deleterandom,
    /// readwhilewriting, updaterandom, updatescan, compact, flush, stats.
    #[arg(long, default_value = DEFAULT_BENCHMARKS)]
    pub benchmarks: String,
    /// Keys in the key space; writes of the fill benchmarks.
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,
    /// Operations of the read benchmarks (default: --num).
    #[arg(long)]
    pub reads: Option<u64>,
    /// Writes of `overwrite` (default: --num), as db_bench's `--writes`.
    #[arg(long)]
    pub writes: Option<u64>,
    /// `overwrite` draws its keys uniformly from a fixed random subset holding this fraction
    /// of the key space (1: every key), so repeated overwrites hit the same hot keys.
    #[arg(long = "overwrite-fraction", alias = "overwrite_fraction", default_value_t = 1.0,
          value_parser = parse_fraction)]
    pub overwrite_fraction: f64,
    /// Key size in bytes (keys are zero-padded decimal numbers).
    #[arg(long = "key-size", alias = "key_size", default_value_t = 16)]
    pub key_size: usize,
    /// Value size in bytes (with `--value-size-dist fixed`).
    #[arg(long = "value-size", alias = "value_size", default_value_t = 100)]
    pub value_size: usize,
    /// Value sizes: `fixed` (every value --value-size bytes) or `uniform:MIN:MAX` (each
    /// key's value MIN..=MAX bytes, drawn uniformly from the key number and --seed, the same
    /// for every write of the key so reads check it; LSM-trie's workload is uniform:1:200).
    /// Reports give the mean as the value size.
    #[arg(long = "value-size-dist", default_value = "fixed", value_name = "DIST")]
    pub value_size_dist: String,
    /// Worker threads, each doing its share of the operations.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub threads: u64,
    /// Store directory (default: a fresh directory under the temp dir, removed afterwards).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Keep the store in --db instead of wiping it first.
    #[arg(long = "use-existing-db", alias = "use_existing_db", value_name = "BOOL",
          num_args = 0..=1, require_equals = true, default_missing_value = "true",
          default_value = "false", value_parser = parse_bool, action = ArgAction::Set)]
    pub use_existing_db: bool,
    /// Print a latency histogram per benchmark.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", default_value = "false", value_parser = parse_bool,
          action = ArgAction::Set)]
    pub histogram: bool,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Make every write durable before it returns.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", default_value = "false", value_parser = parse_bool,
          action = ArgAction::Set)]
    pub sync: bool,
    /// Entries read after each seek of seekrandom.
    #[arg(long = "seek-nexts", alias = "seek_nexts", default_value_t = 0)]
    pub seek_nexts: usize,
    /// updatescan: percent of its --num operations that are scans (the rest update a
    /// random key).
    #[arg(long = "scan-percent", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(0..=100))]
    pub scan_percent: u32,
    /// updatescan: entries each scan reads.
    #[arg(long = "scan-length", default_value_t = 100)]
    pub scan_length: usize,
    /// Run the design's memory component alone: no log, no flush (full memtables are
    /// dropped), no compaction; puts, deletes and gets only (FloDB's memory-only setup).
    /// Reads are not checked, as dropped writes are gone.
    #[arg(long = "memory-only")]
    pub memory_only: bool,
    /// Print the designs this build can open, one per line, and exit.
    #[arg(long = "list-designs")]
    pub list_designs: bool,
    #[command(flatten)]
    pub store: EngineFlags,
    /// Append one JSON object per benchmark to FILE (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Write DIR/report.html: SVG charts of this run (see `shale report`).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

/// A sink for JSON lines: stdout or an appended file.
pub fn open_json(spec: Option<&str>) -> CliResult<Option<Box<dyn Write>>> {
    Ok(match spec {
        None => None,
        Some("-") => Some(Box::new(std::io::stdout())),
        Some(path) => Some(Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| CliError::msg(format!("cannot open --json {path}: {e}")))?,
        )),
    })
}

/// The store directory and whether this run made it up (so removes it afterwards).
pub fn bench_dir(db: Option<&Path>, use_existing: bool, tool: &str) -> CliResult<(PathBuf, bool)> {
    match db {
        Some(p) => Ok((p.to_path_buf(), false)),
        None if use_existing => Err(CliError::msg(
            "reusing a store (bench --use-existing-db, ycsb --phase run) needs --db DIR",
        )),
        None => Ok((
            std::env::temp_dir().join(format!("shale-{tool}-{}", std::process::id())),
            true,
        )),
    }
}

/// Remove a store directory before a fresh run, refusing directories that hold anything
/// other than a store, so a mistyped `--db $HOME` costs nothing.
pub fn wipe_store_dir(dir: &Path) -> CliResult<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(CliError::msg(format!("cannot read {}: {e}", dir.display()))),
    };
    let names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let has = |name: &str| names.iter().any(|n| n == name);
    // LevelDB-style stores (Shale, RocksDB) have CURRENT/LOCK/MANIFEST; fjall has neither
    // but its `version` file and `keyspaces` directory.
    let is_store = names
        .iter()
        .any(|n| n == "CURRENT" || n == "LOCK" || n.starts_with("MANIFEST"))
        || (has("version") && has("keyspaces"));
    if !names.is_empty() && !is_store {
        return Err(CliError::msg(format!(
            "refusing to wipe {}: it is not empty and holds no store (no CURRENT, LOCK or MANIFEST); \
             pass a new or empty directory, or --use-existing-db",
            dir.display()
        )));
    }
    std::fs::remove_dir_all(dir)
        .map_err(|e| CliError::msg(format!("cannot remove {}: {e}", dir.display())))
}

/// Operations done at moments of a run: `(seconds since the start, operations so far)`,
/// taken once a second and at the end, so a chart shows throughput over time and a stall
/// shows as a flat stretch.
pub type Timeline = Vec<(f64, u64)>;

/// Run `f` while a sampler reads `counter` once a second into a [`Timeline`] and, when
/// stderr is a terminal, shows it on a progress bar of `total` operations (a spinner when
/// unknown).
pub fn with_progress<T>(
    name: &str,
    total: Option<u64>,
    counter: &AtomicU64,
    f: impl FnOnce() -> T,
) -> (T, Timeline) {
    let bar = crate::progress::bar(name, total);
    // Redraw the bar a few times a second; without a bar, wake only to sample.
    let redraw = if bar.is_hidden() {
        Duration::from_secs(1)
    } else {
        Duration::from_millis(200)
    };
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let began = Instant::now();
    std::thread::scope(|s| {
        let sampler = s.spawn(move || {
            let mut timeline = Timeline::new();
            let mut next_sample = Duration::from_secs(1);
            loop {
                let now = began.elapsed();
                let wait = next_sample.saturating_sub(now).min(redraw);
                match stopped.recv_timeout(wait) {
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    _ => break,
                }
                let done = counter.load(Ordering::Relaxed);
                bar.set_position(done);
                let now = began.elapsed();
                if now >= next_sample {
                    timeline.push((now.as_secs_f64(), done));
                    next_sample += Duration::from_secs(1);
                }
            }
            bar.finish_and_clear();
            timeline
        });
        let r = f();
        let _ = stop.send(());
        let mut timeline = sampler.join().unwrap_or_default();
        timeline.push((
            began.elapsed().as_secs_f64(),
            counter.load(Ordering::Relaxed),
        ));
        (r, timeline)
    })
}

/// Operations a benchmark is expected to do, for the progress bar (`None`: unknown).
fn expected_ops(name: &str, num: u64, reads: u64, writes: u64) -> Option<u64> {
    match name {
        "fillseq" | "fillrandom" => Some(num),
        "overwrite" => Some(writes),
        "readrandom" | "readmissing" | "seekrandom" => Some(reads),
        "updatescan" => Some(num),
        _ => None,
    }
}

fn settings_block(
    a: &BenchArgs,
    reads: u64,
    memtable: usize,
    dir: &Path,
    engine_lines: &[String],
) -> String {
    let mbf = |n: f64| n / 1048576.0;
    let sizes = a.value_sizes().unwrap_or(ValueSizes::Fixed(a.value_size));
    let value = sizes.mean();
    let entry = a.key_size as f64 + value;
    // The generated values compress to about half (as db_bench's); without compression
    // the files hold them whole.
    let compressing = a.store.compression != "none";
    let stored_value = if compressing { value * 0.5 } else { value };
    let each = match sizes.describe() {
        Some(d) => format!("{value:.1} bytes on average ({d})"),
        None => format!("{} bytes each", a.value_size),
    };
    let compressed = a.key_size as f64 + stored_value;
    let mut s = String::new();
    s.push_str(&format!(
        "shale:      version {}\n",
        env!("CARGO_PKG_VERSION")
    ));
    s.push_str(&format!("Keys:       {} bytes each\n", a.key_size));
    if compressing {
        s.push_str(&format!(
            "Values:     {each} ({:.0} bytes after compression)\n",
            value / 2.0
        ));
    } else {
        s.push_str(&format!(
            "Values:     {each} (stored uncompressed; they would compress to about {:.0})\n",
            value / 2.0
        ));
    }
    s.push_str(&format!("Entries:    {}\n", a.num));
    s.push_str(&format!("Reads:      {reads}\n"));
    if a.writes.is_some() || a.overwrite_fraction < 1.0 {
        s.push_str(&format!(
            "Overwrites: {} over {:.0}% of the keys\n",
            a.writes.unwrap_or(a.num),
            a.overwrite_fraction * 100.0
        ));
    }
    s.push_str(&format!(
        "RawSize:    {:.1} MB (estimated)\n",
        mbf(entry * a.num as f64)
    ));
    s.push_str(&format!(
        "FileSize:   {:.1} MB (estimated)\n",
        mbf(compressed * a.num as f64)
    ));
    s.push_str(&format!("Engine:     {}\n", a.store.engine.name()));
    if a.store.engine == EngineKind::Shale {
        s.push_str(&format!(
            "Design:     {} ({} settings)\n",
            a.store.design,
            a.store.settings.name()
        ));
    }
    s.push_str(&format!("Memtable:   {:.1} MB\n", mbf(memtable as f64)));
    s.push_str(&format!(
        "Cache:      {:.1} MB\n",
        mbf(a.store.cache_size as f64)
    ));
    s.push_str(&format!("Compression: {}\n", a.store.compression));
    s.push_str(&format!("Bloom bits: {}\n", a.store.bloom_bits()));
    if let Some(n) = a.store.block_size {
        s.push_str(&format!("Block size: {n}\n"));
    }
    s.push_str(&format!("Threads:    {}\n", a.threads));
    s.push_str(&format!("Sync:       {}\n", a.sync));
    s.push_str(&format!("DB path:    [{}]\n", dir.display()));
    for l in engine_lines {
        s.push_str(l);
        s.push('\n');
    }
    s.push_str(&"-".repeat(48));
    s.push('\n');
    s
}

/// Print the designs `Options::preset` accepts, one per line.
pub fn list_designs(out: &mut dyn Write) -> std::io::Result<()> {
    for p in shale::options::PRESETS {
        if Options::preset(p).is_ok() {
            writeln!(out, "{p}")?;
        }
    }
    Ok(())
}

/// Validate the benchmark list.
pub fn parse_benchmarks(list: &str) -> CliResult<Vec<String>> {
    let names: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    for n in &names {
        if !BENCHMARKS.contains(&n.as_str()) {
            return Err(CliError::msg(format!(
                "unknown benchmark {n:?}; known: {}",
                BENCHMARKS.join(",")
            )));
        }
    }
    Ok(names)
}

/// Whether benchmark `name` reads in key order (seeks and scans).
fn is_scan(name: &str) -> bool {
    matches!(
        name,
        "readseq" | "readreverse" | "seekrandom" | "updatescan"
    )
}

fn op_name(bench: &str) -> &'static str {
    match bench {
        "readrandom" | "readmissing" | "readwhilewriting" => "read",
        "readseq" | "readreverse" => "next",
        "seekrandom" => "seek",
        "updaterandom" => "update",
        "updatescan" => "operation",
        "deleterandom" => "delete",
        "compact" => "compaction",
        "flush" => "flush",
        _ => "write",
    }
}

/// Run `shale bench`.
pub fn run(a: &BenchArgs) -> CliResult {
    if a.list_designs {
        let mut out = std::io::stdout().lock();
        list_designs(&mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let names = parse_benchmarks(&a.benchmarks)?;
    a.value_sizes()?;
    if !key_fits(a.num, a.key_size) {
        return Err(CliError::msg(format!(
            "--key-size {} is too small for --num {}: keys are zero-padded decimal numbers",
            a.key_size, a.num
        )));
    }
    let mut config = a.store.config()?;
    config.memory_only = a.memory_only;
    let reads = a.reads.unwrap_or(a.num);
    let (dir, temporary) = bench_dir(a.db.as_deref(), a.use_existing_db, "bench")?;
    if !a.use_existing_db {
        wipe_store_dir(&dir)?;
    }
    let mut json = open_json(a.json.as_deref())?;
    let eng = crate::engines::open(a.store.engine, &dir, &config)?;
    let memtable = config.memtable_bytes(a.store.engine);
    print!(
        "{}",
        settings_block(a, reads, memtable, &dir, &eng.describe())
    );
    std::io::stdout().flush()?;
    let mut lines = Vec::new();
    let outcome = run_all(a, &names, reads, &dir, eng.as_ref(), &mut json, &mut lines);
    let closed = eng.close();
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    // A report of what ran, even when a benchmark found a wrong answer.
    if let Some(out) = &a.report
        && !lines.is_empty()
    {
        let path = crate::plots::write_report(out, crate::plots::group_lines("bench", lines))?;
        eprintln!("report: {}", path.display());
    }
    let code = outcome?;
    closed?;
    Ok(code)
}

fn run_all(
    a: &BenchArgs,
    names: &[String],
    reads: u64,
    dir: &Path,
    eng: &dyn Engine,
    json: &mut Option<Box<dyn Write>>,
    lines: &mut Vec<BenchJson>,
) -> CliResult {
    let mut w = Workload {
        num: a.num,
        reads,
        key_size: a.key_size,
        value_sizes: a.value_sizes()?,
        threads: a.threads as usize,
        seed: a.seed,
        sync: a.sync,
        seek_nexts: a.seek_nexts,
        round: 0,
        writes: a.writes.unwrap_or(a.num),
        hot_keys: workloads::hot_keys(a.num, a.overwrite_fraction),
        scan_percent: a.scan_percent,
        scan_length: a.scan_length,
    };
    let live = LiveSet::new(a.num);
    // On a store this run did not fill, assume the usual db_bench setup (every key written)
    // for space amplification, but check no read against it.
    let live_known = !a.use_existing_db && !a.memory_only;
    if !live_known {
        live.fill();
    }
    let values = ValueGen::new(w.value_sizes.max(), a.seed);
    let design = a.store.design_name();
    let dist = w.value_sizes.describe();
    let setting = JsonSetting {
        num: a.num,
        threads: a.threads,
        key_size: Some(a.key_size as u64),
        value_size: w.value_sizes.mean().round() as u64,
        value_size_dist: dist.as_deref(),
        ..JsonSetting::for_engine(&a.store, &design)
    };
    let mut out = std::io::stdout();
    for (round, name) in names.iter().enumerate() {
        w.round = round as u64;
        if name == "stats" {
            writeln!(out, "{}", eng.stats_text().trim_end())?;
            continue;
        }
        if is_scan(name) && !eng.supports_scans() {
            writeln!(
                out,
                "{name:<12} : skipped: unsupported by design {design}: it places keys by hash \
                 and answers point operations only (no scans or seeks)"
            )?;
            continue;
        }
        let progress = AtomicU64::new(0);
        let abort = AtomicBool::new(false);
        let shared = Shared {
            engine: eng,
            live: &live,
            live_known,
            progress: &progress,
            abort: &abort,
        };
        let io_before = read_proc_io();
        let counters_before = eng.counters();
        let began = Instant::now();
        let total = expected_ops(name, a.num, reads, w.writes);
        let (tally, timeline) = with_progress(name, total, &progress, || -> CliResult<Tally> {
            if name == "compact" || name == "flush" {
                let t0 = Instant::now();
                if name == "compact" {
                    eng.compact()?;
                } else {
                    eng.flush()?;
                }
                let mut t = Tally {
                    ops: 1,
                    thread_seconds: t0.elapsed().as_secs_f64(),
                    ..Default::default()
                };
                t.hist.add(t0.elapsed().as_nanos() as u64);
                progress.store(1, Ordering::Relaxed);
                Ok(t)
            } else {
                workloads::run(name, &shared, &w, &values)
            }
        });
        let tally = tally?;
        let seconds = began.elapsed().as_secs_f64();
        eng.sync_to_os()?;
        let io = match (io_before, read_proc_io()) {
            (Some(b), Some(a)) => Some(a.since(&b)),
            _ => None,
        };
        let engine_diff = match (counters_before, eng.counters()) {
            (Some(b), Some(a)) => Some(a.since(&b)),
            _ => None,
        };
        let live_keys = live.count();
        let result = BenchResult {
            name: name.clone(),
            ops: tally.ops,
            seconds,
            thread_seconds: tally.thread_seconds,
            bytes: tally.bytes,
            found: tally.is_read.then_some((tally.found, tally.lookups)),
            hist: tally.hist.clone(),
            parts: tally.parts.clone(),
            user_bytes_written: tally.user_bytes_written,
            io,
            db_size: dir_size(dir),
            live_bytes: (live_keys as f64 * (a.key_size as f64 + w.value_sizes.mean())) as u64,
            live_keys,
            engine: engine_diff,
            timeline,
        };
        writeln!(out, "{}", result.line())?;
        for l in result.part_lines() {
            writeln!(out, "{l}")?;
        }
        if a.histogram {
            write!(out, "{}", result.hist.to_text(op_name(name)))?;
            for (kind, h) in &result.parts {
                write!(out, "{}", h.to_text(kind))?;
            }
        }
        writeln!(out, "{}", result.amplification_line())?;
        if let Some(l) = result.engine_line(a.store.engine.name()) {
            writeln!(out, "{l}")?;
        }
        out.flush()?;
        let line = result.to_json(&setting);
        if let Some(j) = json.as_mut() {
            writeln!(j, "{}", crate::json::to_line(&line)?)?;
            j.flush()?;
        }
        lines.push(line);
        if live_known && let Some(problem) = tally.wrong_answer(name) {
            eprintln!("error: {problem}");
            return Ok(ExitCode::from(EXIT_WRONG_ANSWER));
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bools_parse_like_db_bench() {
        assert_eq!(parse_bool("1"), Ok(true));
        assert_eq!(parse_bool("TRUE"), Ok(true));
        assert_eq!(parse_bool("0"), Ok(false));
        assert_eq!(parse_bool("false"), Ok(false));
        assert!(parse_bool("2").is_err());
    }

    #[test]
    fn benchmark_lists_are_checked() {
        assert_eq!(
            parse_benchmarks("fillseq, readrandom,,stats").unwrap(),
            vec!["fillseq", "readrandom", "stats"]
        );
        assert!(parse_benchmarks("fillseq,fill100K").is_err());
        assert!(parse_benchmarks(DEFAULT_BENCHMARKS).is_ok());
    }

    #[test]
    fn designs_listed_are_openable() {
        let mut out = Vec::new();
        list_designs(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.lines().any(|l| l == "leveldb"), "{text}");
        for l in text.lines() {
            assert!(Options::preset(l).is_ok(), "{l}");
        }
    }

    #[test]
    fn wipe_refuses_foreign_directories() {
        let base = std::env::temp_dir().join(format!("shale-cli-wipe-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        // Missing: fine.
        wipe_store_dir(&base).unwrap();
        // A store: removed.
        std::fs::create_dir_all(&base).unwrap();
        std::fs::write(base.join("CURRENT"), b"MANIFEST-000001\n").unwrap();
        std::fs::write(base.join("000003.sst"), b"x").unwrap();
        wipe_store_dir(&base).unwrap();
        assert!(!base.exists());
        // A fjall database: removed.
        std::fs::create_dir_all(base.join("keyspaces")).unwrap();
        std::fs::write(base.join("version"), b"FJL3").unwrap();
        std::fs::write(base.join("0.jnl"), b"x").unwrap();
        wipe_store_dir(&base).unwrap();
        assert!(!base.exists());
        // Something else: kept.
        std::fs::create_dir_all(&base).unwrap();
        std::fs::write(base.join("notes.txt"), b"precious").unwrap();
        let e = wipe_store_dir(&base).unwrap_err().to_string();
        assert!(e.contains("refusing"), "{e}");
        assert!(base.join("notes.txt").exists());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn default_dir_is_temporary() {
        let (d, tmp) = bench_dir(None, false, "bench").unwrap();
        assert!(tmp && d.starts_with(std::env::temp_dir()));
        assert!(bench_dir(None, true, "bench").is_err());
        let (d, tmp) = bench_dir(Some(Path::new("/x")), true, "bench").unwrap();
        assert!(!tmp && d == Path::new("/x"));
    }
}

#[cfg(test)]
mod engine_tests {
    use super::*;
    use crate::engine::mem::MemEngine;
    use clap::Parser;
    use serde_json::{Value, json};
    use std::sync::{Arc, Mutex};

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        a: BenchArgs,
    }

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn bench(e: &MemEngine, list: &str) -> (ExitCode, Vec<Value>) {
        bench_with(e, list, &[])
    }

    fn bench_with(e: &MemEngine, list: &str, extra: &[&str]) -> (ExitCode, Vec<Value>) {
        let benchmarks = format!("--benchmarks={list}");
        let args = [
            "bench",
            &benchmarks,
            "--num=3000",
            "--threads=2",
            "--histogram",
        ];
        let a = Wrap::try_parse_from(args.iter().chain(extra)).unwrap().a;
        let names = parse_benchmarks(&a.benchmarks).unwrap();
        let sink = Sink::default();
        let mut json: Option<Box<dyn Write>> = Some(Box::new(sink.clone()));
        let dir = std::env::temp_dir().join("shale-cli-no-such-dir");
        let code = run_all(&a, &names, 3000, &dir, e, &mut json, &mut Vec::new()).unwrap();
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (code, lines)
    }

    #[test]
    fn a_correct_store_passes_and_every_benchmark_writes_json() {
        let e = MemEngine::default();
        let (code, lines) = bench(
            &e,
            "fillrandom,readrandom,readseq,seekrandom,deleterandom,readrandom,compact,flush,stats",
        );
        assert_eq!(code, ExitCode::SUCCESS);
        let names: Vec<&Value> = lines.iter().filter_map(|l| l.get("benchmark")).collect();
        assert_eq!(names.len(), 8, "stats writes no JSON line");
        assert_eq!(lines[0].get("ops"), Some(&json!(3000)));
        assert_eq!(lines[0].get("found"), Some(&Value::Null));
        assert_eq!(lines[1].get("found"), Some(&json!(3000)));
        assert_eq!(lines[0].get("space_amp"), Some(&json!(0.0)));
        assert_eq!(lines[0].get("engine_write_amp"), Some(&json!(1.0)));
    }

    #[test]
    fn a_value_size_distribution_is_written_and_checked() {
        let e = MemEngine::default();
        let (code, lines) = bench_with(
            &e,
            "fillrandom,readrandom",
            &["--value-size-dist", "uniform:1:50"],
        );
        assert_eq!(code, ExitCode::SUCCESS);
        for l in &lines {
            assert_eq!(l.get("value_size_dist"), Some(&json!("uniform:1:50")));
            assert_eq!(l.get("value_size"), Some(&json!(26)));
        }
        assert_eq!(lines[1].get("found"), Some(&json!(3000)));
        let written = lines[0]
            .get("user_bytes_written")
            .and_then(Value::as_u64)
            .unwrap();
        // 3000 keys of 16 bytes and values of 25.5 bytes on average.
        assert!(
            (3000 * 16 + 3000 * 22..3000 * 16 + 3000 * 29).contains(&written),
            "{written}"
        );
        let (_, fixed) = bench(&e, "fillrandom");
        assert_eq!(fixed[0].get("value_size_dist"), None);
        let bad = Wrap::try_parse_from(["bench", "--value-size-dist", "uniform:9:1"])
            .unwrap()
            .a;
        assert!(bad.value_sizes().is_err());
    }

    #[test]
    fn block_size_defaults_to_the_design_s_and_is_checked() {
        let block = |args: &[&str]| {
            let c = Wrap::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
                .unwrap()
                .a
                .store
                .config()
                .unwrap();
            crate::engine::shale_options(&c).map(|o| o.table.block_size)
        };
        assert_eq!(block(&["--design", "pebblesdb"]).unwrap(), 4096);
        assert_eq!(
            block(&["--design", "pebblesdb", "--block-size", "16384"]).unwrap(),
            16384
        );
        // An out-of-range size is refused with the option's name, as any bad option.
        let c = Wrap::try_parse_from(["bench", "--design", "leveldb", "--block-size", "8"])
            .unwrap()
            .a
            .store
            .config()
            .unwrap();
        let e = crate::engine::shale_options(&c).unwrap_err().to_string();
        assert!(e.contains("block_size 8"), "{e}");
    }

    #[test]
    fn bloom_bits_default_to_the_design_s() {
        let bits = |args: &[&str]| {
            Wrap::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
                .unwrap()
                .a
                .store
                .bloom_bits()
        };
        assert_eq!(bits(&[]), 10);
        assert_eq!(bits(&["--design", "lsm-trie"]), 16);
        assert_eq!(bits(&["--design", "lsm-trie", "--bloom-bits", "10"]), 10);
        assert_eq!(bits(&["--design", "leveldb", "--bloom_bits", "12"]), 12);
        let c = Wrap::try_parse_from(["bench", "--design", "lsm-trie"])
            .unwrap()
            .a
            .store
            .config()
            .unwrap();
        assert_eq!(
            crate::engine::shale_options(&c)
                .unwrap()
                .table
                .bloom_bits_per_key,
            16
        );
    }

    #[test]
    fn a_lossy_store_fails_with_status_3() {
        let e = MemEngine::lossy(101);
        let (code, lines) = bench(&e, "fillseq,readrandom,readseq");
        assert_eq!(code, ExitCode::from(EXIT_WRONG_ANSWER));
        assert_eq!(lines.len(), 2, "stops after the failing benchmark");
    }
}
