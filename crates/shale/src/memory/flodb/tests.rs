//! Tests of the FloDB memtable: gets at every snapshot against a model, draining, sealing,
//! iterators, and readers at old sequence numbers while writers overwrite.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::membuffer::Put;
use super::{FloDbConfig, FloDbMemTable, FloDbMemory};
use crate::iter::InternalIterator;
use crate::iter::testutil::Rng;
use crate::key::{self, SeqNo, ValueKind};
use crate::memory::{MemLookup, MemTable, MemoryComponent, MemoryServices};

fn config(partitions: usize, partition_bytes: usize, drain_threads: usize) -> FloDbConfig {
    FloDbConfig {
        partitions,
        partition_bytes,
        drain_threads,
        bloom_bytes: 0,
        writer_drains: false,
    }
}

fn services() -> MemoryServices {
    MemoryServices {
        oldest_snapshot: Arc::new(|| 0),
    }
}

/// A key's versions: seq -> (kind, value).
type Versions = BTreeMap<SeqNo, (ValueKind, Vec<u8>)>;

/// Every version of every key.
#[derive(Default)]
struct Model(BTreeMap<Vec<u8>, Versions>);

impl Model {
    fn insert(&mut self, k: &[u8], seq: SeqNo, kind: ValueKind, v: &[u8]) {
        self.0
            .entry(k.to_vec())
            .or_default()
            .insert(seq, (kind, v.to_vec()));
    }
    fn get(&self, k: &[u8], snapshot: SeqNo) -> Option<MemLookup> {
        let (_, (kind, v)) = self.0.get(k)?.range(..=snapshot).next_back()?;
        Some(match kind {
            ValueKind::Delete => MemLookup::Deleted,
            kind => MemLookup::Found(*kind, v.clone()),
        })
    }
    /// Every entry in internal-key order.
    fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        for (k, versions) in &self.0 {
            for (seq, (kind, v)) in versions.iter().rev() {
                out.push((key::make_internal_key(k, *seq, *kind), v.clone()));
            }
        }
        out
    }
}

fn collect(it: &mut dyn InternalIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first().unwrap();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    out
}

/// Sequence numbers `1..=n` in a shuffled order within windows of 8, as concurrent
/// writers insert them.
fn shuffled_seqs(rng: &mut Rng, n: u64) -> Vec<SeqNo> {
    let mut seqs: Vec<SeqNo> = (1..=n).collect();
    for w in seqs.chunks_mut(8) {
        for i in (1..w.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            w.swap(i, j);
        }
    }
    seqs
}

/// A memtable of `memory` whose membuffer holds key ranges (`ranged`) or key hashes: the
/// second one made, while the first holds `keys` (the sample its ranges are cut from);
/// and that first memtable, which must stay alive for the second to be sampled from it.
fn memtable(
    memory: &FloDbMemory,
    ranged: bool,
    keys: impl Iterator<Item = Vec<u8>>,
) -> (Arc<FloDbMemTable>, Arc<FloDbMemTable>) {
    let first = memory.new_flodb_memtable();
    assert!(!first.membuffer.by_range(), "nothing to sample from");
    if ranged {
        for (seq, k) in (1..).zip(keys) {
            first.insert(&k, seq, ValueKind::Value, b"");
        }
        first.drain();
    }
    let table = memory.new_flodb_memtable();
    assert_eq!(table.membuffer.by_range(), ranged);
    (table, first)
}

/// While both membuffers hold versions of a key (a put that chose the first just before
/// the cut), a get takes the newest of the two at its sequence number, and after the
/// first is drained, the skiplist's: at every snapshot.
#[test]
fn gets_see_both_membuffers_across_a_cut() {
    let memory = FloDbMemory::with_config(config(4, 4096, 0));
    let table = memory.new_flodb_memtable();
    let mut model = Model::default();
    let mut put = |table: &FloDbMemTable, k: &str, seq: SeqNo| {
        let v = format!("{k}@{seq}").into_bytes();
        table.insert(k.as_bytes(), seq, ValueKind::Value, &v);
        model.insert(k.as_bytes(), seq, ValueKind::Value, &v);
    };
    for i in 0..200u64 {
        put(&table, &format!("k{i:03}"), i + 1);
    }
    table.drain();
    put(&table, "k007", 300);
    put(&table, "k008", 301);
    // The cut's first step, by hand: the key-range membuffer installed, the first not
    // yet closed; then a put into the new one below and above the old one's versions.
    let sample = table.list.sample_user_keys(64);
    let ranged = super::Membuffer::with_sample(4, 4096, &sample);
    assert!(ranged.by_range());
    assert!(table.ranged.set(ranged).is_ok());
    put(&table, "k007", 299);
    put(&table, "k008", 302);
    let check = |when: &str| {
        for k in ["k006", "k007", "k008"] {
            for snapshot in 0..=310 {
                assert_eq!(
                    table.get(k.as_bytes(), snapshot),
                    model.get(k.as_bytes(), snapshot),
                    "{when}: {k} at {snapshot}"
                );
            }
        }
    };
    assert_eq!(
        (table.membuffer.len(), table.ranged.get().map(|r| r.len())),
        (2, Some(2))
    );
    check("both staged");
    assert_eq!(table.retire_first().moved, 2);
    assert_eq!(
        table.membuffers().count(),
        1,
        "gets no longer visit the first"
    );
    assert_eq!(table.first_spilled.get(), Some(&301));
    check("the first retired");
    assert_eq!(table.drain(), 2);
    check("both drained");
}

/// The memtable's filter learns a staged key only when a drain moves it into the
/// skiplist: until then a get finds it in the membuffer, which it asks before the
/// filter; afterwards through the filter; a key never put is refused by the filter.
#[test]
fn the_filter_learns_keys_as_they_are_drained() {
    let memory = FloDbMemory::with_config(config(4, 4096, 0).with_bloom(4096));
    let table = memory.new_flodb_memtable();
    let keys: Vec<Vec<u8>> = (0..20).map(|i| format!("key{i:02}").into_bytes()).collect();
    for (seq, k) in (1..).zip(&keys) {
        table.insert(k, seq, ValueKind::Value, k);
    }
    assert_eq!((table.staged(), table.sorted()), (keys.len(), 0));
    let found = |k: &[u8]| Some(MemLookup::Found(ValueKind::Value, k.to_vec()));
    for k in &keys {
        assert!(
            !table.list.may_hold(k),
            "{k:?} is staged only: not in the filter yet"
        );
        assert_eq!(table.get(k, 100), found(k), "staged {k:?}");
    }
    assert_eq!(table.drain(), keys.len());
    for k in &keys {
        assert!(table.list.may_hold(k), "{k:?} was drained: in the filter");
        assert_eq!(table.get(k, 100), found(k), "drained {k:?}");
    }
    // A write that finds its partition full (a value over the partition's whole budget)
    // goes to the skiplist and sets its own bits.
    let big = vec![7u8; 5000];
    table.insert(b"direct", 200, ValueKind::Value, &big);
    assert_eq!((table.staged(), table.sorted()), (0, keys.len() + 1));
    assert!(table.list.may_hold(b"direct"));
    assert_eq!(
        table.get(b"direct", 200),
        Some(MemLookup::Found(ValueKind::Value, big))
    );
    assert!(!table.list.may_hold(b"never"));
    assert_eq!(table.get(b"never", 200), None);
    // Versions staged at the seal: its drain moves them and sets their bits, and gets of
    // the sealed memtable (which skip its emptied membuffer) find every key's newest.
    for (seq, k) in (300..).zip(&keys[..5]) {
        table.insert(k, seq, ValueKind::Delete, b"");
    }
    assert_eq!(table.staged(), 5);
    table.seal();
    assert_eq!(table.staged(), 0);
    for (i, k) in keys.iter().enumerate() {
        let newest = if i < 5 {
            Some(MemLookup::Deleted)
        } else {
            found(k)
        };
        assert_eq!(table.get(k, 400), newest, "sealed {k:?}");
        assert_eq!(table.get(k, 100), found(k), "sealed {k:?} at 100");
    }
}

/// Readers that get every key while the memtable is sealed (its drain moving the
/// staged versions into the skiplist and setting their filter bits, then `settled`
/// switching gets off the membuffer) find every key's version at every moment.
#[test]
fn gets_during_a_seal_find_every_key() {
    const N: u64 = 3000;
    for round in 0..4 {
        let memory = FloDbMemory::with_config(config(8, 64 << 10, 0).with_bloom(8192));
        let table = memory.new_flodb_memtable();
        let k = |seq: u64| format!("key{seq:05}").into_bytes();
        for seq in 1..=N {
            table.insert(&k(seq), seq, ValueKind::Value, &value_of(seq));
        }
        assert!(table.staged() > 0, "round {round}: some versions staged");
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let readers: Vec<_> = (0..2)
                .map(|r| {
                    let (table, done) = (&table, &done);
                    s.spawn(move || {
                        let mut passes = 0;
                        loop {
                            let finished = done.load(Ordering::Acquire);
                            for seq in (1..=N).skip(r).step_by(2) {
                                assert_eq!(
                                    table.get(&k(seq), N),
                                    Some(MemLookup::Found(ValueKind::Value, value_of(seq))),
                                    "round {round}: key {seq} during the seal"
                                );
                            }
                            passes += 1;
                            if finished {
                                return passes;
                            }
                        }
                    })
                })
                .collect();
            table.seal();
            done.store(true, Ordering::Release);
            for r in readers {
                assert!(r.join().unwrap_or(0) >= 1);
            }
        });
        assert_eq!(table.staged(), 0);
    }
}

/// A membuffer of no partitions (`membuffer_fraction` 0) stages nothing: every put goes
/// to the skiplist, with its filter bits, and gets ask the skiplist alone.
#[test]
fn no_partitions_stage_nothing() {
    let memory =
        FloDbMemory::with_config(FloDbConfig::sized(64 << 20, 0.0, 64, 1).with_bloom(4096));
    assert_eq!(memory.config.partitions, 0);
    memory.start(services()).unwrap();
    let table = memory.new_flodb_memtable();
    let k = |seq: u64| format!("k{seq:03}").into_bytes();
    for seq in 1..=100u64 {
        table.insert(&k(seq), seq, ValueKind::Value, &value_of(seq));
    }
    assert_eq!((table.staged(), table.sorted()), (0, 100));
    for seq in 1..=100u64 {
        assert!(table.list.may_hold(&k(seq)));
        assert_eq!(
            table.get(&k(seq), 100),
            Some(MemLookup::Found(ValueKind::Value, value_of(seq)))
        );
        assert_eq!(table.get(&k(seq), seq - 1), None);
    }
    assert_eq!(
        memory.stats().direct,
        0,
        "nothing was refused by a partition"
    );
    memory.stop();
}

/// Writes to few keys (many versions each), through small partitions (so some writes
/// find theirs full and go to the skiplist), with drains at random points: a get at every
/// sequence number returns the model's newest version at or below it; with partitions of
/// key hashes, of key ranges, and of key hashes replaced by key ranges halfway.
#[test]
fn gets_at_every_snapshot_match_the_model() {
    const KEYS: u64 = 60;
    for seed in 0..12 {
        // Half of the seeds with the memtable's filter (over the skiplist's keys).
        let bloom = if seed >= 6 { 4096 } else { 0 };
        let memory = FloDbMemory::with_config(config(4, 1024, 0).with_bloom(bloom));
        let sample = (0..1000).map(|i| format!("k{}", i % KEYS).into_bytes());
        let (table, _first) = memtable(&memory, seed % 3 == 1, sample);
        let cut_at = (seed % 3 == 2).then_some(400);
        let mut rng = Rng::from_state(seed);
        let mut model = Model::default();
        let n = 600;
        for (i, seq) in shuffled_seqs(&mut rng, n).into_iter().enumerate() {
            if Some(i) == cut_at {
                let staged = table.staged();
                let cut = table.cut_ranges().expect("enough keys to cut ranges");
                assert_eq!(
                    cut.moved, staged,
                    "seed {seed}: the cut moves what was staged"
                );
                assert!(table.by_range() && table.membuffer.len() == 0);
                assert_eq!(
                    table.membuffer.put(b"k1", 0, ValueKind::Value, b""),
                    Put::Closed
                );
            }
            let k = format!("k{}", rng.below(KEYS)).into_bytes();
            let kind = if rng.below(6) == 0 {
                ValueKind::Delete
            } else {
                ValueKind::Value
            };
            let v = if kind == ValueKind::Delete {
                Vec::new()
            } else {
                format!("{seq}-{}", "x".repeat(rng.below(80) as usize)).into_bytes()
            };
            table.insert(&k, seq, kind, &v);
            model.insert(&k, seq, kind, &v);
            // No drain in the last writes: some stay staged for the first check.
            if rng.below(50) == 0 && i + 40 < n as usize {
                table.drain();
            }
        }
        assert!(
            table.staged() > 0,
            "seed {seed}: some writes staged ({} sorted)",
            table.sorted()
        );
        assert!(
            table.sorted() > 0,
            "seed {seed}: some writes went to the skiplist"
        );
        assert_eq!(table.len(), n as usize);
        let check = |table: &FloDbMemTable, when: &str| {
            for i in 0..=KEYS {
                let k = format!("k{i}").into_bytes();
                for snapshot in 0..=n + 1 {
                    assert_eq!(
                        table.get(&k, snapshot),
                        model.get(&k, snapshot),
                        "seed {seed} {when}: key {i} at {snapshot}"
                    );
                }
            }
        };
        check(&table, "staged");
        table.drain();
        assert_eq!(table.staged(), 0);
        check(&table, "drained");
    }
}

/// An iterator drains the membuffer first and yields every entry once, in internal-key
/// order; sealing leaves nothing staged and an insert after it still lands.
#[test]
fn iterator_and_seal_see_every_entry() {
    let memory = FloDbMemory::with_config(config(8, 4096, 0));
    let table = memory.new_flodb_memtable();
    let mut rng = Rng::from_state(7);
    let mut model = Model::default();
    for seq in shuffled_seqs(&mut rng, 2000) {
        let k = format!("key{:04}", rng.below(300)).into_bytes();
        let v = format!("v{seq}").into_bytes();
        table.insert(&k, seq, ValueKind::Value, &v);
        model.insert(&k, seq, ValueKind::Value, &v);
    }
    let staged = table.staged() as u64;
    assert!(staged > 0);
    let before = memory.stats();
    assert_eq!(before.staged, staged, "nothing moved yet: {before:?}");
    assert!(
        before.direct > 0,
        "8 KiB of partitions cannot hold 2000 versions"
    );
    assert_eq!(before.staged + before.direct, 2000);
    let got = collect(&mut *Arc::clone(&table).iter());
    assert_eq!(table.staged(), 0, "the iterator drained the membuffer");
    assert_eq!(got, model.entries());
    let after = memory.stats();
    assert_eq!(
        (after.scan_drains, after.scan_moved, after.scan_waits),
        (1, staged, 0)
    );
    assert_eq!(after.staged, staged);
    table.seal();
    assert_eq!(table.staged(), 0);
    assert_eq!(table.sorted(), 2000);
    // The seal found nothing staged; a flush's iterator over the sealed table drains
    // nothing and is not counted as a scan.
    let _ = collect(&mut *Arc::clone(&table).iter());
    let sealed = memory.stats();
    assert_eq!((sealed.seal_moved, sealed.scan_drains), (0, 1));
    table.insert(b"late", 5000, ValueKind::Value, b"l");
    assert_eq!(table.staged(), 0, "a sealed memtable stages nothing");
    assert_eq!(
        table.get(b"late", 5000),
        Some(MemLookup::Found(ValueKind::Value, b"l".to_vec()))
    );
}

/// An iterator made while a seal is under way (the memtable is marked sealed, its drain
/// has not moved everything yet) still sees every staged entry: it drains too, rather than
/// trusting the seal. (A scan that skipped its drain here missed acknowledged writes: the
/// concurrent_writes test caught it as a gap in a writer's keys.)
#[test]
fn an_iterator_during_a_seal_sees_what_the_seal_has_not_moved_yet() {
    let memory = FloDbMemory::with_config(config(8, 4096, 0));
    let table = memory.new_flodb_memtable();
    let mut model = Model::default();
    for seq in 1..=40u64 {
        let k = format!("key{seq:04}").into_bytes();
        table.insert(&k, seq, ValueKind::Value, b"v");
        model.insert(&k, seq, ValueKind::Value, b"v");
    }
    assert_eq!(table.staged(), 40);
    // The seal's first step, before its drain.
    table.sealed.store(true, Ordering::Release);
    let got = collect(&mut *Arc::clone(&table).iter());
    assert_eq!(got, model.entries());
    table.seal();
    assert_eq!(table.staged(), 0);
    assert_eq!(collect(&mut *Arc::clone(&table).iter()), model.entries());
}

/// Four writers insert at once while the drain thread runs; sealing then moves what is
/// left, and the skiplist holds every entry, in order.
#[test]
fn concurrent_writers_then_seal_drains_everything() {
    for ranged in [false, true] {
        for writer_drains in [false, true] {
            concurrent_writers_then_seal(ranged, writer_drains);
        }
    }
}

/// [`concurrent_writers_then_seal_drains_everything`] with partitions of key ranges
/// (whose drains insert sorted batches beside the writers' direct inserts) from the
/// start, or of key hashes replaced by key ranges while the writers write (by a drain
/// thread or by a fifth thread, whichever comes first). Each writer assists after each
/// insert, as the engine's do once their write is published: with `writer_drains`, the
/// writers drain the key-range partitions their puts found full beside the drain threads.
fn concurrent_writers_then_seal(ranged: bool, writer_drains: bool) {
    let bloom = if ranged { 8192 } else { 0 };
    let memory = FloDbMemory::with_config(
        config(16, 2048, 2)
            .with_bloom(bloom)
            .with_writer_drains(writer_drains),
    );
    let sample = (0..2000).map(|i| format!("key{:05}", i * 7 % 1000).into_bytes());
    let (table, first) = memtable(&memory, ranged, sample);
    drop(first);
    // The first memtable's writes that went to its skiplist directly.
    let direct_before = memory.stats().direct;
    memory.start(services()).unwrap();
    let per = 3000u64;
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (table, done) = (&table, &done);
            s.spawn(move || {
                for i in 0..per {
                    let seq = 1 + t * per + i;
                    let k = format!("key{:05}", (i * 7 + t) % 1000).into_bytes();
                    table.insert(&k, seq, ValueKind::Value, &seq.to_le_bytes());
                    table.assist();
                }
                done.fetch_add(1, Ordering::Release);
            });
        }
        if !ranged {
            let (table, done) = (&table, &done);
            s.spawn(move || {
                while !table.by_range() && done.load(Ordering::Acquire) < 4 {
                    if table.sorted() >= 1000 {
                        let _ = table.cut_ranges();
                    }
                    std::thread::yield_now();
                }
            });
        }
    });
    if !ranged && !table.by_range() {
        // No cut finished while the writers wrote (on 2 busy cores the fifth thread and
        // the drain threads may not have run): stop the drain threads, which finishes a
        // cut under way, and cut now if none did.
        memory.stop();
        assert!(table.by_range() || table.cut_ranges().is_some());
    }
    assert!(table.by_range());
    table.seal();
    memory.stop();
    assert_eq!(table.staged(), 0);
    assert_eq!(table.sorted() as u64, 4 * per);
    // Every write was staged or went directly; every staged version was moved once, by a
    // drain thread, a writer or the seal.
    let mut st = memory.stats();
    st.direct -= direct_before;
    assert_eq!(st.staged + st.direct, 4 * per, "{st:?}");
    assert_eq!(
        st.background_moved + st.writer_moved + st.seal_moved,
        st.staged,
        "{st:?}"
    );
    assert_eq!(st.scan_moved, 0);
    assert!(st.background_drains <= st.background_moved);
    assert!(st.writer_drains <= st.writer_moved);
    if !writer_drains {
        assert_eq!((st.writer_drains, st.writer_moved), (0, 0), "{st:?}");
    }
    let mut model = Model::default();
    for t in 0..4u64 {
        for i in 0..per {
            let seq = 1 + t * per + i;
            let k = format!("key{:05}", (i * 7 + t) % 1000).into_bytes();
            model.insert(&k, seq, ValueKind::Value, &seq.to_le_bytes());
        }
    }
    let mut it = Arc::clone(&table).iter();
    assert_eq!(collect(&mut *it), model.entries());
}

/// A put that finds its key-range partition full goes to the skiplist directly and names
/// the partition; the writer's `assist` then drains it, so the partition's next puts are
/// staged again. With `writer_drains` off (the paper's rule), or with partitions of key
/// hashes, `assist` leaves the partition to the drain threads and every later put of a
/// full partition goes to the skiplist too. Every version stays readable throughout.
#[test]
fn a_writer_drains_the_partition_its_put_found_full() {
    for (ranged, writer_drains) in [(true, true), (true, false), (false, true)] {
        // No drain threads: only the writer's assist drains.
        let memory = FloDbMemory::with_config(config(4, 1024, 0).with_writer_drains(writer_drains));
        let sample = (0..400).map(|i| format!("key{i:04}").into_bytes());
        let (table, first) = memtable(&memory, ranged, sample);
        drop(first);
        let direct_before = memory.stats().direct;
        let mut model = Model::default();
        // Keys of one partition (the second of four ranges, well inside it: keys outside
        // the sampled span would go by hash), or of any hash: fill it past its budget.
        let k = |i: u64| format!("key{:04}", 120 + i % 50).into_bytes();
        let mut seq = 0;
        let put = |seq: &mut u64, model: &mut Model| {
            *seq += 1;
            table.insert(&k(*seq), *seq, ValueKind::Value, &value_of(*seq));
            model.insert(&k(*seq), *seq, ValueKind::Value, &value_of(*seq));
        };
        while memory.stats().direct == direct_before {
            put(&mut seq, &mut model);
            assert!(seq < 1000, "the partition never filled");
        }
        let staged = table.staged();
        assert!(staged > 0);
        table.assist();
        let st = memory.stats();
        if ranged && writer_drains {
            assert_eq!(
                table.staged(),
                0,
                "the writer drained the full partition (or the keys spanned two ranges)"
            );
            assert_eq!((st.writer_drains, st.writer_moved), (1, staged as u64));
            // Room again: the next put is staged.
            put(&mut seq, &mut model);
            assert_eq!(table.staged(), 1);
            assert_eq!(memory.stats().direct, st.direct);
        } else {
            assert_eq!(table.staged(), staged, "left to the drain threads");
            assert_eq!((st.writer_drains, st.writer_moved), (0, 0));
            if ranged {
                // The same key range: still full.
                put(&mut seq, &mut model);
                assert_eq!(memory.stats().direct, st.direct + 1);
            }
        }
        // The slot is cleared by the assist that took it (and, off, never set); a second
        // assist finds nothing named.
        assert_eq!(table.full.load(Ordering::Relaxed), 0);
        table.assist();
        for s in 1..=seq {
            assert_eq!(table.get(&k(s), seq), model.get(&k(s), seq));
            assert_eq!(table.get(&k(s), s), model.get(&k(s), s));
        }
        table.seal();
        assert_eq!(collect(&mut *Arc::clone(&table).iter()), model.entries());
    }
}

/// Keys of the writes: write `s` (beyond the first `KEYS`) overwrites key `s % KEYS`.
const KEYS: u64 = 48;

fn key_of(seq: SeqNo) -> Vec<u8> {
    format!("key{:03}", seq % KEYS).into_bytes()
}

/// The sequence number of the version of key `k` a read at `snapshot` must see: the
/// largest `s <= snapshot` with `s % KEYS == k` (every sequence number from 1 up is a
/// write; the first `KEYS` write every key once).
fn expected(k: u64, snapshot: SeqNo) -> Option<SeqNo> {
    let first = if k == 0 { KEYS } else { k };
    if snapshot < first {
        return None;
    }
    Some(snapshot - (snapshot - k) % KEYS)
}

fn value_of(seq: SeqNo) -> Vec<u8> {
    let mut v = seq.to_le_bytes().to_vec();
    v.resize(40 + (seq % 50) as usize, b'.');
    v
}

/// Readers at a held snapshot, at the newest published sequence number and at random older
/// ones, and scanners, while two writers overwrite the same keys (publishing in order, as
/// the engine does) and the drain thread moves entries: every read returns exactly the
/// version its sequence number must see.
#[test]
fn readers_at_old_sequence_numbers_while_writers_overwrite() {
    // With the memtable's filter (over the skiplist's keys, set as the drain moves them).
    let memory = FloDbMemory::with_config(config(4, 2048, 1).with_bloom(4096));
    memory.start(services()).unwrap();
    let table = memory.new_flodb_memtable();
    for seq in 1..=KEYS {
        table.insert(&key_of(seq), seq, ValueKind::Value, &value_of(seq));
    }
    let held = KEYS;
    let published = AtomicU64::new(KEYS);
    let next = AtomicU64::new(KEYS + 1);
    let last = 12_000u64;
    let reads = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let seq = next.fetch_add(1, Ordering::Relaxed);
                    if seq > last {
                        break;
                    }
                    table.insert(&key_of(seq), seq, ValueKind::Value, &value_of(seq));
                    // Publish in order, after every earlier write.
                    while published.load(Ordering::Acquire) != seq - 1 {
                        std::thread::yield_now();
                    }
                    published.store(seq, Ordering::Release);
                }
            });
        }
        for r in 0..2u64 {
            let (table, published, reads) = (&table, &published, &reads);
            s.spawn(move || {
                let mut rng = Rng::from_state(r);
                // At least one round, however the threads are scheduled: on a loaded
                // machine the writers may be done before a reader first runs.
                loop {
                    let p = published.load(Ordering::Acquire);
                    let k = rng.below(KEYS);
                    let key = format!("key{k:03}").into_bytes();
                    for snapshot in [held, p, KEYS + rng.below(p - KEYS + 1)] {
                        let want = expected(k, snapshot)
                            .map(|s| MemLookup::Found(ValueKind::Value, value_of(s)));
                        assert_eq!(table.get(&key, snapshot), want, "key {k} at {snapshot}");
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                    if p >= last {
                        break;
                    }
                }
            });
        }
        let (table, published) = (&table, &published);
        s.spawn(move || {
            loop {
                let p = published.load(Ordering::Acquire);
                let mut it = Arc::clone(table).iter();
                let all = collect(&mut *it);
                assert!(
                    all.windows(2)
                        .all(|w| key::compare_internal(&w[0].0, &w[1].0).is_lt()),
                    "internal-key order"
                );
                // What a scan at `p` yields: each key's first entry at or below `p`.
                let mut seen = BTreeMap::new();
                for (ikey, v) in &all {
                    let parsed = key::parse_internal_key(ikey).unwrap();
                    if parsed.seq <= p {
                        seen.entry(parsed.user_key.to_vec())
                            .or_insert((parsed.seq, v.clone()));
                    }
                }
                for k in 0..KEYS {
                    let key = format!("key{k:03}").into_bytes();
                    let want = expected(k, p).map(|s| (s, value_of(s)));
                    assert_eq!(seen.get(&key).cloned(), want, "scan at {p}: key {k}");
                }
                if p >= last {
                    break;
                }
            }
        });
    });
    memory.stop();
    assert!(reads.load(Ordering::Relaxed) > 0);
    assert!(table.sorted() > 0);
}

/// Through the engine: a snapshot held across overwrites of the same keys (all in one
/// memtable's membuffer and skiplist) reads and scans what it saw.
/// Through the engine, with no drain threads (only writers, scans and seals drain): puts
/// of a lone writer, batches, and two writers at once (queued groups) make the writers drain
/// the partitions their puts found full once their writes are published, with inline values
/// and with the value log (whose group leader inserts the pointers itself); with
/// `writer_drains` off nothing drains them. Every write reads back, by get and by scan.
#[test]
fn writers_drain_full_partitions_through_the_engine() {
    use crate::db::{Db, IterOptions};
    use crate::env::Env;
    use crate::options::{Options, ValuesKind};
    use crate::wal::WriteBatch;
    for (writer_drains, values) in [
        (true, ValuesKind::Inline),
        (false, ValuesKind::Inline),
        (true, ValuesKind::Vlog),
    ] {
        let mut options = Options::preset("flodb").unwrap().with_env(Env::memory());
        options.write_buffer_size = 1 << 20;
        options.values = values;
        options.flodb.drain_threads = 0;
        options.flodb.writer_drains = writer_drains;
        let db = Db::open("/db", options).unwrap();
        let key = |i: u32| format!("k{:06}", i * 7919 % 20_000).into_bytes();
        let value = |i: u32| format!("{i:0100}").into_bytes();
        for i in 0..6_000 {
            db.put(&key(i), &value(i)).unwrap();
        }
        for first in (6_000..12_000).step_by(10) {
            let mut batch = WriteBatch::new();
            for i in first..first + 10 {
                batch.put(&key(i), &value(i));
            }
            db.write(batch).unwrap();
        }
        std::thread::scope(|s| {
            for t in 0..2u32 {
                let db = &db;
                s.spawn(move || {
                    for i in 12_000 + t * 4_000..16_000 + t * 4_000 {
                        db.put(&key(i), &value(i)).unwrap();
                    }
                });
            }
        });
        let st = db.stats().memory;
        let what = format!("writer_drains {writer_drains}, {values:?}: {st:?}");
        assert!(st.direct > 0, "partitions filled: {what}");
        if writer_drains {
            assert!(
                st.writer_drains > 0 && st.writer_moved >= st.writer_drains,
                "{what}"
            );
        } else {
            assert_eq!((st.writer_drains, st.writer_moved), (0, 0), "{what}");
        }
        assert_eq!(st.background_drains, 0, "{what}");
        for i in 0..20_000 {
            assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "key {i}: {what}");
        }
        let scanned: Vec<_> = db
            .iter(IterOptions::default())
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut want: Vec<_> = (0..20_000).map(|i| (key(i), value(i))).collect();
        want.sort();
        assert_eq!(scanned, want, "{what}");
        db.close().unwrap();
    }
}

#[test]
fn a_held_snapshot_survives_overwrites_through_the_engine() {
    use crate::db::{Db, IterOptions};
    use crate::env::Env;
    use crate::options::Options;
    let mut options = Options::preset("flodb").unwrap().with_env(Env::memory());
    options.write_buffer_size = 1 << 20;
    let db = Db::open("/db", options).unwrap();
    let key = |i: u32| format!("k{i:03}").into_bytes();
    for i in 0..100 {
        db.put(&key(i), b"first").unwrap();
    }
    let snapshot = db.snapshot();
    for round in 0..20u32 {
        for i in 0..100 {
            db.put(&key(i), format!("r{round}").as_bytes()).unwrap();
        }
    }
    for i in 0..100 {
        assert_eq!(
            db.get_at(&key(i), &snapshot).unwrap().as_deref(),
            Some(&b"first"[..])
        );
        assert_eq!(db.get(&key(i)).unwrap().as_deref(), Some(&b"r19"[..]));
    }
    let at_snapshot = IterOptions {
        snapshot: Some(snapshot),
        ..IterOptions::default()
    };
    let scanned: Vec<_> = db.iter(at_snapshot).unwrap().map(Result::unwrap).collect();
    let want: Vec<_> = (0..100).map(|i| (key(i), b"first".to_vec())).collect();
    assert_eq!(scanned, want);
    db.close().unwrap();
}
