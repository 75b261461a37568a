//! Tests of scan prefetching over an in-memory "value log": a store whose pointers are keys
//! of a map, which counts its calls, records the thread of each, fails chosen pointers and
//! can hold one resolve until the test lets it go.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use super::*;
use crate::iter::VecIter;
use crate::iter::testutil::{FailingIter, Rng};
use crate::key::{SeqNo, make_internal_key};

#[derive(Debug, Default)]
struct MapStore {
    /// Pointer -> (the key it was written for, value).
    values: HashMap<Vec<u8>, (Vec<u8>, Vec<u8>)>,
    fail: HashSet<Vec<u8>>,
    /// (pointer, name of the resolving thread), in call order.
    calls: Mutex<Vec<(Vec<u8>, String)>>,
    gate: Option<Gate>,
    /// Entries may carry their value after the pointer ([`carry_some`]).
    carry: bool,
}

/// Where a [`carry_some`] entry's value starts: after the 8-byte pointer and a `|`.
fn map_carried_at(_key: &[u8], kind: ValueKind, stored: &[u8]) -> Option<usize> {
    (kind == ValueKind::ValuePointer && stored.get(8) == Some(&b'|')).then_some(9)
}

/// Every other pointer entry of `d` rewritten to carry its value (`pointer|value`), its
/// pointer dropped from `store`: resolving one fails, so a cursor must take the value from
/// the entry.
fn carry_some(d: &mut Data, store: &mut MapStore) {
    store.carry = true;
    let mut n = 0;
    for (ik, v) in d.entries.iter_mut() {
        let pointer_entry =
            crate::key::parse_internal_key(ik).is_ok_and(|p| p.kind == ValueKind::ValuePointer);
        if !pointer_entry {
            continue;
        }
        n += 1;
        if n % 2 == 0
            && let Some((_, value)) = store.values.remove(v.as_slice())
        {
            v.push(b'|');
            v.extend_from_slice(&value);
        }
    }
}

/// Holds the resolve of one pointer until opened; says when that resolve has begun.
#[derive(Debug)]
struct Gate {
    pointer: Vec<u8>,
    open: Mutex<bool>,
    cv: std::sync::Condvar,
    entered: Mutex<mpsc::Sender<()>>,
}

impl Gate {
    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

impl Resolve for MapStore {
    fn carried_at(&self) -> Option<crate::iter::CarriedAt> {
        self.carry.then_some(map_carried_at)
    }

    fn resolve(
        &self,
        key: &[u8],
        kind: ValueKind,
        stored: &[u8],
    ) -> Result<crate::values::ValueBytes<'static>> {
        assert_eq!(kind, ValueKind::ValuePointer, "only pointers are resolved");
        let thread = std::thread::current().name().unwrap_or("").to_string();
        self.calls.lock().unwrap().push((stored.to_vec(), thread));
        if let Some(g) = &self.gate
            && g.pointer == stored
        {
            let _ = g.entered.lock().unwrap().send(());
            let mut open = g.open.lock().unwrap();
            while !*open {
                open = g.cv.wait(open).unwrap();
            }
        }
        if self.fail.contains(stored) {
            return Err(Error::corruption("test.vlog", 77, "injected bad value"));
        }
        match self.values.get(stored) {
            Some((k, v)) if k == key => {
                // As the value log hands out a cached record: the value is a range of a
                // shared buffer that holds more than the value.
                let mut record = b"head".to_vec();
                record.extend_from_slice(v);
                let buf = crate::cache::block_cache::SharedBytes::from(record);
                Ok(crate::values::ValueBytes::Shared(buf, 4..4 + v.len()))
            }
            Some(_) => Err(Error::corruption("test.vlog", 0, "pointer of another key")),
            None => Err(Error::corruption("test.vlog", 0, "unknown pointer")),
        }
    }
}

impl MapStore {
    fn calls(&self) -> Vec<(Vec<u8>, String)> {
        self.calls.lock().unwrap().clone()
    }
}

fn pointer(i: usize) -> Vec<u8> {
    format!("ptr{i:05}").into_bytes()
}

fn user_key(i: usize) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Internal entries (sorted) and the view at `SNAPSHOT`; [`data`] also gives the store
/// holding their pointed-to values. Every key has versions newer than the snapshot (hidden), some keys are
/// deleted at the snapshot, values alternate between inline and pointers unless
/// `only_inline`.
struct Data {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    want: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Data {
    /// The pointer of the entry the view shows for `key`, if that entry is a pointer.
    fn visible_pointer(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.entries.iter().find_map(|(ik, v)| {
            let p = crate::key::parse_internal_key(ik).ok()?;
            (p.user_key == key
                && p.seq >= 10
                && p.seq < SNAPSHOT
                && p.kind == ValueKind::ValuePointer)
                .then(|| v.clone())
        })
    }
}

const SNAPSHOT: SeqNo = 1_000_000;

fn data(n: usize, only_inline: bool) -> (Data, MapStore) {
    let mut entries = Vec::new();
    let mut store = MapStore::default();
    let mut want = Vec::new();
    let mut rng = Rng::new(n as u64);
    let mut next_ptr = 0;
    for i in 0..n {
        let k = user_key(i);
        // A version above the snapshot: never visible.
        entries.push((
            make_internal_key(&k, SNAPSHOT + 1 + i as SeqNo, ValueKind::Value),
            b"future".to_vec(),
        ));
        let seq = 10 + i as SeqNo;
        if rng.below(7) == 0 {
            entries.push((make_internal_key(&k, seq, ValueKind::Delete), Vec::new()));
        } else {
            let value = format!("value-{i}-{}", "x".repeat(i % 13)).into_bytes();
            if only_inline || rng.below(4) == 0 {
                entries.push((make_internal_key(&k, seq, ValueKind::Value), value.clone()));
            } else {
                let p = pointer(next_ptr);
                next_ptr += 1;
                store.values.insert(p.clone(), (k.clone(), value.clone()));
                entries.push((make_internal_key(&k, seq, ValueKind::ValuePointer), p));
            }
            want.push((k.clone(), value));
        }
        // An older version, shadowed.
        let p = pointer(next_ptr);
        next_ptr += 1;
        store.values.insert(p.clone(), (k.clone(), b"old".to_vec()));
        entries.push((make_internal_key(&k, 5, ValueKind::ValuePointer), p));
    }
    (Data { entries, want }, store)
}

fn opts() -> DbIterOptions {
    DbIterOptions {
        snapshot: SNAPSHOT,
        ..DbIterOptions::default()
    }
}

fn prefetch(pool: &Arc<PrefetchPool>, depth: usize) -> Option<Prefetch> {
    Some(Prefetch {
        pool: Arc::clone(pool),
        depth,
        after: SEQUENTIAL_TRIGGER,
        // Always prefetch: the in-memory store is fast.
        slow_read: std::time::Duration::ZERO,
    })
}

fn entries_iter(
    d: &Data,
    store: &Arc<dyn Resolve>,
    p: Option<Prefetch>,
) -> PrefetchEntries<VecIter> {
    PrefetchEntries::new(
        VecIter::new(d.entries.clone()),
        VecIter::new(d.entries.clone()),
        opts(),
        Arc::clone(store),
        p,
    )
}

fn cursor(d: &Data, store: &Arc<dyn Resolve>, p: Option<Prefetch>) -> PrefetchCursor<VecIter> {
    PrefetchCursor::new(
        VecIter::new(d.entries.clone()),
        opts(),
        Arc::clone(store),
        p,
    )
}

fn current<I: InternalIterator>(c: &PrefetchCursor<I>) -> Option<(Vec<u8>, Vec<u8>)> {
    c.valid().then(|| (c.key().to_vec(), c.value().to_vec()))
}

/// The model's key after `p`, if any.
fn after(model: &BTreeMap<Vec<u8>, Vec<u8>>, p: Vec<u8>) -> Option<Vec<u8>> {
    model
        .range((std::ops::Bound::Excluded(p), std::ops::Bound::Unbounded))
        .next()
        .map(|e| e.0.clone())
}

/// The model's key before `p`, if any.
fn before(model: &BTreeMap<Vec<u8>, Vec<u8>>, p: Vec<u8>) -> Option<Vec<u8>> {
    model.range(..p).next_back().map(|e| e.0.clone())
}

fn is_pool_thread(name: &str) -> bool {
    name.starts_with("shale-prefetch-")
}

#[test]
fn long_scans_see_the_same_entries_with_and_without_prefetch() {
    let (d, store) = data(500, false);
    let store: Arc<dyn Resolve> = Arc::new(store);
    let mut rev = d.want.clone();
    rev.reverse();
    for threads in [1, 4] {
        let pool = PrefetchPool::new(threads, 1 << 20);
        for p in [
            None,
            prefetch(&pool, 1),
            prefetch(&pool, 3),
            prefetch(&pool, 16),
        ] {
            let fwd: Vec<_> = entries_iter(&d, &store, p.clone())
                .collect::<Result<_>>()
                .unwrap();
            assert_eq!(fwd, d.want);
            let back: Vec<_> = entries_iter(&d, &store, p.clone())
                .rev()
                .collect::<Result<_>>()
                .unwrap();
            assert_eq!(back, rev);

            let mut c = cursor(&d, &store, p.clone());
            let mut got = Vec::new();
            c.seek_to_first().unwrap();
            while let Some(e) = current(&c) {
                got.push(e);
                c.next().unwrap();
            }
            assert_eq!(got, d.want);
            got.clear();
            c.seek_to_last().unwrap();
            while let Some(e) = current(&c) {
                got.push(e);
                c.prev().unwrap();
            }
            assert_eq!(got, rev);
        }
        let s = pool.stats();
        assert!(s.submitted > 0, "{s:?}");
        assert_eq!(s.submitted, s.by_workers + s.stolen, "{s:?}");
    }
}

#[test]
fn mixed_ends_yield_every_entry_once() {
    let (d, store) = data(300, false);
    let store: Arc<dyn Resolve> = Arc::new(store);
    let pool = PrefetchPool::new(2, 1 << 20);
    let mut rng = Rng::new(9);
    for round in 0..40 {
        let mut it = entries_iter(&d, &store, prefetch(&pool, 1 + round % 8));
        let (mut front, mut back) = (Vec::new(), Vec::new());
        loop {
            // Long runs at each end, so both prefetch and then meet.
            let from_back = (rng.below(10) as usize) < round % 10;
            let item = if from_back { it.next_back() } else { it.next() };
            match item {
                None => break,
                Some(r) => {
                    let e = r.unwrap();
                    if from_back {
                        back.push(e);
                    } else {
                        front.push(e);
                    }
                }
            }
        }
        assert!(it.next().is_none() && it.next_back().is_none());
        back.reverse();
        front.extend(back);
        assert_eq!(front, d.want, "round {round}");
    }
}

#[test]
fn pool_resolves_only_once_the_scan_is_sequential() {
    let (d, store) = data(200, false);
    let store = Arc::new(store);
    let dyn_store: Arc<dyn Resolve> = store.clone();
    let pool = PrefetchPool::new(3, 1 << 20);
    let depth = 8;
    let mut c = cursor(&d, &dyn_store, prefetch(&pool, depth));

    // A seek and one next look like a point read: nothing reaches the pool.
    c.seek(&user_key(20)).unwrap();
    c.next().unwrap();
    assert!(!c.is_prefetching());
    assert_eq!(pool.stats(), PoolStats::default());
    assert!(store.calls().iter().all(|(_, t)| !is_pool_thread(t)));
    // The same after a fresh seek: the run starts over.
    c.seek(&user_key(40)).unwrap();
    c.next().unwrap();
    assert_eq!(pool.stats().submitted, 0);

    // The second step in a row starts the look-ahead.
    let at = d.want.iter().position(|(k, _)| *k >= user_key(40)).unwrap();
    c.next().unwrap();
    assert!(c.is_prefetching());
    assert_eq!(current(&c).as_ref(), d.want.get(at + 2));
    pool.wait_idle();
    let s = pool.stats();
    assert!(s.submitted > 0 && s.submitted <= depth as u64, "{s:?}");
    assert_eq!(s.by_workers, s.submitted, "{s:?}");
    // The window's pointers were resolved by pool threads, each once.
    let calls = store.calls();
    let pooled: Vec<_> = calls.iter().filter(|(_, t)| is_pool_thread(t)).collect();
    assert_eq!(pooled.len() as u64, s.submitted);
    let distinct: HashSet<_> = pooled.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(distinct.len(), pooled.len());
    // The window's values are served without the reader's thread calling the store.
    let on_reader =
        |calls: Vec<(Vec<u8>, String)>| calls.iter().filter(|(_, t)| !is_pool_thread(t)).count();
    let before = on_reader(store.calls());
    for i in 1..=depth {
        c.next().unwrap();
        assert_eq!(current(&c).as_ref(), d.want.get(at + 2 + i));
    }
    assert_eq!(on_reader(store.calls()), before);
    let mut rest = Vec::new();
    while c.valid() {
        rest.push(current(&c).unwrap());
        c.next().unwrap();
    }
    assert_eq!(rest, d.want[at + 2 + depth..]);
}

/// `steps` random seeks and moves of `c` (mostly long runs in one direction, with turns),
/// each position checked against `model`.
fn random_moves_match(
    c: &mut PrefetchCursor<VecIter>,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    rng: &mut Rng,
    steps: usize,
    label: &str,
) {
    let mut pos: Option<Vec<u8>> = None;
    for _ in 0..steps {
        let probe = user_key(rng.below(160) as usize);
        let op = rng.below(20);
        match op {
            0 => {
                c.seek(&probe).unwrap();
                pos = model.range(probe..).next().map(|e| e.0.clone());
            }
            1 => {
                c.seek_for_prev(&probe).unwrap();
                pos = model.range(..=probe).next_back().map(|e| e.0.clone());
            }
            2 => {
                c.seek_to_first().unwrap();
                pos = model.keys().next().cloned();
            }
            3 => {
                c.seek_to_last().unwrap();
                pos = model.keys().next_back().cloned();
            }
            // Mostly long runs in one direction, with turns.
            4..=12 => {
                c.next().unwrap();
                pos = pos.and_then(|p| after(model, p));
            }
            _ => {
                c.prev().unwrap();
                pos = pos.and_then(|p| before(model, p));
            }
        }
        let want = pos.as_ref().map(|k| (k.clone(), model[k].clone()));
        assert_eq!(current(c), want, "{label}, op {op}");
    }
}

#[test]
fn seeks_and_turns_in_the_middle_of_a_window_return_the_right_entries() {
    let (d, store) = data(150, false);
    let store: Arc<dyn Resolve> = Arc::new(store);
    let pool = PrefetchPool::new(2, 1 << 20);
    let model: BTreeMap<Vec<u8>, Vec<u8>> = d.want.iter().cloned().collect();
    let mut rng = Rng::new(3);
    for depth in [1, 2, 5, 16] {
        let mut c = cursor(&d, &store, prefetch(&pool, depth));
        random_moves_match(&mut c, &model, &mut rng, 3000, &format!("depth {depth}"));
    }
}

#[test]
fn values_carried_beside_pointers_are_read_from_the_entry_through_windows_and_turns() {
    let (mut d, mut store) = data(150, false);
    carry_some(&mut d, &mut store);
    let carried = d
        .entries
        .iter()
        .filter(|(_, v)| v.get(8) == Some(&b'|'))
        .count();
    assert!(carried > 20, "{carried}");
    let store = Arc::new(store);
    let dyn_store: Arc<dyn Resolve> = Arc::clone(&store) as Arc<dyn Resolve>;
    let pool = PrefetchPool::new(2, 1 << 20);
    let model: BTreeMap<Vec<u8>, Vec<u8>> = d.want.iter().cloned().collect();
    let mut rng = Rng::new(5);
    for depth in [None, Some(1), Some(3), Some(16)] {
        let mut c = cursor(&d, &dyn_store, depth.and_then(|n| prefetch(&pool, n)));
        // Whole scans both ways, then random moves.
        c.seek_to_first().unwrap();
        let mut got = Vec::new();
        let mut windowed = false;
        while let Some(e) = current(&c) {
            got.push(e);
            windowed |= c.is_prefetching();
            c.next().unwrap();
        }
        assert_eq!(got, d.want, "forward, depth {depth:?}");
        // With a pool, the scan reads ahead (whichever thread then resolves a pointer).
        assert_eq!(windowed, depth.is_some(), "depth {depth:?}");
        c.seek_to_last().unwrap();
        let mut back = Vec::new();
        while let Some(e) = current(&c) {
            back.push(e);
            c.prev().unwrap();
        }
        back.reverse();
        assert_eq!(back, d.want, "backward, depth {depth:?}");
        random_moves_match(&mut c, &model, &mut rng, 2000, &format!("depth {depth:?}"));
    }
    // No carried entry was ever handed to a resolve (its pointer is unknown to the store).
    assert!(store.calls().iter().all(|(p, _)| p.get(8) != Some(&b'|')));
}

/// Every outcome of a scan, in order: entries, then an error if there is one.
fn outcome(items: impl Iterator<Item = ResolvedItem>) -> Vec<std::result::Result<Vec<u8>, String>> {
    items
        .map(|r| r.map(|(k, _)| k).map_err(|e| e.to_string()))
        .collect()
}

#[test]
fn a_bad_value_fails_the_step_that_reaches_it() {
    let (d, mut store) = data(120, false);
    let pool = PrefetchPool::new(2, 1 << 20);
    // The first entry past the middle whose value is a pointer.
    let (k, bad) = (d.want.len() / 2..d.want.len())
        .find_map(|i| Some((i, d.visible_pointer(&d.want[i].0)?)))
        .unwrap();
    store.fail.insert(bad);
    let store: Arc<dyn Resolve> = Arc::new(store);
    for depth in [1, 4, 32] {
        let got = outcome(entries_iter(&d, &store, prefetch(&pool, depth)));
        assert_eq!(got, outcome(entries_iter(&d, &store, None)));
        assert_eq!(
            got.len(),
            k + 1,
            "entries before the bad one, then its error"
        );
        assert!(got[..k].iter().all(Result::is_ok));
        assert!(got[k].as_ref().unwrap_err().contains("injected bad value"));

        let mut c = cursor(&d, &store, prefetch(&pool, depth));
        c.seek_to_first().unwrap();
        for _ in 1..k {
            c.next().unwrap();
        }
        assert!(c.valid());
        assert!(c.next().is_err());
        assert!(!c.valid());
        // A seek recovers.
        c.seek_to_first().unwrap();
        assert_eq!(current(&c).as_ref(), d.want.first());
    }
}

#[test]
fn a_tree_error_read_ahead_surfaces_where_it_would_without_prefetch() {
    let (d, store) = data(60, false);
    let store: Arc<dyn Resolve> = Arc::new(store);
    let pool = PrefetchPool::new(2, 1 << 20);
    let run = |budget: usize, p: Option<Prefetch>, backward: bool| {
        let front = FailingIter::new(d.entries.clone(), budget);
        let back = FailingIter::new(d.entries.clone(), budget);
        let it = PrefetchEntries::new(front, back, opts(), Arc::clone(&store), p);
        if backward {
            outcome(it.rev())
        } else {
            outcome(it)
        }
    };
    for budget in 0..d.entries.len() + 2 {
        for backward in [false, true] {
            let want = run(budget, None, backward);
            for depth in [1, 3, 16] {
                assert_eq!(
                    run(budget, prefetch(&pool, depth), backward),
                    want,
                    "budget {budget}, depth {depth}, backward {backward}"
                );
            }
        }
    }
}

#[test]
fn inline_values_never_reach_the_pool() {
    let (d, store) = data(300, true);
    let store = Arc::new(store);
    let dyn_store: Arc<dyn Resolve> = store.clone();
    let pool = PrefetchPool::new(4, 1 << 20);
    let mut it = entries_iter(&d, &dyn_store, prefetch(&pool, 16));
    let fwd: Vec<_> = it.by_ref().take(150).collect::<Result<_>>().unwrap();
    assert!(!it.is_prefetching());
    let back: Vec<_> = it.rev().collect::<Result<_>>().unwrap();
    assert_eq!(fwd.len() + back.len(), d.want.len());
    assert_eq!(pool.stats(), PoolStats::default(), "no job, no thread");
    assert_eq!(pool.live_threads(), 0);
    assert!(store.calls().is_empty());

    // With mixed values only pointers are ever resolved (the store asserts it).
    let (d, store) = data(300, false);
    let store = Arc::new(store);
    let dyn_store: Arc<dyn Resolve> = store.clone();
    let all: Vec<_> = entries_iter(&d, &dyn_store, prefetch(&pool, 16))
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(all, d.want);
    let pointers = d
        .entries
        .iter()
        .filter(|(ik, _)| {
            crate::key::parse_internal_key(ik).is_ok_and(|p| p.kind == ValueKind::ValuePointer)
        })
        .count();
    assert!(store.calls().len() <= pointers);
}

#[test]
fn dropping_a_scan_with_work_in_flight_neither_hangs_nor_leaks_threads() {
    let (d, mut store) = data(100, false);
    let (tx, rx) = mpsc::channel();
    // Gate a pointer the first window holds: the reader's thread resolves the first three
    // entries itself (a seek and two steps), the window covers the next 32.
    let gated = d.want[3..]
        .iter()
        .find_map(|(k, _)| d.visible_pointer(k))
        .unwrap();
    store.gate = Some(Gate {
        pointer: gated,
        open: Mutex::new(false),
        cv: std::sync::Condvar::new(),
        entered: Mutex::new(tx),
    });
    let store = Arc::new(store);
    let dyn_store: Arc<dyn Resolve> = store.clone();
    let pool = PrefetchPool::new(2, 1 << 20);
    let mut it = entries_iter(&d, &dyn_store, prefetch(&pool, 32));
    for _ in 0..3 {
        it.next().unwrap().unwrap();
    }
    assert!(it.is_prefetching());
    // A worker is now inside the gated resolve.
    rx.recv().unwrap();
    drop(it);
    assert_eq!(pool.live_threads(), 2);
    store.gate.as_ref().unwrap().release();
    pool.shutdown();
    assert_eq!(pool.live_threads(), 0);
    assert_eq!(pool.stats().spawned, 2);
    // A closed pool refuses work rather than restarting threads.
    assert!(
        pool.submit(&dyn_store, b"k", ValueKind::ValuePointer, pointer(0))
            .is_err()
    );
    assert_eq!(pool.live_threads(), 0);
}

#[test]
fn a_scan_outlives_its_pool() {
    let (d, store) = data(200, false);
    let store: Arc<dyn Resolve> = Arc::new(store);
    let pool = PrefetchPool::new(1, 1 << 20);
    let mut it = entries_iter(&d, &store, prefetch(&pool, 64));
    let mut got: Vec<_> = it.by_ref().take(3).collect::<Result<_>>().unwrap();
    assert!(it.is_prefetching());
    // Queued jobs stay with their tickets: the scan resolves them itself.
    pool.shutdown();
    got.extend(it.collect::<Result<Vec<_>>>().unwrap());
    assert_eq!(got, d.want);
}

#[test]
fn the_byte_budget_pauses_workers_but_not_scans() {
    let (d, store) = data(100, false);
    let store: Arc<dyn Resolve> = Arc::new(store);
    // One byte: a worker finishes one value, then waits for it to be taken.
    let pool = PrefetchPool::new(1, 1);
    let mut c = cursor(&d, &store, prefetch(&pool, 16));
    c.seek_to_first().unwrap();
    c.next().unwrap();
    c.next().unwrap();
    assert!(c.is_prefetching());
    pool.wait_idle();
    let s = pool.stats();
    assert_eq!(s.by_workers, 1, "{s:?}");
    assert!(s.submitted > 1, "{s:?}");
    let mut got = vec![current(&c).unwrap()];
    c.next().unwrap();
    while let Some(e) = current(&c) {
        got.push(e);
        c.next().unwrap();
    }
    assert_eq!(got, d.want[2..]);
    let s = pool.stats();
    assert_eq!(s.submitted, s.by_workers + s.stolen, "{s:?}");
}

#[test]
fn a_store_with_inline_values_starts_no_prefetch_thread() {
    use crate::{Db, IterOptions, Options, env::Env};
    let db = Db::open("/db", Options::default().with_env(Env::memory())).unwrap();
    let mut want = Vec::new();
    for i in 0..500 {
        db.put(&user_key(i), format!("v{i}").as_bytes()).unwrap();
        want.push((user_key(i), format!("v{i}").into_bytes()));
        if i == 250 {
            db.flush().unwrap();
        }
    }
    let fwd: Vec<_> = db
        .iter(IterOptions::default())
        .unwrap()
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(fwd, want);
    let mut back: Vec<_> = db
        .iter(IterOptions::default())
        .unwrap()
        .rev()
        .collect::<Result<_>>()
        .unwrap();
    back.reverse();
    assert_eq!(back, want);
    let mut c = db.cursor(IterOptions::default()).unwrap();
    c.seek(&user_key(100)).unwrap();
    for i in 100..200 {
        assert_eq!(c.key(), user_key(i).as_slice());
        c.next().unwrap();
    }
    let pool = Arc::clone(db.prefetch_pool());
    assert_eq!(pool.stats(), PoolStats::default());
    assert_eq!(pool.live_threads(), 0);

    // Once a job starts the threads, closing the store joins them.
    let (_, mut store) = data(1, false);
    store
        .values
        .insert(pointer(7), (b"k7".to_vec(), b"seven".to_vec()));
    let store: Arc<dyn Resolve> = Arc::new(store);
    let t = pool
        .submit(&store, b"k7", ValueKind::ValuePointer, pointer(7))
        .unwrap();
    assert_eq!(
        pool.live_threads(),
        Options::default().scan_prefetch_threads
    );
    assert_eq!(&*t.wait().0.unwrap(), b"seven");
    // `Db::stats` reports the pool's counters.
    let s = db.stats().scan_prefetch;
    assert_eq!(s, pool.stats());
    assert_eq!((s.submitted, s.by_workers + s.stolen), (1, 1), "{s:?}");
    assert!(
        db.stats()
            .to_string()
            .contains("scan prefetch: 1 values submitted")
    );
    db.close().unwrap();
    assert_eq!(pool.live_threads(), 0);
    assert!(
        pool.submit(&store, b"k7", ValueKind::ValuePointer, pointer(7))
            .is_err()
    );
}

#[test]
fn user_iterators_stay_send() {
    fn send<T: Send>() {}
    send::<crate::DbIterator>();
    send::<crate::Cursor>();
    send::<Ticket>();
    fn sync<T: Sync + Send>() {}
    sync::<PrefetchPool>();
}

#[test]
fn fast_reads_are_not_handed_to_the_pool() {
    let (d, store) = data(300, false);
    let store: Arc<dyn Resolve> = Arc::new(store);
    let pool = PrefetchPool::new(2, 1 << 20);
    // No read is ever slow enough: scans stay on the reader's thread, with the same result.
    let never = Some(Prefetch {
        pool: Arc::clone(&pool),
        depth: 16,
        after: SEQUENTIAL_TRIGGER,
        slow_read: std::time::Duration::MAX,
    });
    let mut it = entries_iter(&d, &store, never.clone());
    let fwd: Vec<_> = it.by_ref().collect::<Result<_>>().unwrap();
    assert_eq!(fwd, d.want);
    assert!(!it.is_prefetching());
    let mut rev = d.want.clone();
    rev.reverse();
    let back: Vec<_> = entries_iter(&d, &store, never)
        .rev()
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(back, rev);
    assert_eq!(pool.stats(), PoolStats::default());
}

#[test]
fn one_preempted_read_does_not_keep_the_pool_on() {
    let (d, store) = data(10, false);
    let store: Arc<dyn Resolve> = Arc::new(store);
    let pool = PrefetchPool::new(1, 1 << 20);
    let p = Some(Prefetch {
        pool,
        depth: 16,
        after: SEQUENTIAL_TRIGGER,
        slow_read: Duration::from_millis(1),
    });
    let mut c = cursor(&d, &store, p);
    // A read the machine held for a second counts as four times the threshold.
    c.note_read_time(Duration::from_secs(1));
    assert!(c.reads_are_slow());
    for _ in 0..12 {
        c.note_read_time(Duration::from_micros(1));
    }
    // 4 ms * (7/8)^12 < 1 ms; uncapped, the one slow read would still weigh 200 ms.
    assert!(!c.reads_are_slow(), "{:?}", c.read_time);
    // One resolve in eight is timed, starting with the first.
    let timed: Vec<bool> = (0..17).map(|_| c.time_this_one()).collect();
    assert_eq!(timed.iter().filter(|&&t| t).count(), 3);
    assert!(timed[0] && timed[8] && timed[16]);
}

#[test]
fn the_look_ahead_starts_after_the_configured_run() {
    let (d, store) = data(200, false);
    let store = Arc::new(store);
    let dyn_store: Arc<dyn Resolve> = store.clone();
    for after in [1usize, 5] {
        let pool = PrefetchPool::new(2, 1 << 20);
        let p = prefetch(&pool, 8).map(|p| Prefetch { after, ..p });
        let mut c = cursor(&d, &dyn_store, p);
        c.seek(&user_key(20)).unwrap();
        let at = d.want.iter().position(|(k, _)| *k >= user_key(20)).unwrap();
        for step in 1..=after {
            assert!(
                !c.is_prefetching(),
                "after {after}: prefetching before step {step}"
            );
            c.next().unwrap();
        }
        assert!(
            c.is_prefetching(),
            "after {after}: not prefetching at step {after}"
        );
        assert_eq!(current(&c).as_ref(), d.want.get(at + after));
        // The same entries as without prefetching, to the end.
        let mut rest = Vec::new();
        while c.valid() {
            rest.push(current(&c).unwrap());
            c.next().unwrap();
        }
        assert_eq!(rest, d.want[at + after..]);
    }
}
