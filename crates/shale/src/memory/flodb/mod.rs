//! FloDB's two-level memory component (Balmau et al., EuroSys '17): a concurrent hash
//! membuffer (`membuffer.rs`) in front of the concurrent skiplist, drained into it in
//! sorted batches by background threads. The engine sees one [`MemTable`] per memtable, as
//! for the skiplist: it switches, freezes, seals and flushes them as usual.
//!
//! - **Writes** go to the membuffer partition of their key; a write that finds its
//!   partition full goes to the skiplist directly (the paper's rule). With
//!   `writer_drains`, a full key-range partition is named in the memtable (one slot, the
//!   last named), and the next writer to finish a write drains it once that write is
//!   published ([`MemTable::assist`]; usually the writer whose put found it full): the
//!   drain threads had fallen behind, and a drained batch costs less per version than the
//!   direct inserts that would follow. Partitions hold key
//!   ranges cut at quantiles of a sample of the previous memtable's keys (the paper's
//!   partitions by high key bits, adapted to keys whose high bits do not vary), so a
//!   drained partition is a dense run of the skiplist. A store's first memtable, with
//!   nothing to sample, starts with partitions by key hash and replaces them by key ranges
//!   cut from its own skiplist once that holds enough keys
//!   ([`FloDbMemTable::cut_ranges`]). Every write already
//!   carries its sequence number (the engine's leader gives it before the log write), so
//!   draining assigns none.
//! - **Drain**: threads started by [`MemoryComponent::start`] move partitions past half
//!   their budget into the skiplist, sorted by internal key: a key range's batch with the
//!   skiplist's multi-insert, a hash partition's entry by entry (`membuffer.rs` says why);
//!   [`MemTable::seal`] moves what
//!   is left once the memtable is frozen and its inserts returned, so a flush iterates
//!   every entry.
//! - **Gets** look in the membuffer (both, while a replaced one is being emptied), then
//!   (unless the membuffer's answer is provably the newest, `membuffer.rs`) in the
//!   skiplist, behind its filter, and return the newest answer. The filter learns a key
//!   when a drain moves it into the skiplist, not when it is staged: a put's path has no
//!   filter miss.
//! - **Iterators** drain the membuffer into the skiplist first (FloDB's master-scan drain)
//!   and then iterate the skiplist. The engine fixes a read's sequence number `S` before it
//!   asks for the iterator: every write at or below `S` was inserted (into the membuffer or
//!   the skiplist) before that, so the drain moves it; whatever is staged later has a
//!   sequence number above `S`, and reaches the skiplist (whole, as every skiplist insert)
//!   only to be skipped by the iterator's snapshot filter.
//! - **Snapshots**: the membuffer keeps every version (no in-place update), so a read at
//!   any sequence number sees the newest version at or below it.
//!
//! `docs/designs/flodb.md` has the paper's claims, the deviations and what is not built yet
//! (scan restarts and piggybacking, in-place updates).

mod membuffer;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use super::skiplist::SkipListMemTable;
use super::{MemLookup, MemTable, MemoryComponent, MemoryServices, MemoryStats};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{SeqNo, ValueKind};
use membuffer::{Drained, Membuffer, Put};

/// The smallest budget of one membuffer partition: a smaller membuffer has fewer
/// partitions.
const MIN_PARTITION_BYTES: usize = 1024;
/// Keys sampled from the previous memtable per membuffer partition, to cut key ranges.
const SAMPLE_PER_PARTITION: usize = 16;

/// How a FloDB memtable is sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloDbConfig {
    /// Membuffer partitions (0 disables the membuffer).
    pub partitions: usize,
    /// Byte budget of one partition.
    pub partition_bytes: usize,
    /// Drain threads [`MemoryComponent::start`] starts.
    pub drain_threads: usize,
    /// Bytes of each memtable's whole-key filter ([`crate::Options::memtable_bloom_ratio`]
    /// of the write buffer; none below 64) over the skiplist's keys, which a drain sets
    /// as it moves versions in: a get the membuffer cannot answer skips the skiplist
    /// search for a key the skiplist does not hold.
    pub bloom_bytes: usize,
    /// A key-range partition a put found full (the put went to the skiplist directly) is
    /// drained by a writer after its write is published ([`MemTable::assist`]).
    pub writer_drains: bool,
}

impl FloDbConfig {
    /// `fraction` of a `write_buffer_size`-byte memtable for the membuffer, in up to
    /// `partitions` partitions of at least 1 KiB (none when that leaves less than one),
    /// and `drain_threads` drain threads (`Options::flodb` gives them).
    pub fn sized(
        write_buffer_size: usize,
        fraction: f64,
        partitions: usize,
        drain_threads: usize,
    ) -> FloDbConfig {
        let budget = (write_buffer_size as f64 * fraction) as usize;
        let partitions = if budget < MIN_PARTITION_BYTES {
            0
        } else {
            partitions.clamp(1, budget / MIN_PARTITION_BYTES)
        };
        FloDbConfig {
            partitions,
            partition_bytes: budget.checked_div(partitions).unwrap_or(0),
            drain_threads,
            bloom_bytes: 0,
            writer_drains: false,
        }
    }

    /// The same, with a whole-key filter of `bloom_bytes` bytes per memtable.
    pub fn with_bloom(self, bloom_bytes: usize) -> FloDbConfig {
        FloDbConfig {
            bloom_bytes,
            ..self
        }
    }

    /// The same, with writers draining the partitions their puts found full (or not).
    pub fn with_writer_drains(self, writer_drains: bool) -> FloDbConfig {
        FloDbConfig {
            writer_drains,
            ..self
        }
    }
}

/// Wakes the drain threads.
#[derive(Default)]
struct Signal {
    /// Set while a wake is pending: a writer finding it set skips the lock.
    raised: AtomicBool,
    state: Mutex<SignalState>,
    cv: Condvar,
}

#[derive(Default)]
struct SignalState {
    pending: bool,
    stop: bool,
}

impl Signal {
    fn wake(&self) {
        if self.raised.swap(true, Ordering::AcqRel) {
            return;
        }
        self.state.lock().pending = true;
        self.cv.notify_one();
    }
}

/// What the component and its drain threads share.
#[derive(Default)]
struct Shared {
    signal: Signal,
    /// Every memtable made, while it lives.
    tables: Mutex<Vec<Weak<FloDbMemTable>>>,
    counters: Counters,
}

/// [`MemoryStats`] as they are counted (relaxed: statistics, not synchronization). Only
/// the rare or batched events count here; `staged` is derived (see
/// [`MemoryComponent::stats`] for [`FloDbMemory`]).
#[derive(Default)]
struct Counters {
    direct: AtomicU64,
    background_drains: AtomicU64,
    background_moved: AtomicU64,
    scan_drains: AtomicU64,
    scan_moved: AtomicU64,
    scan_waits: AtomicU64,
    seal_moved: AtomicU64,
    writer_drains: AtomicU64,
    writer_moved: AtomicU64,
}

fn bump(c: &AtomicU64, n: usize) {
    c.fetch_add(n as u64, Ordering::Relaxed);
}

impl Shared {
    fn live_tables(&self) -> Vec<Arc<FloDbMemTable>> {
        let mut tables = self.tables.lock();
        tables.retain(|w| w.strong_count() > 0);
        tables.iter().filter_map(Weak::upgrade).collect()
    }
}

/// The FloDB memory component: makes [`FloDbMemTable`]s and runs their drain threads.
pub struct FloDbMemory {
    config: FloDbConfig,
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for FloDbMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FloDbMemory")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl FloDbMemory {
    /// A component sized by `config`.
    pub fn with_config(config: FloDbConfig) -> Self {
        FloDbMemory {
            config,
            shared: Arc::new(Shared::default()),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// A new memtable, typed (the trait's [`MemoryComponent::new_memtable`] erases it).
    pub fn new_flodb_memtable(&self) -> Arc<FloDbMemTable> {
        // Key ranges cut from the newest memtable still alive (the one this replaces,
        // which the engine holds: no other memtable is kept alive here, whose last
        // reference could then be dropped, and the memtable freed, on this writer's path).
        let want = self.config.partitions * SAMPLE_PER_PARTITION;
        let newest = match self.config.partitions {
            0 | 1 => None,
            _ => self
                .shared
                .tables
                .lock()
                .iter()
                .rev()
                .find_map(Weak::upgrade),
        };
        let sample = newest
            .map(|t| t.list.sample_user_keys(want))
            .unwrap_or_default();
        let table = Arc::new(FloDbMemTable {
            membuffer: Membuffer::with_sample(
                self.config.partitions,
                self.config.partition_bytes,
                &sample,
            ),
            ranged: OnceLock::new(),
            full: AtomicUsize::new(0),
            sampled_at: AtomicUsize::new(0),
            first_spilled: OnceLock::new(),
            config: self.config,
            list: Arc::new(SkipListMemTable::with_bloom(self.config.bloom_bytes)),
            sealed: AtomicBool::new(false),
            settled: AtomicBool::new(false),
            shared: Arc::downgrade(&self.shared),
        });
        if self.config.partitions > 0 {
            let mut tables = self.shared.tables.lock();
            tables.retain(|w| w.strong_count() > 0);
            tables.push(Arc::downgrade(&table));
        }
        table
    }
}

impl MemoryComponent for FloDbMemory {
    fn new_memtable(&self) -> Arc<dyn MemTable> {
        self.new_flodb_memtable()
    }

    fn start(&self, services: MemoryServices) -> Result<()> {
        // In-place updates (which would need the oldest snapshot) are not built: every
        // version is kept.
        let _ = services;
        if self.config.partitions == 0 {
            return Ok(());
        }
        let mut threads = self.threads.lock();
        if !threads.is_empty() {
            return Ok(());
        }
        self.shared.signal.state.lock().stop = false;
        for i in 0..self.config.drain_threads {
            let shared = Arc::clone(&self.shared);
            let h = std::thread::Builder::new()
                .name(format!("shale-flodb-drain-{i}"))
                .spawn(move || drain_loop(&shared))
                .map_err(|e| Error::Io {
                    op: "start a FloDB drain thread",
                    path: None,
                    source: e,
                });
            match h {
                Ok(h) => threads.push(h),
                Err(e) => {
                    drop(threads);
                    self.stop();
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn stats(&self) -> MemoryStats {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        // Every staged version was moved by one of the four drains, or is staged still
        // (in a live memtable: a memtable's membuffer is empty once it is sealed).
        let still: u64 = self
            .shared
            .live_tables()
            .iter()
            .map(|t| t.staged() as u64)
            .sum();
        MemoryStats {
            staged: get(&c.background_moved)
                + get(&c.writer_moved)
                + get(&c.scan_moved)
                + get(&c.seal_moved)
                + still,
            direct: get(&c.direct),
            background_drains: get(&c.background_drains),
            background_moved: get(&c.background_moved),
            scan_drains: get(&c.scan_drains),
            scan_moved: get(&c.scan_moved),
            scan_waits: get(&c.scan_waits),
            seal_moved: get(&c.seal_moved),
            writer_drains: get(&c.writer_drains),
            writer_moved: get(&c.writer_moved),
        }
    }

    fn stop(&self) {
        let threads: Vec<_> = self.threads.lock().drain(..).collect();
        if threads.is_empty() {
            return;
        }
        self.shared.signal.state.lock().stop = true;
        self.shared.signal.cv.notify_all();
        for h in threads {
            let _ = h.join();
        }
    }
}

impl Drop for FloDbMemory {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A drain thread: wait for a partition past its mark, drain every such partition of
/// every live memtable, again until stopped.
fn drain_loop(shared: &Shared) {
    loop {
        {
            let mut s = shared.signal.state.lock();
            while !s.pending && !s.stop {
                shared.signal.cv.wait(&mut s);
            }
            if s.stop {
                return;
            }
            s.pending = false;
            shared.signal.raised.store(false, Ordering::Release);
        }
        for table in shared.live_tables() {
            if table.sealed.load(Ordering::Acquire) {
                continue;
            }
            table.cut_ranges();
            let membuffer = table.current();
            for i in 0..membuffer.partitions() {
                if membuffer.wants_drain(i) {
                    let d = membuffer.drain_partition(i, &table.list, false);
                    if d.moved > 0 {
                        bump(&shared.counters.background_drains, 1);
                        bump(&shared.counters.background_moved, d.moved);
                    }
                }
            }
        }
    }
}

/// One FloDB memtable: the membuffer and the skiplist (see the module docs).
pub struct FloDbMemTable {
    /// The membuffer the memtable was made with.
    membuffer: Membuffer,
    /// A key-range membuffer that replaced a key-hash `membuffer`, cut from a sample of
    /// this memtable's own skiplist once it held enough keys ([`FloDbMemTable::cut_ranges`]).
    ranged: OnceLock<Membuffer>,
    /// One plus the key-range partition a put last found full, for the next writer's
    /// [`MemTable::assist`] to drain; 0 when none is waiting. One slot: the assist drains
    /// the partition named last (most likely its own put's); one named before and
    /// overwritten is left to the drain threads, or named again by its next put.
    full: AtomicUsize,
    /// The skiplist's length at the last attempt to cut ranges (which a sample with too
    /// few distinct keys fails): the next waits for twice as many entries. An attempt
    /// claims itself by raising it, so two drain threads never sample at once.
    sampled_at: AtomicUsize,
    /// Set once the first membuffer was replaced and emptied for good: its highest
    /// `spilled` mark, all a get still needs of it (module docs of `membuffer.rs`), so
    /// gets and drains no longer visit its partitions.
    first_spilled: OnceLock<SeqNo>,
    config: FloDbConfig,
    list: Arc<SkipListMemTable>,
    /// Set by [`MemTable::seal`]; an insert after it (which the engine never makes) goes
    /// to the skiplist.
    sealed: AtomicBool,
    /// Set by [`MemTable::seal`] once its drain has moved everything: from then on the
    /// membuffer is empty for good. Not `sealed`: between the two, the seal's drain is still
    /// moving versions, and an iterator that skipped its own drain would miss them.
    settled: AtomicBool,
    shared: Weak<Shared>,
}

impl std::fmt::Debug for FloDbMemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FloDbMemTable")
            .field("staged", &self.staged())
            .field("sorted", &self.list.len())
            .finish_non_exhaustive()
    }
}

impl FloDbMemTable {
    /// Versions staged in the membuffer.
    pub fn staged(&self) -> usize {
        self.membuffers().map(Membuffer::len).sum()
    }

    /// Whether puts are staged at all (a membuffer of no partitions, `membuffer_fraction`
    /// 0 or a budget below one partition, sends every put to the skiplist).
    fn stages(&self) -> bool {
        self.config.partitions > 0
    }

    /// The membuffer puts go to: the key-range one once cut, else the first.
    fn current(&self) -> &Membuffer {
        self.ranged.get().unwrap_or(&self.membuffer)
    }

    /// The first membuffer (until it is emptied for good), then the key-range one once
    /// cut.
    fn membuffers(&self) -> impl Iterator<Item = &Membuffer> {
        let first = self
            .first_spilled
            .get()
            .is_none()
            .then_some(&self.membuffer);
        first.into_iter().chain(self.ranged.get())
    }

    /// Whether puts go to a membuffer of key ranges.
    pub fn by_range(&self) -> bool {
        self.current().by_range()
    }

    /// Replace a key-hash membuffer by one of key ranges cut at quantiles of the
    /// skiplist's own keys, once it holds enough of them: install the new one (puts go
    /// there from now on), then close the old one and move what it holds into the
    /// skiplist (a put that picked the old one just before is refused and staged in the
    /// new one), counted as a background drain. Returns that move, or `None` when nothing
    /// was cut.
    pub(crate) fn cut_ranges(&self) -> Option<Drained> {
        let partitions = self.config.partitions;
        let want = partitions * SAMPLE_PER_PARTITION;
        let len = self.list.len();
        let tried = self.sampled_at.load(Ordering::Relaxed);
        if partitions < 2
            || self.sealed.load(Ordering::Acquire)
            || self.ranged.get().is_some()
            || self.membuffer.by_range()
            || len < 2 * want
            || len < 2 * tried
            || self
                .sampled_at
                .compare_exchange(tried, len, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return None;
        }
        let sample = self.list.sample_user_keys(want);
        let ranged = Membuffer::with_sample(partitions, self.config.partition_bytes, &sample);
        if !ranged.by_range() || self.ranged.set(ranged).is_err() {
            return None;
        }
        let d = self.retire_first();
        if d.moved > 0
            && let Some(shared) = self.shared.upgrade()
        {
            bump(&shared.counters.background_drains, 1);
            bump(&shared.counters.background_moved, d.moved);
        }
        Some(d)
    }

    /// Close the first membuffer and move what it holds into the skiplist (the key-range
    /// one is installed), then keep only its highest `spilled` mark.
    fn retire_first(&self) -> Drained {
        let d = self.membuffer.close_and_drain(&self.list);
        let _ = self.first_spilled.set(self.membuffer.max_spilled());
        d
    }

    /// Versions in the skiplist.
    pub fn sorted(&self) -> usize {
        self.list.len()
    }

    /// Move everything staged into the skiplist now (what seal and iterators do). Returns
    /// the versions moved.
    pub fn drain(&self) -> usize {
        self.membuffers()
            .map(|m| m.drain_all(&self.list).moved)
            .sum()
    }

    /// [`FloDbMemTable::drain`], counted as a scan's drain or a seal's.
    fn drain_counted(&self, scan: bool) {
        // Once the seal's drain is done, nothing is staged (a later insert goes to the
        // skiplist): a flush's iterator has nothing to drain. Before that, an iterator
        // drains too, and waits for the partitions the seal is moving.
        if !self.stages() || (scan && self.settled.load(Ordering::Acquire)) {
            return;
        }
        let (moved, waits) = self.membuffers().fold((0, 0), |(m, w), b| {
            let d = b.drain_all(&self.list);
            (m + d.moved, w + d.waits)
        });
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let c = &shared.counters;
        if scan {
            bump(&c.scan_drains, 1);
            bump(&c.scan_moved, moved);
            bump(&c.scan_waits, waits);
        } else {
            bump(&c.seal_moved, moved);
        }
    }
}

impl MemTable for FloDbMemTable {
    fn insert(&self, user_key: &[u8], seq: SeqNo, kind: ValueKind, value: &[u8]) {
        if !self.stages() || self.sealed.load(Ordering::Acquire) {
            self.list.insert(user_key, seq, kind, value);
            return;
        }
        // The filter learns a staged key when it is drained (`membuffer.rs`); a direct
        // insert sets its bits itself.
        let mut m = self.current();
        let mut put = m.put(user_key, seq, kind, value);
        if put == Put::Closed
            && let Some(ranged) = self.ranged.get()
        {
            // The first membuffer was replaced since `current` read it: the key-range one
            // is installed before the first closes.
            m = ranged;
            put = ranged.put(user_key, seq, kind, value);
        }
        match put {
            Put::Staged { wake } => {
                if wake && let Some(shared) = self.shared.upgrade() {
                    shared.signal.wake();
                }
            }
            Put::Full { .. } | Put::Closed => {
                // A key-range partition is drained by the next writer to finish a write
                // (`assist`, usually this one's, once its write is published); a hash
                // partition's drain searches from the head for each entry, which gains
                // nothing over the direct inserts.
                if let Put::Full { partition } = put
                    && self.config.writer_drains
                    && m.by_range()
                {
                    self.full.store(partition + 1, Ordering::Relaxed);
                }
                if let Some(shared) = self.shared.upgrade() {
                    bump(&shared.counters.direct, 1);
                    shared.signal.wake();
                }
                self.list.insert(user_key, seq, kind, value);
            }
        }
    }

    fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<MemLookup> {
        // Both membuffers (a version never moves from one to the other): the newest
        // version either holds, and the higher `spilled` mark (`membuffer.rs`).
        let (staged, spilled) = match (self.ranged.get(), self.first_spilled.get()) {
            // Nothing staged ever, or sealed and drained: the membuffer is empty for good
            // (a frozen memtable's gets lock no partition).
            _ if !self.stages() || self.settled.load(Ordering::Acquire) => (None, 0),
            (None, _) => self.membuffer.get(user_key, snapshot),
            // The first is empty for good: only its marks still count.
            (Some(ranged), Some(&first)) => {
                let (v, s) = ranged.get(user_key, snapshot);
                (v, s.max(first))
            }
            (Some(ranged), None) => {
                let (a, sa) = ranged.get(user_key, snapshot);
                let (b, sb) = self.membuffer.get(user_key, snapshot);
                let newest = match (a, b) {
                    (Some(a), Some(b)) => Some(if a.seq >= b.seq { a } else { b }),
                    (a, b) => a.or(b),
                };
                (newest, sa.max(sb))
            }
        };
        let found = |kind: ValueKind, value: Vec<u8>| match kind {
            ValueKind::Delete => MemLookup::Deleted,
            kind => MemLookup::Found(kind, value),
        };
        if let Some(v) = &staged
            && spilled <= v.seq
        {
            return staged.map(|v| found(v.kind, v.value));
        }
        // The filter answers for the skiplist only, and a drained version's bits are set
        // long after it was published: only because the get asked the membuffer first is
        // a version it did not find staged in the filter (or not visible to it). A drain
        // sets the bits before it removes the versions under the partition's lock, which
        // the get above took; `settled` is stored (Release) after the seal's drain moved
        // everything, and read here with Acquire; `first_spilled` is set once the first
        // membuffer's `close_and_drain` waited for every drain of its partitions.
        let sorted = self.list.get_versioned(user_key, snapshot);
        match (staged, sorted) {
            (Some(v), Some((seq, _, _))) if v.seq >= seq => Some(found(v.kind, v.value)),
            (_, Some((_, kind, value))) => Some(found(kind, value.to_vec())),
            (Some(v), None) => Some(found(v.kind, v.value)),
            (None, None) => None,
        }
    }

    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> {
        self.drain_counted(true);
        MemTable::iter(Arc::clone(&self.list))
    }

    fn approximate_bytes(&self) -> usize {
        self.list.approximate_bytes() + self.membuffers().map(Membuffer::bytes).sum::<usize>()
    }

    fn len(&self) -> usize {
        self.list.len() + self.staged()
    }

    fn seal(&self) {
        self.sealed.store(true, Ordering::Release);
        self.drain_counted(false);
        self.settled.store(true, Ordering::Release);
    }

    /// Drain the key-range partition a put last found full (see [`FloDbMemTable::full`]),
    /// unless another thread is draining it. The partition belongs to the current
    /// membuffer: only a key-range membuffer names one, and it is never replaced. Safe
    /// beside a seal as a drain thread's drain is: the seal waits for a partition's drain
    /// before it passes the partition, and a partition it passed is empty.
    fn assist(&self) {
        if self.full.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Some(i) = self.full.swap(0, Ordering::Relaxed).checked_sub(1) else {
            return;
        };
        if self.sealed.load(Ordering::Acquire) {
            return;
        }
        let d = self.current().drain_partition(i, &self.list, false);
        if d.moved > 0
            && let Some(shared) = self.shared.upgrade()
        {
            bump(&shared.counters.writer_drains, 1);
            bump(&shared.counters.writer_moved, d.moved);
        }
    }
}
