//! The registry of live snapshots: compaction keeps every version a snapshot can still see.

use std::collections::BTreeMap;

use parking_lot::Mutex;

use crate::key::SeqNo;

/// Sequence numbers of live snapshots, with how many handles hold each.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SeqNo, usize>>,
}

impl SnapshotList {
    pub(crate) fn acquire(&self, seq: SeqNo) {
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
