//! Output cutting by overlap with the level below the output (LevelDB's
//! `Compaction::ShouldStopBefore`): a compaction into level `n` ends its current output file
//! before a key once the grandparent files (level `n + 1`) that the output has passed since
//! its start hold more than the limit (LevelDB: `kMaxGrandParentOverlapBytes`, 10 target
//! files). Without it one output file can span a wide stretch of the level below, and the
//! compaction that later pushes it down rewrites all of that stretch.
//!
//! This is the leveled layout's [`CutRule`]; the cutting itself (a view of the merged input
//! that stops before the key where a new output must start, and the merge calls around it)
//! is shared with FLSM's guard cut in [`crate::layout::cut`].

use std::sync::Arc;

use crate::layout::cut::CutRule;
use crate::version::FileMeta;

/// Counts the grandparent bytes an output has passed (see the module documentation).
#[derive(Debug)]
pub struct GrandparentOverlap {
    /// Files of the level below the output that meet the compaction's range, in key order.
    grandparents: Vec<Arc<FileMeta>>,
    /// The first grandparent not yet passed.
    index: usize,
    /// Bytes of the grandparents passed since the current output began.
    overlapped: u64,
    /// More overlap than this starts a new output.
    limit: u64,
}

impl GrandparentOverlap {
    /// A counter over `grandparents` (sorted, disjoint) that cuts past `limit` bytes.
    pub fn new(grandparents: Vec<Arc<FileMeta>>, limit: u64) -> GrandparentOverlap {
        GrandparentOverlap {
            grandparents,
            index: 0,
            overlapped: 0,
            limit,
        }
    }

    /// Pass (and count) the grandparents wholly before `user_key`.
    fn pass_before(&mut self, user_key: &[u8]) {
        while let Some(g) = self.grandparents.get(self.index)
            && g.largest_user_key() < user_key
        {
            self.overlapped += g.size;
            self.index += 1;
        }
    }
}

impl CutRule for GrandparentOverlap {
    /// The count starts over at an output's first key; files wholly before the first
    /// key of the compaction are not its output's.
    fn start(&mut self, user_key: &[u8]) {
        self.pass_before(user_key);
        self.overlapped = 0;
    }

    /// As LevelDB's `ShouldStopBefore`: the grandparents wholly before the key are passed,
    /// and once they hold more than the limit a new output starts at this key.
    fn stop_before(&mut self, user_key: &[u8]) -> bool {
        self.pass_before(user_key);
        self.overlapped > self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::{InternalIterator, VecIter};
    use crate::key::{ValueKind, make_internal_key, user_key};
    use crate::layout::cut::Cut;
    use crate::version::text;

    /// Entries for `keys` (two versions of each), run through the cut as the merge runs it:
    /// one stretch per call, each read until the cut stops. Returns the user keys of each
    /// stretch.
    fn stretches(keys: &[&str], grandparents: &str, limit: u64) -> Vec<Vec<String>> {
        let mut entries = Vec::new();
        for k in keys {
            for seq in [9, 3] {
                entries.push((
                    make_internal_key(k.as_bytes(), seq, ValueKind::Value),
                    b"v".to_vec(),
                ));
            }
        }
        let v = text::parse(grandparents).unwrap();
        let gp = GrandparentOverlap::new(v.level(2).to_vec(), limit);
        let mut cut = Cut::new(VecIter::new(entries), gp);
        let mut out = Vec::new();
        loop {
            cut.seek_to_first().unwrap();
            let mut stretch: Vec<String> = Vec::new();
            while cut.valid() {
                let k = String::from_utf8(user_key(cut.key()).to_vec()).unwrap();
                if stretch.last() != Some(&k) {
                    stretch.push(k);
                }
                cut.next().unwrap();
            }
            out.push(stretch);
            if !cut.resume() {
                break;
            }
        }
        out
    }

    #[test]
    fn an_output_is_cut_once_it_passes_more_than_the_limit_of_grandparents() {
        // Five 8M grandparent files; the limit is 20M: an output may pass two and a half.
        let gp = "L2: 1:b-c/8M 2:d-e/8M 3:f-g/8M 4:h-i/8M 5:j-k/8M";
        let keys = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"];
        // From "a": passing files 1, 2 (16M) is fine; at "h" file 3 is passed too (24M): a
        // new output starts at "h". From there files 4 and 5 (16M) by "l": no cut.
        assert_eq!(
            stretches(&keys, gp, 20 << 20),
            [
                vec!["a", "b", "c", "d", "e", "f", "g"],
                vec!["h", "i", "j", "k", "l"]
            ]
        );
        // A limit of 10M cuts after every second file passed.
        assert_eq!(
            stretches(&keys, gp, 10 << 20),
            [
                vec!["a", "b", "c", "d", "e"],
                vec!["f", "g", "h", "i"],
                vec!["j", "k", "l"]
            ]
        );
        // Files wholly before the first key are not the output's.
        assert_eq!(
            stretches(&["h", "i", "j"], gp, 10 << 20),
            [vec!["h", "i", "j"]]
        );
        // No limit in effect: one stretch.
        assert_eq!(stretches(&keys, gp, u64::MAX).len(), 1);
        // Nothing to cut.
        assert_eq!(stretches(&[], gp, 1), [Vec::<String>::new()]);
    }
}
