//! Merge many internal iterators into one stream in internal-key order.
//!
//! The children are kept in a binary heap of indices whose top is the current entry: the
//! smallest key when moving forward, the largest when moving backward. A step moves only
//! the top child and sifts it down, so it costs one child step plus about `log2(n)` key
//! comparisons on borrowed bytes, with no allocation; for the usual 2..20 children that is
//! a handful of comparisons.
//!
//! Changing direction follows LevelDB's `MergingIterator`: every child other than the
//! current one is re-seeked around the current key (just after it before moving forward,
//! just before it before moving backward), so that all children sit on the same side of
//! the cursor. This assumes no two children hold the same internal key, which holds in the
//! engine because sequence numbers are unique.
//!
//! Not thread-safe to share; it is `Send` so a scan can move between threads.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::Result;
use crate::key::compare_internal;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// An [`InternalIterator`] over the union of its children, in internal-key order.
///
/// An error from any child is returned from the call that hit it and leaves the merged
/// iterator not valid; a later seek starts afresh.
pub struct MergingIterator {
    children: Vec<Box<dyn InternalIterator>>,
    /// Indices of the valid children, heap-ordered (see the module docs). Empty exactly
    /// when the merged iterator is not valid.
    heap: Vec<usize>,
    dir: Direction,
    /// The current key, copied while the children are re-seeked on a direction change
    /// (the key is borrowed from a child, and the others are moved meanwhile).
    scratch: Vec<u8>,
    /// Seek the children on threads (see [`MergingIterator::with_parallel_seeks`]).
    parallel_seeks: bool,
}

impl MergingIterator {
    /// Merge `children`. The result is not positioned until a seek.
    pub fn new(children: Vec<Box<dyn InternalIterator>>) -> MergingIterator {
        let heap = Vec::with_capacity(children.len());
        MergingIterator {
            children,
            heap,
            dir: Direction::Forward,
            scratch: Vec::new(),
            parallel_seeks: false,
        }
    }

    /// Make `seek` and `seek_for_prev` position the children concurrently, one scoped
    /// thread per child beyond the first, then merge as usual. The result is exactly that
    /// of sequential seeks (an error is the first failing child's, in child order). Worth it
    /// only when the children's seeks read the device: a thread costs more than a seek in
    /// cached blocks.
    pub fn with_parallel_seeks(mut self) -> MergingIterator {
        self.parallel_seeks = true;
        self
    }

    /// Number of children.
    pub fn num_children(&self) -> usize {
        self.children.len()
    }

    /// Whether child `a` comes before child `b` in the current direction. Equal keys are
    /// ordered by child index so the order is total and backward is forward reversed.
    #[inline]
    fn before(&self, a: usize, b: usize) -> bool {
        let (Some(ca), Some(cb)) = (self.children.get(a), self.children.get(b)) else {
            return false;
        };
        let ord = compare_internal(ca.key(), cb.key()).then(a.cmp(&b));
        match self.dir {
            Direction::Forward => ord == Ordering::Less,
            Direction::Backward => ord == Ordering::Greater,
        }
    }

    fn sift_down(&mut self, mut pos: usize) {
        let n = self.heap.len();
        loop {
            let left = 2 * pos + 1;
            if left >= n {
                return;
            }
            let right = left + 1;
            let mut best = left;
            if right < n && self.before(self.heap[right], self.heap[left]) {
                best = right;
            }
            if self.before(self.heap[best], self.heap[pos]) {
                self.heap.swap(pos, best);
                pos = best;
            } else {
                return;
            }
        }
    }

    /// Put every valid child in the heap, ordered for `dir`.
    fn rebuild(&mut self, dir: Direction) {
        self.dir = dir;
        self.heap.clear();
        for (i, c) in self.children.iter().enumerate() {
            if c.valid() {
                self.heap.push(i);
            }
        }
        for pos in (0..self.heap.len() / 2).rev() {
            self.sift_down(pos);
        }
    }

    /// After the top child moved: restore the heap, dropping the child if it ran out.
    fn fix_top(&mut self) {
        let Some(&top) = self.heap.first() else {
            return;
        };
        if !self.children[top].valid() {
            self.heap.swap_remove(0);
        }
        self.sift_down(0);
    }

    /// Clear the position when `r` is an error, so a failed iterator is never valid.
    fn guard(&mut self, r: Result<()>) -> Result<()> {
        if r.is_err() {
            self.heap.clear();
        }
        r
    }

    fn each_child(
        &mut self,
        mut f: impl FnMut(&mut Box<dyn InternalIterator>) -> Result<()>,
    ) -> Result<()> {
        self.children.iter_mut().try_for_each(&mut f)
    }

    /// Seek every child with `f`, concurrently when parallel seeks are on. Every child is
    /// sought even after one fails; the first error in child order is returned, as the
    /// sequential loop would return it.
    fn seek_children(
        &mut self,
        f: impl Fn(&mut Box<dyn InternalIterator>) -> Result<()> + Sync,
    ) -> Result<()> {
        if !self.parallel_seeks || self.children.len() < 2 {
            return self.each_child(f);
        }
        use std::sync::{Mutex, PoisonError};
        // Each child sits in a slot taken exactly once, by its thread or, when a thread
        // could not be started, by this one afterwards.
        let slots: Vec<Mutex<Option<&mut Box<dyn InternalIterator>>>> = self
            .children
            .iter_mut()
            .map(|c| Mutex::new(Some(c)))
            .collect();
        let seek = |slot: &Mutex<Option<&mut Box<dyn InternalIterator>>>| -> Result<()> {
            let mut held = slot.lock().unwrap_or_else(PoisonError::into_inner);
            held.take().map_or(Ok(()), &f)
        };
        let threaded: Vec<Result<()>> = std::thread::scope(|s| {
            let handles: Vec<_> = slots
                .iter()
                .skip(1)
                .map(|slot| {
                    let seek = &seek;
                    std::thread::Builder::new()
                        .spawn_scoped(s, move || seek(slot))
                        .ok()
                })
                .collect();
            let mut out = vec![slots.first().map_or(Ok(()), &seek)];
            for h in handles {
                out.push(match h.map(|h| h.join()) {
                    Some(Ok(r)) => r,
                    Some(Err(panic)) => std::panic::resume_unwind(panic),
                    None => Ok(()),
                });
            }
            out
        });
        threaded
            .into_iter()
            .zip(&slots)
            .try_for_each(|(r, slot)| r.and_then(|()| seek(slot)))
    }

    /// Reposition every child but the current one at its first key after the current key.
    fn switch_to_forward(&mut self, cur: usize) -> Result<()> {
        let mut key = std::mem::take(&mut self.scratch);
        key.clear();
        key.extend_from_slice(self.children[cur].key());
        let r = self.children.iter_mut().enumerate().try_for_each(|(i, c)| {
            if i == cur {
                return Ok(());
            }
            c.seek(&key)?;
            if c.valid() && compare_internal(c.key(), &key) == Ordering::Equal {
                c.next()?;
            }
            Ok(())
        });
        self.scratch = key;
        r?;
        // The current child holds the smallest key now, so it is the top again.
        self.rebuild(Direction::Forward);
        Ok(())
    }

    /// Reposition every child but the current one at its last key before the current key.
    fn switch_to_backward(&mut self, cur: usize) -> Result<()> {
        let mut key = std::mem::take(&mut self.scratch);
        key.clear();
        key.extend_from_slice(self.children[cur].key());
        let r = self.children.iter_mut().enumerate().try_for_each(|(i, c)| {
            if i == cur {
                return Ok(());
            }
            c.seek(&key)?;
            if c.valid() {
                c.prev()
            } else {
                c.seek_to_last()
            }
        });
        self.scratch = key;
        r?;
        self.rebuild(Direction::Backward);
        Ok(())
    }

    fn next_inner(&mut self) -> Result<()> {
        let Some(&cur) = self.heap.first() else {
            return Ok(());
        };
        if self.dir == Direction::Backward {
            self.switch_to_forward(cur)?;
        }
        self.children[cur].next()?;
        self.fix_top();
        Ok(())
    }

    fn prev_inner(&mut self) -> Result<()> {
        let Some(&cur) = self.heap.first() else {
            return Ok(());
        };
        if self.dir == Direction::Forward {
            self.switch_to_backward(cur)?;
        }
        self.children[cur].prev()?;
        self.fix_top();
        Ok(())
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.heap.clear();
        let r = self.each_child(|c| c.seek_to_first());
        self.guard(r)?;
        self.rebuild(Direction::Forward);
        Ok(())
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.heap.clear();
        let r = self.each_child(|c| c.seek_to_last());
        self.guard(r)?;
        self.rebuild(Direction::Backward);
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.heap.clear();
        let r = self.seek_children(|c| c.seek(target));
        self.guard(r)?;
        self.rebuild(Direction::Forward);
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        self.heap.clear();
        let r = self.seek_children(|c| c.seek_for_prev(target));
        self.guard(r)?;
        self.rebuild(Direction::Backward);
        Ok(())
    }

    /// Moves to the next entry; does nothing when not valid.
    fn next(&mut self) -> Result<()> {
        let r = self.next_inner();
        self.guard(r)
    }

    /// Moves to the previous entry; does nothing when not valid.
    fn prev(&mut self) -> Result<()> {
        let r = self.prev_inner();
        self.guard(r)
    }

    fn key(&self) -> &[u8] {
        self.heap
            .first()
            .and_then(|&i| self.children.get(i))
            .map_or(&[][..], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.heap
            .first()
            .and_then(|&i| self.children.get(i))
            .map_or(&[][..], |c| c.value())
    }

    fn entry(&self) -> (&[u8], &[u8]) {
        self.heap
            .first()
            .and_then(|&i| self.children.get(i))
            .map_or((&[][..], &[][..]), |c| c.entry())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::VecIter;
    use crate::iter::testutil::{FailingIter, Rng, random_internal_entries, split_randomly};

    fn boxed(parts: Vec<Vec<(Vec<u8>, Vec<u8>)>>) -> Vec<Box<dyn InternalIterator>> {
        parts
            .into_iter()
            .map(|p| Box::new(VecIter::new(p)) as Box<dyn InternalIterator>)
            .collect()
    }

    fn at(it: &MergingIterator) -> Option<Vec<u8>> {
        it.valid().then(|| it.key().to_vec())
    }

    #[test]
    fn entry_is_key_and_value_through_skiplists_and_vectors() {
        use crate::memory::MemTable;
        use crate::memory::skiplist::SkipListMemTable;
        let mut rng = Rng::new(11);
        let entries = random_internal_entries(&mut rng, 400);
        let parts = split_randomly(&mut rng, &entries, 4);
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        for (i, part) in parts.into_iter().enumerate() {
            if i % 2 == 0 {
                children.push(Box::new(VecIter::new(part)));
            } else {
                let mem = std::sync::Arc::new(SkipListMemTable::new());
                for (ik, v) in &part {
                    let p = crate::key::parse_internal_key(ik).unwrap();
                    mem.insert(p.user_key, p.seq, p.kind, v);
                }
                children.push(mem.iter());
            }
        }
        let mut m = MergingIterator::new(children);
        m.seek_to_first().unwrap();
        let mut seen = 0;
        while m.valid() {
            assert_eq!(m.entry(), (m.key(), m.value()));
            seen += 1;
            m.next().unwrap();
        }
        assert_eq!(seen, entries.len());
        assert_eq!(m.entry(), (&[][..], &[][..]));
    }

    #[test]
    fn empty_and_no_children() {
        let mut m = MergingIterator::new(Vec::new());
        m.seek_to_first().unwrap();
        assert!(!m.valid());
        m.seek_to_last().unwrap();
        assert!(!m.valid());
        m.next().unwrap();
        m.prev().unwrap();
        assert!(!m.valid());
        assert_eq!(m.key(), b"");

        let mut m = MergingIterator::new(boxed(vec![Vec::new(), Vec::new()]));
        m.seek(b"anything").unwrap();
        assert!(!m.valid());
        m.seek_for_prev(b"anything").unwrap();
        assert!(!m.valid());
    }

    #[test]
    fn random_against_sorted_model() {
        for seed in 0..40u64 {
            let mut rng = Rng::new(seed);
            let n = 1 + rng.below(120) as usize;
            let all = random_internal_entries(&mut rng, n);
            let m = 1 + rng.below(8) as usize;
            let parts = split_randomly(&mut rng, &all, m);
            let mut m = MergingIterator::new(boxed(parts));
            assert!(m.num_children() >= 1);

            // Full scans both ways.
            let mut fwd = Vec::new();
            m.seek_to_first().unwrap();
            while m.valid() {
                fwd.push((m.key().to_vec(), m.value().to_vec()));
                m.next().unwrap();
            }
            assert_eq!(fwd, all, "seed {seed}");
            let mut bwd = Vec::new();
            m.seek_to_last().unwrap();
            while m.valid() {
                bwd.push((m.key().to_vec(), m.value().to_vec()));
                m.prev().unwrap();
            }
            bwd.reverse();
            assert_eq!(bwd, all, "seed {seed}");

            // Random walks with direction switches.
            let keys: Vec<Vec<u8>> = all.iter().map(|e| e.0.clone()).collect();
            let mut pos: Option<usize> = None;
            for _ in 0..200 {
                match rng.below(6) {
                    0 | 1 if pos.is_some() => {
                        m.next().unwrap();
                        pos = pos.and_then(|p| (p + 1 < keys.len()).then_some(p + 1));
                    }
                    2 | 3 if pos.is_some() => {
                        m.prev().unwrap();
                        pos = pos.and_then(|p| p.checked_sub(1));
                    }
                    4 => {
                        let t = rng.probe_internal_key(&keys);
                        m.seek(&t).unwrap();
                        let i = keys.partition_point(|k| compare_internal(k, &t).is_lt());
                        pos = (i < keys.len()).then_some(i);
                    }
                    _ => {
                        let t = rng.probe_internal_key(&keys);
                        m.seek_for_prev(&t).unwrap();
                        let i = keys.partition_point(|k| compare_internal(k, &t).is_le());
                        pos = i.checked_sub(1);
                    }
                }
                assert_eq!(at(&m), pos.map(|p| keys[p].clone()), "seed {seed}");
                if let Some(p) = pos {
                    assert_eq!(m.value(), all[p].1.as_slice());
                }
            }
        }
    }

    #[test]
    fn child_errors_propagate_and_invalidate() {
        let mut rng = Rng::new(7);
        let all = random_internal_entries(&mut rng, 60);
        let mut parts = split_randomly(&mut rng, &all, 4);
        let failing = parts.pop().unwrap_or_default();
        for fail_after in 0..40 {
            let mut children = boxed(parts.clone());
            children.push(Box::new(FailingIter::new(failing.clone(), fail_after)));
            let mut m = MergingIterator::new(children);
            let mut failed = false;
            let mut r = m.seek_to_first();
            for step in 0..200 {
                if r.is_err() {
                    failed = true;
                    break;
                }
                if !m.valid() {
                    r = m.seek_to_last();
                    continue;
                }
                r = if step % 7 < 4 { m.next() } else { m.prev() };
            }
            assert!(
                failed,
                "the injected error must surface (fail_after {fail_after})"
            );
            assert!(!m.valid());
            assert!(r.unwrap_err().is_corruption());
        }
    }
}
