//! One iterator over a level of table files whose key ranges are sorted and disjoint.
//!
//! Only one file is open at a time, and only when an entry of it is needed: a seek finds
//! its file by binary search over the files' `largest` (or, backward, `smallest`) internal
//! keys, and stepping off the end of a file opens its neighbour. A scan of a level with a
//! thousand files thus opens the files it touches, not the thousand.
//!
//! Not thread-safe to share; it is `Send` so a scan can move between threads.

use std::cmp::Ordering;
use std::sync::Arc;

use super::InternalIterator;
use crate::Result;
use crate::key::compare_internal;
use crate::version::FileMeta;

/// Opens an iterator over one table file. Shared by every iterator over the level.
pub type FileOpener = Arc<dyn Fn(&FileMeta) -> Result<Box<dyn InternalIterator>> + Send + Sync>;

/// An [`InternalIterator`] over the concatenation of `files`, opened lazily.
///
/// An error from the opener or from a file's iterator is returned from the call that hit it
/// and leaves the iterator not valid.
pub struct ConcatIterator {
    files: Vec<Arc<FileMeta>>,
    opener: FileOpener,
    /// The open file's index in `files` and its iterator. `None` when not positioned.
    current: Option<(usize, Box<dyn InternalIterator>)>,
}

impl ConcatIterator {
    /// Iterate over `files`, which must be sorted by smallest key with disjoint internal-key
    /// ranges (a level of a leveled tree). The result is not positioned until a seek.
    pub fn new(files: Vec<Arc<FileMeta>>, opener: FileOpener) -> ConcatIterator {
        ConcatIterator {
            files,
            opener,
            current: None,
        }
    }

    /// The number of the file currently open, if any (for tests and statistics).
    pub fn current_file(&self) -> Option<u64> {
        self.current
            .as_ref()
            .and_then(|(i, _)| self.files.get(*i))
            .map(|f| f.number)
    }

    /// Make file `index` the open one (reusing it when it already is) and return its iterator.
    fn open(&mut self, index: usize) -> Result<Option<&mut Box<dyn InternalIterator>>> {
        let Some(meta) = self.files.get(index) else {
            self.current = None;
            return Ok(None);
        };
        if self.current.as_ref().is_none_or(|(i, _)| *i != index) {
            self.current = None;
            let it = (self.opener)(meta)?;
            self.current = Some((index, it));
        }
        Ok(self.current.as_mut().map(|(_, it)| it))
    }

    /// While the open file has no entry at the cursor, move to the start of the next file.
    fn skip_forward(&mut self) -> Result<()> {
        while let Some((i, it)) = &self.current {
            if it.valid() {
                return Ok(());
            }
            let next = i + 1;
            if let Some(it) = self.open(next)? {
                it.seek_to_first()?;
            }
        }
        Ok(())
    }

    /// While the open file has no entry at the cursor, move to the end of the previous file.
    fn skip_backward(&mut self) -> Result<()> {
        while let Some((i, it)) = &self.current {
            if it.valid() {
                return Ok(());
            }
            let Some(prev) = i.checked_sub(1) else {
                self.current = None;
                return Ok(());
            };
            if let Some(it) = self.open(prev)? {
                it.seek_to_last()?;
            }
        }
        Ok(())
    }

    /// Clear the position when `r` is an error, so a failed iterator is never valid.
    fn guard(&mut self, r: Result<()>) -> Result<()> {
        if r.is_err() {
            self.current = None;
        }
        r
    }

    fn seek_inner(&mut self, target: &[u8]) -> Result<()> {
        // The first file that can hold a key >= target is the first whose largest is >= it.
        let i = self
            .files
            .partition_point(|f| compare_internal(&f.largest, target) == Ordering::Less);
        if let Some(it) = self.open(i)? {
            it.seek(target)?;
        }
        self.skip_forward()
    }

    fn seek_for_prev_inner(&mut self, target: &[u8]) -> Result<()> {
        // The last file that can hold a key <= target is the last whose smallest is <= it.
        let n = self
            .files
            .partition_point(|f| compare_internal(&f.smallest, target) != Ordering::Greater);
        let Some(i) = n.checked_sub(1) else {
            self.current = None;
            return Ok(());
        };
        if let Some(it) = self.open(i)? {
            it.seek_for_prev(target)?;
        }
        self.skip_backward()
    }

    fn step(&mut self, forward: bool) -> Result<()> {
        let Some((_, it)) = self.current.as_mut() else {
            return Ok(());
        };
        if !it.valid() {
            return Ok(());
        }
        if forward {
            it.next()?;
            self.skip_forward()
        } else {
            it.prev()?;
            self.skip_backward()
        }
    }
}

impl InternalIterator for ConcatIterator {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|(_, it)| it.valid())
    }

    fn seek_to_first(&mut self) -> Result<()> {
        let r = match self.open(0) {
            Ok(Some(it)) => it.seek_to_first().and_then(|()| self.skip_forward()),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        self.guard(r)
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let last = self.files.len().wrapping_sub(1);
        let r = match self.open(last) {
            Ok(Some(it)) => it.seek_to_last().and_then(|()| self.skip_backward()),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        self.guard(r)
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let r = self.seek_inner(target);
        self.guard(r)
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        let r = self.seek_for_prev_inner(target);
        self.guard(r)
    }

    /// Moves to the next entry; does nothing when not valid.
    fn next(&mut self) -> Result<()> {
        let r = self.step(true);
        self.guard(r)
    }

    /// Moves to the previous entry; does nothing when not valid.
    fn prev(&mut self) -> Result<()> {
        let r = self.step(false);
        self.guard(r)
    }

    fn key(&self) -> &[u8] {
        match &self.current {
            Some((_, it)) if it.valid() => it.key(),
            _ => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match &self.current {
            Some((_, it)) if it.valid() => it.value(),
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

    use super::*;
    use crate::iter::VecIter;
    use crate::iter::testutil::{Rng, cut_into_runs, random_internal_entries};

    type Run = Vec<(Vec<u8>, Vec<u8>)>;

    /// A level made of `runs`, and a counter of how many times a file was opened.
    fn level(runs: Vec<Run>, fail_file: Option<u64>) -> (ConcatIterator, Arc<AtomicUsize>) {
        let files: Vec<Arc<FileMeta>> = runs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                Arc::new(FileMeta {
                    number: i as u64 + 1,
                    size: 0,
                    smallest: r.first().map(|e| e.0.clone()).unwrap_or_default(),
                    largest: r.last().map(|e| e.0.clone()).unwrap_or_default(),
                    smallest_seq: 0,
                    largest_seq: 0,
                    entries: r.len() as u64,
                    tombstones: 0,
                    filter: Default::default(),
                })
            })
            .collect();
        let opens = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&opens);
        let runs = Arc::new(runs);
        let opener: FileOpener = Arc::new(move |f: &FileMeta| {
            counter.fetch_add(1, AtomicOrdering::SeqCst);
            if Some(f.number) == fail_file {
                return Err(crate::Error::corruption(
                    format!("{:06}.sst", f.number),
                    0,
                    "bad footer magic",
                ));
            }
            let run = runs.get(f.number as usize - 1).cloned().unwrap_or_default();
            Ok(Box::new(VecIter::new(run)) as Box<dyn InternalIterator>)
        });
        (ConcatIterator::new(files, opener), opens)
    }

    #[test]
    fn empty_level() {
        let (mut c, opens) = level(Vec::new(), None);
        c.seek_to_first().unwrap();
        assert!(!c.valid());
        c.seek_to_last().unwrap();
        c.seek(b"x\0\0\0\0\0\0\0\0").unwrap();
        c.seek_for_prev(b"x\0\0\0\0\0\0\0\0").unwrap();
        c.next().unwrap();
        c.prev().unwrap();
        assert!(!c.valid());
        assert_eq!(opens.load(AtomicOrdering::SeqCst), 0);
    }

    #[test]
    fn opens_only_what_it_needs() {
        let mut rng = Rng::new(3);
        let all = random_internal_entries(&mut rng, 200);
        let runs = cut_into_runs(&mut rng, &all, 10);
        let n_files = runs.len();
        assert!(n_files > 3);
        let (mut c, opens) = level(runs.clone(), None);

        // A seek into the middle opens exactly the file holding the target.
        let target = runs[2][0].0.clone();
        c.seek(&target).unwrap();
        assert_eq!(c.key(), target.as_slice());
        assert_eq!(c.current_file(), Some(3));
        assert_eq!(opens.load(AtomicOrdering::SeqCst), 1);

        // Stepping back across the edge opens the previous file.
        c.prev().unwrap();
        assert_eq!(c.key(), runs[1].last().unwrap().0.as_slice());
        assert_eq!(c.current_file(), Some(2));
        c.next().unwrap();
        assert_eq!(c.key(), target.as_slice());
        assert_eq!(opens.load(AtomicOrdering::SeqCst), 3);

        // A full scan opens each file once more at most.
        c.seek_to_first().unwrap();
        let mut seen = Vec::new();
        while c.valid() {
            seen.push((c.key().to_vec(), c.value().to_vec()));
            c.next().unwrap();
        }
        assert_eq!(seen, all);
        assert!(opens.load(AtomicOrdering::SeqCst) <= 3 + n_files);
    }

    #[test]
    fn random_against_sorted_model() {
        for seed in 0..40u64 {
            let mut rng = Rng::new(seed);
            let n = rng.below(100) as usize;
            let all = random_internal_entries(&mut rng, n);
            let max_runs = 1 + rng.below(12) as usize;
            let runs = cut_into_runs(&mut rng, &all, max_runs);
            let (mut c, _) = level(runs, None);
            let keys: Vec<Vec<u8>> = all.iter().map(|e| e.0.clone()).collect();

            let mut bwd = Vec::new();
            c.seek_to_last().unwrap();
            while c.valid() {
                bwd.push(c.key().to_vec());
                c.prev().unwrap();
            }
            bwd.reverse();
            assert_eq!(bwd, keys);

            let mut pos: Option<usize> = None;
            for _ in 0..200 {
                match rng.below(6) {
                    0 | 1 if pos.is_some() => {
                        c.next().unwrap();
                        pos = pos.and_then(|p| (p + 1 < keys.len()).then_some(p + 1));
                    }
                    2 | 3 if pos.is_some() => {
                        c.prev().unwrap();
                        pos = pos.and_then(|p| p.checked_sub(1));
                    }
                    4 => {
                        let t = rng.probe_internal_key(&keys);
                        c.seek(&t).unwrap();
                        let i = keys.partition_point(|k| compare_internal(k, &t).is_lt());
                        pos = (i < keys.len()).then_some(i);
                    }
                    _ => {
                        let t = rng.probe_internal_key(&keys);
                        c.seek_for_prev(&t).unwrap();
                        let i = keys.partition_point(|k| compare_internal(k, &t).is_le());
                        pos = i.checked_sub(1);
                    }
                }
                assert_eq!(
                    c.valid().then(|| c.key().to_vec()),
                    pos.map(|p| keys[p].clone()),
                    "seed {seed}"
                );
            }
        }
    }

    #[test]
    fn opener_error_propagates() {
        let mut rng = Rng::new(11);
        let all = random_internal_entries(&mut rng, 100);
        let runs = cut_into_runs(&mut rng, &all, 5);
        assert!(runs.len() >= 3);
        let (mut c, _) = level(runs, Some(2));
        c.seek_to_first().unwrap();
        let mut err = None;
        while c.valid() {
            if let Err(e) = c.next() {
                err = Some(e);
                break;
            }
        }
        let e = err.expect("scanning into file 2 must fail");
        assert!(e.to_string().contains("000002.sst"), "{e}");
        assert!(!c.valid());
        // The level stays usable: seeking to the last file works.
        c.seek_to_last().unwrap();
        assert!(c.valid());
    }
}
