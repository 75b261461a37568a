//! The LWC layout's state: how many segments each DTable holds.
//!
//! A DTable's committed generation lists its segments itself (`docs/format/dtable.md`); the
//! layout keeps their count beside the version's files so that its picker, a pure function
//! of a version, can divide a table whose appends piled up (and never divides a table that
//! a division just wrote, which would make nothing smaller). A file without an entry holds
//! one segment.
//!
//! Persisted as layout records (`docs/format/manifest.md`, "DTable segments"): kind
//! [`SEGMENTS`], `number: varint64` then `segments: varint32`, written by every append edit
//! for each table it grew and by a snapshot for every table of more than one segment.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::format::{Reader, put_varint32, put_varint64};
use crate::manifest::{Axis, AxisRecord};
use crate::version::{FileMeta, LayoutState, Version};

/// Layout record kind: table `number` now holds `segments` committed segments. On-disk:
/// never renumber.
pub const SEGMENTS: u32 = 30;

/// The record saying table `number` holds `segments` segments.
pub fn segments_record(number: u64, segments: u32) -> AxisRecord {
    let mut p = Vec::with_capacity(15);
    put_varint64(&mut p, number);
    put_varint32(&mut p, segments);
    AxisRecord::new(Axis::Layout, SEGMENTS, p)
}

fn decode(r: &AxisRecord) -> Result<(u64, u32), String> {
    if r.kind != SEGMENTS {
        return Err(format!("unknown lwc layout record kind {}", r.kind));
    }
    if r.version != 1 {
        return Err(format!(
            "lwc segments record version {} (this release reads 1)",
            r.version
        ));
    }
    let mut rd = Reader::new(&r.payload);
    let number = rd.varint64()?;
    let segments = rd.varint32()?;
    if !rd.is_empty() {
        return Err(format!(
            "{} bytes follow an lwc segments record",
            rd.remaining()
        ));
    }
    if segments == 0 {
        return Err(format!("table {number} is said to hold no segment"));
    }
    Ok((number, segments))
}

/// Segments per table (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct LwcState {
    /// Tables of more than one segment.
    segments: HashMap<u64, u32>,
}

impl LayoutState for LwcState {
    /// A record must name a table of the new version. Tables that left the version are
    /// forgotten; a table keeps its count while it stays (a move keeps its number).
    fn apply(
        self: Arc<Self>,
        records: &[&AxisRecord],
        levels: &[Vec<Arc<FileMeta>>],
    ) -> Result<Arc<dyn LayoutState>, String> {
        let present: HashSet<u64> = levels.iter().flatten().map(|f| f.number).collect();
        let mut segments: HashMap<u64, u32> = self
            .segments
            .iter()
            .filter(|(n, _)| present.contains(n))
            .map(|(&n, &c)| (n, c))
            .collect();
        for r in records {
            let (number, count) = decode(r)?;
            if !present.contains(&number) {
                return Err(format!(
                    "an edit counts the segments of table {number}, which the version does not hold"
                ));
            }
            if count > 1 {
                segments.insert(number, count);
            } else {
                segments.remove(&number);
            }
        }
        if records.is_empty() && segments.len() == self.segments.len() {
            return Ok(self);
        }
        Ok(Arc::new(LwcState { segments }))
    }

    fn snapshot(&self, out: &mut Vec<AxisRecord>) {
        let mut all: Vec<(u64, u32)> = self.segments.iter().map(|(&n, &c)| (n, c)).collect();
        all.sort_unstable();
        for (n, c) in all {
            out.push(segments_record(n, c));
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The segments table `number` of `v` holds (1 when the state does not say otherwise).
pub fn segments(v: &Version, number: u64) -> u32 {
    v.layout_state()
        .as_any()
        .downcast_ref::<LwcState>()
        .and_then(|s| s.segments.get(&number).copied())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::VersionEdit;
    use crate::version::text;

    #[test]
    fn counts_follow_records_and_files_and_survive_a_snapshot() {
        let v = text::parse_with(
            "L1: 1:a-c 2:d-f\nL2: 3:a-z",
            Arc::new(LwcState::default()),
            &|_, _| panic!("no guards"),
        )
        .unwrap();
        assert_eq!(segments(&v, 1), 1);
        let mut e = VersionEdit::default();
        e.records.push(segments_record(3, 4));
        e.records.push(segments_record(1, 2));
        let v = v.apply(&e).unwrap();
        assert_eq!(
            (segments(&v, 1), segments(&v, 2), segments(&v, 3)),
            (2, 1, 4)
        );
        // A move keeps the number and its count; a deleted table is forgotten.
        let mut e = VersionEdit::default();
        e.deleted_files.push((1, 1));
        e.new_files.push((2, (*v.level(1)[0]).clone()));
        e.deleted_files.push((2, 3));
        let v2 = v.apply(&e).unwrap();
        assert_eq!((segments(&v2, 1), segments(&v2, 3)), (2, 1));
        // A record for a table the version does not hold does not fit; nor a bad one.
        let mut e = VersionEdit::default();
        e.records.push(segments_record(9, 2));
        assert!(v.apply(&e).is_err());
        for bad in [
            AxisRecord::new(Axis::Layout, 8, vec![1, 2]),
            AxisRecord::new(Axis::Layout, SEGMENTS, vec![1]),
            AxisRecord::new(Axis::Layout, SEGMENTS, vec![1, 0]),
            AxisRecord::new(Axis::Layout, SEGMENTS, vec![1, 2, 3]),
            AxisRecord {
                version: 2,
                ..segments_record(1, 2)
            },
        ] {
            let mut e = VersionEdit::default();
            e.records.push(bad);
            assert!(v.apply(&e).is_err());
        }
        // A snapshot edit rebuilds the same counts from nothing.
        let snap = v.snapshot_edit();
        let empty = Version::with_layout(7, Arc::new(LwcState::default()));
        let again = empty.apply(&snap).unwrap();
        assert_eq!(
            (
                segments(&again, 1),
                segments(&again, 2),
                segments(&again, 3)
            ),
            (2, 1, 4)
        );
        let hex: String = {
            let e = VersionEdit {
                records: vec![segments_record(300, 3)],
                ..VersionEdit::default()
            };
            let mut b = Vec::new();
            e.encode(&mut b);
            b.iter().map(|x| format!("{x:02x} ")).collect()
        };
        assert_eq!(hex.trim_end(), "01 10 06 01 1e 01 ac 02 03");
    }
}
