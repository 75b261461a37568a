//! Writes one DTable generation: a new segment (an sst image) after the committed bytes,
//! then the commit record listing every segment, then one sync.
//!
//! The same writer makes a new table (no committed segment: the file is new and empty) and
//! appends to an existing one (the file reopened at its committed size, the committed
//! segments read from its directory).
//!
//! Not thread-safe: one writer is driven by one flush or compaction job.

use std::cmp::Ordering;

use crate::env::WriteFile;
use crate::error::Result;
use crate::key;
use crate::options::{Compression, TableOptions};
use crate::table::format::{TableIdentity, TableSummary, TableWriter};
use crate::table::sst::{TableBuilder, trailer};

use super::commit::{Directory, Footer, SegmentEntry};
use crate::table::sst::BlockHandle;

/// Writes one segment and the commit record after it. See the module docs.
#[derive(Debug)]
pub struct DTableWriter {
    builder: TableBuilder,
    /// Where the new segment starts: the committed size (0 for a new table).
    start: u64,
    /// The committed segments, oldest first (none for a new table).
    base: Vec<SegmentEntry>,
    identity: Option<TableIdentity>,
}

impl DTableWriter {
    /// A writer of a segment starting at `file.len()` after the committed segments `base`,
    /// recording `identity` in the segment and the directory.
    pub fn new(
        file: WriteFile,
        options: &TableOptions,
        identity: Option<TableIdentity>,
        base: Vec<SegmentEntry>,
    ) -> DTableWriter {
        let start = file.len();
        let b = TableBuilder::new(file, options);
        let builder = match identity {
            Some(id) => b.with_identity(id),
            None => b,
        };
        DTableWriter {
            builder,
            start,
            base,
            identity,
        }
    }
}

/// The summary of a table made of `segments` whose last generation ends at `size`.
pub fn summarize(segments: &[SegmentEntry], size: u64) -> TableSummary {
    let mut s = TableSummary {
        size,
        ..TableSummary::default()
    };
    let mut any = false;
    for seg in segments.iter().filter(|g| g.entries > 0) {
        s.entries += seg.entries;
        s.tombstones += seg.tombstones;
        if !any {
            s.smallest = seg.smallest.clone();
            s.largest = seg.largest.clone();
            s.smallest_seq = seg.smallest_seq;
            s.largest_seq = seg.largest_seq;
            any = true;
            continue;
        }
        if key::compare_internal(&seg.smallest, &s.smallest) == Ordering::Less {
            s.smallest = seg.smallest.clone();
        }
        if key::compare_internal(&seg.largest, &s.largest) == Ordering::Greater {
            s.largest = seg.largest.clone();
        }
        s.smallest_seq = s.smallest_seq.min(seg.smallest_seq);
        s.largest_seq = s.largest_seq.max(seg.largest_seq);
    }
    s
}

impl TableWriter for DTableWriter {
    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.builder.add(ikey, value)
    }

    fn estimated_size(&self) -> u64 {
        self.builder.estimated_size()
    }

    fn num_entries(&self) -> u64 {
        self.builder.num_entries()
    }

    fn finish(self: Box<Self>) -> Result<TableSummary> {
        let DTableWriter {
            builder,
            start,
            mut base,
            identity,
        } = *self;
        let (seg, mut file) = builder.finish_unsynced()?;
        base.push(SegmentEntry {
            start,
            end: seg.size,
            entries: seg.entries,
            tombstones: seg.tombstones,
            smallest_seq: seg.smallest_seq,
            largest_seq: seg.largest_seq,
            smallest: seg.smallest,
            largest: seg.largest,
        });
        let directory = Directory {
            identity,
            segments: base,
        };
        let dir = directory.encode();
        let handle = BlockHandle {
            offset: file.len(),
            size: dir.len() as u64,
        };
        file.append(&dir)?;
        file.append(&trailer(&dir, Compression::None as u8))?;
        let footer = Footer {
            directory: handle,
            segments: directory.segments.len() as u32,
        };
        file.append(&footer.encode())?;
        file.flush()?;
        file.sync()?;
        Ok(summarize(&directory.segments, file.len()))
    }

    fn abandon(self: Box<Self>) {}
}
