//! The compaction filter (`shale::options::filter`): every layout and value placement runs
//! it the same way, snapshots protect what they see, a removal never brings back an older
//! version, a changed value is read back, and the value log sees the real value.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a test helper's failure is a test failure"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use shale::env::Env;
use shale::{
    CompactionFilter, Db, Decision, FilterContext, FilterReason, IterOptions, Options, ValuesKind,
};

/// Removes values that start with `drop`, upper-cases values that start with `up` (the
/// result starts with `UP`, which it keeps: the decision is the same each time).
#[derive(Debug, Default)]
struct Marked {
    /// Calls, and calls with a value of at least 100 bytes (a separated one in the value
    /// log stores below).
    calls: AtomicU64,
    long_values: AtomicU64,
    /// Every (reason, level) seen.
    contexts: Mutex<Vec<(FilterReason, usize)>>,
}

impl CompactionFilter for Marked {
    fn filter(&self, ctx: &FilterContext, _key: &[u8], value: &[u8]) -> Decision {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if value.len() >= 100 {
            self.long_values.fetch_add(1, Ordering::Relaxed);
        }
        {
            let mut c = self.contexts.lock();
            if !c.contains(&(ctx.reason, ctx.level)) {
                c.push((ctx.reason, ctx.level));
            }
        }
        if value.starts_with(b"drop") {
            Decision::Remove
        } else if value.starts_with(b"up") {
            Decision::ChangeValue(value.to_ascii_uppercase())
        } else {
            Decision::Keep
        }
    }
}

/// What the filter makes of a value once it has run.
fn filtered(v: &[u8]) -> Option<Vec<u8>> {
    if v.starts_with(b"drop") {
        None
    } else if v.starts_with(b"up") {
        Some(v.to_ascii_uppercase())
    } else {
        Some(v.to_vec())
    }
}

fn options(design: &str, env: &Env, filter: Arc<Marked>) -> Options {
    let mut o = match shale::Axes::all().into_iter().find(|a| a.name() == design) {
        Some(axes) => Options::preset("leveldb").expect("preset").with_axes(axes),
        None => Options::preset(design).expect("preset"),
    };
    o.env = env.clone();
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 32 * 1024;
    o.level_size_multiplier = 4;
    o.table.block_size = 512;
    o.max_background_compactions = 2;
    o.min_separated_value_size = 16;
    o.vlog_segment_size = 8 * 1024;
    o.flsm.top_level_bits = 5;
    o.flsm.bit_decrement = 1;
    o.flsm.max_sstables_per_guard = 2;
    o.compaction_filter = Some(filter);
    o
}

fn value(rng: &mut StdRng, step: usize) -> Vec<u8> {
    let head: &[u8] = match rng.random_range(0..10) {
        0..=2 => b"drop",
        3..=4 => b"up",
        _ => b"v",
    };
    let len = if rng.random_bool(0.1) {
        rng.random_range(100..600)
    } else {
        rng.random_range(0..40)
    };
    let mut v = head.to_vec();
    v.extend_from_slice(format!("{step}-").as_bytes());
    v.resize(len.max(v.len()), b'x');
    v
}

/// Everything the store holds: a scan, or for a store that answers point reads only
/// (`Db::supports_scans`), a get of every key these tests write.
fn scan(db: &Db, opts: IterOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    if !db.supports_scans() {
        let mut keys: Vec<Vec<u8>> = (0..300).map(|i| format!("k{i:03}").into_bytes()).collect();
        keys.extend([&b"a"[..], b"b", b"c", b"k"].map(<[u8]>::to_vec));
        keys.sort();
        return keys
            .into_iter()
            .filter_map(|k| db.get(&k).expect("get").map(|v| (k, v)))
            .collect();
    }
    db.iter(opts)
        .expect("iter")
        .map(|r| r.expect("scan item"))
        .collect()
}

/// A random workload: a value the filter leaves alone always reads back exactly; one it
/// removes or changes reads as written or as filtered, until a full compaction with no
/// snapshot, after which the store holds exactly the filtered model.
fn run(design: &str, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let env = Env::memory();
    let dir = "/filter";
    let f = Arc::new(Marked::default());
    let db = Db::open(dir, options(design, &env, Arc::clone(&f))).expect("open");
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut snapshots = Vec::new();
    let ctx = |step: usize| format!("design {design} seed {seed} step {step}");
    for step in 0..2500 {
        let k = format!("k{:03}", rng.random_range(0..300)).into_bytes();
        match rng.random_range(0..100) {
            0..=49 => {
                let v = value(&mut rng, step);
                db.put(&k, &v).expect("put");
                model.insert(k, v);
            }
            50..=59 => {
                db.delete(&k).expect("delete");
                model.remove(&k);
            }
            60..=84 => {
                let got = db.get(&k).expect("get");
                match model.get(&k) {
                    None => assert_eq!(got, None, "{}: get {k:?}", ctx(step)),
                    Some(v) => assert!(
                        got.as_ref() == Some(v) || got == filtered(v),
                        "{}: get {k:?} = {got:?}, model {v:?}",
                        ctx(step)
                    ),
                }
            }
            85..=88 => {
                if snapshots.len() < 3 {
                    snapshots.push((db.snapshot(), model.clone()));
                } else {
                    let (snap, frozen) = snapshots.remove(rng.random_range(0..snapshots.len()));
                    // A snapshot reads what it saw, or what the filter made of it only
                    // when a merge running as it was taken decided (`options::filter`).
                    for (k, v) in &frozen {
                        let got = db.get_at(k, &snap).expect("get_at");
                        assert!(
                            got.as_ref() == Some(v) || got == filtered(v),
                            "{}: get_at {k:?} = {got:?}, model {v:?}",
                            ctx(step)
                        );
                    }
                }
            }
            89..=94 => db.flush().expect("flush"),
            _ => db.compact_range(None, None).expect("compact"),
        }
    }
    snapshots.clear();
    // Reopen without automatic value-log collection: a relocation it made after the final
    // compaction would be a new write the compaction had not seen. (Recovery's flushes do
    // not filter; the compaction does.)
    db.close().expect("close");
    let mut quiet = options(design, &env, Arc::clone(&f));
    quiet.vlog_gc = false;
    let db = Db::open(dir, quiet.clone()).expect("reopen");
    db.compact_range(None, None).expect("final compact");
    let want: Vec<(Vec<u8>, Vec<u8>)> = model
        .iter()
        .filter_map(|(k, v)| filtered(v).map(|v| (k.clone(), v)))
        .collect();
    let got = scan(&db, IterOptions::default());
    if got != want {
        let keys = |v: &[(Vec<u8>, Vec<u8>)]| -> Vec<String> {
            v.iter()
                .map(|(k, v)| {
                    format!(
                        "{}={}",
                        String::from_utf8_lossy(k),
                        String::from_utf8_lossy(&v[..v.len().min(12)])
                    )
                })
                .collect()
        };
        let files: Vec<_> = db
            .live_files()
            .iter()
            .map(|f| {
                format!(
                    "L{} #{} {}..{} seq {:?} n={} t={}",
                    f.level,
                    f.number,
                    String::from_utf8_lossy(&f.smallest_key),
                    String::from_utf8_lossy(&f.largest_key),
                    f.seq_range,
                    f.entries,
                    f.tombstones
                )
            })
            .collect();
        panic!(
            "design {design} seed {seed}: after a full compaction\n got {:?}\nwant {:?}\nfiles {files:#?}",
            keys(&got),
            keys(&want)
        );
    }
    // Nothing the filter removed is left in the files: every entry is a live key.
    let entries: u64 = db.live_files().iter().map(|f| f.entries).sum();
    assert_eq!(
        entries,
        want.len() as u64,
        "design {design} seed {seed}: entries in the files after a full compaction ({})",
        db.property("shale.levels").unwrap_or_default()
    );
    assert!(f.calls.load(Ordering::Relaxed) > 0);
    if design.contains("vlog") {
        assert!(
            f.long_values.load(Ordering::Relaxed) > 0,
            "the filter sees separated values as the user wrote them"
        );
        db.run_value_gc().expect("value gc");
    }
    db.close().expect("close");
    let db = Db::open(dir, quiet).expect("reopen");
    assert_eq!(scan(&db, IterOptions::default()), want);
}

/// Every combination of the axes behaves the same under the filter.
#[test]
fn design_matrix_filter() {
    for axes in shale::Axes::all() {
        for seed in [1, 2] {
            run(&axes.name(), seed);
        }
    }
}

#[test]
fn a_snapshot_keeps_what_it_sees_until_released() {
    for design in Options::available_presets() {
        let env = Env::memory();
        let f = Arc::new(Marked::default());
        let db = Db::open("/s", options(design, &env, Arc::clone(&f))).unwrap();
        db.put(b"a", b"drop me").unwrap();
        db.put(b"b", b"up here").unwrap();
        db.put(b"c", b"keep").unwrap();
        let snap = db.snapshot();
        db.compact_range(None, None).unwrap();
        // The newest versions are the snapshot's: not filtered.
        assert_eq!(
            db.get_at(b"a", &snap).unwrap().as_deref(),
            Some(&b"drop me"[..])
        );
        assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"drop me"[..]));
        assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"up here"[..]));
        // A newer version over a snapshot's: only the newer one is filtered.
        db.put(b"c", b"drop now").unwrap();
        db.compact_range(None, None).unwrap();
        assert_eq!(db.get(b"c").unwrap(), None, "{design}");
        assert_eq!(
            db.get_at(b"c", &snap).unwrap().as_deref(),
            Some(&b"keep"[..])
        );
        drop(snap);
        db.compact_range(None, None).unwrap();
        assert_eq!(db.get(b"a").unwrap(), None, "{design}");
        assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"UP HERE"[..]));
        assert_eq!(db.get(b"c").unwrap(), None);
        let keys: Vec<_> = scan(&db, IterOptions::default());
        assert_eq!(keys, vec![(b"b".to_vec(), b"UP HERE".to_vec())]);
        let entries: u64 = db.live_files().iter().map(|f| f.entries).sum();
        assert_eq!(entries, 1, "{design}");
    }
}

/// Only flushes filter here; a removal at a flush must hide the older version below.
#[derive(Debug)]
struct AtFlushOnly;

impl CompactionFilter for AtFlushOnly {
    fn filter(&self, ctx: &FilterContext, _key: &[u8], value: &[u8]) -> Decision {
        if ctx.reason == FilterReason::Flush && value.starts_with(b"drop") {
            Decision::Remove
        } else {
            Decision::Keep
        }
    }
}

#[test]
fn a_removal_never_resurrects_an_older_version() {
    for design in Options::available_presets() {
        let env = Env::memory();
        let mut o = options(design, &env, Arc::new(Marked::default()));
        o.compaction_filter = Some(Arc::new(AtFlushOnly));
        let db = Db::open("/r", o).unwrap();
        db.put(b"k", b"old").unwrap();
        db.compact_range(None, None).unwrap();
        db.put(b"k", b"drop").unwrap();
        db.flush().unwrap();
        assert_eq!(db.get(b"k").unwrap(), None, "{design}: after the flush");
        let tombstones: u64 = db.live_files().iter().map(|f| f.tombstones).sum();
        assert_eq!(
            tombstones, 1,
            "{design}: the removal is a tombstone above 'old'"
        );
        db.compact_range(None, None).unwrap();
        assert_eq!(db.get(b"k").unwrap(), None, "{design}: after compaction");
        assert!(scan(&db, IterOptions::default()).is_empty());
        let entries: u64 = db.live_files().iter().map(|f| f.entries).sum();
        assert_eq!(
            entries, 0,
            "{design}: the tombstone and 'old' dropped at the base"
        );
    }
}

/// The filter is told why and where it runs.
#[test]
fn the_filter_is_told_the_reason_and_level() {
    let env = Env::memory();
    let f = Arc::new(Marked::default());
    let db = Db::open("/c", options("leveldb", &env, Arc::clone(&f))).unwrap();
    db.put(b"a", b"v").unwrap();
    db.flush().unwrap();
    db.put(b"b", b"v").unwrap();
    db.compact_range(None, None).unwrap();
    let seen = f.contexts.lock().clone();
    assert!(seen.contains(&(FilterReason::Flush, 0)), "{seen:?}");
    assert!(
        seen.iter()
            .any(|(r, l)| *r == FilterReason::Compaction && *l > 0),
        "{seen:?}"
    );
}

/// In the value log, a removed or replaced value becomes garbage that collection reclaims.
#[test]
fn removed_values_in_the_value_log_become_garbage() {
    let env = Env::memory();
    let mut o = options("wisckey", &env, Arc::new(Marked::default()));
    o.vlog_gc = false;
    assert_eq!(o.values, ValuesKind::Vlog);
    let db = Db::open("/g", o).unwrap();
    let big = |head: &str, i: usize| {
        let mut v = format!("{head}{i}-").into_bytes();
        v.resize(1000, b'x');
        v
    };
    for i in 0..40 {
        let head = if i % 2 == 0 { "drop" } else { "up" };
        db.put(format!("k{i:02}").as_bytes(), &big(head, i))
            .unwrap();
    }
    let garbage = |db: &Db| -> u64 { db.stats().placement.segments.iter().map(|s| s.2).sum() };
    // The flushes run the filter (the log's growth freezes memtables on its own too): every
    // value is removed or replaced inline.
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let after = garbage(&db);
    assert!(
        after >= 40 * 1000,
        "40 values of 1000 bytes became garbage: {after}"
    );
    for i in 0..40 {
        let got = db.get(format!("k{i:02}").as_bytes()).unwrap();
        if i % 2 == 0 {
            assert_eq!(got, None);
        } else {
            assert_eq!(got, Some(big("up", i).to_ascii_uppercase()));
        }
    }
    // Fill a few more segments so the first ones are sealed, then collect: nothing the
    // filter left points into the log, so every sealed segment can go.
    for i in 0..40 {
        db.put(format!("z{i:02}").as_bytes(), &big("v", i)).unwrap();
    }
    db.flush().unwrap();
    let dropped = db.run_value_gc().unwrap();
    assert!(
        dropped > 0,
        "collection dropped segments the filter emptied"
    );
    for i in (1..40).step_by(2) {
        let got = db.get(format!("k{i:02}").as_bytes()).unwrap();
        assert_eq!(got, Some(big("up", i).to_ascii_uppercase()));
    }
    db.close().unwrap();
}
