//! The `sst` format behind the table-format traits ([`crate::table::format`]).

use std::path::Path;
use std::sync::Arc;

use crate::env::{ReadFile, WriteFile};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::options::TableOptions;
use crate::table::bloom::BloomFilter;
use crate::table::format::{
    TableFormat, TableId, TableIdentity, TableRead, TableReadOptions, TableReader, TableSummary,
    TableWriter, check_identity,
};
use crate::table::properties::TableProperties;

use super::{Table, TableBuilder};

/// The sorted-block table of LevelDB lineage (see [`super`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SstFormat;

impl TableFormat for SstFormat {
    fn name(&self) -> &'static str {
        "sst"
    }

    fn builder(
        &self,
        file: WriteFile,
        options: &TableOptions,
        identity: Option<TableIdentity>,
    ) -> Box<dyn TableWriter> {
        let b = TableBuilder::new(file, options);
        Box::new(match identity {
            Some(id) => b.with_identity(id),
            None => b,
        })
    }

    fn open(
        &self,
        file: ReadFile,
        id: TableId,
        options: &TableReadOptions,
    ) -> Result<Arc<dyn TableReader>> {
        let table = Table::open_at(
            file,
            id.number,
            id.size,
            options.block_cache.clone(),
            options.verify_checksums,
        )?;
        check_identity(&table, id.number, None)?;
        Ok(Arc::new(table))
    }

    fn identity(&self, file: ReadFile) -> Result<Option<TableIdentity>> {
        let len = file.len();
        // The number only keys the block cache, and there is none here.
        let table = Table::open_at(file, 0, len, None, true)?;
        Ok(crate::table::format::recorded_identity(&table))
    }
}

impl TableWriter for TableBuilder {
    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        TableBuilder::add(self, ikey, value)
    }

    fn estimated_size(&self) -> u64 {
        TableBuilder::estimated_size(self)
    }

    fn num_entries(&self) -> u64 {
        TableBuilder::num_entries(self)
    }

    fn finish(self: Box<Self>) -> Result<TableSummary> {
        TableBuilder::finish(*self)
    }

    fn abandon(self: Box<Self>) {
        TableBuilder::abandon(*self);
    }
}

impl TableReader for Table {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn file_number(&self) -> u64 {
        Table::file_number(self)
    }

    fn path(&self) -> &Path {
        Table::path(self)
    }

    fn file_size(&self) -> u64 {
        Table::file_size(self)
    }

    fn properties(&self) -> &TableProperties {
        Table::properties(self)
    }

    fn filter(&self) -> Option<&Arc<BloomFilter>> {
        Table::filter(self)
    }

    #[inline]
    fn touch_filter(&self, hash: u64) {
        Table::touch_filter(self, hash);
    }

    #[inline]
    fn may_contain_hash(&self, hash: u64) -> bool {
        Table::may_contain_hash(self, hash)
    }

    fn lookup(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        read: TableRead,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.get_unfiltered(user_key, seek_key, read)
    }

    fn iter(self: Arc<Self>, read: TableRead) -> Box<dyn InternalIterator> {
        Box::new(Table::iter(&self, read))
    }

    fn verify(&self) -> Result<()> {
        Table::verify(self)
    }

    fn approximate_offset_of(&self, ikey: &[u8]) -> Result<u64> {
        Table::approximate_offset_of(self, ikey)
    }

    fn verify_quick(&self) -> Result<()> {
        Table::verify_ends(self)
    }
}
