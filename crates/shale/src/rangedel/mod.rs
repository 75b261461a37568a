//! Range tombstones (`Db::delete_range`): what they are and how a read asks them.
//!
//! A range tombstone `[start, end)` written with sequence number `r` hides every entry
//! `(key, p)` with `start <= key < end` and `p < r` from a reader at a snapshot `s >= r`
//! (RocksDB's `DeleteRange`). Tombstones are engine-level: the write path keeps the ones not
//! yet flushed beside the memtables (`db::SuperVersion::range_dels`), a flush moves them
//! into the MANIFEST (edit tag 21) and every [`crate::version::Version`] carries the
//! flushed ones. No table format stores them, so every layout honours them the same way
//! (`docs/format/manifest.md`, "Range tombstones").
//!
//! [`RangeDels`] is a set of tombstones *fragmented* as Pebble's `rangedel` package does:
//! the key space is cut at every start and end, and each fragment lists the sequence numbers
//! of the tombstones covering all of it, ascending. A question about one key is a binary
//! search for its fragment and one in that fragment's list. [`filter::RangeDelFilter`]
//! leaves the hidden entries out of an iterator.

pub mod filter;

use crate::key::SeqNo;

/// One range tombstone: the keys `start <= key < end` deleted at sequence number `seq`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RangeTombstone {
    /// First key deleted (inclusive).
    pub start: Vec<u8>,
    /// Keys at or past this one are not deleted (exclusive).
    pub end: Vec<u8>,
    /// The write's sequence number. Unique: no two writes share one.
    pub seq: SeqNo,
}

impl RangeTombstone {
    /// The tombstone a logged range-delete record stands for: the record's key is the
    /// range's start, its value the (exclusive) end.
    pub(crate) fn from_record(start: &[u8], seq: SeqNo, end: &[u8]) -> RangeTombstone {
        RangeTombstone {
            start: start.to_vec(),
            end: end.to_vec(),
            seq,
        }
    }

    /// Whether `key` is in `[start, end)`.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.start.as_slice() <= key && key < self.end.as_slice()
    }
}

/// A piece of the key space `[start, end)` and the tombstones covering all of it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Fragment {
    start: Vec<u8>,
    end: Vec<u8>,
    /// Sequence numbers of the covering tombstones, ascending.
    seqs: Vec<SeqNo>,
}

/// An immutable, fragmented set of range tombstones. Cheap to ask when empty (the common
/// case): every query returns at once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeDels {
    /// The tombstones as written, sorted by sequence number.
    tombstones: Vec<RangeTombstone>,
    /// Non-overlapping, in key order; only fragments covered by at least one tombstone.
    fragments: Vec<Fragment>,
}

impl RangeDels {
    /// The set of `tombstones` (any order; an empty range covers nothing).
    pub fn new(mut tombstones: Vec<RangeTombstone>) -> RangeDels {
        tombstones.sort_by_key(|t| t.seq);
        tombstones.dedup_by_key(|t| t.seq);
        let fragments = fragment(&tombstones);
        RangeDels {
            tombstones,
            fragments,
        }
    }

    /// True when there are no tombstones.
    pub fn is_empty(&self) -> bool {
        self.tombstones.is_empty()
    }

    /// The tombstones, by sequence number.
    pub fn tombstones(&self) -> &[RangeTombstone] {
        &self.tombstones
    }

    /// This set with `more` added.
    pub fn with(&self, more: impl IntoIterator<Item = RangeTombstone>) -> RangeDels {
        let mut all = self.tombstones.clone();
        all.extend(more);
        RangeDels::new(all)
    }

    /// This set without the tombstones for which `drop` returns true.
    pub fn without(&self, drop: impl Fn(&RangeTombstone) -> bool) -> RangeDels {
        RangeDels::new(
            self.tombstones
                .iter()
                .filter(|t| !drop(t))
                .cloned()
                .collect(),
        )
    }

    /// Sequence numbers of the tombstones covering `key`, ascending (empty if none).
    pub fn covering(&self, key: &[u8]) -> &[SeqNo] {
        if self.fragments.is_empty() {
            return &[];
        }
        // The last fragment starting at or before `key`.
        let i = self
            .fragments
            .partition_point(|f| f.start.as_slice() <= key);
        match i.checked_sub(1).and_then(|i| self.fragments.get(i)) {
            Some(f) if key < f.end.as_slice() => &f.seqs,
            _ => &[],
        }
    }

    /// The newest tombstone covering `key` that a reader at `snapshot` sees.
    pub fn max_covering(&self, key: &[u8], snapshot: SeqNo) -> Option<SeqNo> {
        let seqs = self.covering(key);
        let n = seqs.partition_point(|&r| r <= snapshot);
        n.checked_sub(1).and_then(|i| seqs.get(i)).copied()
    }

    /// Whether the entry `(key, seq)` is hidden from a reader at `snapshot`: a tombstone
    /// `r` covers `key` with `seq < r <= snapshot`.
    pub fn hides(&self, key: &[u8], seq: SeqNo, snapshot: SeqNo) -> bool {
        self.max_covering(key, snapshot).is_some_and(|r| r > seq)
    }

    /// The oldest tombstone covering `key` that is newer than the entry `seq`.
    pub fn min_covering_above(&self, key: &[u8], seq: SeqNo) -> Option<SeqNo> {
        let seqs = self.covering(key);
        seqs.get(seqs.partition_point(|&r| r <= seq)).copied()
    }
}

/// Cut the key space at every start and end; list for each piece the tombstones covering it.
fn fragment(tombstones: &[RangeTombstone]) -> Vec<Fragment> {
    let mut bounds: Vec<&[u8]> = Vec::with_capacity(tombstones.len() * 2);
    for t in tombstones.iter().filter(|t| t.start < t.end) {
        bounds.push(&t.start);
        bounds.push(&t.end);
    }
    bounds.sort_unstable();
    bounds.dedup();
    let mut by_start: Vec<&RangeTombstone> =
        tombstones.iter().filter(|t| t.start < t.end).collect();
    by_start.sort_by(|a, b| a.start.cmp(&b.start));
    let mut next = by_start.into_iter().peekable();
    let mut active: Vec<&RangeTombstone> = Vec::new();
    let mut out = Vec::new();
    for w in bounds.windows(2) {
        let (Some(&lo), Some(&hi)) = (w.first(), w.get(1)) else {
            continue;
        };
        while let Some(t) = next.next_if(|t| t.start.as_slice() <= lo) {
            active.push(t);
        }
        active.retain(|t| t.end.as_slice() > lo);
        if active.is_empty() {
            continue;
        }
        let mut seqs: Vec<SeqNo> = active.iter().map(|t| t.seq).collect();
        seqs.sort_unstable();
        out.push(Fragment {
            start: lo.to_vec(),
            end: hi.to_vec(),
            seqs,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{RangeDels, RangeTombstone};

    fn t(start: &str, end: &str, seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: start.as_bytes().to_vec(),
            end: end.as_bytes().to_vec(),
            seq,
        }
    }

    /// Every query against a brute-force reading of the tombstones.
    #[test]
    fn fragments_answer_as_the_tombstones_do() {
        let list = vec![
            t("b", "f", 10),
            t("d", "h", 5),
            t("a", "c", 20),
            t("e", "e", 30),
            t("g", "z", 15),
            t("x", "y", 3),
        ];
        let set = RangeDels::new(list.clone());
        for key in [
            "", "a", "b", "bb", "c", "d", "e", "f", "g", "h", "w", "x", "y", "z", "zz",
        ] {
            let k = key.as_bytes();
            let mut want: Vec<u64> = list
                .iter()
                .filter(|t| t.contains(k))
                .map(|t| t.seq)
                .collect();
            want.sort_unstable();
            assert_eq!(set.covering(k), want.as_slice(), "key {key:?}");
            for snap in [0, 4, 5, 9, 10, 14, 15, 19, 20, 100] {
                let max = want.iter().copied().filter(|&r| r <= snap).max();
                assert_eq!(
                    set.max_covering(k, snap),
                    max,
                    "key {key:?} snapshot {snap}"
                );
                for seq in [0, 3, 5, 12, 25] {
                    assert_eq!(
                        set.hides(k, seq, snap),
                        max.is_some_and(|r| r > seq),
                        "key {key:?} seq {seq} snapshot {snap}"
                    );
                    let above = want.iter().copied().find(|&r| r > seq);
                    assert_eq!(set.min_covering_above(k, seq), above);
                }
            }
        }
        assert_eq!(set.tombstones().len(), 6);
        let fewer = set.without(|t| t.seq == 10);
        // "b" keeps the tombstone [a, c) at 20; "c" was covered by [b, f) at 10 alone.
        assert_eq!(fewer.covering(b"b"), &[20]);
        assert!(fewer.covering(b"c").is_empty());
        assert_eq!(fewer.with([t("b", "d", 40)]).covering(b"c"), &[40]);
        assert!(RangeDels::default().covering(b"a").is_empty());
    }
}
