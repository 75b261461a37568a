//! Reading the value log: checked pointer reads, and sequential scans for replay and GC.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::format::{self, HEADER_LEN, Pointer, RECORD_HEADER_LEN};
use super::{Segment, VlogPlacement, parse_segment_name};
use crate::env::{ReadCause, ReadFile};
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind};
use crate::values::{Apply, RecoverContext};

/// Read the value a pointer names, checking the pointer against the live segments, the
/// record's checksum and its key.
pub(crate) fn read_value(vlog: &VlogPlacement, key: &[u8], stored: &[u8]) -> Result<Vec<u8>> {
    let bad = |path: &Path, offset: u64, m: String| Error::corruption(path, offset, m);
    let p = Pointer::decode(stored).map_err(|d| {
        bad(
            &vlog.dir,
            0,
            format!(
                "bad value pointer for key {:?}: {d}",
                String::from_utf8_lossy(key)
            ),
        )
    })?;
    let path = vlog.segment_path(p.segment);
    let Some(seg) = vlog.segment(p.segment) else {
        return Err(bad(
            &path,
            p.offset,
            format!(
                "a value pointer names segment {}, which is not live",
                p.segment
            ),
        ));
    };
    let len = p.length as usize;
    let end = seg.end.load(Ordering::Acquire);
    let fits = p.offset >= HEADER_LEN
        && len >= RECORD_HEADER_LEN + key.len()
        && p.offset
            .checked_add(u64::from(p.length))
            .is_some_and(|e| e <= end);
    if !fits {
        return Err(bad(
            &path,
            p.offset,
            format!(
                "a value pointer ({} bytes at {}) lies outside the segment's {end} valid bytes",
                p.length, p.offset
            ),
        ));
    }
    let file = vlog.handle(&seg)?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, p.offset, ReadCause::Get)?;
    let value_start = {
        let rec = format::decode_record(&buf).map_err(|d| bad(&path, p.offset, d))?;
        if rec.key != key || rec.kind != ValueKind::Value {
            return Err(bad(
                &path,
                p.offset,
                format!(
                    "the record a pointer names holds key {:?} ({:?}), not {:?}",
                    String::from_utf8_lossy(rec.key),
                    rec.kind,
                    String::from_utf8_lossy(key)
                ),
            ));
        }
        RECORD_HEADER_LEN + rec.key.len()
    };
    buf.drain(..value_start);
    Ok(buf)
}

/// One record found by a scan: where it is, and its decoded contents.
pub(crate) struct ScannedRecord {
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) seq: SeqNo,
    pub(crate) kind: ValueKind,
    pub(crate) last_in_batch: bool,
    pub(crate) key: Vec<u8>,
    pub(crate) value: Vec<u8>,
}

/// Reads a segment's records in order through a buffer.
pub(crate) struct SegmentScanner {
    file: ReadFile,
    size: u64,
    pos: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    buf_at: u64,
    cause: ReadCause,
}

/// Bytes read per refill.
const CHUNK: u64 = 1 << 20;

/// Why a scan stopped before the end of the file.
pub(crate) enum ScanEnd {
    /// At the end of the file, on a record boundary.
    Clean,
    /// A record is incomplete or damaged at this offset.
    Bad(u64, String),
}

impl SegmentScanner {
    /// Scan `file` (of `size` bytes) from `from`.
    pub(crate) fn new(file: ReadFile, size: u64, from: u64, cause: ReadCause) -> SegmentScanner {
        SegmentScanner {
            file,
            size,
            pos: from,
            buf: Vec::new(),
            buf_at: from,
            cause,
        }
    }

    /// Make `buf` hold `[pos, pos + n)`; false if the file ends first.
    fn fill(&mut self, n: u64) -> Result<bool> {
        let Some(want_end) = self.pos.checked_add(n) else {
            return Ok(false);
        };
        if want_end > self.size {
            return Ok(false);
        }
        let have_end = self.buf_at + self.buf.len() as u64;
        if self.pos >= self.buf_at && want_end <= have_end {
            return Ok(true);
        }
        let read_end = (self.pos + n.max(CHUNK)).min(self.size);
        let len = (read_end - self.pos) as usize;
        self.buf.clear();
        self.buf.resize(len, 0);
        self.file
            .read_exact_at(&mut self.buf, self.pos, self.cause)?;
        self.buf_at = self.pos;
        Ok(true)
    }

    fn slice(&self, n: u64) -> &[u8] {
        let start = (self.pos - self.buf_at) as usize;
        self.buf.get(start..start + n as usize).unwrap_or_default()
    }

    /// The next record, or why there is none.
    pub(crate) fn next(&mut self) -> Result<std::result::Result<ScannedRecord, ScanEnd>> {
        if self.pos == self.size {
            return Ok(Err(ScanEnd::Clean));
        }
        let at = self.pos;
        if !self.fill(RECORD_HEADER_LEN as u64)? {
            return Ok(Err(ScanEnd::Bad(at, "incomplete record header".into())));
        }
        let h = match format::decode_header(self.slice(RECORD_HEADER_LEN as u64)) {
            Ok(h) => h,
            Err(d) => return Ok(Err(ScanEnd::Bad(at, d))),
        };
        let len = h.record_len() as u64;
        if !self.fill(len)? {
            return Ok(Err(ScanEnd::Bad(at, "incomplete record".into())));
        }
        let rec = match format::decode_record(self.slice(len)) {
            Ok(r) => r,
            Err(d) => return Ok(Err(ScanEnd::Bad(at, d))),
        };
        let out = ScannedRecord {
            offset: at,
            len,
            seq: rec.seq,
            kind: rec.kind,
            last_in_batch: rec.last_in_batch,
            key: rec.key.to_vec(),
            value: rec.value.to_vec(),
        };
        self.pos += len;
        Ok(Ok(out))
    }
}

/// Replay the log from the MANIFEST's head, registering every live segment. Returns the
/// largest sequence number replayed, and the segments whose tail was torn with their valid
/// ends (for the recovery edit: a later open must not read past them).
pub(crate) fn replay(
    vlog: &VlogPlacement,
    ctx: &RecoverContext<'_>,
    apply: &mut Apply<'_>,
) -> Result<(SeqNo, Vec<(u64, u64)>)> {
    let mut torn = Vec::new();
    let fs = vlog.env.fs();
    let mut numbers: Vec<u64> = ctx
        .names
        .iter()
        .filter_map(|n| parse_segment_name(n))
        .filter(|n| !ctx.state.vlog_dropped.contains(n))
        .collect();
    numbers.sort_unstable();
    let mut sizes = Vec::with_capacity(numbers.len());
    for &n in &numbers {
        sizes.push(fs.file_size(&vlog.segment_path(n))?);
    }
    let (start_seg, start_off) = ctx
        .state
        .vlog_head
        .unwrap_or((numbers.first().copied().unwrap_or(0), HEADER_LEN));
    if !numbers.contains(&start_seg) && start_off > HEADER_LEN {
        return Err(Error::corruption(
            vlog.segment_path(start_seg),
            0,
            format!("the MANIFEST's head ({start_seg}, {start_off}) names a missing segment"),
        ));
    }
    // Only the newest segment holding records can have an unsynced tail: a segment is synced
    // in full before the next one gets its first record.
    let newest = numbers
        .iter()
        .zip(&sizes)
        .filter(|&(_, &s)| s > HEADER_LEN)
        .map(|(&n, _)| n)
        .next_back();
    let mut last = 0;
    let mut segments = vlog.segments.write();
    for (&number, &size) in numbers.iter().zip(&sizes) {
        let path = vlog.segment_path(number);
        let is_newest = newest.is_none_or(|n| number >= n);
        let mut garbage = ctx.state.vlog_garbage.get(&number).copied().unwrap_or(0);
        if size < HEADER_LEN {
            // A segment whose creation did not complete (its header is written and synced
            // before anything else): it holds no record, so nothing points into it. It may be
            // older than a segment with records: recovery removed it once, and a crash forgot
            // the removal (crash_ioerr finds such images). A sealed segment truncated below
            // its header by damage looks the same and is not told apart yet.
            let _ = fs.remove_file(&path);
            continue;
        }
        let file = vlog.env.open(&path)?;
        let mut header = [0u8; HEADER_LEN as usize];
        file.read_exact_at(&mut header, 0, ReadCause::Recovery)?;
        format::check_header(&header, number).map_err(|d| Error::corruption(&path, 0, d))?;
        // A tail recovery once found torn is never read again.
        let mut end = ctx
            .state
            .vlog_segment_ends
            .get(&number)
            .map_or(size, |&e| e.min(size));
        if number >= start_seg {
            let from = if number == start_seg {
                start_off
            } else {
                HEADER_LEN
            };
            if from > end {
                return Err(Error::corruption(
                    &path,
                    end,
                    format!("the MANIFEST's head is at {from}, past the segment's end"),
                ));
            }
            let (seq, valid, inline) =
                replay_segment(vlog, &file, number, end, from, is_newest, apply)?;
            last = last.max(seq);
            if valid < end {
                torn.push((number, valid));
            }
            end = valid;
            garbage += inline;
            if inline > 0 {
                // Persisted by the recovery edit (a later open must know it too).
                *vlog.pending_garbage.lock().entry(number).or_default() += inline;
            }
        }
        segments.insert(number, Arc::new(Segment::new(number, end, garbage)));
    }
    Ok((last, torn))
}

/// Replay one segment from `from`; returns the largest sequence number, the end of the
/// last whole batch, and the bytes of records the tree keeps inline (garbage once flushed).
/// Records of the `newest` segment are replayed with their values inline (see below). Damage ends the `newest` segment (a torn tail) and is corruption in
/// any other.
fn replay_segment(
    vlog: &VlogPlacement,
    file: &ReadFile,
    number: u64,
    size: u64,
    from: u64,
    newest: bool,
    apply: &mut Apply<'_>,
) -> Result<(SeqNo, u64, u64)> {
    let path = vlog.segment_path(number);
    let mut scan = SegmentScanner::new(file.clone(), size, from, ReadCause::Recovery);
    let mut batch: Vec<ScannedRecord> = Vec::new();
    let mut last = 0;
    let mut valid_end = from;
    let mut ptr = [0u8; format::MAX_POINTER_LEN];
    let mut inline_bytes = 0;
    loop {
        match scan.next()? {
            Ok(rec) => {
                let done = rec.last_in_batch;
                batch.push(rec);
                if !done {
                    continue;
                }
                for r in batch.drain(..) {
                    // The newest segment's tail may be in the page cache only (left by a
                    // process crash) and there is no handle to sync it through: its values
                    // go to the tables themselves, so that no committed table points at
                    // bytes a later machine crash could lose.
                    if !newest && vlog.separates(r.kind, &r.value) {
                        let p = Pointer {
                            segment: number,
                            offset: r.offset,
                            length: r.len as u32,
                        };
                        apply(&r.key, r.seq, ValueKind::ValuePointer, p.encode(&mut ptr));
                    } else {
                        inline_bytes += r.len;
                        apply(&r.key, r.seq, r.kind, &r.value);
                    }
                    last = last.max(r.seq);
                    valid_end = r.offset + r.len;
                }
            }
            Err(ScanEnd::Clean) if batch.is_empty() => break,
            Err(ScanEnd::Clean) if newest => break,
            Err(ScanEnd::Clean) => {
                return Err(Error::corruption(
                    &path,
                    valid_end,
                    "the segment ends inside a write batch",
                ));
            }
            Err(ScanEnd::Bad(at, _)) if newest && torn_tail(file, at, size)? => break,
            Err(ScanEnd::Bad(at, d)) => return Err(Error::corruption(&path, at, d)),
        }
    }
    Ok((last, valid_end, inline_bytes))
}

/// A file system loses unsynced pages of an append in any order; a lost page reads as zeros.
const LOST_PAGE_SIZE: u64 = 4096;

/// Whether damage at `at` in the newest segment (of `size` bytes) can be a tail a crash
/// tore: no whole record follows it, or one does but a lost page (zeros from the damage or
/// the page start to the page end) lies between. A sync makes the whole file prefix
/// durable, so a valid record after damage without such a hole means the damage is in
/// synced bytes: cutting the log there would silently drop synced writes (as the WAL's
/// reader, `wal::LogReader::tolerate_lost_pages`, decides).
pub(crate) fn torn_tail(file: &ReadFile, at: u64, size: u64) -> Result<bool> {
    let Some(len) = size.checked_sub(at).and_then(|n| usize::try_from(n).ok()) else {
        return Ok(true);
    };
    // Bounded by the file's real size: the newest segment is at most a segment plus a group.
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, at, ReadCause::Recovery)?;
    let found = (1..len).find(|&p| {
        let Some(rest) = buf.get(p..) else {
            return false;
        };
        let Ok(h) = format::decode_header(rest) else {
            return false;
        };
        rest.get(..h.record_len())
            .is_some_and(|r| format::decode_record(r).is_ok())
    });
    let Some(found) = found else {
        return Ok(true);
    };
    let found = at + found as u64;
    let mut page = at / LOST_PAGE_SIZE * LOST_PAGE_SIZE;
    while page + LOST_PAGE_SIZE <= found {
        let lo = (page.max(at) - at) as usize;
        let hi = (page + LOST_PAGE_SIZE - at) as usize;
        if buf.get(lo..hi).is_some_and(|b| b.iter().all(|&x| x == 0)) {
            return Ok(true);
        }
        page += LOST_PAGE_SIZE;
    }
    Ok(false)
}
