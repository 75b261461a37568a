//! The `dtable` table format: a table that grows by appended segments (the LWC-tree's
//! DTable, `docs/designs/lwc.md`). Used by the `lwc` layout.
//!
//! ```text
//! +-----------+----------+-----------+----------+-----+-----------+----------+
//! | segment 1 | commit 1 | segment 2 | commit 2 | ... | segment k | commit k |
//! +-----------+----------+-----------+----------+-----+-----------+----------+
//!   segment = an sst image (data blocks, filter, properties, index, sst footer) whose
//!             block handles are file offsets
//!   commit  = directory block (every segment so far: range, counts, keys) + 40-byte footer
//! ```
//!
//! Generation `g` of the file is its first `g` segments and commit `g`; its size is where
//! commit `g` ends, and the MANIFEST records it. An append (`DTableFormat::appender`) writes a
//! segment and a commit after the committed size and syncs once; nothing committed is ever
//! written again, so readers of older generations keep reading while the file grows, and an
//! append that never commits is a tail that readers ignore and the next append cuts. The
//! byte layout is specified in `docs/format/dtable.md`.

mod commit;
mod reader;
mod writer;

use std::sync::Arc;

use crate::env::{ReadFile, WriteFile};
use crate::error::{Error, Result};
use crate::options::TableOptions;
use crate::table::format::{
    TableFormat, TableId, TableIdentity, TableReadOptions, TableReader, TableWriter, check_identity,
};

pub use commit::{DTABLE_MAGIC, DTABLE_VERSION, Directory, FOOTER_LEN, Footer, SegmentEntry};
pub use reader::{DTable, read_commit};
pub use writer::DTableWriter;

#[cfg(test)]
mod tests;

/// The appendable table format (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct DTableFormat;

impl TableFormat for DTableFormat {
    fn name(&self) -> &'static str {
        "dtable"
    }

    fn appendable(&self) -> bool {
        true
    }

    fn builder(
        &self,
        file: WriteFile,
        options: &TableOptions,
        identity: Option<TableIdentity>,
    ) -> Box<dyn TableWriter> {
        Box::new(DTableWriter::new(file, options, identity, Vec::new()))
    }

    fn appender(
        &self,
        file: WriteFile,
        committed: ReadFile,
        id: TableId,
        options: &TableOptions,
        identity: Option<TableIdentity>,
    ) -> Result<Box<dyn TableWriter>> {
        let (_, directory) = read_commit(&committed, id.size)?;
        if file.len() != id.size {
            return Err(Error::InvalidArgument(format!(
                "an append to {} must start at its committed size {}, not at {}",
                file.path().display(),
                id.size,
                file.len()
            )));
        }
        let recorded = directory.identity;
        let mismatch = match (recorded, identity) {
            (Some(r), Some(i)) => r != i,
            (Some(r), None) => r.number != id.number,
            (None, _) => false,
        };
        if mismatch {
            return Err(Error::corruption(
                committed.path(),
                0,
                format!(
                    "the table records identity {recorded:?}; an append to table {} of identity \
                     {identity:?} was asked",
                    id.number
                ),
            ));
        }
        Ok(Box::new(DTableWriter::new(
            file,
            options,
            recorded,
            directory.segments,
        )))
    }

    fn open(
        &self,
        file: ReadFile,
        id: TableId,
        options: &TableReadOptions,
    ) -> Result<Arc<dyn TableReader>> {
        let table = DTable::open(file, id, options)?;
        check_identity(&table, id.number, None)?;
        Ok(Arc::new(table))
    }

    fn identity(&self, file: ReadFile) -> Result<Option<TableIdentity>> {
        // An unlisted file's committed size is unknown: its last commit is at its end (a
        // file with an uncommitted tail is the store's own debris, and fails here).
        let len = file.len();
        Ok(read_commit(&file, len)?.1.identity)
    }
}
