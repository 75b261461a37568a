//! Output cutting by overlap with the level below the output (LevelDB's
//! `Compaction::ShouldStopBefore`): a compaction into level `n` ends its current output file
//! before a key once the grandparent files (level `n + 1`) that the output has passed since
//! its start hold more than the limit (LevelDB: `kMaxGrandParentOverlapBytes`, 10 target
//! files). Without it one output file can span a wide stretch of the level below, and the
//! compaction that later pushes it down rewrites all of that stretch.
//!
//! The merge ([`crate::compaction::merge_into_tables`]) cuts files by size only, so the cut
//! is made from outside: [`OverlapCut`] wraps the merged input and reports itself exhausted
//! before the key where a new output must start; the layout finishes that merge call (which
//! closes the file) and calls the merge again for the rest ([`OverlapCut::resume`]). Cuts
//! fall only between user keys, so a key's versions stay in one file.

use std::sync::Arc;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::user_key;
use crate::version::FileMeta;

/// Counts the grandparent bytes an output has passed (see the module documentation).
#[derive(Debug)]
pub struct GrandparentOverlap {
    /// Files of the level below the output that meet the compaction's range, in key order.
    grandparents: Vec<Arc<FileMeta>>,
    /// The first grandparent not yet passed.
    index: usize,
    /// Bytes of the grandparents passed since the current output began.
    overlapped: u64,
    /// Whether any key was seen (the files before the first key are not the output's).
    seen_key: bool,
    /// More overlap than this starts a new output.
    limit: u64,
}

impl GrandparentOverlap {
    /// A counter over `grandparents` (sorted, disjoint) that cuts past `limit` bytes.
    pub fn new(grandparents: Vec<Arc<FileMeta>>, limit: u64) -> GrandparentOverlap {
        GrandparentOverlap {
            grandparents,
            index: 0,
            overlapped: 0,
            seen_key: false,
            limit,
        }
    }

    /// Whether a new output must start before `user_key` (each user key is asked once, in
    /// order). As LevelDB's `ShouldStopBefore`: the grandparents wholly before the key are
    /// passed, and once they hold more than the limit the count starts over at this key.
    pub fn should_stop_before(&mut self, user_key: &[u8]) -> bool {
        while let Some(g) = self.grandparents.get(self.index)
            && g.largest_user_key() < user_key
        {
            if self.seen_key {
                self.overlapped += g.size;
            }
            self.index += 1;
        }
        self.seen_key = true;
        if self.overlapped > self.limit {
            self.overlapped = 0;
            true
        } else {
            false
        }
    }
}

/// A forward-only view of a compaction's merged input that stops (is not valid) before the
/// first entry of a user key where [`GrandparentOverlap`] starts a new output.
pub struct OverlapCut<I> {
    inner: I,
    overlap: GrandparentOverlap,
    started: bool,
    stopped: bool,
    /// The user key last asked about (its older versions pass without asking).
    last_user_key: Vec<u8>,
}

impl<I: InternalIterator> OverlapCut<I> {
    /// `inner` cut by `overlap`.
    pub fn new(inner: I, overlap: GrandparentOverlap) -> OverlapCut<I> {
        OverlapCut {
            inner,
            overlap,
            started: false,
            stopped: false,
            last_user_key: Vec::new(),
        }
    }

    /// Continue after a stop: the entry it stopped before starts the next output. Returns
    /// false when the input is exhausted.
    pub fn resume(&mut self) -> bool {
        if !self.inner.valid() {
            return false;
        }
        self.stopped = false;
        true
    }

    /// Ask about the current entry's user key if it is a new one.
    fn check(&mut self) {
        if !self.inner.valid() {
            return;
        }
        let k = user_key(self.inner.key());
        if self.started && k == self.last_user_key.as_slice() {
            return;
        }
        self.started = true;
        self.stopped = self.overlap.should_stop_before(k);
        self.last_user_key.clear();
        self.last_user_key.extend_from_slice(k);
    }
}

impl<I: InternalIterator> InternalIterator for OverlapCut<I> {
    fn valid(&self) -> bool {
        !self.stopped && self.inner.valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        // The merge calls this at the start of every stretch; only the first one positions.
        if !self.started {
            self.inner.seek_to_first()?;
            self.check();
        }
        Ok(())
    }
    fn seek_to_last(&mut self) -> Result<()> {
        Err(crate::Error::Unsupported(
            "overlap cut iterators only move forward".into(),
        ))
    }
    fn seek(&mut self, _target: &[u8]) -> Result<()> {
        Err(crate::Error::Unsupported(
            "overlap cut iterators only move forward".into(),
        ))
    }
    fn next(&mut self) -> Result<()> {
        self.inner.next()?;
        self.check();
        Ok(())
    }
    fn prev(&mut self) -> Result<()> {
        Err(crate::Error::Unsupported(
            "overlap cut iterators only move forward".into(),
        ))
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::VecIter;
    use crate::key::{ValueKind, make_internal_key};
    use crate::version::text;

    /// Entries for `keys` (two versions of each), run through the cut as the merge runs it:
    /// one stretch per call, each read until the cut stops. Returns the user keys of each
    /// stretch.
    fn stretches(keys: &[&str], grandparents: &str, limit: u64) -> Vec<Vec<String>> {
        let mut entries = Vec::new();
        for k in keys {
            for seq in [9, 3] {
                entries.push((
                    make_internal_key(k.as_bytes(), seq, ValueKind::Value),
                    b"v".to_vec(),
                ));
            }
        }
        let v = text::parse(grandparents).unwrap();
        let gp = GrandparentOverlap::new(v.level(2).to_vec(), limit);
        let mut cut = OverlapCut::new(VecIter::new(entries), gp);
        let mut out = Vec::new();
        loop {
            cut.seek_to_first().unwrap();
            let mut stretch: Vec<String> = Vec::new();
            while cut.valid() {
                let k = String::from_utf8(user_key(cut.key()).to_vec()).unwrap();
                if stretch.last() != Some(&k) {
                    stretch.push(k);
                }
                cut.next().unwrap();
            }
            out.push(stretch);
            if !cut.resume() {
                break;
            }
        }
        out
    }

    #[test]
    fn an_output_is_cut_once_it_passes_more_than_the_limit_of_grandparents() {
        // Five 8M grandparent files; the limit is 20M: an output may pass two and a half.
        let gp = "L2: 1:b-c/8M 2:d-e/8M 3:f-g/8M 4:h-i/8M 5:j-k/8M";
        let keys = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"];
        // From "a": passing files 1, 2 (16M) is fine; at "h" file 3 is passed too (24M): a
        // new output starts at "h". From there files 4 and 5 (16M) by "l": no cut.
        assert_eq!(
            stretches(&keys, gp, 20 << 20),
            [
                vec!["a", "b", "c", "d", "e", "f", "g"],
                vec!["h", "i", "j", "k", "l"]
            ]
        );
        // A limit of 10M cuts after every second file passed.
        assert_eq!(
            stretches(&keys, gp, 10 << 20),
            [
                vec!["a", "b", "c", "d", "e"],
                vec!["f", "g", "h", "i"],
                vec!["j", "k", "l"]
            ]
        );
        // Files wholly before the first key are not the output's.
        assert_eq!(
            stretches(&["h", "i", "j"], gp, 10 << 20),
            [vec!["h", "i", "j"]]
        );
        // No limit in effect: one stretch.
        assert_eq!(stretches(&keys, gp, u64::MAX).len(), 1);
        // Nothing to cut.
        assert_eq!(stretches(&[], gp, 1), [Vec::<String>::new()]);
    }
}
