//! The LSM-trie layout (Wu et al., USENIX ATC'15): a trie of table containers addressed by
//! the SHA-1 of the key, 3 bits (8 children) a level.
//!
//! ```text
//! level 0   [root: t9 t8 t7]                     flushes land here, newest first
//! level 1   [000: t5 t2] [001: t6] … [111: t4]    a container per 3-bit prefix
//! level 2   [000000: …] …                         64 containers
//! last      containers grow by sub-levels and are garbage-collected
//! ```
//!
//! A container's pile holds *sub-levels*: one table each. When a container above the last
//! level holds [`crate::options::TrieOptions::max_sub_levels`] tables, its whole pile is
//! merged and split by the next 3 bits of each key's hashkey into one new table per child,
//! laid on top of the child's pile; the children's existing tables are never rewritten.
//! The last level only grows; a container there whose estimated garbage (versions its newer
//! sub-levels shadow, sampled when a sub-level is added, plus tombstones) reaches
//! [`crate::options::TrieOptions::gc_garbage_ratio`] is merged into one table in place.
//!
//! A get hashes the key once and asks, level by level from the root, the one container on
//! the key's path, newest table first; the first version at or below the read's sequence
//! number wins (every table of a container holds newer entries than every table below it,
//! and a container's entries are newer than its descendants'). The filters of a container
//! are clustered (the paper's BloomCluster): each new table carries the column filters of
//! the older tables of its pile (up to `max_sub_levels` tables, then a new cluster starts),
//! so one column block of the newest table's cluster answers for the whole pile; the
//! clusters of the first [`crate::options::TrieOptions::pinned_filter_levels`] levels are
//! kept in memory. Scans are not supported:
//! [`Layout::iterators`] returns [`crate::Error::Unsupported`]. See
//! `docs/designs/lsm-trie.md`.

pub mod state;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Layout, PickContext, Plan, PlanKind, ReadContext};
use crate::compaction::{CompactionContext, MergeSpec, merge_into_tables};
use crate::env::ReadCause;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::iter::merging::MergingIterator;
use crate::key::{MAX_SEQNO, seek_key, user_key};
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::table::bloom;
use crate::table::cache::TableCache;
use crate::table::htable::cluster::column_word;
use crate::table::htable::{HTable, LoadedCluster, hashkey, prefix64};
use crate::table::{Pile, TableReader};
use crate::version::{FileMeta, LayoutState, Version};
use state::{TrieState, container_of, container_of_key, garbage_record};

/// See the module documentation.
#[derive(Debug)]
pub struct Trie {
    max_sub_levels: usize,
    gc_ratio: f64,
    sample_mask: u64,
    pinned_levels: usize,
}

/// How a key is asked of the filters: its column word ([`column_word`]) and bloom hash.
#[derive(Clone, Copy)]
struct Probe {
    w: u32,
    hash: u64,
}

/// The filters' answers gathered at one level: (table number, may hold the key).
type Answers = Vec<(u64, bool)>;

/// Why scans fail.
const NO_SCANS: &str = "the lsm-trie layout places keys by hash and answers point reads only \
                        (get, put, delete, batches, snapshots); scans and cursors are not \
                        supported";

impl Trie {
    /// A trie layout configured from `options`.
    pub fn new(options: &Options) -> Trie {
        Trie {
            max_sub_levels: options.trie.max_sub_levels,
            gc_ratio: options.trie.gc_garbage_ratio,
            sample_mask: (1u64 << options.trie.gc_sample_bits.min(16)) - 1,
            pinned_levels: options.trie.pinned_filter_levels,
        }
    }

    /// The filter cluster of `f`, the newest table of its pile, kept in `st` (read whole
    /// the first time); `None` when the table has none.
    fn pinned(
        st: &TrieState,
        f: &FileMeta,
        tables: &Arc<TableCache>,
        cause: ReadCause,
    ) -> Result<Option<Arc<LoadedCluster>>> {
        let Some(slot) = st.cluster_slot(f.number) else {
            return Ok(None);
        };
        if let Some(c) = slot.get() {
            return Ok(c.clone());
        }
        let t = tables.table(f.table_id())?;
        let c = match t.as_any().downcast_ref::<HTable>() {
            Some(h) => h.load_cluster(cause)?.map(Arc::new),
            None => None,
        };
        // A racing get may have stored the same cluster first: either copy answers alike.
        let _ = slot.set(c.clone());
        Ok(c)
    }

    /// Whether table `f`, at position `i` of its pile at `level`, may hold the key `p`
    /// asks for, and its reader if it was opened for the answer. The answers of every
    /// cluster read at this level are kept in `answers`: a table the cluster of a newer
    /// table of its pile covers is answered without reading (the common case: the newest
    /// table's cluster covers the whole pile). Otherwise the table's own cluster answers
    /// (kept in memory for the newest table of a pinned level, else one column block), or
    /// a version 1 table's whole filter.
    #[allow(clippy::too_many_arguments)]
    fn may_hold(
        &self,
        st: &TrieState,
        level: usize,
        i: usize,
        f: &FileMeta,
        tables: &Arc<TableCache>,
        cause: ReadCause,
        p: Probe,
        answers: &mut Answers,
    ) -> Result<(bool, Option<Arc<dyn TableReader>>)> {
        if let Some(&(_, m)) = answers.iter().find(|a| a.0 == f.number) {
            return Ok((m, None));
        }
        let own = answers.len();
        if i == 0
            && level < self.pinned_levels
            && let Some(c) = Self::pinned(st, f, tables, cause)?
        {
            c.probe(p.w, p.hash, |n, m| answers.push((n, m)))?;
            return Ok((answers.get(own).is_some_and(|a| a.1), None));
        }
        let t = tables.table(f.table_id())?;
        if let Some(h) = t.as_any().downcast_ref::<HTable>()
            && h.cluster_probe(p.w, p.hash, cause, |n, m| answers.push((n, m)))?
        {
            return Ok((answers.get(own).is_some_and(|a| a.1), Some(t)));
        }
        let m = t.may_contain_hash(p.hash);
        answers.push((f.number, m));
        Ok((m, Some(t)))
    }

    /// The pile a table written into container `c` of `level` is laid on (its newest table
    /// must open; a pile that cannot gives none, and the new table's cluster holds only its
    /// own filters).
    fn pile_of(
        &self,
        st: &TrieState,
        level: usize,
        c: u64,
        tables: &Arc<TableCache>,
    ) -> Option<Pile> {
        let pile = st.pile(level, c);
        let newest = pile.first()?;
        let below = tables.table(newest.table_id()).ok()?;
        Some(Pile {
            below,
            live: pile.iter().map(|f| f.number).collect(),
            max: self.max_sub_levels,
        })
    }

    /// The estimated share of `pile`'s entries that are garbage.
    fn garbage_ratio(st: &TrieState, pile: &[Arc<FileMeta>]) -> f64 {
        let entries: u64 = pile.iter().map(|f| f.entries).sum();
        if entries == 0 {
            return 0.0;
        }
        let garbage: u64 = pile
            .iter()
            .map(|f| st.garbage(f.number) + f.tombstones)
            .sum();
        garbage as f64 / entries as f64
    }

    /// For `keys` (sampled user keys written into the last level), the number of older
    /// tables of their container holding each, summed per container. Best effort: a table
    /// that cannot be read counts as not holding the key (the estimate is a hint, and a
    /// damaged table is reported by the reads that need it, not by this compaction).
    fn sample_hits(
        &self,
        keys: &[Vec<u8>],
        v: &Version,
        last: usize,
        ctx: &CompactionContext<'_>,
    ) -> BTreeMap<u64, u64> {
        let st = state::state(v);
        let mut hits: BTreeMap<u64, u64> = BTreeMap::new();
        let mut answers = Answers::new();
        let cause = ReadCause::Compaction;
        for k in keys {
            let hk = hashkey(k);
            let c = container_of(prefix64(&hk), last);
            let older = st.pile(last, c);
            if older.is_empty() {
                continue;
            }
            let p = Probe {
                w: column_word(&hk),
                hash: bloom::hash64(k),
            };
            let seek = seek_key(k, MAX_SEQNO);
            answers.clear();
            let mut n = 0;
            for (i, f) in older.iter().enumerate() {
                let Ok((true, t)) =
                    self.may_hold(st, last, i, f, ctx.tables, cause, p, &mut answers)
                else {
                    continue;
                };
                let t = match t {
                    Some(t) => t,
                    None => match ctx.tables.table(f.table_id()) {
                        Ok(t) => t,
                        Err(_) => continue,
                    },
                };
                if matches!(t.lookup(k, &seek, cause.into()), Ok(Some(_))) {
                    n += 1;
                }
            }
            *hits.entry(c).or_default() += n;
        }
        hits
    }
}

/// The input of one container's merge, recording the user keys the sampling rule picks.
struct Sampling {
    inner: MergingIterator,
    mask: u64,
    /// Off when nothing is sampled (not a merge into the last level).
    on: bool,
    last_key: Vec<u8>,
    sampled: Vec<Vec<u8>>,
}

impl Sampling {
    fn note(&mut self) {
        if !self.on || !self.inner.valid() {
            return;
        }
        let k = user_key(self.inner.key());
        if k == self.last_key.as_slice() {
            return;
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(k);
        if bloom::hash64(k) & self.mask == 0 {
            self.sampled.push(k.to_vec());
        }
    }
}

impl InternalIterator for Sampling {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.inner.seek_to_first()?;
        self.note();
        Ok(())
    }
    fn seek_to_last(&mut self) -> Result<()> {
        Err(Error::Unsupported(
            "a compaction input only moves forward".into(),
        ))
    }
    fn seek(&mut self, _target: &[u8]) -> Result<()> {
        Err(Error::Unsupported(
            "a compaction input only moves forward".into(),
        ))
    }
    fn next(&mut self) -> Result<()> {
        self.inner.next()?;
        self.note();
        Ok(())
    }
    fn prev(&mut self) -> Result<()> {
        Err(Error::Unsupported(
            "a compaction input only moves forward".into(),
        ))
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}

/// The step of a manual compaction that merges every container of the deepest level in
/// place (after the steps that push each level into the next).
const BOTTOM_STEP: usize = usize::MAX;

/// A plan merging every table of `level` into `output_level` (manual compaction).
fn whole_level(version: &Version, level: usize, output_level: usize, reason: &str) -> Option<Plan> {
    let files = version.level(level);
    (!files.is_empty()).then(|| Plan {
        kind: PlanKind::Merge,
        inputs: vec![(level, files.to_vec())],
        output_level,
        reason: reason.to_string(),
    })
}

impl Layout for Trie {
    fn name(&self) -> &'static str {
        "trie"
    }

    fn empty_state(&self) -> Arc<dyn LayoutState> {
        Arc::new(TrieState::default())
    }

    fn supports_scans(&self) -> bool {
        false
    }

    /// `shale.trie-containers-at-level<N>`: the non-empty containers of level N;
    /// `shale.trie-piles-at-level<N>`: one line per non-empty container, `prefix tables`,
    /// the prefix in octal (one digit per level).
    fn property(&self, version: &Version, name: &str) -> Option<String> {
        let st = state::state(version);
        if let Some(l) = name.strip_prefix("shale.trie-containers-at-level") {
            let l: usize = l.parse().ok()?;
            return (l < version.num_levels()).then(|| st.containers(l).count().to_string());
        }
        let l: usize = name
            .strip_prefix("shale.trie-piles-at-level")?
            .parse()
            .ok()?;
        (l < version.num_levels()).then(|| {
            let mut out = String::new();
            for (c, pile) in st.containers(l) {
                let digits = if l == 0 {
                    "-".to_string()
                } else {
                    format!("{c:0l$o}")
                };
                out.push_str(&format!("{digits} {}\n", pile.len()));
            }
            out
        })
    }

    /// One new table on the root's pile, carrying the pile's filters in its cluster.
    fn flush(
        &self,
        input: &mut dyn InternalIterator,
        ctx: &CompactionContext<'_>,
    ) -> Result<VersionEdit> {
        let st = state::state(ctx.version);
        let pile = |_: usize| self.pile_of(st, 0, 0, ctx.tables);
        let spec = MergeSpec {
            target_file_size: u64::MAX,
            // Tombstones stay: older versions of their keys may sit in the tables below.
            is_base_for_key: &|_| false,
            level: 0,
            partition: None,
            pile: Some(&pile),
        };
        let (files, _) = merge_into_tables(input, &spec, ctx)?;
        let mut edit = VersionEdit::default();
        edit.new_files.extend(files.into_iter().map(|f| (0, f)));
        Ok(edit)
    }

    fn get(
        &self,
        version: &Version,
        ctx: &ReadContext<'_>,
        user_key: &[u8],
        seek_key: &[u8],
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let st = state::state(version);
        let hk = hashkey(user_key);
        let prefix = prefix64(&hk);
        let p = Probe {
            w: column_word(&hk),
            hash: bloom::hash64(user_key),
        };
        let mut answers = Answers::new();
        for level in 0..version.num_levels() {
            let pile = st.pile(level, container_of(prefix, level));
            answers.clear();
            for (i, f) in pile.iter().enumerate() {
                let (pass, t) =
                    self.may_hold(st, level, i, f, ctx.tables, ctx.read.cause, p, &mut answers)?;
                if !pass {
                    continue;
                }
                let t = match t {
                    Some(t) => t,
                    None => ctx.tables.table(f.table_id())?,
                };
                if let Some(hit) = t.lookup(user_key, seek_key, ctx.read)? {
                    return Ok(Some(hit));
                }
            }
        }
        Ok(None)
    }

    fn iterators(
        &self,
        _version: &Arc<Version>,
        _ctx: &ReadContext<'_>,
    ) -> Result<Vec<Box<dyn InternalIterator>>> {
        Err(Error::Unsupported(NO_SCANS.into()))
    }

    fn approximate_size(
        &self,
        _version: &Version,
        _ctx: &ReadContext<'_>,
        _start: &[u8],
        _limit: &[u8],
    ) -> Result<u64> {
        Err(Error::Unsupported(
            "the lsm-trie layout places keys by hash: the bytes of a key range cannot be \
             estimated"
                .into(),
        ))
    }

    fn pick(&self, version: &Version, running: &PickContext) -> Option<Plan> {
        let st = state::state(version);
        let last = version.num_levels() - 1;
        let free = |pile: &[Arc<FileMeta>]| !pile.iter().any(|f| running.is_busy(f));
        // A full pile above the last level, the shallowest level first (the root holds the
        // flushes writers wait for), then the fullest container.
        for level in 0..last {
            let best = st
                .containers(level)
                .filter(|(_, pile)| pile.len() >= self.max_sub_levels && free(pile))
                .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(&a.0)));
            if let Some((c, pile)) = best {
                return Some(Plan {
                    kind: PlanKind::Merge,
                    inputs: vec![(level, pile.to_vec())],
                    output_level: level + 1,
                    reason: format!(
                        "container {c:o} of level {level} holds {} tables (limit {})",
                        pile.len(),
                        self.max_sub_levels
                    ),
                });
            }
        }
        // Garbage collection of the last level: the container with the most garbage.
        let mut best: Option<(f64, u64, &[Arc<FileMeta>])> = None;
        for (c, pile) in st.containers(last) {
            if pile.len() < 2 || !free(pile) {
                continue;
            }
            let r = Self::garbage_ratio(st, pile);
            if r >= self.gc_ratio && best.as_ref().is_none_or(|b| r > b.0) {
                best = Some((r, c, pile));
            }
        }
        best.map(|(r, c, pile)| Plan {
            kind: PlanKind::Merge,
            inputs: vec![(last, pile.to_vec())],
            output_level: last,
            reason: format!(
                "last-level container {c:o}: about {:.0}% of its {} tables' entries are garbage",
                r * 100.0,
                pile.len()
            ),
        })
    }

    /// Every level from the root down to the deepest one holding data (at least the root)
    /// is pushed into the next, then (step [`BOTTOM_STEP`]) every container of the deepest
    /// level is merged into one table: a key range says nothing about where its keys are,
    /// so every container takes part, and afterwards each key is stored once (what
    /// LevelDB's full `CompactRange` leaves), with no tombstone.
    fn range_steps(
        &self,
        version: &Version,
        _begin: Option<&[u8]>,
        _end: Option<&[u8]>,
    ) -> Vec<usize> {
        let levels = version.num_levels();
        match (0..levels).rev().find(|&l| !version.level(l).is_empty()) {
            Some(d) => (0..d.max(1).min(levels - 1))
                .chain(std::iter::once(BOTTOM_STEP))
                .collect(),
            None => Vec::new(),
        }
    }

    fn pick_range(
        &self,
        version: &Version,
        step: usize,
        _begin: Option<&[u8]>,
        _end: Option<&[u8]>,
    ) -> Option<Plan> {
        if step == BOTTOM_STEP {
            let level = (0..version.num_levels())
                .rev()
                .find(|&l| !version.level(l).is_empty())?;
            return whole_level(
                version,
                level,
                level,
                "manual compaction: the deepest level merged in place",
            );
        }
        whole_level(version, step, step + 1, "manual compaction")
    }

    /// None: the last step of every manual compaction already merged the deepest level in
    /// place, so a compaction filter has seen every entry.
    fn pick_bottom(
        &self,
        _version: &Version,
        _begin: Option<&[u8]>,
        _end: Option<&[u8]>,
    ) -> Option<Plan> {
        None
    }

    fn compact(&self, plan: &Plan, ctx: &CompactionContext<'_>) -> Result<VersionEdit> {
        let mut edit = plan.delete_inputs();
        let v = ctx.version;
        let st = state::state(v);
        let last = v.num_levels() - 1;
        let out = plan.output_level;
        // The inputs, by level and container: each container is merged on its own.
        let mut by_container: BTreeMap<(usize, u64), Vec<&Arc<FileMeta>>> = BTreeMap::new();
        for (level, f) in plan.input_files() {
            let c = st
                .container(f.number)
                .unwrap_or_else(|| container_of_key(f.smallest_user_key(), level));
            by_container.entry((level, c)).or_default().push(f);
        }
        for ((level, container), files) in by_container {
            let in_place = level == out;
            let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
            for f in &files {
                children.push(
                    ctx.tables
                        .table(f.table_id())?
                        .iter(ReadCause::Compaction.into()),
                );
            }
            // No older version of a key exists outside the inputs when every container on
            // its path below them is empty (the output container too, unless it is the
            // inputs' own).
            let first_below = if in_place { out + 1 } else { out };
            let is_base = |uk: &[u8]| {
                let p = prefix64(&hashkey(uk));
                (first_below..v.num_levels()).all(|l| st.pile(l, container_of(p, l)).is_empty())
            };
            // The child is chosen by the key's hashkey, which the child's writer is given
            // (so it does not hash the key again to choose its bucket).
            let child = |uk: &[u8]| {
                let hk = hashkey(uk);
                ((container_of(prefix64(&hk), out) & 7) as usize, Some(hk))
            };
            // Each child's new table is laid on the child's pile (a merge in place replaces
            // its whole pile: nothing is below).
            let pile =
                |part: usize| self.pile_of(st, out, (container << 3) | part as u64, ctx.tables);
            let spec = MergeSpec {
                target_file_size: u64::MAX,
                is_base_for_key: &is_base,
                level: out,
                partition: if in_place { None } else { Some(&child) },
                pile: if in_place { None } else { Some(&pile) },
            };
            let mut input = Sampling {
                inner: MergingIterator::new(children),
                mask: self.sample_mask,
                on: out == last && !in_place,
                last_key: Vec::new(),
                sampled: Vec::new(),
            };
            let (outputs, _) = merge_into_tables(&mut input, &spec, ctx)?;
            let hits = if input.on {
                self.sample_hits(&input.sampled, v, last, ctx)
            } else {
                BTreeMap::new()
            };
            for f in outputs {
                let c = container_of_key(f.smallest_user_key(), out);
                if let Some(&h) = hits.get(&c) {
                    let older: u64 = st.pile(last, c).iter().map(|o| o.entries).sum();
                    let estimate = (h * (self.sample_mask + 1)).min(older);
                    if estimate > 0 {
                        edit.records.push(garbage_record(f.number, estimate));
                    }
                }
                edit.new_files.push((out as u32, f));
            }
        }
        Ok(edit)
    }
}
