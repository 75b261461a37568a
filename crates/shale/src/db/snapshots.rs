//! The registry of live snapshots: compaction keeps every version a snapshot can still see.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::key::SeqNo;

/// Sequence numbers of live snapshots, with how many handles hold each.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SeqNo, usize>>,
}

impl SnapshotList {
    /// Register a snapshot at the current value of `last_seq`, read under this list's lock.
    ///
    /// Why under the lock: compaction reads the list (also under the lock) after fixing its
    /// inputs, and every input entry is at or below `last_seq` at that moment. Either the
    /// compaction reads the list first, and then every input is at or below our sequence
    /// number and the newest of each key (all we could need) is kept anyway; or it reads the
    /// list after us and sees our snapshot.
    pub(crate) fn acquire_current(&self, last_seq: &AtomicU64) -> SeqNo {
        let mut live = self.live.lock();
        let seq = last_seq.load(Ordering::Acquire);
        *live.entry(seq).or_insert(0) += 1;
        seq
    }

    #[cfg(test)]
    fn acquire(&self, seq: SeqNo) {
        *self.live.lock().entry(seq).or_insert(0) += 1;
    }

    pub(crate) fn release(&self, seq: SeqNo) {
        let mut live = self.live.lock();
        if let Some(n) = live.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                live.remove(&seq);
            }
        }
    }

    /// The oldest live snapshot, or the current value of `last_seq` when none is held (read
    /// under the lock, as [`SnapshotList::acquire_current`], so that a snapshot taken
    /// meanwhile is at or above the answer).
    pub(crate) fn oldest(&self, last_seq: &AtomicU64) -> SeqNo {
        let live = self.live.lock();
        live.keys()
            .next()
            .copied()
            .unwrap_or_else(|| last_seq.load(Ordering::Acquire))
    }

    /// The sequence numbers of all live snapshots, ascending.
    pub(crate) fn all(&self) -> Vec<SeqNo> {
        self.live.lock().keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_handles() {
        let s = SnapshotList::default();
        s.acquire(5);
        s.acquire(5);
        s.acquire(9);
        s.release(5);
        assert_eq!(s.all(), vec![5, 9]);
        s.release(5);
        assert_eq!(s.all(), vec![9]);
        s.release(7); // unknown: ignored
        assert_eq!(s.all(), vec![9]);
    }
}
