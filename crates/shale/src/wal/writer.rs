//! Framing logical records into blocks of physical records.

use super::{BLOCK_SIZE, DEFAULT_MAX_RECORD_SIZE, HEADER_SIZE, RecordType, record_checksum};
use crate::env::WriteFile;
use crate::error::{Error, Result};

/// Where a [`LogWriter`] puts its bytes: a file, or a `Vec<u8>` in tests and tools.
pub trait LogSink {
    /// Append bytes at the end.
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hand buffered bytes to the operating system.
    fn flush(&mut self) -> Result<()>;
    /// Make every appended byte durable.
    fn sync(&mut self) -> Result<()>;
    /// Bytes held so far (the offset the next append lands at).
    fn len(&self) -> u64;
    /// True when nothing has been appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// [`LogSink::append`] then [`LogSink::flush`] in one call (a sink may then skip its
    /// buffer); an error names the step that failed, `"append"` or `"flush"`.
    fn append_and_flush(&mut self, data: &[u8]) -> std::result::Result<(), (&'static str, Error)> {
        self.append(data).map_err(|e| ("append", e))?;
        self.flush().map_err(|e| ("flush", e))
    }
}

impl LogSink for WriteFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        WriteFile::append(self, data)
    }
    fn append_and_flush(&mut self, data: &[u8]) -> std::result::Result<(), (&'static str, Error)> {
        WriteFile::append_and_flush(self, data)
    }
    fn flush(&mut self) -> Result<()> {
        WriteFile::flush(self)
    }
    fn sync(&mut self) -> Result<()> {
        WriteFile::sync(self)
    }
    fn len(&self) -> u64 {
        WriteFile::len(self)
    }
}

impl LogSink for Vec<u8> {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        Vec::len(self) as u64
    }
}

/// Appends framed records to a log.
///
/// Each [`LogWriter::add_record`] builds the whole framed record (every fragment, and the
/// zero padding of a block tail) in one buffer and appends it with one call, so the sink
/// sees one write per record.
///
/// After any failure of the sink the writer refuses further work: the file may hold a
/// partial record and its position is unknown, so continuing would frame records at the
/// wrong block offsets. The engine reopens (and recovers) instead.
///
/// Thread-safety: one owner at a time (`&mut self`); the engine's write leader owns it.
#[derive(Debug)]
pub struct LogWriter<S: LogSink = WriteFile> {
    sink: S,
    /// Offset in the file of the next byte this writer appends.
    offset: u64,
    /// Reused framing buffer.
    buf: Vec<u8>,
    /// Set when the sink failed; holds what failed.
    failed: Option<String>,
}

impl LogWriter<WriteFile> {
    /// A writer appending to `file`, continuing at its current length (0 for a new file).
    pub fn new(file: WriteFile) -> LogWriter<WriteFile> {
        LogWriter::with_sink(file)
    }
}

impl<S: LogSink> LogWriter<S> {
    /// A writer over any sink, continuing at the sink's current length.
    pub fn with_sink(sink: S) -> LogWriter<S> {
        let offset = sink.len();
        LogWriter {
            sink,
            offset,
            buf: Vec::new(),
            failed: None,
        }
    }

    /// Frame `data` as one logical record and append it. Empty records are allowed. The
    /// bytes may sit in a buffer until [`LogWriter::flush`] or [`LogWriter::sync`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `data` is larger than [`DEFAULT_MAX_RECORD_SIZE`] (a
    /// reader would refuse it); the sink's error if the append fails, and
    /// [`Error::ReadOnly`] for every call after a failure.
    pub fn add_record(&mut self, data: &[u8]) -> Result<()> {
        self.add(data, false)
    }

    /// [`LogWriter::add_record`] then [`LogWriter::flush`], with the framed record handed
    /// to the sink in one call ([`LogSink::append_and_flush`]: a file with nothing buffered
    /// writes it out without copying it into its buffer first).
    ///
    /// # Errors
    /// As [`LogWriter::add_record`] and [`LogWriter::flush`].
    pub fn add_record_and_flush(&mut self, data: &[u8]) -> Result<()> {
        self.add(data, true)
    }

    fn add(&mut self, data: &[u8], flush: bool) -> Result<()> {
        self.check_usable()?;
        if data.len() > DEFAULT_MAX_RECORD_SIZE {
            return Err(record_too_large(data.len()));
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        frame_record(&mut buf, self.offset, data);
        let r = if flush {
            self.sink.append_and_flush(&buf)
        } else {
            self.sink.append(&buf).map_err(|e| ("append", e))
        };
        let n = buf.len() as u64;
        // Keep a modest buffer for the next record; drop one grown by a huge record.
        if buf.capacity() <= 4 * BLOCK_SIZE {
            self.buf = buf;
        }
        if let Err((op, e)) = r {
            // A failed flush follows a successful append: the record was framed.
            if op == "flush" {
                self.offset += n;
            }
            return Err(self.failure(op, e));
        }
        self.offset += n;
        Ok(())
    }

    /// Hand buffered bytes to the operating system (they then survive a process crash).
    ///
    /// # Errors
    /// The sink's error; [`Error::ReadOnly`] after an earlier failure.
    pub fn flush(&mut self) -> Result<()> {
        self.check_usable()?;
        let r = self.sink.flush();
        self.note(r, "flush")
    }

    /// Make every appended record durable (it then survives a machine crash).
    ///
    /// # Errors
    /// The sink's error; [`Error::ReadOnly`] after an earlier failure.
    pub fn sync(&mut self) -> Result<()> {
        self.check_usable()?;
        let r = self.sink.sync();
        self.note(r, "sync")
    }

    /// Bytes framed so far: the file's length once flushed. The next record's first header
    /// goes here, or at the next block boundary when fewer than 7 bytes remain in the block.
    pub fn len(&self) -> u64 {
        self.offset
    }

    /// True when nothing has been written to the file.
    pub fn is_empty(&self) -> bool {
        self.offset == 0
    }

    /// The sink (for example to read a `Vec<u8>` log in tests).
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// Take the sink back.
    pub fn into_sink(self) -> S {
        self.sink
    }

    fn check_usable(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(what) => Err(Error::ReadOnly(format!(
                "the log writer failed earlier ({what})"
            ))),
        }
    }

    fn note(&mut self, r: Result<()>, op: &str) -> Result<()> {
        r.map_err(|e| self.failure(op, e))
    }

    /// Remember that the sink failed in `op`; returns its error.
    #[cold]
    #[inline(never)]
    fn failure(&mut self, op: &str, e: Error) -> Error {
        self.failed = Some(format!("{op}: {e}"));
        e
    }
}

/// The error of a record larger than a reader accepts.
#[cold]
#[inline(never)]
fn record_too_large(len: usize) -> Error {
    Error::InvalidArgument(format!(
        "log record of {len} bytes exceeds the {DEFAULT_MAX_RECORD_SIZE}-byte limit"
    ))
}

/// Append to `buf` the framed bytes of `data` written at file offset `offset`: the
/// fragments, each with its header, and zero padding where a block tail is too short for a
/// header. At least one physical record is produced, so an empty record is representable.
pub(crate) fn frame_record(buf: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let mut block_offset = (offset % BLOCK_SIZE as u64) as usize;
    let mut rest = data;
    let mut begin = true;
    loop {
        let leftover = BLOCK_SIZE - block_offset;
        if leftover < HEADER_SIZE {
            buf.resize(buf.len() + leftover, 0);
            block_offset = 0;
        }
        let avail = BLOCK_SIZE - block_offset - HEADER_SIZE;
        let n = rest.len().min(avail);
        let (frag, tail) = rest.split_at(n);
        let end = tail.is_empty();
        let typ = match (begin, end) {
            (true, true) => RecordType::Full,
            (true, false) => RecordType::First,
            (false, true) => RecordType::Last,
            (false, false) => RecordType::Middle,
        } as u8;
        buf.extend_from_slice(&record_checksum(typ, frag).to_le_bytes());
        // n <= BLOCK_SIZE - HEADER_SIZE < 2^16, so the cast is exact.
        buf.extend_from_slice(&(n as u16).to_le_bytes());
        buf.push(typ);
        buf.extend_from_slice(frag);
        block_offset += HEADER_SIZE + n;
        rest = tail;
        begin = false;
        if end {
            break;
        }
    }
}
