//! Versions: the set of table files that make up the store at one point in time.
//!
//! A [`Version`] is immutable. Flushes and compactions describe their result as a
//! [`VersionEdit`]; applying an edit to the current version yields the next one. Readers and
//! iterators hold an `Arc<Version>`, so the files they read cannot be deleted under them:
//! [`set::VersionSet`] deletes a file only when no live version lists it.

mod missing;
pub mod set;
#[cfg(test)]
pub(crate) mod text;

use std::any::Any;
use std::sync::Arc;

pub use crate::manifest::{FileMeta, PinnedFilter};
pub use missing::{blame_dropped_tail, check_tables_present};

use crate::key::{SeqNo, compare_internal};
use crate::manifest::{Axis, AxisRecord, VersionEdit};
use crate::rangedel::RangeDels;

/// What a layout keeps beside the files of a version (the FLSM layout's guard keys; later
/// trie containers or DTable ranges), opaque to the engine and to [`Version`]. It is
/// persisted as the layout's [`AxisRecord`]s and rebuilt by replaying them.
///
/// Each version holds its own state, shared with the versions made from it while they
/// leave it unchanged. A layout reads it back with [`LayoutState::as_any`].
pub trait LayoutState: Send + Sync + std::fmt::Debug {
    /// The state of the next version: this one with the layout `records` of an edit
    /// applied (in the edit's order), given that version's files by level, sorted as
    /// [`Version::level`] returns them. Called for every edit, also one without records,
    /// so state derived from the files (a guard's files) stays current. A record that does
    /// not fit is an error describing it.
    fn apply(
        self: Arc<Self>,
        records: &[&AxisRecord],
        levels: &[Vec<Arc<FileMeta>>],
    ) -> Result<Arc<dyn LayoutState>, String>;

    /// Records that rebuild this state from nothing (the first edit of a new MANIFEST).
    fn snapshot(&self, out: &mut Vec<AxisRecord>);

    /// The concrete state, for the layout that made it.
    fn as_any(&self) -> &dyn Any;
}

/// The state of a layout that keeps nothing beside its files (the leveled layout): any
/// layout record is an error.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoLayoutState;

impl LayoutState for NoLayoutState {
    fn apply(
        self: Arc<Self>,
        records: &[&AxisRecord],
        _levels: &[Vec<Arc<FileMeta>>],
    ) -> Result<Arc<dyn LayoutState>, String> {
        match records.first() {
            None => Ok(self),
            Some(r) => Err(format!(
                "a layout record of kind {} for a layout that keeps no state",
                r.kind
            )),
        }
    }

    fn snapshot(&self, _out: &mut Vec<AxisRecord>) {}

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The table files of the store, by level.
///
/// Level 0 is ordered newest first (by largest sequence number): its files may overlap and a
/// lookup must meet newer data first. Deeper levels are ordered by smallest key; whether
/// their files may overlap is the layout's business.
#[derive(Clone, Debug)]
pub struct Version {
    levels: Vec<Vec<Arc<FileMeta>>>,
    /// The layout's own state (see [`LayoutState`]).
    layout: Arc<dyn LayoutState>,
    /// The flushed range tombstones (MANIFEST tags 21 and 22; [`crate::rangedel`]).
    range_dels: Arc<RangeDels>,
}

impl Version {
    /// An empty version with `num_levels` levels, for a layout that keeps no state.
    pub fn new(num_levels: usize) -> Version {
        Version::with_layout(num_levels, Arc::new(NoLayoutState))
    }

    /// An empty version with `num_levels` levels and the layout's empty `state`.
    pub fn with_layout(num_levels: usize, state: Arc<dyn LayoutState>) -> Version {
        Version {
            levels: vec![Vec::new(); num_levels],
            layout: state,
            range_dels: Arc::default(),
        }
    }

    /// The flushed range tombstones.
    pub fn range_dels(&self) -> &Arc<RangeDels> {
        &self.range_dels
    }

    /// The flushed range tombstones that can no longer hide anything: no file holds an
    /// entry in its range older than it. (Every entry older than a flushed tombstone is in
    /// a file: memtables flush oldest first, so the tombstone's own memtable and every older
    /// one are in the files already.) An edit that drops them leaves every read the same.
    pub fn obsolete_range_dels(&self) -> Vec<SeqNo> {
        self.range_dels
            .tombstones()
            .iter()
            .filter(|t| {
                !self.files().any(|(_, f)| {
                    f.smallest_seq < t.seq
                        && f.smallest_user_key() < t.end.as_slice()
                        && f.largest_user_key() >= t.start.as_slice()
                })
            })
            .map(|t| t.seq)
            .collect()
    }

    /// The layout's state.
    pub fn layout_state(&self) -> &dyn LayoutState {
        self.layout.as_ref()
    }

    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The files of `level` (empty for a level beyond the last).
    pub fn level(&self, level: usize) -> &[Arc<FileMeta>] {
        self.levels.get(level).map_or(&[], |l| l.as_slice())
    }

    /// Total bytes of the files of `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.level(level).iter().map(|f| f.size).sum()
    }

    /// Every file with its level.
    pub fn files(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(l, files)| files.iter().map(move |f| (l, f)))
    }

    /// Number of files in every level together.
    pub fn file_count(&self) -> usize {
        self.levels.iter().map(Vec::len).sum()
    }

    /// Files of `level` whose user-key range intersects `[lo, hi]` (open ends allowed).
    pub fn overlapping(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        self.level(level)
            .iter()
            .filter(|f| f.overlaps(lo, hi))
            .cloned()
            .collect()
    }

    /// The next version: this one with `edit` applied. Fails (with a description) when the
    /// edit does not fit this version: a deleted file that is absent, an added file that is
    /// already present, a level out of range.
    pub fn apply(&self, edit: &VersionEdit) -> Result<Version, String> {
        let mut levels = self.levels.clone();
        for &(level, number) in &edit.deleted_files {
            let files = levels
                .get_mut(level as usize)
                .ok_or_else(|| format!("edit deletes file {number} from missing level {level}"))?;
            let before = files.len();
            files.retain(|f| f.number != number);
            if files.len() == before {
                return Err(format!(
                    "edit deletes file {number} from level {level}, which does not hold it"
                ));
            }
        }
        for (level, meta) in &edit.new_files {
            let n = levels.len();
            let files = levels.get_mut(*level as usize).ok_or_else(|| {
                format!(
                    "edit adds file {} to level {level} but the store has {n} levels",
                    meta.number
                )
            })?;
            if files.iter().any(|f| f.number == meta.number) {
                return Err(format!(
                    "edit adds file {} to level {level} twice",
                    meta.number
                ));
            }
            files.push(Arc::new(meta.clone()));
        }
        let range_dels = if edit.range_dels.is_empty() && edit.dropped_range_dels.is_empty() {
            Arc::clone(&self.range_dels)
        } else {
            for seq in &edit.dropped_range_dels {
                if !self.range_dels.tombstones().iter().any(|t| t.seq == *seq) {
                    return Err(format!(
                        "edit drops range tombstone {seq}, which the version does not hold"
                    ));
                }
            }
            Arc::new(
                self.range_dels
                    .without(|t| edit.dropped_range_dels.contains(&t.seq))
                    .with(edit.range_dels.iter().cloned()),
            )
        };
        let mut v = Version {
            levels,
            layout: Arc::clone(&self.layout),
            range_dels,
        };
        v.sort();
        let records: Vec<&AxisRecord> = edit
            .records
            .iter()
            .filter(|r| r.axis == Axis::Layout)
            .collect();
        v.layout = Arc::clone(&self.layout).apply(&records, &v.levels)?;
        Ok(v)
    }

    fn sort(&mut self) {
        for (i, files) in self.levels.iter_mut().enumerate() {
            if i == 0 {
                files.sort_by(|a, b| {
                    b.largest_seq
                        .cmp(&a.largest_seq)
                        .then(b.number.cmp(&a.number))
                });
            } else {
                files.sort_by(|a, b| {
                    compare_internal(&a.smallest, &b.smallest).then(a.number.cmp(&b.number))
                });
            }
        }
    }

    /// An edit that rebuilds this version from nothing (the first record of a new MANIFEST).
    pub fn snapshot_edit(&self) -> VersionEdit {
        let mut edit = VersionEdit::default();
        for (level, f) in self.files() {
            edit.new_files.push((level as u32, (**f).clone()));
        }
        self.layout.snapshot(&mut edit.records);
        edit.range_dels = self.range_dels.tombstones().to_vec();
        edit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_adds_deletes_and_orders() {
        let v = text::parse("L0: 1:a-c@1-5 2:b-d@6-9\nL1: 4:m-p 3:a-f").unwrap();
        assert_eq!(
            v.level(0).iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![2, 1]
        );
        assert_eq!(
            v.level(1).iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![3, 4]
        );
        let mut e = VersionEdit::default();
        e.deleted_files.push((0, 1));
        e.new_files.push((1, text::file(9, "g", "h", 1 << 20)));
        let v2 = v.apply(&e).unwrap();
        assert_eq!(v2.level(0).len(), 1);
        assert_eq!(
            v2.level(1).iter().map(|f| f.number).collect::<Vec<_>>(),
            vec![3, 9, 4]
        );
        // the old version is untouched
        assert_eq!(v.level(0).len(), 2);
    }

    #[test]
    fn apply_rejects_edits_that_do_not_fit() {
        let v = text::parse("L1: 3:a-f").unwrap();
        let mut e = VersionEdit::default();
        e.deleted_files.push((1, 77));
        assert!(v.apply(&e).is_err());
        let mut e = VersionEdit::default();
        e.new_files.push((1, text::file(3, "x", "y", 1)));
        assert!(v.apply(&e).is_err());
        let mut e = VersionEdit::default();
        e.new_files.push((40, text::file(8, "x", "y", 1)));
        assert!(v.apply(&e).is_err());
    }
}
