//! Seek-triggered compaction (LevelDB's `allowed_seeks`), shared by the leveled and the LWC
//! layouts: reads that had to look into more than one table for a key (LWC: or into a table
//! of several segments) charge the first of them, and a table whose charges reach its
//! allowance is compacted when no level is over its size limit (each layout's picker decides
//! how). The
//! allowance is LevelDB's cost model: one seek costs about as much as compacting
//! `bytes_per_seek` bytes (LevelDB: 16 KiB), and every table absorbs at least `min_seeks`
//! (LevelDB: 100).
//!
//! LevelDB keeps the count in the file's metadata, so a file moved to another level starts
//! over; here it is kept per (level, file number), which does the same. Counting is best
//! effort: a read that finds the counters locked skips its charge rather than wait.

use std::collections::HashMap;
use std::collections::HashSet;

use parking_lot::Mutex;

use crate::layout::Plan;
use crate::version::{FileMeta, Version};

/// A table whose seek allowance reads have used up: its level and number when it was
/// charged (the layout keeps the charges; the picker only reads them).
pub type SeekDue = (usize, u64);

/// The seek counters of one store (see the module documentation).
#[derive(Debug)]
pub struct SeekCharges {
    min_seeks: u64,
    bytes_per_seek: u64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Seeks charged to each table, by the level it was charged at and its number.
    charged: HashMap<(usize, u64), u64>,
    /// Tables whose charges reached their allowance, in the order they did.
    due: Vec<SeekDue>,
}

impl SeekCharges {
    /// Counters where a table absorbs `max(min_seeks, size / bytes_per_seek)` seeks.
    pub fn new(min_seeks: u32, bytes_per_seek: u64) -> SeekCharges {
        SeekCharges {
            min_seeks: u64::from(min_seeks.max(1)),
            bytes_per_seek: bytes_per_seek.max(1),
            state: Mutex::new(State::default()),
        }
    }

    /// The seeks table `f` absorbs before it is compacted.
    pub fn allowance(&self, f: &FileMeta) -> u64 {
        self.min_seeks.max(f.size / self.bytes_per_seek)
    }

    /// Charge table `f` of `level` one seek. Returns true when this charge used up its
    /// allowance (once per table and level), so a compaction became wanted.
    pub fn charge(&self, level: usize, f: &FileMeta) -> bool {
        let Some(mut s) = self.state.try_lock() else {
            return false;
        };
        let allowance = self.allowance(f);
        let c = s.charged.entry((level, f.number)).or_insert(0);
        *c += 1;
        if *c != allowance {
            return false;
        }
        s.due.push((level, f.number));
        true
    }

    /// The tables due for compaction that are still where they were charged in `version`.
    /// Drops the counters of tables that left it, now and then (a charge from a reader of an
    /// older version may name a table that is gone).
    pub fn due(&self, version: &Version) -> Vec<SeekDue> {
        let mut s = self.state.lock();
        let present = |&(level, number): &(usize, u64)| {
            version.level(level).iter().any(|f| f.number == number)
        };
        s.due.retain(present);
        if s.charged.len() > 2 * version.file_count() + 64 {
            let live: HashSet<(usize, u64)> = version.files().map(|(l, f)| (l, f.number)).collect();
            s.charged.retain(|k, _| live.contains(k));
        }
        s.due.clone()
    }

    /// Forget the charges of the tables `plan` compacts: they leave their level (a merge
    /// deletes them, a move adds them to the next level, where LevelDB too starts their
    /// count over).
    pub fn forget(&self, plan: &Plan) {
        let mut s = self.state.lock();
        for (level, f) in plan.input_files() {
            s.charged.remove(&(level, f.number));
            s.due.retain(|&d| d != (level, f.number));
        }
    }
}
