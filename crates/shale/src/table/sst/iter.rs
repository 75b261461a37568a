//! The two-level table iterator: an index-block cursor choosing data blocks, and a
//! data-block cursor within the chosen block.
//!
//! The data cursor's key buffer is reused from block to block, and a seek that lands in the
//! block already loaded does not fetch it again.
//!
//! Thread-safety: one owner; it holds an `Arc<Table>` so the table outlives it.

use std::sync::Arc;

use crate::env::ReadCause;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::table::block::BlockIter;

use super::reader::Table;

/// An [`InternalIterator`] over every entry of one table. See the module docs.
#[derive(Debug)]
pub struct TableIter {
    table: Arc<Table>,
    cause: ReadCause,
    index: BlockIter,
    data: Option<BlockIter>,
    /// True when `data` holds the block the index cursor points at.
    data_loaded: bool,
}

impl TableIter {
    pub(super) fn new(table: Arc<Table>, cause: ReadCause) -> TableIter {
        let index = table.index_iter();
        TableIter {
            table,
            cause,
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
        let handle = match self.table.decode_handle(&self.index) {
            Ok(h) => h,
            Err(e) => {
                self.invalidate();
                return Err(e);
            }
        };
        if self.data_loaded
            && let Some(d) = &self.data
            && d.block_offset() == handle.offset
        {
            return Ok(());
        }
        let block = match self.table.read_block(handle, self.cause) {
            Ok(b) => b,
            Err(e) => {
                self.invalidate();
                return Err(e);
            }
        };
        match &mut self.data {
            Some(d) => d.reset(block, handle.offset),
            None => {
                self.data = Some(block.iter(Arc::clone(self.table.path_arc()), handle.offset));
            }
        }
        self.data_loaded = true;
        Ok(())
    }

    fn invalidate(&mut self) {
        self.data_loaded = false;
    }

    /// Run a movement on the data cursor; on error the iterator becomes invalid.
    fn on_data(&mut self, f: impl FnOnce(&mut BlockIter) -> Result<()>) -> Result<()> {
        match &mut self.data {
            Some(d) if self.data_loaded => {
                let r = f(d);
                if r.is_err() {
                    self.data_loaded = false;
                }
                r
            }
            _ => Ok(()),
        }
    }

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
            self.index.next().inspect_err(|_| self.invalidate())?;
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
            self.index.prev().inspect_err(|_| self.invalidate())?;
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
        self.index
            .seek_to_first()
            .inspect_err(|_| self.invalidate())?;
        self.load_block()?;
        self.on_data(|d| d.seek_to_first())?;
        self.skip_empty_forward()
    }

    fn seek_to_last(&mut self) -> Result<()> {
        self.index
            .seek_to_last()
            .inspect_err(|_| self.invalidate())?;
        self.load_block()?;
        self.on_data(|d| d.seek_to_last())?;
        self.skip_empty_backward()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.index.seek(target).inspect_err(|_| self.invalidate())?;
        self.load_block()?;
        self.on_data(|d| d.seek(target))?;
        self.skip_empty_forward()
    }

    #[inline]
    fn next(&mut self) -> Result<()> {
        debug_assert!(self.valid());
        self.on_data(|d| d.next())?;
        if self.data_valid() {
            return Ok(());
        }
        self.skip_empty_forward()
    }

    fn prev(&mut self) -> Result<()> {
        debug_assert!(self.valid());
        self.on_data(|d| d.prev())?;
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
