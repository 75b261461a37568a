//! The membuffer: FloDB's unsorted top level, a hash table partitioned by key hash.
//!
//! Each partition is a `parking_lot::Mutex` over a `HashMap` (FxHash) from user key to the
//! key's versions, with a byte budget: a put that would take the partition past its budget
//! is refused ([`Put::Full`]) and the caller inserts into the skiplist directly. Every
//! version is kept (no in-place update, `docs/designs/flodb.md` says why), so a reader at
//! any sequence number finds the version it must see.
//!
//! # Draining (a partition at a time)
//!
//! [`Membuffer::drain_partition`] holds the partition's drain lock (one drainer per
//! partition, so no version is moved twice) and then: (1) under the partition lock, takes
//! a copy of every key's versions (values are shared `Arc`s, so the copy is cheap); (2)
//! without the lock, sorts them in internal-key order and inserts them into the skiplist
//! in one multi-insert;
//! (3) under the lock again, removes exactly the versions it inserted (a writer may have
//! added newer ones meanwhile) and raises the partition's `spilled` mark to the highest
//! sequence number it moved. A version is therefore in the skiplist before it leaves the
//! membuffer: a reader that looks in the membuffer first and the skiplist second finds it
//! in one or the other.
//!
//! # `spilled`: when the membuffer's answer is final
//!
//! A partition's `spilled` is at least the sequence number of every entry of its keys that
//! went to the skiplist (drained, or inserted directly because the partition was full); it
//! is raised under the partition lock before the entry leaves the membuffer, or, for a
//! direct insert, before the insert. A get at sequence `S` that finds version `s_m` as the
//! newest `<= S` in the membuffer and reads `spilled <= s_m` under the same lock needs no
//! skiplist lookup: a skiplist version `v` with `s_m < v <= S` is published (`v <= S`), so
//! its insert or its move happened before the get, and either raised `spilled` to at least
//! `v > s_m` (a move whose removal the get did not see leaves `v` in the membuffer, where
//! the get would have chosen it over `s_m`). Otherwise the get also asks the skiplist and
//! takes the newer of the two answers.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use parking_lot::Mutex;
use rustc_hash::FxBuildHasher;

use crate::key::{SeqNo, ValueKind};
use crate::memory::skiplist::SkipListMemTable;

/// Bytes charged per version beyond its value (the `Version` and its share of the vector).
const VERSION_OVERHEAD: usize = 48;
/// Bytes charged per key beyond its bytes (the map slot, the key's `Arc` header, the
/// vector header).
const KEY_OVERHEAD: usize = 64;

/// One version of a key in the membuffer.
#[derive(Clone, Debug)]
pub(crate) struct Version {
    pub(crate) seq: SeqNo,
    pub(crate) kind: ValueKind,
    pub(crate) value: Arc<[u8]>,
}

/// What a drain did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Drained {
    /// Versions moved into the skiplist.
    pub(crate) moved: usize,
    /// Partitions found being drained by another thread, whose drain was waited for.
    pub(crate) waits: usize,
}

/// What [`Membuffer::put`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Put {
    /// Staged; `wake` when the partition just passed its drain mark.
    Staged { wake: bool },
    /// The partition is full: insert into the skiplist (its `spilled` mark already covers
    /// the entry).
    Full,
}

#[derive(Default)]
struct State {
    map: HashMap<Arc<[u8]>, Vec<Version>, FxBuildHasher>,
    bytes: usize,
    /// See the module docs.
    spilled: SeqNo,
}

#[derive(Default)]
struct Partition {
    state: Mutex<State>,
    /// Held for a whole drain of this partition.
    drain: Mutex<()>,
}

/// The partitioned hash membuffer; see the module docs.
pub(crate) struct Membuffer {
    partitions: Box<[Partition]>,
    /// Byte budget of one partition.
    capacity: usize,
    hasher: FxBuildHasher,
    bytes: AtomicUsize,
    versions: AtomicUsize,
}

fn version_bytes(value: &[u8]) -> usize {
    value.len() + VERSION_OVERHEAD
}

fn key_bytes(key: &[u8]) -> usize {
    key.len() + KEY_OVERHEAD
}

impl Membuffer {
    /// A membuffer of `partitions` partitions of `capacity` bytes each.
    pub(crate) fn new(partitions: usize, capacity: usize) -> Self {
        Membuffer {
            partitions: (0..partitions.max(1)).map(|_| Partition::default()).collect(),
            capacity,
            hasher: FxBuildHasher,
            bytes: AtomicUsize::new(0),
            versions: AtomicUsize::new(0),
        }
    }

    pub(crate) fn partitions(&self) -> usize {
        self.partitions.len()
    }

    fn partition_of(&self, key: &[u8]) -> &Partition {
        // The high bits: the map's own probing uses the low ones.
        let h = self.hasher.hash_one(key) >> 32;
        let i = (h as usize) % self.partitions.len();
        &self.partitions[i]
    }

    /// Bytes held (keys, values, overhead).
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Relaxed)
    }

    /// Versions held.
    pub(crate) fn len(&self) -> usize {
        self.versions.load(Relaxed)
    }

    /// Stage a version, or refuse it when its partition is full.
    pub(crate) fn put(&self, key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) -> Put {
        let p = self.partition_of(key);
        let mut s = p.state.lock();
        let mut need = version_bytes(value);
        let present = s.map.contains_key(key);
        if !present {
            need += key_bytes(key);
        }
        if s.bytes + need > self.capacity {
            s.spilled = s.spilled.max(seq);
            return Put::Full;
        }
        let version = Version {
            seq,
            kind,
            value: Arc::from(value),
        };
        match s.map.get_mut(key) {
            Some(versions) => versions.push(version),
            None => {
                s.map.insert(Arc::from(key), vec![version]);
            }
        }
        let mark = self.capacity / 2;
        let before = s.bytes;
        s.bytes += need;
        let wake = before < mark && s.bytes >= mark;
        // The store-wide counters change under the partition's lock, in both directions:
        // a drain that moves this version (it needs the lock) then subtracts after this add.
        // Added after the unlock, a drain could subtract first and wrap the counter below
        // zero: the memtable then reported about 2^64 bytes, which panicked on the
        // overflow in `approximate_bytes` (debug) or sealed the memtable at once (release).
        self.bytes.fetch_add(need, Relaxed);
        self.versions.fetch_add(1, Relaxed);
        drop(s);
        Put::Staged { wake }
    }

    /// The newest staged version of `key` at or below `snapshot`, and the partition's
    /// `spilled` mark read under the same lock (module docs).
    pub(crate) fn get(&self, key: &[u8], snapshot: SeqNo) -> (Option<Version>, SeqNo) {
        let p = self.partition_of(key);
        let s = p.state.lock();
        let found = s.map.get(key).and_then(|versions| {
            versions
                .iter()
                .filter(|v| v.seq <= snapshot)
                .max_by_key(|v| v.seq)
                .cloned()
        });
        (found, s.spilled)
    }

    /// Whether partition `i` holds at least half its budget.
    pub(crate) fn wants_drain(&self, i: usize) -> bool {
        self.partitions
            .get(i)
            .is_some_and(|p| p.state.lock().bytes >= self.capacity / 2)
    }

    /// Move every version partition `i` holds into `list` (module docs). With `wait`
    /// false, returns at once when another drainer holds the partition.
    pub(crate) fn drain_partition(&self, i: usize, list: &SkipListMemTable, wait: bool) -> Drained {
        let Some(p) = self.partitions.get(i) else {
            return Drained::default();
        };
        let mut waits = 0;
        let _draining = match p.drain.try_lock() {
            Some(g) => g,
            None if wait => {
                waits = 1;
                p.drain.lock()
            }
            None => return Drained::default(),
        };
        Drained {
            moved: self.move_partition(p, list),
            waits,
        }
    }

    /// Move what `p` holds into `list`, its drain lock held.
    fn move_partition(&self, p: &Partition, list: &SkipListMemTable) -> usize {
        let mut batch: Vec<(Arc<[u8]>, Version)> = {
            let s = p.state.lock();
            s.map
                .iter()
                .flat_map(|(k, vs)| vs.iter().map(move |v| (Arc::clone(k), v.clone())))
                .collect()
        };
        if batch.is_empty() {
            return 0;
        }
        // Internal-key order: user key ascending, sequence number descending.
        batch.sort_unstable_by(|(ka, va), (kb, vb)| ka.cmp(kb).then(vb.seq.cmp(&va.seq)));
        list.insert_sorted(
            batch
                .iter()
                .map(|(k, v)| (&k[..], v.seq, v.kind, &v.value[..])),
        );
        let mut freed = 0;
        let mut s = p.state.lock();
        let mut top = s.spilled;
        // The batch is grouped by key: remove each key's moved versions at once.
        for group in batch.chunk_by(|(a, _), (b, _)| a == b) {
            let Some((key, _)) = group.first() else {
                continue;
            };
            let Some(versions) = s.map.get_mut(&key[..]) else {
                continue;
            };
            let moved = |v: &Version| group.iter().any(|(_, m)| m.seq == v.seq);
            for v in versions.iter().filter(|v| moved(v)) {
                freed += version_bytes(&v.value);
                top = top.max(v.seq);
            }
            versions.retain(|v| !moved(v));
            if versions.is_empty() {
                s.map.remove(&key[..]);
                freed += key_bytes(key);
            }
        }
        s.spilled = top;
        let left = s.bytes.saturating_sub(freed);
        s.bytes = left;
        self.bytes.fetch_sub(freed, Relaxed);
        self.versions.fetch_sub(batch.len(), Relaxed);
        drop(s);
        batch.len()
    }

    /// Move everything staged into `list`, waiting for other drainers (one pass: a version
    /// staged after its partition was passed stays).
    pub(crate) fn drain_all(&self, list: &SkipListMemTable) -> Drained {
        let mut total = Drained::default();
        for i in 0..self.partitions.len() {
            let d = self.drain_partition(i, list, true);
            total.moved += d.moved;
            total.waits += d.waits;
        }
        total
    }
}
