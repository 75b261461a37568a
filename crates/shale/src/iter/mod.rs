//! Iterators over internal entries, and the merge that turns many of them into the user's view.
//!
//! Every source of entries (a memtable, a table, a level of tables) exposes the same
//! [`InternalIterator`]: positioned, double-ended, over encoded internal keys (see
//! [`crate::key`]) in internal-key order. [`merging::MergingIterator`] merges many of them;
//! [`db_iter::DbIter`] collapses versions at a snapshot, drops tombstones, applies bounds and
//! prefixes, and yields user keys and values.

pub mod db_iter;
pub mod merging;
pub mod prefetch;
mod resolve_memo;
pub mod two_ended;
mod value_bytes;

pub use resolve_memo::ResolveMemo;
pub use value_bytes::ValueBytes;

/// Where the value starts in `stored`, an entry of `kind` for `key` that a memory component
/// holds, when the entry carries the value beside its pointer
/// (`values::ValueStore::carried_at`); `None` for anything else, which the placement's
/// resolve reads and checks.
pub type CarriedAt = fn(key: &[u8], kind: crate::key::ValueKind, stored: &[u8]) -> Option<usize>;

/// A positioned cursor over internal entries in internal-key order.
///
/// Movement methods return an error when a source fails (I/O, corruption); after an error the
/// iterator is not valid. `key` and `value` may only be called while [`valid`] is true.
///
/// [`valid`]: InternalIterator::valid
pub trait InternalIterator: Send {
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// Position on the first entry.
    fn seek_to_first(&mut self) -> crate::Result<()>;
    /// Position on the last entry.
    fn seek_to_last(&mut self) -> crate::Result<()>;
    /// Position on the first entry whose internal key is `>= target`.
    fn seek(&mut self, target: &[u8]) -> crate::Result<()>;
    /// Position on the last entry whose internal key is `<= target`.
    fn seek_for_prev(&mut self, target: &[u8]) -> crate::Result<()> {
        self.seek(target)?;
        if self.valid() {
            if crate::key::compare_internal(self.key(), target) != std::cmp::Ordering::Equal {
                self.prev()?;
            }
        } else {
            self.seek_to_last()?;
        }
        Ok(())
    }
    /// Move to the next entry. Requires `valid()`.
    fn next(&mut self) -> crate::Result<()>;
    /// Move to the previous entry. Requires `valid()`.
    fn prev(&mut self) -> crate::Result<()>;
    /// The current entry's encoded internal key. Requires `valid()`.
    fn key(&self) -> &[u8];
    /// The current entry's value bytes. Requires `valid()`.
    fn value(&self) -> &[u8];
    /// The current entry's key and value together: one walk down a stack of iterators
    /// where [`key`](Self::key) and [`value`](Self::value) would make two. Requires
    /// `valid()`.
    fn entry(&self) -> (&[u8], &[u8]) {
        (self.key(), self.value())
    }
}

/// Boxed iterators are iterators too.
impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) -> crate::Result<()> {
        (**self).seek_to_first()
    }
    fn seek_to_last(&mut self) -> crate::Result<()> {
        (**self).seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) -> crate::Result<()> {
        (**self).seek(target)
    }
    fn seek_for_prev(&mut self, target: &[u8]) -> crate::Result<()> {
        (**self).seek_for_prev(target)
    }
    fn next(&mut self) -> crate::Result<()> {
        (**self).next()
    }
    fn prev(&mut self) -> crate::Result<()> {
        (**self).prev()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn entry(&self) -> (&[u8], &[u8]) {
        (**self).entry()
    }
}

/// An iterator over a sorted, in-memory vector of `(internal key, value)` pairs. Used in
/// tests and as a reference implementation of the trait's contract.
#[derive(Debug, Default)]
pub struct VecIter {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    pos: Option<usize>,
}

impl VecIter {
    /// `entries` must be sorted by [`crate::key::compare_internal`].
    pub fn new(entries: Vec<(Vec<u8>, Vec<u8>)>) -> VecIter {
        VecIter { entries, pos: None }
    }
}

impl InternalIterator for VecIter {
    fn valid(&self) -> bool {
        self.pos.is_some()
    }
    fn seek_to_first(&mut self) -> crate::Result<()> {
        self.pos = if self.entries.is_empty() {
            None
        } else {
            Some(0)
        };
        Ok(())
    }
    fn seek_to_last(&mut self) -> crate::Result<()> {
        self.pos = self.entries.len().checked_sub(1);
        Ok(())
    }
    fn seek(&mut self, target: &[u8]) -> crate::Result<()> {
        let i = self
            .entries
            .partition_point(|(k, _)| crate::key::compare_internal(k, target).is_lt());
        self.pos = (i < self.entries.len()).then_some(i);
        Ok(())
    }
    fn next(&mut self) -> crate::Result<()> {
        self.pos = self
            .pos
            .and_then(|p| (p + 1 < self.entries.len()).then_some(p + 1));
        Ok(())
    }
    fn prev(&mut self) -> crate::Result<()> {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
        Ok(())
    }
    fn key(&self) -> &[u8] {
        self.pos
            .and_then(|p| self.entries.get(p))
            .map_or(&[][..], |e| &e.0)
    }
    fn value(&self) -> &[u8] {
        self.pos
            .and_then(|p| self.entries.get(p))
            .map_or(&[][..], |e| &e.1)
    }
}

#[cfg(test)]
pub(crate) mod testutil;
