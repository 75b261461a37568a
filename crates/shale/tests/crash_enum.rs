//! Crash enumeration: crash every workload at every mutating file-system operation, reopen
//! the crash image, and check it against the oracle (see `crash_common`).
//!
//! Two ways to reach crash point `k`:
//! - *one pass*: a file-system hook captures the whole file system before every op of a
//!   single run, so all `N` crash points of a run cost one run;
//! - *rerun*: the workload runs again with `crash_at(k)`, so op `k` and everything after it
//!   fail and the engine has to stop on its own; this also checks that no engine call
//!   panics or hangs after the crash.
//!
//! Each crash point gives several images: unsynced data and directory entries dropped (the
//! base model), and variants where part of the unsynced state survives (a torn prefix, a
//! random subset of pages, a torn last append, all of it; directory entries kept).
//!
//! CI checks a few thousand images. `SHALE_CRASH_FULL=1` checks every variant at every op
//! of more seeds and reruns at every op:
//! `SHALE_CRASH_FULL=1 cargo test --release -p shale --test crash_enum -- --nocapture`.
//! `SHALE_CRASH_SEEDS=n` sets the number of seeds; `SHALE_CRASH_ONLY=name` keeps the reruns
//! of the workloads whose name contains `name`.

mod crash_common;

use std::sync::Arc;

use crash_common::*;
use parking_lot::Mutex;
use shale::env::Env;
use shale::env::fault::{CrashState, FaultFs, OpKind, OpView, UnsyncedData, UnsyncedNames};
use shale::env::mem::MemFs;

/// One captured crash point and what the workload had issued and acknowledged by then.
struct Captured {
    state: CrashState,
    floor: usize,
    acked: usize,
    issued: usize,
}

const NAMES: [UnsyncedNames; 2] = [UnsyncedNames::Forget, UnsyncedNames::Keep];

/// The images checked at crash point `k`: always the base model, plus (in CI) one other
/// variant chosen by `k`, or (full) every variant.
fn variants(k: u64, full: bool) -> Vec<(UnsyncedData, UnsyncedNames)> {
    let all: Vec<_> = UnsyncedData::ALL
        .iter()
        .flat_map(|&d| NAMES.iter().map(move |&n| (d, n)))
        .collect();
    if full {
        return all;
    }
    let others = &all[1..];
    vec![all[0], others[(k as usize) % others.len()]]
}

#[derive(Default)]
struct Tally {
    ops: u64,
    images: u64,
    failures: Vec<String>,
    /// Runs of the LWC layout, and the table appends (reopens) they made: crash points
    /// inside appends are among the ones checked.
    lwc_runs: u64,
    lwc_appends: u64,
}

impl Tally {
    fn check(
        &mut self,
        name: &str,
        options: &OptionsFn,
        c: &Captured,
        oracle: &Oracle,
        seed: u64,
        full: bool,
    ) {
        let op = match c.state.op() {
            Some(op) => op.to_string(),
            None => format!("op {}", c.state.index()),
        };
        for (data, names) in variants(c.state.index(), full) {
            // With everything the OS was handed kept, the crash is only a process crash:
            // every acknowledged write must survive, synced or not.
            let lo = if (data, names) == (UnsyncedData::Keep, UnsyncedNames::Keep) {
                c.acked
            } else {
                c.floor
            };
            let image = c.state.image(data, names, seed);
            self.images += 1;
            if let Err(e) = check_image(options, image, oracle, lo, c.issued) {
                self.failures.push(format!(
                    "{name}: crash at {op}, image {data:?}/{names:?} (must hold {lo}, issued {}): {e}",
                    c.issued
                ));
            }
        }
    }
}

/// Run `w` once, capturing a crash point before every op with `index % stride == phase`,
/// and check each captured point's images as soon as the step that made it returns.
fn one_pass(w: &Workload, stride: u64, phase: u64, seed: u64, full: bool, tally: &mut Tally) {
    let fs = FaultFs::new(MemFs::new());
    let ctl = fs.control();
    let mut runner = Runner::new(Env::new(Arc::new(fs.clone())), Arc::clone(&w.options));
    let queue: Arc<Mutex<Vec<Captured>>> = Arc::default();
    let appends = Arc::new(std::sync::atomic::AtomicU64::new(0));
    {
        let queue = Arc::clone(&queue);
        let progress = Arc::clone(&runner.progress);
        let appends = Arc::clone(&appends);
        ctl.set_hook(Some(Arc::new(move |v: &OpView<'_>| {
            if v.op().kind == OpKind::Reopen {
                appends.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            if v.op().index % stride != phase {
                return;
            }
            // Read what must survive before forking and what may survive after it.
            let floor = progress.floor.load(std::sync::atomic::Ordering::SeqCst);
            let acked = progress.acked.load(std::sync::atomic::Ordering::SeqCst);
            let state = v.capture();
            let issued = progress.issued.load(std::sync::atomic::Ordering::SeqCst);
            queue.lock().push(Captured {
                state,
                floor,
                acked,
                issued,
            });
        })));
    }
    let drain = |runner: &Runner, tally: &mut Tally| {
        let captured = std::mem::take(&mut *queue.lock());
        for c in &captured {
            tally.check(&w.name, &w.options, c, &runner.oracle, seed, full);
        }
    };
    runner.open(0);
    drain(&runner, tally);
    for (i, step) in w.steps.iter().enumerate() {
        runner.step(i, step);
        drain(&runner, tally);
    }
    if let Some(db) = runner.db.take()
        && let Err(e) = db.close()
    {
        panic!("close without faults failed: {e}");
    }
    drain(&runner, tally);
    ctl.set_hook(None);
    assert!(
        runner.errors.is_empty() && runner.violations.is_empty(),
        "{}: a run without faults failed: {:?} {:?}",
        w.name,
        runner.errors,
        runner.violations
    );
    tally.ops += ctl.ops();
    if w.name.contains("lwc") {
        tally.lwc_runs += 1;
        tally.lwc_appends += appends.load(std::sync::atomic::Ordering::Relaxed);
    }
}

/// Rerun `w` with a crash at op `k` (every later op fails too), then check the images.
/// Returns false once `k` is past the end of the run.
fn rerun(w: &Workload, k: u64, seed: u64, full: bool, tally: &mut Tally) -> bool {
    let fs = FaultFs::new(MemFs::new());
    let ctl = fs.control();
    let mut runner = Runner::new(Env::new(Arc::new(fs.clone())), Arc::clone(&w.options));
    let at_crash: Arc<Mutex<Option<(usize, usize, usize)>>> = Arc::default();
    {
        let at_crash = Arc::clone(&at_crash);
        let progress = Arc::clone(&runner.progress);
        ctl.set_hook(Some(Arc::new(move |v: &OpView<'_>| {
            if v.op().index == k {
                *at_crash.lock() = Some(progress.load());
            }
        })));
    }
    ctl.crash_at(k);
    runner.open(0);
    for (i, step) in w.steps.iter().enumerate() {
        runner.step(i, step);
    }
    if let Some(db) = runner.db.take() {
        // After the crash the final log sync fails; the result does not matter here.
        let _ = db.close();
    }
    let Some(state) = ctl.take_crash() else {
        return false;
    };
    let Some((floor, acked, issued)) = *at_crash.lock() else {
        unreachable!("the hook runs before the crash")
    };
    if !runner.violations.is_empty() {
        tally
            .failures
            .push(format!("{} crash at {k}: {:?}", w.name, runner.violations));
    }
    let c = Captured {
        state,
        floor,
        acked,
        issued,
    };
    tally.ops += 1;
    tally.check(&w.name, &w.options, &c, &runner.oracle, seed, full);
    true
}

fn seeds(default: u64) -> u64 {
    std::env::var("SHALE_CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn report(what: &str, tally: &Tally) {
    println!(
        "crash_enum {what}: {} crash points, {} crash images checked",
        tally.ops, tally.images
    );
    if tally.lwc_runs > 0 {
        println!(
            "crash_enum {what}: {} lwc runs appended to tables {} times",
            tally.lwc_runs, tally.lwc_appends
        );
        assert!(
            tally.lwc_appends > 0,
            "the lwc workloads never appended to a table"
        );
    }
    if !tally.failures.is_empty() {
        let shown: Vec<&String> = tally.failures.iter().take(12).collect();
        panic!(
            "{} of {} crash images failed; first ones:\n{}",
            tally.failures.len(),
            tally.images,
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Every op of every workload in one pass each.
#[test]
fn crash_at_every_op_one_pass() {
    let full = full();
    let mut tally = Tally::default();
    for seed in 0..seeds(if full { 8 } else { 2 }) {
        for w in workloads(seed, if full { 2 } else { 1 }) {
            one_pass(&w, 1, 0, seed, full, &mut tally);
        }
    }
    report("one pass", &tally);
    assert!(
        tally.images >= 2000,
        "too few crash images: {}",
        tally.images
    );
}

/// Crash by rerunning: op `k` and every later op fail; every `stride`-th `k` in CI.
#[test]
fn crash_at_op_k_rerun() {
    let full = full();
    let mut tally = Tally::default();
    // `SHALE_CRASH_ONLY=name` keeps the workloads whose name contains it (to chase a flake).
    let only = std::env::var("SHALE_CRASH_ONLY").unwrap_or_default();
    for seed in 100..100 + seeds(if full { 4 } else { 1 }) {
        for w in workloads(seed, 1) {
            if !w.name.contains(only.as_str()) {
                continue;
            }
            let stride = if full { 1 } else { 23 };
            let mut k = seed % stride;
            while rerun(&w, k, seed, full, &mut tally) {
                k += stride;
            }
        }
    }
    report("rerun", &tally);
}

/// Every valid combination of the axes (`shale::Axes::all`), crashed at every op of one
/// run: the crash-recovery half of the design matrix (the model half is
/// `model::design_matrix_model`).
#[test]
fn design_matrix_crash() {
    let full = full();
    let mut tally = Tally::default();
    let combos = shale::Axes::all();
    for axes in &combos {
        for seed in 0..seeds(if full { 4 } else { 1 }) {
            one_pass(&matrix_workload(*axes, seed), 1, 0, seed, full, &mut tally);
        }
    }
    report("design matrix", &tally);
    assert!(
        tally.images >= 200 * combos.len() as u64,
        "too few crash images: {}",
        tally.images
    );
}
