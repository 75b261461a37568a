//! The two-level table iterator: an index-block cursor choosing data blocks, and a
//! data-block cursor within the chosen block.
//!
//! The data cursor's key buffer is reused from block to block, and a seek that lands in the
//! block already loaded does not fetch it again.
//!
//! Thread-safety: one owner; it holds an `Arc<Table>` so the table outlives it.

use std::sync::Arc;

use crate::error::Result;
use crate::iter::InternalIterator;
use crate::table::block::BlockCursor;
use crate::table::format::TableRead;

use super::reader::Table;

/// An [`InternalIterator`] over every entry of one table. See the module docs.
#[derive(Debug)]
pub struct TableIter {
    table: Arc<Table>,
    read: TableRead,
    index: BlockCursor,
    data: Option<BlockCursor>,
    /// True when `data` holds the block the index cursor points at.
    data_loaded: bool,
}

impl TableIter {
    pub(super) fn new(table: Arc<Table>, read: TableRead) -> TableIter {
        let index = table.index_cursor();
        TableIter {
            table,
            read,
            index,
            data: None,
            data_loaded: false,
        }
    }

    /// The table this iterator reads.
    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// Load the data block the index cursor points at (unless it is already loaded).
    /// Leaves the data cursor unpositioned when a new block is loaded.
    fn load_block(&mut self) -> Result<()> {
        if !self.index.valid() {
            self.data_loaded = false;
            return Ok(());
        }
        let loaded = self.table.decode_handle(self.index.value()).and_then(|h| {
            if self.data_loaded
                && let Some(d) = &self.data
                && d.block_offset() == h.offset
            {
                return Ok(None);
            }
            self.table.read_block(h, self.read).map(|b| Some((h, b)))
        });
        match loaded {
            Ok(None) => {}
            Ok(Some((h, block))) => {
                match &mut self.data {
                    Some(d) => d.reset(block, h.offset),
                    None => self.data = Some(BlockCursor::new(block, h.offset)),
                }
                self.data_loaded = true;
            }
            Err(e) => {
                self.data_loaded = false;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Move the index cursor; on error the iterator becomes invalid.
    fn on_index(
        &mut self,
        f: impl FnOnce(&mut BlockCursor) -> std::result::Result<(), String>,
    ) -> Result<()> {
        let r = f(&mut self.index);
        r.map_err(|d| {
            self.data_loaded = false;
            self.table.corruption(self.index.block_offset(), d)
        })
    }

    /// Move the data cursor; on error the iterator becomes invalid.
    #[inline]
    fn on_data(
        &mut self,
        f: impl FnOnce(&mut BlockCursor) -> std::result::Result<(), String>,
    ) -> Result<()> {
        match &mut self.data {
            Some(d) if self.data_loaded => f(d).map_err(|detail| {
                self.data_loaded = false;
                self.table.corruption(d.block_offset(), detail)
            }),
            _ => Ok(()),
        }
    }

    #[inline]
    fn data_valid(&self) -> bool {
        self.data_loaded && self.data.as_ref().is_some_and(|d| d.valid())
    }

    /// While the data cursor is exhausted, move to the first entry of the next block.
    fn skip_empty_forward(&mut self) -> Result<()> {
        while !self.data_valid() {
            if !self.index.valid() {
                self.data_loaded = false;
                return Ok(());
            }
            self.on_index(|i| i.next_entry())?;
            self.load_block()?;
            self.on_data(|d| d.seek_to_first())?;
        }
        Ok(())
    }

    /// While the data cursor is exhausted, move to the last entry of the previous block.
    fn skip_empty_backward(&mut self) -> Result<()> {
        while !self.data_valid() {
            if !self.index.valid() {
                self.data_loaded = false;
                return Ok(());
            }
            self.on_index(|i| i.prev_entry())?;
            self.load_block()?;
            self.on_data(|d| d.seek_to_last())?;
        }
        Ok(())
    }
}

impl InternalIterator for TableIter {
    #[inline]
    fn valid(&self) -> bool {
        self.data_valid()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.on_index(|i| i.seek_to_first())?;
        self.load_block()?;
        self.on_data(|d| d.seek_to_first())?;
        self.skip_empty_forward()
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.on_index(|i| i.seek_to_last())?;
        self.load_block()?;
        self.on_data(|d| d.seek_to_last())?;
        self.skip_empty_backward()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        if let Err(e) = self.table.seek_index(&mut self.index, target) {
            self.data_loaded = false;
            return Err(e);
        }
        self.load_block()?;
        self.on_data(|d| d.seek(target))?;
        self.skip_empty_forward()
    }

    #[inline]
    fn next(&mut self) -> Result<()> {
        debug_assert!(self.valid());
        self.on_data(|d| d.next_entry())?;
        if self.data_valid() {
            return Ok(());
        }
        self.skip_empty_forward()
    }

    fn prev(&mut self) -> Result<()> {
        debug_assert!(self.valid());
        self.on_data(|d| d.prev_entry())?;
        self.skip_empty_backward()
    }

    #[inline]
    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[][..], |d| d.key())
    }

    #[inline]
    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[][..], |d| d.value())
    }
}
