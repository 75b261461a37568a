//! A double-ended Rust iterator from two cursors over the same data, one per end, that
//! ends where they meet: [`TwoEnded`]. [`crate::iter::db_iter::Entries`] (stored values)
//! and [`crate::iter::prefetch::PrefetchEntries`] (resolved values, each end prefetching)
//! are it over their own cursor.

use crate::error::Result;

/// One end's cursor of a [`TwoEnded`] iterator.
pub trait EndCursor {
    /// What the iterator yields for the current entry.
    type Item;
    /// Position on the first key.
    fn seek_to_first(&mut self) -> Result<()>;
    /// Position on the last key.
    fn seek_to_last(&mut self) -> Result<()>;
    /// Move forward.
    fn next(&mut self) -> Result<()>;
    /// Move back.
    fn prev(&mut self) -> Result<()>;
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// The current user key.
    fn key(&self) -> &[u8];
    /// The current entry as the iterator yields it.
    fn item(&self) -> Self::Item;
    /// The back end has yielded `key`: this (front) cursor need not look at `key` or past
    /// it. Default: nothing (the meeting check stops the iterator anyway).
    fn stop_below(&mut self, _key: &[u8]) {}
    /// The front end has yielded `key`: this (back) cursor need not look at `key` or below.
    fn stop_above(&mut self, _key: &[u8]) {}
}

/// A double-ended iterator built from two cursors over independent inner iterators of the
/// same data: one moving forward from the first key, one moving backward from the last. It
/// ends when the two meet, so every key is yielded once.
///
/// The first `next` seeks the front cursor to the first key and the first `next_back` seeks
/// the back cursor to the last, so an iterator used one way never touches the other cursor.
/// After an error (yielded as `Some(Err(_))`) it yields nothing more.
pub struct TwoEnded<C> {
    pub(crate) front: C,
    pub(crate) back: C,
    front_started: bool,
    back_started: bool,
    /// The last key each side yielded (meaningful when that side has yielded one).
    front_key: Vec<u8>,
    back_key: Vec<u8>,
    front_yielded: bool,
    back_yielded: bool,
    done: bool,
}

impl<C: EndCursor> TwoEnded<C> {
    /// `front` and `back` must be cursors over the same entries.
    pub fn from_cursors(front: C, back: C) -> Self {
        TwoEnded {
            front,
            back,
            front_started: false,
            back_started: false,
            front_key: Vec::new(),
            back_key: Vec::new(),
            front_yielded: false,
            back_yielded: false,
            done: false,
        }
    }
}

impl<C: EndCursor> Iterator for TwoEnded<C> {
    type Item = Result<C::Item>;

    fn next(&mut self) -> Option<Result<C::Item>> {
        if self.done {
            return None;
        }
        let r = if self.front_started {
            self.front.next()
        } else {
            self.front_started = true;
            if self.back_yielded {
                self.front.stop_below(&self.back_key);
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
        let item = f.item();
        if self.back_started {
            self.back.stop_above(&self.front_key);
        }
        Some(Ok(item))
    }
}

impl<C: EndCursor> DoubleEndedIterator for TwoEnded<C> {
    fn next_back(&mut self) -> Option<Result<C::Item>> {
        if self.done {
            return None;
        }
        let r = if self.back_started {
            self.back.prev()
        } else {
            self.back_started = true;
            if self.front_yielded {
                self.back.stop_above(&self.front_key);
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
        let item = b.item();
        if self.front_started {
            self.front.stop_below(&self.back_key);
        }
        Some(Ok(item))
    }
}

impl<C: EndCursor> std::iter::FusedIterator for TwoEnded<C> {}
