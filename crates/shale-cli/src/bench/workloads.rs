//! The benchmarks themselves: each runs its operations on `threads` worker threads over one
//! shared engine and returns what it measured and what it found.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use crate::bench::histogram::Histogram;
use crate::bench::keys::{
    LiveSet, Permutation, ValueGen, format_key, format_missing_key, splitmix64,
};
use crate::engine::{Engine, EngineResult};

/// Every benchmark name `--benchmarks` accepts.
pub const BENCHMARKS: [&str; 15] = [
    "fillseq",
    "fillrandom",
    "overwrite",
    "readrandom",
    "readseq",
    "readreverse",
    "readmissing",
    "seekrandom",
    "deleterandom",
    "readwhilewriting",
    "updaterandom",
    "updatescan",
    "compact",
    "flush",
    "stats",
];

/// How long each key's value is (`--value-size`, `--value-size-dist`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueSizes {
    /// Every value has the same size.
    Fixed(usize),
    /// Each key's value has its own size, uniform in `min..=max`: a hash of the key number
    /// and the seed, so every write of a key has the same size and reads can check it.
    Uniform {
        /// Smallest size.
        min: usize,
        /// Largest size.
        max: usize,
    },
}

impl ValueSizes {
    /// Parse `--value-size-dist`: `fixed` (every value `fixed` bytes) or `uniform:MIN:MAX`.
    ///
    /// # Errors
    /// A sentence naming what is wrong.
    pub fn parse(dist: &str, fixed: usize) -> Result<ValueSizes, String> {
        if dist == "fixed" {
            return Ok(ValueSizes::Fixed(fixed));
        }
        let bad = || {
            format!(
                "--value-size-dist {dist:?}: expected `fixed` or `uniform:MIN:MAX` (MIN <= MAX)"
            )
        };
        let mut parts = dist.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("uniform"), Some(lo), Some(hi), None) => {
                let min: usize = lo.parse().map_err(|_| bad())?;
                let max: usize = hi.parse().map_err(|_| bad())?;
                if min > max {
                    return Err(bad());
                }
                Ok(ValueSizes::Uniform { min, max })
            }
            _ => Err(bad()),
        }
    }

    /// The size of key number `k`'s value.
    pub fn of(&self, k: u64, seed: u64) -> usize {
        match *self {
            ValueSizes::Fixed(n) => n,
            ValueSizes::Uniform { min, max } => {
                let span = (max - min) as u64 + 1;
                min + (splitmix64(k ^ seed.rotate_left(17) ^ 0x5641_4c53_495a_4531) % span) as usize
            }
        }
    }

    /// The largest size.
    pub fn max(&self) -> usize {
        match *self {
            ValueSizes::Fixed(n) => n,
            ValueSizes::Uniform { max, .. } => max,
        }
    }

    /// The mean size.
    pub fn mean(&self) -> f64 {
        match *self {
            ValueSizes::Fixed(n) => n as f64,
            ValueSizes::Uniform { min, max } => (min + max) as f64 / 2.0,
        }
    }

    /// `None` for fixed sizes, else the distribution as `--value-size-dist` spells it.
    pub fn describe(&self) -> Option<String> {
        match *self {
            ValueSizes::Fixed(_) => None,
            ValueSizes::Uniform { min, max } => Some(format!("uniform:{min}:{max}")),
        }
    }
}

/// The settings a workload needs.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Keys in the key space (and writes of the fill benchmarks).
    pub num: u64,
    /// Operations of the read benchmarks.
    pub reads: u64,
    /// Key bytes.
    pub key_size: usize,
    /// Value bytes of each key.
    pub value_sizes: ValueSizes,
    /// Worker threads.
    pub threads: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Sync every write.
    pub sync: bool,
    /// Entries read after each seek of `seekrandom`.
    pub seek_nexts: usize,
    /// Position of the benchmark in the list, so a repeated benchmark draws new keys.
    pub round: u64,
    /// Writes of `overwrite` (db_bench's `--writes`).
    pub writes: u64,
    /// Keys `overwrite` draws from: a fixed random subset of the key space (`num`: all).
    pub hot_keys: u64,
    /// Percent of `updatescan`'s operations that are scans (the rest are updates).
    pub scan_percent: u32,
    /// Entries each scan of `updatescan` reads.
    pub scan_length: usize,
}

impl Workload {
    /// The size of key number `k`'s value.
    pub fn value_len(&self, k: u64) -> usize {
        self.value_sizes.of(k, self.seed)
    }

    /// The key set `overwrite` draws from: `hot_keys` keys chosen once by the seed, so that
    /// repeated rounds overwrite the same keys again.
    fn hot_set(&self) -> Permutation {
        Permutation::new(self.num, self.seed ^ 0x486f_7453_6574_0001)
    }
}

/// The number of hot keys for `--overwrite-fraction f` over `num` keys (at least 1 when
/// `num > 0`).
pub fn hot_keys(num: u64, fraction: f64) -> u64 {
    let n = (num as f64 * fraction).ceil() as u64;
    n.clamp(num.min(1), num)
}

/// What the store should hold, so reads can be checked.
pub struct Shared<'a> {
    /// The engine under test.
    pub engine: &'a dyn Engine,
    /// Keys written and not deleted.
    pub live: &'a LiveSet,
    /// Whether `live` is exact (false on a store this run did not fill).
    pub live_known: bool,
    /// Operations done so far, for the progress display.
    pub progress: &'a AtomicU64,
    /// Set when a thread failed, so the others stop early.
    pub abort: &'a AtomicBool,
}

/// What the threads of one benchmark measured, summed.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Operations done.
    pub ops: u64,
    /// Key and value bytes moved.
    pub bytes: u64,
    /// Key and value bytes written.
    pub user_bytes_written: u64,
    /// Lookups that found a value (reads only).
    pub found: u64,
    /// Lookups (reads only).
    pub lookups: u64,
    /// Lookups whose key had to be found.
    pub must_find: u64,
    /// Keys that had to be found and were not.
    pub missing: u64,
    /// Keys found that were deleted or never written (checked with no writer running).
    pub unexpected: u64,
    /// Values found with the wrong size, or scans out of order.
    pub malformed: u64,
    /// Seconds summed over threads.
    pub thread_seconds: f64,
    /// Latency per operation.
    pub hist: Histogram,
    /// Whether this benchmark reads (so `found` is reported).
    pub is_read: bool,
    /// For a benchmark mixing kinds of operation: the latency of each kind (`hist` has
    /// them all).
    pub parts: Vec<(&'static str, Histogram)>,
}

impl Tally {
    fn merge(&mut self, o: &Tally) {
        self.ops += o.ops;
        self.bytes += o.bytes;
        self.user_bytes_written += o.user_bytes_written;
        self.found += o.found;
        self.lookups += o.lookups;
        self.must_find += o.must_find;
        self.missing += o.missing;
        self.unexpected += o.unexpected;
        self.malformed += o.malformed;
        self.thread_seconds += o.thread_seconds;
        self.hist.merge(&o.hist);
        self.is_read |= o.is_read;
        for (kind, h) in &o.parts {
            match self.parts.iter_mut().find(|(k, _)| k == kind) {
                Some((_, mine)) => mine.merge(h),
                None => self.parts.push((kind, h.clone())),
            }
        }
    }

    /// A description of the wrong answers, if any.
    pub fn wrong_answer(&self, name: &str) -> Option<String> {
        let mut problems = Vec::new();
        if self.missing > 0 {
            problems.push(format!(
                "{name} found {} of {} keys",
                self.must_find - self.missing,
                self.must_find
            ));
        }
        if self.unexpected > 0 {
            problems.push(format!(
                "{name} found {} keys that were deleted or never written",
                self.unexpected
            ));
        }
        if self.malformed > 0 {
            problems.push(format!(
                "{name} saw {} values of the wrong size or keys out of order",
                self.malformed
            ));
        }
        (!problems.is_empty()).then(|| problems.join("; "))
    }
}

/// Per-thread state: its own random numbers, buffers and counts.
struct Worker {
    rng: SmallRng,
    values: ValueGen,
    key: Vec<u8>,
    tally: Tally,
    pending_progress: u64,
}

impl Worker {
    fn new(w: &Workload, values: &ValueGen, thread: usize, salt: u64) -> Self {
        let seed = w.seed
            ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (thread as u64) << 32
            ^ w.round.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        Worker {
            rng: SmallRng::seed_from_u64(seed),
            values: values.clone(),
            key: Vec::with_capacity(w.key_size + 1),
            tally: Tally::default(),
            pending_progress: 0,
        }
    }

    /// Count one finished operation that started at `start`.
    fn done(&mut self, start: Instant, sh: &Shared<'_>) {
        self.done_ns(start.elapsed().as_nanos() as u64, sh);
    }

    /// Count one finished operation that took `ns` nanoseconds.
    fn done_ns(&mut self, ns: u64, sh: &Shared<'_>) {
        self.tally.ops += 1;
        self.tally.hist.add(ns);
        self.pending_progress += 1;
        if self.pending_progress == 256 {
            sh.progress.fetch_add(256, Ordering::Relaxed);
            self.pending_progress = 0;
        }
    }

    fn finish(mut self, sh: &Shared<'_>, began: Instant) -> Tally {
        sh.progress
            .fetch_add(self.pending_progress, Ordering::Relaxed);
        self.tally.thread_seconds = began.elapsed().as_secs_f64();
        self.tally
    }
}

/// Check one lookup of key number `k` whose liveness before the lookup was `was_live`.
fn check_lookup(
    t: &mut Tally,
    sh: &Shared<'_>,
    w: &Workload,
    k: u64,
    was_live: bool,
    got: Option<usize>,
    writer_running: bool,
) {
    t.lookups += 1;
    if let Some(len) = got {
        t.found += 1;
        if sh.live_known && len != w.value_len(k) {
            t.malformed += 1;
        }
    }
    if !sh.live_known {
        return;
    }
    if was_live {
        t.must_find += 1;
        if got.is_none() {
            t.missing += 1;
        }
    } else if got.is_some() && !writer_running {
        t.unexpected += 1;
    }
}

/// The `[lo, hi)` share of `n` operations for `thread` of `threads`.
pub fn share(n: u64, thread: usize, threads: usize) -> (u64, u64) {
    let t = threads.max(1) as u64;
    let i = thread as u64;
    (n * i / t, n * (i + 1) / t)
}

/// Key number encoded in a benchmark key, if it is one.
fn key_number(key: &[u8], key_size: usize) -> Option<u64> {
    if key.len() != key_size || !key.iter().all(u8::is_ascii_digit) {
        return None;
    }
    key.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

/// Run `body` on `threads` threads and sum their tallies. A failing thread stops the rest.
fn on_threads<F>(sh: &Shared<'_>, threads: usize, body: F) -> EngineResult<Tally>
where
    F: Fn(usize) -> EngineResult<Tally> + Sync,
{
    let results: Vec<EngineResult<Tally>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|t| {
                let body = &body;
                s.spawn(move || {
                    let r = body(t);
                    if r.is_err() {
                        sh.abort.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(crate::CliError::msg("a benchmark thread panicked")))
            })
            .collect()
    });
    let mut total = Tally::default();
    for r in results {
        total.merge(&r?);
    }
    Ok(total)
}

/// How the keys of a write benchmark are chosen.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WriteOrder {
    Sequential,
    Permuted,
    Uniform,
    /// Uniform over the workload's hot set, `writes` operations.
    Overwrite,
}

fn write_keys(
    sh: &Shared<'_>,
    w: &Workload,
    values: &ValueGen,
    order: WriteOrder,
    delete: bool,
    salt: u64,
) -> EngineResult<Tally> {
    let perm = Permutation::new(w.num, w.seed);
    let hot = w.hot_set();
    let ops = if order == WriteOrder::Overwrite {
        w.writes
    } else {
        w.num
    };
    on_threads(sh, w.threads, |t| {
        let mut wk = Worker::new(w, values, t, salt);
        let (lo, hi) = share(ops, t, w.threads);
        let began = Instant::now();
        for i in lo..hi {
            if sh.abort.load(Ordering::Relaxed) {
                break;
            }
            let k = match order {
                WriteOrder::Sequential => i,
                WriteOrder::Permuted => perm.get(i),
                WriteOrder::Uniform => wk.rng.random_range(0..w.num.max(1)),
                // Every key: the same draws as before the hot set existed.
                WriteOrder::Overwrite if w.hot_keys >= w.num => {
                    wk.rng.random_range(0..w.num.max(1))
                }
                WriteOrder::Overwrite => hot.get(wk.rng.random_range(0..w.hot_keys.max(1))),
            };
            format_key(k, w.key_size, &mut wk.key);
            let start = Instant::now();
            if delete {
                sh.engine.delete(&wk.key, w.sync)?;
                sh.live.remove(k);
                wk.tally.user_bytes_written += wk.key.len() as u64;
            } else {
                let value = wk.values.next(w.value_len(k));
                sh.engine.put(&wk.key, value, w.sync)?;
                sh.live.insert(k);
                let n = (wk.key.len() + value.len()) as u64;
                wk.tally.user_bytes_written += n;
                wk.tally.bytes += n;
            }
            wk.done(start, sh);
        }
        Ok(wk.finish(sh, began))
    })
}

fn read_random(
    sh: &Shared<'_>,
    w: &Workload,
    values: &ValueGen,
    missing: bool,
    readers: usize,
    writer_running: &AtomicBool,
) -> EngineResult<Tally> {
    on_threads(sh, readers, |t| {
        let mut wk = Worker::new(w, values, t, 2);
        wk.tally.is_read = true;
        let (lo, hi) = share(w.reads, t, readers);
        let began = Instant::now();
        for _ in lo..hi {
            if sh.abort.load(Ordering::Relaxed) {
                break;
            }
            let k = wk.rng.random_range(0..w.num.max(1));
            if missing {
                format_missing_key(k, w.key_size, &mut wk.key);
            } else {
                format_key(k, w.key_size, &mut wk.key);
            }
            let was_live = !missing && sh.live.contains(k);
            let writing = writer_running.load(Ordering::Acquire);
            let start = Instant::now();
            let got = sh.engine.get(&wk.key)?;
            wk.done(start, sh);
            if let Some(v) = &got {
                wk.tally.bytes += (wk.key.len() + v.len()) as u64;
            }
            check_lookup(
                &mut wk.tally,
                sh,
                w,
                k,
                was_live,
                got.as_ref().map(Vec::len),
                writing,
            );
        }
        Ok(wk.finish(sh, began))
    })
}

fn seek_random(sh: &Shared<'_>, w: &Workload, values: &ValueGen) -> EngineResult<Tally> {
    on_threads(sh, w.threads, |t| {
        let mut wk = Worker::new(w, values, t, 3);
        wk.tally.is_read = true;
        let (lo, hi) = share(w.reads, t, w.threads);
        let began = Instant::now();
        for _ in lo..hi {
            if sh.abort.load(Ordering::Relaxed) {
                break;
            }
            let k = wk.rng.random_range(0..w.num.max(1));
            format_key(k, w.key_size, &mut wk.key);
            let was_live = sh.live.contains(k);
            let mut hit = None;
            let mut bytes = 0u64;
            let mut first = true;
            let target = &wk.key;
            let start = Instant::now();
            sh.engine.seek(target, w.seek_nexts, &mut |key, value| {
                if first && key == target.as_slice() {
                    hit = Some(value.len());
                }
                first = false;
                bytes += (key.len() + value.len()) as u64;
            })?;
            wk.done(start, sh);
            wk.tally.bytes += bytes;
            check_lookup(&mut wk.tally, sh, w, k, was_live, hit, false);
        }
        Ok(wk.finish(sh, began))
    })
}

fn read_all(
    sh: &Shared<'_>,
    w: &Workload,
    values: &ValueGen,
    reverse: bool,
) -> EngineResult<Tally> {
    let live_before = sh.live.count();
    on_threads(sh, w.threads, |t| {
        let mut wk = Worker::new(w, values, t, 4);
        wk.tally.is_read = true;
        let began = Instant::now();
        let mut prev: Option<Vec<u8>> = None;
        let mut last = Instant::now();
        let mut unexpected = 0u64;
        let mut malformed = 0u64;
        let mut bytes = 0u64;
        let mut hist = Histogram::new();
        let mut count = 0u64;
        sh.engine.scan_all(reverse, w.reads, &mut |key, value| {
            let now = Instant::now();
            hist.add(now.duration_since(last).as_nanos() as u64);
            last = now;
            count += 1;
            bytes += (key.len() + value.len()) as u64;
            if let Some(p) = &prev {
                let in_order = if reverse {
                    key < p.as_slice()
                } else {
                    key > p.as_slice()
                };
                if !in_order {
                    malformed += 1;
                }
            }
            prev = Some(key.to_vec());
            if sh.live_known {
                match key_number(key, w.key_size) {
                    Some(k) if sh.live.contains(k) => {
                        if value.len() != w.value_len(k) {
                            malformed += 1;
                        }
                    }
                    _ => unexpected += 1,
                }
            }
        })?;
        let tl = &mut wk.tally;
        tl.ops = count;
        tl.hist = hist;
        tl.bytes = bytes;
        tl.found = count;
        tl.lookups = count;
        sh.progress.fetch_add(count, Ordering::Relaxed);
        if sh.live_known {
            let expect = live_before.min(w.reads);
            tl.must_find = expect;
            tl.missing = expect.saturating_sub(count - unexpected.min(count));
            tl.unexpected = unexpected;
            tl.malformed = malformed;
        } else {
            tl.malformed = malformed;
        }
        tl.thread_seconds = began.elapsed().as_secs_f64();
        Ok(std::mem::take(tl))
    })
}

fn update_random(sh: &Shared<'_>, w: &Workload, values: &ValueGen) -> EngineResult<Tally> {
    on_threads(sh, w.threads, |t| {
        let mut wk = Worker::new(w, values, t, 5);
        wk.tally.is_read = true;
        let (lo, hi) = share(w.num, t, w.threads);
        let began = Instant::now();
        for _ in lo..hi {
            if sh.abort.load(Ordering::Relaxed) {
                break;
            }
            let k = wk.rng.random_range(0..w.num.max(1));
            format_key(k, w.key_size, &mut wk.key);
            let was_live = sh.live.contains(k);
            let start = Instant::now();
            let got = sh.engine.get(&wk.key)?;
            let value = wk.values.next(w.value_len(k));
            sh.engine.put(&wk.key, value, w.sync)?;
            sh.live.insert(k);
            let n = (wk.key.len() + value.len()) as u64;
            wk.done(start, sh);
            wk.tally.user_bytes_written += n;
            wk.tally.bytes += n;
            // Other threads write too, so only "must find" is checked.
            check_lookup(
                &mut wk.tally,
                sh,
                w,
                k,
                was_live,
                got.as_ref().map(Vec::len),
                true,
            );
        }
        Ok(wk.finish(sh, began))
    })
}

/// `updatescan`: FloDB's mix (paper §5, 95% updates and 5% scans of 100 entries by
/// default): each operation is a scan of `scan_length` entries from a random key with
/// probability `scan_percent`%, else an update of a random key. The latencies of each kind
/// are kept apart (a mix's percentiles mostly show its rarer, slower kind).
fn update_scan(sh: &Shared<'_>, w: &Workload, values: &ValueGen) -> EngineResult<Tally> {
    on_threads(sh, w.threads, |t| {
        let mut wk = Worker::new(w, values, t, 8);
        let mut updates = Histogram::new();
        let mut scans = Histogram::new();
        let (lo, hi) = share(w.num, t, w.threads);
        let began = Instant::now();
        for _ in lo..hi {
            if sh.abort.load(Ordering::Relaxed) {
                break;
            }
            let scan = wk.rng.random_range(0..100u32) < w.scan_percent;
            let k = wk.rng.random_range(0..w.num.max(1));
            format_key(k, w.key_size, &mut wk.key);
            let ns = if scan {
                let mut prev: Option<Vec<u8>> = None;
                let mut bytes = 0u64;
                let mut out_of_order = 0u64;
                let start = Instant::now();
                sh.engine.seek(&wk.key, w.scan_length, &mut |key, value| {
                    bytes += (key.len() + value.len()) as u64;
                    if prev.as_deref().is_some_and(|p| key <= p) {
                        out_of_order += 1;
                    }
                    prev = Some(key.to_vec());
                })?;
                let ns = start.elapsed().as_nanos() as u64;
                scans.add(ns);
                wk.tally.bytes += bytes;
                wk.tally.malformed += out_of_order;
                ns
            } else {
                let value = wk.values.next(w.value_len(k));
                let start = Instant::now();
                sh.engine.put(&wk.key, value, w.sync)?;
                let ns = start.elapsed().as_nanos() as u64;
                updates.add(ns);
                sh.live.insert(k);
                let n = (wk.key.len() + value.len()) as u64;
                wk.tally.user_bytes_written += n;
                wk.tally.bytes += n;
                ns
            };
            wk.done_ns(ns, sh);
        }
        wk.tally.parts = vec![("update", updates), ("scan", scans)];
        Ok(wk.finish(sh, began))
    })
}

fn read_while_writing(sh: &Shared<'_>, w: &Workload, values: &ValueGen) -> EngineResult<Tally> {
    let readers_done = AtomicBool::new(false);
    let writer_running = AtomicBool::new(true);
    let (reads, writes) = std::thread::scope(|s| {
        let writer = s.spawn(|| -> EngineResult<Tally> {
            let mut wk = Worker::new(w, values, w.threads, 6);
            let began = Instant::now();
            while !readers_done.load(Ordering::Acquire) && !sh.abort.load(Ordering::Relaxed) {
                let k = wk.rng.random_range(0..w.num.max(1));
                format_key(k, w.key_size, &mut wk.key);
                let value = wk.values.next(w.value_len(k));
                sh.engine.put(&wk.key, value, w.sync)?;
                sh.live.insert(k);
                wk.tally.user_bytes_written += (wk.key.len() + value.len()) as u64;
            }
            wk.tally.thread_seconds = began.elapsed().as_secs_f64();
            Ok(wk.tally)
        });
        let reads = read_random(sh, w, values, false, w.threads, &writer_running);
        readers_done.store(true, Ordering::Release);
        let writes = writer
            .join()
            .unwrap_or_else(|_| Err(crate::CliError::msg("the writer thread panicked")));
        (reads, writes)
    });
    let mut t = reads?;
    // Only the readers' operations and time are reported, as in db_bench.
    t.user_bytes_written += writes?.user_bytes_written;
    Ok(t)
}

/// Run benchmark `name`. `compact`, `flush` and `stats` are handled by the caller.
///
/// # Errors
/// The engine's first error; an unknown name.
pub fn run(name: &str, sh: &Shared<'_>, w: &Workload, values: &ValueGen) -> EngineResult<Tally> {
    let no_writer = AtomicBool::new(false);
    match name {
        "fillseq" => write_keys(sh, w, values, WriteOrder::Sequential, false, 0),
        "fillrandom" => write_keys(sh, w, values, WriteOrder::Permuted, false, 0),
        "overwrite" => write_keys(sh, w, values, WriteOrder::Overwrite, false, 1),
        "deleterandom" => write_keys(sh, w, values, WriteOrder::Uniform, true, 7),
        "readrandom" => read_random(sh, w, values, false, w.threads, &no_writer),
        "readmissing" => read_random(sh, w, values, true, w.threads, &no_writer),
        "seekrandom" => seek_random(sh, w, values),
        "readseq" => read_all(sh, w, values, false),
        "readreverse" => read_all(sh, w, values, true),
        "updaterandom" => update_random(sh, w, values),
        "updatescan" => update_scan(sh, w, values),
        "readwhilewriting" => read_while_writing(sh, w, values),
        other => Err(crate::CliError::msg(format!(
            "unknown benchmark {other:?}; known: {}",
            BENCHMARKS.join(",")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_all_operations() {
        for (n, t) in [(10u64, 3usize), (1_000_000, 7), (2, 4), (0, 2)] {
            let mut next = 0;
            for i in 0..t {
                let (lo, hi) = share(n, i, t);
                assert_eq!(lo, next);
                assert!(hi >= lo);
                next = hi;
            }
            assert_eq!(next, n);
        }
    }

    #[test]
    fn key_numbers_parse_back() {
        let mut k = Vec::new();
        format_key(1234, 16, &mut k);
        assert_eq!(key_number(&k, 16), Some(1234));
        assert_eq!(key_number(b"12", 16), None);
        assert_eq!(key_number(b"00000000000012a4", 16), None);
        format_missing_key(5, 16, &mut k);
        assert_eq!(key_number(&k, 16), None);
    }

    #[test]
    fn wrong_answers_are_described() {
        let mut t = Tally {
            must_find: 100,
            missing: 3,
            ..Default::default()
        };
        assert_eq!(
            t.wrong_answer("readrandom").unwrap(),
            "readrandom found 97 of 100 keys"
        );
        t.missing = 0;
        assert!(t.wrong_answer("readrandom").is_none());
        t.unexpected = 2;
        assert!(
            t.wrong_answer("readmissing")
                .unwrap()
                .contains("2 keys that were deleted")
        );
    }
}

#[cfg(test)]
mod engine_tests {
    use super::*;
    use crate::engine::mem::MemEngine;

    fn workload(num: u64, threads: usize) -> Workload {
        Workload {
            num,
            reads: num,
            key_size: 16,
            value_sizes: ValueSizes::Fixed(32),
            threads,
            seed: 42,
            sync: false,
            seek_nexts: 3,
            round: 0,
            writes: num,
            hot_keys: num,
            scan_percent: 5,
            scan_length: 10,
        }
    }

    fn run_seq(engine: &MemEngine, w: &Workload, names: &[&str]) -> Vec<Tally> {
        let live = LiveSet::new(w.num);
        let progress = AtomicU64::new(0);
        let abort = AtomicBool::new(false);
        let sh = Shared {
            engine,
            live: &live,
            live_known: true,
            progress: &progress,
            abort: &abort,
        };
        let values = ValueGen::new(w.value_sizes.max(), w.seed);
        names
            .iter()
            .map(|n| run(n, &sh, w, &values).unwrap())
            .collect()
    }

    #[test]
    fn value_sizes_parse_and_stay_in_range_per_key() {
        assert_eq!(ValueSizes::parse("fixed", 7), Ok(ValueSizes::Fixed(7)));
        let u = ValueSizes::parse("uniform:1:200", 7).unwrap();
        assert_eq!(u, ValueSizes::Uniform { min: 1, max: 200 });
        assert_eq!(u.describe().as_deref(), Some("uniform:1:200"));
        assert_eq!((u.max(), u.mean()), (200, 100.5));
        for bad in ["uniform:5:1", "uniform:1", "normal:1:2", "uniform:a:2", ""] {
            assert!(ValueSizes::parse(bad, 7).is_err(), "{bad}");
        }
        let sizes: Vec<usize> = (0..20_000).map(|k| u.of(k, 42)).collect();
        assert!(sizes.iter().all(|s| (1..=200).contains(s)));
        assert!(sizes.contains(&1) && sizes.contains(&200));
        let mean = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
        assert!((98.0..103.0).contains(&mean), "{mean}");
        assert_eq!(u.of(5, 42), u.of(5, 42), "a key keeps its size");
    }

    #[test]
    fn reads_check_each_key_s_own_size() {
        let e = MemEngine::default();
        let mut w = workload(1500, 2);
        w.value_sizes = ValueSizes::Uniform { min: 1, max: 60 };
        let t = run_seq(
            &e,
            &w,
            &[
                "fillrandom",
                "readrandom",
                "overwrite",
                "readrandom",
                "readseq",
            ],
        );
        for (i, t) in t.iter().enumerate() {
            assert_eq!(t.malformed, 0, "benchmark {i}");
            assert_eq!(t.missing, 0, "benchmark {i}");
        }
        assert_eq!(t[1].found, 1500);
    }

    #[test]
    fn every_benchmark_reads_right_answers_from_a_correct_store() {
        for threads in [1, 3] {
            let e = MemEngine::default();
            let w = workload(2000, threads);
            let names = [
                "fillrandom",
                "readrandom",
                "readseq",
                "readreverse",
                "readmissing",
                "seekrandom",
                "overwrite",
                "updaterandom",
                "readwhilewriting",
                "deleterandom",
                "readrandom",
                "readseq",
                "seekrandom",
                "fillseq",
                "readrandom",
                "updatescan",
            ];
            let tallies = run_seq(&e, &w, &names);
            for (n, t) in names.iter().zip(&tallies) {
                assert_eq!(t.wrong_answer(n), None, "{n} with {threads} threads: {t:?}");
                assert!(t.ops > 0, "{n}");
            }
            // fillrandom wrote every key once.
            assert_eq!(tallies[0].ops, 2000);
            assert_eq!(tallies[0].user_bytes_written, 2000 * 48);
            // The first readrandom found everything, readseq every key, readmissing nothing.
            assert_eq!((tallies[1].found, tallies[1].lookups), (2000, 2000));
            assert_eq!(tallies[2].ops, 2000 * threads as u64);
            assert_eq!(tallies[4].found, 0);
            // After deleterandom, reads find only what is left, and the check still holds.
            assert!(tallies[10].found < 2000 && tallies[10].found > 0);
            assert_eq!(tallies[10].found, tallies[10].must_find);
            assert_eq!(tallies[14].found, 2000);
            assert_eq!(e.len(), 2000);
        }
    }

    #[test]
    fn updatescan_mixes_updates_and_scans_and_times_each() {
        let e = MemEngine::default();
        let mut w = workload(2000, 2);
        w.scan_percent = 20;
        let t = run_seq(&e, &w, &["fillseq", "updatescan"]);
        let mix = &t[1];
        assert_eq!(mix.wrong_answer("updatescan"), None);
        assert_eq!(mix.ops, 2000);
        let count = |kind: &str| {
            mix.parts
                .iter()
                .find(|(k, _)| *k == kind)
                .map_or(0, |(_, h)| h.count())
        };
        let (updates, scans) = (count("update"), count("scan"));
        assert_eq!(updates + scans, 2000);
        assert_eq!(mix.hist.count(), 2000);
        // 20% of 2000 draws: far from both ends.
        assert!((200..600).contains(&scans), "{scans} scans");
        assert_eq!(mix.user_bytes_written, updates * 48);
        // With no scans, every operation is an update.
        w.scan_percent = 0;
        w.round = 2;
        let t = run_seq(&e, &w, &["updatescan"]);
        assert_eq!(t[0].user_bytes_written, 2000 * 48);
    }

    #[test]
    fn overwrite_stays_in_its_hot_set_for_writes_operations() {
        let e = MemEngine::default();
        let mut w = workload(1000, 2);
        w.writes = 3000;
        w.hot_keys = hot_keys(1000, 0.25);
        assert_eq!(w.hot_keys, 250);
        // Two rounds of overwrites on an empty store: only hot keys come to exist.
        let t = run_seq(&e, &w, &["overwrite"]);
        assert_eq!(t[0].ops, 3000);
        w.round = 1;
        run_seq(&e, &w, &["overwrite"]);
        // 6000 uniform draws over 250 keys hit all of them (a miss has odds of about
        // 250 * e^-24); never more.
        assert_eq!(e.len(), 250);
        assert_eq!(hot_keys(1000, 1.0), 1000);
        assert_eq!(hot_keys(3, 0.01), 1);
    }

    #[test]
    fn lost_writes_are_caught() {
        let e = MemEngine::lossy(97);
        let w = workload(1000, 2);
        let t = run_seq(&e, &w, &["fillseq", "readrandom", "readseq"]);
        let msg = t[1].wrong_answer("readrandom").unwrap();
        assert!(msg.starts_with("readrandom found "), "{msg}");
        assert!(msg.ends_with(" of 1000 keys"), "{msg}");
        assert!(t[2].wrong_answer("readseq").is_some());
    }
}
