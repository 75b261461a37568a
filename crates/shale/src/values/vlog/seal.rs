//! Sealing: making rotated-out segments durable off the writer's path.
//!
//! When the active segment reaches its size, the writer hands it to the OS and cuts the
//! space reserved after it (`WriteFile::finish`), queues it here and continues in a new
//! segment at once; a background thread syncs queued segments in order. Whoever needs a sealed segment durable before going on waits for (or
//! performs) its sync through [`Sealer::sync_through`]:
//! - a flush, before its MANIFEST edit commits tables that point into the segment;
//! - a `sync = true` write, before it syncs the active segment (a synced write must never
//!   survive a machine crash that loses an older, unsynced segment's tail);
//! - `ValueStore::sync` (close, garbage collection's drop).
//!
//! Segments synced here are reported to the next MANIFEST edit (tag 14, `vlog_sealed`):
//! recovery then holds them to their recorded end, and treats every segment without such a
//! record as possibly torn (see `reader::replay`).
//!
//! Thread-safety: shared by the writer (which only queues, under a short lock), the
//! background thread and any thread that needs a segment durable. Syncs run one at a time
//! and in queue order, so a recorded seal implies every older segment is durable too.

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use crate::env::FileSyncer;
use crate::error::{Error, Result};

/// A segment rotated out and not yet synced.
pub(crate) struct Sealed {
    pub(crate) number: u64,
    /// Its length (header and whole records).
    pub(crate) end: u64,
    pub(crate) syncer: Arc<dyn FileSyncer>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Sealed>,
    stop: bool,
}

/// See the module documentation.
#[derive(Default)]
pub(crate) struct Sealer {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Held while syncing queued segments: they are synced one at a time, oldest first.
    syncing: Mutex<()>,
    /// Segments synced in full and not yet in a MANIFEST edit, as (number, end).
    unrecorded: Mutex<Vec<(u64, u64)>>,
    /// The first failed sync: a segment whose sync failed may have lost pages, so nothing
    /// that relies on it may proceed (retrying an fsync does not bring them back).
    failed: Mutex<Option<Error>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Sealer {
    /// Queue a segment the writer has just left (its bytes handed to the OS), starting the
    /// background thread on first use.
    pub(crate) fn push(self: &Arc<Self>, sealed: Sealed) {
        self.queue.lock().waiting.push_back(sealed);
        self.wake.notify_one();
        let mut thread = self.thread.lock();
        if thread.is_none() {
            let me = Arc::clone(self);
            // Without the thread, segments are still synced by whoever needs them.
            *thread = std::thread::Builder::new()
                .name("shale-vlog-seal".into())
                .spawn(move || me.run())
                .ok();
        }
    }

    fn run(&self) {
        loop {
            {
                let mut q = self.queue.lock();
                while q.waiting.is_empty() && !q.stop {
                    self.wake.wait(&mut q);
                }
                if q.stop {
                    return;
                }
            }
            // A failure is kept in `failed` for the next caller that needs durability.
            if self.sync_through(u64::MAX).is_err() {
                let mut q = self.queue.lock();
                while !q.stop {
                    self.wake.wait(&mut q);
                }
                return;
            }
        }
    }

    /// The failure of an earlier sync, if any.
    pub(crate) fn check(&self) -> Result<()> {
        match &*self.failed.lock() {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }

    /// Make every queued segment numbered at most `number` durable, oldest first.
    pub(crate) fn sync_through(&self, number: u64) -> Result<()> {
        let _one_at_a_time = self.syncing.lock();
        loop {
            self.check()?;
            // Only holders of `syncing` remove entries: the front stays until popped below.
            let (n, end, syncer) = {
                let q = self.queue.lock();
                match q.waiting.front() {
                    Some(s) if s.number <= number => (s.number, s.end, Arc::clone(&s.syncer)),
                    _ => return Ok(()),
                }
            };
            if let Err(e) = syncer.sync_data() {
                *self.failed.lock() = Some(e.duplicate());
                return Err(e);
            }
            self.queue.lock().waiting.pop_front();
            self.unrecorded.lock().push((n, end));
        }
    }

    /// Note a segment synced in full by its writer (the active one at close) for the next
    /// MANIFEST edit.
    pub(crate) fn record(&self, number: u64, end: u64) {
        self.unrecorded.lock().push((number, end));
    }

    /// Take the segments synced since the last call, for a MANIFEST edit.
    pub(crate) fn take_unrecorded(&self) -> Vec<(u64, u64)> {
        std::mem::take(&mut *self.unrecorded.lock())
    }

    /// Stop the background thread and wait for it (queued segments stay unsynced unless
    /// someone syncs them).
    pub(crate) fn stop(&self) {
        self.queue.lock().stop = true;
        self.wake.notify_all();
        if let Some(h) = self.thread.lock().take() {
            let _ = h.join();
        }
    }
}
