//! Column filters and the filter cluster of an HTable (`docs/format/htable.md` §2.5): the
//! paper's clustered bloom filters ("BloomCluster").
//!
//! A table's bloom filters are cut by *column*: the key's column word (hashkey bits
//! 96..128) picks one of `2^k` columns, and each column has its own small filter (classic
//! layout, exactly `bloom_bits_per_key` bits per key; empty when no key of the table is in
//! it). A table of `n` keys uses `k` = ⌈log2(⌈n / 64⌉)⌉, so a column filter holds about 64
//! keys. The paper's column is a bucket; tables of one trie container have different
//! bucket counts here (a table's buckets follow its data), so the column is a share of the
//! hash space instead, the same one in every table of the pile: a key is in one column of
//! every sub-level.
//!
//! The **cluster** a table carries holds its own column filters and copies of those of the
//! older tables of its pile (the layout hands them over, [`crate::table::TableWriter::lay_on`]),
//! newest first, cut into `2^K` column blocks: block `J` holds, for every table of the
//! cluster, the filters of the columns that fall in column `J` at granularity `K` (one
//! filter, repeated, for a table cut more coarsely than `K`). `K` is chosen so a block is
//! about half a bucket; a get reads the one block of its key's column to ask every table
//! of the pile at once.
//!
//! Block payload: `n varint32` entries, each `number varint64 | k u8 | c × len varint32 |
//! the c filters' bytes`, with `c = 2^(k-K)` when `k >= K`, else 1.

use super::HashKey;
use crate::format::{
    Reader, crc32c, mask_crc, put_fixed32, put_varint32, put_varint64, varint_len,
};
use crate::table::bloom::{self, BloomBuilder};

/// Keys per column filter the writer aims at.
pub const KEYS_PER_COLUMN: u64 = 64;

/// The finest column granularity (`2^20` columns), for a table's own filters and for the
/// blocks of a cluster.
pub const MAX_COLUMN_BITS: u8 = 20;

/// A key's column word: hashkey bits 96..128, big-endian.
pub fn column_word(h: &HashKey) -> u32 {
    u32::from_be_bytes([h[12], h[13], h[14], h[15]])
}

/// The column of column word `w` among `2^k` columns: its top `k` bits.
#[inline]
pub fn column(w: u32, k: u8) -> usize {
    if k == 0 {
        0
    } else {
        (w >> (32 - u32::from(k.min(32)))) as usize
    }
}

/// The column granularity of a table of `keys` distinct user keys.
pub fn column_bits_for(keys: u64) -> u8 {
    let cols = keys.div_ceil(KEYS_PER_COLUMN).max(1);
    let k = 64 - (cols - 1).leading_zeros();
    k.min(u32::from(MAX_COLUMN_BITS)) as u8
}

/// One table's column filters: `filters[i]` is column `i` of `2^k` (empty: no key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnFilters {
    /// The table's file number (0 for a table written outside a store).
    pub number: u64,
    /// The column granularity.
    pub k: u8,
    /// One filter per column, classic layout.
    pub filters: Vec<Vec<u8>>,
}

impl ColumnFilters {
    /// Build the filters of a table numbered `number` from its keys' `(column word, user
    /// key)`, with `bits_per_key` bits per key (at least 1) at granularity `k`.
    pub fn build<'a>(
        number: u64,
        k: u8,
        bits_per_key: usize,
        keys: impl IntoIterator<Item = (u32, &'a [u8])>,
    ) -> ColumnFilters {
        let mut builders: Vec<BloomBuilder> = (0..1usize << k)
            .map(|_| BloomBuilder::new(bits_per_key))
            .collect();
        for (w, uk) in keys {
            if let Some(b) = builders.get_mut(column(w, k)) {
                b.add_key(uk);
            }
        }
        ColumnFilters {
            number,
            k,
            filters: builders
                .iter()
                .map(|b| {
                    if b.is_empty() {
                        Vec::new()
                    } else {
                        b.finish_classic()
                    }
                })
                .collect(),
        }
    }

    /// Whether the key with column word `w` and bloom hash `h` may be in the table.
    pub fn may_contain(&self, w: u32, h: u64) -> bool {
        self.filters
            .get(column(w, self.k))
            .is_some_and(|f| !f.is_empty() && bloom::bytes_may_contain(f, h))
    }

    /// The filters block `j` of a cluster at granularity `kk` holds: (first, count).
    fn span(&self, kk: u8, j: usize) -> (usize, usize) {
        span(self.k, kk, j)
    }

    /// Bytes of all filters with their lengths (an estimate of the encoded size).
    fn encoded_len(&self) -> usize {
        self.filters
            .iter()
            .map(|f| f.len() + varint_len(f.len() as u64))
            .sum::<usize>()
            + 11
    }
}

/// The filters of a table cut at granularity `k` that block `j` of a cluster at
/// granularity `kk` holds: (first column, count).
fn span(k: u8, kk: u8, j: usize) -> (usize, usize) {
    if k >= kk {
        let c = 1usize << (k - kk);
        (j << (k - kk), c)
    } else {
        (j >> (kk - k), 1)
    }
}

/// The block granularity `K` for a cluster of `tables`: the smallest that makes the
/// average block at most `target` bytes (no finer than the finest table's columns).
pub fn cluster_bits(tables: &[ColumnFilters], target: usize) -> u8 {
    let finest = tables.iter().map(|t| t.k).max().unwrap_or(0);
    for kk in 0..=finest {
        // A table cut more coarsely than K is repeated in 2^(K-k) blocks.
        let total: usize = tables
            .iter()
            .map(|t| t.encoded_len() << kk.saturating_sub(t.k))
            .sum();
        if total >> kk <= target {
            return kk;
        }
    }
    finest
}

/// The `2^kk` column blocks of a cluster of `tables` (the table's own first), each followed
/// by its masked crc32c.
pub fn encode(tables: &[ColumnFilters], kk: u8) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(1 << kk);
    for j in 0..1usize << kk {
        let mut b = Vec::new();
        put_varint32(&mut b, tables.len() as u32);
        for t in tables {
            let (first, count) = t.span(kk, j);
            let fs = t.filters.get(first..first + count).unwrap_or_default();
            put_varint64(&mut b, t.number);
            b.push(t.k);
            for f in fs {
                put_varint32(&mut b, f.len() as u32);
            }
            for f in fs {
                b.extend_from_slice(f);
            }
        }
        let crc = mask_crc(crc32c(&b));
        put_fixed32(&mut b, crc);
        out.push(b);
    }
    out
}

/// One entry of a column block, decoded in place.
struct Entry<'a> {
    number: u64,
    k: u8,
    /// The filters' lengths, then their bytes.
    lens: Vec<usize>,
    bytes: &'a [u8],
}

/// Read one entry of block `j` (granularity `kk`) from `r`.
fn entry<'a>(r: &mut Reader<'a>, kk: u8, j: usize) -> Result<Entry<'a>, String> {
    let number = r.varint64()?;
    let k = r.u8()?;
    if k > MAX_COLUMN_BITS {
        return Err(format!(
            "column filters of table {number} cut into 2^{k} columns (at most 2^{MAX_COLUMN_BITS})"
        ));
    }
    let (_, count) = span(k, kk, j);
    let mut lens = Vec::with_capacity(count);
    let mut total = 0usize;
    for _ in 0..count {
        let n = r.varint32()? as usize;
        total = total.saturating_add(n);
        lens.push(n);
    }
    let bytes = r.bytes(total)?;
    Ok(Entry {
        number,
        k,
        lens,
        bytes,
    })
}

/// Ask block `j` (its payload, crc checked; granularity `kk`) about the key with column
/// word `w` and bloom hash `h`: `f(index, number, may_contain)` for each table of the
/// cluster, the block's own table (index 0) first.
///
/// # Errors
/// A description of a malformed block.
pub fn probe_block(
    payload: &[u8],
    kk: u8,
    j: usize,
    w: u32,
    h: u64,
    mut f: impl FnMut(usize, u64, bool),
) -> Result<(), String> {
    let mut r = Reader::new(payload);
    let n = r.varint32()? as usize;
    if n == 0 {
        return Err("a filter cluster block lists no table".into());
    }
    for i in 0..n {
        let e = entry(&mut r, kk, j)?;
        let (first, _) = span(e.k, kk, j);
        let at = if e.k >= kk {
            column(w, e.k).wrapping_sub(first)
        } else {
            0
        };
        let start: usize = e.lens.iter().take(at).sum();
        let len = e.lens.get(at).copied().unwrap_or(0);
        let filter = e.bytes.get(start..start + len).unwrap_or_default();
        f(
            i,
            e.number,
            !filter.is_empty() && bloom::bytes_may_contain(filter, h),
        );
    }
    if !r.is_empty() {
        return Err("trailing bytes in a filter cluster block".into());
    }
    Ok(())
}

/// Split a block with its crc into its payload, checking the crc.
///
/// # Errors
/// A description when the block is too short or its crc does not match.
pub fn checked_payload(block: &[u8]) -> Result<&[u8], String> {
    let Some(cut) = block.len().checked_sub(4) else {
        return Err("filter cluster block shorter than its checksum".into());
    };
    let (payload, crc) = block.split_at(cut);
    let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let expected = crate::format::unmask_crc(stored);
    let actual = crc32c(payload);
    if actual != expected {
        return Err(format!(
            "filter cluster block checksum mismatch: stored {expected:08x}, computed {actual:08x}"
        ));
    }
    Ok(payload)
}

/// Decode every block of a cluster (payloads, crc checked; granularity `kk`) back into the
/// column filters of its tables, newest first. Every block must list the same tables in
/// the same order, and every filter must be well formed.
///
/// # Errors
/// A description of what is wrong, with the block's index.
pub fn decode(payloads: &[&[u8]], kk: u8) -> Result<Vec<ColumnFilters>, String> {
    if payloads.len() != 1usize << kk {
        return Err(format!(
            "a filter cluster of granularity {kk} has {} blocks",
            payloads.len()
        ));
    }
    let mut tables: Vec<(ColumnFilters, Vec<bool>)> = Vec::new();
    for (j, p) in payloads.iter().enumerate() {
        let mut r = Reader::new(p);
        let n = r.varint32()? as usize;
        if n == 0 || (j > 0 && n != tables.len()) {
            return Err(format!(
                "filter cluster block {j} lists {n} tables (block 0: {})",
                tables.len()
            ));
        }
        for i in 0..n {
            let e = entry(&mut r, kk, j).map_err(|d| format!("filter cluster block {j}: {d}"))?;
            if j == 0 {
                let cols = 1usize << e.k;
                tables.push((
                    ColumnFilters {
                        number: e.number,
                        k: e.k,
                        filters: vec![Vec::new(); cols],
                    },
                    vec![false; cols],
                ));
            }
            let Some((t, seen)) = tables.get_mut(i) else {
                return Err(format!("filter cluster block {j} lists an extra table"));
            };
            if t.number != e.number || t.k != e.k {
                return Err(format!(
                    "filter cluster block {j} lists table {} (2^{} columns) where block 0 lists \
                     table {} (2^{} columns)",
                    e.number, e.k, t.number, t.k
                ));
            }
            let (first, _) = t.span(kk, j);
            let mut at = 0;
            for (c, &len) in e.lens.iter().enumerate() {
                let f = e.bytes.get(at..at + len).unwrap_or_default();
                at += len;
                if !f.is_empty() {
                    bloom::BloomFilter::new(f.to_vec()).map_err(|d| {
                        format!("filter cluster block {j}, table {}: {d}", t.number)
                    })?;
                }
                if let (Some(slot), Some(s)) =
                    (t.filters.get_mut(first + c), seen.get_mut(first + c))
                {
                    *slot = f.to_vec();
                    *s = true;
                }
            }
        }
        if !r.is_empty() {
            return Err(format!("trailing bytes in filter cluster block {j}"));
        }
    }
    Ok(tables.into_iter().map(|(t, _)| t).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::htable::hashkey;

    fn table(number: u64, keys: std::ops::Range<u32>) -> (ColumnFilters, Vec<Vec<u8>>) {
        let ks: Vec<Vec<u8>> = keys
            .map(|i| format!("t{number}-k{i}").into_bytes())
            .collect();
        let k = column_bits_for(ks.len() as u64);
        let f = ColumnFilters::build(
            number,
            k,
            16,
            ks.iter()
                .map(|uk| (column_word(&hashkey(uk)), uk.as_slice())),
        );
        (f, ks)
    }

    #[test]
    fn column_bits_aim_at_64_keys_per_column() {
        assert_eq!(column_bits_for(0), 0);
        assert_eq!(column_bits_for(64), 0);
        assert_eq!(column_bits_for(65), 1);
        assert_eq!(column_bits_for(36_000), 10);
        assert_eq!(column_bits_for(u64::MAX), MAX_COLUMN_BITS);
        assert_eq!(column(0xffff_ffff, 0), 0);
        assert_eq!(column(0xffff_ffff, 3), 7);
        assert_eq!(column(0x2000_0000, 3), 1);
    }

    #[test]
    fn every_block_answers_for_every_table_with_no_false_negative() {
        // Tables of different sizes: coarser and finer than the cluster's blocks.
        let tables = [table(9, 0..3000), table(8, 0..40), table(5, 0..700)];
        let filters: Vec<ColumnFilters> = tables.iter().map(|t| t.0.clone()).collect();
        for kk in [0, 2, cluster_bits(&filters, 2048), filters[0].k] {
            let blocks = encode(&filters, kk);
            assert_eq!(blocks.len(), 1 << kk);
            let payloads: Vec<&[u8]> = blocks.iter().map(|b| checked_payload(b).unwrap()).collect();
            assert_eq!(decode(&payloads, kk).unwrap(), filters, "K={kk}");
            for (ti, (f, keys)) in tables.iter().enumerate() {
                for uk in keys {
                    let w = column_word(&hashkey(uk));
                    let h = bloom::hash64(uk);
                    assert!(f.may_contain(w, h));
                    let j = column(w, kk);
                    let mut seen = Vec::new();
                    probe_block(payloads[j], kk, j, w, h, |i, n, m| seen.push((i, n, m))).unwrap();
                    assert_eq!(seen.len(), 3);
                    assert_eq!(seen[ti], (ti, f.number, true), "K={kk}");
                }
            }
        }
        // Absent keys pass rarely (16 bits per key: well under 1% per table).
        let blocks = encode(&filters, 4);
        let mut passed = 0;
        for i in 0..20_000u32 {
            let uk = format!("absent-{i}").into_bytes();
            let w = column_word(&hashkey(&uk));
            let j = column(w, 4);
            let p = checked_payload(&blocks[j]).unwrap();
            probe_block(p, 4, j, w, bloom::hash64(&uk), |_, _, m| {
                passed += usize::from(m)
            })
            .unwrap();
        }
        assert!(passed < 60, "{passed} false positives in 60000 probes");
    }

    #[test]
    fn cluster_blocks_are_about_half_a_bucket() {
        let filters: Vec<ColumnFilters> = (0..8).map(|n| table(n, 0..5000).0).collect();
        let kk = cluster_bits(&filters, 2048);
        let blocks = encode(&filters, kk);
        let total: usize = blocks.iter().map(Vec::len).sum();
        assert!(total / blocks.len() <= 2048, "{kk} {total}");
        assert!(total / blocks.len() > 512, "{kk} {total}");
    }

    #[test]
    fn damaged_blocks_are_refused() {
        let filters = vec![table(3, 0..500).0];
        let mut blocks = encode(&filters, 1);
        blocks[1][3] ^= 0x10;
        assert!(checked_payload(&blocks[1]).is_err());
        // A block that lists another table than block 0.
        let other = vec![table(4, 0..500).0];
        let a = encode(&filters, 1);
        let b = encode(&other, 1);
        let payloads = [
            checked_payload(&a[0]).unwrap(),
            checked_payload(&b[1]).unwrap(),
        ];
        assert!(decode(&payloads, 1).is_err());
        assert!(decode(&payloads[..1], 1).is_err());
    }
}
