//! `shale stress`: a db_stress-like workload whose every write is recorded in an
//! expected-state file, so that a run killed at any moment (`kill -9`) can be verified
//! afterwards with `--verify-only`, or by the next run, which verifies before it writes.
//!
//! # The expected-state file
//!
//! `DIR.expected` beside the store (or `--expected PATH`), text, one record per line:
//!
//! ```text
//! shale-stress 1 keys=2000      header
//! n 81234                       the next version number to use
//! s 17 80012                    snapshot: key 17 holds version 80012 (absent keys: no line)
//! run 3 seed 42                 a run began, after verifying the snapshot
//! w 55 p 17 81234               intent of write 55: put version 81234 of key 17
//! w 56 d 4 81235                intent of write 56: delete key 4 (as version 81235)
//! a 55                          write 55 was acknowledged by the store
//! ```
//!
//! A write is logged (one `write(2)` per op) *before* it is issued and acknowledged after
//! the store returns. A `kill -9` loses no bytes the process handed to the kernel, so the
//! file is exact up to a torn last line, which is ignored (a torn intent was never issued).
//! Each run starts by verifying, then atomically replaces the file with a snapshot of the
//! verified state (write `.tmp`, rename).
//!
//! # What is checked
//!
//! Writes to one key are serialized by a per-key lock held from intent to acknowledgement,
//! so the log orders each key's writes as the store applied them. After a kill, a key must
//! hold the result of its last acknowledged write or of a later unacknowledged one; for a
//! process crash that holds for synced and unsynced writes alike. Every value encodes its
//! key and version and is compared byte for byte, so a wrong value, a value never written
//! to the key and a resurrected delete are all caught. An unacknowledged batch must be
//! applied whole or not at all. A full scan must agree with the point reads. While running,
//! every read of a key (under its lock) must return exactly the last write.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use shale::{Db, IterOptions, Options, WriteBatch, WriteOptions};

use crate::{CliError, CliResult, EXIT_WRONG_ANSWER};

/// A mutex that ignores poisoning: a panicking worker ends the process anyway.
struct Mutex<T>(std::sync::Mutex<T>);

impl<T> Mutex<T> {
    fn new(v: T) -> Self {
        Mutex(std::sync::Mutex::new(v))
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, T> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `shale stress`.
#[derive(Args, Debug)]
pub struct StressArgs {
    /// Directory of the store.
    #[arg(long)]
    pub db: PathBuf,
    /// Design preset.
    #[arg(long, default_value = "leveldb")]
    pub design: String,
    /// Operations to run, over all threads.
    #[arg(long, default_value_t = 100_000)]
    pub ops: u64,
    /// Stop after this many seconds even if operations remain.
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Worker threads.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub threads: u64,
    /// Size of the key space (fixed when the expected-state file is created).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub keys: u32,
    /// Seed of the operation stream (mixed with the run number, so reruns differ).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Only verify the store against the expected state, then exit.
    #[arg(long)]
    pub verify_only: bool,
    /// Make one write in N durable (`sync`); 0 never syncs.
    #[arg(long, default_value_t = 10)]
    pub sync_every: u64,
    /// Print `progress N` after every N operations.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub progress_every: u64,
    /// Memtable size in bytes: small values make flushes and compactions frequent.
    #[arg(long, default_value_t = 256 * 1024)]
    pub write_buffer_size: usize,
    /// The expected-state file (default: the store's path with `.expected` appended).
    #[arg(long)]
    pub expected: Option<PathBuf>,
}

/// The key for index `k`.
fn key(k: u32) -> Vec<u8> {
    format!("stress{k:08}").into_bytes()
}

fn parse_key(b: &[u8]) -> Option<u32> {
    let d = b.strip_prefix(b"stress")?;
    if d.len() != 8 || !d.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(d).ok()?.parse().ok()
}

/// A 64-bit mix (splitmix64).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The value of version `ver` of key `k`: it names both, and its length and filler derive
/// from them, so any other value (a torn, stale or foreign one) differs in some byte.
fn value(k: u32, ver: u64) -> Vec<u8> {
    let h = mix((u64::from(k) << 40) ^ ver);
    let len = if h.is_multiple_of(64) {
        2000
    } else {
        24 + (h % 100) as usize
    };
    let mut v = format!("{k:08}.{ver:012x}.").into_bytes();
    let mut x = h;
    while v.len() < len {
        x = mix(x);
        v.extend(x.to_le_bytes().iter().map(|b| b'a' + b % 26));
    }
    v.truncate(len);
    v
}

/// The version a value of key `k` encodes, if it is exactly that version's value.
fn parse_value(k: u32, v: &[u8]) -> Option<u64> {
    let ver = u64::from_str_radix(std::str::from_utf8(v.get(9..21)?).ok()?, 16).ok()?;
    (value(k, ver) == v).then_some(ver)
}

/// One logged write to one key.
#[derive(Clone, Copy, Debug)]
struct Op {
    id: u64,
    ver: u64,
    put: bool,
}

impl Op {
    fn result(self) -> Option<u64> {
        self.put.then_some(self.ver)
    }
}

/// The expected-state file, parsed.
#[derive(Debug, Default)]
struct Expected {
    keys: u32,
    next_ver: u64,
    runs: u64,
    /// Per key: the snapshot's state, then the writes logged since, in order.
    base: Vec<Option<u64>>,
    ops: Vec<Vec<Op>>,
    acked: HashSet<u64>,
    /// Keys of each write, for batch atomicity.
    writes: HashMap<u64, Vec<u32>>,
}

impl Expected {
    fn fresh(keys: u32) -> Expected {
        Expected {
            keys,
            next_ver: 1,
            base: vec![None; keys as usize],
            ops: vec![Vec::new(); keys as usize],
            ..Expected::default()
        }
    }

    fn load(path: &Path) -> CliResult<Expected> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::msg(format!("cannot read {}: {e}", path.display())))?;
        // A kill can tear the last line; everything before it is whole.
        let whole = text.rfind('\n').map_or("", |i| &text[..i]);
        let bad = |n: usize, l: &str| {
            CliError::msg(format!(
                "{}: line {}: bad record {l:?}",
                path.display(),
                n + 1
            ))
        };
        let mut lines = whole.lines().enumerate();
        let keys = match lines.next() {
            Some((_, l)) if l.starts_with("shale-stress 1 keys=") => {
                l[20..].parse::<u32>().map_err(|_| bad(0, l))?
            }
            _ => {
                return Err(CliError::msg(format!(
                    "{} is not an expected-state file",
                    path.display()
                )));
            }
        };
        let mut e = Expected::fresh(keys);
        for (n, l) in lines {
            let f: Vec<&str> = l.split(' ').collect();
            let num = |i: usize| {
                f.get(i)
                    .and_then(|s| s.parse::<u64>().ok())
                    .ok_or_else(|| bad(n, l))
            };
            let key_at = |i: usize| {
                num(i).and_then(|k| {
                    u32::try_from(k)
                        .ok()
                        .filter(|&k| k < keys)
                        .ok_or_else(|| bad(n, l))
                })
            };
            match f.first().copied() {
                Some("n") => e.next_ver = e.next_ver.max(num(1)?),
                Some("s") => {
                    let (k, ver) = (key_at(1)?, num(2)?);
                    e.base[k as usize] = Some(ver);
                    e.next_ver = e.next_ver.max(ver + 1);
                }
                Some("run") => e.runs = e.runs.max(num(1)?),
                Some("w") => {
                    let (id, k, ver) = (num(1)?, key_at(3)?, num(4)?);
                    let put = match f.get(2).copied() {
                        Some("p") => true,
                        Some("d") => false,
                        _ => return Err(bad(n, l)),
                    };
                    e.ops[k as usize].push(Op { id, ver, put });
                    e.writes.entry(id).or_default().push(k);
                    e.next_ver = e.next_ver.max(ver + 1);
                }
                Some("a") => {
                    e.acked.insert(num(1)?);
                }
                _ => return Err(bad(n, l)),
            }
        }
        Ok(e)
    }
}

/// What verification found.
#[derive(Debug, Default)]
struct Verified {
    /// The state of every key as read from the store.
    state: Vec<Option<u64>>,
    present: usize,
    pending: usize,
    pending_applied: usize,
    pending_dropped: usize,
    problems: Vec<String>,
}

/// Check the store against the expected state; see the module docs for the rules.
fn verify(db: &Db, e: &Expected) -> CliResult<Verified> {
    let mut v = Verified {
        state: vec![None; e.keys as usize],
        ..Verified::default()
    };
    // Per unacknowledged write: evidence that it was applied, or that it was not.
    let mut applied: HashSet<u64> = HashSet::new();
    let mut dropped: HashSet<u64> = HashSet::new();
    for k in 0..e.keys {
        let got = match db.get(&key(k))? {
            None => None,
            Some(bytes) => match parse_value(k, &bytes) {
                Some(ver) => Some(ver),
                None => {
                    v.problems.push(format!(
                        "key {k}: wrong value {:?}",
                        String::from_utf8_lossy(&bytes[..bytes.len().min(40)])
                    ));
                    continue;
                }
            },
        };
        v.state[k as usize] = got;
        v.present += usize::from(got.is_some());
        let ops = &e.ops[k as usize];
        let last_acked = ops.iter().rposition(|o| e.acked.contains(&o.id));
        let committed = last_acked.map_or(e.base[k as usize], |i| ops[i].result());
        let pending = &ops[last_acked.map_or(0, |i| i + 1)..];
        v.pending += pending.len();
        // The pending writes whose result is what the store holds.
        let explains: Vec<usize> = (0..pending.len())
            .filter(|&i| pending[i].result() == got)
            .collect();
        if got != committed && explains.is_empty() {
            let ever = ops.iter().any(|o| o.result() == got) || e.base[k as usize] == got;
            let what = match (got, committed) {
                (Some(g), _) if !ever => format!("holds version {g}, never written to it"),
                (Some(g), None) => format!("holds version {g}, but it was deleted (resurrected)"),
                (Some(g), Some(c)) => {
                    format!("holds version {g}, but acknowledged version {c} was lost")
                }
                (None, c) => format!("is missing; acknowledged version {c:?} was lost"),
            };
            v.problems.push(format!("key {k} {what}"));
            continue;
        }
        // A single explaining write took effect; writes after the last explaining one did
        // not (each would have replaced the value), nor did any if none explains it.
        if let ([i], true) = (explains.as_slice(), got != committed) {
            applied.insert(pending[*i].id);
        }
        let from = explains.last().map_or(0, |i| i + 1);
        for o in &pending[from..] {
            dropped.insert(o.id);
        }
    }
    for id in applied.intersection(&dropped) {
        v.problems.push(format!(
            "batch {id} (keys {:?}) was applied to some keys but not to others",
            e.writes.get(id).map(Vec::as_slice).unwrap_or_default()
        ));
    }
    v.pending_applied = applied.len();
    v.pending_dropped = dropped.len();
    // A scan must see exactly what the point reads saw (a design without scans, lsm-trie,
    // is checked by its point reads alone).
    if !db.supports_scans() {
        return Ok(v);
    }
    let mut scanned = 0usize;
    for r in db.iter(IterOptions::default())? {
        let (kb, val) = r?;
        scanned += 1;
        match parse_key(&kb).filter(|&k| k < e.keys) {
            Some(k)
                if parse_value(k, &val) == v.state[k as usize] && v.state[k as usize].is_some() => {
            }
            Some(k) => v
                .problems
                .push(format!("scan: key {k} disagrees with its get")),
            None => v.problems.push(format!(
                "scan: foreign key {:?}",
                String::from_utf8_lossy(&kb)
            )),
        }
    }
    if scanned != v.present {
        v.problems
            .push(format!("scan saw {scanned} keys, gets found {}", v.present));
    }
    Ok(v)
}

/// The expected-state file, opened for appending; one `write(2)` per record.
struct Log(Mutex<File>);

impl Log {
    fn append(&self, s: &str) -> CliResult<()> {
        self.0.lock().write_all(s.as_bytes())?;
        Ok(())
    }
}

/// Replace the expected-state file with a snapshot of `state`, atomically.
fn write_snapshot(
    path: &Path,
    keys: u32,
    next_ver: u64,
    state: &[Option<u64>],
    run: u64,
    seed: u64,
) -> CliResult<Log> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut s = format!("shale-stress 1 keys={keys}\nn {next_ver}\n");
    for (k, ver) in state.iter().enumerate() {
        if let Some(ver) = ver {
            s.push_str(&format!("s {k} {ver}\n"));
        }
    }
    s.push_str(&format!("run {run} seed {seed}\n"));
    let mut f = File::create(&tmp)?;
    f.write_all(s.as_bytes())?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    let f = std::fs::OpenOptions::new().append(true).open(path)?;
    Ok(Log(Mutex::new(f)))
}

fn report(v: &Verified) -> CliResult<Option<ExitCode>> {
    println!(
        "verified: {} keys present, {} unacknowledged writes ({} applied, {} not applied)",
        v.present, v.pending, v.pending_applied, v.pending_dropped
    );
    if v.problems.is_empty() {
        return Ok(None);
    }
    for p in v.problems.iter().take(20) {
        eprintln!("error: {p}");
    }
    eprintln!("error: verification found {} problems", v.problems.len());
    Ok(Some(ExitCode::from(EXIT_WRONG_ANSWER)))
}

/// Run `shale stress`.
pub fn run(a: &StressArgs) -> CliResult {
    let expected_path = a.expected.clone().unwrap_or_else(|| {
        let mut p = a.db.as_os_str().to_owned();
        p.push(".expected");
        PathBuf::from(p)
    });
    let mut o = Options::preset(&a.design)?;
    o.write_buffer_size = a.write_buffer_size;
    o.target_file_size = (a.write_buffer_size as u64).max(4096);
    o.max_bytes_for_level_base = 4 * o.target_file_size;
    // With a value log: separate every value and rotate segments often, so that kills land
    // in pointer reads, rotation, flushes of the head and garbage collection.
    o.min_separated_value_size = 0;
    o.vlog_segment_size = 64 * 1024;
    o.vlog_gc_ratio = 0.3;
    let exists = expected_path.exists();
    if a.verify_only {
        if !exists {
            return Err(CliError::msg(format!(
                "no expected state at {}",
                expected_path.display()
            )));
        }
        let e = Expected::load(&expected_path)?;
        o.create_if_missing = false;
        let db = Db::open(&a.db, o)?;
        let v = verify(&db, &e)?;
        db.close()?;
        return Ok(report(&v)?.unwrap_or(ExitCode::SUCCESS));
    }
    if !exists && a.db.join("CURRENT").exists() {
        return Err(CliError::msg(format!(
            "{} holds a store but {} is missing: stress needs a store it created",
            a.db.display(),
            expected_path.display()
        )));
    }
    let e = if exists {
        Expected::load(&expected_path)?
    } else {
        Expected::fresh(a.keys)
    };
    let db = Db::open(&a.db, o)?;
    println!("recovered");
    let v = verify(&db, &e)?;
    if let Some(code) = report(&v)? {
        return Ok(code);
    }
    let run = e.runs + 1;
    let seed = mix(a.seed ^ run.wrapping_mul(0x2545_f491_4f6c_dd1d));
    let log = write_snapshot(&expected_path, e.keys, e.next_ver, &v.state, run, seed)?;
    println!("run {run} seed {seed}");
    let w = Workload {
        db: &db,
        log,
        keys: e.keys,
        state: v.state.iter().map(|&s| Mutex::new(s)).collect(),
        next_ver: AtomicU64::new(e.next_ver),
        next_id: AtomicU64::new(1),
        ops_started: AtomicU64::new(0),
        total: a.ops,
        deadline: a
            .seconds
            .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0))),
        stop: AtomicBool::new(false),
        progress_every: a.progress_every,
        sync_every: a.sync_every,
        counts: Mutex::new(BTreeMap::new()),
        failure: Mutex::new(None),
    };
    let started = Instant::now();
    std::thread::scope(|s| {
        for t in 0..a.threads {
            let w = &w;
            s.spawn(move || w.thread(mix(seed ^ t)));
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    if let Some(f) = w.failure.lock().take() {
        eprintln!("error: {f}");
        return Ok(ExitCode::from(EXIT_WRONG_ANSWER));
    }
    let counts = w.counts.lock().clone();
    let done: u64 = counts.values().sum();
    let detail: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!("done: {done} ops in {elapsed:.1}s ({})", detail.join(", "));
    // Every write was acknowledged: the store must hold exactly the model.
    let state: Vec<Option<u64>> = w.state.iter().map(|m| *m.lock()).collect();
    let mut e = Expected::fresh(w.keys);
    e.base = state;
    let v = verify(&db, &e)?;
    db.close()?;
    Ok(report(&v)?.unwrap_or(ExitCode::SUCCESS))
}

struct Workload<'a> {
    db: &'a Db,
    log: Log,
    keys: u32,
    /// Per key, under its lock: the version it holds (`None`: absent).
    state: Vec<Mutex<Option<u64>>>,
    next_ver: AtomicU64,
    next_id: AtomicU64,
    ops_started: AtomicU64,
    total: u64,
    deadline: Option<Instant>,
    stop: AtomicBool,
    progress_every: u64,
    sync_every: u64,
    counts: Mutex<BTreeMap<&'static str, u64>>,
    failure: Mutex<Option<String>>,
}

impl Workload<'_> {
    fn thread(&self, seed: u64) {
        let mut rng = seed | 1;
        let mut next = move || {
            rng = mix(rng);
            rng
        };
        let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
        while !self.stop.load(Ordering::Relaxed) {
            let n = self.ops_started.fetch_add(1, Ordering::Relaxed);
            if n >= self.total || self.deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            let r = next();
            let k = (next() % u64::from(self.keys)) as u32;
            let sync = self.sync_every > 0 && next() % self.sync_every == 0;
            let (name, result) = match r % 1000 {
                0..=399 => ("put", self.write(&[(k, true)], sync)),
                400..=499 => ("delete", self.write(&[(k, false)], sync)),
                500..=599 => {
                    let mut ks: Vec<(u32, bool)> = (0..2 + next() % 5)
                        .map(|_| ((next() % u64::from(self.keys)) as u32, next() % 4 != 0))
                        .collect();
                    ks.sort_unstable_by_key(|&(k, _)| k);
                    ks.dedup_by_key(|&mut (k, _)| k);
                    ("batch", self.write(&ks, sync))
                }
                600..=899 => ("get", self.get(k)),
                900..=997 if self.db.supports_scans() => ("scan", self.scan(k)),
                900..=997 => ("get", self.get(k)),
                998 => ("flush", self.db.flush().map_err(|e| e.to_string())),
                _ if next() % 8 == 0 => {
                    let (a, b) = (key(k), key(k.saturating_add(200)));
                    (
                        "compact",
                        self.db
                            .compact_range(Some(&a), Some(&b))
                            .map_err(|e| e.to_string()),
                    )
                }
                _ => ("get", self.get(k)),
            };
            if let Err(m) = result {
                *self.failure.lock() = Some(format!("{name} of key {k}: {m}"));
                self.stop.store(true, Ordering::Relaxed);
                break;
            }
            *counts.entry(name).or_default() += 1;
            if (n + 1).is_multiple_of(self.progress_every) {
                println!("progress {}", n + 1);
            }
        }
        let mut all = self.counts.lock();
        for (k, n) in counts {
            *all.entry(k).or_default() += n;
        }
    }

    /// Write `ops` (key, put?) as one batch: log the intent, write, log the acknowledgement,
    /// all under the keys' locks (taken in key order).
    fn write(&self, ops: &[(u32, bool)], sync: bool) -> Result<(), String> {
        let mut guards: Vec<_> = ops
            .iter()
            .map(|&(k, _)| self.state[k as usize].lock())
            .collect();
        // Ids are unique within a run, and a run starts from a fresh snapshot file.
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut intent = String::new();
        let mut batch = WriteBatch::new();
        let mut vers = Vec::with_capacity(ops.len());
        for &(k, put) in ops {
            let ver = self.next_ver.fetch_add(1, Ordering::Relaxed);
            intent.push_str(&format!(
                "w {id} {} {k} {ver}\n",
                if put { "p" } else { "d" }
            ));
            if put {
                batch.put(&key(k), &value(k, ver));
            } else {
                batch.delete(&key(k));
            }
            vers.push(put.then_some(ver));
        }
        self.log.append(&intent).map_err(|e| e.to_string())?;
        self.db
            .write_opt(batch, WriteOptions { sync })
            .map_err(|e| e.to_string())?;
        self.log
            .append(&format!("a {id}\n"))
            .map_err(|e| e.to_string())?;
        for (g, v) in guards.iter_mut().zip(vers) {
            **g = v;
        }
        Ok(())
    }

    /// Read `k` under its lock: it must hold exactly the last write.
    fn get(&self, k: u32) -> Result<(), String> {
        let g = self.state[k as usize].lock();
        let got = self.db.get(&key(k)).map_err(|e| e.to_string())?;
        let ver = match &got {
            None => None,
            Some(b) => Some(
                parse_value(k, b)
                    .ok_or_else(|| format!("wrong value {:?}", String::from_utf8_lossy(b)))?,
            ),
        };
        if ver != *g {
            return Err(format!(
                "read version {ver:?}, the last write left {:?}",
                *g
            ));
        }
        Ok(())
    }

    /// Scan up to 20 keys from `k`: keys ascend, and each value is a value of its key.
    fn scan(&self, k: u32) -> Result<(), String> {
        let it = self
            .db
            .iter(IterOptions::range(key(k), key(k.saturating_add(100))))
            .map_err(|e| e.to_string())?;
        let mut prev: Option<u32> = None;
        for r in it.take(20) {
            let (kb, v) = r.map_err(|e| e.to_string())?;
            let sk = parse_key(&kb).ok_or_else(|| format!("foreign key {kb:?}"))?;
            if prev.is_some_and(|p| p >= sk) {
                return Err(format!("keys out of order: {prev:?} then {sk}"));
            }
            prev = Some(sk);
            if parse_value(sk, &v).is_none() {
                return Err(format!(
                    "key {sk}: wrong value {:?}",
                    String::from_utf8_lossy(&v)
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_name_their_key_and_version() {
        for (k, ver) in [(0, 1), (7, 123_456), (99_999_999, u64::from(u32::MAX))] {
            let v = value(k, ver);
            assert_eq!(parse_value(k, &v), Some(ver));
            assert_eq!(parse_value(k + 1, &v), None);
            let mut bad = v.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert_eq!(parse_value(k, &bad), None);
        }
        assert_eq!(parse_key(&key(42)), Some(42));
        assert_eq!(parse_key(b"stress0000004x"), None);
    }
}
