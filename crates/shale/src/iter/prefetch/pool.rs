//! The prefetch pool: a few worker threads that resolve value pointers ahead of a scan.
//!
//! A job is one `ValueStore::resolve` call. Its owner (a scan's look-ahead window) holds a
//! [`Ticket`] and later takes the result in order. Three rules keep the pool from ever
//! blocking a scan for longer than the scan itself would have waited:
//!
//! - A ticket whose job has not started yet is *stolen*: the owner runs the resolve on its
//!   own thread instead of waiting behind other scans' jobs (or behind a pool that was shut
//!   down). The owner only waits for a job a worker is running right now.
//! - Dropping a ticket cancels its job if it has not started, and discards the result if
//!   it has; nothing is ever handed to another ticket.
//! - Submission fails (the caller resolves the value itself) when the pool is shut down,
//!   has no threads, or its queue is full: the queue is bounded.
//!
//! Memory: results that are finished but not yet taken are counted; a worker starts a new
//! job only while that count is below the byte budget. So the pool holds at most the budget
//! plus one value per worker, whatever the number of scans. Each scan additionally bounds
//! its own window by entries (the look-ahead depth).
//!
//! Threads are spawned on the first submission, so a store whose values are inline (every
//! scan resolves by identity and never submits) starts none. [`PrefetchPool::shutdown`]
//! joins them; the pool's `Drop` does too.
//!
//! Lock order: the queue lock may be held while taking a slot's lock, never the reverse.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::Resolve;
use crate::error::{Error, Result};
use crate::iter::ValueBytes;
use crate::key::ValueKind;

/// Jobs waiting at most, over all scans. A job is a pointer's bytes and two `Arc`s, so the
/// queue stays small; beyond it scans resolve on their own threads.
const QUEUE_CAPACITY: usize = 1024;

/// Counters of a pool's work, for tests and stats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Jobs accepted.
    pub submitted: u64,
    /// Jobs a worker resolved.
    pub by_workers: u64,
    /// Jobs their owner resolved itself because no worker had started them.
    pub stolen: u64,
    /// Worker threads spawned so far.
    pub spawned: u64,
}

/// A bounded pool of threads resolving value pointers for scans. See the module docs.
pub struct PrefetchPool {
    shared: Arc<Shared>,
    threads: usize,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for PrefetchPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrefetchPool")
            .field("threads", &self.threads)
            .field("byte_budget", &self.shared.byte_budget)
            .finish()
    }
}

struct Shared {
    queue: Mutex<Queue>,
    /// Workers wait here for a job, for bytes to be released, or for shutdown.
    work: Condvar,
    /// Signalled when a worker finishes a job (tests wait for the pool to go idle).
    idle: Condvar,
    byte_budget: i64,
    submitted: AtomicU64,
    by_workers: AtomicU64,
    stolen: AtomicU64,
    spawned: AtomicU64,
}

struct Queue {
    jobs: VecDeque<Arc<Slot>>,
    /// Bytes of finished results not yet taken or dropped. Signed: a result may be taken
    /// (and subtracted) before its worker has added it.
    held: i64,
    /// Jobs being resolved by workers now.
    running: usize,
    started: bool,
    shutdown: bool,
}

struct Job {
    store: Arc<dyn Resolve>,
    key: Vec<u8>,
    kind: ValueKind,
    stored: Vec<u8>,
}

enum SlotState {
    Queued(Job),
    Running,
    /// The owner dropped its ticket while a worker ran the job: the result is discarded.
    Abandoned,
    /// The result and how long the resolve took.
    Done(Result<ValueBytes<'static>>, Duration),
    /// Taken, cancelled or discarded.
    Gone,
}

struct Slot {
    state: Mutex<SlotState>,
    done: Condvar,
}

impl Slot {
    fn is_queued(&self) -> bool {
        matches!(*self.state.lock(), SlotState::Queued(_))
    }
}

/// The claim on one submitted job's result. Take it with [`Ticket::wait`]; dropping it
/// cancels or discards the job.
pub struct Ticket {
    slot: Arc<Slot>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket").finish_non_exhaustive()
    }
}

fn resolve(job: &Job) -> (Result<ValueBytes<'static>>, Duration) {
    let start = Instant::now();
    let r = job.store.resolve(&job.key, job.kind, &job.stored);
    (r, start.elapsed())
}

impl PrefetchPool {
    /// A pool of `threads` workers (0: every submission is refused) that stops starting jobs
    /// while `byte_budget` bytes of results wait to be taken. No thread starts until the
    /// first submission.
    pub fn new(threads: usize, byte_budget: usize) -> Arc<PrefetchPool> {
        Arc::new(PrefetchPool {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue {
                    jobs: VecDeque::new(),
                    held: 0,
                    running: 0,
                    started: false,
                    shutdown: false,
                }),
                work: Condvar::new(),
                idle: Condvar::new(),
                byte_budget: i64::try_from(byte_budget).unwrap_or(i64::MAX),
                submitted: AtomicU64::new(0),
                by_workers: AtomicU64::new(0),
                stolen: AtomicU64::new(0),
                spawned: AtomicU64::new(0),
            }),
            threads,
            handles: Mutex::new(Vec::new()),
        })
    }

    /// Queue `store.resolve(key, kind, stored)`. When the pool cannot take it (no threads,
    /// shut down, queue full, threads could not be spawned) `stored` comes back and the
    /// caller resolves the value itself.
    ///
    /// # Errors
    /// `stored`, given back, when the job was refused.
    pub fn submit(
        &self,
        store: &Arc<dyn Resolve>,
        key: &[u8],
        kind: ValueKind,
        stored: Vec<u8>,
    ) -> std::result::Result<Ticket, Vec<u8>> {
        let mut q = self.shared.queue.lock();
        if q.shutdown || self.threads == 0 || q.jobs.len() >= QUEUE_CAPACITY {
            return Err(stored);
        }
        if !q.started {
            q.started = true;
            self.spawn_workers();
        }
        if self.handles.lock().is_empty() {
            return Err(stored);
        }
        let slot = Arc::new(Slot {
            state: Mutex::new(SlotState::Queued(Job {
                store: Arc::clone(store),
                key: key.to_vec(),
                kind,
                stored,
            })),
            done: Condvar::new(),
        });
        q.jobs.push_back(Arc::clone(&slot));
        self.shared.submitted.fetch_add(1, Ordering::Relaxed);
        self.shared.work.notify_one();
        Ok(Ticket {
            slot,
            shared: Arc::clone(&self.shared),
        })
    }

    /// Called once, under the queue lock, by the first submission. A thread that cannot be
    /// spawned is simply missing: fewer workers, or none (then submissions are refused).
    fn spawn_workers(&self) {
        let mut handles = self.handles.lock();
        for i in 0..self.threads {
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new()
                .name(format!("shale-prefetch-{i}"))
                .spawn(move || worker(&shared));
            if let Ok(h) = spawned {
                self.shared.spawned.fetch_add(1, Ordering::Relaxed);
                handles.push(h);
            }
        }
    }

    /// Stop the workers and join them. Jobs still queued stay with their tickets, whose
    /// owners resolve them on their own threads. Later submissions are refused.
    pub fn shutdown(&self) {
        {
            let mut q = self.shared.queue.lock();
            q.shutdown = true;
            self.shared.work.notify_all();
            self.shared.idle.notify_all();
        }
        let handles: Vec<_> = self.handles.lock().drain(..).collect();
        for h in handles {
            // A worker catches panics of `resolve`, so a join error cannot carry one of ours.
            let _ = h.join();
        }
    }

    /// Counters of the work done so far.
    pub fn stats(&self) -> PoolStats {
        let s = &self.shared;
        PoolStats {
            submitted: s.submitted.load(Ordering::Relaxed),
            by_workers: s.by_workers.load(Ordering::Relaxed),
            stolen: s.stolen.load(Ordering::Relaxed),
            spawned: s.spawned.load(Ordering::Relaxed),
        }
    }

    /// Worker threads not yet joined.
    pub fn live_threads(&self) -> usize {
        self.handles.lock().len()
    }

    /// Wait until no worker is running a job and none can start one (the queue holds no
    /// startable job, the byte budget is spent, or the pool is shut down). Tests use it to
    /// let the pool finish the work it was given before they read results.
    #[cfg(test)]
    pub(crate) fn wait_idle(&self) {
        let mut q = self.shared.queue.lock();
        loop {
            let startable = !q.shutdown
                && q.held < self.shared.byte_budget
                && q.jobs.iter().any(|s| s.is_queued());
            if q.running == 0 && (!startable || self.handles.lock().is_empty()) {
                return;
            }
            self.shared.idle.wait(&mut q);
        }
    }
}

impl Drop for PrefetchPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn worker(shared: &Shared) {
    loop {
        let slot = {
            let mut q = shared.queue.lock();
            loop {
                if q.shutdown {
                    return;
                }
                // Cancelled and stolen jobs leave their slots behind: drop them even when
                // the budget is spent, so they do not fill the bounded queue.
                while q.jobs.front().is_some_and(|s| !s.is_queued()) {
                    q.jobs.pop_front();
                }
                if q.held < shared.byte_budget
                    && let Some(s) = q.jobs.pop_front()
                {
                    q.running += 1;
                    break s;
                }
                shared.work.wait(&mut q);
            }
        };
        let job = {
            let mut st = slot.state.lock();
            match std::mem::replace(&mut *st, SlotState::Running) {
                SlotState::Queued(job) => Some(job),
                other => {
                    *st = other;
                    None
                }
            }
        };
        let mut added = 0;
        if let Some(job) = job {
            let (r, took) =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| resolve(&job)))
                    .unwrap_or_else(|_| {
                        let e = Error::Io {
                            op: "prefetch a value",
                            path: None,
                            source: std::io::Error::other("the value store panicked in resolve"),
                        };
                        (Err(e), Duration::ZERO)
                    });
            shared.by_workers.fetch_add(1, Ordering::Relaxed);
            let len = r.as_ref().map_or(0, |v| v.len());
            let mut st = slot.state.lock();
            if matches!(*st, SlotState::Running) {
                *st = SlotState::Done(r, took);
                added = i64::try_from(len).unwrap_or(i64::MAX);
                slot.done.notify_all();
            } else {
                *st = SlotState::Gone;
            }
        }
        let mut q = shared.queue.lock();
        q.running -= 1;
        q.held = q.held.saturating_add(added);
        shared.idle.notify_all();
    }
}

impl Shared {
    fn release(&self, len: usize) {
        let mut q = self.queue.lock();
        let before = q.held;
        q.held = q
            .held
            .saturating_sub(i64::try_from(len).unwrap_or(i64::MAX));
        if before >= self.byte_budget && q.held < self.byte_budget {
            self.work.notify_all();
        }
    }
}

impl Ticket {
    /// The job's result and how long its resolve took: taken if a worker finished it,
    /// awaited if a worker is running it, resolved here if no worker has started it.
    pub fn wait(self) -> (Result<ValueBytes<'static>>, Duration) {
        let mut st = self.slot.state.lock();
        loop {
            match std::mem::replace(&mut *st, SlotState::Gone) {
                SlotState::Queued(job) => {
                    drop(st);
                    self.shared.stolen.fetch_add(1, Ordering::Relaxed);
                    return resolve(&job);
                }
                SlotState::Running => {
                    *st = SlotState::Running;
                    self.slot.done.wait(&mut st);
                }
                SlotState::Done(r, took) => {
                    drop(st);
                    if let Ok(v) = &r {
                        self.shared.release(v.len());
                    }
                    return (r, took);
                }
                SlotState::Abandoned | SlotState::Gone => {
                    // Only this ticket moves a slot to these states, and it is consumed
                    // when it does.
                    let e = Error::Io {
                        op: "prefetch a value",
                        path: None,
                        source: std::io::Error::other("a prefetched value was lost"),
                    };
                    return (Err(e), Duration::ZERO);
                }
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut st = self.slot.state.lock();
        let released = match std::mem::replace(&mut *st, SlotState::Gone) {
            SlotState::Running => {
                *st = SlotState::Abandoned;
                0
            }
            SlotState::Done(Ok(v), _) => v.len(),
            _ => 0,
        };
        drop(st);
        if released > 0 {
            self.shared.release(released);
        }
    }
}
