//! The iterator over one guarded level: guard ranges in key order, and within a range a
//! merge of every table the range holds.
//!
//! A table written before a guard inside its span was committed belongs to several ranges;
//! each range shows only its own keys (`[lo, hi)`), so such a table's entries appear once.

use std::sync::Arc;

use super::state::{Guarded, unit_index};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::iter::merging::MergingIterator;
use crate::key::{MAX_SEQNO, seek_key, user_key};
use crate::table::cache::TableCache;
use crate::table::format::TableRead;
use crate::version::Version;

/// See the module documentation.
pub struct GuardLevelIterator {
    version: Arc<Version>,
    level: usize,
    tables: Arc<TableCache>,
    read: TableRead,
    /// Ranges holding at least this many tables seek them on threads; 0 never.
    parallel_min: usize,
    /// The open range and its merged tables.
    unit: usize,
    cur: Option<Box<dyn InternalIterator>>,
    /// Whether `cur` is positioned on one of its range's own keys ([`Self::in_bounds`]),
    /// set by every move: `valid`, which a merging iterator above asks several times per
    /// step, reads it instead of comparing the key with both bounds each time.
    own: bool,
}

impl GuardLevelIterator {
    /// An unpositioned iterator over `level` of `version`. A range holding at least
    /// `parallel_min` tables (0: none) seeks them concurrently
    /// ([`MergingIterator::with_parallel_seeks`]).
    pub fn new(
        version: Arc<Version>,
        level: usize,
        tables: Arc<TableCache>,
        read: TableRead,
        parallel_min: usize,
    ) -> GuardLevelIterator {
        GuardLevelIterator {
            version,
            level,
            tables,
            read,
            parallel_min,
            unit: 0,
            cur: None,
            own: false,
        }
    }

    /// Open range `unit` unless it is open already (repeated seeks into one guard reuse its
    /// table iterators).
    fn reopen(&mut self, unit: usize) -> Result<()> {
        if self.cur.is_some() && self.unit == unit {
            return Ok(());
        }
        self.open(unit)
    }

    /// Open range `unit` (None when it holds no table).
    fn open(&mut self, unit: usize) -> Result<()> {
        self.unit = unit;
        self.cur = None;
        self.own = false;
        let files = self.version.unit_files(self.level, unit);
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::with_capacity(files.len());
        for f in files {
            children.push(self.tables.table(f.table_id())?.iter(self.read));
        }
        self.cur = match children.len() {
            0 => None,
            1 => children.pop(),
            n if self.parallel_min > 0 && n >= self.parallel_min => Some(Box::new(
                MergingIterator::new(children).with_parallel_seeks(),
            )),
            _ => Some(Box::new(MergingIterator::new(children))),
        };
        Ok(())
    }

    /// True when the open range is positioned on one of its own keys (computed; `own`
    /// holds it after each move).
    fn in_bounds(&self) -> bool {
        let Some(c) = &self.cur else {
            return false;
        };
        if !c.valid() {
            return false;
        }
        let (lo, hi) = self.version.unit_bounds(self.level, self.unit);
        let k = user_key(c.key());
        lo.is_none_or(|l| k >= l) && hi.is_none_or(|h| k < h)
    }

    /// [`Self::in_bounds`] after one step of the open range (`forward` or back) taken from
    /// an own key when `was_own`. Such a step lands on a user key at least (forward) or at
    /// most (back) the one it left, so only the bound it moves towards can be crossed and
    /// only that one is compared. (Were a corrupt table to yield keys out of order, a key
    /// past the other bound would pass as the range's own; the full check would end the
    /// range there instead: both are wrong answers to bad input, which the table's checks
    /// are there to catch.)
    fn own_after_step(&self, was_own: bool, forward: bool) -> bool {
        let Some(c) = self.cur.as_ref().filter(|_| was_own) else {
            return self.in_bounds();
        };
        if !c.valid() {
            return false;
        }
        let (lo, hi) = self.version.unit_bounds(self.level, self.unit);
        let k = user_key(c.key());
        if forward {
            hi.is_none_or(|h| k < h)
        } else {
            lo.is_none_or(|l| k >= l)
        }
    }

    /// Position at the first own key of the open range at or after `target` (or its start),
    /// moving to later ranges while there is none.
    fn forward_from(&mut self, target: Option<&[u8]>) -> Result<()> {
        let mut target = target;
        let version = Arc::clone(&self.version);
        loop {
            let (lo, _) = version.unit_bounds(self.level, self.unit);
            if let Some(c) = self.cur.as_mut() {
                match (target, lo) {
                    (Some(t), Some(l)) if user_key(t) >= l => c.seek(t)?,
                    (_, Some(l)) => c.seek(&seek_key(l, MAX_SEQNO))?,
                    (Some(t), None) => c.seek(t)?,
                    (None, None) => c.seek_to_first()?,
                }
                self.own = self.in_bounds();
                if self.own {
                    return Ok(());
                }
            }
            target = None;
            if self.unit + 1 >= self.version.unit_count(self.level) {
                self.cur = None;
                self.own = false;
                return Ok(());
            }
            self.open(self.unit + 1)?;
        }
    }

    /// Position at the last own key of the open range at or before `target` (or its end),
    /// moving to earlier ranges while there is none.
    fn backward_from(&mut self, target: Option<&[u8]>) -> Result<()> {
        let mut target = target;
        let version = Arc::clone(&self.version);
        loop {
            let (_, hi) = version.unit_bounds(self.level, self.unit);
            if let Some(c) = self.cur.as_mut() {
                match (target, hi) {
                    (Some(t), Some(h)) if user_key(t) < h => c.seek_for_prev(t)?,
                    (Some(t), None) => c.seek_for_prev(t)?,
                    (_, Some(h)) => {
                        c.seek(&seek_key(h, MAX_SEQNO))?;
                        if c.valid() {
                            c.prev()?;
                        } else {
                            c.seek_to_last()?;
                        }
                    }
                    (None, None) => c.seek_to_last()?,
                }
                self.own = self.in_bounds();
                if self.own {
                    return Ok(());
                }
            }
            target = None;
            if self.unit == 0 {
                self.cur = None;
                self.own = false;
                return Ok(());
            }
            self.open(self.unit - 1)?;
        }
    }

    fn fail<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.cur = None;
            self.own = false;
        }
        r
    }
}

impl InternalIterator for GuardLevelIterator {
    fn valid(&self) -> bool {
        debug_assert_eq!(self.own, self.in_bounds());
        self.own
    }

    fn seek_to_first(&mut self) -> Result<()> {
        let r = self.open(0).and_then(|()| self.forward_from(None));
        self.fail(r)
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let last = self.version.unit_count(self.level) - 1;
        let r = self.open(last).and_then(|()| self.backward_from(None));
        self.fail(r)
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let u = unit_index(self.version.guards(self.level), user_key(target));
        let r = self
            .reopen(u)
            .and_then(|()| self.forward_from(Some(target)));
        self.fail(r)
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let u = unit_index(self.version.guards(self.level), user_key(target));
        let r = self
            .reopen(u)
            .and_then(|()| self.backward_from(Some(target)));
        self.fail(r)
    }

    fn next(&mut self) -> Result<()> {
        let r = (|| {
            let was_own = self.own;
            if let Some(c) = self.cur.as_mut() {
                c.next()?;
            }
            self.own = self.own_after_step(was_own, true);
            if self.own {
                return Ok(());
            }
            if self.unit + 1 >= self.version.unit_count(self.level) {
                self.cur = None;
                return Ok(());
            }
            self.open(self.unit + 1)?;
            self.forward_from(None)
        })();
        self.fail(r)
    }

    fn prev(&mut self) -> Result<()> {
        let r = (|| {
            let was_own = self.own;
            if let Some(c) = self.cur.as_mut() {
                c.prev()?;
            }
            self.own = self.own_after_step(was_own, false);
            if self.own {
                return Ok(());
            }
            if self.unit == 0 {
                self.cur = None;
                return Ok(());
            }
            self.open(self.unit - 1)?;
            self.backward_from(None)
        })();
        self.fail(r)
    }

    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| c.key())
    }

    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |c| c.value())
    }
}
