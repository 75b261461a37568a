//! Guard keys per level (the FLSM layout's partition of a level) and the files each guard
//! holds.
//!
//! A level with guards `g_1 < … < g_n` is cut into `n + 1` ranges: the sentinel `[−∞, g_1)`
//! and `[g_i, g_{i+1})`. A file belongs to every range its user-key span intersects; files
//! written by the FLSM layout fall in one range, but a file written before a guard inside its
//! span was committed falls in several, and readers must find it from each.

use std::sync::Arc;

use super::{FileMeta, Version};
use crate::manifest::VersionEdit;

/// The guard lists after `edit`: deletions first, then additions. Adding a present guard or
/// deleting an absent one changes nothing (two compactions running at once may both commit
/// the same guard key); a guard at level 0 or a missing level makes the edit not fit.
pub(super) fn apply_guards(
    old: &[Vec<Vec<u8>>],
    edit: &VersionEdit,
    num_levels: usize,
) -> Result<Vec<Vec<Vec<u8>>>, String> {
    if edit.new_guards.is_empty() && edit.deleted_guards.is_empty() {
        return Ok(old.to_vec());
    }
    let mut guards = old.to_vec();
    guards.resize(num_levels, Vec::new());
    for (level, key) in &edit.deleted_guards {
        let g = guards
            .get_mut(*level as usize)
            .ok_or_else(|| format!("edit deletes a guard from missing level {level}"))?;
        if let Ok(i) = g.binary_search(key) {
            g.remove(i);
        }
    }
    for (level, key) in &edit.new_guards {
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
    Ok(guards)
}

/// The files of each guard range, for every level that has guards.
pub(super) fn compute_units(
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

impl Version {
    /// The guard keys of `level`, ascending (empty for a level without guards).
    pub fn guards(&self, level: usize) -> &[Vec<u8>] {
        self.guards.get(level).map_or(&[], Vec::as_slice)
    }

    /// Number of guard ranges of `level`, the sentinel included.
    pub fn unit_count(&self, level: usize) -> usize {
        self.guards(level).len() + 1
    }

    /// The files whose span intersects guard range `unit` of `level` (0 is the sentinel),
    /// newest (largest sequence number) first. A level without guards is one range holding
    /// every file, in the level's order.
    pub fn unit_files(&self, level: usize, unit: usize) -> &[Arc<FileMeta>] {
        match self.units.get(level) {
            Some(u) if !u.is_empty() => u.get(unit).map_or(&[], Vec::as_slice),
            _ if unit == 0 => self.level(level),
            _ => &[],
        }
    }

    /// The user-key bounds `[lo, hi)` of guard range `unit` of `level` (`None` is open).
    pub fn unit_bounds(&self, level: usize, unit: usize) -> (Option<&[u8]>, Option<&[u8]>) {
        let g = self.guards(level);
        let lo = unit
            .checked_sub(1)
            .and_then(|i| g.get(i))
            .map(Vec::as_slice);
        let hi = g.get(unit).map(Vec::as_slice);
        (lo, hi)
    }
}
