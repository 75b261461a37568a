//! Model tests of [`DbIter`] and [`Entries`] over merged memtable-like and level sources.

use std::collections::BTreeMap;

use super::*;
use crate::iter::merging::MergingIterator;
use crate::iter::testutil::{
    Entry, FailingIter, Rng, cut_into_runs, level_iter, random_entries, split_randomly,
};
use crate::iter::{InternalIterator, VecIter};

type Encoded = Vec<(Vec<u8>, Vec<u8>)>;
type Item = (Vec<u8>, Vec<u8>, ValueKind);

/// Where the entries live: plain sorted runs (memtables, level-0 files) and levels of
/// disjoint files.
enum Source {
    Run(Encoded),
    Level(Vec<Encoded>),
}

struct Layout(Vec<Source>);

impl Layout {
    fn random(rng: &mut Rng, entries: &[Entry]) -> Layout {
        let encoded: Encoded = entries.iter().map(Entry::encode).collect();
        let m = 1 + rng.below(6) as usize;
        let parts = split_randomly(rng, &encoded, m);
        Layout(
            parts
                .into_iter()
                .map(|p| {
                    if rng.below(3) == 0 {
                        let max_runs = 1 + rng.below(6) as usize;
                        Source::Level(cut_into_runs(rng, &p, max_runs))
                    } else {
                        Source::Run(p)
                    }
                })
                .collect(),
        )
    }

    fn build(&self) -> MergingIterator {
        MergingIterator::new(
            self.0
                .iter()
                .map(|s| match s {
                    Source::Run(r) => {
                        Box::new(VecIter::new(r.clone())) as Box<dyn InternalIterator>
                    }
                    Source::Level(runs) => Box::new(level_iter(runs.clone())),
                })
                .collect(),
        )
    }
}

/// The view computed directly: newest version per key at the snapshot, live ones, in range.
fn model(entries: &[Entry], o: &DbIterOptions) -> Vec<Item> {
    let mut newest: BTreeMap<&[u8], &Entry> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.seq <= o.snapshot) {
        let slot = newest.entry(&e.user_key).or_insert(e);
        if slot.seq < e.seq {
            *slot = e;
        }
    }
    newest
        .into_iter()
        .filter(|(k, e)| {
            e.kind != ValueKind::Delete
                && o.lower_bound.as_deref().is_none_or(|l| *k >= l)
                && o.upper_bound.as_deref().is_none_or(|u| *k < u)
                && o.prefix.as_deref().is_none_or(|p| k.starts_with(p))
        })
        .map(|(k, e)| (k.to_vec(), e.value.clone(), e.kind))
        .collect()
}

fn random_options(rng: &mut Rng, n: usize) -> DbIterOptions {
    let snapshot = match rng.below(5) {
        0 => MAX_SEQNO,
        _ => rng.below(n as u64 + 2),
    };
    let bound = |rng: &mut Rng| (rng.below(3) == 0).then(|| rng.user_key());
    let lower_bound = bound(rng);
    let upper_bound = bound(rng);
    let prefix = (rng.below(3) == 0).then(|| {
        let mut p = rng.user_key();
        p.truncate(2);
        p
    });
    DbIterOptions {
        snapshot,
        lower_bound,
        upper_bound,
        prefix,
    }
}

fn current<I: InternalIterator>(it: &DbIter<I>) -> Option<Item> {
    it.valid()
        .then(|| (it.key().to_vec(), it.value().to_vec(), it.kind()))
}

fn scan_forward<I: InternalIterator>(it: &mut DbIter<I>) -> Vec<Item> {
    let mut out = Vec::new();
    it.seek_to_first().unwrap();
    while let Some(e) = current(it) {
        out.push(e);
        it.next().unwrap();
    }
    out
}

fn scan_backward<I: InternalIterator>(it: &mut DbIter<I>) -> Vec<Item> {
    let mut out = Vec::new();
    it.seek_to_last().unwrap();
    while let Some(e) = current(it) {
        out.push(e);
        it.prev().unwrap();
    }
    out.reverse();
    out
}

/// Random seeks followed by random walks, checked step by step against the model.
fn random_walk<I: InternalIterator>(rng: &mut Rng, it: &mut DbIter<I>, want: &[Item], ops: usize) {
    let mut pos: Option<usize> = None;
    for step in 0..ops {
        let op = rng.below(10);
        match op {
            0..=2 if pos.is_some() => {
                it.next().unwrap();
                pos = pos.and_then(|p| (p + 1 < want.len()).then_some(p + 1));
            }
            3..=5 if pos.is_some() => {
                it.prev().unwrap();
                pos = pos.and_then(|p| p.checked_sub(1));
            }
            6 => {
                let k = rng.user_key();
                it.seek(&k).unwrap();
                let i = want.partition_point(|e| e.0 < k);
                pos = (i < want.len()).then_some(i);
            }
            7 => {
                let k = rng.user_key();
                it.seek_for_prev(&k).unwrap();
                pos = want.partition_point(|e| e.0 <= k).checked_sub(1);
            }
            8 => {
                it.seek_to_first().unwrap();
                pos = (!want.is_empty()).then_some(0);
            }
            _ => {
                it.seek_to_last().unwrap();
                pos = want.len().checked_sub(1);
            }
        }
        assert_eq!(
            current(it),
            pos.map(|p| want[p].clone()),
            "step {step}, op {op}"
        );
    }
}

/// Drain `Entries` with a random mix of `next` and `next_back`.
fn drain_mixed<I: InternalIterator>(rng: &mut Rng, mut e: Entries<I>, mode: u64) -> Vec<Item> {
    let mut front = Vec::new();
    let mut back = Vec::new();
    let (mut front_done, mut back_done) = (false, false);
    while !(front_done && back_done) {
        let use_front = match mode {
            0 => !front_done,
            1 => back_done,
            _ => !front_done && (back_done || rng.below(2) == 0),
        };
        if use_front {
            match e.next() {
                Some(r) => front.push(r.unwrap()),
                None => front_done = true,
            }
        } else {
            match e.next_back() {
                Some(r) => back.push(r.unwrap()),
                None => back_done = true,
            }
        }
    }
    assert!(e.next().is_none() && e.next_back().is_none(), "fused");
    back.reverse();
    front.extend(back);
    front
}

#[test]
fn randomized_model() {
    for seed in 0..30u64 {
        let mut rng = Rng::new(seed);
        let n = rng.below(150) as usize;
        let entries = random_entries(&mut rng, n);
        let layout = Layout::random(&mut rng, &entries);
        for round in 0..8 {
            let opts = random_options(&mut rng, n);
            let want = model(&entries, &opts);
            let ctx = format!("seed {seed} round {round} opts {opts:?}");

            let mut it = DbIter::new(layout.build(), opts.clone());
            assert_eq!(scan_forward(&mut it), want, "forward {ctx}");
            assert_eq!(scan_backward(&mut it), want, "backward {ctx}");
            random_walk(&mut rng, &mut it, &want, 60);

            for mode in 0..3 {
                let e = Entries::new(layout.build(), layout.build(), opts.clone());
                assert_eq!(
                    drain_mixed(&mut rng, e, mode),
                    want,
                    "entries mode {mode} {ctx}"
                );
            }
        }
    }
}

#[test]
fn single_source_without_merge() {
    let mut rng = Rng::new(99);
    let entries = random_entries(&mut rng, 200);
    let encoded: Encoded = entries.iter().map(Entry::encode).collect();
    for _ in 0..10 {
        let opts = random_options(&mut rng, 200);
        let want = model(&entries, &opts);
        let mut it = DbIter::new(VecIter::new(encoded.clone()), opts);
        assert_eq!(scan_backward(&mut it), want);
        random_walk(&mut rng, &mut it, &want, 100);
    }
}

fn put(k: &[u8], seq: SeqNo, v: &str) -> Entry {
    Entry {
        user_key: k.to_vec(),
        seq,
        kind: ValueKind::Value,
        value: v.as_bytes().to_vec(),
    }
}

fn del(k: &[u8], seq: SeqNo) -> Entry {
    Entry {
        user_key: k.to_vec(),
        seq,
        kind: ValueKind::Delete,
        value: Vec::new(),
    }
}

fn iter_over(entries: &[Entry], opts: DbIterOptions) -> DbIter<MergingIterator> {
    let mut sorted = entries.to_vec();
    sorted.sort_by(|a, b| a.user_key.cmp(&b.user_key).then(b.seq.cmp(&a.seq)));
    let mut rng = Rng::new(1);
    DbIter::new(Layout::random(&mut rng, &sorted).build(), opts)
}

fn keys(items: &[Item]) -> Vec<&[u8]> {
    items.iter().map(|i| i.0.as_slice()).collect()
}

#[test]
fn empty_children() {
    let m = MergingIterator::new(vec![
        Box::new(VecIter::new(Vec::new())),
        Box::new(level_iter(Vec::new())),
    ]);
    let mut it = DbIter::new(m, DbIterOptions::default());
    assert!(scan_forward(&mut it).is_empty());
    assert!(scan_backward(&mut it).is_empty());
    it.seek(b"a").unwrap();
    assert!(!it.valid());
    it.seek_for_prev(b"a").unwrap();
    assert!(!it.valid());
    it.next().unwrap();
    it.prev().unwrap();
    assert!(!it.valid());
    assert_eq!(it.key(), b"");
    assert_eq!(it.value(), b"");
}

#[test]
fn all_deleted_hides_everything_but_older_snapshots_see_it() {
    let entries = vec![
        put(b"a", 1, "a1"),
        put(b"b", 2, "b2"),
        put(b"c", 3, "c3"),
        del(b"a", 4),
        del(b"b", 5),
        del(b"c", 6),
    ];
    let mut it = iter_over(&entries, DbIterOptions::default());
    assert!(scan_forward(&mut it).is_empty());
    assert!(scan_backward(&mut it).is_empty());
    it.seek(b"b").unwrap();
    assert!(!it.valid());
    it.seek_for_prev(b"b").unwrap();
    assert!(!it.valid());

    let at5 = DbIterOptions {
        snapshot: 5,
        ..DbIterOptions::default()
    };
    let mut it = iter_over(&entries, at5);
    assert_eq!(keys(&scan_forward(&mut it)), vec![b"c".as_slice()]);
    assert_eq!(keys(&scan_backward(&mut it)), vec![b"c".as_slice()]);
}

#[test]
fn newest_visible_version_wins_and_future_writes_are_invisible() {
    let entries = vec![
        put(b"k", 1, "old"),
        put(b"k", 5, "new"),
        put(b"k", 9, "future"),
        put(b"m", 10, "future only"),
    ];
    let opts = DbIterOptions {
        snapshot: 6,
        ..DbIterOptions::default()
    };
    let mut it = iter_over(&entries, opts);
    let want = vec![(b"k".to_vec(), b"new".to_vec(), ValueKind::Value)];
    assert_eq!(scan_forward(&mut it), want);
    assert_eq!(scan_backward(&mut it), want);
}

#[test]
fn bounds_that_exclude_everything() {
    let entries = vec![put(b"b", 1, "b"), put(b"c", 2, "c"), put(b"d", 3, "d")];
    let cases = [
        (Some(b"c".to_vec()), Some(b"c".to_vec())),
        (Some(b"d".to_vec()), Some(b"b".to_vec())),
        (Some(b"e".to_vec()), None),
        (None, Some(b"b".to_vec())),
        (None, Some(Vec::new())),
    ];
    for (lower_bound, upper_bound) in cases {
        let opts = DbIterOptions {
            lower_bound,
            upper_bound,
            ..DbIterOptions::default()
        };
        let mut it = iter_over(&entries, opts.clone());
        assert!(scan_forward(&mut it).is_empty(), "{opts:?}");
        assert!(scan_backward(&mut it).is_empty(), "{opts:?}");
        for k in [&b""[..], b"b", b"c", b"d", b"z"] {
            it.seek(k).unwrap();
            assert!(!it.valid(), "{opts:?} seek {k:?}");
            it.seek_for_prev(k).unwrap();
            assert!(!it.valid(), "{opts:?} seek_for_prev {k:?}");
        }
    }
}

#[test]
fn seeks_clamp_to_bounds() {
    let entries = vec![
        put(b"a", 1, "a"),
        put(b"b", 2, "b"),
        put(b"c", 3, "c"),
        put(b"d", 4, "d"),
    ];
    let opts = DbIterOptions {
        lower_bound: Some(b"b".to_vec()),
        upper_bound: Some(b"d".to_vec()),
        ..DbIterOptions::default()
    };
    let mut it = iter_over(&entries, opts);
    it.seek(b"a").unwrap();
    assert_eq!(it.key(), b"b");
    it.prev().unwrap();
    assert!(!it.valid(), "lower bound stops prev");
    it.seek_for_prev(b"zz").unwrap();
    assert_eq!(it.key(), b"c");
    it.next().unwrap();
    assert!(!it.valid(), "upper bound stops next");
    it.seek(b"d").unwrap();
    assert!(!it.valid());
    it.seek_for_prev(b"a").unwrap();
    assert!(!it.valid());
}

#[test]
fn prefix_successor_handles_0xff() {
    assert_eq!(prefix_successor(b"abc"), Some(b"abd".to_vec()));
    assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
    assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
    assert_eq!(prefix_successor(b"\x00\xff"), Some(b"\x01".to_vec()));
    assert_eq!(prefix_successor(b"\xff\xff"), None);
    assert_eq!(prefix_successor(b""), None);
}

#[test]
fn prefixes_with_0xff_bytes() {
    let ks: [&[u8]; 9] = [
        b"a",
        b"a\xfe",
        b"a\xff",
        b"a\xff\x00",
        b"a\xff\xff",
        b"b",
        b"\xff",
        b"\xff\xff",
        b"\xff\xff\x01",
    ];
    let entries: Vec<Entry> = ks
        .iter()
        .enumerate()
        .map(|(i, k)| put(k, i as SeqNo + 1, "v"))
        .collect();
    let cases: [(&[u8], Vec<&[u8]>); 4] = [
        (b"a\xff", vec![b"a\xff", b"a\xff\x00", b"a\xff\xff"]),
        (b"\xff", vec![b"\xff", b"\xff\xff", b"\xff\xff\x01"]),
        (b"\xff\xff", vec![b"\xff\xff", b"\xff\xff\x01"]),
        (b"", ks.to_vec()),
    ];
    for (prefix, want) in cases {
        let opts = DbIterOptions {
            prefix: Some(prefix.to_vec()),
            ..DbIterOptions::default()
        };
        let mut it = iter_over(&entries, opts.clone());
        assert_eq!(keys(&scan_forward(&mut it)), want, "{prefix:?}");
        assert_eq!(keys(&scan_backward(&mut it)), want, "{prefix:?}");
        let mut rng = Rng::new(5);
        let e = Entries::new(
            iter_over(&entries, opts.clone()).into_inner(),
            iter_over(&entries, opts.clone()).into_inner(),
            opts,
        );
        assert_eq!(keys(&drain_mixed(&mut rng, e, 2)), want, "{prefix:?}");
    }
}

#[test]
fn value_pointers_are_reported_as_such() {
    let mut e = put(b"p", 3, "ptr");
    e.kind = ValueKind::ValuePointer;
    let entries = vec![put(b"p", 1, "inline"), e];
    let mut it = iter_over(&entries, DbIterOptions::default());
    it.seek_to_last().unwrap();
    assert_eq!(it.kind(), ValueKind::ValuePointer);
    assert_eq!(it.value(), b"ptr");
    it.seek(b"p").unwrap();
    assert_eq!(it.kind(), ValueKind::ValuePointer);
    assert_eq!(it.value(), b"ptr");
}

#[test]
fn child_error_propagates() {
    let mut rng = Rng::new(21);
    let entries = random_entries(&mut rng, 80);
    let encoded: Encoded = entries.iter().map(Entry::encode).collect();
    let mut parts = split_randomly(&mut rng, &encoded, 3);
    let failing = parts.pop().unwrap_or_default();
    let build = |budget: usize| {
        let mut children: Vec<Box<dyn InternalIterator>> = parts
            .iter()
            .map(|p| Box::new(VecIter::new(p.clone())) as Box<dyn InternalIterator>)
            .collect();
        children.push(Box::new(FailingIter::new(failing.clone(), budget)));
        MergingIterator::new(children)
    };
    let want = model(&entries, &DbIterOptions::default());
    let mut entries_errors = 0;
    for budget in 0..30 {
        // Cursor: the error surfaces from some movement and leaves it invalid.
        let mut it = DbIter::new(build(budget), DbIterOptions::default());
        let mut r = it.seek_to_first();
        let mut steps = 0;
        while r.is_ok() && steps < 1000 {
            r = if !it.valid() {
                it.seek_to_last()
            } else if steps % 5 < 3 {
                it.next()
            } else {
                it.prev()
            };
            steps += 1;
        }
        let err = r.expect_err("the injected error must surface");
        assert!(err.is_corruption(), "{err}");
        assert!(!it.valid());

        // Entries: yields the error as its last item, then nothing; a scan that never
        // moves the failing child far enough must be complete and right.
        let mut e = Entries::new(build(budget), build(budget), DbIterOptions::default());
        let items: Vec<EntryItem> = e.by_ref().collect();
        assert!(e.next().is_none() && e.next_back().is_none());
        let errors = items.iter().filter(|i| i.is_err()).count();
        if errors == 0 {
            let got: Vec<Item> = items.into_iter().map(Result::unwrap).collect();
            assert_eq!(got, want, "budget {budget}");
        } else {
            assert_eq!(errors, 1);
            assert!(items.last().is_some_and(Result::is_err));
            entries_errors += 1;
        }
        assert!(
            budget > 0 || errors == 1,
            "an error at the first seek must surface"
        );
    }
    assert!(entries_errors > 5);
}

#[test]
fn corrupt_internal_key_is_reported() {
    let bad = vec![(b"short".to_vec(), b"v".to_vec())];
    let mut it = DbIter::new(VecIter::new(bad), DbIterOptions::default());
    let err = it.seek_to_first().unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(!it.valid());
    assert!(it.seek_to_last().unwrap_err().is_corruption());
}
