//! The FLSM layout's state: guard keys per level, and the files each guard holds.
//!
//! A level with guards `g_1 < … < g_n` is cut into `n + 1` ranges: the sentinel `[−∞, g_1)`
//! and `[g_i, g_{i+1})`. A file belongs to every range its user-key span intersects; files
//! written by the FLSM layout fall in one range, but a file written before a guard inside its
//! span was committed falls in several, and readers must find it from each.
//!
//! The guards are persisted as layout records (`docs/format/manifest.md`, "Guards"): kind
//! [`NEW_GUARD`] and kind [`DELETED_GUARD`], each `level: varint32` then the user key.

use std::any::Any;
use std::sync::Arc;

use crate::format::{Reader, put_varint32};
use crate::manifest::{Axis, AxisRecord};
use crate::version::{FileMeta, LayoutState, Version};

/// Layout record kind: a guard key added to a level. On-disk: never renumber (it is also
/// the MANIFEST tag that carried guards before axis records existed).
pub const NEW_GUARD: u32 = 8;
/// Layout record kind: a guard key removed from a level. On-disk: never renumber.
pub const DELETED_GUARD: u32 = 9;

/// A guard change, as an edit carries it.
pub fn guard_record(kind: u32, level: u32, key: &[u8]) -> AxisRecord {
    let mut p = Vec::with_capacity(key.len() + 5);
    put_varint32(&mut p, level);
    p.extend_from_slice(key);
    AxisRecord::new(Axis::Layout, kind, p)
}

/// Guard keys per level and the files of each guard range; see the module documentation.
#[derive(Clone, Debug, Default)]
pub struct GuardState {
    /// Guard keys per level, sorted and distinct.
    guards: Vec<Vec<Vec<u8>>>,
    /// For each level with guards: the files overlapping each guard's key range (index 0 is
    /// the sentinel below the first guard). Derived from the files and `guards`.
    units: Vec<Vec<Vec<Arc<FileMeta>>>>,
}

/// One decoded guard record.
fn decode(r: &AxisRecord) -> Result<(u32, u32, Vec<u8>), String> {
    if r.kind != NEW_GUARD && r.kind != DELETED_GUARD {
        return Err(format!("unknown flsm layout record kind {}", r.kind));
    }
    if r.version != 1 {
        return Err(format!(
            "flsm guard record version {} (this release reads 1)",
            r.version
        ));
    }
    let mut rd = Reader::new(&r.payload);
    let level = rd.varint32()?;
    let key = rd.bytes(rd.remaining())?.to_vec();
    Ok((r.kind, level, key))
}

impl LayoutState for GuardState {
    /// Deletions first, then additions. Adding a present guard or deleting an absent one
    /// changes nothing (two compactions running at once may both commit the same guard
    /// key); a guard at level 0 or a missing level makes the edit not fit.
    fn apply(
        self: Arc<Self>,
        records: &[&AxisRecord],
        levels: &[Vec<Arc<FileMeta>>],
    ) -> Result<Arc<dyn LayoutState>, String> {
        let num_levels = levels.len();
        let mut guards = self.guards.clone();
        guards.resize(num_levels, Vec::new());
        let decoded = records
            .iter()
            .map(|r| decode(r))
            .collect::<Result<Vec<_>, String>>()?;
        for (_, level, key) in decoded.iter().filter(|d| d.0 == DELETED_GUARD) {
            let g = guards
                .get_mut(*level as usize)
                .ok_or_else(|| format!("edit deletes a guard from missing level {level}"))?;
            if let Ok(i) = g.binary_search(key) {
                g.remove(i);
            }
        }
        for (_, level, key) in decoded.iter().filter(|d| d.0 == NEW_GUARD) {
            if *level == 0 {
                return Err("edit adds a guard to level 0, which has none".to_string());
            }
            let g = guards.get_mut(*level as usize).ok_or_else(|| {
                format!("edit adds a guard to level {level} but the store has {num_levels} levels")
            })?;
            if let Err(i) = g.binary_search(key) {
                g.insert(i, key.clone());
            }
        }
        let units = compute_units(levels, &guards);
        Ok(Arc::new(GuardState { guards, units }))
    }

    fn snapshot(&self, out: &mut Vec<AxisRecord>) {
        for (level, keys) in self.guards.iter().enumerate() {
            for k in keys {
                out.push(guard_record(NEW_GUARD, level as u32, k));
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The files of each guard range, for every level that has guards.
fn compute_units(
    levels: &[Vec<Arc<FileMeta>>],
    guards: &[Vec<Vec<u8>>],
) -> Vec<Vec<Vec<Arc<FileMeta>>>> {
    levels
        .iter()
        .enumerate()
        .map(|(l, files)| {
            let g = guards.get(l).map_or(&[][..], Vec::as_slice);
            if g.is_empty() {
                return Vec::new();
            }
            let mut units = vec![Vec::new(); g.len() + 1];
            for f in files {
                let first = unit_index(g, f.smallest_user_key());
                let last = unit_index(g, f.largest_user_key());
                for u in units.iter_mut().take(last + 1).skip(first) {
                    u.push(Arc::clone(f));
                }
            }
            // Newest first: a lookup that finds its key can skip every older table.
            for u in &mut units {
                u.sort_by(|a, b| {
                    b.largest_seq
                        .cmp(&a.largest_seq)
                        .then(b.number.cmp(&a.number))
                });
            }
            units
        })
        .collect()
}

/// The range of `guards` holding `user_key`: 0 is the sentinel, `i` is `[g_i, g_{i+1})`.
pub fn unit_index(guards: &[Vec<u8>], user_key: &[u8]) -> usize {
    guards.partition_point(|g| g.as_slice() <= user_key)
}

/// The FLSM view of a [`Version`]: its guards and guard ranges. A version whose layout
/// state is not a [`GuardState`] (none is ever handed to the FLSM layout) reads as one
/// without guards.
pub trait Guarded {
    /// The guard keys of `level`, ascending (empty for a level without guards).
    fn guards(&self, level: usize) -> &[Vec<u8>];
    /// Number of guard ranges of `level`, the sentinel included.
    fn unit_count(&self, level: usize) -> usize;
    /// The files whose span intersects guard range `unit` of `level` (0 is the sentinel),
    /// newest (largest sequence number) first. A level without guards is one range
    /// holding every file, in the level's order.
    fn unit_files(&self, level: usize, unit: usize) -> &[Arc<FileMeta>];
    /// The user-key bounds `[lo, hi)` of guard range `unit` of `level` (`None` is open).
    fn unit_bounds(&self, level: usize, unit: usize) -> (Option<&[u8]>, Option<&[u8]>);
}

fn state(v: &Version) -> Option<&GuardState> {
    v.layout_state().as_any().downcast_ref::<GuardState>()
}

impl Guarded for Version {
    fn guards(&self, level: usize) -> &[Vec<u8>] {
        state(self)
            .and_then(|s| s.guards.get(level))
            .map_or(&[], Vec::as_slice)
    }

    fn unit_count(&self, level: usize) -> usize {
        self.guards(level).len() + 1
    }

    fn unit_files(&self, level: usize, unit: usize) -> &[Arc<FileMeta>] {
        match state(self).and_then(|s| s.units.get(level)) {
            Some(u) if !u.is_empty() => u.get(unit).map_or(&[], Vec::as_slice),
            _ if unit == 0 => self.level(level),
            _ => &[],
        }
    }

    fn unit_bounds(&self, level: usize, unit: usize) -> (Option<&[u8]>, Option<&[u8]>) {
        let g = self.guards(level);
        let lo = unit
            .checked_sub(1)
            .and_then(|i| g.get(i))
            .map(Vec::as_slice);
        let hi = g.get(unit).map(Vec::as_slice);
        (lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::VersionEdit;

    #[test]
    fn guard_records_worked_example() {
        let e = VersionEdit {
            records: vec![
                guard_record(DELETED_GUARD, 2, b"a"),
                guard_record(NEW_GUARD, 1, b"k7"),
            ],
            ..VersionEdit::default()
        };
        let mut buf = Vec::new();
        e.encode(&mut buf);
        let hex: String = buf.iter().map(|b| format!("{b:02x} ")).collect();
        assert_eq!(
            hex.trim_end(),
            "02 10 05 01 09 01 02 61 10 06 01 08 01 01 6b 37"
        );
        // The same edit from before axis records: read the same way.
        let old = [0x02, 0x09, 0x02, 0x02, 0x61, 0x08, 0x03, 0x01, 0x6b, 0x37];
        assert_eq!(VersionEdit::decode(&old).unwrap(), e);
    }

    #[test]
    fn records_apply_deletions_first_and_refuse_what_does_not_fit() {
        let levels = vec![Vec::new(); 3];
        let empty = Arc::new(GuardState::default());
        let add = guard_record(NEW_GUARD, 1, b"m");
        let del = guard_record(DELETED_GUARD, 1, b"m");
        // In one edit the deletion comes first whatever the order: the guard stays.
        let s = Arc::clone(&empty).apply(&[&add, &del], &levels).unwrap();
        let g = s.as_any().downcast_ref::<GuardState>().unwrap();
        assert_eq!(g.guards[1], [b"m".to_vec()]);
        let bad = [
            guard_record(NEW_GUARD, 0, b"m"),
            guard_record(NEW_GUARD, 3, b"m"),
            guard_record(DELETED_GUARD, 7, b"m"),
            AxisRecord::new(Axis::Layout, 10, vec![1]),
            AxisRecord {
                version: 2,
                ..guard_record(NEW_GUARD, 1, b"m")
            },
            AxisRecord::new(Axis::Layout, NEW_GUARD, vec![0x80]),
        ];
        for r in &bad {
            assert!(Arc::clone(&empty).apply(&[r], &levels).is_err(), "{r:?}");
        }
        // A snapshot rebuilds the guards.
        let mut out = Vec::new();
        s.snapshot(&mut out);
        let again = empty
            .apply(&out.iter().collect::<Vec<_>>(), &levels)
            .unwrap();
        let g2 = again.as_any().downcast_ref::<GuardState>().unwrap();
        assert_eq!(g2.guards, g.guards);
    }
}
