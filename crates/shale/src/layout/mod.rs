//! The layout axis: how tables are arranged on disk, found by reads, and compacted.
//!
//! A layout answers four questions about a [`Version`]: where does a flushed memtable go,
//! where can a key be (`get`), which iterators cover a scan, and what should be compacted
//! next (`pick`, a pure function returning a [`Plan`]). Executing a plan (`compact`) turns it
//! into a [`VersionEdit`] that the engine commits. Implementations: [`leveled`], [`flsm`].

use std::sync::Arc;

use crate::cache::table_cache::TableCache;
use crate::compaction::CompactionContext;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::manifest::VersionEdit;
use crate::options::{LayoutKind, Options};
use crate::version::{FileMeta, Version};

pub mod flsm;
pub mod leveled;

/// What a picker decided: the inputs of one compaction and where its output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// How to carry the plan out.
    pub kind: PlanKind,
    /// Input files by level; the first entry is the level being compacted.
    pub inputs: Vec<(usize, Vec<Arc<FileMeta>>)>,
    /// The level the output goes to.
    pub output_level: usize,
    /// Why the picker chose this (for logs and tests), e.g. "L0 has 4 files (trigger 4)".
    pub reason: String,
}

/// How a plan is carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanKind {
    /// Move one file to the output level by editing metadata only (no overlap below).
    Move,
    /// Merge the inputs and write new files.
    Merge,
}

impl Plan {
    /// Every input file, with its level.
    pub fn input_files(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> {
        self.inputs
            .iter()
            .flat_map(|(l, files)| files.iter().map(move |f| (*l, f)))
    }

    /// Bytes of every input file.
    pub fn input_bytes(&self) -> u64 {
        self.input_files().map(|(_, f)| f.size).sum()
    }

    /// A compact description: `L0[1,2]+L1[7] -> L1 (merge)`.
    pub fn describe(&self) -> String {
        let ins: Vec<String> = self
            .inputs
            .iter()
            .filter(|(_, f)| !f.is_empty())
            .map(|(l, files)| {
                let nums: Vec<String> = files.iter().map(|f| f.number.to_string()).collect();
                format!("L{l}[{}]", nums.join(","))
            })
            .collect();
        let kind = match self.kind {
            PlanKind::Move => "move",
            PlanKind::Merge => "merge",
        };
        format!("{} -> L{} ({kind})", ins.join("+"), self.output_level)
    }
}

/// What the engine gives a layout to read with.
pub struct ReadContext<'a> {
    /// Open tables.
    pub tables: &'a Arc<TableCache>,
    /// Why the reads happen (counted per cause).
    pub cause: crate::env::ReadCause,
}

/// A table layout. Implementations must be pure in `pick`: no I/O, no clock, no randomness,
/// so pickers can be tested and simulated from a text description of a tree.
pub trait Layout: Send + Sync + std::fmt::Debug {
    /// The name recorded in the MANIFEST; a store is reopened only with the same layout.
    fn name(&self) -> &'static str;

    /// The level a freshly flushed table goes to.
    fn flush_level(&self, version: &Version, file: &FileMeta) -> usize;

    /// The newest entry for `user_key` at or below the snapshot encoded in `seek_key`
    /// (see [`crate::key::seek_key`]): its encoded internal key and stored value.
    fn get(
        &self,
        version: &Version,
        ctx: &ReadContext<'_>,
        user_key: &[u8],
        seek_key: &[u8],
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>>;

    /// Iterators that together cover every entry of the version (merged by the engine).
    fn iterators(
        &self,
        version: &Arc<Version>,
        ctx: &ReadContext<'_>,
    ) -> Result<Vec<Box<dyn InternalIterator>>>;

    /// The next compaction to run, if any. Pure.
    fn pick(&self, version: &Version) -> Option<Plan>;

    /// Plans that push every file overlapping `[begin, end]` down the tree (manual
    /// compaction), one level at a time: the engine calls this repeatedly with the version
    /// that results from the previous plan, passing the level to continue from.
    fn pick_range(
        &self,
        version: &Version,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<Plan>;

    /// Carry out a plan: write new files and describe the change as an edit (not committed).
    fn compact(&self, plan: &Plan, ctx: &CompactionContext<'_>) -> Result<VersionEdit>;

    /// A user iterator sought `user_key` in `version`. Layouts that compact by read patterns
    /// (FLSM's seek-based compaction) keep counters here; returns true when a compaction
    /// became wanted, so the engine wakes its compaction thread. Default: nothing.
    fn note_seek(&self, _version: &Version, _user_key: &[u8]) -> bool {
        false
    }

    /// True once after `get` made the layout want a compaction (FLSM charges guards whose
    /// many tables gets had to probe); the engine then wakes its compaction thread.
    /// Default: never.
    fn take_compaction_wanted(&self) -> bool {
        false
    }
}

/// Build the configured layout.
pub fn new_layout(options: &Options) -> Arc<dyn Layout> {
    match options.layout {
        LayoutKind::Leveled => Arc::new(leveled::Leveled::new(options)),
        LayoutKind::Flsm => Arc::new(flsm::Flsm::new(options)),
    }
}
