//! The trie layout's state: the containers of each level and their piles, and the garbage
//! estimates of last-level tables.
//!
//! Which container a table belongs to is a fact of the table itself: every key of a table
//! at level `d` shares the first `3d` bits of its hashkey (SHA-1), which name the container,
//! and the table's smallest key is in its `FileMeta` (so in the MANIFEST). The containers
//! are therefore derived from the files of each version, as FLSM derives the files of its
//! guards, and need no record of their own; a pile is ordered by the tables' sequence
//! numbers (the tables of one container hold disjoint, increasing sequence ranges, oldest
//! sub-level first: see `docs/designs/lsm-trie.md`).
//!
//! The one layout record is [`GARBAGE`] (`docs/format/manifest.md`, "LSM-trie garbage
//! estimates"): the estimated number of entries in older sub-levels of its container that a
//! table written into the last level shadows, `number: varint64, entries: varint64`.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use crate::format::{Reader, put_varint64};
use crate::manifest::{Axis, AxisRecord};
use crate::table::htable::{LoadedCluster, hashkey, prefix64};
use crate::version::{FileMeta, LayoutState, Version};

/// Layout record kind: a garbage estimate of a last-level table. On-disk: never renumber.
pub const GARBAGE: u32 = 32;

/// The container of a key with hashkey prefix `p` (the hashkey's first 64 bits) at depth
/// `level`: the first `3 * level` bits.
pub fn container_of(p: u64, level: usize) -> u64 {
    if level == 0 {
        0
    } else {
        p >> (64 - 3 * level.min(21))
    }
}

/// The container of `user_key` at `level`.
pub fn container_of_key(user_key: &[u8], level: usize) -> u64 {
    container_of(prefix64(&hashkey(user_key)), level)
}

/// A garbage-estimate record.
pub fn garbage_record(number: u64, entries: u64) -> AxisRecord {
    let mut p = Vec::with_capacity(20);
    put_varint64(&mut p, number);
    put_varint64(&mut p, entries);
    AxisRecord::new(Axis::Layout, GARBAGE, p)
}

/// Where the filter cluster of a pile's newest table is kept once read
/// (`Some(None)`: the table has none). Shared by every version in which the table is still
/// its pile's newest, so it is read once; dropped with the last such version.
pub type ClusterSlot = Arc<OnceLock<Option<Arc<LoadedCluster>>>>;

/// Containers by level, and garbage estimates; see the module documentation.
#[derive(Clone, Debug, Default)]
pub struct TrieState {
    /// Per level: container -> its pile, newest first.
    containers: Vec<BTreeMap<u64, Vec<Arc<FileMeta>>>>,
    /// The container of each file (so a file's key is hashed once).
    container: HashMap<u64, u64>,
    /// Estimated entries in older sub-levels that a last-level table shadows, by number.
    garbage: HashMap<u64, u64>,
    /// The filter cluster of each pile's newest table, by its number.
    clusters: HashMap<u64, ClusterSlot>,
}

fn decode(r: &AxisRecord) -> Result<(u64, u64), String> {
    if r.kind != GARBAGE {
        return Err(format!("unknown trie layout record kind {}", r.kind));
    }
    if r.version != 1 {
        return Err(format!(
            "trie garbage record version {} (this release reads 1)",
            r.version
        ));
    }
    let mut rd = Reader::new(&r.payload);
    let number = rd.varint64()?;
    let entries = rd.varint64()?;
    if !rd.is_empty() {
        return Err("trailing bytes in a trie garbage record".into());
    }
    Ok((number, entries))
}

impl LayoutState for TrieState {
    fn apply(
        self: Arc<Self>,
        records: &[&AxisRecord],
        levels: &[Vec<Arc<FileMeta>>],
    ) -> Result<Arc<dyn LayoutState>, String> {
        let mut garbage = self.garbage.clone();
        for r in records {
            let (number, entries) = decode(r)?;
            garbage.insert(number, entries);
        }
        let mut container = HashMap::with_capacity(self.container.len() + 8);
        let mut containers = vec![BTreeMap::<u64, Vec<Arc<FileMeta>>>::new(); levels.len()];
        for (level, files) in levels.iter().enumerate() {
            for f in files {
                let c = match self.container.get(&f.number) {
                    Some(&c) => c,
                    None => container_of_key(f.smallest_user_key(), level),
                };
                container.insert(f.number, c);
                if let Some(l) = containers.get_mut(level) {
                    l.entry(c).or_default().push(Arc::clone(f));
                }
            }
        }
        for l in &mut containers {
            for pile in l.values_mut() {
                pile.sort_by(|a, b| {
                    b.largest_seq
                        .cmp(&a.largest_seq)
                        .then(b.number.cmp(&a.number))
                });
            }
        }
        garbage.retain(|n, _| container.contains_key(n));
        let clusters = containers
            .iter()
            .flat_map(|l| l.values())
            .filter_map(|pile| pile.first())
            .map(|f| {
                let slot = self.clusters.get(&f.number).cloned().unwrap_or_default();
                (f.number, slot)
            })
            .collect();
        Ok(Arc::new(TrieState {
            containers,
            container,
            garbage,
            clusters,
        }))
    }

    fn snapshot(&self, out: &mut Vec<AxisRecord>) {
        let mut g: Vec<(&u64, &u64)> = self.garbage.iter().collect();
        g.sort();
        for (n, e) in g {
            out.push(garbage_record(*n, *e));
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

static EMPTY: std::sync::LazyLock<TrieState> = std::sync::LazyLock::new(TrieState::default);

/// The trie view of a version (a version whose layout state is not a [`TrieState`] reads
/// as an empty trie).
pub fn state(v: &Version) -> &TrieState {
    v.layout_state()
        .as_any()
        .downcast_ref::<TrieState>()
        .unwrap_or(&EMPTY)
}

impl TrieState {
    /// The pile of container `c` at `level`, newest first.
    pub fn pile(&self, level: usize, c: u64) -> &[Arc<FileMeta>] {
        self.containers
            .get(level)
            .and_then(|l| l.get(&c))
            .map_or(&[], Vec::as_slice)
    }

    /// The non-empty containers of `level`, by container number.
    pub fn containers(&self, level: usize) -> impl Iterator<Item = (u64, &[Arc<FileMeta>])> {
        self.containers
            .get(level)
            .into_iter()
            .flat_map(|l| l.iter().map(|(c, p)| (*c, p.as_slice())))
    }

    /// The container of file `number` (`None` for a file not in the version).
    pub fn container(&self, number: u64) -> Option<u64> {
        self.container.get(&number).copied()
    }

    /// Where the filter cluster of table `number` is kept, if it is the newest table of
    /// its pile.
    pub fn cluster_slot(&self, number: u64) -> Option<&ClusterSlot> {
        self.clusters.get(&number)
    }

    /// The garbage estimate recorded for table `number` (0 when none is).
    pub fn garbage(&self, number: u64) -> u64 {
        self.garbage.get(&number).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::VersionEdit;

    #[test]
    fn garbage_record_worked_example() {
        let e = VersionEdit {
            records: vec![garbage_record(300, 5)],
            ..VersionEdit::default()
        };
        let mut buf = Vec::new();
        e.encode(&mut buf);
        let hex: String = buf.iter().map(|b| format!("{b:02x} ")).collect();
        assert_eq!(hex.trim_end(), "01 10 06 01 20 01 ac 02 05");
    }

    #[test]
    fn bad_records_are_refused() {
        let levels = vec![Vec::new(); 3];
        let empty = Arc::new(TrieState::default());
        let bad = [
            AxisRecord::new(Axis::Layout, 9, vec![1, 1]),
            AxisRecord {
                version: 2,
                ..garbage_record(1, 1)
            },
            AxisRecord::new(Axis::Layout, GARBAGE, vec![0x80]),
            AxisRecord::new(Axis::Layout, GARBAGE, vec![1, 1, 1]),
        ];
        for r in &bad {
            assert!(Arc::clone(&empty).apply(&[r], &levels).is_err(), "{r:?}");
        }
    }

    #[test]
    fn containers_follow_the_hash_prefix() {
        for k in [&b"a"[..], b"key000", b""] {
            let p = prefix64(&hashkey(k));
            assert_eq!(container_of(p, 0), 0);
            assert_eq!(container_of(p, 1), p >> 61);
            assert_eq!(container_of(p, 2) >> 3, container_of(p, 1));
            assert_eq!(container_of(p, 5) >> 3, container_of(p, 4));
        }
    }
}
