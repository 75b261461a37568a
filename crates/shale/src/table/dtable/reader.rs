//! Reads one generation of a DTable: its commit record at the generation's end, then every
//! segment it lists (each an sst image, opened as a [`Table`] over its byte range).
//!
//! A point lookup asks the segments newest first and returns the first answer: every entry
//! of a segment is newer than every entry of the same user key in an older segment (an
//! append carries data from the level above, which is newer than the level it joins), so
//! the newest segment holding a visible version of the key holds the newest visible one.
//! Scans merge the segments in internal-key order, which needs no such rule.
//!
//! Thread-safety: immutable after open and shared (`Arc<DTable>`).

use std::path::Path;
use std::sync::Arc;

use crate::env::{ReadCause, ReadFile};
use crate::error::{CorruptionContext, Error, Result};
use crate::iter::InternalIterator;
use crate::iter::merging::MergingIterator;
use crate::table::bloom;
use crate::table::format::{TableId, TableIdentity, TableRead, TableReadOptions, TableReader};
use crate::table::properties::TableProperties;
use crate::table::sst::{BLOCK_TRAILER_LEN, Table, decode_block};

use super::commit::{Directory, FOOTER_LEN, Footer, SegmentEntry};

/// One segment: its directory entry and its sst image, open.
#[derive(Debug)]
struct Segment {
    entry: SegmentEntry,
    table: Arc<Table>,
}

/// One open generation of a DTable file.
pub struct DTable {
    file: ReadFile,
    path: Arc<Path>,
    number: u64,
    /// The generation's size (where its footer ends).
    size: u64,
    directory: Directory,
    /// Oldest first, as the directory lists them.
    segments: Vec<Segment>,
    props: TableProperties,
}

impl std::fmt::Debug for DTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DTable")
            .field("path", &self.path)
            .field("number", &self.number)
            .field("size", &self.size)
            .field("segments", &self.segments.len())
            .finish()
    }
}

/// Read and check the commit record that ends the generation of `size` bytes of `file`.
///
/// # Errors
/// [`Error::Corruption`] naming the file and offset: a file shorter than `size`, a bad
/// footer or directory; I/O errors.
pub fn read_commit(file: &ReadFile, size: u64) -> Result<(Footer, Directory)> {
    let path = file.path();
    if file.len() < size {
        return Err(Error::corruption(
            path,
            file.len(),
            format!(
                "the table file holds {} bytes, but {size} were committed",
                file.len()
            ),
        ));
    }
    if size < FOOTER_LEN as u64 {
        return Err(Error::corruption(
            path,
            0,
            format!(
                "a DTable generation of {size} bytes is shorter than its {FOOTER_LEN}-byte footer"
            ),
        ));
    }
    let footer_at = size - FOOTER_LEN as u64;
    let raw = file.read_at(footer_at, FOOTER_LEN, ReadCause::TableOpen)?;
    let footer = Footer::decode(&raw, size).at(path, footer_at)?;
    let h = footer.directory;
    let len = usize::try_from(h.size + BLOCK_TRAILER_LEN as u64)
        .map_err(|_| Error::corruption(path, h.offset, "directory too large for this machine"))?;
    let buf = file.read_at(h.offset, len, ReadCause::TableOpen)?;
    let payload = decode_block(buf, true).at(path, h.offset)?;
    let directory = Directory::decode(&payload, footer.segments, h.offset).at(path, h.offset)?;
    Ok((footer, directory))
}

impl DTable {
    /// Open generation `id` of the DTable in `file`: its commit record, then every segment's
    /// footer, properties, index and filter (all under their checksums), each checked
    /// against its directory entry.
    ///
    /// # Errors
    /// [`Error::Corruption`] naming the file and offset; I/O errors.
    pub fn open(file: ReadFile, id: TableId, options: &TableReadOptions) -> Result<DTable> {
        let path: Arc<Path> = Arc::from(file.path());
        let (footer, directory) = read_commit(&file, id.size)?;
        let dir_at = footer.directory.offset;
        if let Some(recorded) = directory.identity
            && recorded.number != id.number
        {
            return Err(Error::corruption(
                path.to_path_buf(),
                dir_at,
                format!(
                    "the file is table {} of its store, but the MANIFEST lists it as table {}: \
                     a table file was copied or renamed over another one",
                    recorded.number, id.number
                ),
            ));
        }
        let mut segments = Vec::with_capacity(directory.segments.len());
        for (i, entry) in directory.segments.iter().enumerate() {
            let table = Table::open_segment(
                file.clone(),
                id.number,
                entry.start,
                entry.end,
                options.block_cache.clone(),
                options.verify_checksums,
            )?;
            check_segment(&table, entry, directory.identity).map_err(|d| {
                Error::corruption(
                    path.to_path_buf(),
                    entry.start,
                    format!("segment {}: {d}", i + 1),
                )
            })?;
            segments.push(Segment {
                entry: entry.clone(),
                table: Arc::new(table),
            });
        }
        let props = aggregate(&segments, directory.identity);
        Ok(DTable {
            file,
            path,
            number: id.number,
            size: id.size,
            directory,
            segments,
            props,
        })
    }

    /// The committed segments, oldest first.
    pub fn segments(&self) -> &[SegmentEntry] {
        &self.directory.segments
    }

    /// The table's identity as its directory records it.
    pub fn identity(&self) -> Option<TableIdentity> {
        self.directory.identity
    }

    fn corruption(&self, offset: u64, detail: String) -> Error {
        Error::corruption(self.path.to_path_buf(), offset, detail)
    }

    /// Check the commit record of every earlier generation (the bytes between two
    /// segments): generation `g` lists the first `g` segments of this one.
    fn verify_old_commits(&self) -> Result<()> {
        for g in 1..self.segments.len() {
            let Some(next) = self.segments.get(g) else {
                break;
            };
            let end = next.entry.start;
            let (footer, dir) = read_commit(&self.file, end)?;
            let want = &self.directory.segments[..g];
            if footer.segments as usize != g || dir.segments != want {
                return Err(self.corruption(
                    footer.directory.offset,
                    format!(
                        "the commit record of generation {g} does not list the first {g} \
                         segments of the newest one"
                    ),
                ));
            }
            if dir.identity != self.directory.identity {
                return Err(self.corruption(
                    footer.directory.offset,
                    format!("the commit record of generation {g} records another identity"),
                ));
            }
        }
        Ok(())
    }
}

/// Check an opened segment's properties against its directory entry and the table's
/// identity.
fn check_segment(
    t: &Table,
    e: &SegmentEntry,
    identity: Option<TableIdentity>,
) -> std::result::Result<(), String> {
    let p = t.properties();
    if p.num_entries != e.entries
        || p.num_tombstones != e.tombstones
        || p.smallest != e.smallest
        || p.largest != e.largest
        || (e.entries > 0 && (p.smallest_seq != e.smallest_seq || p.largest_seq != e.largest_seq))
    {
        return Err(format!(
            "its properties ({} entries, {} tombstones, keys {:?}..{:?}) differ from its \
             directory entry ({} entries, {} tombstones, keys {:?}..{:?})",
            p.num_entries,
            p.num_tombstones,
            p.smallest,
            p.largest,
            e.entries,
            e.tombstones,
            e.smallest,
            e.largest
        ));
    }
    let recorded = p
        .file_number
        .zip(p.store_id)
        .map(|(number, store_id)| TableIdentity { store_id, number });
    if recorded != identity {
        return Err(format!(
            "it records identity {recorded:?}, the directory {identity:?}"
        ));
    }
    Ok(())
}

/// The properties of the whole table: sums over the segments, their key and sequence
/// bounds, the newest segment's settings, and the directory's identity.
fn aggregate(segments: &[Segment], identity: Option<TableIdentity>) -> TableProperties {
    let entries: Vec<SegmentEntry> = segments.iter().map(|s| s.entry.clone()).collect();
    let summary = super::writer::summarize(&entries, 0);
    let mut p = TableProperties {
        smallest: summary.smallest,
        largest: summary.largest,
        smallest_seq: summary.smallest_seq,
        largest_seq: summary.largest_seq,
        ..TableProperties::default()
    };
    for s in segments {
        let q = s.table.properties();
        p.num_entries += q.num_entries;
        p.num_tombstones += q.num_tombstones;
        p.num_value_pointers += q.num_value_pointers;
        p.raw_key_bytes += q.raw_key_bytes;
        p.raw_value_bytes += q.raw_value_bytes;
        p.num_data_blocks += q.num_data_blocks;
        p.data_bytes += q.data_bytes;
        p.filter_bytes += q.filter_bytes;
        p.compression = q.compression;
        p.block_size = q.block_size;
        p.restart_interval = q.restart_interval;
        p.bloom_bits_per_key = q.bloom_bits_per_key;
    }
    p.store_id = identity.map(|i| i.store_id);
    p.file_number = identity.map(|i| i.number);
    p
}

impl TableReader for DTable {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn file_number(&self) -> u64 {
        self.number
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn file_size(&self) -> u64 {
        self.size
    }

    fn properties(&self) -> &TableProperties {
        &self.props
    }

    fn touch_filter(&self, hash: u64) {
        for s in &self.segments {
            s.table.touch_filter(hash);
        }
    }

    fn may_contain_hash(&self, hash: u64) -> bool {
        self.segments.iter().any(|s| s.table.may_contain_hash(hash))
    }

    fn lookup(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        read: TableRead,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let hash = bloom::hash64(user_key);
        for s in self.segments.iter().rev() {
            let e = &s.entry;
            if e.entries == 0
                || user_key < e.smallest_user_key()
                || user_key > e.largest_user_key()
                || !s.table.may_contain_hash(hash)
            {
                continue;
            }
            if let Some(hit) = s.table.get_unfiltered(user_key, seek_key, read)? {
                return Ok(Some(hit));
            }
        }
        Ok(None)
    }

    fn iter(self: Arc<Self>, read: TableRead) -> Box<dyn InternalIterator> {
        let mut children: Vec<Box<dyn InternalIterator>> = self
            .segments
            .iter()
            .filter(|s| s.entry.entries > 0)
            .map(|s| Box::new(Table::iter(&s.table, read)) as Box<dyn InternalIterator>)
            .collect();
        if children.len() == 1
            && let Some(only) = children.pop()
        {
            return only;
        }
        Box::new(MergingIterator::new(children))
    }

    fn approximate_offset_of(&self, ikey: &[u8]) -> Result<u64> {
        let mut total = 0u64;
        for s in &self.segments {
            let at = s.table.approximate_offset_of(ikey)?;
            total += at.saturating_sub(s.entry.start);
        }
        Ok(total)
    }

    fn verify(&self) -> Result<()> {
        for s in &self.segments {
            s.table.verify()?;
        }
        self.verify_old_commits()
    }

    fn verify_quick(&self) -> Result<()> {
        match self.segments.last() {
            Some(s) => s.table.verify_ends(),
            None => Ok(()),
        }
    }
}
