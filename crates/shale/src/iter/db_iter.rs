//! The user's view of the store at a snapshot: one entry per live user key.
//!
//! [`DbIter`] walks a merged [`InternalIterator`] (all versions of all keys, newest first
//! within a key) and shows, for each user key, only the newest entry whose sequence number
//! is `<= snapshot`, hiding the key when that entry is a tombstone. It follows LevelDB's
//! `db_iter.cc`:
//!
//! - Moving forward, the inner iterator sits *on* the entry being shown, so `key` and
//!   `value` borrow from it without copying. Entries of a key already shown or deleted are
//!   skipped by remembering that user key in a reused buffer.
//! - Moving backward, the versions of a key arrive oldest first, so the newest visible one
//!   is known only after passing all of them: the inner iterator ends up *before* the
//!   entries of the key shown, whose key and value are kept in owned buffers.
//! - Changing direction re-establishes the other invariant by stepping over the entries of
//!   the current key.
//!
//! Bounds restrict the view to `[lower, upper)`; a prefix is the range
//! `[prefix, successor(prefix))`. Movement stops at a bound without reading past it further
//! than one entry.
//!
//! Not thread-safe to share; it is `Send` when its inner iterator is.

use std::cmp::Ordering;

use super::InternalIterator;
use super::two_ended::{EndCursor, TwoEnded};
use crate::error::{Error, Result};
use crate::key::{
    MAX_SEQNO, ParsedKey, SeqNo, ValueKind, append_internal_key, parse_internal_key, user_key,
};

/// What a [`DbIter`] shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbIterOptions {
    /// Only entries with a sequence number `<= snapshot` are visible.
    pub snapshot: SeqNo,
    /// Smallest user key shown (inclusive).
    pub lower_bound: Option<Vec<u8>>,
    /// User keys shown are below this one (exclusive).
    pub upper_bound: Option<Vec<u8>>,
    /// Only user keys starting with this prefix are shown (combined with the bounds).
    pub prefix: Option<Vec<u8>>,
}

impl Default for DbIterOptions {
    /// Everything written so far: the newest snapshot, no bounds, no prefix.
    fn default() -> Self {
        DbIterOptions {
            snapshot: MAX_SEQNO,
            lower_bound: None,
            upper_bound: None,
            prefix: None,
        }
    }
}

/// The smallest key greater than every key that starts with `prefix`, or `None` when there
/// is none (the prefix is empty or all 0xff bytes): drop trailing 0xff bytes, then add one
/// to the last byte.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut s = prefix.get(..=keep)?.to_vec();
    if let Some(last) = s.last_mut() {
        *last += 1;
    }
    Some(s)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// Internal keys come from tables and memtables that validated them; one that still does not
/// parse is reported rather than skipped, since skipping could resurrect a deleted key.
fn parse(ikey: &[u8]) -> Result<ParsedKey<'_>> {
    parse_internal_key(ikey)
        .map_err(|d| Error::corruption("(merged iterator)", 0, format!("bad internal key: {d}")))
}

/// A cursor over the live user keys at a snapshot, within bounds. See the module docs.
///
/// Movement methods return the inner iterator's errors; after an error the cursor is not
/// valid until the next seek. `next` and `prev` do nothing when not valid; `key` and
/// `value` return empty slices then.
pub struct DbIter<I: InternalIterator> {
    inner: I,
    snapshot: SeqNo,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    dir: Direction,
    valid: bool,
    kind: ValueKind,
    /// Forward: the user key whose remaining entries are to be skipped. Backward: the
    /// current user key.
    saved_key: Vec<u8>,
    /// Backward only: the current value.
    saved_value: Vec<u8>,
    /// Reused buffer for internal seek keys.
    seek_buf: Vec<u8>,
}

impl<I: InternalIterator> DbIter<I> {
    /// View `inner` (all versions, in internal-key order) as `opts` says. Not positioned
    /// until a seek.
    pub fn new(inner: I, opts: DbIterOptions) -> Self {
        let mut lower = opts.lower_bound;
        let mut upper = opts.upper_bound;
        if let Some(p) = opts.prefix {
            let succ = prefix_successor(&p);
            lower = Some(match lower {
                Some(l) if l > p => l,
                _ => p,
            });
            upper = match (upper, succ) {
                (Some(u), Some(s)) => Some(u.min(s)),
                (u, None) => u,
                (None, s) => s,
            };
        }
        DbIter {
            inner,
            snapshot: opts.snapshot.min(MAX_SEQNO),
            lower,
            upper,
            dir: Direction::Forward,
            valid: false,
            kind: ValueKind::Value,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            seek_buf: Vec::new(),
        }
    }

    /// True when positioned on a live key.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key. Requires `valid()`.
    pub fn key(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        match self.dir {
            Direction::Forward => user_key(self.inner.key()),
            Direction::Backward => &self.saved_key,
        }
    }

    /// The current value as stored: the user's bytes for [`ValueKind::Value`], an encoded
    /// pointer for [`ValueKind::ValuePointer`]. Requires `valid()`.
    pub fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        match self.dir {
            Direction::Forward => self.inner.value(),
            Direction::Backward => &self.saved_value,
        }
    }

    /// [`key`](Self::key) and [`value`](Self::value) together, from one walk down the inner
    /// iterators. Requires `valid()`; empty otherwise.
    pub fn entry(&self) -> (&[u8], &[u8]) {
        if !self.valid {
            return (&[], &[]);
        }
        match self.dir {
            Direction::Forward => {
                let (k, v) = self.inner.entry();
                (user_key(k), v)
            }
            Direction::Backward => (&self.saved_key, &self.saved_value),
        }
    }

    /// [`ValueKind::Value`] or [`ValueKind::ValuePointer`]: how to read [`value`](Self::value).
    /// Requires `valid()`.
    pub fn kind(&self) -> ValueKind {
        self.kind
    }

    /// Give back the inner iterator.
    pub fn into_inner(self) -> I {
        self.inner
    }

    /// Position on the first live key (at or after the lower bound).
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.dir = Direction::Forward;
        self.valid = false;
        let r = match &self.lower {
            Some(l) => {
                self.seek_buf.clear();
                append_internal_key(&mut self.seek_buf, l, self.snapshot, ValueKind::FOR_SEEK);
                self.inner.seek(&self.seek_buf)
            }
            None => self.inner.seek_to_first(),
        };
        let r = r.and_then(|()| self.find_next_user_entry(false));
        self.guard(r)
    }

    /// Position on the last live key (below the upper bound).
    pub fn seek_to_last(&mut self) -> Result<()> {
        self.dir = Direction::Backward;
        self.valid = false;
        let r = self.position_before_upper();
        let r = r.and_then(|()| self.find_prev_user_entry());
        self.guard(r)
    }

    /// Position on the first live key `>= user_key` (and within the bounds).
    pub fn seek(&mut self, user_key: &[u8]) -> Result<()> {
        self.dir = Direction::Forward;
        self.valid = false;
        let target = match &self.lower {
            Some(l) if user_key < l.as_slice() => l.as_slice(),
            _ => user_key,
        };
        if self.upper.as_deref().is_some_and(|u| target >= u) {
            return Ok(());
        }
        self.seek_buf.clear();
        append_internal_key(
            &mut self.seek_buf,
            target,
            self.snapshot,
            ValueKind::FOR_SEEK,
        );
        let r = self.inner.seek(&self.seek_buf);
        let r = r.and_then(|()| self.find_next_user_entry(false));
        self.guard(r)
    }

    /// Position on the last live key `<= user_key` (and within the bounds).
    pub fn seek_for_prev(&mut self, user_key: &[u8]) -> Result<()> {
        if self.upper.as_deref().is_some_and(|u| user_key >= u) {
            return self.seek_to_last();
        }
        self.dir = Direction::Backward;
        self.valid = false;
        if self.lower.as_deref().is_some_and(|l| user_key < l) {
            return Ok(());
        }
        // (user_key, 0, Delete) is the largest internal key of user_key: land on the last
        // entry of any key <= user_key.
        self.seek_buf.clear();
        append_internal_key(&mut self.seek_buf, user_key, 0, ValueKind::Delete);
        let r = self.inner.seek_for_prev(&self.seek_buf);
        let r = r.and_then(|()| self.find_prev_user_entry());
        self.guard(r)
    }

    /// Move to the next live key. Does nothing when not valid.
    #[allow(
        clippy::should_implement_trait,
        reason = "a cursor step that can fail, not an iterator; `Entries` is the Iterator"
    )]
    pub fn next(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        let r = self.next_inner();
        self.guard(r)
    }

    /// Move to the previous live key. Does nothing when not valid.
    pub fn prev(&mut self) -> Result<()> {
        if !self.valid {
            return Ok(());
        }
        let r = self.prev_inner();
        self.guard(r)
    }

    fn guard(&mut self, r: Result<()>) -> Result<()> {
        if r.is_err() {
            self.valid = false;
        }
        r
    }

    /// Put the inner iterator on the last entry below the upper bound (or the last entry).
    fn position_before_upper(&mut self) -> Result<()> {
        let Some(u) = &self.upper else {
            return self.inner.seek_to_last();
        };
        // (u, MAX_SEQNO, FOR_SEEK) is the smallest internal key of u.
        self.seek_buf.clear();
        append_internal_key(&mut self.seek_buf, u, MAX_SEQNO, ValueKind::FOR_SEEK);
        self.inner.seek(&self.seek_buf)?;
        if self.inner.valid() {
            self.inner.prev()
        } else {
            self.inner.seek_to_last()
        }
    }

    fn next_inner(&mut self) -> Result<()> {
        if self.dir == Direction::Backward {
            // The inner iterator is just before the entries of key() (or off the start, when
            // key() is the first key of all); saved_key holds key(), to be skipped.
            self.dir = Direction::Forward;
            if self.inner.valid() {
                self.inner.next()?;
            } else {
                self.inner.seek_to_first()?;
            }
        } else {
            self.saved_key.clear();
            self.saved_key.extend_from_slice(user_key(self.inner.key()));
            self.inner.next()?;
        }
        self.find_next_user_entry(true)
    }

    fn prev_inner(&mut self) -> Result<()> {
        if self.dir == Direction::Forward {
            // The inner iterator is on the current entry: step back past every entry of this
            // user key so the backward scan below starts on the previous key.
            self.saved_key.clear();
            self.saved_key.extend_from_slice(user_key(self.inner.key()));
            loop {
                self.inner.prev()?;
                if !self.inner.valid() {
                    self.valid = false;
                    return Ok(());
                }
                if user_key(self.inner.key()) < self.saved_key.as_slice() {
                    break;
                }
            }
            self.dir = Direction::Backward;
        }
        self.find_prev_user_entry()
    }

    /// Forward: from the inner position, find the first entry to show. With `skipping`,
    /// entries of user keys `<= saved_key` are hidden (already shown or deleted).
    fn find_next_user_entry(&mut self, mut skipping: bool) -> Result<()> {
        debug_assert_eq!(self.dir, Direction::Forward);
        while self.inner.valid() {
            let p = parse(self.inner.key())?;
            if self.upper.as_deref().is_some_and(|u| p.user_key >= u) {
                break;
            }
            if p.seq <= self.snapshot {
                match p.kind {
                    // A range tombstone never reaches an iterator; read as a delete.
                    ValueKind::Delete | ValueKind::RangeDelete => {
                        // Hide every older entry of this key.
                        if !skipping || self.saved_key.as_slice() != p.user_key {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(p.user_key);
                        }
                        skipping = true;
                    }
                    ValueKind::Value | ValueKind::ValuePointer => {
                        let hidden = skipping
                            && p.user_key.cmp(self.saved_key.as_slice()) != Ordering::Greater;
                        if !hidden {
                            self.kind = p.kind;
                            self.valid = true;
                            return Ok(());
                        }
                    }
                }
            }
            self.inner.next()?;
        }
        self.valid = false;
        Ok(())
    }

    /// Backward: from the inner position, walk back over the versions of one user key
    /// (oldest first) keeping the newest visible one, and stop at the first entry of an
    /// earlier key once a live version is held. Leaves the inner iterator before the
    /// entries of the key shown.
    fn find_prev_user_entry(&mut self) -> Result<()> {
        debug_assert_eq!(self.dir, Direction::Backward);
        let mut live: Option<ValueKind> = None;
        while self.inner.valid() {
            let p = parse(self.inner.key())?;
            if self.lower.as_deref().is_some_and(|l| p.user_key < l) {
                break;
            }
            if p.seq <= self.snapshot {
                if live.is_some() && p.user_key < self.saved_key.as_slice() {
                    break;
                }
                match p.kind {
                    ValueKind::Delete => live = None,
                    kind => {
                        live = Some(kind);
                        if self.saved_key.as_slice() != p.user_key {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(p.user_key);
                        }
                        let v = self.inner.value();
                        // Do not pin a huge buffer after one big value went by.
                        if self.saved_value.capacity() > v.len() + (1 << 20) {
                            self.saved_value = Vec::new();
                        }
                        self.saved_value.clear();
                        self.saved_value.extend_from_slice(v);
                    }
                }
            }
            self.inner.prev()?;
        }
        match live {
            Some(kind) => {
                self.kind = kind;
                self.valid = true;
            }
            None => self.valid = false,
        }
        Ok(())
    }
}

/// A double-ended Rust iterator over `(user key, value, kind)` built from two cursors over
/// independent inner iterators of the same data ([`TwoEnded`]: one moving forward from the
/// first key, one backward from the last; it ends when they meet).
pub type Entries<I> = TwoEnded<DbIter<I>>;

/// One item of [`Entries`]: user key, stored value bytes, and how to read them.
pub type EntryItem = Result<(Vec<u8>, Vec<u8>, ValueKind)>;

impl<I: InternalIterator> TwoEnded<DbIter<I>> {
    /// `front_inner` and `back_inner` must iterate the same entries (the same memtables and
    /// tables); both are viewed with `opts`.
    pub fn new(front_inner: I, back_inner: I, opts: DbIterOptions) -> Self {
        TwoEnded::from_cursors(
            DbIter::new(front_inner, opts.clone()),
            DbIter::new(back_inner, opts),
        )
    }
}

impl<I: InternalIterator> EndCursor for DbIter<I> {
    type Item = (Vec<u8>, Vec<u8>, ValueKind);
    fn seek_to_first(&mut self) -> Result<()> {
        DbIter::seek_to_first(self)
    }
    fn seek_to_last(&mut self) -> Result<()> {
        DbIter::seek_to_last(self)
    }
    fn next(&mut self) -> Result<()> {
        DbIter::next(self)
    }
    fn prev(&mut self) -> Result<()> {
        DbIter::prev(self)
    }
    fn valid(&self) -> bool {
        DbIter::valid(self)
    }
    fn key(&self) -> &[u8] {
        DbIter::key(self)
    }
    fn item(&self) -> Self::Item {
        (self.key().to_vec(), self.value().to_vec(), self.kind())
    }
}

#[cfg(test)]
#[path = "db_iter_tests.rs"]
mod tests;
