//! Reads a table file: open (footer, index, filter, properties), point lookups, verify.
//!
//! A [`Table`] keeps its index block and filter in memory for its lifetime; data blocks are
//! read on demand, through the shared block cache when there is one (keyed by file number
//! and block offset).
//!
//! Thread-safety: a `Table` is immutable after open and shared between readers
//! (`Arc<Table>`); every method takes `&self`.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use crate::cache::block_cache::{BlockCache, SharedBytes};
use crate::env::{ReadCause, ReadFile};
use crate::error::{CorruptionContext, Error, Result};
use crate::iter::InternalIterator;
use crate::key;
use crate::table::block::{Block, BlockCursor, BlockIter};
use crate::table::bloom::BloomFilter;

use super::block_codec::{checksum_holds, decode_block, decode_shared_block, is_compressed};
use super::footer::{BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, Footer};
use super::index::IndexSearch;
use super::iter::TableIter;
use crate::table::format::TableRead;
use crate::table::properties::TableProperties;

/// An open table file.
pub struct Table {
    file: ReadFile,
    /// The generation's size: where the footer ends (the file may be longer).
    size: u64,
    /// Where the table's first data block starts: 0 for a table file, the segment's first
    /// byte for an sst image inside a larger file (a DTable segment, [`Table::open_segment`]).
    data_start: u64,
    path: Arc<Path>,
    file_number: u64,
    cache: Option<Arc<BlockCache>>,
    /// Whether a block of this table went into the cache. Uncompressed blocks lent from a
    /// memory map go there only once checked ([`Table::read_block`]), so a mapped table
    /// read without checks does not ask the cache: its blocks are not there.
    cached_any: AtomicBool,
    verify_checksums: bool,
    footer: Footer,
    index: Block,
    index_search: IndexSearch,
    filter: Option<Arc<BloomFilter>>,
    props: TableProperties,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("entries", &self.props.num_entries)
            .finish()
    }
}

impl Table {
    /// Open a table: read and check the footer, then the index, filter and properties
    /// blocks (their checksums are always verified). Reads are counted as
    /// [`ReadCause::TableOpen`].
    ///
    /// `verify_checksums` decides whether data block reads check their checksums.
    ///
    /// # Errors
    /// [`Error::Corruption`] for a truncated file, a bad footer or metadata block; I/O errors.
    pub fn open(
        file: ReadFile,
        file_number: u64,
        cache: Option<Arc<BlockCache>>,
        verify_checksums: bool,
    ) -> Result<Table> {
        let len = file.len();
        Table::open_at(file, file_number, len, cache, verify_checksums)
    }

    /// [`Table::open`] for the table that ends at byte `len` of `file` (the size the
    /// MANIFEST records): the footer is read there, and nothing past it. A file shorter
    /// than `len` is corruption (bytes of a committed table are missing).
    ///
    /// # Errors
    /// As [`Table::open`].
    pub fn open_at(
        file: ReadFile,
        file_number: u64,
        len: u64,
        cache: Option<Arc<BlockCache>>,
        verify_checksums: bool,
    ) -> Result<Table> {
        Table::open_segment(file, file_number, 0, len, cache, verify_checksums)
    }

    /// [`Table::open_at`] for an sst image that occupies bytes `start..end` of `file` and
    /// whose block handles are file offsets (a segment of a DTable, `docs/format/dtable.md`):
    /// the footer is read at `end`, and every block it names must lie in `start..end`.
    ///
    /// # Errors
    /// As [`Table::open`], and [`Error::Corruption`] for a block before `start`.
    pub fn open_segment(
        file: ReadFile,
        file_number: u64,
        start: u64,
        end: u64,
        cache: Option<Arc<BlockCache>>,
        verify_checksums: bool,
    ) -> Result<Table> {
        let len = end;
        let path: Arc<Path> = Arc::from(file.path());
        if file.len() < len {
            return Err(Error::corruption(
                path.to_path_buf(),
                file.len(),
                format!(
                    "the table file holds {} bytes, but {len} were committed",
                    file.len()
                ),
            ));
        }
        if len < start.saturating_add(FOOTER_LEN as u64) {
            return Err(Error::corruption(
                path.to_path_buf(),
                start,
                if start == 0 {
                    format!(
                        "file of {len} bytes is shorter than the {FOOTER_LEN}-byte table footer"
                    )
                } else {
                    format!(
                        "the table image at {start}..{len} is shorter than the {FOOTER_LEN}-byte \
                         table footer"
                    )
                },
            ));
        }
        let footer_off = len - FOOTER_LEN as u64;
        let raw = file.read_at(footer_off, FOOTER_LEN, ReadCause::TableOpen)?;
        let footer = Footer::decode(&raw, len).at(&path, footer_off)?;
        for (h, what) in [
            (footer.index, "index"),
            (footer.properties, "properties"),
            (footer.filter, "filter"),
        ] {
            if h.offset < start && (h.size != 0 || what != "filter") {
                return Err(Error::corruption(
                    path.to_path_buf(),
                    footer_off,
                    format!(
                        "the {what} block handle (offset {}) points before the table image, \
                         which starts at {start}",
                        h.offset
                    ),
                ));
            }
        }

        let read_meta = |h: BlockHandle| -> Result<SharedBytes> {
            let buf = read_stored(&file, &path, h, ReadCause::TableOpen)?;
            decode_block(buf, true).at(&path, h.offset)
        };
        let props_raw = read_meta(footer.properties)?;
        let props = TableProperties::decode(&props_raw).at(&path, footer.properties.offset)?;
        let index = Block::new(read_meta(footer.index)?).at(&path, footer.index.offset)?;
        let index_search = IndexSearch::build(&index).at(&path, footer.index.offset)?;
        let filter = if footer.filter.size == 0 {
            None
        } else {
            let data = read_meta(footer.filter)?.to_vec();
            Some(Arc::new(
                BloomFilter::new(data).at(&path, footer.filter.offset)?,
            ))
        };
        Ok(Table {
            file,
            size: len,
            data_start: start,
            path,
            file_number,
            cache,
            cached_any: AtomicBool::new(false),
            verify_checksums,
            footer,
            index,
            index_search,
            filter,
            props,
        })
    }

    /// The table's properties, as written by its builder.
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// The file number this table was opened under.
    pub fn file_number(&self) -> u64 {
        self.file_number
    }

    /// The path of the table file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file size in bytes.
    pub fn file_size(&self) -> u64 {
        self.size
    }

    /// False only if the table certainly holds no entry for `user_key` (bloom filter). True
    /// when the table has no filter.
    #[inline]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// The table's bloom filter, if it has one.
    pub fn filter(&self) -> Option<&Arc<BloomFilter>> {
        self.filter.as_ref()
    }

    /// Start loading the filter's cache line for `hash` (see [`BloomFilter::touch`]).
    #[inline]
    pub fn touch_filter(&self, hash: u64) {
        if let Some(f) = &self.filter {
            f.touch(hash);
        }
    }

    /// [`Table::may_contain`] for the key's precomputed [`crate::table::bloom::hash64`]
    /// (one hash for all the tables a read asks).
    #[inline]
    pub fn may_contain_hash(&self, hash: u64) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.may_contain_hash(hash))
    }

    /// The first entry whose internal key is `>= seek_key`, if its user key is `user_key`.
    ///
    /// `seek_key` is normally `key::seek_key(user_key, snapshot)`. A negative bloom check
    /// answers without I/O. Allocates only the returned key and value.
    ///
    /// # Errors
    /// [`Error::Corruption`] for a bad index entry or data block; I/O errors.
    pub fn get(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        read: impl Into<TableRead>,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if !self.may_contain(user_key) {
            return Ok(None);
        }
        self.get_unfiltered(user_key, seek_key, read.into())
    }

    /// [`Table::get`] for a caller that already asked the filter.
    ///
    /// # Errors
    /// As [`Table::get`].
    pub fn get_unfiltered(
        &self,
        user_key: &[u8],
        seek_key: &[u8],
        read: TableRead,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let index_off = self.footer.index.offset;
        let mut i = self
            .index_search
            .find(&self.index, seek_key)
            .at(&self.path, index_off)?;
        let mut data: Option<BlockCursor> = None;
        while i < self.index_search.len() {
            let (_, hv) = self.index.restart_entry(i).at(&self.path, index_off)?;
            let handle = self.decode_handle(hv)?;
            let block = self.read_block(handle, read)?;
            let c = match &mut data {
                Some(c) => {
                    c.reset(block, handle.offset);
                    c
                }
                None => data.insert(BlockCursor::new(block, handle.offset)),
            };
            c.seek(seek_key).at(&self.path, handle.offset)?;
            if c.valid() {
                if key::user_key(c.key()) != user_key {
                    return Ok(None);
                }
                let value = c.value().to_vec();
                return Ok(Some((c.take_key(), value)));
            }
            // Every key of this block is below seek_key, which can only happen when
            // seek_key equals the block's separator; the answer starts the next block.
            i += 1;
        }
        Ok(None)
    }

    /// The offset of the data block holding the first entry `>= ikey`, or where the data
    /// ends (the index block's offset) when every entry is below `ikey`. From the index in
    /// memory, no read.
    ///
    /// # Errors
    /// [`Error::Corruption`] for a bad index entry.
    pub fn approximate_offset_of(&self, ikey: &[u8]) -> Result<u64> {
        let index_off = self.footer.index.offset;
        let i = self
            .index_search
            .find(&self.index, ikey)
            .at(&self.path, index_off)?;
        if i >= self.index_search.len() {
            return Ok(index_off);
        }
        let (_, hv) = self.index.restart_entry(i).at(&self.path, index_off)?;
        Ok(self.decode_handle(hv)?.offset)
    }

    /// A two-level iterator over every entry; blocks are fetched through the block cache
    /// (as `read` says) and their bytes counted under its cause.
    pub fn iter(self: &Arc<Self>, read: impl Into<TableRead>) -> TableIter {
        TableIter::new(Arc::clone(self), read.into())
    }

    /// Read every block, checking every checksum (whatever `verify_checksums` says), that
    /// keys are internal keys in strictly increasing order, that each index separator lies
    /// between its block and the next, that the filter knows every key, and that the entry
    /// count matches the properties.
    ///
    /// # Errors
    /// [`Error::Corruption`] naming the file and the offset of the bad block.
    pub fn verify(&self) -> Result<()> {
        let cause = ReadCause::Other;
        let mut index = self.index_iter();
        index.seek_to_first()?;
        let mut prev_key: Vec<u8> = Vec::new();
        let mut prev_sep: Vec<u8> = Vec::new();
        let mut entries = 0u64;
        let mut data_end = self.data_start;
        let mut blocks = 0u64;
        while index.valid() {
            let handle = self.decode_handle(index.value())?;
            let sep = index.key();
            let bad = |d: String| Error::corruption(self.path.to_path_buf(), handle.offset, d);
            if blocks > 0 && key::compare_internal(&prev_sep, sep) != Ordering::Less {
                return Err(bad("index separators are not increasing".into()));
            }
            if handle.offset != data_end {
                return Err(bad(format!(
                    "data block starts at {}, expected {data_end} (right after the previous one)",
                    handle.offset
                )));
            }
            data_end = handle.end().unwrap_or(u64::MAX);
            let buf = read_stored(&self.file, &self.path, handle, cause)?;
            let block = Block::new(decode_block(buf, true).map_err(bad)?).map_err(bad)?;
            let mut it = block.iter(Arc::clone(&self.path), handle.offset);
            it.seek_to_first()?;
            if !it.valid() {
                return Err(bad("data block holds no entries".into()));
            }
            if blocks > 0 && key::compare_internal(it.key(), &prev_sep) != Ordering::Greater {
                return Err(bad(
                    "the block's first key does not sort after the previous separator".into(),
                ));
            }
            while it.valid() {
                let k = it.key();
                let parsed = key::parse_internal_key(k).map_err(bad)?;
                if entries > 0 && key::compare_internal(&prev_key, k) != Ordering::Less {
                    return Err(bad("keys are not in increasing order".into()));
                }
                if key::compare_internal(k, sep) == Ordering::Greater {
                    return Err(bad("a key sorts after the block's index separator".into()));
                }
                if entries == 0 && k != self.props.smallest.as_slice() {
                    return Err(bad(
                        "the first key differs from the properties' smallest key".into(),
                    ));
                }
                let new_user_key = entries == 0 || key::user_key(&prev_key) != parsed.user_key;
                if new_user_key && !self.may_contain(parsed.user_key) {
                    return Err(bad(
                        "the bloom filter does not know a key of the block".into()
                    ));
                }
                prev_key.clear();
                prev_key.extend_from_slice(k);
                entries += 1;
                it.next()?;
            }
            prev_sep.clear();
            prev_sep.extend_from_slice(sep);
            blocks += 1;
            index.next()?;
        }
        let bad =
            |d: String| Error::corruption(self.path.to_path_buf(), self.footer.index.offset, d);
        if entries != self.props.num_entries {
            return Err(bad(format!(
                "the data blocks hold {entries} entries, the properties say {}",
                self.props.num_entries
            )));
        }
        if entries > 0 && (prev_key != self.props.largest) {
            return Err(bad(
                "the last key differs from the properties' largest key".into()
            ));
        }
        Ok(())
    }

    /// Read the first and the last data block, checking their checksums (whatever
    /// `verify_checksums` says) and that the table begins and ends with the properties'
    /// smallest and largest keys. With the metadata [`Table::open`] checks, this is the
    /// cheap check of a table just written ([`crate::options::NewTableCheck::Quick`]): a
    /// write lost or damaged at either end of the data, or anywhere in the metadata, is
    /// found; one in a middle data block only by [`Table::verify`].
    ///
    /// # Errors
    /// [`Error::Corruption`] naming the file and the offset of the bad block.
    pub fn verify_ends(&self) -> Result<()> {
        let blocks = self.index_search.len();
        let index_off = self.footer.index.offset;
        let Some(last) = blocks.checked_sub(1) else {
            if self.props.num_entries != 0 {
                return Err(self.corruption(
                    index_off,
                    format!(
                        "the index lists no data block, the properties say {} entries",
                        self.props.num_entries
                    ),
                ));
            }
            return Ok(());
        };
        for (i, first, want) in [
            (0, true, &self.props.smallest),
            (last, false, &self.props.largest),
        ] {
            let (_, hv) = self.index.restart_entry(i).at(&self.path, index_off)?;
            let handle = self.decode_handle(hv)?;
            let buf = read_stored(&self.file, &self.path, handle, ReadCause::Other)?;
            let data = decode_block(buf, true).at(&self.path, handle.offset)?;
            let block = Block::new(data).at(&self.path, handle.offset)?;
            let mut it = block.iter(Arc::clone(&self.path), handle.offset);
            if first {
                it.seek_to_first()?;
            } else {
                it.seek_to_last()?;
            }
            if !it.valid() || it.key() != want.as_slice() {
                let which = if first { "first" } else { "last" };
                return Err(self.corruption(
                    handle.offset,
                    format!("the {which} data block does not hold the properties' {which} key"),
                ));
            }
        }
        Ok(())
    }

    /// Position `index` (a cursor over the index block) on the first separator `>= target`.
    #[inline]
    pub(super) fn seek_index(&self, index: &mut BlockCursor, target: &[u8]) -> Result<()> {
        let i = self
            .index_search
            .find(&self.index, target)
            .at(&self.path, self.footer.index.offset)?;
        index
            .seek_to_entry(i)
            .at(&self.path, self.footer.index.offset)
    }

    /// A cursor over the in-memory index block.
    pub(super) fn index_cursor(&self) -> BlockCursor {
        BlockCursor::new(self.index.clone(), self.footer.index.offset)
    }

    /// An iterator over the in-memory index block.
    pub(super) fn index_iter(&self) -> BlockIter {
        self.index
            .iter(Arc::clone(&self.path), self.footer.index.offset)
    }

    /// The data block handle at the index iterator's position, checked to lie in the file.
    #[inline]
    pub(super) fn decode_handle(&self, index_value: &[u8]) -> Result<BlockHandle> {
        let h = BlockHandle::decode_varint(index_value).at(&self.path, self.footer.index.offset)?;
        h.check_within(self.size.saturating_sub(FOOTER_LEN as u64), "data")
            .at(&self.path, self.footer.index.offset)?;
        Ok(h)
    }

    /// A data block, from the cache or the file, its checksum checked if `read` (or, when
    /// it does not say, the store's `Options::verify_checksums`) asks.
    ///
    /// The block cache holds only blocks whose checksum was checked, or any block when the
    /// store does not check checksums: a read that checks never gets an unchecked block
    /// from the cache. A read that skips the check but fills the cache checks the block on
    /// the side before it is cached (a block that fails is returned as read, unchecked, and
    /// not cached). Compaction reads, and reads with `fill_cache` off, do not fill it: they
    /// touch each block once and would push out blocks that readers reuse.
    ///
    /// A table read through a memory map (`Options::mmap_reads`) lends its uncompressed
    /// blocks straight from the map, with no copy. One whose checksum was checked is cached
    /// (a later read then skips the check); one read without the check is used in place and
    /// not cached (LevelDB's `ReadBlock` for a mapped file: "do not double-cache"), and a
    /// table with no block in the cache does not look there.
    pub(super) fn read_block(&self, h: BlockHandle, read: TableRead) -> Result<Block> {
        if let Some(c) = &self.cache
            && (!self.file.is_mapped() || self.cached_any.load(AtomicOrdering::Relaxed))
            && let Some(data) = c.get(self.file_number, h.offset)
        {
            return Block::new(data).at(&self.path, h.offset);
        }
        let verify = read.verify_checksums.unwrap_or(self.verify_checksums);
        let cause = read.cause;
        let fills = read.fill_cache && self.cache.is_some() && cause != ReadCause::Compaction;
        // A block the cache would keep, read without the check in a store that checks, is
        // checked on the side first: the cache holds only checked blocks.
        let checked_for_cache =
            |stored: &[u8]| !verify && fills && self.verify_checksums && checksum_holds(stored);
        let count = || self.file.count_block(cause, crate::env::BlockKind::Data);
        // `lent`: the block is a range of the file's map (not a copy, not decompressed);
        // `checked`: its checksum held.
        let (data, lent, checked) = match self.read_shared(h, cause) {
            Some(shared) => {
                let shared = shared?;
                count();
                // A lent block read without the check is used in place, never cached.
                let checked = verify || (is_compressed(&shared) && checked_for_cache(&shared));
                decode_shared_block(shared, verify).map(|(d, copied)| (d, !copied, checked))
            }
            None => {
                let buf = read_stored(&self.file, &self.path, h, cause)?;
                count();
                let checked = verify || checked_for_cache(&buf);
                decode_block(buf, verify).map(|d| (d, false, checked))
            }
        }
        .at(&self.path, h.offset)?;
        let block = Block::new(data.clone()).at(&self.path, h.offset)?;
        if fills
            && (checked || !(self.verify_checksums || lent))
            && let Some(c) = &self.cache
        {
            if !self.cached_any.load(AtomicOrdering::Relaxed) {
                self.cached_any.store(true, AtomicOrdering::Relaxed);
            }
            c.insert(self.file_number, h.offset, data);
        }
        Ok(block)
    }

    /// The stored block and trailer at `h`, lent from the file's map without a copy, when
    /// the file is mapped; the handle must lie within the file.
    fn read_shared(&self, h: BlockHandle, cause: ReadCause) -> Option<Result<SharedBytes>> {
        if !self.file.is_mapped() {
            return None;
        }
        let len = match stored_len(&self.file, &self.path, h) {
            Ok(len) => len,
            Err(e) => return Some(Err(e)),
        };
        self.file.read_shared(h.offset, len, cause)
    }

    /// Attach this table's path to a block decoding failure at `offset`.
    pub(super) fn corruption(&self, offset: u64, detail: String) -> Error {
        Error::corruption(self.path.to_path_buf(), offset, detail)
    }
}

/// Read a block and its trailer; the handle must lie within the file.
fn read_stored(file: &ReadFile, path: &Path, h: BlockHandle, cause: ReadCause) -> Result<Vec<u8>> {
    let len = stored_len(file, path, h)?;
    file.read_at(h.offset, len, cause)
}

/// The length of the block at `h` with its trailer, checked to lie within the file.
fn stored_len(file: &ReadFile, path: &Path, h: BlockHandle) -> Result<usize> {
    h.check_within(file.len(), "block").at(path, h.offset)?;
    usize::try_from(h.size + BLOCK_TRAILER_LEN as u64)
        .map_err(|_| Error::corruption(path, h.offset, "block too large for this machine"))
}
