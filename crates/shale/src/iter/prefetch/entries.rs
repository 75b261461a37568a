//! The double-ended Rust iterator over resolved entries, one prefetching cursor per end.

use std::sync::Arc;

use super::{Limit, Prefetch, PrefetchCursor, Resolve};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::iter::db_iter::DbIterOptions;
use crate::iter::two_ended::{EndCursor, TwoEnded};

/// A double-ended iterator over `(user key, value)` with values resolved, built from two
/// [`PrefetchCursor`]s over independent inner iterators of the same data ([`TwoEnded`]: one
/// moving forward from the first key, one backward from the last; it ends when they meet).
/// Each end prefetches on its own once it has been read sequentially, and stops at the key
/// the other end last yielded, so its window never reads past it.
pub type PrefetchEntries<I> = TwoEnded<PrefetchCursor<I>>;

/// One item of [`PrefetchEntries`]: user key and resolved value.
pub type ResolvedItem = Result<(Vec<u8>, Vec<u8>)>;

impl<I: InternalIterator> TwoEnded<PrefetchCursor<I>> {
    /// `front_inner` and `back_inner` must iterate the same entries; both are viewed with
    /// `opts` and resolved with `values`, prefetching through `prefetch` when given.
    pub fn new(
        front_inner: I,
        back_inner: I,
        opts: DbIterOptions,
        values: Arc<dyn Resolve>,
        prefetch: Option<Prefetch>,
    ) -> Self {
        TwoEnded::from_cursors(
            PrefetchCursor::new(
                front_inner,
                opts.clone(),
                Arc::clone(&values),
                prefetch.clone(),
            ),
            PrefetchCursor::new(back_inner, opts, values, prefetch),
        )
    }

    /// True while either end serves entries from a look-ahead window.
    pub fn is_prefetching(&self) -> bool {
        self.front.is_prefetching() || self.back.is_prefetching()
    }
}

impl<I: InternalIterator> EndCursor for PrefetchCursor<I> {
    type Item = (Vec<u8>, Vec<u8>);
    fn seek_to_first(&mut self) -> Result<()> {
        PrefetchCursor::seek_to_first(self)
    }
    fn seek_to_last(&mut self) -> Result<()> {
        PrefetchCursor::seek_to_last(self)
    }
    fn next(&mut self) -> Result<()> {
        PrefetchCursor::next(self)
    }
    fn prev(&mut self) -> Result<()> {
        PrefetchCursor::prev(self)
    }
    fn valid(&self) -> bool {
        PrefetchCursor::valid(self)
    }
    fn key(&self) -> &[u8] {
        PrefetchCursor::key(self)
    }
    fn item(&self) -> Self::Item {
        (self.key().to_vec(), self.value().to_vec())
    }
    fn stop_below(&mut self, key: &[u8]) {
        self.set_limit(Limit::Below(key.to_vec()));
    }
    fn stop_above(&mut self, key: &[u8]) {
        self.set_limit(Limit::Above(key.to_vec()));
    }
}
