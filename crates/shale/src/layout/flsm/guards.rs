//! Which keys are guards, and at which levels.
//!
//! A user key's *guard hash* is 64-bit FNV-1a over its bytes, then MurmurHash3's 64-bit
//! finalizer (`fmix64`) so that the low bits depend on every input byte. The key is a guard
//! at level `L >= 1` when the number of consecutive one bits at the low end of the hash is at
//! least `max(1, top_level_bits - bit_decrement * (L - 1))`. So a guard at level `L` is a
//! guard at every deeper level, and each level has about `2^bit_decrement` times more guards
//! than the one above.
//!
//! On-disk meaning: guard keys are recorded in the MANIFEST, and a store reopened with a
//! different hash would keep its old guards but choose new ones differently. Never change
//! this function; `docs/format/manifest.md` gives test vectors.

/// 64-bit FNV-1a followed by the MurmurHash3 finalizer.
pub fn guard_hash(key: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h
}

/// The guard rule of one store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuardRule {
    /// Low one bits a level-1 guard needs.
    pub top_level_bits: u32,
    /// Fewer bits needed per deeper level.
    pub bit_decrement: u32,
}

impl GuardRule {
    /// Low one bits a guard at `level` (>= 1) needs.
    pub fn bits(&self, level: usize) -> u32 {
        let drop = self
            .bit_decrement
            .saturating_mul(u32::try_from(level.saturating_sub(1)).unwrap_or(u32::MAX));
        self.top_level_bits.saturating_sub(drop).max(1)
    }

    /// True when `key` is a guard at `level` (never at level 0).
    pub fn is_guard(&self, key: &[u8], level: usize) -> bool {
        level >= 1 && guard_hash(key).trailing_ones() >= self.bits(level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_fixed() {
        // Test vectors (also in docs/format/manifest.md): changing the hash changes which
        // keys are guards in existing stores.
        assert_eq!(guard_hash(b""), 0xefd0_1f60_ba99_2926);
        assert_eq!(guard_hash(b"a"), 0x82a2_a958_a9be_ce5b);
        assert_eq!(guard_hash(b"user0000000000000042"), 0xae87_5caa_de4f_507d);
        assert_eq!(guard_hash(b"a").trailing_ones(), 2);
    }

    #[test]
    fn guards_nest_and_grow_per_level() {
        let rule = GuardRule {
            top_level_bits: 8,
            bit_decrement: 2,
        };
        let keys: Vec<Vec<u8>> = (0..200_000u32)
            .map(|i| format!("key{i:08}").into_bytes())
            .collect();
        let mut counts = [0usize; 5];
        for k in &keys {
            for (l, c) in counts.iter_mut().enumerate().skip(1) {
                if rule.is_guard(k, l) {
                    *c += 1;
                    // nesting: a guard at l is one at every deeper level
                    assert!((l..5).all(|d| rule.is_guard(k, d)));
                }
            }
            assert!(!rule.is_guard(k, 0));
        }
        // about 200000 / 2^8 = 781 at L1, 4x more per level
        assert!((600..1000).contains(&counts[1]), "{counts:?}");
        assert!((2600..3700).contains(&counts[2]), "{counts:?}");
        assert_eq!(rule.bits(1), 8);
        assert_eq!(rule.bits(4), 2);
        assert_eq!(rule.bits(40), 1);
    }
}
