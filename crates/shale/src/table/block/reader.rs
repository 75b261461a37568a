//! Reads one block: binary search over restart points, then a linear scan.
//!
//! A [`Block`] is a cheap handle on immutable bytes (`Arc<[u8]>`, as the block cache holds
//! them); a [`BlockIter`] walks it. Nothing read from the block is trusted: a restart
//! offset, an entry length or a shared-prefix length that points outside the block makes
//! the iterator invalid and returns [`crate::Error::Corruption`] naming the file and the
//! block's offset, never a panic.
//!
//! Thread-safety: a `Block` is `Send + Sync` and may be shared; a `BlockIter` has one owner.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::decode_varint32;
use crate::iter::InternalIterator;
use crate::key::compare_internal;

/// The bytes of one decoded (uncompressed, trailer-less) block.
#[derive(Clone, Debug)]
pub struct Block {
    data: Arc<[u8]>,
    /// Offset of the restart array: entries live in `data[..restarts_off]`.
    restarts_off: usize,
    num_restarts: usize,
}

impl Block {
    /// Wrap block bytes, checking that the restart array fits.
    ///
    /// # Errors
    /// A description of the problem when the trailer is truncated or claims more restart
    /// points than the block can hold (the caller adds file and offset).
    pub fn new(data: Arc<[u8]>) -> std::result::Result<Block, String> {
        let len = data.len();
        let n = crate::format::decode_fixed32(&data, len.saturating_sub(4))
            .map_err(|_| format!("block of {len} bytes is too short for its restart count"))?
            as usize;
        let max = (len - 4) / 4;
        if n == 0 || n > max {
            return Err(format!(
                "block of {len} bytes claims {n} restart points (must be 1..={max})"
            ));
        }
        Ok(Block {
            data,
            restarts_off: len - 4 - 4 * n,
            num_restarts: n,
        })
    }

    /// The block's bytes.
    pub fn data(&self) -> &Arc<[u8]> {
        &self.data
    }

    /// The size of the block in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True for a zero-length block (never produced by [`Block::new`]).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// An iterator over the block; errors name `file` and `offset` (the block's position in
    /// its file).
    pub fn iter(&self, file: Arc<Path>, offset: u64) -> BlockIter {
        BlockIter {
            block: self.clone(),
            file,
            offset,
            cur: self.restarts_off,
            next: self.restarts_off,
            restart_idx: 0,
            key_buf: Vec::new(),
            key_pinned: false,
            key_off: 0,
            key_len: 0,
            val_off: 0,
            val_len: 0,
        }
    }
}

/// The header of one entry: lengths and where the key delta starts.
#[derive(Clone, Copy)]
struct EntryHeader {
    shared: usize,
    non_shared: usize,
    value_len: usize,
    /// Offset of the key delta.
    delta_off: usize,
}

/// Decode the entry header at `off`; the entry must end at or before `limit`.
#[inline]
fn decode_header(
    data: &[u8],
    off: usize,
    limit: usize,
) -> std::result::Result<EntryHeader, String> {
    let hdr = data
        .get(off..limit)
        .ok_or_else(|| format!("entry offset {off} lies outside the entries (end {limit})"))?;
    // Fast path: all three lengths below 128 take one byte each.
    let (shared, non_shared, value_len, n) = match hdr {
        [a, b, c, ..] if (a | b | c) < 0x80 => {
            (usize::from(*a), usize::from(*b), usize::from(*c), 3)
        }
        _ => {
            let (s, n1) = decode_varint32(hdr)?;
            let (ns, n2) = decode_varint32(hdr.get(n1..).unwrap_or_default())?;
            let (vl, n3) = decode_varint32(hdr.get(n1 + n2..).unwrap_or_default())?;
            (s as usize, ns as usize, vl as usize, n1 + n2 + n3)
        }
    };
    let delta_off = off + n;
    if non_shared + value_len > limit - delta_off {
        return Err(format!(
            "entry at {off} (key delta {non_shared}, value {value_len} bytes) runs past the end of the entries at {limit}"
        ));
    }
    Ok(EntryHeader {
        shared,
        non_shared,
        value_len,
        delta_off,
    })
}

/// A cursor over the entries of one block. Implements [`InternalIterator`], so keys compare
/// as internal keys.
///
/// Keys that share nothing with their predecessor (every restart point, every entry of an
/// index block) are read in place; others are rebuilt in a buffer that is reused.
#[derive(Debug)]
pub struct BlockIter {
    block: Block,
    file: Arc<Path>,
    offset: u64,
    /// Offset of the current entry; `>= restarts_off` means not valid.
    cur: usize,
    /// Offset just past the current entry.
    next: usize,
    /// Index of the restart interval that holds `cur`.
    restart_idx: usize,
    key_buf: Vec<u8>,
    /// True when the key is `data[key_off..key_off + key_len]` rather than `key_buf`.
    key_pinned: bool,
    key_off: usize,
    key_len: usize,
    val_off: usize,
    val_len: usize,
}

impl BlockIter {
    /// Point the iterator at another block, keeping its key buffer. Not valid afterwards.
    pub fn reset(&mut self, block: Block, offset: u64) {
        self.cur = block.restarts_off;
        self.next = block.restarts_off;
        self.block = block;
        self.offset = offset;
        self.restart_idx = 0;
        self.key_buf.clear();
        self.key_pinned = false;
    }

    /// Give up the key buffer (the current key, if it is not read in place), leaving an
    /// empty one. Used by point lookups to return the key without another allocation.
    pub fn take_key(&mut self) -> Vec<u8> {
        if self.key_pinned {
            self.key().to_vec()
        } else {
            self.key_pinned = false;
            self.cur = self.block.restarts_off;
            std::mem::take(&mut self.key_buf)
        }
    }

    /// The offset of the block in its file (as given at creation).
    pub fn block_offset(&self) -> u64 {
        self.offset
    }

    fn corrupt(&mut self, detail: String) -> Error {
        self.cur = self.block.restarts_off;
        self.next = self.block.restarts_off;
        Error::corruption(self.file.to_path_buf(), self.offset, detail)
    }

    /// The offset of restart point `i`, checked to lie within the entries.
    #[inline]
    fn restart_point(&self, i: usize) -> std::result::Result<usize, String> {
        let pos = self.block.restarts_off + 4 * i;
        let r = crate::format::decode_fixed32(&self.block.data, pos)? as usize;
        if r > self.block.restarts_off {
            return Err(format!(
                "restart point {i} at offset {r} lies past the entries (end {})",
                self.block.restarts_off
            ));
        }
        Ok(r)
    }

    /// The key stored at restart point `i`, read in place.
    #[inline]
    fn restart_key(&self, i: usize) -> std::result::Result<&[u8], String> {
        let off = self.restart_point(i)?;
        let h = decode_header(&self.block.data, off, self.block.restarts_off)?;
        if h.shared != 0 {
            return Err(format!(
                "entry at restart point {i} (offset {off}) shares {} bytes with a previous key",
                h.shared
            ));
        }
        Ok(self
            .block
            .data
            .get(h.delta_off..h.delta_off + h.non_shared)
            .unwrap_or_default())
    }

    fn seek_to_restart(&mut self, i: usize) -> std::result::Result<(), String> {
        let off = self.restart_point(i)?;
        self.restart_idx = i;
        self.key_buf.clear();
        self.key_pinned = false;
        self.key_len = 0;
        self.cur = off;
        self.next = off;
        Ok(())
    }

    /// Decode the entry at `self.next` and make it current. At the end of the entries the
    /// iterator becomes invalid (`Ok(false)`).
    #[inline]
    fn parse_next(&mut self) -> std::result::Result<bool, String> {
        let limit = self.block.restarts_off;
        self.cur = self.next;
        if self.cur >= limit {
            self.cur = limit;
            return Ok(false);
        }
        let data = &self.block.data;
        let h = decode_header(data, self.cur, limit)?;
        let delta = data
            .get(h.delta_off..h.delta_off + h.non_shared)
            .unwrap_or_default();
        if h.shared == 0 {
            self.key_pinned = true;
            self.key_off = h.delta_off;
        } else {
            if h.shared > self.key_len {
                return Err(format!(
                    "entry at {} shares {} bytes with a previous key of {} bytes",
                    self.cur, h.shared, self.key_len
                ));
            }
            if self.key_pinned {
                let prev = data
                    .get(self.key_off..self.key_off + h.shared)
                    .unwrap_or_default();
                self.key_buf.clear();
                self.key_buf.extend_from_slice(prev);
                self.key_pinned = false;
            } else {
                self.key_buf.truncate(h.shared);
            }
            self.key_buf.extend_from_slice(delta);
        }
        self.key_len = h.shared + h.non_shared;
        self.val_off = h.delta_off + h.non_shared;
        self.val_len = h.value_len;
        self.next = self.val_off + h.value_len;
        while self.restart_idx + 1 < self.block.num_restarts
            && self.restart_point(self.restart_idx + 1)? <= self.cur
        {
            self.restart_idx += 1;
        }
        Ok(true)
    }

    fn seek_inner(&mut self, target: &[u8]) -> std::result::Result<(), String> {
        // Find the last restart point whose key is < target, then scan forward.
        let (mut left, mut right) = (0usize, self.block.num_restarts - 1);
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            if compare_internal(self.restart_key(mid)?, target) == Ordering::Less {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        self.seek_to_restart(left)?;
        while self.parse_next()? {
            if compare_internal(self.key(), target) != Ordering::Less {
                break;
            }
        }
        Ok(())
    }

    fn seek_to_last_inner(&mut self) -> std::result::Result<(), String> {
        self.seek_to_restart(self.block.num_restarts - 1)?;
        while self.parse_next()? && self.next < self.block.restarts_off {}
        Ok(())
    }

    fn prev_inner(&mut self) -> std::result::Result<(), String> {
        let original = self.cur;
        let mut i = self.restart_idx;
        while self.restart_point(i)? >= original {
            if i == 0 {
                self.cur = self.block.restarts_off;
                self.next = self.block.restarts_off;
                return Ok(());
            }
            i -= 1;
        }
        self.seek_to_restart(i)?;
        // Scan forward to the entry that ends where the original began.
        while self.parse_next()? && self.next < original {}
        Ok(())
    }

    #[inline]
    fn lift(&mut self, r: std::result::Result<(), String>) -> Result<()> {
        r.map_err(|d| self.corrupt(d))
    }
}

impl InternalIterator for BlockIter {
    #[inline]
    fn valid(&self) -> bool {
        self.cur < self.block.restarts_off
    }

    fn seek_to_first(&mut self) -> Result<()> {
        let r = self
            .seek_to_restart(0)
            .and_then(|()| self.parse_next().map(drop));
        self.lift(r)
    }

    fn seek_to_last(&mut self) -> Result<()> {
        let r = self.seek_to_last_inner();
        self.lift(r)
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let r = self.seek_inner(target);
        self.lift(r)
    }

    #[inline]
    fn next(&mut self) -> Result<()> {
        debug_assert!(self.valid());
        let r = self.parse_next().map(drop);
        self.lift(r)
    }

    fn prev(&mut self) -> Result<()> {
        debug_assert!(self.valid());
        let r = self.prev_inner();
        self.lift(r)
    }

    #[inline]
    fn key(&self) -> &[u8] {
        if self.key_pinned {
            self.block
                .data
                .get(self.key_off..self.key_off + self.key_len)
                .unwrap_or_default()
        } else {
            &self.key_buf
        }
    }

    #[inline]
    fn value(&self) -> &[u8] {
        self.block
            .data
            .get(self.val_off..self.val_off + self.val_len)
            .unwrap_or_default()
    }
}
