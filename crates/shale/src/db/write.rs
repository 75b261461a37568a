//! The write path: group commit, the log, the memtable, and making room.
//!
//! Writers enqueue their batch. A writer that finds no leader active becomes the leader: it
//! takes a group of queued batches (its own included, unless an earlier leader took it) and,
//! under the `wal` lock, makes room, gives the group its sequence numbers and writes it as
//! one log record (synced if any writer asked). Then, without the lock, every writer of a
//! small group inserts its own batch into the memtable the group was logged for,
//! concurrently (the next group may be logging meanwhile), and the last to finish publishes
//! the group's sequence numbers after every earlier group's ([`DbInner::publish`]): a
//! reader's snapshot never shows a write whose predecessors are still being inserted. A
//! group of more than `MAX_PARALLEL_GROUP` writers is inserted and published by its leader
//! before it tells the others; so are the entries of a value placement that changes them on
//! the way to the memtable (the value log stores pointers: [`crate::values::ValueStore::append`]
//! returns them), also after the lock is released. Followers wait on their signal until the
//! group is logged.
//!
//! A writer that finds no leader and nobody queued (one writer thread, the common case)
//! leads a group of itself without queueing its batch ([`write_alone`]): the same steps,
//! without the queue's bookkeeping.
//!
//! A memtable frozen while writes into it are still inserting is flushed only once they are
//! visible (`Imm::last_seq`); work that must see every logged write (value-log
//! relocation) waits for them the same way.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering, Ordering as AtomicOrdering};
use std::time::{Duration, Instant};

use super::{DbInner, Imm, SuperVersion, WalState};
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind};
use crate::memory::MemTable;
use crate::options::{MAX_KEY_SIZE, MAX_VALUE_SIZE};
use crate::wal::WriteBatch;
use rustc_hash::FxHashMap;

/// Groups of up to this many writers insert in parallel (each its own batch); a larger
/// group's leader inserts every batch itself. Two writers on two cores is the case the
/// parallel path is for; beyond a few, the extra wakeup per writer costs more.
const MAX_PARALLEL_GROUP: usize = 4;

/// A group is cut at this many bytes of log payload (a small batch is not held back behind
/// a huge group).
const MAX_GROUP_BYTES: usize = 1 << 20;

struct Pending {
    ticket: u64,
    batch: WriteBatch,
    /// Its keys' and values' bytes (counted as user data once logged).
    user_bytes: u64,
    sync: bool,
    /// The writer's wake-up signal: set when its result is ready or it is to lead.
    signal: Arc<Signal>,
}

/// A writer's wake-up signal. The waiter spins briefly, then yields, then parks; whoever has
/// news sets the signal and unparks the thread only if it parked. A group's writers usually
/// hear from their leader within microseconds, so most signals cost one atomic swap instead
/// of a futex wake and a context switch (RocksDB's write thread waits the same way).
struct Signal {
    state: AtomicU8,
    thread: std::thread::Thread,
}

const SIGNAL_IDLE: u8 = 0;
const SIGNAL_SET: u8 = 1;
const SIGNAL_PARKED: u8 = 2;
/// Pause-loop iterations, then `yield_now` calls, before a waiter parks.
const SIGNAL_SPINS: usize = 200;
const SIGNAL_YIELDS: usize = 20;

thread_local! {
    /// The calling thread's signal, reused by all its writes.
    static SIGNAL: Arc<Signal> = Arc::new(Signal {
        state: AtomicU8::new(SIGNAL_IDLE),
        thread: std::thread::current(),
    });
    /// A leader's list of signals to set once it has released the queue.
    static WAKE: std::cell::RefCell<Vec<Arc<Signal>>> = const { std::cell::RefCell::new(Vec::new()) };
    /// A leader's group, reused (empty between groups) so that leading allocates nothing.
    static GROUP: std::cell::RefCell<Vec<Pending>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Signal {
    /// Set the signal (news for the waiter) and wake the waiter if it sleeps.
    fn notify(&self) {
        if self.state.swap(SIGNAL_SET, AtomicOrdering::AcqRel) == SIGNAL_PARKED {
            self.thread.unpark();
        }
    }

    /// Wait until the signal is set, then clear it. A waiter checks the queue after this
    /// returns: the swap that clears the signal reads the notifier's swap, so the change
    /// the notifier made before notifying is visible; a signal set after the clear stays set
    /// for the next wait (which then returns at once).
    fn wait(&self) {
        let set = || self.state.load(AtomicOrdering::Acquire) == SIGNAL_SET;
        let mut ready = (0..SIGNAL_SPINS).any(|_| {
            std::hint::spin_loop();
            set()
        });
        if !ready {
            ready = (0..SIGNAL_YIELDS).any(|_| {
                std::thread::yield_now();
                set()
            });
        }
        if !ready
            && self
                .state
                .compare_exchange(
                    SIGNAL_IDLE,
                    SIGNAL_PARKED,
                    AtomicOrdering::AcqRel,
                    AtomicOrdering::Acquire,
                )
                .is_ok()
        {
            // A spurious return from park only loops.
            while !set() {
                std::thread::park();
            }
        }
        self.state.swap(SIGNAL_IDLE, AtomicOrdering::AcqRel);
    }
}

/// What a writer does once its group is logged: insert its entries (when the group's
/// writers insert their own) and publish its sequence numbers.
struct Logged {
    /// The memtable to insert into; `None` when the leader already inserted the entries.
    mem: Option<Arc<dyn MemTable>>,
    /// The writer's batch, sequenced from `first` (for the leader, its entries are the
    /// first `count` of the group's batch).
    batch: WriteBatch,
    count: u64,
    first: SeqNo,
    /// How a group of several writers becomes visible (`None` for a group of one).
    exit: Option<Arc<GroupExit>>,
}

/// A logged group whose writers insert their own batches: the last to finish inserting
/// publishes the whole group and sets the others' signals (RocksDB's parallel memtable
/// writes leave a group the same way). A group costs one publication and one signal per
/// writer; publishing writer by writer made each wait for the one before it, and with 50
/// writers of a synced group on 2 cores that chain of wakeups cut throughput by 2.5x.
struct GroupExit {
    first: SeqNo,
    last: SeqNo,
    /// Writers still inserting.
    remaining: AtomicUsize,
    members: Vec<Arc<Signal>>,
}

/// Writers waiting to be written, and results waiting to be collected.
#[derive(Default)]
pub(crate) struct WriteQueue {
    waiting: VecDeque<Pending>,
    /// Keyed by ticket: unique, so FxHash (a multiply) does; SipHash cost a put ~100
    /// instructions here.
    done: FxHashMap<u64, Result<Option<Logged>>>,
    leader_active: bool,
    next_ticket: u64,
}

/// Check a batch against the size limits; returns its user bytes (keys and values), which
/// the write counts once the batch is logged (one pass over the batch for both).
fn validate(batch: &WriteBatch) -> Result<u64> {
    if batch.approximate_size() > crate::wal::DEFAULT_MAX_RECORD_SIZE {
        return Err(Error::InvalidArgument(format!(
            "a write batch of {} bytes exceeds the {}-byte limit of one log record",
            batch.approximate_size(),
            crate::wal::DEFAULT_MAX_RECORD_SIZE
        )));
    }
    let mut bytes = 0u64;
    for e in batch.iter() {
        if e.kind == ValueKind::RangeDelete {
            check_range(e.key, e.value)?;
        } else {
            check_entry(e.key, e.value)?;
        }
        bytes += (e.key.len() + e.value.len()) as u64;
    }
    Ok(bytes)
}

/// Check a range tombstone's bounds: both within the key size limit, `start <= end`.
fn check_range(start: &[u8], end: &[u8]) -> Result<()> {
    check_entry(start, b"")?;
    check_entry(end, b"")?;
    if start > end {
        return Err(Error::InvalidArgument(format!(
            "delete_range start {:?} is after its end {:?}",
            String::from_utf8_lossy(start),
            String::from_utf8_lossy(end)
        )));
    }
    Ok(())
}

/// Check one entry against the key and value size limits.
pub(crate) fn check_entry(key: &[u8], value: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_SIZE {
        return Err(too_large("key", key.len(), MAX_KEY_SIZE));
    }
    if value.len() > MAX_VALUE_SIZE {
        return Err(too_large("value", value.len(), MAX_VALUE_SIZE));
    }
    Ok(())
}

/// The error of a key or value over its size limit (out of line: it is never on the path
/// of a write that succeeds).
#[cold]
#[inline(never)]
fn too_large(what: &str, len: usize, limit: usize) -> Error {
    Error::InvalidArgument(format!(
        "{what} of {len} bytes exceeds the {limit}-byte limit"
    ))
}

pub(crate) fn write(inner: &Arc<DbInner>, batch: WriteBatch, sync: bool) -> Result<()> {
    let user_bytes = validate(&batch)?;
    write_validated(inner, Write::Batch(batch), user_bytes, sync)
}

/// [`write`] of one put or delete whose key and value [`check_entry`] accepted (`Db::put`,
/// `Db::delete`): such an entry always fits one log record (a key of at most
/// `MAX_KEY_SIZE` and a value of at most `MAX_VALUE_SIZE` bytes are far below
/// `DEFAULT_MAX_RECORD_SIZE`), so it is not checked again as a batch. It becomes a batch
/// only where one is needed ([`Write`]); a writer that leads alone inserts it from `key` and
/// `value` rather than decoding the batch it logged ([`Single`]).
pub(crate) fn write_entry(
    inner: &Arc<DbInner>,
    kind: ValueKind,
    key: &[u8],
    value: &[u8],
    sync: bool,
) -> Result<()> {
    const _: () = assert!(
        MAX_KEY_SIZE + MAX_VALUE_SIZE + 64 < crate::wal::DEFAULT_MAX_RECORD_SIZE,
        "one checked entry must fit one log record"
    );
    let user_bytes = (key.len() + value.len()) as u64;
    write_validated(
        inner,
        Write::Entry(Single { kind, key, value }),
        user_bytes,
        sync,
    )
}

/// What a writer writes: a batch, or the one entry of a `Db::put` or `Db::delete`, which
/// becomes a batch only where one is needed (a queued writer's, a value placement that
/// paces writes); a writer that leads alone encodes it into the store's reused batch
/// ([`log_entry`]) and inserts it from `key` and `value`.
enum Write<'a> {
    Batch(WriteBatch),
    Entry(Single<'a>),
}

impl Write<'_> {
    fn into_batch(self) -> WriteBatch {
        match self {
            Write::Batch(b) => b,
            Write::Entry(e) => {
                let mut b = WriteBatch::with_capacity(WriteBatch::entry_room(e.key, e.value));
                e.push_to(&mut b);
                b
            }
        }
    }
}

/// The one entry of a [`write_entry`], as the caller gave it: what its batch holds, so
/// inserting it is the same as inserting the batch's decoded entry, with no decoding.
#[derive(Clone, Copy)]
struct Single<'a> {
    kind: ValueKind,
    key: &'a [u8],
    value: &'a [u8],
}

impl Single<'_> {
    /// Add the entry to `batch`.
    fn push_to(self, batch: &mut WriteBatch) {
        match self.kind {
            ValueKind::Delete => batch.delete(self.key),
            _ => batch.put(self.key, self.value),
        }
    }
}

/// [`write`] after the batch passed [`validate`], which counted `user_bytes`, or
/// [`write_entry`].
fn write_validated(
    inner: &Arc<DbInner>,
    write: Write<'_>,
    user_bytes: u64,
    sync: bool,
) -> Result<()> {
    if let Write::Batch(batch) = &write {
        if batch.is_empty() {
            return Ok(());
        }
        if !inner.layout.supports_scans() && batch.has_range_deletes() {
            return Err(Error::Unsupported(format!(
                "delete_range: the {} layout places keys by hash and keeps no key order, so it \
                 cannot delete a key range (delete the keys one by one)",
                inner.layout.name()
            )));
        }
    }
    inner.check_writable()?;
    let write = match inner.values.gc() {
        Some(gc) => {
            let batch = write.into_batch();
            gc.before_write(batch.approximate_size());
            Write::Batch(batch)
        }
        None => write,
    };
    let mut q = inner.queue.lock();
    if !q.leader_active && q.waiting.is_empty() {
        q.leader_active = true;
        drop(q);
        return write_alone(inner, write, user_bytes, sync);
    }
    let batch = write.into_batch();
    let ticket = q.next_ticket;
    q.next_ticket += 1;
    q.waiting.push_back(Pending {
        ticket,
        batch,
        user_bytes,
        sync,
        signal: SIGNAL.with(Arc::clone),
    });
    // Our result cannot be ready before our batch was queued: look for it only after a wait.
    let mut waited = false;
    loop {
        if waited && let Some(r) = q.done.remove(&ticket) {
            drop(q);
            return r.map(|l| finish(inner, l));
        }
        waited = true;
        if q.leader_active {
            // Signalled by the leader that writes our batch (or by the one before us, when
            // we are to lead next).
            drop(q);
            SIGNAL.with(|s| s.wait());
            q = inner.queue.lock();
            continue;
        }
        // Lead: take a group from the front of the queue. Our batch is in it unless the
        // group was cut short before reaching it; then we lead again.
        q.leader_active = true;
        let mut group = GROUP.with(|g| std::mem::take(&mut *g.borrow_mut()));
        let mut bytes = 0;
        while let Some(p) = q.waiting.front() {
            if !group.is_empty() && bytes + p.batch.approximate_size() > MAX_GROUP_BYTES {
                break;
            }
            bytes += p.batch.approximate_size();
            if let Some(p) = q.waiting.pop_front() {
                group.push(p);
            }
        }
        drop(q);
        // The leader's batch becomes the group's: its own entries are its first ones.
        let head_count = group.first().map_or(0, |p| p.batch.len() as u64);
        let result = log_unwinding(inner, || write_group(inner, &mut group));
        // The leader inserts before anyone is told: the placement's own entries (value
        // pointers), or a large group's batches: with more writers than cores, waking each to
        // insert and then again once the group is visible costs more than the parallel
        // inserts gain (a synced server load of 50 clients ran 14 % slower that way).
        let leader_batch = match (&result, group.first()) {
            (Ok((_, Insert::Leader(mem, entries))), _) => Some((mem, entries)),
            (Ok((_, Insert::Writers(mem))), Some(head)) if group.len() > MAX_PARALLEL_GROUP => {
                Some((mem, &head.batch))
            }
            _ => None,
        };
        let leader_inserts = leader_batch.is_some();
        if let (Ok((first, _)), Some((mem, batch))) = (&result, leader_batch) {
            leader_insert(inner, mem.as_ref(), batch, *first);
        }
        q = inner.queue.lock();
        q.leader_active = false;
        let mut mine = None;
        let mut first = result.as_ref().map_or(0, |(f, _)| *f);
        // Wake only the writers of this group and the one to lead next: waking every queued
        // writer at each group (a condition variable's notify_all) costs a wakeup per writer
        // per group, which halved the throughput of a server with many connections. The
        // list is the thread's own, reused, so a write allocates nothing here.
        let mut wake = WAKE.with(|w| std::mem::take(&mut *w.borrow_mut()));
        // The memtable the writers insert their own batches into.
        let writers_mem = match &result {
            Ok((_, Insert::Writers(mem))) if !leader_inserts => Some(mem),
            _ => None,
        };
        let exit = match (&result, writers_mem) {
            (Ok((first, _)), Some(_)) if group.len() > 1 => {
                let total = head_count
                    + group
                        .iter()
                        .skip(1)
                        .map(|p| p.batch.len() as u64)
                        .sum::<u64>();
                Some(Arc::new(GroupExit {
                    first: *first,
                    last: first + total - 1,
                    remaining: AtomicUsize::new(group.len()),
                    members: group.iter().map(|p| Arc::clone(&p.signal)).collect(),
                }))
            }
            _ => None,
        };
        for (i, p) in group.drain(..).enumerate() {
            let count = if i == 0 {
                head_count
            } else {
                p.batch.len() as u64
            };
            let r = match &result {
                Ok(_) => Ok(Some(Logged {
                    mem: writers_mem.cloned(),
                    batch: p.batch,
                    count,
                    first,
                    exit: exit.clone(),
                })),
                Err(e) => Err(Error::duplicate(e)),
            };
            first += count;
            if p.ticket == ticket {
                mine = Some(r);
            } else {
                q.done.insert(p.ticket, r);
                wake.push(p.signal);
            }
        }
        if let Some(next) = q.waiting.front() {
            wake.push(Arc::clone(&next.signal));
        }
        drop(q);
        for s in wake.drain(..) {
            s.notify();
        }
        WAKE.with(|w| *w.borrow_mut() = wake);
        GROUP.with(|g| *g.borrow_mut() = group);
        // Published above, and no longer the leader: the memtable's share of work may run.
        if let (true, Ok((_, Insert::Leader(mem, _) | Insert::Writers(mem)))) =
            (leader_inserts, &result)
        {
            assist(inner, mem.as_ref());
        }
        if let Some(r) = mine {
            return match (r, result) {
                // Our own error, not a copy of it.
                (Err(_), Err(e)) => Err(e),
                (r, _) => r.map(|l| finish(inner, l)),
            };
        }
        q = inner.queue.lock();
    }
}

/// A writer's part after its group is logged: insert its batch (unless the leader did) and
/// publish it.
fn finish(inner: &DbInner, logged: Option<Logged>) {
    let Some(l) = logged else { return };
    if l.count == 0 {
        return;
    }
    if let Some(mem) = &l.mem {
        // A panic in an insert is a bug; the sequence numbers are published anyway, or every
        // later writer would wait for them forever, and the store turns read-only.
        let inserted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let entries = l.batch.iter().take(l.count as usize);
            insert_entries(inner, mem.as_ref(), entries, l.first);
        }));
        if inserted.is_err() {
            inner.set_error(&Error::Io {
                op: "write",
                path: None,
                source: std::io::Error::other("a memtable insert panicked"),
            });
        }
        let Some(g) = &l.exit else {
            inner.publish(l.first, l.first + l.count - 1);
            assist(inner, mem.as_ref());
            return;
        };
        if g.remaining.fetch_sub(1, AtomicOrdering::AcqRel) == 1 {
            inner.publish(g.first, g.last);
            let me = SIGNAL.with(Arc::clone);
            for s in g.members.iter().filter(|s| !Arc::ptr_eq(s, &me)) {
                s.notify();
            }
        } else {
            // Visible once the group's last writer published it; a signal set for another
            // reason only makes this look again.
            let mine = l.first + l.count - 1;
            while inner.last_seq.load(Ordering::Acquire) < mine {
                SIGNAL.with(|s| s.wait());
            }
        }
        assist(inner, mem.as_ref());
    }
}

/// Write a group as one log record. Returns the group's first sequence number and what
/// remains to insert once the write lock is released.
fn write_group(inner: &Arc<DbInner>, group: &mut [Pending]) -> Result<(SeqNo, Insert)> {
    let sync = group.iter().any(|p| p.sync);
    // One batch goes out as is; several are concatenated into the first.
    let Some((head, rest)) = group.split_first_mut() else {
        return Ok((0, Insert::Done));
    };
    log_batches(inner, &mut head.batch, head.user_bytes, rest, sync)
}

/// Log `head` with the batches of `rest` appended to it as one record (the group's; `rest`
/// is empty for a writer that leads alone), under the `wal` lock.
fn log_batches(
    inner: &Arc<DbInner>,
    head: &mut WriteBatch,
    head_bytes: u64,
    rest: &[Pending],
    sync: bool,
) -> Result<(SeqNo, Insert)> {
    let mut wal = inner.wal.lock();
    inner.check_writable()?;
    make_room(inner, &mut wal, false)?;
    let mut user_bytes = head_bytes;
    for p in rest {
        head.append(&p.batch);
        user_bytes += p.user_bytes;
    }
    let logged = log_and_apply(inner, &mut wal, head, sync, true)?;
    count_user_write(inner, user_bytes, head.len() as u64);
    Ok(logged)
}

/// [`log_batches`] of a lone `Db::put` or `Db::delete`: its entry is encoded under the
/// `wal` lock into the store's reused batch (`WalState::scratch`), so the write allocates
/// no batch of its own.
fn log_entry(
    inner: &Arc<DbInner>,
    e: Single<'_>,
    user_bytes: u64,
    sync: bool,
) -> Result<(SeqNo, Insert)> {
    let mut wal = inner.wal.lock();
    inner.check_writable()?;
    make_room(inner, &mut wal, false)?;
    let mut batch = wal.scratch.take().unwrap_or_default();
    batch.clear();
    e.push_to(&mut batch);
    let logged = log_and_apply(inner, &mut wal, &mut batch, sync, true);
    // Keep a small batch for the next write; drop one grown by a large value.
    if batch.approximate_size() <= SCRATCH_KEEP {
        wal.scratch = Some(batch);
    }
    let logged = logged?;
    count_user_write(inner, user_bytes, 1);
    Ok(logged)
}

/// Largest `WalState::scratch` kept between writes, in bytes.
const SCRATCH_KEEP: usize = 4096;

/// Count a logged user write of `ops` entries holding `bytes` of keys and values.
fn count_user_write(inner: &DbInner, bytes: u64, ops: u64) {
    inner
        .counters
        .user_bytes
        .fetch_add(bytes, Ordering::Relaxed);
    inner.counters.user_ops.fetch_add(ops, Ordering::Relaxed);
}

/// A panic while logging is a bug; it must not leave `leader_active` set, which would stop
/// every later writer for good. The store turns read-only instead.
fn log_unwinding(
    inner: &Arc<DbInner>,
    f: impl FnOnce() -> Result<(SeqNo, Insert)>,
) -> Result<(SeqNo, Insert)> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        let e = Error::Io {
            op: "write",
            path: None,
            source: std::io::Error::other("the write path panicked"),
        };
        inner.set_error(&e);
        Err(e)
    })
}

/// The leader's insert of entries it inserts itself (see [`write_validated`]), then their
/// publication. A panic in the insert is a bug: the entries are published anyway (later
/// writers wait for them) and the store turns read-only.
fn leader_insert(inner: &DbInner, mem: &dyn MemTable, batch: &WriteBatch, first: SeqNo) {
    let inserted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        insert_batch(inner, mem, batch, first)
    }));
    if inserted.is_err() {
        inner.set_error(&Error::Io {
            op: "write",
            path: None,
            source: std::io::Error::other("a memtable insert panicked"),
        });
    }
    inner.publish(first, first + batch.len() as u64 - 1);
}

/// The write of a writer that found no leader and nobody queued (a single writer thread,
/// the common case): it leads a group of itself without queueing its batch, which saves
/// the queue's bookkeeping (the queued entry, its signal, the group and wake lists: about
/// 300 instructions a put). A `Db::put` or `Db::delete` is logged through the store's
/// reused batch ([`log_entry`]) and inserted from its key and value ([`insert_single`]). `leader_active` is set by the caller, under the queue lock.
/// Same steps as the queued path's leader for a group of one: log, then release the queue
/// to the next leader, then insert and publish.
fn write_alone(inner: &Arc<DbInner>, write: Write<'_>, user_bytes: u64, sync: bool) -> Result<()> {
    let (mut batch, single) = match write {
        Write::Batch(b) => (Some(b), None),
        Write::Entry(e) => (None, Some(e)),
    };
    let result = log_unwinding(inner, || match (batch.as_mut(), single) {
        (Some(b), _) => log_batches(inner, b, user_bytes, &[], sync),
        (None, Some(e)) => log_entry(inner, e, user_bytes, sync),
        (None, None) => Ok((0, Insert::Done)),
    });
    let logged = match &result {
        Ok((first, Insert::Leader(mem, entries))) => {
            leader_insert(inner, mem.as_ref(), entries, *first);
            None
        }
        Ok((first, Insert::Writers(mem))) => Some((Arc::clone(mem), *first)),
        Ok((_, Insert::Done)) | Err(_) => None,
    };
    let mut q = inner.queue.lock();
    q.leader_active = false;
    let next = q.waiting.front().map(|p| Arc::clone(&p.signal));
    drop(q);
    if let Some(s) = next {
        s.notify();
    }
    if let Ok((_, Insert::Leader(mem, _))) = &result {
        // Published, and no longer the leader.
        assist(inner, mem.as_ref());
    }
    result?;
    let Some((mem, first)) = logged else {
        return Ok(());
    };
    match (single, batch) {
        (Some(e), _) => insert_single(inner, mem.as_ref(), e, first),
        (None, Some(batch)) => {
            let count = batch.len() as u64;
            finish(
                inner,
                Some(Logged {
                    mem: Some(mem),
                    batch,
                    count,
                    first,
                    exit: None,
                }),
            );
        }
        (None, None) => {}
    }
    Ok(())
}

/// [`finish`] of a lone writer's one entry: insert it at `seq` and publish it (a panic in
/// the insert is handled as there).
fn insert_single(inner: &DbInner, mem: &dyn MemTable, e: Single<'_>, seq: SeqNo) {
    let inserted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        mem.insert(e.key, seq, e.kind, e.value);
    }));
    if inserted.is_err() {
        insert_panicked(inner);
    }
    inner.publish(seq, seq);
    assist(inner, mem);
}

/// The memtable's share of its own background work on this writer's thread
/// ([`MemTable::assist`]), once the writer's write is published and the writer holds no lock
/// of the write path. A panic in it is a bug, handled as one in an insert: the store turns
/// read-only (a drain cut short may have left staged versions where no flush finds them).
fn assist(inner: &DbInner, mem: &dyn MemTable) {
    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| mem.assist()));
    if done.is_err() {
        inner.set_error(&Error::Io {
            op: "write",
            path: None,
            source: std::io::Error::other("a memtable's assist panicked"),
        });
    }
}

/// A memtable insert panicked (a bug): the store turns read-only.
#[cold]
#[inline(never)]
fn insert_panicked(inner: &DbInner) {
    inner.set_error(&Error::Io {
        op: "write",
        path: None,
        source: std::io::Error::other("a memtable insert panicked"),
    });
}

/// What is left to do for a logged group once the write lock is released.
pub(crate) enum Insert {
    /// Nothing: the entries are in the memtable and visible.
    Done,
    /// Each writer inserts its own batch into this memtable (the placement stores entries
    /// as written); the group is published as described in the module docs.
    Writers(Arc<dyn MemTable>),
    /// The leader inserts these entries (the placement's, e.g. value pointers) into this
    /// memtable and publishes them before telling the group's writers.
    Leader(Arc<dyn MemTable>, WriteBatch),
}

/// Give `batch` the next sequence numbers and make it durable through the value placement.
/// Requires the `wal` lock (passed in) and a memtable with room. Returns the first sequence
/// number and, for user writes, what remains to insert once the lock is released (see
/// [`Insert`] and the module docs); a garbage-collection rewrite (`user` false, always
/// synced) is inserted and published here.
pub(crate) fn log_and_apply(
    inner: &DbInner,
    wal: &mut WalState,
    batch: &mut WriteBatch,
    sync: bool,
    user: bool,
) -> Result<(SeqNo, Insert)> {
    let first_seq = wal.last_assigned + 1;
    batch.set_sequence(first_seq);
    let count = batch.len() as u64;
    let logged = if user {
        inner.values.append(batch, sync)
    } else {
        inner.values.append_relocation(batch)
    };
    let stored = match logged {
        Ok(stored) => stored,
        Err(e) => {
            // The log may now end in a partial record: nothing more may be appended after
            // it. (A record refused for its size wrote nothing and leaves the log usable.)
            if !matches!(e, Error::InvalidArgument(_)) {
                inner.set_error(&e);
            }
            return Err(e);
        }
    };
    let last = first_seq + count - 1;
    wal.last_assigned = last;
    let mem = Arc::clone(&wal.mem);
    if user {
        return Ok((
            first_seq,
            match stored {
                None => Insert::Writers(mem),
                Some(entries) => Insert::Leader(mem, entries),
            },
        ));
    }
    insert_batch(
        inner,
        mem.as_ref(),
        stored.as_ref().unwrap_or(batch),
        first_seq,
    );
    inner.publish(first_seq, last);
    Ok((first_seq, Insert::Done))
}

/// Insert `batch`'s entries into `mem`, sequenced from `first`.
fn insert_batch(inner: &DbInner, mem: &dyn MemTable, batch: &WriteBatch, first: SeqNo) {
    insert_entries(inner, mem, batch.iter(), first);
}

/// Insert entries sequenced from `first` into `mem`; range tombstones go beside the
/// memtables instead ([`DbInner::add_range_dels`]). Before the entries are published.
fn insert_entries<'a>(
    inner: &DbInner,
    mem: &dyn MemTable,
    entries: impl Iterator<Item = crate::wal::BatchEntry<'a>>,
    first: SeqNo,
) {
    let mut range_dels = Vec::new();
    for (i, e) in entries.enumerate() {
        let seq = first + i as u64;
        if e.kind == ValueKind::RangeDelete {
            range_dels.push(crate::rangedel::RangeTombstone {
                start: e.key.to_vec(),
                end: e.value.to_vec(),
                seq,
            });
        } else {
            mem.insert(e.key, seq, e.kind, e.value);
        }
    }
    if !range_dels.is_empty() {
        inner.add_range_dels(range_dels);
    }
}

/// Make sure the mutable memtable has room, switching to a new one when it is full (or when
/// `force` is set and it holds anything). Throttles and stops the writer while the layout's
/// flush backlog (level 0) or the frozen memtables are over their limits. Requires the `wal` lock (passed in).
pub(crate) fn make_room(inner: &Arc<DbInner>, wal: &mut WalState, force: bool) -> Result<()> {
    let opts = &inner.options;
    let mut delayed = false;
    loop {
        let backlog = inner
            .layout
            .flush_backlog(&inner.super_version.read().version);
        if !delayed && !force && backlog >= opts.level0_slowdown_trigger {
            // Delay each write by a millisecond rather than stopping writes for seconds
            // later: this hands the compaction thread some of the CPU.
            let t = Instant::now();
            std::thread::sleep(Duration::from_millis(1));
            add_stall(inner, t);
            delayed = true;
            continue;
        }
        // Read once: a memory component's size may move while it is read (FloDB's drain).
        let full = wal.mem.approximate_bytes() >= opts.write_buffer_size;
        if !force && !full && !inner.values.wants_freeze() {
            return Ok(());
        }
        if force && wal.mem.is_empty() && !range_dels_in_mutable(inner) {
            return Ok(());
        }
        let mut bg = inner.bg.lock();
        if let Some(e) = &bg.error {
            return Err(Error::ReadOnly(e.clone()));
        }
        if inner.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let backlog = inner
            .layout
            .flush_backlog(&inner.super_version.read().version);
        if bg.imms.len() >= opts.max_immutable_memtables || backlog >= opts.level0_stop_trigger {
            let t = Instant::now();
            inner.bg_cv.wait(&mut bg);
            add_stall(inner, t);
            continue;
        }
        drop(bg);
        // A memtable frozen before it is full (asked for, or for the value placement's
        // log) is flushed without waiting for others to merge with.
        return switch_memtable(inner, wal, force || !full);
    }
}

/// Whether the mutable memtable holds range tombstones: ones newer than the newest frozen
/// memtable's writes. Requires the `wal` lock.
fn range_dels_in_mutable(inner: &DbInner) -> bool {
    let frozen_upto = inner.bg.lock().imms.back().map_or(0, |i| i.last_seq);
    let sv = inner.super_version.read();
    sv.range_dels
        .tombstones()
        .iter()
        .any(|t| t.seq > frozen_upto)
}

fn add_stall(inner: &DbInner, since: Instant) {
    inner
        .counters
        .stall_micros
        .fetch_add(since.elapsed().as_micros() as u64, Ordering::Relaxed);
}

/// Freeze the mutable memtable and start a new one; the placement says where the frozen
/// memtable's writes end in its log (and may start a new log there).
fn switch_memtable(inner: &Arc<DbInner>, wal: &mut WalState, flush_now: bool) -> Result<()> {
    let log_end = match inner.values.freeze() {
        Ok(p) => p,
        Err(e) => {
            inner.set_error(&e);
            return Err(e);
        }
    };
    let new_mem = inner.memory.new_memtable();
    let old_mem = std::mem::replace(&mut wal.mem, Arc::clone(&new_mem));
    let mut bg = inner.bg.lock();
    bg.freezes += 1;
    let freeze_no = bg.freezes;
    bg.imms.push_back(Imm {
        mem: Arc::clone(&old_mem),
        log_end,
        last_seq: wal.last_assigned,
        freeze_no,
    });
    if flush_now {
        bg.flush_through = freeze_no;
    }
    bg.last_freeze = Some(Instant::now());
    {
        let mut sv = inner.super_version.write();
        let mut imms = vec![old_mem];
        imms.extend(sv.imms.iter().cloned());
        *sv = Arc::new(SuperVersion {
            mem: new_mem,
            imms,
            version: Arc::clone(&sv.version),
            range_dels: Arc::clone(&sv.range_dels),
        });
    }
    inner.bg_cv.notify_all();
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::db::Db;
    use crate::env::Env;
    use crate::options::Options;
    use crate::wal::WriteBatch;

    fn open() -> Db {
        Db::open("/db", Options::default().with_env(Env::memory())).unwrap()
    }

    /// A writer alone leads without queueing: no ticket is taken (each queued write takes
    /// one), and its writes are applied in order.
    #[test]
    fn a_lone_writer_leads_without_queueing() {
        let db = open();
        db.put(b"a", b"1").unwrap();
        db.put(b"b", b"2").unwrap();
        db.delete(b"a").unwrap();
        let mut b = WriteBatch::new();
        b.put(b"c", b"3");
        b.put(b"b", b"4");
        db.write(b).unwrap();
        let inner = db.inner();
        assert_eq!(inner.queue.lock().next_ticket, 0);
        assert_eq!(inner.last_seq.load(std::sync::atomic::Ordering::Acquire), 5);
        assert_eq!(db.get(b"a").unwrap(), None);
        assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"4"[..]));
        assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
    }

    /// A lone put or delete is encoded into the store's reused batch: it is kept after a
    /// small entry, dropped after one larger than `SCRATCH_KEEP` (so a huge value does not
    /// stay allocated), and every entry reads back and is logged as written (reopen).
    #[test]
    fn lone_puts_reuse_one_batch() {
        let dir = "/db";
        let env = Env::memory();
        let db = Db::open(dir, Options::default().with_env(env.clone())).unwrap();
        let big = vec![7u8; super::SCRATCH_KEEP + 1];
        db.put(b"a", b"1").unwrap();
        assert!(db.inner().wal.lock().scratch.is_some());
        db.put(b"big", &big).unwrap();
        assert!(db.inner().wal.lock().scratch.is_none());
        db.put(b"b", b"2").unwrap();
        db.delete(b"a").unwrap();
        let kept = db.inner().wal.lock().scratch.as_ref().map(WriteBatch::len);
        assert_eq!(kept, Some(1), "the last entry's batch is kept");
        drop(db);
        let db = Db::open(dir, Options::default().with_env(env)).unwrap();
        assert_eq!(db.get(b"a").unwrap(), None);
        assert_eq!(db.get(b"big").unwrap(), Some(big));
        assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    }

    /// A writer that finds a leader active queues its batch and waits; told to lead by the
    /// leader that leaves, it writes its batch through the queue.
    #[test]
    fn a_writer_behind_a_leader_queues() {
        let db = std::sync::Arc::new(open());
        let inner = db.inner().into_owned();
        inner.queue.lock().leader_active = true;
        let writer = {
            let db = std::sync::Arc::clone(&db);
            std::thread::spawn(move || db.put(b"k", b"v"))
        };
        // Be the leader: wait until the writer is queued, then leave and wake it.
        let signal = loop {
            let q = inner.queue.lock();
            if let Some(p) = q.waiting.front() {
                break std::sync::Arc::clone(&p.signal);
            }
            drop(q);
            std::thread::yield_now();
        };
        inner.queue.lock().leader_active = false;
        signal.notify();
        writer.join().unwrap().unwrap();
        assert_eq!(inner.queue.lock().next_ticket, 1);
        assert!(!inner.queue.lock().leader_active);
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }
}
