//! What the MANIFEST records about the value log, as the placement's own axis records.
//!
//! Record kinds (on-disk: never renumber; they are also the MANIFEST tags that carried these
//! fields before axis records existed, so old stores read the same way). Payloads are the
//! varints listed; `docs/format/manifest.md` §2 and `docs/format/vlog.md` give the rules.
//!
//! | kind | record | payload |
//! |---|---|---|
//! | 10 | head | segment, offset: replay starts here |
//! | 11 | garbage | segment, bytes: added to the segment's count |
//! | 12 | dropped segment | segment |
//! | 13 | segment end | segment, offset: a torn tail after it |
//! | 14 | sealed segment | segment, end |
//! | 15 | head sequence | sequence number of the first write at the head |
//! | 16 | collected prefix | segment, offset: every record before it was collected |

use std::collections::{BTreeMap, BTreeSet};

use crate::format::{Reader, put_varint64};
use crate::manifest::{Axis, AxisRecord, AxisState, VersionEdit};

/// Record kinds; see the module documentation.
mod kind {
    pub const HEAD: u32 = 10;
    pub const GARBAGE: u32 = 11;
    pub const DROPPED: u32 = 12;
    pub const SEGMENT_END: u32 = 13;
    pub const SEALED: u32 = 14;
    pub const HEAD_SEQ: u32 = 15;
    pub const COLLECTED: u32 = 16;
}

/// One value-log record of an edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VlogRecord {
    /// The position `(segment, offset)` from which recovery replays; every write before it
    /// is in a table.
    Head(u64, u64),
    /// The sequence number the first write at the head carries (in the edit that moves
    /// the head, when known: recovery checks that the log continues with it).
    HeadSeq(u64),
    /// Garbage bytes found in a segment, added to its count.
    Garbage(u64, u64),
    /// A segment removed by garbage collection (its file may be deleted).
    Dropped(u64),
    /// A segment's valid end, when recovery found its tail torn; bytes after it are never
    /// read.
    SegmentEnd(u64, u64),
    /// A segment synced in full through `end`: at open it must hold at least `end` bytes of
    /// whole records.
    Sealed(u64, u64),
    /// Garbage collection went through a segment up to `offset` (a record boundary): the
    /// live records before it were relocated and the edit that relocated them is durable,
    /// so the bytes from the header to `offset` are never read again and may be punched
    /// out of the file.
    Collected(u64, u64),
}

impl VlogRecord {
    /// The axis record that carries this one.
    pub fn encode(self) -> AxisRecord {
        let mut p = Vec::new();
        let k = match self {
            VlogRecord::Head(s, o) => {
                put_varint64(&mut p, s);
                put_varint64(&mut p, o);
                kind::HEAD
            }
            VlogRecord::HeadSeq(q) => {
                put_varint64(&mut p, q);
                kind::HEAD_SEQ
            }
            VlogRecord::Garbage(s, b) => {
                put_varint64(&mut p, s);
                put_varint64(&mut p, b);
                kind::GARBAGE
            }
            VlogRecord::Dropped(s) => {
                put_varint64(&mut p, s);
                kind::DROPPED
            }
            VlogRecord::SegmentEnd(s, e) => {
                put_varint64(&mut p, s);
                put_varint64(&mut p, e);
                kind::SEGMENT_END
            }
            VlogRecord::Sealed(s, e) => {
                put_varint64(&mut p, s);
                put_varint64(&mut p, e);
                kind::SEALED
            }
            VlogRecord::Collected(s, o) => {
                put_varint64(&mut p, s);
                put_varint64(&mut p, o);
                kind::COLLECTED
            }
        };
        AxisRecord::new(Axis::Values, k, p)
    }

    /// Read a value-log record.
    ///
    /// # Errors
    /// A description of a record of another axis, an unknown kind or version, or a payload
    /// too short or too long.
    pub fn decode(r: &AxisRecord) -> Result<VlogRecord, String> {
        if r.axis != Axis::Values {
            return Err(format!("a {} record is not the value log's", r.axis.name()));
        }
        if r.version != 1 {
            return Err(format!(
                "value-log record version {} (this release reads 1)",
                r.version
            ));
        }
        let mut rd = Reader::new(&r.payload);
        let rec = match r.kind {
            kind::HEAD => VlogRecord::Head(rd.varint64()?, rd.varint64()?),
            kind::HEAD_SEQ => VlogRecord::HeadSeq(rd.varint64()?),
            kind::GARBAGE => VlogRecord::Garbage(rd.varint64()?, rd.varint64()?),
            kind::DROPPED => VlogRecord::Dropped(rd.varint64()?),
            kind::SEGMENT_END => VlogRecord::SegmentEnd(rd.varint64()?, rd.varint64()?),
            kind::SEALED => VlogRecord::Sealed(rd.varint64()?, rd.varint64()?),
            kind::COLLECTED => VlogRecord::Collected(rd.varint64()?, rd.varint64()?),
            k => return Err(format!("unknown value-log record kind {k}")),
        };
        if !rd.is_empty() {
            return Err(format!(
                "value-log record kind {}: {} bytes left over",
                r.kind,
                rd.remaining()
            ));
        }
        Ok(rec)
    }

    /// Add this record to `edit`.
    pub fn push(self, edit: &mut VersionEdit) {
        edit.records.push(self.encode());
    }
}

/// What the MANIFEST says about the value log, accumulated over every edit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VlogState {
    /// Where value-log replay starts.
    pub head: Option<(u64, u64)>,
    /// The sequence number of the first write at the head, when the edit that moved the
    /// head knew it.
    pub head_seq: Option<u64>,
    /// Garbage bytes known per segment.
    pub garbage: BTreeMap<u64, u64>,
    /// Segments removed by garbage collection.
    pub dropped: BTreeSet<u64>,
    /// Valid ends of segments whose tail recovery found torn.
    pub segment_ends: BTreeMap<u64, u64>,
    /// Segments synced in full, with their ends (see `docs/format/vlog.md`).
    pub sealed: BTreeMap<u64, u64>,
    /// Per segment, the offset up to which garbage collection went (record kind 16): the
    /// bytes before it are never read (they may have been punched out).
    pub collected: BTreeMap<u64, u64>,
}

impl VlogState {
    /// The value-log state inside `state` (an empty one if `state` is another axis's, which
    /// the engine never passes: each placement gets the state it made).
    pub fn of(state: &dyn AxisState) -> &VlogState {
        static EMPTY: VlogState = VlogState {
            head: None,
            head_seq: None,
            garbage: BTreeMap::new(),
            dropped: BTreeSet::new(),
            segment_ends: BTreeMap::new(),
            sealed: BTreeMap::new(),
            collected: BTreeMap::new(),
        };
        let own = state.as_any().downcast_ref::<VlogState>();
        debug_assert!(
            own.is_some(),
            "the value log was handed another axis's state"
        );
        own.unwrap_or(&EMPTY)
    }

    /// Fold in one edit's records. A head without a head sequence in the same edit (written
    /// before kind 15 existed) clears the sequence. Records about a dropped segment are
    /// forgotten with it, whichever comes first in the edit.
    fn absorb_records(&mut self, recs: &[VlogRecord]) -> Result<(), String> {
        let heads = recs
            .iter()
            .filter(|r| matches!(r, VlogRecord::Head(..)))
            .count();
        let seqs = recs
            .iter()
            .filter(|r| matches!(r, VlogRecord::HeadSeq(_)))
            .count();
        if heads > 1 {
            return Err("value-log head appears twice in one edit".into());
        }
        if seqs > 1 {
            return Err("value-log head sequence appears twice in one edit".into());
        }
        for r in recs {
            match *r {
                VlogRecord::Head(s, o) => {
                    self.head = Some((s, o));
                    self.head_seq = recs.iter().find_map(|r| match r {
                        VlogRecord::HeadSeq(q) => Some(*q),
                        _ => None,
                    });
                }
                VlogRecord::HeadSeq(_) => {}
                VlogRecord::Garbage(s, b) => {
                    if !self.dropped.contains(&s) {
                        let g = self.garbage.entry(s).or_default();
                        *g = g.saturating_add(b);
                    }
                }
                VlogRecord::SegmentEnd(s, e) => {
                    if !self.dropped.contains(&s) {
                        self.segment_ends.insert(s, e);
                    }
                }
                VlogRecord::Sealed(s, e) => {
                    if !self.dropped.contains(&s) {
                        self.sealed.insert(s, e);
                    }
                }
                VlogRecord::Collected(s, o) => {
                    if !self.dropped.contains(&s) {
                        let c = self.collected.entry(s).or_default();
                        *c = (*c).max(o);
                    }
                }
                VlogRecord::Dropped(s) => {
                    self.collected.remove(&s);
                    self.garbage.remove(&s);
                    self.segment_ends.remove(&s);
                    self.sealed.remove(&s);
                    self.dropped.insert(s);
                }
            }
        }
        Ok(())
    }

    /// Fold in the value-log records of `edit` (for readers of a MANIFEST outside the
    /// version set, such as `verify`).
    ///
    /// # Errors
    /// A description of a record that does not fit.
    pub fn absorb_edit(&mut self, edit: &VersionEdit) -> Result<(), String> {
        let recs = edit
            .records
            .iter()
            .filter(|r| r.axis == Axis::Values)
            .map(VlogRecord::decode)
            .collect::<Result<Vec<_>, String>>()?;
        self.absorb_records(&recs)
    }
}

impl AxisState for VlogState {
    fn absorb(&mut self, records: &[&AxisRecord]) -> Result<(), String> {
        let recs = records
            .iter()
            .map(|r| VlogRecord::decode(r))
            .collect::<Result<Vec<_>, String>>()?;
        self.absorb_records(&recs)
    }

    fn snapshot(&self, out: &mut Vec<AxisRecord>) {
        if let Some((s, o)) = self.head {
            out.push(VlogRecord::Head(s, o).encode());
        }
        if let Some(q) = self.head_seq {
            out.push(VlogRecord::HeadSeq(q).encode());
        }
        for (&s, &b) in &self.garbage {
            out.push(VlogRecord::Garbage(s, b).encode());
        }
        for &s in &self.dropped {
            out.push(VlogRecord::Dropped(s).encode());
        }
        for (&s, &e) in &self.segment_ends {
            out.push(VlogRecord::SegmentEnd(s, e).encode());
        }
        for (&s, &e) in &self.sealed {
            out.push(VlogRecord::Sealed(s, e).encode());
        }
        for (&s, &o) in &self.collected {
            out.push(VlogRecord::Collected(s, o).encode());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for r in [
            VlogRecord::Head(9, 4130),
            VlogRecord::HeadSeq(301),
            VlogRecord::Garbage(7, 1 << 40),
            VlogRecord::Dropped(u64::MAX),
            VlogRecord::SegmentEnd(8, 0),
            VlogRecord::Sealed(7, 134_217_758),
            VlogRecord::Collected(7, 33_554_500),
        ] {
            assert_eq!(VlogRecord::decode(&r.encode()), Ok(r));
        }
    }

    #[test]
    fn bad_records_are_refused() {
        let mut r = VlogRecord::Head(1, 2).encode();
        r.payload.push(0);
        assert!(VlogRecord::decode(&r).unwrap_err().contains("left over"));
        let mut r = VlogRecord::Head(1, 2).encode();
        r.version = 2;
        assert!(VlogRecord::decode(&r).unwrap_err().contains("version 2"));
        let r = AxisRecord::new(Axis::Values, 99, vec![]);
        assert!(VlogRecord::decode(&r).unwrap_err().contains("kind 99"));
        let r = AxisRecord::new(Axis::Values, 10, vec![1]);
        assert!(VlogRecord::decode(&r).is_err());
        let mut s = VlogState::default();
        let two = [
            VlogRecord::Head(1, 2).encode(),
            VlogRecord::Head(1, 3).encode(),
        ];
        assert!(s.absorb(&two.iter().collect::<Vec<_>>()).is_err());
    }

    #[test]
    fn a_snapshot_rebuilds_the_state() {
        let mut s = VlogState::default();
        let edits = [
            vec![
                VlogRecord::Head(5, 24),
                VlogRecord::HeadSeq(10),
                VlogRecord::Garbage(3, 100),
                VlogRecord::Sealed(3, 4000),
                VlogRecord::Collected(3, 2000),
                VlogRecord::Collected(4, 50),
            ],
            vec![VlogRecord::Collected(3, 1000)],
            vec![
                VlogRecord::Garbage(3, 50),
                VlogRecord::Garbage(4, 7),
                VlogRecord::SegmentEnd(4, 90),
            ],
            vec![VlogRecord::Dropped(4), VlogRecord::Garbage(4, 1)],
            vec![VlogRecord::Head(6, 24)],
        ];
        for e in &edits {
            let recs: Vec<AxisRecord> = e.iter().map(|r| r.encode()).collect();
            s.absorb(&recs.iter().collect::<Vec<_>>()).unwrap();
        }
        assert_eq!(s.garbage, BTreeMap::from([(3, 150)]));
        assert_eq!(s.dropped, BTreeSet::from([4]));
        // The furthest offset holds; a dropped segment forgets its own.
        assert_eq!(s.collected, BTreeMap::from([(3, 2000)]));
        assert!(s.segment_ends.is_empty());
        assert_eq!(s.head, Some((6, 24)));
        assert_eq!(s.head_seq, None, "a head without its sequence clears it");
        let mut out = Vec::new();
        s.snapshot(&mut out);
        let mut again = VlogState::default();
        again.absorb(&out.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(again, s);
    }
}
