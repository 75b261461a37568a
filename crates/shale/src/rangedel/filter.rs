//! An iterator that leaves out the entries range tombstones hide from a reader.
//!
//! Whether a range tombstone hides an entry depends only on the entry's key and sequence
//! number, the tombstones and the reader's snapshot, never on other entries: so the filter
//! may wrap each source of a merge on its own, and the merge sees only what the reader may
//! see. Every older version of a hidden entry is hidden by the same tombstone, so leaving
//! them out (rather than turning them into point tombstones) shows no stale value.

use std::sync::Arc;

use super::RangeDels;
use crate::iter::InternalIterator;
use crate::key::{SeqNo, parse_internal_key};

/// `inner` without the entries `dels` hide at `snapshot`. Entries newer than `snapshot`
/// are passed on (the reader above skips them).
pub struct RangeDelFilter<I: InternalIterator> {
    inner: I,
    dels: Arc<RangeDels>,
    snapshot: SeqNo,
}

impl<I: InternalIterator> RangeDelFilter<I> {
    /// Wrap `inner`.
    pub fn new(inner: I, dels: Arc<RangeDels>, snapshot: SeqNo) -> Self {
        RangeDelFilter {
            inner,
            dels,
            snapshot,
        }
    }

    /// Whether the current entry is hidden. A key that does not parse is passed on, for
    /// the reader above to report.
    fn hidden(&self) -> bool {
        match parse_internal_key(self.inner.key()) {
            Ok(p) => p.seq <= self.snapshot && self.dels.hides(p.user_key, p.seq, self.snapshot),
            Err(_) => false,
        }
    }

    fn skip_forward(&mut self) -> crate::Result<()> {
        while self.inner.valid() && self.hidden() {
            self.inner.next()?;
        }
        Ok(())
    }

    fn skip_backward(&mut self) -> crate::Result<()> {
        while self.inner.valid() && self.hidden() {
            self.inner.prev()?;
        }
        Ok(())
    }
}

impl<I: InternalIterator> InternalIterator for RangeDelFilter<I> {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) -> crate::Result<()> {
        self.inner.seek_to_first()?;
        self.skip_forward()
    }
    fn seek_to_last(&mut self) -> crate::Result<()> {
        self.inner.seek_to_last()?;
        self.skip_backward()
    }
    fn seek(&mut self, target: &[u8]) -> crate::Result<()> {
        self.inner.seek(target)?;
        self.skip_forward()
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> crate::Result<()> {
        self.inner.seek_for_prev(target)?;
        self.skip_backward()
    }
    fn next(&mut self) -> crate::Result<()> {
        self.inner.next()?;
        self.skip_forward()
    }
    fn prev(&mut self) -> crate::Result<()> {
        self.inner.prev()?;
        self.skip_backward()
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}
