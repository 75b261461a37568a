//! The write path: group commit, the log, the memtable, and making room.
//!
//! Writers enqueue their batch. A writer that finds no leader active becomes the leader: it
//! takes a group of queued batches (its own included, unless an earlier leader took it),
//! writes them as one log record, syncs if any of them asked to, inserts them into the
//! memtable, publishes the new last sequence number, and hands each writer its result.
//! Followers sleep on a condition variable until their result arrives.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{DbInner, Imm, SuperVersion, WalState};
use crate::error::{Error, Result};
use crate::options::{MAX_KEY_SIZE, MAX_VALUE_SIZE};
use crate::wal::WriteBatch;

/// A group is cut at this many bytes of log payload (a small batch is not held back behind
/// a huge group).
const MAX_GROUP_BYTES: usize = 1 << 20;

struct Pending {
    ticket: u64,
    batch: WriteBatch,
    sync: bool,
}

/// Writers waiting to be written, and results waiting to be collected.
#[derive(Default)]
pub(crate) struct WriteQueue {
    waiting: VecDeque<Pending>,
    done: HashMap<u64, Result<()>>,
    leader_active: bool,
    next_ticket: u64,
}

fn validate(batch: &WriteBatch) -> Result<()> {
    if batch.approximate_size() > crate::wal::DEFAULT_MAX_RECORD_SIZE {
        return Err(Error::InvalidArgument(format!(
            "a write batch of {} bytes exceeds the {}-byte limit of one log record",
            batch.approximate_size(),
            crate::wal::DEFAULT_MAX_RECORD_SIZE
        )));
    }
    for e in batch.iter() {
        if e.key.len() > MAX_KEY_SIZE {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes exceeds the {MAX_KEY_SIZE}-byte limit",
                e.key.len()
            )));
        }
        if e.value.len() > MAX_VALUE_SIZE {
            return Err(Error::InvalidArgument(format!(
                "value of {} bytes exceeds the {MAX_VALUE_SIZE}-byte limit",
                e.value.len()
            )));
        }
    }
    Ok(())
}

pub(crate) fn write(inner: &Arc<DbInner>, batch: WriteBatch, sync: bool) -> Result<()> {
    validate(&batch)?;
    if batch.is_empty() {
        return Ok(());
    }
    inner.check_writable()?;
    if let Some(gc) = inner.values.gc() {
        gc.before_write(batch.approximate_size());
    }
    let mut q = inner.queue.lock();
    let ticket = q.next_ticket;
    q.next_ticket += 1;
    q.waiting.push_back(Pending {
        ticket,
        batch,
        sync,
    });
    loop {
        if let Some(r) = q.done.remove(&ticket) {
            return r;
        }
        if q.leader_active {
            inner.queue_cv.wait(&mut q);
            continue;
        }
        // Lead: take a group from the front of the queue. Our batch is in it unless the
        // group was cut short before reaching it; then we lead again.
        q.leader_active = true;
        let mut group: Vec<Pending> = Vec::new();
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
        // A panic here is a bug; it must not leave `leader_active` set, which would stop
        // every later writer for good. The store turns read-only instead.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            write_group(inner, &mut group)
        }))
        .unwrap_or_else(|_| {
            let e = Error::Io {
                op: "write",
                path: None,
                source: std::io::Error::other("the write path panicked"),
            };
            inner.set_error(&e);
            Err(e)
        });
        q = inner.queue.lock();
        q.leader_active = false;
        let mut mine = false;
        for p in &group {
            if p.ticket == ticket {
                mine = true;
            } else {
                let r = result.as_ref().map(|_| ()).map_err(Error::duplicate);
                q.done.insert(p.ticket, r);
            }
        }
        inner.queue_cv.notify_all();
        if mine {
            return result;
        }
    }
}

/// Write a group as one log record and apply it to the memtable.
fn write_group(inner: &Arc<DbInner>, group: &mut [Pending]) -> Result<()> {
    let mut wal = inner.wal.lock();
    inner.check_writable()?;
    make_room(inner, &mut wal, false)?;
    let sync = group.iter().any(|p| p.sync);
    // One batch goes out as is; several are concatenated into the first.
    let (head, rest) = match group.split_first_mut() {
        Some(x) => x,
        None => return Ok(()),
    };
    for p in rest.iter() {
        head.batch.append(&p.batch);
    }
    log_and_apply(inner, &wal, &mut head.batch, sync, true)
}

/// Give `batch` the next sequence numbers, make it durable through the value placement,
/// insert it into the memtable and publish it. Requires the `wal` lock (passed in) and a
/// memtable with room. `user` counts it as user data; otherwise it is a garbage-collection
/// rewrite (always synced).
pub(crate) fn log_and_apply(
    inner: &DbInner,
    wal: &WalState,
    batch: &mut WriteBatch,
    sync: bool,
    user: bool,
) -> Result<()> {
    let first_seq = inner.last_seq.load(Ordering::Acquire) + 1;
    batch.set_sequence(first_seq);
    let count = batch.len() as u64;
    let mem = &wal.mem;
    let mut insert = |key: &[u8], seq, kind, value: &[u8]| mem.insert(key, seq, kind, value);
    let logged = if user {
        inner.values.append(batch, sync, &mut insert)
    } else {
        inner.values.append_relocation(batch, &mut insert)
    };
    if let Err(e) = logged {
        // The log may now end in a partial record: nothing more may be appended after it.
        // (A record refused for its size wrote nothing and leaves the log usable.)
        if !matches!(e, Error::InvalidArgument(_)) {
            inner.set_error(&e);
        }
        return Err(e);
    }
    inner
        .last_seq
        .store(first_seq + count - 1, Ordering::Release);
    if user {
        let user_bytes: u64 = batch
            .iter()
            .map(|e| (e.key.len() + e.value.len()) as u64)
            .sum();
        inner
            .counters
            .user_bytes
            .fetch_add(user_bytes, Ordering::Relaxed);
        inner.counters.user_ops.fetch_add(count, Ordering::Relaxed);
    }
    Ok(())
}

/// Make sure the mutable memtable has room, switching to a new one when it is full (or when
/// `force` is set and it holds anything). Throttles and stops the writer while level 0 or the
/// frozen memtables are over their limits. Requires the `wal` lock (passed in).
pub(crate) fn make_room(inner: &Arc<DbInner>, wal: &mut WalState, force: bool) -> Result<()> {
    let opts = &inner.options;
    let mut delayed = false;
    loop {
        let l0 = inner.super_version.read().version.level(0).len();
        if !delayed && !force && l0 >= opts.level0_slowdown_trigger {
            // Delay each write by a millisecond rather than stopping writes for seconds
            // later: this hands the compaction thread some of the CPU.
            let t = Instant::now();
            std::thread::sleep(Duration::from_millis(1));
            add_stall(inner, t);
            delayed = true;
            continue;
        }
        if !force
            && wal.mem.approximate_bytes() < opts.write_buffer_size
            && !inner.values.wants_freeze()
        {
            return Ok(());
        }
        if force && wal.mem.is_empty() {
            return Ok(());
        }
        let mut bg = inner.bg.lock();
        if let Some(e) = &bg.error {
            return Err(Error::ReadOnly(e.clone()));
        }
        if inner.shutting_down.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let l0 = inner.super_version.read().version.level(0).len();
        if bg.imms.len() >= opts.max_immutable_memtables || l0 >= opts.level0_stop_trigger {
            let t = Instant::now();
            inner.bg_cv.wait(&mut bg);
            add_stall(inner, t);
            continue;
        }
        drop(bg);
        return switch_memtable(inner, wal);
    }
}

fn add_stall(inner: &DbInner, since: Instant) {
    inner
        .counters
        .stall_micros
        .fetch_add(since.elapsed().as_micros() as u64, Ordering::Relaxed);
}

/// Freeze the mutable memtable and start a new one; the placement says where the frozen
/// memtable's writes end in its log (and may start a new log there).
fn switch_memtable(inner: &Arc<DbInner>, wal: &mut WalState) -> Result<()> {
    let log_end = match inner.values.freeze() {
        Ok(p) => p,
        Err(e) => {
            inner.set_error(&e);
            return Err(e);
        }
    };
    let new_mem = (inner.memtables)();
    let old_mem = std::mem::replace(&mut wal.mem, Arc::clone(&new_mem));
    let mut bg = inner.bg.lock();
    bg.imms.push_back(Imm {
        mem: Arc::clone(&old_mem),
        log_end,
    });
    {
        let mut sv = inner.super_version.write();
        let mut imms = vec![old_mem];
        imms.extend(sv.imms.iter().cloned());
        *sv = Arc::new(SuperVersion {
            mem: new_mem,
            imms,
            version: Arc::clone(&sv.version),
        });
    }
    inner.bg_cv.notify_all();
    Ok(())
}
