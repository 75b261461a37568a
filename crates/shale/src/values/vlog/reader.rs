//! Reading the value log: checked pointer reads, and sequential scans for replay and GC.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::format::{self, HEADER_LEN, Pointer, RECORD_HEADER_LEN};
use super::{Segment, VlogPlacement, parse_segment_name};
use crate::cache::block_cache::{BlockCache, SharedBytes};
use crate::env::{ReadCause, ReadFile};
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind};
use crate::values::{Apply, CacheFill, RecoverContext, ResolveMemo, ValueBytes};

/// Records up to this many bytes are kept in the block cache once read; a larger value is
/// read from its segment each time (it would push many table blocks out for one value).
const CACHED_RECORD_MAX: usize = 64 * 1024;

/// Read the value a pointer names, checking the pointer against the live segments, the
/// record's checksum and its key. Records up to [`CACHED_RECORD_MAX`] bytes are kept in the
/// store's block cache, keyed by segment number and offset: a record below the segment's
/// valid end never changes, and segment numbers are never reused.
///
/// A cached record comes back as a range of the cached buffer ([`ValueBytes::Shared`]): a
/// scan hands it on without copying the value, so only the record's first bytes (its header
/// and key, checked here) are touched. A record read from its segment comes back in the
/// buffer it was read into, with no second copy: shared with the cache when it is kept
/// there (`fill`, [`keep`]), else the buffer itself ([`ValueBytes::Tail`]).
pub(crate) fn read_value(
    vlog: &VlogPlacement,
    key: &[u8],
    stored: &[u8],
    cause: ReadCause,
    fill: CacheFill,
) -> Result<ValueBytes<'static>> {
    let p = decode_pointer(vlog, key, stored)?;
    read_value_of(vlog, p, key, cause, fill)
}

/// What a scan keeps between the values it resolves ([`read_value_in`]): the segments of
/// its last pointers (up to [`MEMO_SEGMENTS`]), so that values of the same few segments
/// look their segment up once (no lock on the segment map, no reference count per value),
/// and the block-cache hits not counted yet (added to the cache's counter every
/// [`HITS_PER_COUNT`] hits and when the scan ends).
///
/// Holding a segment is what looking it up would give: a cursor pins the segments its
/// tables point into for its whole life (the memo's), so a segment live at the first
/// lookup is not removed while the memo holds it; its valid range (`start`, `end`) is
/// still read at every value.
struct ScanMemo {
    segments: [Option<Arc<Segment>>; MEMO_SEGMENTS],
    /// The slot the next segment looked up replaces.
    next: usize,
    cache: Option<Arc<BlockCache>>,
    hits: u64,
}

/// What [`read_record`] uses of a scan's memo: the block-cache hits not counted yet, and
/// the spare buffer of the scan's [`ResolveMemo`] (the buffer of a value the cursor is done
/// with), which a record not kept in the cache is read into instead of a new one.
struct ScanRead<'a> {
    hits: &'a mut u64,
    spare: &'a mut Vec<u8>,
}

/// Segments a scan's memo holds. A scan of keys written in another order than their key
/// order (hashed keys, as YCSB's) meets every segment in turn: a store of a few segments
/// then looks each up once per scan, a larger one about as often as without a memo.
pub(super) const MEMO_SEGMENTS: usize = 8;

/// A scan adds its block-cache hits to the cache's counter once per this many.
pub(super) const HITS_PER_COUNT: u64 = 64;

impl ScanMemo {
    fn count_hits(&mut self) {
        if let Some(c) = &self.cache {
            c.count(std::mem::take(&mut self.hits), 0);
        }
    }

    /// [`read_record`] of `p`, its segment taken from the memo (looked up and kept when
    /// not there), counting a cache hit in the memo. Inlined, as [`read_record`] and
    /// [`decode_pointer`] are into it: a scan runs it once per value, and each call would
    /// move the result (a value of some 60 bytes) once more.
    #[inline(always)]
    fn read(
        &mut self,
        vlog: &VlogPlacement,
        p: Pointer,
        key: &[u8],
        cause: ReadCause,
        fill: CacheFill,
        spare: &mut Vec<u8>,
    ) -> Result<ValueBytes<'static>> {
        let i = match self
            .segments
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.number == p.segment))
        {
            Some(i) => i,
            None => {
                let i = self.next % MEMO_SEGMENTS;
                let seg = live_segment(vlog, &p)?;
                if let Some(slot) = self.segments.get_mut(i) {
                    *slot = Some(seg);
                }
                self.next = i + 1;
                i
            }
        };
        let Some(Some(seg)) = self.segments.get(i) else {
            // Filled just above.
            return read_value_of(vlog, p, key, cause, fill);
        };
        let scan = ScanRead {
            hits: &mut self.hits,
            spare,
        };
        let r = read_record(vlog, seg, p, key, cause, fill, Some(scan));
        if self.hits >= HITS_PER_COUNT {
            self.count_hits();
        }
        r
    }
}

impl Drop for ScanMemo {
    fn drop(&mut self) {
        self.count_hits();
    }
}

/// [`read_value`] for one value of a scan, with the scan's `memo` (see [`ScanMemo`]):
/// the same checks, the same result.
pub(crate) fn read_value_in(
    vlog: &VlogPlacement,
    memo: &mut ResolveMemo,
    key: &[u8],
    stored: &[u8],
    cause: ReadCause,
    fill: CacheFill,
) -> Result<ValueBytes<'static>> {
    let p = decode_pointer(vlog, key, stored)?;
    if let (Some(m), spare) = memo.get_mut_and_spare::<ScanMemo>() {
        return m.read(vlog, p, key, cause, fill, spare);
    }
    let mut m = ScanMemo {
        segments: Default::default(),
        next: 0,
        cache: vlog.cache().cloned(),
        hits: 0,
    };
    let r = m.read(
        vlog,
        p,
        key,
        cause,
        fill,
        memo.get_mut_and_spare::<ScanMemo>().1,
    );
    memo.set(m);
    r
}

/// [`read_value`] of a decoded pointer.
fn read_value_of(
    vlog: &VlogPlacement,
    p: Pointer,
    key: &[u8],
    cause: ReadCause,
    fill: CacheFill,
) -> Result<ValueBytes<'static>> {
    let seg = live_segment(vlog, &p)?;
    read_record(vlog, &seg, p, key, cause, fill, None)
}

/// Decode a stored pointer; a bad one is corruption (of the tree: no segment to name).
#[inline(always)]
fn decode_pointer(vlog: &VlogPlacement, key: &[u8], stored: &[u8]) -> Result<Pointer> {
    // Every pointer a store writes takes the short decoder; the general one describes the
    // rest.
    if let Some(p) = Pointer::decode_short(stored) {
        return Ok(p);
    }
    Pointer::decode(stored).map_err(|d| {
        Error::corruption(
            &vlog.dir,
            0,
            format!(
                "bad value pointer for key {:?}: {d}",
                String::from_utf8_lossy(key)
            ),
        )
    })
}

/// The live segment `p` names; a segment that is not live is a dangling pointer.
fn live_segment(vlog: &VlogPlacement, p: &Pointer) -> Result<Arc<Segment>> {
    vlog.segment(p.segment).ok_or_else(|| {
        Error::corruption(
            vlog.segment_path(p.segment),
            p.offset,
            format!(
                "a value pointer names segment {}, which is not live",
                p.segment
            ),
        )
    })
}

/// Read the record `p` names in `seg` (its segment, live) as [`read_value`] says. `scan`
/// (a scan's memo): count a block-cache hit there instead of in the cache's counter, and
/// read a record that is not kept into the memo's spare buffer.
#[inline(always)]
#[allow(clippy::too_many_arguments, reason = "inlined into its two callers")]
fn read_record(
    vlog: &VlogPlacement,
    seg: &Segment,
    p: Pointer,
    key: &[u8],
    cause: ReadCause,
    fill: CacheFill,
    scan: Option<ScanRead<'_>>,
) -> Result<ValueBytes<'static>> {
    // The path is built only for an error: it is a formatted name, not free per read.
    let bad = |segment: u64, offset: u64, m: String| {
        Error::corruption(vlog.segment_path(segment), offset, m)
    };
    let len = p.length as usize;
    if p.offset < seg.start.load(Ordering::Acquire) {
        return Err(bad(
            p.segment,
            p.offset,
            format!(
                "a value pointer names offset {} of segment {}, in the prefix garbage \
                 collection removed (the segment is read from {} on)",
                p.offset,
                p.segment,
                seg.start.load(Ordering::Relaxed)
            ),
        ));
    }
    let end = seg.end.load(Ordering::Acquire);
    if !p.fits(key.len(), end) {
        return Err(bad(
            p.segment,
            p.offset,
            format!(
                "a value pointer ({} bytes at {}) lies outside the segment's {end} valid bytes",
                p.length, p.offset
            ),
        ));
    }
    let cache = vlog.cache().filter(|_| len <= CACHED_RECORD_MAX);
    let cached = match (cache, &scan) {
        (None, _) => None,
        (Some(c), None) => c.get(p.segment, p.offset),
        (Some(c), Some(_)) => c.get_uncounted(p.segment, p.offset),
    }
    .filter(|b| b.len() == len);
    let spare = match scan {
        Some(s) => {
            if cached.is_some() {
                *s.hits += 1;
            } else if let Some(c) = cache {
                c.count(0, 1);
            }
            Some(s.spare)
        }
        None => None,
    };
    if let Some(buf) = cached {
        // The common case of a scan over cached values: a value of `key`, checked without
        // building the general decoder's result or error.
        if let Some(range) = format::cached_value_range(&buf, key) {
            return Ok(ValueBytes::Shared(buf, range));
        }
        let range = checked_value(&buf, key, true).map_err(|m| bad(p.segment, p.offset, m))?;
        return Ok(ValueBytes::Shared(buf, range));
    }
    let read = Missed {
        vlog,
        seg,
        p,
        key,
        cause,
        fill,
    };
    read_missed(&read, cache, spare)
}

/// A read [`read_record`] hands to [`read_missed`].
struct Missed<'a> {
    vlog: &'a VlogPlacement,
    seg: &'a Segment,
    p: Pointer,
    key: &'a [u8],
    cause: ReadCause,
    fill: CacheFill,
}

/// The part of [`read_record`] for a record the cache does not hold: read it from its
/// segment, check it, keep it as `fill` says. Not inlined: a scan over cached values
/// runs [`read_record`] for every value, and this part (a copy and a checksum of the
/// record) is the rare one there.
#[inline(never)]
fn read_missed(
    read: &Missed<'_>,
    cache: Option<&Arc<BlockCache>>,
    spare: Option<&mut Vec<u8>>,
) -> Result<ValueBytes<'static>> {
    let &Missed {
        vlog,
        seg,
        p,
        key,
        cause,
        fill,
    } = read;
    let bad = |m: String| Error::corruption(vlog.segment_path(p.segment), p.offset, m);
    let len = p.length as usize;
    let file = vlog.handle_through(seg, p.offset + len as u64)?;
    // Not `read_at`: the segment may have grown since this handle was opened, and
    // `read_at` checks the length the handle saw (the pointer was checked above, so
    // `len` is bounded by the segment's valid bytes). Read into a fresh buffer's
    // spare capacity (a scan's spare buffer, or a fresh one): no zero-fill of the record
    // first.
    let mut buf = spare.map(std::mem::take).unwrap_or_default();
    file.read_grown_into(p.offset, len, &mut buf, cause)?;
    file.count_block(cause, crate::env::BlockKind::Value);
    // A value of `key` with its checksum holding, checked at fixed offsets; anything else
    // is described by the general decoder.
    let range = match format::read_value_range(&buf, key) {
        Some(range) => range,
        None => checked_value(&buf, key, false).map_err(bad)?,
    };
    // Kept once its checksum and key held, as `fill` says. Either way the value is handed
    // out as a range of the buffer the record was read into, with no second copy: shared
    // with the cache (`Bytes::from` takes the `Vec` as it is), or the buffer itself, which
    // a scan's cursor gives back to its memo for the next record.
    let mapped = file.is_mapped();
    match cache.filter(|c| wants(c, p, fill, mapped)) {
        Some(c) => {
            let buf = SharedBytes::from(buf);
            keep(c, p, &buf, fill, mapped);
            Ok(ValueBytes::Shared(buf, range))
        }
        None => Ok(ValueBytes::Tail(buf, range.start)),
    }
}

/// Keep `record` (of `p`, just read and checked) in the block cache as `fill` says. A
/// scan's record copied out of a mapped segment is kept only where the cache has room
/// without evicting: reading it again costs a copy and a checksum (the page cache holds
/// the segment), less than an insert and the eviction it causes, and a scan over more
/// values than the cache holds would otherwise replace the whole cache with records it
/// may never read again (`docs/designs/wisckey.md`, "A scan's cache misses"). A record
/// read with `pread` (`mmap_reads` off) costs a system call to read again, and is kept as
/// a point lookup keeps it.
fn keep(c: &BlockCache, p: Pointer, record: &SharedBytes, fill: CacheFill, mapped: bool) {
    match fill {
        CacheFill::Skip => {}
        CacheFill::Scan if mapped => {
            c.insert_if_room(p.segment, p.offset, record);
        }
        CacheFill::Keep | CacheFill::Scan => c.insert(p.segment, p.offset, record.clone()),
    }
}

/// Whether [`keep`] would keep the record of `p` (of `p.length` bytes), asked before the
/// record is shared: a record nothing keeps stays a buffer of its own.
fn wants(c: &BlockCache, p: Pointer, fill: CacheFill, mapped: bool) -> bool {
    match fill {
        CacheFill::Skip => false,
        CacheFill::Scan if mapped => c.has_room(p.segment, p.offset, p.length as usize),
        CacheFill::Keep | CacheFill::Scan => true,
    }
}

/// The range of the value in `buf`, a whole record (its checksum checked unless
/// `checked`, i.e. it held when the record was read), if it is a value of `key`; else what
/// is wrong with it.
fn checked_value(
    buf: &[u8],
    key: &[u8],
    checked: bool,
) -> std::result::Result<std::ops::Range<usize>, String> {
    let rec = if checked {
        format::decode_checked_record(buf)
    } else {
        format::decode_record(buf)
    }?;
    if rec.key != key || rec.kind != ValueKind::Value {
        return Err(format!(
            "the record a pointer names holds key {:?} ({:?}), not {:?}",
            String::from_utf8_lossy(rec.key),
            rec.kind,
            String::from_utf8_lossy(key)
        ));
    }
    // The value is the record's tail (`format::decode_record`).
    Ok(buf.len() - rec.value.len()..buf.len())
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
///
/// A segment the MANIFEST records as sealed (synced in full through its end) must hold
/// that end: anything short of it is corruption. Any other segment may have lost unsynced
/// pages in a machine crash, older ones included (they are synced in the background after
/// rotation): the first damage there that looks like a lost tail ends the log, and records
/// in later segments are dropped with it (they were written after the damage, and nothing
/// synced on purpose can follow an unsynced segment).
///
/// `read_only` (a read-only open): remove nothing, leave the garbage counts alone, and keep
/// each live segment's handle open (when there are at most `max_open_files`).
pub(crate) fn replay(
    vlog: &VlogPlacement,
    ctx: &RecoverContext<'_>,
    apply: &mut Apply<'_>,
    read_only: bool,
) -> Result<(SeqNo, Vec<(u64, u64)>)> {
    let mut torn = Vec::new();
    let fs = vlog.env.fs();
    let state = super::state::VlogState::of(ctx.state.state.as_ref());
    let mut numbers: Vec<u64> = ctx
        .names
        .iter()
        .filter_map(|n| parse_segment_name(n))
        .filter(|n| !state.dropped.contains(n))
        .collect();
    numbers.sort_unstable();
    let sealed = &state.sealed;
    check_sealed_present(state, &numbers, ctx.dir)?;
    let mut pin = read_only && numbers.len() <= vlog.pin_limit;
    // Bytes dropped as torn tails: what held records (zeros reserved ahead of the writer
    // hold none).
    let mut dropped = 0;
    let mut sizes = Vec::with_capacity(numbers.len());
    for &n in &numbers {
        sizes.push(fs.file_size(&vlog.segment_path(n))?);
    }
    let (start_seg, start_off) = state
        .head
        .unwrap_or((numbers.first().copied().unwrap_or(0), HEADER_LEN));
    if !numbers.contains(&start_seg) && start_off > HEADER_LEN {
        return Err(Error::corruption(
            vlog.segment_path(start_seg),
            0,
            format!("the MANIFEST's head ({start_seg}, {start_off}) names a missing segment"),
        ));
    }
    let mut last = 0;
    let mut seqs = SeqChain {
        next: state.head_seq,
        after_unsynced: !sealed.contains_key(&start_seg),
    };
    // Where the log ended in damage, once it has.
    let mut ended: Option<(u64, u64)> = None;
    let mut segments = vlog.segments.write();
    for (&number, &size) in numbers.iter().zip(&sizes) {
        let path = vlog.segment_path(number);
        let recorded = sealed.get(&number).copied();
        let mut garbage = state.garbage.get(&number).copied().unwrap_or(0);
        if let Some(e) = recorded
            && size < e
        {
            return Err(Error::corruption(
                &path,
                size,
                format!("the segment was sealed with {e} bytes (MANIFEST) but holds {size}"),
            ));
        }
        // A segment the MANIFEST knows had its header synced: the head's, or one with a
        // record recovery kept (a recorded end past the header; a record is appended only
        // after the header's sync). A recorded end at the header proves nothing: recovery
        // records it for a half-created segment whose unsynced header a process crash left
        // in the page cache, and a later machine crash can still lose it. A sealed segment
        // is caught above when short.
        let header_synced = recorded.is_some()
            || state.head.is_some_and(|(s, _)| s == number)
            || state
                .segment_ends
                .get(&number)
                .is_some_and(|&e| e > HEADER_LEN);
        if size < HEADER_LEN {
            if header_synced {
                return Err(Error::corruption(
                    &path,
                    size,
                    format!("the MANIFEST knows segment {number}, but it is {size} bytes long"),
                ));
            }
            // A segment whose creation did not complete (its header is written and synced
            // before anything else): it holds no record, so nothing points into it. It may be
            // older than a segment with records: recovery removed it once, and a crash forgot
            // the removal (crash_ioerr finds such images).
            if !read_only {
                let _ = fs.remove_file(&path);
            }
            continue;
        }
        let file = match vlog.env.open(&path) {
            // More segments than the process may hold open: a read-only view stops keeping
            // them (each is opened again, through the capped cache, when read).
            Err(e) if pin && super::out_of_descriptors(&e) => {
                pin = false;
                for s in segments.values() {
                    s.handle.write().take();
                }
                vlog.env.open(&path)?
            }
            r => r?,
        };
        let mut header = [0u8; HEADER_LEN as usize];
        file.read_exact_at(&mut header, 0, ReadCause::Recovery)?;
        if let Err(d) = format::check_header(&header, number, ctx.store_id) {
            if !header_synced && all_zeros(&file, size, ReadCause::Recovery)? {
                // The same half-created segment, its file extended by the space reserved
                // ahead of the writer (`Env::create_log`) and its unsynced header lost:
                // nothing but zeros, so no record.
                if !read_only {
                    let _ = fs.remove_file(&path);
                }
                continue;
            }
            return Err(Error::corruption(&path, 0, d));
        }
        // A tail recovery once found torn is never read again.
        let mut end = match recorded {
            Some(e) => e,
            None => state
                .segment_ends
                .get(&number)
                .map_or(size, |&e| e.min(size)),
        };
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
            if let Some((at_seg, at)) = ended {
                if recorded.is_some() {
                    // Sealed means synced after every older segment: the damage is not a
                    // lost tail.
                    return Err(Error::corruption(
                        vlog.segment_path(at_seg),
                        at,
                        format!("damaged record in a segment older than sealed segment {number}"),
                    ));
                }
                if end > from {
                    torn.push((number, from));
                    if !crate::values::zeros_between(&file, from, end, ReadCause::Recovery)? {
                        dropped += end - from;
                    }
                }
                end = from;
            } else {
                // The records of a segment not known synced may exist only in the page cache
                // (left by a process crash) and there is no handle to sync them through:
                // their values go to the tables themselves, so that no committed table points
                // at bytes a later machine crash could lose.
                let unsynced = recorded.is_none();
                let (seq, valid, inline) =
                    replay_segment(vlog, &file, number, from..end, unsynced, &mut seqs, apply)?;
                if unsynced {
                    // Even with no batch left in it: it may have lost every record, and a
                    // gap at the next segment's start is then its lost tail.
                    seqs.after_unsynced = true;
                }
                last = last.max(seq);
                if valid < end {
                    torn.push((number, valid));
                    ended = Some((number, valid));
                    if !crate::values::zeros_between(&file, valid, end, ReadCause::Recovery)? {
                        dropped += end - valid;
                    }
                }
                end = valid;
                garbage += inline;
                if inline > 0 && !read_only {
                    // Persisted by the recovery edit (a later open must know it too).
                    *vlog.pending_garbage.lock().entry(number).or_default() += inline;
                }
            }
        }
        let handle = pin.then(|| file.clone());
        let seg = Segment::with_handle(number, end, garbage, handle);
        // Never appended to again in this process: a read-write open starts a new segment,
        // and a read-only one takes no writes. A read-only open shares the directory with
        // a writer in another process, whose active segment may still grow: there only
        // segments the MANIFEST records sealed count as sealed.
        if !read_only || recorded.is_some() {
            seg.sealed.store(true, std::sync::atomic::Ordering::Release);
        }
        // A prefix garbage collection committed is never read: no reader of this process
        // can hold a pointer into it (it may have been punched out already, or will be).
        if let Some(&c) = state.collected.get(&number) {
            seg.start.store(c.max(HEADER_LEN), Ordering::Relaxed);
        }
        segments.insert(number, Arc::new(seg));
    }
    vlog.dropped.fetch_add(dropped, Ordering::Relaxed);
    Ok((last, torn))
}

/// What replay expects of the next batch: write groups take consecutive sequence numbers
/// and the log from the head on was written by one process (recovery moves the head to a new
/// segment before it accepts writes), so the log has no gap in them. A gap at the start of a
/// segment after one that was not synced in full means that segment lost its tail whole:
/// its file ends on a record boundary short of where the writer left it, which no check
/// inside the segment can see. The MANIFEST gives the first sequence number at the head.
#[derive(Default)]
struct SeqChain {
    /// The sequence number of the next batch, once a batch was replayed.
    next: Option<SeqNo>,
    /// Whether the last batch replayed lies in a segment not recorded sealed.
    after_unsynced: bool,
}

/// Replay the bytes `range` of one segment; returns the largest sequence number, the end of the
/// last whole batch, and the bytes of records the tree keeps inline (garbage once flushed).
/// Records of an `unsynced` segment (not recorded sealed) are replayed with their values
/// inline; damage there that looks like a lost tail ends it, and is corruption in a sealed
/// one.
fn replay_segment(
    vlog: &VlogPlacement,
    file: &ReadFile,
    number: u64,
    range: std::ops::Range<u64>,
    unsynced: bool,
    seqs: &mut SeqChain,
    apply: &mut Apply<'_>,
) -> Result<(SeqNo, u64, u64)> {
    let path = vlog.segment_path(number);
    let (from, size) = (range.start, range.end);
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
                let (seq, at) = batch.first().map_or((0, from), |r| (r.seq, r.offset));
                if let Some(e) = seqs.next
                    && seq != e
                {
                    if at == from && from == HEADER_LEN && seqs.after_unsynced {
                        // The segment before this one lost its unsynced tail whole (its file
                        // ends on a record boundary, short of where this segment began).
                        batch.clear();
                        break;
                    }
                    return Err(Error::corruption(
                        &path,
                        at,
                        format!("the log continues at sequence number {seq}, expected {e}"),
                    ));
                }
                for r in batch.drain(..) {
                    if !unsynced && vlog.separates(r.kind, &r.value) {
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
                    seqs.next = Some(r.seq + 1);
                }
                seqs.after_unsynced = unsynced;
            }
            Err(ScanEnd::Clean) if batch.is_empty() => break,
            Err(ScanEnd::Clean) if unsynced => break,
            Err(ScanEnd::Clean) => {
                return Err(Error::corruption(
                    &path,
                    valid_end,
                    "the segment ends inside a write batch",
                ));
            }
            Err(ScanEnd::Bad(at, _)) if unsynced && torn_tail(file, at, size)? => break,
            Err(ScanEnd::Bad(at, d)) => return Err(Error::corruption(&path, at, d)),
        }
    }
    Ok((last, valid_end, inline_bytes))
}

/// Whether the first `size` bytes of `file` are all zeros (read in chunks).
pub(crate) fn all_zeros(file: &ReadFile, size: u64, cause: ReadCause) -> Result<bool> {
    crate::values::zeros_between(file, 0, size, cause)
}

/// A file system loses unsynced pages of an append in any order; a lost page reads as zeros.
const LOST_PAGE_SIZE: u64 = 4096;

/// Whether damage at `at` in a segment not known synced (of `size` bytes) can be a tail a crash
/// tore: no whole record follows it, or one does but a lost page (zeros from the damage or
/// the page start to the page end) lies between. Zeros to the end of the file (space the
/// file system reserved ahead of the writer, see `Env::create_log`) are a torn tail. A sync
/// makes the whole file prefix durable, so a valid record after damage without such a hole
/// means the damage is in synced bytes: cutting the log there would silently drop synced
/// writes (as the WAL's reader, `wal::LogReader::tolerate_lost_pages`, decides).
pub(crate) fn torn_tail(file: &ReadFile, at: u64, size: u64) -> Result<bool> {
    let Some(len) = size.checked_sub(at).and_then(|n| usize::try_from(n).ok()) else {
        return Ok(true);
    };
    // Bounded by the file's real size: a segment is at most its size limit plus a group,
    // plus the zeros its file system reserved ahead of the writer (`Env::create_log`).
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, at, ReadCause::Recovery)?;
    // A record of zeros fails its checksum, so no whole record starts in the zeros the tail
    // ends with (a log's reserved space, or pages never written back): the search stops at
    // the last nonzero byte, and a tail of nothing but zeros is torn outright.
    let Some(last_nonzero) = buf.iter().rposition(|&b| b != 0) else {
        return Ok(true);
    };
    let found = (1..=last_nonzero).find(|&p| {
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

/// Only garbage collection removes a sealed segment, and its drop erases the record: a
/// sealed segment missing from `numbers` (the segments in `dir`) is damage.
pub(super) fn check_sealed_present(
    state: &super::state::VlogState,
    numbers: &[u64],
    dir: &std::path::Path,
) -> Result<()> {
    match state.sealed.iter().find(|(n, _)| !numbers.contains(n)) {
        Some((&n, &e)) => Err(Error::corruption(
            dir.join(super::format::segment_file_name(n)),
            0,
            format!(
                "the MANIFEST records segment {n} as sealed with {e} bytes, but its file is missing"
            ),
        )),
        None => Ok(()),
    }
}
