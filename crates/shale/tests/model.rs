//! The model test: random streams of operations against a `BTreeMap`, over every preset.
//!
//! CI runs a fixed set of seeds. To run more locally:
//! `SHALE_MODEL_SEEDS=500 cargo test --release --test model -- --nocapture`, or one seed
//! with `SHALE_MODEL_SEED=1234`. A failure prints the seed and the step.

#![allow(
    clippy::expect_used,
    reason = "a test helper's failure is a test failure"
)]

use std::collections::BTreeMap;
use std::ops::Bound;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use shale::env::Env;
use shale::{Db, IterOptions, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A preset name, or a combination of the axes by its name (`shale::Axes::name`, e.g.
/// `flsm+vlog+skiplist+sst`: one no paper built, the axes are independent).
///
/// `pebblesdb/tiered` is the `pebblesdb` preset with its earlier compaction policy
/// (`FlsmPolicy::Tiered`: overflowing guards merged in place).
fn small_options(design: &str, env: &Env) -> Options {
    if let Some(d) = design.strip_suffix("/tiered") {
        let mut o = small_options(d, env);
        o.flsm.policy = shale::FlsmPolicy::Tiered;
        return o;
    }
    let mut o = match shale::Axes::all().into_iter().find(|a| a.name() == design) {
        Some(axes) => Options::preset("leveldb").expect("preset").with_axes(axes),
        None => Options::preset(design).expect("preset"),
    };
    o.env = env.clone();
    // Small sizes so that a few thousand operations flush and compact many times.
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 32 * 1024;
    o.level_size_multiplier = 4;
    o.table.block_size = 512;
    o.block_cache_bytes = 64 * 1024;
    o.max_open_files = 32;
    // Compactions run side by side, so the model checks the parallel path.
    o.max_background_compactions = 2;
    // wisckey: separate most values, and rotate value-log segments every few KiB.
    o.min_separated_value_size = 16;
    o.vlog_segment_size = 8 * 1024;
    // FLSM: guards from the few hundred keys of the model, and guards that overflow often.
    o.flsm.top_level_bits = 5;
    o.flsm.bit_decrement = 1;
    o.flsm.max_sstables_per_guard = 2;
    o.flsm.seek_compaction_trigger = 3;
    // Leveled: gets and seeks that look into several tables soon make them compacted.
    o.leveled.seek_compaction_min_seeks = 3;
    // Seeks into the last level's guards of two or more tables run on threads.
    o.flsm.parallel_seek_min_tables = 2;
    // LSM-trie: containers compact after three sub-levels, and many keys are sampled for
    // the last level's garbage estimate (so collection runs).
    o.trie.max_sub_levels = 3;
    o.trie.gc_sample_bits = 1;
    o
}

/// Per-read choices at random: answers never depend on them.
fn read_options(rng: &mut StdRng) -> ReadOptions {
    ReadOptions {
        verify_checksums: [None, Some(true), Some(false)][rng.random_range(0..3)],
        fill_cache: rng.random_bool(0.5),
    }
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    key_number(rng.random_range(0..400))
}

/// Key `n` of the key space (`0..400`). A small key space so that overwrites, deletes and
/// hits are frequent; some keys share prefixes, some hold 0x00 and 0xff bytes.
fn key_number(n: u32) -> Vec<u8> {
    let mut k = format!("k{:03}", n % 200).into_bytes();
    if n >= 200 {
        k.push(if n.is_multiple_of(2) { 0x00 } else { 0xff });
    }
    k
}

/// Everything the store holds (at `snapshot`), in key order: a scan, or for a store that
/// answers point reads only (`Db::supports_scans`), a get of every key of the key space.
fn contents(db: &Db, snapshot: Option<&Snapshot>) -> Vec<(Vec<u8>, Vec<u8>)> {
    if db.supports_scans() {
        let opts = match snapshot {
            Some(s) => IterOptions::default().at(s),
            None => IterOptions::default(),
        };
        return scan(db, opts, false);
    }
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = (0..400)
        .map(key_number)
        .filter_map(|k| {
            let v = match snapshot {
                Some(s) => db.get_at(&k, s),
                None => db.get(&k),
            };
            v.expect("get").map(|v| (k, v))
        })
        .collect();
    out.sort();
    out
}

/// A store without scans refuses them with `Unsupported`, never with wrong data.
fn check_scans_refused(db: &Db) {
    assert!(matches!(
        db.iter(IterOptions::default()),
        Err(shale::Error::Unsupported(_))
    ));
    assert!(matches!(
        db.cursor(IterOptions::default()),
        Err(shale::Error::Unsupported(_))
    ));
}

/// A range `[start, end)` of the key space for `delete_range`: mostly short (a few keys),
/// sometimes empty or wide.
fn key_range(rng: &mut StdRng) -> (Vec<u8>, Vec<u8>) {
    let a = key(rng);
    let b = if rng.random_bool(0.7) {
        let mut b = a.clone();
        b.truncate(rng.random_range(3..=a.len()));
        if let Some(last) = b.last_mut() {
            *last = last.saturating_add(rng.random_range(0..3));
        }
        b
    } else {
        key(rng)
    };
    if a <= b { (a, b) } else { (b, a) }
}

/// The model's `delete_range`: every key in `[start, end)` removed.
fn delete_range(model: &mut Model, start: &[u8], end: &[u8]) {
    let doomed: Vec<Vec<u8>> = model
        .range::<[u8], _>((Bound::Included(start), Bound::Excluded(end)))
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        model.remove(&k);
    }
}

fn value(rng: &mut StdRng, step: usize) -> Vec<u8> {
    let len = if rng.random_bool(0.05) {
        rng.random_range(500..3000)
    } else {
        rng.random_range(0..40)
    };
    let mut v = format!("v{step}-").into_bytes();
    v.resize(len.max(v.len()), b'x' + (step % 3) as u8);
    v
}

fn expected_range(
    model: &Model,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    prefix: Option<&[u8]>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let lower = lo.map_or(Bound::Unbounded, |l| Bound::Included(l.to_vec()));
    let upper = hi.map_or(Bound::Unbounded, |h| Bound::Excluded(h.to_vec()));
    if let (Some(l), Some(h)) = (lo, hi)
        && l >= h
    {
        return Vec::new();
    }
    model
        .range((lower, upper))
        .filter(|(k, _)| prefix.is_none_or(|p| k.starts_with(p)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn scan(db: &Db, opts: IterOptions, reverse: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let it = db.iter(opts).expect("iter");
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = if reverse {
        it.rev().map(|r| r.expect("scan item")).collect()
    } else {
        it.map(|r| r.expect("scan item")).collect()
    };
    if reverse {
        out.reverse();
    }
    out
}

fn run_seed(preset: &str, seed: u64, steps: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let env = Env::memory();
    let dir = "/model";
    let mut db = Some(Db::open(dir, small_options(preset, &env)).expect("open"));
    let mut model = Model::new();
    let mut snapshots: Vec<(Snapshot, Model)> = Vec::new();
    for step in 0..steps {
        let d = db.as_ref().expect("db open");
        let ctx = || format!("preset {preset} seed {seed} step {step}");
        match rng.random_range(0..100) {
            0..=34 => {
                let (k, v) = (key(&mut rng), value(&mut rng, step));
                d.put(&k, &v)
                    .unwrap_or_else(|e| panic!("{}: put: {e}", ctx()));
                model.insert(k, v);
            }
            35..=44 => {
                let k = key(&mut rng);
                d.delete(&k)
                    .unwrap_or_else(|e| panic!("{}: delete: {e}", ctx()));
                model.remove(&k);
            }
            45..=49 => {
                let mut b = WriteBatch::new();
                let mut staged = model.clone();
                for _ in 0..rng.random_range(1..20) {
                    let k = key(&mut rng);
                    if d.supports_scans() && rng.random_bool(0.05) {
                        // A range tombstone among the batch's puts and deletes: later
                        // entries of the batch win over it, earlier ones are deleted.
                        let (start, end) = key_range(&mut rng);
                        b.delete_range(&start, &end);
                        delete_range(&mut staged, &start, &end);
                    } else if rng.random_bool(0.7) {
                        let v = value(&mut rng, step);
                        b.put(&k, &v);
                        staged.insert(k, v);
                    } else {
                        b.delete(&k);
                        staged.remove(&k);
                    }
                }
                let sync = rng.random_bool(0.2);
                d.write_opt(b, WriteOptions { sync })
                    .unwrap_or_else(|e| panic!("{}: batch: {e}", ctx()));
                model = staged;
            }
            50..=51 => {
                let (start, end) = key_range(&mut rng);
                let r = d.delete_range(&start, &end);
                if d.supports_scans() {
                    r.unwrap_or_else(|e| panic!("{}: delete_range: {e}", ctx()));
                    delete_range(&mut model, &start, &end);
                } else {
                    // A layout without key order refuses it and changes nothing.
                    assert!(
                        matches!(r, Err(shale::Error::Unsupported(_))),
                        "{}: delete_range on a point-only layout: {r:?}",
                        ctx()
                    );
                }
            }
            52..=71 => {
                let k = key(&mut rng);
                let got = if rng.random_bool(0.5) {
                    d.get(&k)
                } else {
                    d.get_opt(&k, None, read_options(&mut rng))
                }
                .unwrap_or_else(|e| panic!("{}: get: {e}", ctx()));
                assert_eq!(got.as_ref(), model.get(&k), "{}: get {:?}", ctx(), k);
            }
            72..=79 => {
                let (mut lo, mut hi, mut prefix) = (None, None, None);
                match rng.random_range(0..4) {
                    0 => {}
                    1 => {
                        lo = Some(key(&mut rng));
                        hi = Some(key(&mut rng));
                    }
                    2 => lo = Some(key(&mut rng)),
                    _ => prefix = Some(key(&mut rng)[..rng.random_range(1..4)].to_vec()),
                }
                let reverse = rng.random_bool(0.4);
                if !d.supports_scans() {
                    check_scans_refused(d);
                    continue;
                }
                let opts = IterOptions {
                    lower_bound: lo.clone(),
                    upper_bound: hi.clone(),
                    prefix: prefix.clone(),
                    snapshot: None,
                    read: read_options(&mut rng),
                };
                let got = scan(d, opts, reverse);
                let want = expected_range(&model, lo.as_deref(), hi.as_deref(), prefix.as_deref());
                assert_eq!(
                    got,
                    want,
                    "{}: scan lo={lo:?} hi={hi:?} prefix={prefix:?} reverse={reverse}",
                    ctx()
                );
            }
            80..=83 => {
                if snapshots.len() < 4 {
                    snapshots.push((d.snapshot(), model.clone()));
                } else {
                    snapshots.remove(rng.random_range(0..snapshots.len()));
                }
            }
            84..=87 => {
                if let Some((snap, frozen)) =
                    snapshots.get(rng.random_range(0..snapshots.len().max(1)))
                {
                    let k = key(&mut rng);
                    let got = d
                        .get_at(&k, snap)
                        .unwrap_or_else(|e| panic!("{}: get_at: {e}", ctx()));
                    assert_eq!(got.as_ref(), frozen.get(&k), "{}: get_at {:?}", ctx(), k);
                    let got = if d.supports_scans() {
                        scan(d, IterOptions::default().at(snap), rng.random_bool(0.5))
                    } else {
                        contents(d, Some(snap))
                    };
                    let want = expected_range(frozen, None, None, None);
                    assert_eq!(got, want, "{}: scan at snapshot", ctx());
                }
            }
            88..=90 => d
                .flush()
                .unwrap_or_else(|e| panic!("{}: flush: {e}", ctx())),
            91..=92 => {
                let (a, b) = (key(&mut rng), key(&mut rng));
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                let whole = rng.random_bool(0.5);
                let r = if whole {
                    d.compact_range(None, None)
                } else {
                    d.compact_range(Some(&a), Some(&b))
                };
                r.unwrap_or_else(|e| panic!("{}: compact: {e}", ctx()));
                // Value-log garbage collection after the compaction found garbage, with the
                // model's snapshots open (a no-op without a value log).
                d.run_value_gc()
                    .unwrap_or_else(|e| panic!("{}: value gc: {e}", ctx()));
            }
            93..=95 => {
                // A cursor walk with direction changes, checked against the model.
                if !d.supports_scans() {
                    check_scans_refused(d);
                    continue;
                }
                let mut c = d.cursor(IterOptions::default()).expect("cursor");
                let start = key(&mut rng);
                c.seek(&start).expect("seek");
                let keys: Vec<&Vec<u8>> = model.keys().collect();
                let mut pos = keys.partition_point(|k| k.as_slice() < start.as_slice());
                for _ in 0..20 {
                    match keys.get(pos) {
                        Some(k) => {
                            assert!(c.valid(), "{}: cursor should be at {:?}", ctx(), k);
                            assert_eq!(c.key(), k.as_slice(), "{}: cursor key", ctx());
                            assert_eq!(
                                Some(&c.value().to_vec()),
                                model.get(*k),
                                "{}: cursor value",
                                ctx()
                            );
                        }
                        None => {
                            assert!(!c.valid(), "{}: cursor should be exhausted", ctx());
                            break;
                        }
                    }
                    if rng.random_bool(0.6) {
                        c.next().expect("next");
                        pos += 1;
                    } else {
                        c.prev().expect("prev");
                        if pos == 0 {
                            assert!(!c.valid(), "{}: cursor before first", ctx());
                            break;
                        }
                        pos -= 1;
                    }
                }
            }
            _ => {
                // Reopen: snapshots die with the handle.
                snapshots.clear();
                let old = db.take().expect("db");
                old.close()
                    .unwrap_or_else(|e| panic!("{}: close: {e}", ctx()));
                db = Some(
                    Db::open(dir, small_options(preset, &env))
                        .unwrap_or_else(|e| panic!("{}: reopen: {e}", ctx())),
                );
            }
        }
    }
    // Final full comparison, then once more after a reopen.
    let d = db.take().expect("db");
    let st = d.stats();
    eprintln!(
        "preset {preset} seed {seed}: {} flushes, {} compactions since the last open; levels {}",
        st.flushes,
        st.compactions,
        d.property("shale.levels").unwrap_or_default()
    );
    assert!(
        st.levels.iter().skip(1).any(|l| l.files > 0),
        "preset {preset} seed {seed}: the run should push data below level 0"
    );
    assert_eq!(contents(&d, None), expected_range(&model, None, None, None));
    snapshots.clear();
    d.close().expect("close");
    let d = Db::open(dir, small_options(preset, &env)).expect("final reopen");
    assert_eq!(
        contents(&d, None),
        expected_range(&model, None, None, None),
        "preset {preset} seed {seed}: after final reopen"
    );
}

fn seeds() -> Vec<u64> {
    if let Ok(s) = std::env::var("SHALE_MODEL_SEED") {
        return vec![s.parse().expect("SHALE_MODEL_SEED must be a number")];
    }
    let n: u64 = std::env::var("SHALE_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    (0..n).map(|i| 0x5EED_0000 + i).collect()
}

#[test]
fn model_every_preset() {
    let steps: usize = std::env::var("SHALE_MODEL_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    for preset in Options::available_presets() {
        for seed in seeds() {
            run_seed(preset, seed, steps);
        }
    }
}

/// The FLSM layout's other compaction policy (the preset runs the paper's).
#[test]
fn model_flsm_tiered_policy() {
    let steps: usize = std::env::var("SHALE_MODEL_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    for seed in seeds() {
        run_seed("pebblesdb/tiered", seed, steps);
    }
}

/// Every valid combination of the axes (`shale::Axes::all`): the model half of the design
/// matrix (the crash half is `crash_enum::design_matrix_crash`). The presets are some of
/// these combinations with their own tuning; the rest (the FLSM layout with the value
/// log, ...) are combinations no paper built.
#[test]
fn design_matrix_model() {
    let steps: usize = std::env::var("SHALE_MODEL_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    // Two of CI's seeds per combination (the presets run all four); every seed when asked.
    let per = if std::env::var("SHALE_MODEL_SEEDS").is_ok() {
        usize::MAX
    } else {
        2
    };
    for axes in shale::Axes::all() {
        for seed in seeds().into_iter().take(per) {
            run_seed(&axes.name(), seed, steps);
        }
    }
}
