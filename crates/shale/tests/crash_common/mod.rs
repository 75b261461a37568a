//! Shared by the crash tests (`crash_enum`, `crash_ioerr`): seeded workloads, a runner that
//! tracks what the engine acknowledged, the prefix oracle, and the check of a reopened image.
//!
//! The oracle: the history is the list of writes (batches) issued, in order. A recovered
//! state is correct when it equals the model after some prefix `p` of the history with
//! `lo <= p <= hi`, where `lo` counts the writes that must survive (acknowledged with
//! `sync = true`, or made durable by a successful flush, compaction or close) and `hi` the
//! writes issued. Equality with a prefix rules out holes, resurrected deletes and wrong
//! values at once.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use shale::env::Env;
use shale::env::mem::MemFs;
use shale::{Db, Error, IterOptions, Options, WriteBatch, WriteOptions};

/// Where every store of these tests lives.
pub const DIR: &str = "/db";

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// One atomic write: puts (`Some`) and deletes (`None`).
pub type Write = Vec<(Vec<u8>, Option<Vec<u8>>)>;

#[derive(Clone, Debug)]
pub enum Step {
    Write {
        entries: Write,
        sync: bool,
    },
    Flush,
    Compact,
    Reopen,
    /// Value-log garbage collection (`Db::run_value_gc`).
    Gc,
}

/// Options for a store on a given file system.
pub type OptionsFn = Arc<dyn Fn(&Env) -> Options + Send + Sync>;

/// A named, seeded list of steps and the options to run them with.
pub struct Workload {
    pub name: String,
    pub options: OptionsFn,
    pub steps: Vec<Step>,
}

/// Whether `SHALE_CRASH_FULL=1` asks for the long run.
pub fn full() -> bool {
    std::env::var("SHALE_CRASH_FULL").is_ok_and(|v| v != "0" && !v.is_empty())
}

// ---------------------------------------------------------------------------------------
// Options and workloads

fn base(env: &Env) -> Options {
    let mut o = Options::default().with_env(env.clone());
    o.block_cache_bytes = 32 * 1024;
    o.max_open_files = 16;
    o.table.block_size = 256;
    o.num_levels = 4;
    // Crashes land while compactions run side by side.
    o.max_background_compactions = 2;
    o
}

/// Everything stays in the WAL (no flush unless a step asks).
fn opts_wal(env: &Env) -> Options {
    let mut o = base(env);
    o.write_buffer_size = 1 << 20;
    o
}

/// The smallest memtable. The skiplist charges its first 64 KiB arena chunk up front, so
/// this means a new WAL and a flush after every write, and level-0 compactions behind.
pub fn opts_small(env: &Env) -> Options {
    let mut o = base(env);
    o.write_buffer_size = 4096;
    o.target_file_size = 4096;
    o.max_bytes_for_level_base = 8 * 1024;
    o.level_size_multiplier = 2;
    o.level0_compaction_trigger = 2;
    o.level0_slowdown_trigger = 8;
    o.level0_stop_trigger = 12;
    o
}

/// `opts_small` with the FLSM layout (the `pebblesdb` preset): guards from the few dozen
/// keys of a workload, and guards that overflow after two tables.
fn opts_flsm(env: &Env) -> Options {
    let mut o = base(env);
    o.layout = shale::options::LayoutKind::Flsm;
    let small = opts_small(env);
    o.write_buffer_size = small.write_buffer_size;
    o.target_file_size = small.target_file_size;
    o.max_bytes_for_level_base = small.max_bytes_for_level_base;
    o.level_size_multiplier = small.level_size_multiplier;
    o.level0_compaction_trigger = small.level0_compaction_trigger;
    o.level0_slowdown_trigger = small.level0_slowdown_trigger;
    o.level0_stop_trigger = small.level0_stop_trigger;
    o.flsm.top_level_bits = 3;
    o.flsm.bit_decrement = 1;
    o.flsm.max_sstables_per_guard = 2;
    o
}

/// `opts_flsm` with a MANIFEST rewritten every couple of edits (guards in snapshots), under
/// the tiered policy (overflowing guards merged in place; `compact-flsm` runs the paper's).
fn opts_flsm_manifest(env: &Env) -> Options {
    let mut o = opts_flsm(env);
    o.max_manifest_bytes = 600;
    o.flsm.policy = shale::FlsmPolicy::Tiered;
    o
}

/// `opts_small` with the LWC layout (the `lwc` preset): level 0 appended to level 1's
/// tables, tables that grow past 4 KiB or 3 segments divided in two.
fn opts_lwc(env: &Env) -> Options {
    let mut o = opts_small(env);
    o.layout = shale::options::LayoutKind::Lwc;
    o.table_format = shale::TableKind::DTable;
    o.lwc.division = 2;
    o.lwc.max_segments = 3;
    o
}

/// `opts_lwc` with a MANIFEST rewritten every couple of edits (segment counts in
/// snapshots).
fn opts_lwc_manifest(env: &Env) -> Options {
    let mut o = opts_lwc(env);
    o.max_manifest_bytes = 600;
    o
}

/// Memtables that hold a few dozen writes (just over the skiplist's first arena chunk).
fn opts_medium(env: &Env) -> Options {
    let mut o = opts_small(env);
    o.write_buffer_size = 96 * 1024;
    o
}

/// Small memtables and a MANIFEST rewritten every couple of edits.
fn opts_manifest(env: &Env) -> Options {
    let mut o = opts_small(env);
    o.max_manifest_bytes = 600;
    o
}

/// The `wisckey` placement on top of `o`: values of 40 bytes or more separated, segments
/// of a few KiB so that they rotate every few writes.
fn vlog(mut o: Options) -> Options {
    o.values = shale::ValuesKind::Vlog;
    o.min_separated_value_size = 40;
    o.vlog_segment_size = 4096;
    o
}

fn opts_vlog_wal(env: &Env) -> Options {
    vlog(opts_wal(env))
}

fn opts_vlog_medium(env: &Env) -> Options {
    vlog(opts_medium(env))
}

fn opts_vlog_manifest(env: &Env) -> Options {
    vlog(opts_manifest(env))
}

fn key(rng: &mut StdRng, keys: u32) -> Vec<u8> {
    format!("key{:03}", rng.random_range(0..keys)).into_bytes()
}

fn value(rng: &mut StdRng, write: usize, entry: usize, max: usize) -> Vec<u8> {
    let mut v = format!("w{write}.{entry}:").into_bytes();
    let len = rng.random_range(v.len()..max.max(v.len() + 1));
    v.resize(len, b'a' + (write % 26) as u8);
    v
}

/// How a workload's steps are drawn. Writes: percentages of writes; other steps: chances
/// per thousand steps.
struct Mix {
    keys: u32,
    max_value: usize,
    delete_pct: u32,
    batch_pct: u32,
    sync_pct: u32,
    flush_permille: u32,
    compact_permille: u32,
    reopen_permille: u32,
    gc_permille: u32,
}

fn generate(seed: u64, n: usize, mix: &Mix) -> Vec<Step> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    let mut writes = 0;
    while writes < n {
        let r = rng.random_range(0..1000);
        if r < mix.flush_permille {
            steps.push(Step::Flush);
            continue;
        }
        if r < mix.flush_permille + mix.compact_permille {
            steps.push(Step::Compact);
            continue;
        }
        if r < mix.flush_permille + mix.compact_permille + mix.reopen_permille {
            steps.push(Step::Reopen);
            continue;
        }
        if r < mix.flush_permille + mix.compact_permille + mix.reopen_permille + mix.gc_permille {
            steps.push(Step::Gc);
            continue;
        }
        let size = if rng.random_range(0..100) < mix.batch_pct {
            rng.random_range(2..8)
        } else {
            1
        };
        let entries = (0..size)
            .map(|e| {
                let k = key(&mut rng, mix.keys);
                if rng.random_range(0..100) < mix.delete_pct {
                    (k, None)
                } else {
                    (k, Some(value(&mut rng, writes, e, mix.max_value)))
                }
            })
            .collect();
        let sync = rng.random_range(0..100) < mix.sync_pct;
        steps.push(Step::Write { entries, sync });
        writes += 1;
    }
    steps
}

/// The workloads for one seed: every kind of write and of background work.
/// The options of one combination of the axes, sized as the other crash workloads are:
/// memtables of a few writes, levels of a few tables, FLSM guards from a few dozen keys,
/// value-log segments of a few KiB (each setting inert where its axis is not chosen).
pub fn opts_for(axes: shale::Axes, env: &Env) -> Options {
    let mut o = opts_small(env).with_axes(axes);
    o.flsm.top_level_bits = 3;
    o.flsm.bit_decrement = 1;
    o.flsm.max_sstables_per_guard = 2;
    o.min_separated_value_size = 40;
    o.vlog_segment_size = 4096;
    o.max_manifest_bytes = 2000;
    // LSM-trie: containers compact after two sub-levels; every key is sampled for the last
    // level's garbage estimate, so collection runs.
    o.trie.max_sub_levels = 2;
    o.trie.gc_sample_bits = 0;
    o
}

/// A workload for one combination of the axes: puts, deletes, batches, flushes,
/// compactions, reopens and (where there is garbage to collect) collection.
pub fn matrix_workload(axes: shale::Axes, seed: u64) -> Workload {
    let options: OptionsFn = Arc::new(move |env: &Env| opts_for(axes, env));
    Workload {
        name: format!("matrix-{}/seed{seed}", axes.name()),
        options,
        steps: generate(
            seed.wrapping_mul(131).wrapping_add(7),
            60,
            &Mix {
                keys: 30,
                max_value: 300,
                delete_pct: 30,
                batch_pct: 25,
                sync_pct: 20,
                flush_permille: 80,
                compact_permille: 50,
                reopen_permille: 30,
                gc_permille: 40,
            },
        ),
    }
}

pub fn workloads(seed: u64, scale: usize) -> Vec<Workload> {
    let mk = |name: &str, options: fn(&Env) -> Options, n: usize, mix: Mix| Workload {
        name: format!("{name}/seed{seed}"),
        options: Arc::new(options),
        steps: generate(
            seed.wrapping_mul(31).wrapping_add(n as u64),
            n * scale,
            &mix,
        ),
    };
    vec![
        // Synced and unsynced puts and deletes, batches; one reopen in the middle.
        mk(
            "wal",
            opts_wal,
            60,
            Mix {
                keys: 24,
                max_value: 60,
                delete_pct: 25,
                batch_pct: 30,
                sync_pct: 30,
                flush_permille: 0,
                compact_permille: 0,
                reopen_permille: 40,
                gc_permille: 0,
            },
        ),
        // Long unsynced log tails: pages of them may survive a crash, with holes.
        mk(
            "wal-unsynced",
            opts_wal,
            50,
            Mix {
                keys: 24,
                max_value: 1500,
                delete_pct: 20,
                batch_pct: 30,
                sync_pct: 4,
                flush_permille: 0,
                compact_permille: 0,
                reopen_permille: 20,
                gc_permille: 0,
            },
        ),
        // Memtable flushes and WAL rotation every few dozen writes, compactions behind.
        mk(
            "flush",
            opts_medium,
            70,
            Mix {
                keys: 40,
                max_value: 1500,
                delete_pct: 20,
                batch_pct: 20,
                sync_pct: 20,
                flush_permille: 60,
                compact_permille: 0,
                reopen_permille: 0,
                gc_permille: 0,
            },
        ),
        // Compactions down the levels, explicit and in the background, with tombstones.
        mk(
            "compact",
            opts_small,
            60,
            Mix {
                keys: 30,
                max_value: 300,
                delete_pct: 35,
                batch_pct: 25,
                sync_pct: 15,
                flush_permille: 80,
                compact_permille: 80,
                reopen_permille: 30,
                gc_permille: 0,
            },
        ),
        // The value log as the WAL: rotation by size, torn tails, unsynced holes.
        mk(
            "vlog-wal",
            opts_vlog_wal,
            50,
            Mix {
                keys: 24,
                max_value: 1500,
                delete_pct: 20,
                batch_pct: 30,
                sync_pct: 10,
                flush_permille: 0,
                compact_permille: 0,
                reopen_permille: 30,
                gc_permille: 0,
            },
        ),
        // The value log's head moving with flushes; compactions and MANIFEST rollover.
        mk(
            "vlog-flush",
            opts_vlog_medium,
            60,
            Mix {
                keys: 30,
                max_value: 1500,
                delete_pct: 25,
                batch_pct: 20,
                sync_pct: 20,
                flush_permille: 80,
                compact_permille: 40,
                reopen_permille: 20,
                gc_permille: 80,
            },
        ),
        mk(
            "vlog-manifest",
            opts_vlog_manifest,
            50,
            Mix {
                keys: 30,
                max_value: 300,
                delete_pct: 30,
                batch_pct: 20,
                sync_pct: 20,
                flush_permille: 100,
                compact_permille: 60,
                reopen_permille: 40,
                gc_permille: 60,
            },
        ),
        // The same over the FLSM layout (pebblesdb): guards committed with compactions.
        mk(
            "compact-flsm",
            opts_flsm,
            60,
            Mix {
                keys: 30,
                max_value: 300,
                delete_pct: 35,
                batch_pct: 25,
                sync_pct: 15,
                flush_permille: 80,
                compact_permille: 80,
                reopen_permille: 30,
                gc_permille: 0,
            },
        ),
        mk(
            "manifest-flsm",
            opts_flsm_manifest,
            60,
            Mix {
                keys: 30,
                max_value: 300,
                delete_pct: 20,
                batch_pct: 20,
                sync_pct: 20,
                flush_permille: 100,
                compact_permille: 40,
                reopen_permille: 40,
                gc_permille: 0,
            },
        ),
        // The same over the LWC layout (lwc): appends to DTables committed by the MANIFEST,
        // divisions, segment counts in MANIFEST snapshots.
        mk(
            "compact-lwc",
            opts_lwc,
            60,
            Mix {
                keys: 30,
                max_value: 300,
                delete_pct: 35,
                batch_pct: 25,
                sync_pct: 15,
                flush_permille: 80,
                compact_permille: 80,
                reopen_permille: 30,
                gc_permille: 0,
            },
        ),
        mk(
            "manifest-lwc",
            opts_lwc_manifest,
            60,
            Mix {
                keys: 30,
                max_value: 300,
                delete_pct: 20,
                batch_pct: 20,
                sync_pct: 20,
                flush_permille: 100,
                compact_permille: 40,
                reopen_permille: 40,
                gc_permille: 0,
            },
        ),
        // MANIFEST rollover (a new MANIFEST and CURRENT every couple of edits).
        mk(
            "manifest",
            opts_manifest,
            60,
            Mix {
                keys: 30,
                max_value: 300,
                delete_pct: 20,
                batch_pct: 20,
                sync_pct: 20,
                flush_permille: 100,
                compact_permille: 40,
                reopen_permille: 40,
                gc_permille: 0,
            },
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// The oracle

fn entry_hash(k: &[u8], v: &[u8]) -> u64 {
    // FNV-1a over key, a separator and value, then a finalizer: states are compared by the
    // wrapping sum of their entries' hashes, updated in O(1) per entry.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in k.iter().chain(&[0xffu8, 0x00]).chain(v) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

fn state_hash(m: &Model) -> u64 {
    m.iter()
        .fold(0u64, |a, (k, v)| a.wrapping_add(entry_hash(k, v)))
}

fn apply(model: &mut Model, hash: &mut u64, w: &Write) {
    for (k, v) in w {
        if let Some(old) = model.get(k) {
            *hash = hash.wrapping_sub(entry_hash(k, old));
        }
        match v {
            Some(v) => {
                *hash = hash.wrapping_add(entry_hash(k, v));
                model.insert(k.clone(), v.clone());
            }
            None => {
                model.remove(k);
            }
        }
    }
}

/// The history of issued writes and the hash of the state after each prefix.
#[derive(Default)]
pub struct Oracle {
    writes: Vec<Write>,
    hashes: Vec<u64>,
    model: Model,
    hash: u64,
}

impl Oracle {
    pub fn new() -> Oracle {
        Oracle {
            hashes: vec![0],
            ..Oracle::default()
        }
    }

    pub fn len(&self) -> usize {
        self.writes.len()
    }

    pub fn push(&mut self, w: Write) {
        apply(&mut self.model, &mut self.hash, &w);
        self.hashes.push(self.hash);
        self.writes.push(w);
    }

    /// Forget the writes after the first `p` (lost for good: a reopen did not recover them).
    pub fn truncate(&mut self, p: usize) {
        let writes = std::mem::take(&mut self.writes);
        *self = Oracle::new();
        for w in writes.into_iter().take(p) {
            self.push(w);
        }
    }

    pub fn model_at(&self, p: usize) -> Model {
        let mut m = Model::new();
        let mut h = 0;
        for w in self.writes.iter().take(p) {
            apply(&mut m, &mut h, w);
        }
        m
    }

    /// The prefix length in `lo..=hi` whose state equals `got`.
    pub fn find_prefix(&self, got: &Model, lo: usize, hi: usize) -> Result<usize, String> {
        let hi = hi.min(self.writes.len());
        let h = state_hash(got);
        let matching = |range: std::ops::RangeInclusive<usize>| {
            range
                .filter(|&p| self.hashes.get(p) == Some(&h))
                .find(|&p| self.model_at(p) == *got)
        };
        if lo <= hi
            && let Some(p) = matching(lo..=hi)
        {
            return Ok(p);
        }
        if let Some(p) = matching(0..=self.writes.len()) {
            return Err(format!(
                "recovered the state after {p} writes, outside the allowed {lo}..={hi} \
                 ({})",
                if p < lo {
                    "acknowledged durable writes were lost"
                } else {
                    "writes never issued at the crash appeared"
                }
            ));
        }
        // Not a prefix at all: show how it differs from the nearest allowed states.
        let mut msg = format!(
            "recovered state ({} keys) is no prefix of the history",
            got.len()
        );
        for p in [lo.min(hi), hi] {
            let m = self.model_at(p);
            let diff: Vec<String> = m
                .keys()
                .chain(got.keys())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .filter(|k| m.get(*k) != got.get(*k))
                .take(4)
                .map(|k| {
                    format!(
                        "{}: expected {:?}, got {:?}",
                        String::from_utf8_lossy(k),
                        m.get(k).map(|v| String::from_utf8_lossy(v).into_owned()),
                        got.get(k).map(|v| String::from_utf8_lossy(v).into_owned())
                    )
                })
                .collect();
            msg.push_str(&format!("; vs prefix {p}: {}", diff.join(", ")));
        }
        Err(msg)
    }
}

// ---------------------------------------------------------------------------------------
// Running a workload

/// Counters a file-system hook reads while the workload runs.
#[derive(Default, Debug)]
pub struct Progress {
    /// Writes issued (the oracle's length).
    pub issued: AtomicUsize,
    /// Writes acknowledged with Ok (sync or not): they survive a process crash.
    pub acked: AtomicUsize,
    /// Writes that must survive a machine crash.
    pub floor: AtomicUsize,
}

impl Progress {
    pub fn load(&self) -> (usize, usize, usize) {
        (
            self.floor.load(Ordering::SeqCst),
            self.acked.load(Ordering::SeqCst),
            self.issued.load(Ordering::SeqCst),
        )
    }
    fn set_all(&self, n: usize) {
        self.issued.store(n, Ordering::SeqCst);
        self.acked.store(n, Ordering::SeqCst);
        self.floor.store(n, Ordering::SeqCst);
    }
}

/// What one engine call returned, for the I/O-error checks.
#[derive(Debug)]
pub struct CallError {
    pub step: usize,
    pub what: &'static str,
    pub error: String,
    pub read_only: bool,
}

/// Runs a workload's steps against a store, tracking what was acknowledged.
pub struct Runner {
    pub env: Env,
    pub options: OptionsFn,
    pub db: Option<Db>,
    pub oracle: Oracle,
    pub progress: Arc<Progress>,
    pub errors: Vec<CallError>,
    /// Violations found by the checks made while running (a reopen that lost writes).
    pub violations: Vec<String>,
}

pub fn scan(db: &Db) -> Result<Model, String> {
    let it = db
        .iter(IterOptions::default())
        .map_err(|e| format!("iterator: {e}"))?;
    it.map(|r| r.map_err(|e| format!("scan: {e}"))).collect()
}

/// The key written after recovery by `check_image`.
pub const PROBE_KEY: &[u8] = b"~probe";

/// Everything the store holds: a scan, or for a store that answers point reads only
/// (`Db::supports_scans`, the trie layout), a get of every key the history ever wrote
/// (and the probe key), which then must hold every key the store can hold.
pub fn read_all(db: &Db, oracle: &Oracle) -> Result<Model, String> {
    if db.supports_scans() {
        return scan(db);
    }
    let keys: std::collections::BTreeSet<&[u8]> = oracle
        .writes
        .iter()
        .flatten()
        .map(|(k, _)| k.as_slice())
        .chain(std::iter::once(PROBE_KEY))
        .collect();
    let mut out = Model::new();
    for k in keys {
        if let Some(v) = db.get(k).map_err(|e| format!("get: {e}"))? {
            out.insert(k.to_vec(), v);
        }
    }
    Ok(out)
}

impl Runner {
    pub fn new(env: Env, options: OptionsFn) -> Runner {
        Runner {
            env,
            options,
            db: None,
            oracle: Oracle::new(),
            progress: Arc::default(),
            errors: Vec::new(),
            violations: Vec::new(),
        }
    }

    fn error(&mut self, step: usize, what: &'static str, e: &Error) {
        self.errors.push(CallError {
            step,
            what,
            error: e.to_string(),
            read_only: matches!(e, Error::ReadOnly(_) | Error::Closed),
        });
    }

    /// Open the store; on success check that it holds every acknowledged write (a reopen
    /// without a machine crash loses nothing acknowledged) and re-anchor the history.
    pub fn open(&mut self, step: usize) {
        match Db::open(DIR, (self.options)(&self.env)) {
            Ok(db) => {
                let (_, acked, issued) = self.progress.load();
                match read_all(&db, &self.oracle)
                    .and_then(|got| self.oracle.find_prefix(&got, acked, issued))
                {
                    Ok(p) => {
                        self.oracle.truncate(p);
                        self.progress.set_all(p);
                    }
                    Err(e) => self.violations.push(format!("reopen at step {step}: {e}")),
                }
                self.db = Some(db);
            }
            Err(e) => self.error(step, "open", &e),
        }
    }

    pub fn step(&mut self, i: usize, step: &Step) {
        match step {
            Step::Write { entries, sync } => {
                let Some(db) = &self.db else { return };
                let mut b = WriteBatch::new();
                for (k, v) in entries {
                    match v {
                        Some(v) => b.put(k, v),
                        None => b.delete(k),
                    }
                }
                self.oracle.push(entries.clone());
                let n = self.oracle.len();
                self.progress.issued.store(n, Ordering::SeqCst);
                match db.write_opt(b, WriteOptions { sync: *sync }) {
                    Ok(()) => {
                        self.progress.acked.store(n, Ordering::SeqCst);
                        if *sync {
                            self.progress.floor.store(n, Ordering::SeqCst);
                        }
                    }
                    Err(e) => self.error(i, "write", &e),
                }
            }
            Step::Flush | Step::Compact | Step::Gc => {
                let Some(db) = &self.db else { return };
                let acked = self.progress.acked.load(Ordering::SeqCst);
                let (what, r) = match step {
                    Step::Flush => ("flush", db.flush()),
                    Step::Compact => ("compact", db.compact_range(None, None)),
                    // Collection promises no durability of earlier writes (it may find
                    // nothing to relocate and sync nothing): the floor stays.
                    _ => ("gc", db.run_value_gc().map(|_| ())),
                };
                match r {
                    Ok(()) if matches!(step, Step::Gc) => {}
                    Ok(()) => self.progress.floor.store(acked, Ordering::SeqCst),
                    Err(e) => self.error(i, what, &e),
                }
            }
            Step::Reopen => {
                if let Some(db) = self.db.take() {
                    let acked = self.progress.acked.load(Ordering::SeqCst);
                    match db.close() {
                        Ok(()) => self.progress.floor.store(acked, Ordering::SeqCst),
                        Err(e) => self.error(i, "close", &e),
                    }
                }
                self.open(i);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Checking a crash image

/// Reopen `image` and check it against the oracle: open succeeds, the state is a prefix in
/// `lo..=hi`, point reads agree with the scan, and the store takes a synced write that
/// survives one more crash. Returns the prefix length.
pub fn check_image(
    options: &OptionsFn,
    image: MemFs,
    oracle: &Oracle,
    lo: usize,
    hi: usize,
) -> Result<usize, String> {
    let env = Env::new(Arc::new(image.clone()));
    let db = Db::open(DIR, options(&env)).map_err(|e| format!("open failed: {e}"))?;
    let got = read_all(&db, oracle)?;
    let p = oracle.find_prefix(&got, lo, hi)?;
    let model = oracle.model_at(p);
    // Point reads take another path (memtable, bloom filter, table index); a key the
    // history ever wrote but that is absent must stay absent.
    for (k, _) in oracle.writes.iter().take(hi).flatten().step_by(3) {
        let want = model.get(k);
        let r = db.get(k).map_err(|e| format!("get: {e}"))?;
        if r.as_ref() != want {
            return Err(format!(
                "get({}) = {:?} but the scan matched prefix {p} with {:?}",
                String::from_utf8_lossy(k),
                r.map(|v| String::from_utf8_lossy(&v).into_owned()),
                want.map(|v| String::from_utf8_lossy(v).into_owned())
            ));
        }
    }
    let probe = PROBE_KEY;
    db.write_opt(
        {
            let mut b = WriteBatch::new();
            b.put(probe, b"after-recovery");
            b
        },
        WriteOptions { sync: true },
    )
    .map_err(|e| format!("the recovered store refused a write: {e}"))?;
    drop(db);
    // Crash again right away: the synced probe and the recovered state must both be there.
    image.crash();
    let db = Db::open(DIR, options(&env)).map_err(|e| format!("second open failed: {e}"))?;
    let mut again = read_all(&db, oracle)?;
    if again.remove(probe).as_deref() != Some(&b"after-recovery"[..]) {
        return Err("the synced write after recovery was lost by a second crash".into());
    }
    if again != got {
        return Err("a second crash after recovery changed the recovered state".into());
    }
    db.close().map_err(|e| format!("close: {e}"))?;
    Ok(p)
}

// ---------------------------------------------------------------------------------------
// Panics in background threads

static BG_PANICS: AtomicUsize = AtomicUsize::new(0);

/// Install (once) a panic hook that counts panics on the engine's threads (`shale-*`) and
/// then defers to the default hook. Join results are dropped by `Db::close`, so this is how
/// a test learns that a background thread died.
pub fn count_background_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("shale-"))
            {
                BG_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            default(info);
        }));
    });
}

pub fn background_panics() -> usize {
    BG_PANICS.load(Ordering::SeqCst)
}
