//! An in-memory search aid for the index block, built when a table is opened.
//!
//! A binary search over the index block touches two cold cache lines per probe (the restart
//! offset, then the key). For a 64 MiB table that is some 30 cache misses per lookup. This
//! keeps, per index entry, 8 bytes of its separator's user key as a big-endian `u64`, taken
//! after the prefix every separator shares: the binary search runs over that compact array
//! (8 bytes per data block; it stays in the CPU cache), and full keys are compared only
//! among entries whose 8 bytes tie with the target's.
//!
//! Nothing here is on disk; it relies on the format rule that the index block has a restart
//! point at every entry, so entry `i` starts at restart point `i`.

use std::cmp::Ordering;

use crate::key::{compare_internal, user_key};
use crate::table::block::{Block, BlockCursor};

/// See the module docs.
#[derive(Debug, Default)]
pub(super) struct IndexSearch {
    /// Length of the user-key prefix shared by every separator.
    lcp: usize,
    /// That shared prefix.
    common: Vec<u8>,
    /// Per entry: user key bytes `lcp..lcp + 8`, zero-padded, big-endian.
    prefixes: Vec<u64>,
}

/// The 8 bytes of `k` after `lcp`, zero-padded: monotone in `k` among keys sharing the
/// first `lcp` bytes.
#[inline]
fn window(k: &[u8], lcp: usize) -> u64 {
    let mut w = [0u8; 8];
    let tail = k.get(lcp..).unwrap_or_default();
    let n = tail.len().min(8);
    w[..n].copy_from_slice(&tail[..n]);
    u64::from_be_bytes(w)
}

impl IndexSearch {
    /// Walk the index block once, collecting the prefix array, and check that the block
    /// has one restart point per entry.
    ///
    /// # Errors
    /// A description of bad entries, or of entries that do not match the restart points.
    pub(super) fn build(index: &Block) -> std::result::Result<IndexSearch, String> {
        let mut c = BlockCursor::new(index.clone(), 0);
        c.seek_to_first()?;
        if !c.valid() {
            return Ok(IndexSearch::default());
        }
        let first = user_key(c.key()).to_vec();
        c.seek_to_last()?;
        let last = user_key(c.key());
        let lcp = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        let mut prefixes = Vec::with_capacity(index.num_restarts());
        c.seek_to_first()?;
        while c.valid() {
            if c.restart_index() != prefixes.len() {
                return Err(format!(
                    "index entry {} does not start at a restart point",
                    prefixes.len()
                ));
            }
            prefixes.push(window(user_key(c.key()), lcp));
            c.next_entry()?;
        }
        if prefixes.len() != index.num_restarts() {
            return Err(format!(
                "index block has {} entries but {} restart points",
                prefixes.len(),
                index.num_restarts()
            ));
        }
        let mut common = first;
        common.truncate(lcp);
        Ok(IndexSearch {
            lcp,
            common,
            prefixes,
        })
    }

    /// Entries in the index.
    pub(super) fn len(&self) -> usize {
        self.prefixes.len()
    }

    /// The position of the first entry of `index` whose separator is `>= target`
    /// ([`IndexSearch::len`] when there is none), reading few cache lines and nothing
    /// shared between threads but the block's bytes.
    ///
    /// # Errors
    /// A description of a bad entry met while comparing full keys.
    #[inline]
    pub(super) fn find(&self, index: &Block, target: &[u8]) -> std::result::Result<usize, String> {
        let n = self.prefixes.len();
        let tu = user_key(target);
        let head = tu.get(..self.lcp).unwrap_or(tu);
        let (mut lo, mut hi) = match head.cmp(&self.common[..]) {
            Ordering::Less => (0, 0),
            Ordering::Greater => (n, n),
            Ordering::Equal => {
                let p = window(tu, self.lcp);
                (
                    self.prefixes.partition_point(|&x| x < p),
                    self.prefixes.partition_point(|&x| x <= p),
                )
            }
        };
        // Entries in lo..hi tie on the window: compare full keys.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (sep, _) = index.restart_entry(mid)?;
            if compare_internal(sep, target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_monotone() {
        let keys: [&[u8]; 7] = [
            b"ab",
            b"ab\0",
            b"ab\0\0",
            b"abc",
            b"abcdefghij",
            b"abcdefghik",
            b"abd",
        ];
        for w in keys.windows(2) {
            assert!(window(w[0], 1) <= window(w[1], 1), "{:?}", w);
        }
        assert_eq!(window(b"x", 5), 0);
    }

    /// The fast seek must land exactly where a plain block seek lands.
    #[test]
    fn agrees_with_block_seek() {
        use std::path::Path;
        use std::sync::Arc;

        use crate::iter::InternalIterator;
        use crate::key::{ValueKind, make_internal_key, seek_key};
        use crate::table::block::{Block, BlockBuilder};

        let mut x = 0x1234_5678_9abc_def1u64;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for prefix in [&b""[..], b"p", b"common-prefix/"] {
            // Short and long user keys from a small alphabet, so windows often tie.
            let mut users: Vec<Vec<u8>> = (0..400)
                .map(|_| {
                    let mut k = prefix.to_vec();
                    k.extend((0..rnd(14)).map(|_| b"ab\0\xff"[rnd(4) as usize]));
                    k
                })
                .collect();
            users.sort();
            let mut keys: Vec<Vec<u8>> = Vec::new();
            for (i, u) in users.iter().enumerate() {
                keys.push(make_internal_key(u, 1000 - i as u64, ValueKind::Value));
            }
            keys.sort_by(|a, b| compare_internal(a, b));
            keys.dedup();
            let mut b = BlockBuilder::new(1);
            for k in &keys {
                b.add(k, b"h");
            }
            let block = Block::new(b.finish().to_vec().into()).unwrap();
            let file: Arc<Path> = Arc::from(Path::new("i.sst"));
            let mut plain = block.iter(Arc::clone(&file), 0);
            let mut fast = BlockCursor::new(block.clone(), 0);
            let search = IndexSearch::build(&block).unwrap();
            let mut targets: Vec<Vec<u8>> = keys.clone();
            for u in &users {
                for cut in [0, u.len() / 2, u.len()] {
                    for seq in [0, 500, 2000] {
                        targets.push(seek_key(&u[..cut], seq));
                    }
                }
                let mut longer = u.clone();
                longer.push(0);
                targets.push(seek_key(&longer, 3));
            }
            targets.push(seek_key(b"zzzz", 1));
            for t in &targets {
                plain.seek(t).unwrap();
                fast.seek_to_entry(search.find(&block, t).unwrap()).unwrap();
                assert_eq!(plain.valid(), fast.valid(), "{t:?}");
                if plain.valid() {
                    assert_eq!(plain.key(), fast.key(), "{t:?}");
                }
            }
        }
    }
}
