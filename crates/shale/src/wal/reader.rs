//! Reading logical records back from a log, with the recovery rules of `docs/format/wal.md`.

use std::path::{Path, PathBuf};

use super::{BLOCK_SIZE, DEFAULT_MAX_RECORD_SIZE, HEADER_SIZE, RecordType, record_checksum};
use crate::env::{ReadCause, ReadFile};
use crate::error::{Error, Result};

/// Where a [`LogReader`] reads its bytes: a file, or bytes in memory in tests and tools.
pub trait LogSource {
    /// Total length in bytes.
    fn len(&self) -> u64;
    /// True when empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Fill `buf` from `offset`. Callers never read past [`LogSource::len`].
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;
}

/// A [`ReadFile`] whose reads are counted under one cause.
#[derive(Debug, Clone)]
pub struct FileSource {
    file: ReadFile,
    cause: ReadCause,
}

impl FileSource {
    /// Read `file`, counting bytes under `cause`.
    pub fn new(file: ReadFile, cause: ReadCause) -> FileSource {
        FileSource { file, cause }
    }
}

impl LogSource for FileSource {
    fn len(&self) -> u64 {
        self.file.len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file.read_exact_at(buf, offset, self.cause)
    }
}

impl LogSource for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| self.get(o..o.checked_add(buf.len())?))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "read of {} bytes at {offset} past the end of a {}-byte buffer",
                    buf.len(),
                    <[u8]>::len(self)
                ))
            })?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl LogSource for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }
}

impl<T: LogSource + ?Sized> LogSource for &T {
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        (**self).read_exact_at(buf, offset)
    }
}

/// One physical record, or why there is none.
enum Physical {
    /// A physical record whose checksum verifies; its payload is `block[start..start + len]`.
    Record {
        typ: RecordType,
        offset: u64,
        start: usize,
        len: usize,
    },
    /// The file ends cleanly here (possibly after a block's zero tail).
    End,
    /// Bytes at `offset` are not a valid physical record.
    Bad { offset: u64, detail: String },
}

/// Reads logical records from a log sequentially, one 32 KiB block at a time.
///
/// A torn tail (what a crash during an append leaves) ends the log quietly: a truncated
/// header or payload, a FIRST/MIDDLE without its LAST, zero bytes, or a bad record after
/// which no valid record exists anywhere in the file. The reader then reports where the valid
/// log ends ([`LogReader::valid_end_offset`]) and how many bytes it dropped
/// ([`LogReader::dropped_tail_bytes`]). A bad record that *is* followed by a valid record is
/// damage in the middle of the log, and is reported as [`Error::Corruption`] at the offset of
/// the bad record: skipping it would leave a hole in the history.
///
/// Thread-safety: one owner at a time.
#[derive(Debug)]
pub struct LogReader<S: LogSource = FileSource> {
    src: S,
    path: PathBuf,
    file_len: u64,
    max_record_size: usize,
    /// The block being read; `block_start` is its file offset, `pos` the read position in it.
    block: Vec<u8>,
    block_start: u64,
    block_loaded: bool,
    pos: usize,
    last_record_offset: u64,
    /// End of the last complete logical record returned.
    valid_end: u64,
    done: bool,
    /// Set after corruption, so that a caller retrying gets the same error again.
    failed: Option<(u64, String)>,
    /// Whether damage containing a zero-filled page ends the log (see
    /// [`LogReader::tolerate_lost_pages`]).
    tolerate_lost_pages: bool,
    /// Set by [`LogReader::skip_past_damage`] until the next FULL or FIRST fragment: the
    /// MIDDLE and LAST fragments of a record begun before the skip are dropped quietly.
    resyncing: bool,
}

/// A file system loses writeback of unsynced data in pages of this size; a lost page of an
/// appended region reads back as zeros.
pub(crate) const LOST_PAGE_SIZE: u64 = 4096;

impl LogReader<FileSource> {
    /// Read the log in `file`, counting reads under `cause` (typically
    /// [`ReadCause::Recovery`]).
    pub fn new(file: ReadFile, cause: ReadCause) -> LogReader<FileSource> {
        let path = file.path().to_path_buf();
        LogReader::with_source(FileSource::new(file, cause), path)
    }
}

impl<S: LogSource> LogReader<S> {
    /// Read the log in `src`; `path` names it in errors.
    pub fn with_source(src: S, path: impl Into<PathBuf>) -> LogReader<S> {
        let file_len = src.len();
        LogReader {
            src,
            path: path.into(),
            file_len,
            max_record_size: DEFAULT_MAX_RECORD_SIZE,
            block: Vec::new(),
            block_start: 0,
            block_loaded: false,
            pos: 0,
            last_record_offset: 0,
            valid_end: 0,
            done: false,
            failed: None,
            tolerate_lost_pages: false,
            resyncing: false,
        }
    }

    /// Treat damage that a crash can leave in the unsynced tail of the log being written as
    /// the end of the log: a bad record followed by valid ones, where the stretch between
    /// them holds a lost page: an aligned 4 KiB page that reads zero from the bad record
    /// (or from the page start) to the page end. A file system writes dirty pages
    /// back in any order, so a crash can keep a later page of an unsynced append and lose an
    /// earlier one, which then reads as zeros. Everything after such a hole was never synced
    /// (a sync makes the whole file prefix durable), so dropping it keeps a prefix of the
    /// history that holds every synced record. Only for the newest log: older logs were
    /// synced in full, so a hole in them is damage and stays [`Error::Corruption`].
    pub fn tolerate_lost_pages(mut self, yes: bool) -> Self {
        self.tolerate_lost_pages = yes;
        self
    }

    /// Refuse to assemble a logical record larger than `n` bytes (the default is
    /// [`DEFAULT_MAX_RECORD_SIZE`]); a larger record is reported as corruption.
    pub fn with_max_record_size(mut self, n: usize) -> Self {
        self.max_record_size = n;
        self
    }

    /// The path used in error messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Read the next logical record into `out` (replacing its contents). Returns false at the
    /// end of the log, including the end of the valid part of a log with a torn tail.
    ///
    /// # Errors
    /// [`Error::Corruption`] naming the file and the offset of the bad record when a bad
    /// record is followed by a valid one, or when a record exceeds the size bound; I/O
    /// errors from the source. After an error every later call returns it again.
    pub fn next_record(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        if let Some((offset, detail)) = &self.failed {
            return Err(Error::corruption(&self.path, *offset, detail.clone()));
        }
        if self.done {
            return Ok(false);
        }
        let mut fragment_start: Option<u64> = None;
        loop {
            match self.read_physical()? {
                Physical::Record {
                    typ,
                    offset,
                    start,
                    len,
                } => {
                    if let (Some(first), RecordType::Full | RecordType::First) =
                        (fragment_start, typ)
                    {
                        return self.fail(
                            first,
                            format!(
                                "record begun by a FIRST fragment is never finished: a \
                                 {typ:?} record starts at offset {offset}"
                            ),
                        );
                    }
                    let orphan = fragment_start.is_none()
                        && matches!(typ, RecordType::Middle | RecordType::Last);
                    if orphan && self.resyncing {
                        continue;
                    }
                    self.resyncing = false;
                    if orphan {
                        self.bad(
                            offset,
                            format!("{typ:?} fragment without a preceding FIRST fragment"),
                        )?;
                        return Ok(false);
                    }
                    let record_start = fragment_start.unwrap_or(offset);
                    if out.len().saturating_add(len) > self.max_record_size {
                        return self.fail(
                            record_start,
                            format!(
                                "logical record grows past the {}-byte limit",
                                self.max_record_size
                            ),
                        );
                    }
                    let payload = self.block.get(start..start + len).ok_or_else(|| {
                        Error::corruption(&self.path, offset, "record payload out of block")
                    })?;
                    out.extend_from_slice(payload);
                    match typ {
                        RecordType::Full | RecordType::Last => {
                            self.last_record_offset = record_start;
                            self.valid_end = self.block_start + self.pos as u64;
                            return Ok(true);
                        }
                        RecordType::First => fragment_start = Some(offset),
                        RecordType::Middle => {}
                    }
                }
                Physical::End => {
                    // An unfinished fragmented record at the end is a torn tail.
                    self.done = true;
                    out.clear();
                    return Ok(false);
                }
                Physical::Bad { offset, detail } => {
                    out.clear();
                    self.bad(offset, detail)?;
                    return Ok(false);
                }
            }
        }
    }

    /// Offset of the first byte of the last logical record returned (its first header).
    /// Callers use it to name a record whose payload fails to decode.
    pub fn last_record_offset(&self) -> u64 {
        self.last_record_offset
    }

    /// The offset just past the last complete logical record returned. Once
    /// [`LogReader::next_record`] has returned false, this is where the valid log ends.
    pub fn valid_end_offset(&self) -> u64 {
        self.valid_end
    }

    /// Bytes after the valid end of the log that were dropped as a torn tail (0 for a log
    /// that ends cleanly). Meaningful once [`LogReader::next_record`] has returned false.
    pub fn dropped_tail_bytes(&self) -> u64 {
        if self.done {
            self.file_len.saturating_sub(self.valid_end)
        } else {
            0
        }
    }

    /// Salvage: after [`LogReader::next_record`] reported corruption at `offset`, go on
    /// reading at the next block boundary after it, dropping what lies between (a record
    /// that started before it is lost with it). Returns the bytes dropped.
    pub fn skip_past_damage(&mut self, offset: u64) -> u64 {
        let block = BLOCK_SIZE as u64;
        let next = (offset / block + 1)
            .saturating_mul(block)
            .min(self.file_len);
        self.failed = None;
        self.done = false;
        self.block_start = next - next % block;
        self.pos = (next % block) as usize;
        self.block_loaded = false;
        self.valid_end = next;
        self.resyncing = true;
        next.saturating_sub(offset)
    }

    fn fail<T>(&mut self, offset: u64, detail: String) -> Result<T> {
        let e = Error::corruption(&self.path, offset, detail.clone());
        self.failed = Some((offset, detail));
        Err(e)
    }

    /// A bad record at `offset`: corruption if a valid record follows it, else the end of
    /// the log (a torn tail).
    fn bad(&mut self, offset: u64, detail: String) -> Result<()> {
        if let Some(found) = self.valid_record_after(offset)? {
            if self.tolerate_lost_pages && self.zero_page_between(offset, found)? {
                self.done = true;
                return Ok(());
            }
            return self.fail(
                offset,
                format!(
                    "{detail}; a valid record follows at offset {found}, so this is damage in \
                     the middle of the log, not a torn tail"
                ),
            );
        }
        self.done = true;
        Ok(())
    }

    /// Whether the damage in `[from, to)` looks like lost pages: some aligned page that
    /// overlaps it reads zero from `from` (or from its own start, if later) to its end. A
    /// page lost whole is all zeros; the page holding the synced end of the file, if its
    /// unsynced rest was lost, reads zero from there to its end, and `from` is that end,
    /// since logs are synced at record boundaries. A flipped bit does neither.
    fn zero_page_between(&self, from: u64, to: u64) -> Result<bool> {
        let mut page = [0u8; LOST_PAGE_SIZE as usize];
        let mut start = from - from % LOST_PAGE_SIZE;
        while start < to && start + LOST_PAGE_SIZE <= self.file_len {
            self.src.read_exact_at(&mut page, start)?;
            // `from` lies in the first page only, so the skip is below the page size.
            let skip = from.saturating_sub(start) as usize;
            if page.get(skip..).is_some_and(|p| p.iter().all(|&b| b == 0)) {
                return Ok(true);
            }
            start += LOST_PAGE_SIZE;
        }
        Ok(false)
    }

    /// Load the block that starts at `start` into `buf`; its length is short at the end of
    /// the file.
    fn load_block(&self, start: u64, buf: &mut Vec<u8>) -> Result<()> {
        let remaining = self.file_len.saturating_sub(start);
        // At most BLOCK_SIZE, so the cast cannot truncate.
        let n = remaining.min(BLOCK_SIZE as u64) as usize;
        buf.resize(n, 0);
        self.src.read_exact_at(buf, start)
    }

    fn read_physical(&mut self) -> Result<Physical> {
        loop {
            let here = self.block_start + self.pos as u64;
            if here >= self.file_len {
                return Ok(Physical::End);
            }
            if !self.block_loaded {
                let mut block = std::mem::take(&mut self.block);
                let r = self.load_block(self.block_start, &mut block);
                self.block = block;
                r?;
                self.block_loaded = true;
            }
            if BLOCK_SIZE - self.pos < HEADER_SIZE {
                // The zero-filled tail of a block: the next record starts in the next block.
                self.block_start += BLOCK_SIZE as u64;
                self.pos = 0;
                self.block_loaded = false;
                continue;
            }
            let avail = self.block.len().saturating_sub(self.pos);
            let Some(h) = parse_header(&self.block, self.pos) else {
                return Ok(Physical::Bad {
                    offset: here,
                    detail: format!(
                        "truncated record header: the file ends {avail} bytes after it starts"
                    ),
                });
            };
            let bad = |detail: String| {
                Ok(Physical::Bad {
                    offset: here,
                    detail,
                })
            };
            if h.len > BLOCK_SIZE - self.pos - HEADER_SIZE {
                return bad(format!(
                    "record length {} runs past the end of its block ({} bytes left)",
                    h.len,
                    BLOCK_SIZE - self.pos - HEADER_SIZE
                ));
            }
            if h.len > avail - HEADER_SIZE {
                return bad(format!(
                    "truncated record: length {} but the file ends {} bytes after the header",
                    h.len,
                    avail - HEADER_SIZE
                ));
            }
            if h.crc == 0 && h.len == 0 && h.typ == 0 {
                return bad("zero bytes where a record header should be".to_string());
            }
            let start = self.pos + HEADER_SIZE;
            let payload = self.block.get(start..start + h.len).unwrap_or_default();
            let computed = record_checksum(h.typ, payload);
            if computed != h.crc {
                return bad(format!(
                    "record checksum mismatch: stored {:#010x}, computed {computed:#010x}",
                    h.crc
                ));
            }
            let Some(typ) = RecordType::from_u8(h.typ) else {
                return bad(format!("unknown record type {}", h.typ));
            };
            self.pos = start + h.len;
            return Ok(Physical::Record {
                typ,
                offset: here,
                start,
                len: h.len,
            });
        }
    }

    /// The offset of a valid physical record after the bad record at `bad_offset`, if any.
    ///
    /// In the bad record's own block every later byte offset is tried, because the bad
    /// record's length may itself be damaged. In each later block the records are walked
    /// from the block start (every block begins with a header), stepping over records whose
    /// checksum fails but whose length fits; this is linear in the file size.
    fn valid_record_after(&self, bad_offset: u64) -> Result<Option<u64>> {
        let block_start = bad_offset - bad_offset % BLOCK_SIZE as u64;
        // bad_offset lies in this block, so the difference is below BLOCK_SIZE.
        let at = (bad_offset - block_start) as usize;
        let mut buf = Vec::new();
        let block: &[u8] = if self.block_loaded && self.block_start == block_start {
            &self.block
        } else {
            self.load_block(block_start, &mut buf)?;
            &buf
        };
        // Where to look in this block. The bad record's payload is user data, which may
        // itself hold well-formed records, so a record whose claimed end lies in the block
        // is skipped whole. When the claimed end lies past the end of the file, either the
        // record was torn by a crash (and its payload is all that follows) or its length
        // was damaged (and real records follow): every later offset is tried, but a
        // candidate counts only if valid records run from it to the end of the block, which
        // a stray record inside a torn payload does not do.
        let (first, chain) = match parse_header(block, at) {
            Some(h) => {
                let end = at + HEADER_SIZE + h.len;
                if end <= block.len() {
                    (end, false)
                } else if block_start + (end as u64) > self.file_len {
                    (at + 1, true)
                } else {
                    (at + 1, false)
                }
            }
            None => (at + 1, false),
        };
        let found = (first..block.len())
            .find(|&p| valid_record_at(block, p) && (!chain || valid_chain_to_end(block, p)));
        if let Some(p) = found {
            return Ok(Some(block_start + p as u64));
        }
        let mut start = block_start + BLOCK_SIZE as u64;
        while start < self.file_len {
            self.load_block(start, &mut buf)?;
            let mut p = 0;
            while let Some(h) = parse_header(&buf, p) {
                if h.len > buf.len() - p - HEADER_SIZE {
                    break;
                }
                if valid_record_at(&buf, p) {
                    return Ok(Some(start + p as u64));
                }
                p += HEADER_SIZE + h.len;
            }
            start += BLOCK_SIZE as u64;
        }
        Ok(None)
    }
}

/// Whether valid physical records run from `p` to the end of `block` (ending in at most a
/// header's worth of zero padding, or in zeros where a header would be).
fn valid_chain_to_end(block: &[u8], mut p: usize) -> bool {
    loop {
        let rest = block.get(p..).unwrap_or_default();
        if rest.len() < HEADER_SIZE || rest.iter().all(|&b| b == 0) {
            return rest.iter().all(|&b| b == 0);
        }
        let Some(h) = parse_header(block, p) else {
            return false;
        };
        if !valid_record_at(block, p) {
            return false;
        }
        p += HEADER_SIZE + h.len;
    }
}

/// A physical record header, not yet checked.
struct Header {
    crc: u32,
    len: usize,
    typ: u8,
}

/// The header at `pos` of `block`, or `None` if fewer than [`HEADER_SIZE`] bytes remain.
fn parse_header(block: &[u8], pos: usize) -> Option<Header> {
    let h = block.get(pos..pos.checked_add(HEADER_SIZE)?)?;
    let [c0, c1, c2, c3, l0, l1, typ] = *h else {
        return None;
    };
    Some(Header {
        crc: u32::from_le_bytes([c0, c1, c2, c3]),
        len: usize::from(u16::from_le_bytes([l0, l1])),
        typ,
    })
}

/// Whether a complete physical record with a verifying checksum and a known type starts at
/// `pos` of `block` (a block that begins at a block boundary of the file).
fn valid_record_at(block: &[u8], pos: usize) -> bool {
    let Some(h) = parse_header(block, pos) else {
        return false;
    };
    if RecordType::from_u8(h.typ).is_none() || pos + HEADER_SIZE + h.len > BLOCK_SIZE {
        return false;
    }
    let start = pos + HEADER_SIZE;
    match block.get(start..start + h.len) {
        Some(payload) => record_checksum(h.typ, payload) == h.crc,
        None => false,
    }
}
