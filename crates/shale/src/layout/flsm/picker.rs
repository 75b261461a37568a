//! The FLSM picker: a pure function from a version (and what is busy) to the next compaction.
//!
//! Candidates, each with a score; the highest score at or above 1 wins (ties: the shallower
//! level):
//! - level 0: `files / level0_trigger`; all its files go to level 1, cut at level-1 guards.
//! - a level `L >= 1` over its byte budget (`base * multiplier^(L-1)`), not the last: its
//!   fullest guard is pushed into level `L + 1` (appended there, nothing below rewritten).
//! - a guard holding more than `max_files_per_guard` tables (score `files / (max + 1)`).
//!   What happens to it depends on the policy ([`FlsmPolicy`]):
//!   - `Paper` (PebblesDB, SOSP'17 §3.4): above the last level the guard's tables are
//!     merged and pushed into level `L + 1`, cut at its guards and appended to them, so no
//!     level above the last rewrites its own data; at the last level the guard is merged in
//!     place whole (there is no level below).
//!   - `Tiered`: its newest tables are merged in place (the level keeps its data until it is
//!     over budget). The merge takes the newest two tables and then each older one while it
//!     is at most half the bytes taken so far ([`newest_run`]), so a guard's large old table
//!     is rewritten only once the newer data has grown twice as large: size tiers within the
//!     guard instead of a rewrite of the whole guard at every overflow.
//! - a guard pushed into the last level (by the level budget, an overflow or reads; not by
//!   the aggressive rule, whose point is to empty the level) first checks the paper's 25x
//!   rule: when the last level's guards that would receive the data are full and hold more
//!   than `rewrite_ratio` times the pushed bytes, the guard is rewritten in place at the
//!   second-to-last level instead.
//! - guards that reads found hot (an explicit input, so the picker stays pure), when nothing
//!   else is due: pushed into the next level (`Paper`, in place at the last level) or merged
//!   in place (`Tiered`), so later seeks read fewer tables there.
//! - the aggressive level rule (lowest priority): a level `1 <= L < last` whose bytes are at
//!   least `aggressive_ratio_percent` % of level `L + 1`'s (both non-empty) pushes its
//!   fullest free guard into `L + 1`, guard by guard until the ratio no longer holds, so a
//!   seek meets fewer levels holding data there.
//!
//! A guard's tables may reach past it (a table written before a guard inside its span was
//! committed). Moving only part of such a table's key range down would put newer data below
//! older data, so the picker takes the *closure*: every guard such a table reaches, and
//! every table of those guards, until nothing reaches further.

use std::collections::HashSet;
use std::sync::Arc;

use super::state::{Guarded, unit_index};
use crate::layout::{Plan, PlanKind};
use crate::options::FlsmPolicy;
use crate::version::{FileMeta, Version};

/// The numbers the picker needs (a copy of the relevant options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickerConfig {
    /// Level-0 files that trigger a compaction.
    pub level0_trigger: usize,
    /// Byte budget of level 1.
    pub base_bytes: u64,
    /// Growth of the budget per level.
    pub multiplier: u64,
    /// Tables a guard may hold before it is compacted.
    pub max_files_per_guard: usize,
    /// The 25x rule's ratio.
    pub rewrite_ratio: u64,
    /// The aggressive level rule's ratio in percent; 0 disables it.
    pub aggressive_ratio_percent: u64,
    /// What an overflowing or hot guard does: go down a level, or merge in place.
    pub policy: FlsmPolicy,
}

impl PickerConfig {
    /// The byte budget of `level` (>= 1).
    pub fn max_bytes(&self, level: usize) -> u64 {
        crate::layout::level_budget(self.base_bytes, self.multiplier, level)
    }
}

/// What other compactions hold: the picker never picks a table that is an input of a running
/// compaction, nor writes into a level's key range another compaction is writing.
#[derive(Clone, Debug, Default)]
pub struct Busy {
    /// File numbers that are inputs of running compactions.
    pub files: HashSet<u64>,
    /// (output level, smallest user key, largest user key) being written.
    pub writing: Vec<(usize, Vec<u8>, Vec<u8>)>,
}

impl Busy {
    fn blocks(&self, files: &[Arc<FileMeta>], output_level: usize) -> bool {
        if files.iter().any(|f| self.files.contains(&f.number)) {
            return true;
        }
        let Some((lo, hi)) = key_range(files) else {
            return false;
        };
        self.writing
            .iter()
            .any(|(l, a, b)| *l == output_level && a.as_slice() <= hi && lo <= b.as_slice())
    }
}

/// The smallest and largest user key of `files`.
pub fn key_range(files: &[Arc<FileMeta>]) -> Option<(&[u8], &[u8])> {
    let lo = files.iter().map(|f| f.smallest_user_key()).min()?;
    let hi = files.iter().map(|f| f.largest_user_key()).max()?;
    Some((lo, hi))
}

/// A guard of a level that a read path found worth compacting.
pub type HotGuard = (usize, usize);

/// The guard ranges `[a, b]` of `level` and their tables, closed under "a table reaches into
/// another range" (see the module documentation).
pub fn closure(v: &Version, level: usize, first: usize, last: usize) -> Vec<Arc<FileMeta>> {
    let guards = v.guards(level);
    let (mut a, mut b) = (first, last);
    loop {
        let mut seen = HashSet::new();
        let mut files = Vec::new();
        let (mut na, mut nb) = (a, b);
        for u in a..=b {
            for f in v.unit_files(level, u) {
                if seen.insert(f.number) {
                    na = na.min(unit_index(guards, f.smallest_user_key()));
                    nb = nb.max(unit_index(guards, f.largest_user_key()));
                    files.push(Arc::clone(f));
                }
            }
        }
        if (na, nb) == (a, b) {
            return files;
        }
        (a, b) = (na, nb);
    }
}

fn bytes(files: &[Arc<FileMeta>]) -> u64 {
    files.iter().map(|f| f.size).sum()
}

/// A plan merging `files` of `level` into `output_level`; a move when one table fits inside
/// one guard of the next level.
fn plan(
    v: &Version,
    level: usize,
    files: Vec<Arc<FileMeta>>,
    output_level: usize,
    reason: String,
) -> Plan {
    let mut kind = PlanKind::Merge;
    if output_level > level
        && let [f] = files.as_slice()
    {
        let g = v.guards(output_level);
        if unit_index(g, f.smallest_user_key()) == unit_index(g, f.largest_user_key()) {
            kind = PlanKind::Move;
        }
    }
    Plan {
        kind,
        inputs: vec![(level, files)],
        output_level,
        reason,
    }
}

/// The tables of a guard that an overflow merge takes: the newest two (by largest sequence
/// number) and then each older table while it is at most half the bytes taken so far.
/// (Half rather than all: with fragments of uneven size, "at most all" lets a table join
/// that is nearly as large as the merge; measured on a 20M-key load, fill write
/// amplification 4.7 against 4.3. Taking at least the newest half of the guard, to leave
/// fewer tables for reads, measured 5.0 and no faster reads.) A table listed under the
/// guard that reaches into others is a candidate like any other; merged, its pieces are
/// cut at the guards.
///
/// Merging any subset of a level's tables in place is correct (unlike a push down, which
/// must take a table's whole reach, see [`closure`]): a get orders a guard's tables by
/// largest sequence number and stops only below the version it found, a merge drops a
/// shadowed version only for a newer one among its inputs, and a tombstone only where no
/// table outside the inputs, at this level or deeper, holds its key (`is_base_for_key`).
pub fn newest_run(mut files: Vec<Arc<FileMeta>>) -> Vec<Arc<FileMeta>> {
    files.sort_by(|a, b| {
        b.largest_seq
            .cmp(&a.largest_seq)
            .then(b.number.cmp(&a.number))
    });
    let mut taken = 0u64;
    let mut n = 0;
    for f in &files {
        if n >= 2 && f.size.saturating_mul(2) > taken {
            break;
        }
        taken += f.size;
        n += 1;
    }
    files.truncate(n);
    files
}

/// A guard of `level >= 1`, with its closure and bytes.
struct Unit {
    index: usize,
    files: Vec<Arc<FileMeta>>,
    bytes: u64,
}

fn units(v: &Version, level: usize) -> Vec<Unit> {
    (0..v.unit_count(level))
        .filter(|&u| !v.unit_files(level, u).is_empty())
        .map(|u| {
            let files = closure(v, level, u, u);
            let bytes = bytes(&files);
            Unit {
                index: u,
                files,
                bytes,
            }
        })
        .collect()
}

/// The aggressive level rule: the shallowest level `1 <= L < last` holding at least
/// `aggressive_ratio_percent` % of the bytes of a non-empty level `L + 1` pushes its fullest
/// guard that no running compaction blocks into `L + 1` (never rewritten in place: the point
/// is to empty the level). An empty `L + 1` does not count: moving a level into an empty one
/// leaves as many levels for a seek to meet, and would carry every byte through every level.
fn aggressive(v: &Version, cfg: &PickerConfig, busy: &Busy) -> Option<Plan> {
    if cfg.aggressive_ratio_percent == 0 {
        return None;
    }
    let last = v.num_levels().checked_sub(1)?;
    for level in 1..last {
        let (here, below) = (v.level_bytes(level), v.level_bytes(level + 1));
        if v.level(level).is_empty() || v.level(level + 1).is_empty() {
            continue;
        }
        if u128::from(here) * 100 < u128::from(below) * u128::from(cfg.aggressive_ratio_percent) {
            continue;
        }
        let mut us = units(v, level);
        us.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.index.cmp(&b.index)));
        for u in us {
            if busy.blocks(&u.files, level + 1) {
                continue;
            }
            let reason = format!(
                "L{level} holds {here} bytes, at least {}% of L{}'s {below}; guard {} holds {} bytes",
                cfg.aggressive_ratio_percent,
                level + 1,
                u.index,
                u.bytes
            );
            return Some(plan(v, level, u.files, level + 1, reason));
        }
    }
    None
}

/// Push `files` (a closure of guards of `level`, see [`closure`]) into `level + 1`, cut at
/// its guards; at the second-to-last level, rewrite them in place instead when the last
/// level's guards that would receive them are full and hold more than `rewrite_ratio` times
/// their bytes (the paper's 25x rule). `None` when a running compaction blocks the plan.
fn push(
    v: &Version,
    cfg: &PickerConfig,
    busy: &Busy,
    level: usize,
    files: Vec<Arc<FileMeta>>,
    reason: String,
) -> Option<Plan> {
    let last = v.num_levels() - 1;
    if level + 1 == last && files.len() > 1 {
        // The 25x rule: full last-level guards below this one would be rewritten.
        let (lo, hi) = key_range(&files)?;
        let g = v.guards(last);
        let full: u64 = (unit_index(g, lo)..=unit_index(g, hi))
            .map(|c| v.unit_files(last, c))
            .filter(|fs| fs.len() >= cfg.max_files_per_guard)
            .map(bytes)
            .sum();
        if full > bytes(&files).saturating_mul(cfg.rewrite_ratio) {
            if busy.blocks(&files, level) {
                return None;
            }
            let reason = format!("{reason}; rewritten in place (25x rule: {full} bytes below)");
            return Some(plan(v, level, files, level, reason));
        }
    }
    if busy.blocks(&files, level + 1) {
        return None;
    }
    Some(plan(v, level, files, level + 1, reason))
}

/// Push the fullest free guard of `level` down (or rewrite it in place by the 25x rule).
fn push_down(
    v: &Version,
    cfg: &PickerConfig,
    busy: &Busy,
    level: usize,
    score: f64,
) -> Option<Plan> {
    let mut us = units(v, level);
    us.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.index.cmp(&b.index)));
    us.into_iter().find_map(|u| {
        let reason = format!(
            "L{level} score {score:.2}, guard {} holds {} bytes",
            u.index, u.bytes
        );
        push(v, cfg, busy, level, u.files, reason)
    })
}

/// Merge `files` of `level` in place, unless a running compaction holds one of them.
fn in_place(
    v: &Version,
    busy: &Busy,
    level: usize,
    files: Vec<Arc<FileMeta>>,
    reason: String,
) -> Option<Plan> {
    if busy.blocks(&files, level) {
        None
    } else {
        Some(plan(v, level, files, level, reason))
    }
}

/// The compaction of guard `u` of `level`, which holds more than `max_files_per_guard`
/// tables, under `cfg.policy` (see the module documentation).
fn overflow(v: &Version, cfg: &PickerConfig, busy: &Busy, level: usize, u: usize) -> Option<Plan> {
    let max_files = cfg.max_files_per_guard.max(1);
    let held = v.unit_files(level, u).len();
    let mut reason = format!("L{level} guard {u} holds {held} tables (max {max_files})");
    let last = v.num_levels() - 1;
    match cfg.policy {
        FlsmPolicy::Paper if level < last => {
            let files = closure(v, level, u, u);
            push(v, cfg, busy, level, files, reason)
        }
        FlsmPolicy::Paper => {
            let files = v.unit_files(level, u).to_vec();
            reason.push_str("; the last level merges in place");
            in_place(v, busy, level, files, reason)
        }
        FlsmPolicy::Tiered => {
            let files = newest_run(v.unit_files(level, u).to_vec());
            if files.len() < held {
                reason.push_str(&format!("; its newest {} merged", files.len()));
            }
            in_place(v, busy, level, files, reason)
        }
    }
}

/// The next compaction, if any. `hot` lists guards that seeks want compacted.
pub fn pick(v: &Version, cfg: &PickerConfig, busy: &Busy, hot: &[HotGuard]) -> Option<Plan> {
    let n = v.num_levels();
    if n < 2 {
        return None;
    }
    let last = n - 1;
    // (score, level, overflow guard) candidates
    let mut cands: Vec<(f64, usize, Option<usize>)> = Vec::new();
    cands.push((
        v.level(0).len() as f64 / cfg.level0_trigger.max(1) as f64,
        0,
        None,
    ));
    let max_files = cfg.max_files_per_guard.max(1);
    for level in 1..n {
        if level < last {
            cands.push((
                v.level_bytes(level) as f64 / cfg.max_bytes(level) as f64,
                level,
                None,
            ));
        }
        for u in 0..v.unit_count(level) {
            let files = v.unit_files(level, u).len();
            if files > max_files {
                cands.push((files as f64 / (max_files + 1) as f64, level, Some(u)));
            }
        }
    }
    cands.retain(|c| c.0 >= 1.0);
    cands.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    for (score, level, guard) in cands {
        let p = match (level, guard) {
            (0, _) => {
                let files = v.level(0).to_vec();
                if busy.blocks(&files, 1) {
                    None
                } else {
                    let reason = format!(
                        "L0 has {} files (trigger {})",
                        files.len(),
                        cfg.level0_trigger
                    );
                    Some(plan(v, 0, files, 1, reason))
                }
            }
            (l, None) => push_down(v, cfg, busy, l, score),
            (l, Some(u)) => overflow(v, cfg, busy, l, u),
        };
        if p.is_some() {
            return p;
        }
    }
    for &(level, u) in hot {
        if level == 0 || level >= n || u >= v.unit_count(level) {
            continue;
        }
        let files = closure(v, level, u, u);
        if files.len() <= 1 {
            continue;
        }
        let reason = format!(
            "seeks keep landing on L{level} guard {u} ({} tables)",
            files.len()
        );
        let p = match cfg.policy {
            FlsmPolicy::Paper if level < last => push(v, cfg, busy, level, files, reason),
            _ => in_place(v, busy, level, files, reason),
        };
        if p.is_some() {
            return p;
        }
    }
    aggressive(v, cfg, busy)
}

/// Manual compaction: every table of `level` in guards overlapping `[begin, end]` (with
/// their closure), pushed into the next level. Level 0 takes all its files.
/// A manual compaction's last step with a compaction filter
/// ([`crate::layout::Layout::pick_bottom`]): every table of the guards of the deepest level that meet `[begin, end]`,
/// merged in place.
pub fn pick_bottom(v: &Version, begin: Option<&[u8]>, end: Option<&[u8]>) -> Option<Plan> {
    let level = (1..v.num_levels())
        .rev()
        .find(|&l| !v.overlapping(l, begin, end).is_empty())?;
    let g = v.guards(level);
    let a = begin.map_or(0, |b| unit_index(g, b));
    let b = end.map_or(g.len(), |e| unit_index(g, e));
    let files = closure(v, level, a, b);
    if files.is_empty() {
        return None;
    }
    Some(Plan {
        kind: PlanKind::Merge,
        inputs: vec![(level, files)],
        output_level: level,
        reason: "manual compaction of the last level (compaction filter)".to_string(),
    })
}

pub fn pick_range(
    v: &Version,
    level: usize,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Option<Plan> {
    if level + 1 >= v.num_levels() {
        return None;
    }
    if v.overlapping(level, begin, end).is_empty() {
        return None;
    }
    let files = if level == 0 {
        v.level(0).to_vec()
    } else {
        let g = v.guards(level);
        let a = begin.map_or(0, |b| unit_index(g, b));
        let b = end.map_or(g.len(), |e| unit_index(g, e));
        closure(v, level, a, b)
    };
    if files.is_empty() {
        return None;
    }
    let mut p = plan(v, level, files, level + 1, "manual compaction".to_string());
    p.kind = PlanKind::Merge;
    Some(p)
}
