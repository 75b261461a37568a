//! The engine's side of the compaction filter ([`crate::options::filter`]): what the merge
//! needs to run one, and the hook the merge loop is compiled with.
//!
//! The merge loop is generic over [`EntryHook`]: without a filter it is compiled with
//! [`NoFilter`], whose `ACTIVE` is false, so the per-entry check folds away and a store
//! without a filter pays one `Option` check per merge, none per entry.

use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::options::MAX_VALUE_SIZE;
use crate::options::filter::{CompactionFilter, Decision, FilterContext};
use crate::values::ValueStore;

/// What the engine gives a merge to run the store's compaction filter with.
#[derive(Clone, Copy)]
pub struct FilterHook<'a> {
    /// The filter.
    pub filter: &'a dyn CompactionFilter,
    /// The value placement: it turns a stored value into the user's value
    /// ([`ValueStore::resolve`]: the filter sees the real value, not a value-log pointer)
    /// and is told of every stored value the filter removed or replaced
    /// ([`ValueStore::filtered`]: a separated value becomes garbage).
    pub values: &'a dyn ValueStore,
}

/// What the merge does with the newest version of a key.
pub(crate) enum Verdict {
    /// Write it as it is.
    Keep,
    /// Remove the key.
    Remove,
    /// Write this inline value instead.
    Change(Vec<u8>),
}

/// A per-entry hook of the merge loop.
pub(crate) trait EntryHook {
    /// Whether [`EntryHook::decide`] is ever called: a constant, so the loop drops the check
    /// when false.
    const ACTIVE: bool;
    /// Decide about the newest version of `user_key`, a value of `kind` stored as `stored`,
    /// that no snapshot sees.
    fn decide(&mut self, user_key: &[u8], kind: ValueKind, stored: &[u8]) -> Result<Verdict>;
}

/// No filter: the loop never asks.
pub(crate) struct NoFilter;

impl EntryHook for NoFilter {
    const ACTIVE: bool = false;
    fn decide(&mut self, _: &[u8], _: ValueKind, _: &[u8]) -> Result<Verdict> {
        Ok(Verdict::Keep)
    }
}

/// The store's filter, for one merge.
pub(crate) struct Filtering<'a> {
    pub(crate) hook: FilterHook<'a>,
    pub(crate) context: FilterContext,
    /// Entries whose separated value could not be read, left unfiltered.
    pub(crate) unreadable: u64,
}

impl EntryHook for Filtering<'_> {
    const ACTIVE: bool = true;

    fn decide(&mut self, user_key: &[u8], kind: ValueKind, stored: &[u8]) -> Result<Verdict> {
        if !matches!(kind, ValueKind::Value | ValueKind::ValuePointer) {
            return Ok(Verdict::Keep);
        }
        // The merge cannot tell whether this entry is the newest of its key in the whole
        // tree: a newer version in a shallower level may shadow it, and then its value-log
        // record may be gone (collection relocated the live copy and dropped the segment).
        // Such a pointer cannot be read, and need not be: the filter is skipped and the
        // entry written as it was (a damaged newest one then fails reads as it did before,
        // and `verify` reports it).
        let value = match kind {
            ValueKind::ValuePointer => match self.hook.values.resolve(
                user_key,
                kind,
                stored,
                crate::env::ReadCause::Compaction,
                crate::values::CacheFill::Keep,
            ) {
                Ok(v) => v,
                Err(_) => {
                    self.unreadable += 1;
                    return Ok(Verdict::Keep);
                }
            },
            _ => crate::values::ValueBytes::Borrowed(stored),
        };
        let verdict = match self.hook.filter.filter(&self.context, user_key, &value) {
            Decision::Keep => return Ok(Verdict::Keep),
            Decision::Remove => Verdict::Remove,
            Decision::ChangeValue(v) => {
                if v.len() > MAX_VALUE_SIZE {
                    return Err(Error::InvalidArgument(format!(
                        "the {} changed a value to {} bytes, over the limit of {MAX_VALUE_SIZE}",
                        self.hook.filter.name(),
                        v.len()
                    )));
                }
                Verdict::Change(v)
            }
        };
        self.hook.values.filtered(kind, stored);
        Ok(verdict)
    }
}
