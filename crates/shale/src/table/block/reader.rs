//! Reads one block: binary search over restart points, then a linear scan.
//!
//! A [`Block`] is a cheap handle on immutable bytes ([`SharedBytes`], as the block cache
//! holds them). A [`BlockCursor`] walks it and reports problems as plain descriptions, so hot
//! paths that know the file (table lookups and iterators) need not carry the file's path
//! around; [`BlockIter`] pairs a cursor with its file to be an [`InternalIterator`].
//!
//! Nothing read from the block is trusted: a restart offset, an entry length or a
//! shared-prefix length that points outside the block makes the cursor invalid and returns
//! an error, never a panic.
//!
//! Thread-safety: a `Block` is `Send + Sync` and may be shared; cursors have one owner.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use crate::cache::block_cache::SharedBytes;
use crate::error::{Error, Result};
use crate::format::{decode_fixed32, decode_varint32};
use crate::iter::InternalIterator;
use crate::key::compare_internal;

/// Result of block decoding: a description of the problem on failure.
type Decoded<T> = std::result::Result<T, String>;

/// The bytes of one decoded (uncompressed, trailer-less) block.
#[derive(Clone, Debug)]
pub struct Block {
    data: SharedBytes,
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
    pub fn new(data: SharedBytes) -> Decoded<Block> {
        let len = data.len();
        let n = decode_fixed32(&data, len.saturating_sub(4))
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
    pub fn data(&self) -> &SharedBytes {
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

    /// Restart points in the block.
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// An iterator over the block; errors name `file` and `offset` (the block's position in
    /// its file).
    pub fn iter(&self, file: Arc<Path>, offset: u64) -> BlockIter {
        BlockIter {
            cursor: BlockCursor::new(self.clone(), offset),
            file,
        }
    }

    /// The offset of restart point `i`, checked to lie within the entries.
    #[inline]
    fn restart_point(&self, i: usize) -> Decoded<usize> {
        let r = decode_fixed32(&self.data, self.restarts_off + 4 * i)? as usize;
        if r > self.restarts_off {
            return Err(format!(
                "restart point {i} at offset {r} lies past the entries (end {})",
                self.restarts_off
            ));
        }
        Ok(r)
    }

    /// The key and value of the entry at restart point `i`, read in place without a
    /// cursor. In a block with a restart point per entry (the index block) this is entry
    /// `i`.
    ///
    /// # Errors
    /// A description when the restart point or the entry is bad.
    #[inline]
    pub fn restart_entry(&self, i: usize) -> Decoded<(&[u8], &[u8])> {
        if i >= self.num_restarts {
            return Err(format!(
                "restart point {i} requested of a block with {}",
                self.num_restarts
            ));
        }
        let off = self.restart_point(i)?;
        let h = decode_header(&self.data, off, self.restarts_off)?;
        if h.shared != 0 {
            return Err(format!(
                "entry at restart point {i} (offset {off}) shares {} bytes with a previous key",
                h.shared
            ));
        }
        let key_end = h.delta_off + h.non_shared;
        Ok((
            self.data.get(h.delta_off..key_end).unwrap_or_default(),
            self.data
                .get(key_end..key_end + h.value_len)
                .unwrap_or_default(),
        ))
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
fn decode_header(data: &[u8], off: usize, limit: usize) -> Decoded<EntryHeader> {
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

/// A cursor over the entries of one block, ordered as internal keys. Movement methods
/// return a description of any corruption and leave the cursor invalid.
///
/// Keys that share nothing with their predecessor (every restart point, every entry of an
/// index block) are read in place; others are rebuilt in a buffer that is reused.
#[derive(Debug)]
pub struct BlockCursor {
    block: Block,
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

impl BlockCursor {
    /// An unpositioned cursor over `block`, which lives at `offset` in its file.
    pub fn new(block: Block, offset: u64) -> BlockCursor {
        let end = block.restarts_off;
        BlockCursor {
            block,
            offset,
            cur: end,
            next: end,
            restart_idx: 0,
            key_buf: Vec::new(),
            key_pinned: false,
            key_off: 0,
            key_len: 0,
            val_off: 0,
            val_len: 0,
        }
    }

    /// Point the cursor at another block, keeping its key buffer. Not valid afterwards.
    pub fn reset(&mut self, block: Block, offset: u64) {
        self.cur = block.restarts_off;
        self.next = block.restarts_off;
        self.block = block;
        self.offset = offset;
        self.restart_idx = 0;
        self.key_buf.clear();
        self.key_pinned = false;
    }

    /// The offset of the block in its file (as given at creation or reset).
    pub fn block_offset(&self) -> u64 {
        self.offset
    }

    /// The restart interval holding the current entry.
    pub fn restart_index(&self) -> usize {
        self.restart_idx
    }

    /// The block being read.
    pub fn block(&self) -> &Block {
        &self.block
    }

    /// Give up the current key without copying it when it sits in the key buffer. The
    /// cursor is invalid afterwards. Point lookups return keys this way.
    pub fn take_key(&mut self) -> Vec<u8> {
        let k = if self.key_pinned {
            self.key().to_vec()
        } else {
            std::mem::take(&mut self.key_buf)
        };
        self.invalidate();
        k
    }

    /// True when positioned on an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.cur < self.block.restarts_off
    }

    /// The current key. Requires `valid()`.
    #[inline]
    pub fn key(&self) -> &[u8] {
        if self.key_pinned {
            self.block
                .data
                .get(self.key_off..self.key_off + self.key_len)
                .unwrap_or_default()
        } else {
            &self.key_buf
        }
    }

    /// The current value. Requires `valid()`.
    #[inline]
    pub fn value(&self) -> &[u8] {
        self.block
            .data
            .get(self.val_off..self.val_off + self.val_len)
            .unwrap_or_default()
    }

    /// Position on the first entry.
    ///
    /// # Errors
    /// A description of the corruption found; the cursor is then invalid.
    pub fn seek_to_first(&mut self) -> Decoded<()> {
        let r = self
            .seek_to_restart(0)
            .and_then(|()| self.parse_next().map(drop));
        self.check(r)
    }

    /// Position on the last entry.
    ///
    /// # Errors
    /// As [`BlockCursor::seek_to_first`].
    pub fn seek_to_last(&mut self) -> Decoded<()> {
        let r = self.seek_to_last_inner();
        self.check(r)
    }

    /// Position on the first entry `>= target`.
    ///
    /// # Errors
    /// As [`BlockCursor::seek_to_first`].
    pub fn seek(&mut self, target: &[u8]) -> Decoded<()> {
        let r = self.seek_inner(target);
        self.check(r)
    }

    /// Position on the entry at restart point `i` (not valid when `i` is past the last).
    /// In a block with a restart point per entry, as the index block has, this is entry `i`.
    ///
    /// # Errors
    /// As [`BlockCursor::seek_to_first`].
    pub fn seek_to_entry(&mut self, i: usize) -> Decoded<()> {
        if i >= self.block.num_restarts {
            self.invalidate();
            return Ok(());
        }
        let r = self
            .seek_to_restart(i)
            .and_then(|()| self.parse_next().map(drop));
        self.check(r)
    }

    /// Move to the next entry. Requires `valid()`.
    ///
    /// # Errors
    /// As [`BlockCursor::seek_to_first`].
    #[inline]
    pub fn next_entry(&mut self) -> Decoded<()> {
        debug_assert!(self.valid());
        let r = self.parse_next().map(drop);
        self.check(r)
    }

    /// Move to the previous entry. Requires `valid()`.
    ///
    /// # Errors
    /// As [`BlockCursor::seek_to_first`].
    pub fn prev_entry(&mut self) -> Decoded<()> {
        debug_assert!(self.valid());
        let r = self.prev_inner();
        self.check(r)
    }

    fn invalidate(&mut self) {
        self.cur = self.block.restarts_off;
        self.next = self.block.restarts_off;
    }

    #[inline]
    fn check(&mut self, r: Decoded<()>) -> Decoded<()> {
        if r.is_err() {
            self.invalidate();
        }
        r
    }

    /// The key stored at restart point `i`, read in place.
    #[inline]
    fn restart_key(&self, i: usize) -> Decoded<&[u8]> {
        self.block.restart_entry(i).map(|(k, _)| k)
    }

    fn seek_to_restart(&mut self, i: usize) -> Decoded<()> {
        let off = self.block.restart_point(i)?;
        self.restart_idx = i;
        self.key_buf.clear();
        self.key_pinned = false;
        self.key_len = 0;
        self.cur = off;
        self.next = off;
        Ok(())
    }

    /// Decode the entry at `self.next` and make it current. At the end of the entries the
    /// cursor becomes invalid (`Ok(false)`).
    #[inline]
    fn parse_next(&mut self) -> Decoded<bool> {
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
                self.key_buf.reserve(h.shared + h.non_shared);
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
            && self.block.restart_point(self.restart_idx + 1)? <= self.cur
        {
            self.restart_idx += 1;
        }
        Ok(true)
    }

    fn seek_inner(&mut self, target: &[u8]) -> Decoded<()> {
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

    fn seek_to_last_inner(&mut self) -> Decoded<()> {
        self.seek_to_restart(self.block.num_restarts - 1)?;
        while self.parse_next()? && self.next < self.block.restarts_off {}
        Ok(())
    }

    fn prev_inner(&mut self) -> Decoded<()> {
        let original = self.cur;
        let mut i = self.restart_idx;
        while self.block.restart_point(i)? >= original {
            if i == 0 {
                self.invalidate();
                return Ok(());
            }
            i -= 1;
        }
        self.seek_to_restart(i)?;
        // Scan forward to the entry that ends where the original began. Each step moves
        // to a smaller offset, so even damaged restart points cannot make this loop.
        while self.parse_next()? && self.next < original {}
        Ok(())
    }
}

/// A [`BlockCursor`] that knows its file, so it can be an [`InternalIterator`] whose errors
/// are [`Error::Corruption`] naming the file and the block's offset.
#[derive(Debug)]
pub struct BlockIter {
    cursor: BlockCursor,
    file: Arc<Path>,
}

impl BlockIter {
    /// The underlying cursor.
    pub fn cursor(&mut self) -> &mut BlockCursor {
        &mut self.cursor
    }

    #[inline]
    fn lift(&self, r: Decoded<()>) -> Result<()> {
        r.map_err(|d| Error::corruption(self.file.to_path_buf(), self.cursor.offset, d))
    }
}

impl InternalIterator for BlockIter {
    #[inline]
    fn valid(&self) -> bool {
        self.cursor.valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        let r = self.cursor.seek_to_first();
        self.lift(r)
    }
    fn seek_to_last(&mut self) -> Result<()> {
        let r = self.cursor.seek_to_last();
        self.lift(r)
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let r = self.cursor.seek(target);
        self.lift(r)
    }
    #[inline]
    fn next(&mut self) -> Result<()> {
        let r = self.cursor.next_entry();
        self.lift(r)
    }
    fn prev(&mut self) -> Result<()> {
        let r = self.cursor.prev_entry();
        self.lift(r)
    }
    #[inline]
    fn key(&self) -> &[u8] {
        self.cursor.key()
    }
    #[inline]
    fn value(&self) -> &[u8] {
        self.cursor.value()
    }
}
