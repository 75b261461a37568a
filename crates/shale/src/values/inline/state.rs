//! What the MANIFEST records about the write-ahead logs, as the inline placement's axis
//! records (axis 2, `docs/format/manifest.md` §2.1): which logs exist, and how far each
//! closed one is known complete. Recovery checks the directory against it, so a deleted
//! log or a log cut inside its synced part is reported instead of silently replayed short.
//!
//! | kind | record | payload |
//! |---|---|---|
//! | 20 | live log | number: the log exists (created, not yet retired) |
//! | 21 | sealed log | number, length: synced in full at `length`; nothing follows |
//! | 22 | retired logs | number: forget every log below `number` (the log number moved) |
//!
//! Kinds are on-disk constants: never renumber.

use std::collections::{BTreeMap, BTreeSet};

use crate::format::{Reader, put_varint64};
use crate::manifest::{Axis, AxisRecord, AxisState, VersionEdit};

mod kind {
    pub const LIVE: u32 = 20;
    pub const SEALED: u32 = 21;
    pub const RETIRED: u32 = 22;
}

/// One WAL record of an edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WalRecord {
    /// The log exists.
    Live(u64),
    /// The log was synced in full at this length and is closed.
    Sealed(u64, u64),
    /// Logs below this number are retired.
    Retired(u64),
}

impl WalRecord {
    /// Add this record to `edit`.
    pub fn push(self, edit: &mut VersionEdit) {
        edit.records.push(self.encode());
    }

    fn encode(self) -> AxisRecord {
        let (k, fields) = match self {
            WalRecord::Live(n) => (kind::LIVE, vec![n]),
            WalRecord::Sealed(n, len) => (kind::SEALED, vec![n, len]),
            WalRecord::Retired(n) => (kind::RETIRED, vec![n]),
        };
        let mut p = Vec::new();
        for f in fields {
            put_varint64(&mut p, f);
        }
        AxisRecord::new(Axis::Values, k, p)
    }

    fn decode(r: &AxisRecord) -> Result<WalRecord, String> {
        if r.version != 1 {
            return Err(format!(
                "WAL record version {} (this release reads 1)",
                r.version
            ));
        }
        let mut rd = Reader::new(&r.payload);
        let rec = match r.kind {
            kind::LIVE => WalRecord::Live(rd.varint64()?),
            kind::SEALED => WalRecord::Sealed(rd.varint64()?, rd.varint64()?),
            kind::RETIRED => WalRecord::Retired(rd.varint64()?),
            k => return Err(format!("unknown WAL record kind {k}")),
        };
        if !rd.is_empty() {
            return Err(format!(
                "WAL record kind {}: {} bytes left over",
                r.kind,
                rd.remaining()
            ));
        }
        Ok(rec)
    }
}

/// What the MANIFEST says about the logs, folded over every edit. Empty for a store whose
/// MANIFEST was written before these records existed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct WalState {
    /// Logs known to exist.
    pub live: BTreeSet<u64>,
    /// Closed logs and the length each was synced at.
    pub sealed: BTreeMap<u64, u64>,
}

impl WalState {
    /// The WAL state inside `state` (an empty one for another axis's, which the engine
    /// never passes).
    pub fn of(state: &dyn AxisState) -> &WalState {
        static EMPTY: WalState = WalState {
            live: BTreeSet::new(),
            sealed: BTreeMap::new(),
        };
        let own = state.as_any().downcast_ref::<WalState>();
        debug_assert!(own.is_some(), "the WAL was handed another axis's state");
        own.unwrap_or(&EMPTY)
    }

    /// Whether the MANIFEST keeps track of the logs (a store written since it does).
    pub fn tracked(&self) -> bool {
        !self.live.is_empty()
    }
}

impl AxisState for WalState {
    fn absorb(&mut self, records: &[&AxisRecord]) -> Result<(), String> {
        for r in records {
            match WalRecord::decode(r)? {
                WalRecord::Live(n) => {
                    self.live.insert(n);
                }
                WalRecord::Sealed(n, len) => {
                    self.live.insert(n);
                    self.sealed.insert(n, len);
                }
                WalRecord::Retired(n) => {
                    self.live = self.live.split_off(&n);
                    self.sealed = self.sealed.split_off(&n);
                }
            }
        }
        Ok(())
    }

    fn snapshot(&self, out: &mut Vec<AxisRecord>) {
        for &n in &self.live {
            let r = match self.sealed.get(&n) {
                Some(&len) => WalRecord::Sealed(n, len),
                None => WalRecord::Live(n),
            };
            out.push(r.encode());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(recs: &[WalRecord]) -> WalState {
        let mut s = WalState::default();
        let encoded: Vec<AxisRecord> = recs.iter().map(|r| r.encode()).collect();
        let refs: Vec<&AxisRecord> = encoded.iter().collect();
        s.absorb(&refs).unwrap();
        s
    }

    #[test]
    fn records_fold_and_snapshot_rebuilds() {
        let s = fold(&[
            WalRecord::Live(4),
            WalRecord::Sealed(4, 100),
            WalRecord::Live(7),
            WalRecord::Retired(5),
            WalRecord::Live(9),
        ]);
        assert_eq!(s.live, [7, 9].into_iter().collect());
        assert!(s.sealed.is_empty());
        let mut out = Vec::new();
        s.snapshot(&mut out);
        let refs: Vec<&AxisRecord> = out.iter().collect();
        let mut again = WalState::default();
        again.absorb(&refs).unwrap();
        assert_eq!(again, s);
    }

    #[test]
    fn worked_example_of_the_format_doc() {
        // Log 9 sealed at 4130 bytes, log 12 live, logs below 9 retired.
        let mut e = VersionEdit::default();
        WalRecord::Retired(9).push(&mut e);
        WalRecord::Sealed(9, 4130).push(&mut e);
        WalRecord::Live(12).push(&mut e);
        let mut b = Vec::new();
        e.encode(&mut b);
        let hex: String = b.iter().map(|b| format!("{b:02x} ")).collect();
        assert_eq!(
            hex.trim_end(),
            "03 10 04 02 16 01 09 10 06 02 15 01 09 a2 20 10 04 02 14 01 0c"
        );
    }

    #[test]
    fn unknown_kind_or_version_is_refused() {
        let mut s = WalState::default();
        let bad = AxisRecord::new(Axis::Values, 23, vec![1]);
        assert!(s.absorb(&[&bad]).is_err());
        let mut v2 = WalRecord::Live(3).encode();
        v2.version = 2;
        assert!(s.absorb(&[&v2]).is_err());
    }
}
