//! The I/O-error loop: fail mutating file-system operation `k`, for every `k` of a workload
//! (once, and from then on), and check that
//!
//! - no engine call panics, and no background thread panics;
//! - a write whose log append, flush or sync failed returns an error (never pretends);
//! - after a failed WAL or MANIFEST operation the store refuses writes with
//!   `Error::ReadOnly`;
//! - reopening the same file system, as it is (a process restart) and after a machine crash
//!   (the base image and a variant where part of the unsynced state survives),
//!   succeeds and recovers a prefix of the history holding every write acknowledged as
//!   durable (and, without the machine crash, every acknowledged write).
//!
//! A second loop fails the `n`-th read and flips bits in reads: gets and scans return the
//! right value or an error, and the store reads correctly once the fault is gone.
//!
//! CI covers every `k` of small workloads; `SHALE_CRASH_FULL=1` runs larger workloads and
//! more seeds: `SHALE_CRASH_FULL=1 cargo test --release -p shale --test crash_ioerr -- --nocapture`.

mod crash_common;

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::ThreadId;

use crash_common::*;
use parking_lot::Mutex;
use shale::env::Env;
use shale::env::fault::{FailMode, FaultFs, Op, OpKind, OpView, UnsyncedData, UnsyncedNames};
use shale::env::mem::MemFs;
use shale::{Db, IterOptions, WriteBatch, WriteOptions};

fn is_log_or_manifest(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    name.ends_with(".log") || name.starts_with("MANIFEST-") || name.starts_with("CURRENT")
}

fn is_wal_write(op: &Op) -> bool {
    matches!(op.kind, OpKind::Append | OpKind::Flush | OpKind::Sync)
        && op.path.extension().is_some_and(|e| e == "log")
}

#[derive(Default)]
struct Tally {
    runs: u64,
    faults_hit: u64,
    /// Runs in which the target op did not occur (the interleaving differed).
    missed: u64,
    read_only_checked: u64,
    reopens_checked: u64,
    failures: Vec<String>,
}

/// What kind of file an op concerns: with the op kind, an op's class.
fn file_class(path: &Path) -> &'static str {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    if name.ends_with(".log") {
        "log"
    } else if name.ends_with(".sst") {
        "table"
    } else if name.starts_with("MANIFEST-") {
        "manifest"
    } else if name.starts_with("CURRENT") {
        "current"
    } else if name == "LOCK" {
        "lock"
    } else {
        "dir"
    }
}

/// An op's kind and file kind, and those of the previous op of the same thread: a
/// MANIFEST switch's directory sync follows a rename of CURRENT, a flush's follows a table
/// sync, and so on.
type Class = (OpKind, &'static str, Option<(OpKind, &'static str)>);

/// Classifies the ops of one run, remembering each thread's previous op.
#[derive(Default)]
struct Classifier(Mutex<HashMap<ThreadId, (OpKind, &'static str)>>);

impl Classifier {
    fn class(&self, op: &Op) -> Class {
        let this = (op.kind, file_class(&op.path));
        let prev = self.0.lock().insert(std::thread::current().id(), this);
        (this.0, this.1, prev)
    }
}

/// The class of every mutating op of a fault-free run of `w`.
fn reference_ops(w: &Workload) -> Vec<Class> {
    let fs = FaultFs::new(MemFs::new());
    let ctl = fs.control();
    let ops: Arc<Mutex<Vec<Class>>> = Arc::default();
    let o = Arc::clone(&ops);
    let classifier = Classifier::default();
    ctl.set_hook(Some(Arc::new(move |v: &OpView<'_>| {
        o.lock().push(classifier.class(v.op()));
    })));
    let mut runner = Runner::new(Env::new(Arc::new(fs.clone())), Arc::clone(&w.options));
    runner.open(0);
    for (i, step) in w.steps.iter().enumerate() {
        runner.step(i, step);
    }
    if let Some(db) = runner.db.take()
        && let Err(e) = db.close()
    {
        panic!("close without faults failed: {e}");
    }
    assert!(runner.errors.is_empty(), "{:?}", runner.errors);
    ctl.set_hook(None);
    std::mem::take(&mut *ops.lock())
}

/// Op `k` of the reference run, as the `n`-th op of its class: background threads shift
/// op numbers from run to run, but rarely the order of ops within a class.
fn target(reference: &[Class], k: usize) -> (Class, usize) {
    let c = reference[k];
    (c, reference[..k].iter().filter(|&&x| x == c).count())
}

/// Run `w` with reference op `k` failing in `mode`, then check everything in the module
/// documentation. Returns whether the fault was hit.
fn run_with_fault(
    w: &Workload,
    reference: &[Class],
    k: usize,
    mode: FailMode,
    seed: u64,
    tally: &mut Tally,
) -> bool {
    let fs = FaultFs::new(MemFs::new());
    let ctl = fs.control();
    let (c, n) = target(reference, k);
    let seen = AtomicUsize::new(0);
    let classifier = Classifier::default();
    ctl.fail_when(
        Arc::new(move |op: &Op| {
            classifier.class(op) == c && seen.fetch_add(1, Ordering::SeqCst) == n
        }),
        mode,
    );
    let mut runner = Runner::new(Env::new(Arc::new(fs.clone())), Arc::clone(&w.options));
    let ctx = format!("{} fail {:?} #{n} (op {k}) {mode:?}", w.name, c);
    let fail = |tally: &mut Tally, m: String| tally.failures.push(format!("{ctx}: {m}"));
    tally.runs += 1;

    // The op range of each step, and of the live store's lifetime, to attribute faults.
    let mut step_ops: Vec<(usize, u64, u64)> = Vec::new();
    let mut opened_at = 0u64;
    let run = catch_unwind(AssertUnwindSafe(|| {
        runner.open(0);
        opened_at = ctl.ops();
        for (i, step) in w.steps.iter().enumerate() {
            let before = ctl.ops();
            runner.step(i, step);
            if matches!(step, Step::Reopen) {
                opened_at = ctl.ops();
            }
            step_ops.push((i, before, ctl.ops()));
        }
    }));
    if run.is_err() {
        fail(tally, "an engine call panicked".into());
        return true;
    }
    let injected = ctl.injected();
    let Some(first) = injected.first().cloned() else {
        // This run had fewer ops of the class: no error may have happened.
        tally.missed += 1;
        if !runner.errors.is_empty() || !runner.violations.is_empty() {
            fail(
                tally,
                format!(
                    "errors without a fault: {:?} {:?}",
                    runner.errors, runner.violations
                ),
            );
        }
        if let Some(db) = runner.db.take() {
            let _ = db.close();
        }
        return false;
    };
    tally.faults_hit += 1;

    // A write whose own log operation failed must not have returned Ok.
    for op in injected.iter().filter(|op| is_wal_write(op)) {
        if let Some(&(i, _, _)) = step_ops
            .iter()
            .find(|&&(_, b, e)| b <= op.index && op.index < e)
            && matches!(w.steps[i], Step::Write { .. })
            && !runner.errors.iter().any(|e| e.step == i)
        {
            fail(
                tally,
                format!("step {i} returned Ok although its {op} failed"),
            );
        }
    }
    for v in &runner.violations {
        fail(tally, v.clone());
    }

    // After a failed WAL or MANIFEST operation of the live store, writes are refused.
    let mut must_refuse = false;
    if let Some(db) = &runner.db {
        // A barrier: a running compaction or flush finishes (and records its failure)
        // before compact_range gets past the flush and the compaction lock.
        let _ = db.compact_range(None, None);
        // Removing an obsolete file is best effort: its failure leaves the store writable.
        must_refuse = injected.iter().any(|op| {
            op.index >= opened_at && op.kind != OpKind::RemoveFile && is_log_or_manifest(&op.path)
        });
    }
    if must_refuse {
        tally.read_only_checked += 1;
        let probe = Step::Write {
            entries: vec![(b"~after-failure".to_vec(), Some(b"x".to_vec()))],
            sync: true,
        };
        let errors = runner.errors.len();
        runner.step(usize::MAX, &probe);
        match runner.errors.get(errors) {
            Some(e) if e.read_only => {}
            other => fail(
                tally,
                format!("after {first} failed, a write returned {other:?} instead of ReadOnly"),
            ),
        }
    }
    if let Some(db) = runner.db.take() {
        let _ = db.close();
    }

    // A machine crash now: what was made durable must come back.
    let (floor, acked, issued) = runner.progress.load();
    let crash = ctl.capture();
    // The base image, and one where part of the unsynced state survives, chosen by k.
    let data = UnsyncedData::ALL[k % UnsyncedData::ALL.len()];
    let names = [UnsyncedNames::Forget, UnsyncedNames::Keep][k / UnsyncedData::ALL.len() % 2];
    for (data, names) in [(UnsyncedData::Drop, UnsyncedNames::Forget), (data, names)] {
        let image = crash.image(data, names, seed);
        tally.reopens_checked += 1;
        if let Err(e) = check_image(&w.options, image, &runner.oracle, floor, issued) {
            fail(
                tally,
                format!("after a machine crash, image {data:?}/{names:?} (must hold {floor}): {e}"),
            );
        }
    }
    // A process restart on the same file system: every acknowledged write comes back.
    ctl.clear_faults();
    let errors_before = runner.errors.len();
    runner.open(w.steps.len());
    tally.reopens_checked += 1;
    match runner.db.take() {
        Some(db) => {
            let mut b = WriteBatch::new();
            b.put(b"~after-reopen", b"x");
            if let Err(e) = db.write_opt(b, WriteOptions { sync: true }) {
                fail(tally, format!("the reopened store refused a write: {e}"));
            }
            if let Err(e) = db.close() {
                fail(tally, format!("close after reopen: {e}"));
            }
        }
        None => fail(
            tally,
            format!(
                "reopen without faults failed (acked {acked}): {:?}",
                runner.errors.get(errors_before..)
            ),
        ),
    }
    for v in &runner.violations {
        if !tally.failures.iter().any(|f| f.ends_with(v.as_str())) {
            fail(tally, v.clone());
        }
    }
    true
}

fn report(what: &str, tally: &Tally) {
    println!(
        "crash_ioerr {what}: {} runs, {} faults hit ({} targets missed), {} read-only checks, \
         {} reopens checked",
        tally.runs, tally.faults_hit, tally.missed, tally.read_only_checked, tally.reopens_checked
    );
    assert_eq!(background_panics(), 0, "a background thread panicked");
    if !tally.failures.is_empty() {
        panic!(
            "{} failures; first ones:\n{}",
            tally.failures.len(),
            tally
                .failures
                .iter()
                .take(12)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Every mutating op of every workload fails once, and from then on.
#[test]
fn fail_every_op() {
    count_background_panics();
    let full = full();
    let mut tally = Tally::default();
    let seeds = if full { 3 } else { 1 };
    for seed in 200..200 + seeds {
        for w in small_workloads(seed, full) {
            let reference = reference_ops(&w);
            for mode in [FailMode::Once, FailMode::FromThenOn] {
                for k in 0..reference.len() {
                    run_with_fault(&w, &reference, k, mode, seed, &mut tally);
                }
            }
        }
    }
    report("write faults", &tally);
}

/// The crash-test workloads, cut short: the loop reruns the workload once per op.
fn small_workloads(seed: u64, full: bool) -> Vec<Workload> {
    let mut ws = workloads(seed, 1);
    if !full {
        for w in &mut ws {
            let mut writes = 0;
            let cut = w
                .steps
                .iter()
                .position(|s| {
                    if matches!(s, Step::Write { .. }) {
                        writes += 1;
                    }
                    writes > 24
                })
                .unwrap_or(w.steps.len());
            w.steps.truncate(cut);
        }
    }
    ws
}

/// A MANIFEST switch whose directory sync fails after CURRENT was renamed: the store must
/// stay openable (regression: the obsolete-file sweep at close deleted the MANIFEST that
/// CURRENT named).
#[test]
fn failed_manifest_switch_after_current_rename() {
    let options = |env: &Env| {
        let mut o = opts_small(env);
        // Above one snapshot of a new store (its options record alone is ~1 KB), so
        // the open appends to the first MANIFEST and later commits switch often.
        o.max_manifest_bytes = 1500;
        o
    };
    // Skip the CURRENT written when the store is created.
    for skip in 1..5 {
        let fs = FaultFs::new(MemFs::new());
        let ctl = fs.control();
        let renamed = AtomicBool::new(false);
        let seen = AtomicUsize::new(0);
        ctl.fail_when(
            Arc::new(move |op: &Op| {
                if op.kind == OpKind::Rename && file_class(&op.path) == "current" {
                    renamed.store(true, Ordering::SeqCst);
                    return false;
                }
                op.kind == OpKind::SyncDir
                    && renamed.swap(false, Ordering::SeqCst)
                    && seen.fetch_add(1, Ordering::SeqCst) == skip
            }),
            FailMode::Once,
        );
        let env = Env::new(Arc::new(fs.clone()));
        let db = Db::open(DIR, options(&env)).unwrap();
        let mut acked = Model::new();
        for i in 0..100u32 {
            let (k, v) = (format!("k{i:03}").into_bytes(), vec![b'v'; 200]);
            if db.put(&k, &v).is_ok() {
                acked.insert(k, v);
            }
        }
        let _ = db.flush();
        drop(db);
        assert_eq!(
            ctl.injected().len(),
            1,
            "skip {skip}: the fault was not hit"
        );
        ctl.clear_faults();
        let db = Db::open(DIR, options(&env))
            .unwrap_or_else(|e| panic!("skip {skip}: reopen failed: {e}"));
        assert_eq!(scan(&db).unwrap(), acked, "skip {skip}");
    }
}

/// Keys, values and a full read pass (every get, one scan) for the read-fault loop.
fn read_pass(db: &Db, keys: &[Vec<u8>], model: &Model) -> Result<(), String> {
    for k in keys {
        match db.get(k) {
            Ok(got) if got.as_ref() != model.get(k) => {
                return Err(format!(
                    "get({}) returned a wrong value",
                    String::from_utf8_lossy(k)
                ));
            }
            _ => {}
        }
    }
    if let Ok(it) = db.iter(IterOptions::default()) {
        let mut expected = model.iter();
        for item in it {
            let Ok((k, v)) = item else { break };
            if expected.next() != Some((&k, &v)) {
                return Err(format!(
                    "scan returned a wrong entry at {}",
                    String::from_utf8_lossy(&k)
                ));
            }
        }
    }
    Ok(())
}

/// Fail the `n`-th read (once, and from then on) for every read of a full pass over a store
/// with data in the memtable and on several levels, then flip bits in table reads: every
/// get and scan returns the right value or an error, never a wrong value or a panic, and
/// once the fault is cleared everything reads correctly again.
#[test]
fn read_faults_and_flipped_bits() {
    count_background_panics();
    let fs = FaultFs::new(MemFs::new());
    let ctl = fs.control();
    let env = Env::new(Arc::new(fs.clone()));
    let mut o = opts_small(&env);
    // No block cache: every pass reads the files.
    o.block_cache_bytes = 0;
    // No automatic compaction: the tree (and so the reads of a pass) must not depend on
    // when the background thread runs.
    o.level0_compaction_trigger = 1000;
    o.level0_slowdown_trigger = 1000;
    o.level0_stop_trigger = 1000;
    o.max_bytes_for_level_base = 1 << 40;
    let db = Db::open(DIR, o).unwrap();
    let keys: Vec<Vec<u8>> = (0..120u32)
        .map(|i| format!("key{i:03}").into_bytes())
        .collect();
    for (i, k) in keys.iter().enumerate() {
        if i % 7 != 3 {
            db.put(k, format!("value-{i}").repeat(1 + i % 5).as_bytes())
                .unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    for (i, k) in keys.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        if i % 2 == 0 {
            db.delete(k).unwrap();
        } else {
            db.put(k, b"overwritten").unwrap();
        }
    }
    db.flush().unwrap();
    for k in keys.iter().skip(5).step_by(11) {
        db.put(k, b"in-the-memtable").unwrap();
    }
    let model = scan(&db).unwrap();
    let start = ctl.reads();
    read_pass(&db, &keys, &model).unwrap();
    let reads = ctl.reads() - start;
    eprintln!("a full read pass makes {reads} reads");
    assert!(reads > 100, "the pass should read the files: {reads} reads");

    let mut failures = Vec::new();
    let stride = if full() { 1 } else { 3 };
    for n in (0..reads).step_by(stride) {
        for mode in [FailMode::Once, FailMode::FromThenOn] {
            ctl.fail_read_at(ctl.reads() + n, mode);
            let r = catch_unwind(AssertUnwindSafe(|| read_pass(&db, &keys, &model)));
            ctl.clear_faults();
            match r {
                Err(_) => failures.push(format!("read {n} {mode:?}: a read panicked")),
                Ok(Err(e)) => failures.push(format!("read {n} {mode:?}: {e}")),
                Ok(Ok(())) => {}
            }
            // No lasting damage: a failed read is not cached anywhere.
            if let Err(e) = read_pass(&db, &keys, &model) {
                failures.push(format!("after read fault {n} {mode:?}: {e}"));
            }
        }
    }
    for seed in 0..if full() { 200 } else { 40 } {
        ctl.flip_read_bits(".sst", 3, seed);
        let r = catch_unwind(AssertUnwindSafe(|| read_pass(&db, &keys, &model)));
        ctl.clear_faults();
        match r {
            Err(_) => failures.push(format!("flip seed {seed}: a read panicked")),
            Ok(Err(e)) => failures.push(format!("flip seed {seed}: {e}")),
            Ok(Ok(())) => {}
        }
        if let Err(e) = read_pass(&db, &keys, &model) {
            failures.push(format!("after flips of seed {seed}: {e}"));
        }
    }
    let injected = ctl.injected_reads();
    let flips = ctl.flipped_bits();
    println!(
        "crash_ioerr read faults: {reads} reads per pass, {injected} reads failed, {flips} bits flipped"
    );
    assert!(injected > 0 && flips > 0);
    assert_eq!(background_panics(), 0, "a background thread panicked");
    assert!(
        failures.is_empty(),
        "{} failures: {:#?}",
        failures.len(),
        &failures[..failures.len().min(12)]
    );
}
