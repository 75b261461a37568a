//! The double-ended Rust iterator over resolved entries, one prefetching cursor per end.

use std::sync::Arc;

use super::{Limit, Prefetch, PrefetchCursor, Resolve};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::iter::db_iter::DbIterOptions;

/// A double-ended iterator over `(user key, value)` with values resolved, built from two
/// [`PrefetchCursor`]s over independent inner iterators of the same data: one moving forward
/// from the first key, one backward from the last. It ends when the two meet, so every key
/// is yielded once; each end prefetches on its own once it has been read sequentially.
///
/// The first `next` seeks the front cursor and the first `next_back` the back one, so an
/// iterator used one way never touches the other cursor. After an error (yielded as
/// `Some(Err(_))`) it yields nothing more.
pub struct PrefetchEntries<I: InternalIterator> {
    front: PrefetchCursor<I>,
    back: PrefetchCursor<I>,
    front_started: bool,
    back_started: bool,
    /// The last key each side yielded (meaningful when that side has yielded one).
    front_key: Vec<u8>,
    back_key: Vec<u8>,
    front_yielded: bool,
    back_yielded: bool,
    done: bool,
}

/// One item of [`PrefetchEntries`]: user key and resolved value.
pub type ResolvedItem = Result<(Vec<u8>, Vec<u8>)>;

impl<I: InternalIterator> PrefetchEntries<I> {
    /// `front_inner` and `back_inner` must iterate the same entries; both are viewed with
    /// `opts` and resolved with `values`, prefetching through `prefetch` when given.
    pub fn new(
        front_inner: I,
        back_inner: I,
        opts: DbIterOptions,
        values: Arc<dyn Resolve>,
        prefetch: Option<Prefetch>,
    ) -> Self {
        PrefetchEntries {
            front: PrefetchCursor::new(
                front_inner,
                opts.clone(),
                Arc::clone(&values),
                prefetch.clone(),
            ),
            back: PrefetchCursor::new(back_inner, opts, values, prefetch),
            front_started: false,
            back_started: false,
            front_key: Vec::new(),
            back_key: Vec::new(),
            front_yielded: false,
            back_yielded: false,
            done: false,
        }
    }

    /// True while either end serves entries from a look-ahead window.
    pub fn is_prefetching(&self) -> bool {
        self.front.is_prefetching() || self.back.is_prefetching()
    }
}

impl<I: InternalIterator> Iterator for PrefetchEntries<I> {
    type Item = ResolvedItem;

    fn next(&mut self) -> Option<ResolvedItem> {
        if self.done {
            return None;
        }
        let r = if self.front_started {
            self.front.next()
        } else {
            self.front_started = true;
            if self.back_yielded {
                self.front.set_limit(Limit::Below(self.back_key.clone()));
            }
            self.front.seek_to_first()
        };
        if let Err(e) = r {
            self.done = true;
            return Some(Err(e));
        }
        let f = &self.front;
        if !f.valid() || (self.back_yielded && f.key() >= self.back_key.as_slice()) {
            self.done = true;
            return None;
        }
        self.front_key.clear();
        self.front_key.extend_from_slice(f.key());
        self.front_yielded = true;
        let item = (f.key().to_vec(), f.value().to_vec());
        if self.back_started {
            self.back.set_limit(Limit::Above(self.front_key.clone()));
        }
        Some(Ok(item))
    }
}

impl<I: InternalIterator> DoubleEndedIterator for PrefetchEntries<I> {
    fn next_back(&mut self) -> Option<ResolvedItem> {
        if self.done {
            return None;
        }
        let r = if self.back_started {
            self.back.prev()
        } else {
            self.back_started = true;
            if self.front_yielded {
                self.back.set_limit(Limit::Above(self.front_key.clone()));
            }
            self.back.seek_to_last()
        };
        if let Err(e) = r {
            self.done = true;
            return Some(Err(e));
        }
        let b = &self.back;
        if !b.valid() || (self.front_yielded && b.key() <= self.front_key.as_slice()) {
            self.done = true;
            return None;
        }
        self.back_key.clear();
        self.back_key.extend_from_slice(b.key());
        self.back_yielded = true;
        let item = (b.key().to_vec(), b.value().to_vec());
        if self.front_started {
            self.front.set_limit(Limit::Below(self.back_key.clone()));
        }
        Some(Ok(item))
    }
}

impl<I: InternalIterator> std::iter::FusedIterator for PrefetchEntries<I> {}
