//! Tests of the skiplist memtable against a sorted-vector model.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};
use std::time::Instant;

use super::SkipListMemTable;
use crate::iter::testutil::Rng;
use crate::iter::{InternalIterator, VecIter};
use crate::key::{self, MAX_SEQNO, SeqNo, ValueKind};
use crate::memory::{MemLookup, MemTable};

/// Keys that share long prefixes, differ only past byte 8, or only in trailing zero bytes,
/// so the 8-byte prefix shortcut is exercised on ties.
fn tricky_key(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(14) as usize;
    (0..len)
        .map(|i| match rng.below(4) {
            0 => 0,
            1 => b'a' + (i % 2) as u8,
            2 => 0xff,
            _ => b'a' + rng.below(3) as u8,
        })
        .collect()
}

/// `normal`, or `miri` under Miri: the concurrent tests and the long-key test are sized
/// for it (`cargo +nightly miri test -p shale --lib -- memory::skiplist::tests::NAME`;
/// which passed there is in `UNSAFE.md`), so that Miri checks the borrows of entry bytes
/// (`SkipList::entry_of`) under Stacked Borrows and the data-race detector.
fn sized(normal: usize, miri: usize) -> usize {
    if cfg!(miri) { miri } else { normal }
}

fn value_for(user_key: &[u8], seq: SeqNo) -> Vec<u8> {
    let mut v = format!("{seq}:").into_bytes();
    v.extend_from_slice(user_key);
    v
}

/// Model: internal key -> value, sorted as the memtable must be.
#[derive(Default)]
struct Model {
    entries: BTreeMap<(Vec<u8>, std::cmp::Reverse<u64>), Vec<u8>>,
}

impl Model {
    fn insert(&mut self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        let t = key::pack_trailer(seq, kind);
        self.entries
            .insert((user_key.to_vec(), std::cmp::Reverse(t)), value.to_vec());
    }
    fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<MemLookup> {
        let from = key::pack_trailer(snapshot.min(MAX_SEQNO), ValueKind::FOR_SEEK);
        let ((k, t), v) = self
            .entries
            .range((user_key.to_vec(), std::cmp::Reverse(from))..)
            .next()?;
        if k != user_key {
            return None;
        }
        match ValueKind::from_u8((t.0 & 0xff) as u8)? {
            ValueKind::Delete => Some(MemLookup::Deleted),
            kind => Some(MemLookup::Found(kind, v.clone())),
        }
    }
    fn vec_iter(&self) -> VecIter {
        VecIter::new(
            self.entries
                .iter()
                .map(|((k, t), v)| {
                    let mut ik = k.clone();
                    ik.extend_from_slice(&t.0.to_le_bytes());
                    (ik, v.clone())
                })
                .collect(),
        )
    }
}

fn random_kind(rng: &mut Rng) -> ValueKind {
    match rng.below(5) {
        0 => ValueKind::Delete,
        1 => ValueKind::ValuePointer,
        _ => ValueKind::Value,
    }
}

/// Fill a memtable and a model with the same `n` random entries (unique seqs, shuffled).
fn build(seed: u64, n: usize, key: impl Fn(&mut Rng) -> Vec<u8>) -> (Arc<SkipListMemTable>, Model) {
    let mut rng = Rng::from_state(seed);
    let mut seqs: Vec<SeqNo> = (1..=n as u64).collect();
    for i in (1..seqs.len()).rev() {
        seqs.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mem = Arc::new(SkipListMemTable::new());
    let mut model = Model::default();
    for seq in seqs {
        let k = key(&mut rng);
        let kind = random_kind(&mut rng);
        let v = if kind == ValueKind::Delete {
            Vec::new()
        } else {
            value_for(&k, seq)
        };
        mem.insert(&k, seq, kind, &v);
        model.insert(&k, seq, kind, &v);
    }
    (mem, model)
}

fn collect_forward(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first().unwrap();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    out
}

fn collect_backward(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_last().unwrap();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev().unwrap();
    }
    out.reverse();
    out
}

fn same_position(a: &dyn InternalIterator, b: &dyn InternalIterator, what: &str) {
    assert_eq!(a.valid(), b.valid(), "{what}: validity");
    if a.valid() {
        assert_eq!(a.key(), b.key(), "{what}: key");
        assert_eq!(a.value(), b.value(), "{what}: value");
    }
}

#[test]
fn empty_table() {
    let mem = Arc::new(SkipListMemTable::new());
    assert!(mem.is_empty());
    assert_eq!(mem.len(), 0);
    assert!(mem.approximate_bytes() > 0);
    // The smallest write buffer the options accept (4 KiB) must hold entries.
    assert!(
        mem.approximate_bytes() < 4096,
        "{}",
        mem.approximate_bytes()
    );
    assert_eq!(mem.get(b"k", MAX_SEQNO), None);
    assert_eq!(mem.get(b"", 0), None);
    let mut it = Arc::clone(&mem).iter();
    assert!(!it.valid());
    assert_eq!(it.key(), b"");
    it.seek_to_first().unwrap();
    assert!(!it.valid());
    it.seek_to_last().unwrap();
    assert!(!it.valid());
    it.seek(&key::seek_key(b"k", 5)).unwrap();
    assert!(!it.valid());
    it.seek_for_prev(&key::seek_key(b"k", 5)).unwrap();
    assert!(!it.valid());
    // Moving an unpositioned iterator leaves it unpositioned rather than panicking.
    it.next().unwrap();
    it.prev().unwrap();
    assert!(!it.valid());
}

#[test]
fn random_entries_match_model() {
    for seed in 0..4 {
        let (mem, model) = build(seed, 3000, tricky_key);
        assert_eq!(mem.len(), 3000);
        let expected = collect_forward(&mut model.vec_iter());
        assert_eq!(expected.len(), model.entries.len());
        let mut it = Arc::clone(&mem).iter();
        assert_eq!(collect_forward(&mut *it), expected);
        assert_eq!(collect_backward(&mut *it), expected);
        // Sorted by the engine's comparator, not just equal to a model built on it.
        for w in expected.windows(2) {
            assert_eq!(key::compare_internal(&w[0].0, &w[1].0), Ordering::Less);
        }

        let mut rng = Rng::from_state(seed ^ 0xabc);
        for _ in 0..3000 {
            let k = tricky_key(&mut rng);
            let snap = match rng.below(4) {
                0 => MAX_SEQNO,
                1 => 0,
                _ => rng.below(3200),
            };
            assert_eq!(mem.get(&k, snap), model.get(&k, snap), "get {k:?} @ {snap}");
        }
    }
}

#[test]
fn iterator_moves_match_reference() {
    let (mem, model) = build(42, 2000, tricky_key);
    let mut rng = Rng::from_state(7);
    let mut it = mem.iter_owned();
    let mut reference = model.vec_iter();
    for step in 0..20_000 {
        let op = rng.below(10);
        match op {
            0 => {
                it.seek_to_first().unwrap();
                reference.seek_to_first().unwrap();
            }
            1 => {
                it.seek_to_last().unwrap();
                reference.seek_to_last().unwrap();
            }
            2 | 3 => {
                let t = key::make_internal_key(
                    &tricky_key(&mut rng),
                    rng.below(2100),
                    random_kind(&mut rng),
                );
                it.seek(&t).unwrap();
                reference.seek(&t).unwrap();
            }
            4 => {
                let t = key::make_internal_key(
                    &tricky_key(&mut rng),
                    rng.below(2100),
                    random_kind(&mut rng),
                );
                it.seek_for_prev(&t).unwrap();
                reference.seek_for_prev(&t).unwrap();
            }
            5 => {
                // Seek to an existing key exactly, then step back: exercises the
                // equal-key path of seek_for_prev.
                reference.seek_to_first().unwrap();
                if reference.valid() {
                    let k = reference.key().to_vec();
                    it.seek_for_prev(&k).unwrap();
                    reference.seek_for_prev(&k).unwrap();
                }
            }
            6..=7 => {
                if reference.valid() {
                    it.next().unwrap();
                    reference.next().unwrap();
                }
            }
            _ => {
                if reference.valid() {
                    it.prev().unwrap();
                    reference.prev().unwrap();
                }
            }
        }
        same_position(&it, &reference, &format!("step {step} op {op}"));
    }
}

#[test]
fn many_versions_of_one_key() {
    let mem = SkipListMemTable::new();
    let mut rng = Rng::from_state(3);
    let mut seqs: Vec<SeqNo> = (1..=500).map(|s| s * 2).collect();
    for i in (1..seqs.len()).rev() {
        seqs.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for &s in &seqs {
        let kind = if s % 6 == 0 {
            ValueKind::Delete
        } else {
            ValueKind::Value
        };
        mem.insert(b"the-key", s, kind, &value_for(b"the-key", s));
    }
    assert_eq!(mem.get(b"the-key", 0), None);
    assert_eq!(mem.get(b"the-key", 1), None);
    for snap in 2..=1001 {
        let newest = snap - snap % 2;
        let expect = if newest % 6 == 0 {
            MemLookup::Deleted
        } else {
            MemLookup::Found(ValueKind::Value, value_for(b"the-key", newest))
        };
        assert_eq!(mem.get(b"the-key", snap), Some(expect), "snapshot {snap}");
    }
    assert_eq!(mem.get(b"the-ke", MAX_SEQNO), None);
    assert_eq!(mem.get(b"the-key\0", MAX_SEQNO), None);
    // Newest first.
    let mem = Arc::new(mem);
    let mut it = mem.iter_owned();
    it.seek_to_first().unwrap();
    let mut last = u64::MAX;
    let mut n = 0;
    while it.valid() {
        let p = key::parse_internal_key(it.key()).unwrap();
        assert!(p.seq < last);
        last = p.seq;
        n += 1;
        it.next().unwrap();
    }
    assert_eq!(n, 500);
}

#[test]
fn prefix_ties_and_long_entries() {
    let keys: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"\0".to_vec(),
        b"a".to_vec(),
        b"a\0".to_vec(),
        b"a\0\0\0\0\0\0\0".to_vec(),
        b"a\0\0\0\0\0\0\0\0".to_vec(),
        b"abcdefgh".to_vec(),
        b"abcdefgh\0".to_vec(),
        b"abcdefgha".to_vec(),
        b"abcdefghb".to_vec(),
        vec![0xff; 8],
        vec![0xff; 9],
        vec![b'x'; 300], // internal key longer than a one-byte varint
    ];
    let mem = SkipListMemTable::new();
    let mut model = Model::default();
    for (i, k) in keys.iter().enumerate().rev() {
        let big = vec![i as u8; 70_000];
        mem.insert(k, i as u64 + 1, ValueKind::Value, &big);
        model.insert(k, i as u64 + 1, ValueKind::Value, &big);
    }
    assert!(mem.approximate_bytes() > 13 * 70_000);
    for k in &keys {
        assert_eq!(mem.get(k, MAX_SEQNO), model.get(k, MAX_SEQNO));
        assert!(mem.get(k, MAX_SEQNO).is_some());
    }
    let mem = Arc::new(mem);
    assert_eq!(
        collect_forward(&mut *Arc::clone(&mem).iter()),
        collect_forward(&mut model.vec_iter())
    );
    assert_eq!(
        collect_backward(&mut mem.iter_owned()),
        collect_forward(&mut model.vec_iter())
    );
}

#[test]
fn long_keys_with_shared_prefixes_match_model() {
    // Keys longer than the 64 inline bytes that tie on them, keys ending inside and just
    // past the inline bytes, and versions of one long key: the paths that compare entries.
    let base = [b'p'; 72];
    let key = |r: &mut Rng| {
        let mut k = base[..56 + r.below(16) as usize].to_vec();
        for _ in 0..r.below(4) {
            k.push(b'a' + r.below(3) as u8);
        }
        k
    };
    let n = sized(1500, 40);
    for seed in 0..sized(3, 1) as u64 {
        let (mem, model) = build(100 + seed, n, key);
        assert_eq!(
            collect_forward(&mut mem.iter_owned()),
            collect_forward(&mut model.vec_iter())
        );
        assert_eq!(
            collect_backward(&mut mem.iter_owned()),
            collect_forward(&mut model.vec_iter())
        );
        let mut rng = Rng::from_state(seed);
        for _ in 0..n {
            let k = key(&mut rng);
            let snap = rng.below(n as u64 + 100);
            assert_eq!(mem.get(&k, snap), model.get(&k, snap), "get {k:?} @ {snap}");
        }
    }
}

#[test]
fn grows_across_arena_chunks() {
    // Enough towers and entries to need several chunks of both arenas.
    let (mem, model) = build(9, 60_000, |r| r.next_u64().to_be_bytes().to_vec());
    assert_eq!(
        collect_forward(&mut mem.iter_owned()),
        collect_forward(&mut model.vec_iter())
    );
    let before = mem.approximate_bytes();
    mem.insert(b"one-more", 70_000, ValueKind::Value, b"v");
    assert!(mem.approximate_bytes() > before);
    assert_eq!(mem.len(), 60_001);
}

#[test]
fn readers_run_concurrently_with_the_writer() {
    let n_entries = sized(20_000, 60);
    let mem = Arc::new(SkipListMemTable::new());
    // The i-th insert writes key_of(i) at seq i + 1.
    let key_of = |i: usize| {
        let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        format!("{:016x}-{}", h, i % 7).into_bytes()
    };
    let inserted = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    // Rounds a reader runs at most before the writer is done: unbounded natively (they read
    // until the writer finishes, then once more); a few under Miri, where readers spinning
    // on the flag starve the interpreted writer (a run did not finish in 53 minutes).
    let max_rounds = sized(usize::MAX, 3);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..n_entries {
                let k = key_of(i);
                mem.insert(
                    &k,
                    i as u64 + 1,
                    ValueKind::Value,
                    &value_for(&k, i as u64 + 1),
                );
                inserted.store(i + 1, AtomicOrdering::Release);
            }
            done.store(true, AtomicOrdering::Release);
        });
        for r in 0..3u64 {
            let mem = Arc::clone(&mem);
            let (inserted, done) = (&inserted, &done);
            s.spawn(move || {
                let mut rng = Rng::from_state(r);
                let mut scans = 0;
                let mut last_len = 0;
                loop {
                    let finished = done.load(AtomicOrdering::Acquire);
                    // Every entry the writer has finished must be visible to get.
                    let known = inserted.load(AtomicOrdering::Acquire);
                    for _ in 0..50 {
                        if known == 0 {
                            break;
                        }
                        let i = rng.below(known as u64) as usize;
                        let k = key_of(i);
                        let seq = i as u64 + 1;
                        assert_eq!(
                            mem.get(&k, MAX_SEQNO),
                            Some(MemLookup::Found(ValueKind::Value, value_for(&k, seq)))
                        );
                        assert_eq!(mem.get(&k, seq - 1), None);
                    }
                    // A scan is sorted, every value matches its key, and it sees at least
                    // every entry finished before it began.
                    let before = inserted.load(AtomicOrdering::Acquire);
                    let mut it = Arc::clone(&mem).iter();
                    if scans % 2 == 0 {
                        it.seek_to_first().unwrap();
                    } else {
                        it.seek(&key::seek_key(b"8", MAX_SEQNO)).unwrap();
                    }
                    let mut prev: Option<Vec<u8>> = None;
                    let mut n = 0;
                    while it.valid() {
                        let p = key::parse_internal_key(it.key()).unwrap();
                        assert_eq!(it.value(), value_for(p.user_key, p.seq).as_slice());
                        if let Some(prev) = &prev {
                            assert_eq!(key::compare_internal(prev, it.key()), Ordering::Less);
                        }
                        prev = Some(it.key().to_vec());
                        n += 1;
                        it.next().unwrap();
                    }
                    if scans % 2 == 0 {
                        assert!(n >= before && n >= last_len, "scan saw {n} < {before}");
                        last_len = n;
                    }
                    // Backwards from the end is sorted too.
                    it.seek_to_last().unwrap();
                    let mut steps = 0;
                    let mut later: Option<Vec<u8>> = None;
                    while it.valid() && steps < 100 {
                        if let Some(later) = &later {
                            assert_eq!(key::compare_internal(it.key(), later), Ordering::Less);
                        }
                        later = Some(it.key().to_vec());
                        steps += 1;
                        it.prev().unwrap();
                    }
                    scans += 1;
                    if finished {
                        // The writer finished before this round began: nothing is missing.
                        let mut it = Arc::clone(&mem).iter();
                        assert_eq!(collect_forward(&mut *it).len(), n_entries);
                        break;
                    }
                    if scans >= max_rounds {
                        break;
                    }
                }
                assert!(scans > 0);
            });
        }
    });
    assert_eq!(mem.len(), n_entries);
    // Once the writer is done, every entry is there (the readers under Miri may have
    // stopped before it was).
    let mut it = Arc::clone(&mem).iter();
    assert_eq!(collect_forward(&mut *it).len(), n_entries);
}

/// Several writers insert at once (interleaved keys, so they race for the same links, and
/// keys sharing long prefixes, so hints tie) while readers scan: every level stays sorted,
/// nothing is lost, and each writer's finished entries are visible to gets.
#[test]
fn writers_insert_concurrently() {
    const WRITERS: usize = 4;
    let per = sized(15_000, 40);
    let mem = Arc::new(SkipListMemTable::new());
    let key_of = |w: usize, i: usize| {
        // Writer w's i-th key: close to the other writers' i-th keys.
        let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
        format!("user{:08}{w}-{}", h, i % 3).into_bytes()
    };
    let seq_of = |w: usize, i: usize| (i * WRITERS + w) as u64 + 1;
    let finished: Vec<AtomicUsize> = (0..WRITERS).map(|_| AtomicUsize::new(0)).collect();
    let writers_done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (mem, finished, writers_done) = (&mem, &finished, &writers_done);
            s.spawn(move || {
                for i in 0..per {
                    let k = key_of(w, i);
                    let seq = seq_of(w, i);
                    mem.insert(&k, seq, ValueKind::Value, &value_for(&k, seq));
                    finished[w].store(i + 1, AtomicOrdering::Release);
                }
                writers_done.fetch_add(1, AtomicOrdering::Release);
            });
        }
        let (mem, finished, writers_done) = (&mem, &finished, &writers_done);
        // As in `readers_run_concurrently_with_the_writer`: unbounded natively, a few rounds
        // under Miri.
        let max_rounds = sized(usize::MAX, 2);
        s.spawn(move || {
            let mut rng = Rng::from_state(9);
            let mut rounds = 0;
            loop {
                let all_done = writers_done.load(AtomicOrdering::Acquire) == WRITERS;
                for (w, f) in finished.iter().enumerate() {
                    let known = f.load(AtomicOrdering::Acquire);
                    if known > 0 {
                        let i = rng.below(known as u64) as usize;
                        let (k, seq) = (key_of(w, i), seq_of(w, i));
                        assert_eq!(
                            mem.get(&k, seq),
                            Some(MemLookup::Found(ValueKind::Value, value_for(&k, seq)))
                        );
                    }
                }
                let mut it = Arc::clone(mem).iter();
                let entries = collect_forward(&mut *it);
                for pair in entries.windows(2) {
                    assert_eq!(
                        key::compare_internal(&pair[0].0, &pair[1].0),
                        Ordering::Less
                    );
                }
                if all_done {
                    assert_eq!(entries.len(), WRITERS * per);
                    break;
                }
                rounds += 1;
                if rounds >= max_rounds {
                    break;
                }
            }
        });
    });
    assert_eq!(mem.len(), WRITERS * per);
    let mut it = Arc::clone(&mem).iter();
    let entries = collect_forward(&mut *it);
    assert_eq!(entries.len(), WRITERS * per);
    for pair in entries.windows(2) {
        assert_eq!(
            key::compare_internal(&pair[0].0, &pair[1].0),
            Ordering::Less
        );
    }
    // Every entry, found by get and by a seek to it.
    for w in 0..WRITERS {
        for i in (0..per).step_by(7) {
            let (k, seq) = (key_of(w, i), seq_of(w, i));
            assert!(
                mem.get(&k, MAX_SEQNO).is_some(),
                "{}",
                String::from_utf8_lossy(&k)
            );
            let mut it = Arc::clone(&mem).iter();
            it.seek(&key::make_internal_key(&k, seq, ValueKind::Value))
                .unwrap();
            assert!(it.valid());
            assert_eq!(it.value(), value_for(&k, seq).as_slice());
        }
    }
}

/// Insert `keys` (fresh memtable each round), then get every third and scan; prints costs.
fn bench_keys(name: &str, keys: &[Vec<u8>]) {
    let n = keys.len();
    let value = [b'v'; 100];
    for round in 0..2 {
        let mem = SkipListMemTable::new();
        let start = Instant::now();
        for (i, k) in keys.iter().enumerate() {
            mem.insert(k, i as u64 + 1, ValueKind::Value, &value);
        }
        let ins = start.elapsed();
        let start = Instant::now();
        let mut found = 0;
        for k in keys.iter().step_by(3) {
            if let Some((ValueKind::Value, v)) = mem.get_ref(k, MAX_SEQNO) {
                found += v.len();
            }
        }
        let gets = start.elapsed();
        let n_gets = n.div_ceil(3);
        assert_eq!(found, n_gets * 100);
        let mem = Arc::new(mem);
        let start = Instant::now();
        let mut it = mem.iter_owned();
        it.seek_to_first().unwrap();
        let mut seen = 0;
        while it.valid() {
            seen += 1;
            it.next().unwrap();
        }
        let scan = start.elapsed();
        assert_eq!(seen, n);
        println!(
            "{name} round {round}: insert {:.0} ns/op, get {:.0} ns/op, scan {:.0} ns/entry, \
             {} MiB",
            ins.as_nanos() as f64 / n as f64,
            gets.as_nanos() as f64 / n_gets as f64,
            scan.as_nanos() as f64 / n as f64,
            mem.approximate_bytes() >> 20
        );
    }
}

/// 1M random 16-byte keys with 100-byte values, in two key formats: random binary and
/// db_bench's `%016d` (which shares its first 10 bytes). Run with
/// `cargo test --release -p shale --lib skiplist -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_random_inserts_and_gets() {
    let n_env = std::env::var("SKIPLIST_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok());
    let n: usize = n_env.unwrap_or(1_000_000);
    let mut rng = Rng::from_state(1);
    let binary: Vec<Vec<u8>> = (0..n)
        .map(|_| [rng.next_u64().to_be_bytes(), rng.next_u64().to_be_bytes()].concat())
        .collect();
    bench_keys("binary16", &binary);
    let decimal: Vec<Vec<u8>> = (0..n)
        .map(|_| format!("{:016}", rng.below(n as u64)).into_bytes())
        .collect();
    bench_keys("dbbench16", &decimal);
}

/// Sorted batches inserted with `insert_sorted` (FloDB's multi-insert), mixed with single
/// inserts, with tricky keys (ties on the inline prefix) and an out-of-order entry now and
/// then: the memtable matches the model entry for entry and for gets.
#[test]
fn sorted_batches_match_the_model() {
    for seed in 0..6u64 {
        let mut rng = Rng::from_state(seed);
        let mem = Arc::new(SkipListMemTable::new());
        let mut model = Model::default();
        let mut seq = 0u64;
        for round in 0..60 {
            let n = 1 + rng.below(120) as usize;
            let mut batch: Vec<(Vec<u8>, SeqNo, ValueKind, Vec<u8>)> = (0..n)
                .map(|_| {
                    seq += 1;
                    let k = if seed % 2 == 0 {
                        tricky_key(&mut rng)
                    } else {
                        format!("key{:06}", rng.below(5000)).into_bytes()
                    };
                    let kind = random_kind(&mut rng);
                    let v = value_for(&k, seq);
                    (k, seq, kind, v)
                })
                .collect();
            batch.sort_by(|a, b| {
                key::compare_internal(
                    &key::make_internal_key(&a.0, a.1, a.2),
                    &key::make_internal_key(&b.0, b.1, b.2),
                )
            });
            if round % 7 == 3 && batch.len() > 2 {
                let last = batch.len() - 1;
                batch.swap(0, last);
            }
            for (k, s, kind, v) in &batch {
                model.insert(k, *s, *kind, v);
            }
            mem.insert_sorted(
                batch
                    .iter()
                    .map(|(k, s, kind, v)| (&k[..], *s, *kind, &v[..])),
            );
            for _ in 0..rng.below(20) {
                seq += 1;
                let k = format!("key{:06}", rng.below(5000)).into_bytes();
                let v = value_for(&k, seq);
                mem.insert(&k, seq, ValueKind::Value, &v);
                model.insert(&k, seq, ValueKind::Value, &v);
            }
        }
        let mut it = Arc::clone(&mem).iter();
        let mut want = model.vec_iter();
        assert_eq!(
            collect_forward(&mut *it),
            collect_forward(&mut want),
            "seed {seed}"
        );
        assert_eq!(mem.len(), model.entries.len());
        for ((k, _), _) in model.entries.iter().step_by(5) {
            for snapshot in [seq / 3, seq / 2, MAX_SEQNO] {
                assert_eq!(mem.get(k, snapshot), model.get(k, snapshot), "seed {seed}");
            }
        }
    }
}

/// Writers insert sorted batches at once, over the same key range, beside a writer of
/// single entries: nothing is lost and the list stays sorted.
#[test]
fn sorted_batches_insert_concurrently() {
    const WRITERS: u64 = 3;
    let batches = sized(150, 3) as u64;
    let per = sized(40, 10) as u64;
    let mem = Arc::new(SkipListMemTable::new());
    let entry = |w: u64, b: u64, i: u64| {
        let seq = 1 + (w * batches + b) * per + i;
        let h = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 44;
        (format!("user{h:06}").into_bytes(), seq)
    };
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let mem = &mem;
            s.spawn(move || {
                for b in 0..batches {
                    let mut batch: Vec<(Vec<u8>, SeqNo)> =
                        (0..per).map(|i| entry(w, b, i)).collect();
                    batch.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
                    let values: Vec<Vec<u8>> =
                        batch.iter().map(|(k, s)| value_for(k, *s)).collect();
                    mem.insert_sorted(
                        batch
                            .iter()
                            .zip(&values)
                            .map(|((k, s), v)| (&k[..], *s, ValueKind::Value, &v[..])),
                    );
                }
            });
        }
        let mem = &mem;
        s.spawn(move || {
            for i in 0..batches * per {
                let seq = 1 + WRITERS * batches * per + i;
                let k = format!("user{:06}", i * 13 % 100_000).into_bytes();
                mem.insert(&k, seq, ValueKind::Value, &value_for(&k, seq));
            }
        });
    });
    let total = ((WRITERS + 1) * batches * per) as usize;
    assert_eq!(mem.len(), total);
    let mut it = Arc::clone(&mem).iter();
    let entries = collect_forward(&mut *it);
    assert_eq!(entries.len(), total);
    for pair in entries.windows(2) {
        assert_eq!(
            key::compare_internal(&pair[0].0, &pair[1].0),
            Ordering::Less
        );
    }
    for w in 0..WRITERS {
        for b in (0..batches).step_by(11) {
            for i in 0..per {
                let (k, seq) = entry(w, b, i);
                assert_eq!(
                    mem.get(&k, seq),
                    Some(MemLookup::Found(ValueKind::Value, value_for(&k, seq)))
                );
            }
        }
    }
}

/// A memtable with a bloom filter answers every get as one without: present keys at every
/// snapshot (inserted one by one and as sorted runs), deletes, and absent keys, with a
/// filter small enough that many absent keys pass it.
#[test]
fn a_bloom_filter_changes_no_answer() {
    let mut rng = Rng::new(77);
    for bloom_bytes in [64, 4096, 1 << 20] {
        let plain = SkipListMemTable::new();
        let filtered = SkipListMemTable::with_bloom(bloom_bytes);
        assert!(filtered.bloom.is_some());
        let mut seq: SeqNo = 1;
        for round in 0..3 {
            let mut batch: Vec<(Vec<u8>, SeqNo, ValueKind, Vec<u8>)> = (0..300)
                .map(|_| {
                    let k = tricky_key(&mut rng);
                    let kind = if rng.below(8) == 0 {
                        ValueKind::Delete
                    } else {
                        ValueKind::Value
                    };
                    seq += 1;
                    let v = value_for(&k, seq);
                    (k, seq, kind, v)
                })
                .collect();
            if round == 1 {
                batch.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
                let entries = || {
                    batch
                        .iter()
                        .map(|(k, s, kind, v)| (&k[..], *s, *kind, &v[..]))
                };
                plain.insert_sorted(entries());
                filtered.insert_sorted(entries());
            } else {
                for (k, s, kind, v) in &batch {
                    plain.insert(k, *s, *kind, v);
                    filtered.insert(k, *s, *kind, v);
                }
            }
        }
        for _ in 0..3000 {
            let k = tricky_key(&mut rng);
            let snap = rng.below(seq + 2);
            assert_eq!(
                plain.get(&k, snap),
                filtered.get(&k, snap),
                "{k:?} at {snap}"
            );
            assert_eq!(
                plain.get_versioned(&k, snap),
                filtered.get_versioned(&k, snap)
            );
        }
        assert_eq!(
            filtered.approximate_bytes(),
            plain.approximate_bytes() + bloom_bytes / 64 * 64
        );
    }
    // Keys never inserted are mostly turned away by a roomy filter.
    let m = SkipListMemTable::with_bloom(1 << 16);
    for i in 0..1000u32 {
        m.insert(&i.to_be_bytes(), SeqNo::from(i) + 1, ValueKind::Value, b"v");
    }
    let passed = (1000..101_000u32)
        .filter(|i| m.may_hold(&i.to_be_bytes()))
        .count();
    assert!(
        passed < 1000,
        "{passed} of 100,000 absent keys passed the filter"
    );
    assert!((0..1000u32).all(|i| m.may_hold(&i.to_be_bytes())));
}

/// A sample is keys of the list in order, at least as many as asked for and at most about
/// four times that (all of them from a small list), spread over the whole list: each
/// quarter of the list's keys holds a fair share.
#[test]
fn a_sample_is_spread_evenly_over_the_keys() {
    let (mem, model) = build(11, 20_000, |rng| {
        format!("{:08}", rng.below(1_000_000)).into_bytes()
    });
    let mut keys: Vec<Vec<u8>> = model.entries.keys().map(|(k, _)| k.clone()).collect();
    keys.dedup();
    for want in [1, 16, 256, 1024] {
        let sample = mem.sample_user_keys(want);
        let most = if want * 2 > keys.len() {
            keys.len()
        } else {
            6 * want
        };
        assert!(
            sample.len() >= want.min(keys.len()) && sample.len() <= most,
            "{want}: {}",
            sample.len()
        );
        assert!(sample.is_sorted(), "{want}");
        assert!(
            sample.iter().all(|k| keys.binary_search(k).is_ok()),
            "{want}"
        );
        if want >= 256 {
            for q in 0..4 {
                let (lo, hi) = (
                    &keys[q * keys.len() / 4],
                    keys.get((q + 1) * keys.len() / 4),
                );
                let n = sample
                    .iter()
                    .filter(|k| *k >= lo && hi.is_none_or(|h| *k < h))
                    .count();
                assert!(
                    n * 8 > sample.len() && n * 8 < 3 * sample.len(),
                    "{want} q{q}: {n} of {}",
                    sample.len()
                );
            }
        }
    }
    assert!(SkipListMemTable::new().sample_user_keys(8).is_empty());
}
