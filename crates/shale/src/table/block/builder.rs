//! Builds one block: prefix-compressed entries, then the restart array.
//!
//! Not thread-safe; one builder per table being written. See `docs/format/sst.md` for the
//! byte layout.

use crate::format::{put_fixed32, put_varint32};

/// Accumulates sorted entries into the bytes of one block.
///
/// Keys must be added in increasing order (the table builder checks the internal-key order;
/// the block only needs the previous key to share its prefix).
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    /// Entries since the last restart point.
    counter: usize,
    restart_interval: usize,
    last_key: Vec<u8>,
    entries: usize,
    finished: bool,
}

impl BlockBuilder {
    /// An empty block whose restart points fall every `restart_interval` entries (at least 1).
    pub fn new(restart_interval: usize) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            restart_interval: restart_interval.max(1),
            last_key: Vec::new(),
            entries: 0,
            finished: false,
        }
    }

    /// Forget every entry, keeping the allocations for the next block.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.entries = 0;
        self.finished = false;
    }

    /// Append an entry. Requires: not finished, `key` sorts after the previous key.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(!self.finished);
        let shared = if self.counter < self.restart_interval {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        } else {
            // Offsets are u32 on disk; a block never approaches 4 GiB because the table
            // builder cuts blocks at `block_size` (at most 64 MiB) plus one entry.
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        let non_shared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, non_shared as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.entries += 1;
    }

    /// Append the restart array and return the finished block. The builder stays finished
    /// until [`BlockBuilder::reset`].
    pub fn finish(&mut self) -> &[u8] {
        if !self.finished {
            for &r in &self.restarts {
                put_fixed32(&mut self.buf, r);
            }
            put_fixed32(&mut self.buf, self.restarts.len() as u32);
            self.finished = true;
        }
        &self.buf
    }

    /// The size the block would have if finished now.
    pub fn estimated_size(&self) -> usize {
        if self.finished {
            self.buf.len()
        } else {
            self.buf.len() + 4 * self.restarts.len() + 4
        }
    }

    /// True when no entry has been added since the last reset.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Entries added since the last reset.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// The last key added (empty when none).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }
}
