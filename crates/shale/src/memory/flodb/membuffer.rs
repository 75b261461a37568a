//! The membuffer: FloDB's unsorted top level, a hash table partitioned by key range (or
//! by key hash).
//!
//! Each partition is a `parking_lot::Mutex` over a [`Table`]: an append-only byte buffer
//! holding each staged version's key and value, a record per version, and an index
//! ([`Heads`]) from the key's hash (FxHash) to its newest record, older records (and those
//! of other keys with the same hash tag) chained behind it. A staged write is one hash,
//! one index probe and one copy into the buffer: no allocation of its own (the buffers grow by
//! doubling and are reused from one drain to the next). The partition has a byte budget: a
//! put that would take it past its budget is refused ([`Put::Full`]) and the caller inserts
//! into the skiplist directly. Every version is kept (no in-place update,
//! `docs/designs/flodb.md` says why), so a reader at any sequence number finds the version
//! it must see.
//!
//! # Partitions: key ranges, else key hashes
//!
//! FloDB picks a key's partition by the key's high bits, so that the keys drained
//! together are close in the skiplist (the paper's neighbourhood effect). Keys' high bits
//! often do not vary (zero-padded decimal keys, a common prefix), so Shale cuts key ranges
//! instead, at quantiles of a sample of the previous memtable's keys
//! ([`Membuffer::with_sample`]; a partition is found by a binary search of the cuts over
//! the key's 16-byte prefix). A drained partition is then a dense run of the list: with
//! the 1/4 : 3/4 split, a partition drained at half its budget holds one entry for every
//! 3-6 list entries of its range (more as the list fills) at any memtable size, and the
//! multi-insert's search from
//! the previous entry's predecessors crosses a few nodes instead of the whole height.
//! Measured (`docs/designs/flodb.md`): 1.51x the fill with hash partitions at a 4 GiB
//! write buffer. Without a usable sample (a store's first memtable, or fewer than
//! [`MIN_SAMPLE_PER_PARTITION`] distinct prefixes per partition) the partitions hold key
//! hashes, whose drains are spread over the whole list; each of their entries is then
//! searched from the head (below). Such a membuffer is replaced by one of key ranges
//! once the memtable's skiplist can give a sample ([`Membuffer::close_and_drain`] empties
//! the old one). As the paper says, ranges cost under skew: a hot
//! range fills its partition early and more writes go to the skiplist directly.
//!
//! # Draining (a partition at a time)
//!
//! [`Membuffer::drain_partition`] holds the partition's drain lock (one drainer per
//! partition, so no version is moved twice) and then: (1) under the partition lock, swaps
//! the partition's table for an empty one (the spare of the previous drain) and keeps the
//! full one, frozen, as the partition's `moving` table, which readers still search; (2)
//! without the lock, sorts the records in internal-key order (by a 16-byte key prefix
//! first), sets their keys in the memtable's filter ([`SkipListMemTable::note_keys`]; a put
//! does not, so a get asks the membuffer before the filter) and inserts them into the
//! skiplist in that order: a key range's with
//! the multi-insert ([`SkipListMemTable::insert_sorted`]), a hash partition's each with
//! its own search from the head (there the multi-insert's resume from the previous
//! entry's predecessors cost ~900 more instructions an entry than this search with the
//! skiplist's link hints: the entries are spread over the whole list, so consecutive ones
//! are far apart; `docs/designs/flodb.md`); (3) under the
//! lock again, drops the `moving` table (keeping its buffers as the next spare) and raises
//! the partition's `spilled` mark to the highest sequence number it moved. A version is
//! therefore in the skiplist before it leaves the membuffer: a reader that looks in the
//! membuffer first and the skiplist second finds it in one or the other.
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

use std::cmp::Ordering;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use parking_lot::Mutex;
use rustc_hash::FxBuildHasher;

use crate::key::{SeqNo, ValueKind};
use crate::memory::skiplist::SkipListMemTable;

/// Bytes charged per version beyond its key and value (its record, its share of the map).
const VERSION_OVERHEAD: usize = 64;
/// No record (the end of a chain).
const NONE: u32 = u32::MAX;
/// The most a partition's bytes differ from what it counted in the membuffer's total,
/// either way (an eighth of its budget when that is less).
const REPORT_STEP: usize = 16 << 10;
/// Distinct sampled key prefixes per partition needed to cut key ranges.
pub(crate) const MIN_SAMPLE_PER_PARTITION: usize = 8;

/// One version of a key in the membuffer, as a get returns it.
#[derive(Clone, Debug)]
pub(crate) struct Version {
    pub(crate) seq: SeqNo,
    pub(crate) kind: ValueKind,
    pub(crate) value: Vec<u8>,
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
    /// Partition `partition` is full: insert into the skiplist (its `spilled` mark already
    /// covers the entry). The caller may name the partition for a drain.
    Full { partition: usize },
    /// The membuffer is closed (replaced by another, [`Membuffer::close_and_drain`]):
    /// nothing was staged; stage it in the replacement, or insert it into the skiplist
    /// (the partition's `spilled` mark already covers the entry either way).
    Closed,
}

/// One staged version: where its key and value are in [`Table::data`].
struct Record {
    /// Offset of the key in `data`; the value follows it.
    at: usize,
    key_len: usize,
    value_len: usize,
    seq: SeqNo,
    kind: ValueKind,
    /// The previous record of the same key hash, or [`NONE`].
    prev: u32,
}

/// A table's index: key hash to the newest record of that hash, one `u64` slot per chain
/// (the hash's high 32 bits, its *tag*, then the record number plus one; 0 is an empty
/// slot), open addressing with linear probing from a multiplicative hash of the tag, at
/// most half full. A put or a get reads one slot's cache line, where `HashMap<u64, u32>`
/// read two (its control bytes and its bucket are separate arrays): at a 4 GiB write
/// buffer, whose membuffer partitions are 16 MiB, both were cache misses, and the put was
/// 17 % of a fill's samples. Keys whose hashes share a tag share a chain (a get compares
/// keys along it, as it did for a shared 64-bit hash).
#[derive(Default)]
struct Heads {
    slots: Vec<u64>,
    /// `slots.len()` is `1 << bits` (or 0).
    bits: u32,
    len: usize,
}

impl Heads {
    /// The slot of the chain of `tag`: its own, or the empty one where it would go.
    fn find(&self, tag: u64) -> usize {
        if self.slots.is_empty() {
            return 0;
        }
        let mask = self.slots.len() - 1;
        // Fibonacci hashing: the product's high bits depend on every bit of the tag (with
        // hash partitions, a partition's tags share their low bits).
        let mut i = (tag.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.bits)) as usize;
        while let Some(&s) = self.slots.get(i) {
            if s == 0 || s >> 32 == tag {
                return i;
            }
            i = (i + 1) & mask;
        }
        i
    }

    /// The newest record of `hash`'s chain, or [`NONE`].
    fn get(&self, hash: u64) -> u32 {
        match self.slots.get(self.find(hash >> 32)) {
            Some(&s) if s != 0 => (s as u32).wrapping_sub(1),
            _ => NONE,
        }
    }

    /// Make `id` (below [`NONE`]) the newest record of `hash`'s chain; returns the one it
    /// replaces, or [`NONE`].
    fn replace(&mut self, hash: u64, id: u32) -> u32 {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let tag = hash >> 32;
        let i = self.find(tag);
        let Some(slot) = self.slots.get_mut(i) else {
            return NONE;
        };
        let old = std::mem::replace(slot, (tag << 32) | u64::from(id.wrapping_add(1)));
        if old == 0 {
            self.len += 1;
            NONE
        } else {
            (old as u32).wrapping_sub(1)
        }
    }

    /// Double the slots (at least 64) and place every chain again.
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        self.bits = (self.bits + 1).max(6);
        self.slots = vec![0; 1 << self.bits];
        for s in old.into_iter().filter(|&s| s != 0) {
            let i = self.find(s >> 32);
            if let Some(slot) = self.slots.get_mut(i) {
                *slot = s;
            }
        }
    }

    fn clear(&mut self) {
        self.slots.fill(0);
        self.len = 0;
    }
}

/// Staged versions (see the module docs); cleared and reused after a drain.
#[derive(Default)]
struct Table {
    /// Key hash to the newest record with that hash.
    heads: Heads,
    records: Vec<Record>,
    data: Vec<u8>,
}

impl Table {
    fn key(&self, r: &Record) -> &[u8] {
        self.data.get(r.at..r.at + r.key_len).unwrap_or_default()
    }

    fn value(&self, r: &Record) -> &[u8] {
        let at = r.at + r.key_len;
        self.data.get(at..at + r.value_len).unwrap_or_default()
    }

    /// Append a version; false (nothing changed) when the table has no record number
    /// left.
    fn push(&mut self, hash: u64, key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) -> bool {
        let Ok(id) = u32::try_from(self.records.len()) else {
            return false;
        };
        if id == NONE {
            return false;
        }
        let at = self.data.len();
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
        let prev = self.heads.replace(hash, id);
        self.records.push(Record {
            at,
            key_len: key.len(),
            value_len: value.len(),
            seq,
            kind,
            prev,
        });
        true
    }

    /// The newest version of `key` (hash `hash`) at or below `snapshot`.
    fn get(&self, hash: u64, key: &[u8], snapshot: SeqNo) -> Option<&Record> {
        let mut best: Option<&Record> = None;
        let mut id = self.heads.get(hash);
        while let Some(r) = self.records.get(id as usize) {
            if r.seq <= snapshot && best.is_none_or(|b| r.seq > b.seq) && self.key(r) == key {
                best = Some(r);
            }
            id = r.prev;
        }
        best
    }

    fn clear(&mut self) {
        self.heads.clear();
        self.records.clear();
        self.data.clear();
    }
}

#[derive(Default)]
struct State {
    table: Table,
    /// The table a drain is moving into the skiplist: still searched by gets.
    moving: Option<Arc<Table>>,
    /// The emptied table of the last drain, for the next.
    spare: Option<Table>,
    bytes: usize,
    /// See the module docs.
    spilled: SeqNo,
    /// The part of `bytes` counted in the membuffer's total ([`Membuffer::report`]).
    reported: usize,
    /// Set by [`Membuffer::close_and_drain`]: puts are refused with [`Put::Closed`].
    closed: bool,
}

#[derive(Default)]
struct Partition {
    state: Mutex<State>,
    /// Held for a whole drain of this partition; the drain's sort buffer.
    drain: Mutex<Vec<(u128, u32)>>,
}

/// The partitioned hash membuffer; see the module docs.
pub(crate) struct Membuffer {
    partitions: Box<[Partition]>,
    /// With key-range partitions, the key prefix each partition after the first starts at
    /// (ascending); empty with hash partitions.
    bounds: Box<[u128]>,
    /// With key-range partitions, the lowest and highest sampled prefixes: keys outside
    /// them (a sequential load past the last sampled key, a new key range) are placed by
    /// hash, so they do not all crowd into the first or the last partition.
    span: (u128, u128),
    /// Byte budget of one partition.
    capacity: usize,
    hasher: FxBuildHasher,
    /// The sum of the partitions' `reported` bytes (see [`Membuffer::report`]).
    bytes: AtomicUsize,
    /// Bytes a partition may hold beyond what it reported in `bytes`.
    report_step: usize,
}

fn version_bytes(key_len: usize, value_len: usize) -> usize {
    key_len + value_len + VERSION_OVERHEAD
}

/// The key's first 16 bytes, big-endian, zero-padded: ordered as the keys are, except that
/// equal prefixes need the full keys.
fn prefix(key: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = key.len().min(16);
    if let (Some(dst), Some(src)) = (b.get_mut(..n), key.get(..n)) {
        dst.copy_from_slice(src);
    }
    u128::from_be_bytes(b)
}

impl Membuffer {
    /// A membuffer of `partitions` partitions of `capacity` bytes each.
    #[cfg(test)]
    pub(crate) fn new(partitions: usize, capacity: usize) -> Self {
        Membuffer::with_sample(partitions, capacity, &[])
    }

    /// A membuffer whose partitions hold key ranges cut at quantiles of `sample` (user
    /// keys in ascending order, e.g. of the previous memtable), so that a drained
    /// partition is a dense run of the skiplist; by key hash when the sample holds fewer
    /// than [`MIN_SAMPLE_PER_PARTITION`] distinct key prefixes per partition.
    pub(crate) fn with_sample(partitions: usize, capacity: usize, sample: &[Vec<u8>]) -> Self {
        let partitions = partitions.max(1);
        let mut prefixes: Vec<u128> = sample.iter().map(|k| prefix(k)).collect();
        prefixes.dedup();
        let bounds = if partitions > 1
            && prefixes.len() >= partitions * MIN_SAMPLE_PER_PARTITION
            && prefixes.is_sorted()
        {
            (1..partitions)
                .filter_map(|i| prefixes.get(i * prefixes.len() / partitions).copied())
                .collect()
        } else {
            Box::default()
        };
        let span = match (prefixes.first(), prefixes.last()) {
            (Some(&lo), Some(&hi)) => (lo, hi),
            _ => (0, 0),
        };
        Membuffer {
            partitions: (0..partitions).map(|_| Partition::default()).collect(),
            bounds,
            span,
            capacity,
            hasher: FxBuildHasher,
            bytes: AtomicUsize::new(0),
            report_step: (capacity / 8).clamp(1, REPORT_STEP),
        }
    }

    pub(crate) fn partitions(&self) -> usize {
        self.partitions.len()
    }

    /// Whether partitions hold key ranges (else key hashes).
    pub(crate) fn by_range(&self) -> bool {
        !self.bounds.is_empty()
    }

    /// The key's hash and its partition: the range its prefix falls in, or with hash
    /// partitions (and for a key outside the sampled span) the hash's high bits.
    fn partition_of(&self, key: &[u8]) -> (u64, usize, &Partition) {
        let h = self.hasher.hash_one(key);
        let ranged = (!self.bounds.is_empty())
            .then(|| prefix(key))
            .filter(|p| (self.span.0..=self.span.1).contains(p));
        let i = match ranged {
            Some(p) => self.bounds.partition_point(|&b| b <= p),
            None => (h >> 32) as usize,
        };
        let i = i % self.partitions.len();
        (h, i, &self.partitions[i])
    }

    /// Bytes held (keys, values, overhead), within [`REPORT_STEP`] a partition (either
    /// way): zero exactly when no version is held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Relaxed)
    }

    /// Versions held (exact: reads every partition under its lock).
    pub(crate) fn len(&self) -> usize {
        self.partitions
            .iter()
            .map(|p| {
                let s = p.state.lock();
                s.table.records.len() + s.moving.as_ref().map_or(0, |t| t.records.len())
            })
            .sum()
    }

    /// Bring the store-wide byte count up to date with partition state `s` (its lock
    /// held) when it is more than `report_step` behind, or when the partition just
    /// became empty or stopped being so (so the total is zero exactly when nothing is
    /// held). One shared atomic add per put, from two writers and a drain, cost about a
    /// third of a staged put (a contended cache line, and a full barrier behind the
    /// put's stores). Under the partition's lock, in both directions, so a drain never
    /// takes back bytes that were not added: the total never wraps below zero (it did
    /// once, when puts added after their unlock: the memtable then reported about 2^64
    /// bytes and was sealed at once).
    fn report(&self, s: &mut State) {
        let behind = s.bytes.abs_diff(s.reported);
        if behind < self.report_step && (s.bytes == 0) == (s.reported == 0) {
            return;
        }
        if s.bytes > s.reported {
            self.bytes.fetch_add(behind, Relaxed);
        } else {
            self.bytes.fetch_sub(behind, Relaxed);
        }
        s.reported = s.bytes;
    }

    /// Stage a version, or refuse it when its partition is full.
    pub(crate) fn put(&self, key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) -> Put {
        let need = version_bytes(key.len(), value.len());
        let (hash, i, p) = self.partition_of(key);
        let mut s = p.state.lock();
        if s.closed {
            s.spilled = s.spilled.max(seq);
            return Put::Closed;
        }
        if s.bytes + need > self.capacity || !s.table.push(hash, key, seq, kind, value) {
            s.spilled = s.spilled.max(seq);
            return Put::Full { partition: i };
        }
        let mark = self.capacity / 2;
        let before = s.bytes;
        s.bytes += need;
        let wake = before < mark && s.bytes >= mark;
        self.report(&mut s);
        drop(s);
        Put::Staged { wake }
    }

    /// The newest staged version of `key` at or below `snapshot`, and the partition's
    /// `spilled` mark read under the same lock (module docs).
    pub(crate) fn get(&self, key: &[u8], snapshot: SeqNo) -> (Option<Version>, SeqNo) {
        let (hash, _, p) = self.partition_of(key);
        let s = p.state.lock();
        let staged = s
            .table
            .get(hash, key, snapshot)
            .map(|r| (&s.table, r))
            .into_iter();
        let moving = s
            .moving
            .as_deref()
            .and_then(|t| Some((t, t.get(hash, key, snapshot)?)));
        let found = staged
            .chain(moving)
            .max_by_key(|(_, r)| r.seq)
            .map(|(t, r)| Version {
                seq: r.seq,
                kind: r.kind,
                value: t.value(r).to_vec(),
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
        let mut order = match p.drain.try_lock() {
            Some(g) => g,
            None if wait => {
                waits = 1;
                p.drain.lock()
            }
            None => return Drained::default(),
        };
        Drained {
            moved: self.move_partition(p, list, &mut order),
            waits,
        }
    }

    /// Move what `p` holds into `list`, its drain lock held (`order` is its sort buffer).
    fn move_partition(
        &self,
        p: &Partition,
        list: &SkipListMemTable,
        order: &mut Vec<(u128, u32)>,
    ) -> usize {
        let frozen = {
            let mut s = p.state.lock();
            if s.table.records.is_empty() {
                return 0;
            }
            let fresh = s.spare.take().unwrap_or_default();
            let full = Arc::new(std::mem::replace(&mut s.table, fresh));
            s.moving = Some(Arc::clone(&full));
            full
        };
        let t = &*frozen;
        // Internal-key order: user key ascending, sequence number descending; the 16-byte
        // prefix decides most comparisons without reading the keys.
        order.clear();
        order.extend(
            t.records
                .iter()
                .zip(0u32..)
                .map(|(r, i)| (prefix(t.key(r)), i)),
        );
        let rec = |i: u32| t.records.get(i as usize);
        order.sort_unstable_by(|&(pa, a), &(pb, b)| {
            pa.cmp(&pb).then_with(|| match (rec(a), rec(b)) {
                (Some(ra), Some(rb)) => t.key(ra).cmp(t.key(rb)).then(rb.seq.cmp(&ra.seq)),
                _ => Ordering::Equal,
            })
        });
        // The memtable's filter learns a staged key here, before the key is linked and
        // while the partition still shows it to gets (`moving`), not when it is put: the
        // writers pay no filter miss, and a get asks the membuffer before the filter.
        list.note_keys(t.records.iter().map(|r| t.key(r)));
        let sorted = order.iter().filter_map(|&(_, i)| rec(i));
        if self.by_range() {
            list.insert_sorted_noted(sorted.map(|r| (t.key(r), r.seq, r.kind, t.value(r))));
        } else {
            for r in sorted {
                list.insert_noted(t.key(r), r.seq, r.kind, t.value(r));
            }
        }
        let moved = t.records.len();
        let top = t.records.iter().map(|r| r.seq).max().unwrap_or(0);
        let freed: usize = t
            .records
            .iter()
            .map(|r| version_bytes(r.key_len, r.value_len))
            .sum();
        let mut s = p.state.lock();
        s.moving = None;
        s.spilled = s.spilled.max(top);
        s.bytes = s.bytes.saturating_sub(freed);
        self.report(&mut s);
        // Readers reach the frozen table only through `moving`, under this lock: ours is
        // the last reference now.
        if let Ok(mut spare) = Arc::try_unwrap(frozen) {
            spare.clear();
            s.spare = Some(spare);
        }
        drop(s);
        moved
    }

    /// Close every partition (later puts get [`Put::Closed`]) and move what it holds into
    /// `list`, waiting for other drainers: afterwards the membuffer is empty for good. Its
    /// `spilled` marks still count for gets of the versions it moved.
    pub(crate) fn close_and_drain(&self, list: &SkipListMemTable) -> Drained {
        let mut total = Drained::default();
        for p in self.partitions.iter() {
            p.state.lock().closed = true;
        }
        for (i, p) in self.partitions.iter().enumerate() {
            let d = self.drain_partition(i, list, true);
            total.moved += d.moved;
            total.waits += d.waits;
            // Empty for good: free the buffers a drain keeps for the next one (at a 4 GiB
            // write buffer, most of a GiB of tables and sort buffers).
            *p.drain.lock() = Vec::new();
            let mut s = p.state.lock();
            s.table = Table::default();
            s.spare = None;
        }
        total
    }

    /// The highest `spilled` mark of any partition.
    pub(crate) fn max_spilled(&self) -> SeqNo {
        self.partitions
            .iter()
            .map(|p| p.state.lock().spilled)
            .max()
            .unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys of the same hash share a chain: each get compares the key and takes the
    /// newest version at or below its sequence number, whatever the insertion order.
    #[test]
    fn keys_sharing_a_hash_chain_answer_for_themselves() {
        let mut t = Table::default();
        assert!(t.push(7, b"a", 5, ValueKind::Value, b"a5"));
        assert!(t.push(7, b"b", 3, ValueKind::Value, b"b3"));
        assert!(t.push(7, b"a", 2, ValueKind::Value, b"a2"));
        assert!(t.push(7, b"b", 9, ValueKind::Delete, b""));
        let get = |key: &[u8], snapshot| t.get(7, key, snapshot).map(|r| (r.seq, t.value(r)));
        assert_eq!(get(b"a", 10), Some((5, &b"a5"[..])));
        assert_eq!(get(b"a", 4), Some((2, &b"a2"[..])));
        assert_eq!(get(b"a", 1), None);
        assert_eq!(get(b"b", 8), Some((3, &b"b3"[..])));
        assert_eq!(t.get(7, b"b", 9).map(|r| r.kind), Some(ValueKind::Delete));
        assert_eq!(get(b"c", 10), None);
        // Another tag (the high 32 bits) is another chain; the low bits alone are not.
        assert_eq!(t.get(8 << 32 | 7, b"a", 10).map(|r| r.seq), None);
        assert_eq!(t.get(8, b"a", 10).map(|r| r.seq), Some(5));
    }

    /// The index against a map, through growth, many tags whose first slots collide,
    /// tag 0, replacement and clearing: each tag's newest record, and the one replaced.
    #[test]
    fn the_index_keeps_each_tags_newest_record() {
        let mut heads = Heads::default();
        let mut model = std::collections::HashMap::new();
        assert_eq!(heads.get(1 << 32), NONE);
        for round in 0..2u64 {
            let mut x = 0x2545_f491_4f6c_dd1d_u64 ^ round;
            for id in 0..20_000u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // 3,000 tags, some of them 0, spread or sharing their low bits.
                let tag = match x % 3 {
                    0 => x % 1000,
                    1 => (x % 1000) << 22,
                    _ => x % 1000 + 5000,
                };
                let hash = tag << 32 | (x & 0xffff_ffff);
                let before = model.insert(tag, id).unwrap_or(NONE);
                assert_eq!(heads.replace(hash, id), before, "round {round} id {id}");
            }
            assert_eq!(heads.len, model.len());
            assert!(heads.slots.len() >= 2 * model.len());
            for (&tag, &id) in &model {
                assert_eq!(heads.get(tag << 32 | 12345), id, "tag {tag}");
            }
            assert_eq!(heads.get(999_999 << 32), NONE);
            heads.clear();
            model.clear();
            assert_eq!(heads.get(5 << 32), NONE);
        }
    }

    /// A sample of enough distinct keys cuts the partitions into key ranges at its
    /// quantiles: every key lands in the partition whose range holds it, and a partition's
    /// drain moves one run of the key order. Too few distinct key prefixes, or a sample
    /// out of order, leave the partitions to key hashes.
    #[test]
    fn a_sample_cuts_key_ranges_and_a_poor_one_falls_back_to_hashes() {
        let key = |i: u32| format!("user{i:08}").into_bytes();
        let sample: Vec<Vec<u8>> = (0..400).map(|i| key(i * 25)).collect();
        let m = Membuffer::with_sample(8, 1 << 20, &sample);
        assert!(m.by_range());
        assert_eq!(m.bounds.len(), 7);
        assert!(m.bounds.is_sorted());
        let index = |k: &[u8]| {
            let (_, _, p) = m.partition_of(k);
            m.partitions
                .iter()
                .position(|q| std::ptr::eq(q, p))
                .unwrap()
        };
        // The quantiles of 0, 25, .., 9975: partition i starts at key 1250 * i.
        for i in 0..=9975 {
            assert_eq!(index(&key(i)), (i / 1250) as usize, "key {i}");
        }
        // Keys outside the sample's span (a sequential load past its last key) are placed
        // by hash: spread over the partitions, not all in the last one.
        let past: std::collections::HashSet<usize> =
            (10_000..10_400).map(|i| index(&key(i))).collect();
        assert!(past.len() >= 6, "{past:?}");
        let below: std::collections::HashSet<usize> = (0..400)
            .map(|i| index(format!("a{i}").as_bytes()))
            .collect();
        assert!(below.len() >= 6, "{below:?}");

        let few: Vec<Vec<u8>> = (0..400).map(|i| key(i % 40)).collect();
        assert!(!Membuffer::with_sample(8, 1 << 20, &few).by_range());
        // Distinct keys, but all alike in their first 16 bytes.
        let long: Vec<Vec<u8>> = (0..400)
            .map(|i| format!("a-long-shared-prefix{i:08}").into_bytes())
            .collect();
        assert!(!Membuffer::with_sample(8, 1 << 20, &long).by_range());
        let mut unsorted = sample.clone();
        unsorted.swap(3, 300);
        assert!(!Membuffer::with_sample(8, 1 << 20, &unsorted).by_range());
        assert!(!Membuffer::with_sample(1, 1 << 20, &sample).by_range());
    }

    /// Closing drains every partition, refuses later puts (raising `spilled`, so a get
    /// still asks the skiplist for them) and frees the buffers a drain keeps for the next.
    #[test]
    fn a_closed_membuffer_is_empty_for_good_and_keeps_no_buffers() {
        let m = Membuffer::new(4, 1 << 20);
        let list = SkipListMemTable::new();
        let put = |m: &Membuffer, i: u64| {
            let k = format!("key{i:05}");
            m.put(k.as_bytes(), i + 1, ValueKind::Value, &[7; 100])
        };
        for i in 0..1000 {
            assert!(matches!(put(&m, i), Put::Staged { .. }));
        }
        assert_eq!(m.drain_all(&list).moved, 1000);
        for i in 1000..2000 {
            assert!(matches!(put(&m, i), Put::Staged { .. }));
        }
        assert_eq!(m.close_and_drain(&list).moved, 1000);
        assert_eq!((m.len(), m.bytes()), (0, 0));
        assert_eq!(crate::memory::MemTable::len(&list), 2000);
        assert_eq!(put(&m, 2000), Put::Closed);
        let (staged, spilled) = m.get(b"key02000", 5000);
        assert!(staged.is_none());
        assert_eq!(spilled, 2001);
        for p in m.partitions.iter() {
            let s = p.state.lock();
            assert!(s.closed && s.spare.is_none() && s.moving.is_none());
            assert_eq!(
                (s.table.data.capacity(), s.table.records.capacity()),
                (0, 0)
            );
            assert_eq!(s.table.heads.slots.capacity(), 0);
            drop(s);
            assert_eq!(p.drain.lock().capacity(), 0);
        }
    }

    /// While a drain moves a partition's table, gets still find its versions (the table is
    /// the partition's `moving` one) beside newer ones staged in the fresh table; after the
    /// drain they are in the skiplist, `spilled` covers them and the buffers are kept.
    #[test]
    fn a_table_being_moved_is_still_read_and_its_buffers_are_reused() {
        let m = Membuffer::new(1, 1 << 20);
        let list = SkipListMemTable::new();
        for (seq, key) in [(1, b"k1"), (2, b"k2"), (3, b"k1")] {
            assert_eq!(
                m.put(key, seq, ValueKind::Value, &[seq as u8]),
                Put::Staged { wake: false }
            );
        }
        let p = &m.partitions[0];
        // The first half of a drain, by hand: swap the table out as `moving`.
        let frozen = {
            let mut s = p.state.lock();
            let full = Arc::new(std::mem::take(&mut s.table));
            s.moving = Some(Arc::clone(&full));
            full
        };
        assert_eq!(
            m.put(b"k2", 4, ValueKind::Value, &[4]),
            Put::Staged { wake: false }
        );
        let seen = |key: &[u8], snapshot| {
            let (v, _) = m.get(key, snapshot);
            v.map(|v| (v.seq, v.value))
        };
        assert_eq!(seen(b"k1", 10), Some((3, vec![3])));
        assert_eq!(seen(b"k1", 2), Some((1, vec![1])));
        assert_eq!(seen(b"k2", 10), Some((4, vec![4])));
        assert_eq!(seen(b"k2", 3), Some((2, vec![2])));
        // Put it back and drain for real.
        {
            let mut s = p.state.lock();
            s.moving = None;
            let newer = std::mem::take(&mut s.table);
            drop(s);
            let mut back = Arc::try_unwrap(frozen).ok().unwrap();
            for r in &newer.records {
                let (k, v) = (newer.key(r).to_vec(), newer.value(r).to_vec());
                let h = m.hasher.hash_one(&k[..]);
                assert!(back.push(h, &k, r.seq, r.kind, &v));
            }
            p.state.lock().table = back;
        }
        assert_eq!(m.drain_all(&list).moved, 4);
        assert_eq!((m.len(), m.bytes()), (0, 0));
        let s = p.state.lock();
        assert_eq!(s.spilled, 4);
        assert!(s.moving.is_none());
        assert!(s.spare.as_ref().is_some_and(|t| t.data.capacity() > 0));
        drop(s);
        assert_eq!(list.get_versioned(b"k1", 10).map(|(s, _, _)| s), Some(3));
        assert_eq!(list.get_versioned(b"k2", 3).map(|(s, _, _)| s), Some(2));
    }
}
