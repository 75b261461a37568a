//! Cutting a compaction's output from outside the merge. The merge
//! ([`crate::compaction::merge_into_tables`]) cuts files by size only; a layout that must
//! also end an output before certain keys (LevelDB's grandparent overlap, FLSM's guards)
//! wraps the merged input in a [`Cut`], which reports itself exhausted before the first
//! entry of a user key where its [`CutRule`] starts a new output. [`merge_cut`] finishes
//! that merge call (which closes the file) and calls the merge again for the rest. Cuts
//! fall only between user keys, so a key's versions stay in one output.
//!
//! The layouts differ only in the rule: `leveled/cut.rs` (overlap with the level below
//! the output) and `flsm/mod.rs` (the output level's guards).

use crate::compaction::{CompactionContext, MergeSpec, merge_into_tables};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::user_key;
use crate::version::FileMeta;

/// Where a layout ends one output and starts the next.
pub trait CutRule: Send {
    /// An output starts at `user_key`: the input's first key, and each key a stop was
    /// made before.
    fn start(&mut self, user_key: &[u8]);
    /// Whether a new output must start before `user_key`, a user key after the current
    /// output's first (each asked at most once, in order, until it is a `start`).
    fn stop_before(&mut self, user_key: &[u8]) -> bool;
}

/// A forward-only view of a compaction's merged input that stops (is not valid) before the
/// first entry of a user key where its rule starts a new output.
pub struct Cut<I, R> {
    inner: I,
    rule: R,
    started: bool,
    stopped: bool,
    /// The user key last let through (its older versions pass without asking).
    last_user_key: Vec<u8>,
}

impl<I: InternalIterator, R: CutRule> Cut<I, R> {
    /// `inner` cut by `rule`.
    pub fn new(inner: I, rule: R) -> Cut<I, R> {
        Cut {
            inner,
            rule,
            started: false,
            stopped: false,
            last_user_key: Vec::new(),
        }
    }

    /// The rule, for what it found on the way.
    pub fn rule(&self) -> &R {
        &self.rule
    }

    /// Continue after a stop: the entry it stopped before starts the next output. Returns
    /// false when the input is exhausted.
    pub fn resume(&mut self) -> bool {
        if !self.inner.valid() {
            return false;
        }
        self.stopped = false;
        self.start_output();
        true
    }

    fn start_output(&mut self) {
        let k = user_key(self.inner.key());
        self.rule.start(k);
        self.last_user_key.clear();
        self.last_user_key.extend_from_slice(k);
    }

    /// After moving: stop before a new user key where the rule starts another output.
    fn check(&mut self) {
        if !self.inner.valid() {
            return;
        }
        let k = user_key(self.inner.key());
        if k == self.last_user_key.as_slice() {
            return;
        }
        if self.rule.stop_before(k) {
            self.stopped = true;
            return;
        }
        self.last_user_key.clear();
        self.last_user_key.extend_from_slice(k);
    }
}

impl<I: InternalIterator, R: CutRule> InternalIterator for Cut<I, R> {
    fn valid(&self) -> bool {
        !self.stopped && self.inner.valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        // The merge calls this at the start of every output; only the first one positions.
        if !self.started {
            self.started = true;
            self.inner.seek_to_first()?;
            if self.inner.valid() {
                self.start_output();
            }
        }
        Ok(())
    }
    fn seek_to_last(&mut self) -> Result<()> {
        Err(crate::Error::Unsupported(
            "cut iterators only move forward".into(),
        ))
    }
    fn seek(&mut self, _target: &[u8]) -> Result<()> {
        Err(crate::Error::Unsupported(
            "cut iterators only move forward".into(),
        ))
    }
    fn next(&mut self) -> Result<()> {
        self.inner.next()?;
        self.check();
        Ok(())
    }
    fn prev(&mut self) -> Result<()> {
        Err(crate::Error::Unsupported(
            "cut iterators only move forward".into(),
        ))
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}

/// Merge all of `cut` into tables by `spec`, one merge call per stretch between cuts;
/// returns the outputs in key order.
pub fn merge_cut<I: InternalIterator, R: CutRule>(
    cut: &mut Cut<I, R>,
    spec: &MergeSpec<'_>,
    ctx: &CompactionContext<'_>,
) -> Result<Vec<FileMeta>> {
    let mut all = Vec::new();
    loop {
        let (outputs, _stats) = merge_into_tables(cut, spec, ctx)?;
        all.extend(outputs);
        if !cut.resume() {
            return Ok(all);
        }
    }
}
