//! The value log (WiscKey): values separated from keys, and the log that is also the WAL.
//!
//! Every write group is appended as records (key, value, sequence number, kind, checksum) to
//! the newest segment `NNNNNN.vlog`; the memory component receives a pointer
//! `(segment, offset, length)` for each value of at least `min_separated_value_size` bytes
//! and the value itself for smaller ones. Segments rotate by size. The MANIFEST records the
//! *head*: the position before which every write is in tables; recovery replays from it.
//! Format: `docs/format/vlog.md`; design and deviations: `docs/designs/wisckey.md`.
//!
//! Thread-safety: the segment writer sits behind a mutex taken by the write leader and by
//! `flushed`/`sync`; readers find a segment in a read-locked map and read it with
//! positional reads through a cached handle, without touching the writer.
//!
//! Durability rules (each one argued where it is enforced):
//! - a segment left by rotation is synced in the background (`seal.rs`), never by the
//!   writer; a synced write, a flush and `sync` first sync every older segment (prefix
//!   property across rotation: nothing made durable on purpose follows a hole);
//! - a flush that moves the head syncs the log up to the new head first (the tables it
//!   commits point into that range), and the MANIFEST records segments synced in full;
//! - recovery holds a recorded segment to its end and treats the first damage in any other
//!   segment as the end of the log (`reader::replay`);
//! - a batch's records are contiguous in one segment and the last carries a flag: replay
//!   applies a batch whole or not at all.

#[cfg(test)]
mod db_tests;
pub mod format;
pub mod gc;
#[cfg(all(test, target_os = "linux"))]
mod map_tests;
mod pace;
pub(crate) mod reader;
mod salvage;
mod seal;
pub mod state;
pub(crate) mod verify;
mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

pub use format::Pointer;

use super::{
    Apply, LogPosition, PersistedState, PlacementStats, RecoverContext, ValueBytes, ValueStore,
};
use crate::env::{Access, Env, MapUse, ReadFile};
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind};
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::wal::WriteBatch;
use seal::Sealer;
use state::{VlogRecord, VlogState};
use writer::SegmentWriter;

/// One segment as readers see it.
#[derive(Debug)]
pub(crate) struct Segment {
    pub(crate) number: u64,
    /// Bytes of whole records (header included): pointers must end at or before it.
    pub(crate) end: AtomicU64,
    /// The first offset a read may use: the header's end, or where garbage collection's
    /// committed prefix ends once no reader can need that prefix (`docs/format/vlog.md` §4).
    pub(crate) start: AtomicU64,
    /// How far this process punched the collected prefix out of the file (0: not yet).
    punched: AtomicU64,
    /// Garbage bytes known (persisted ones plus those found since).
    pub(crate) garbage: AtomicU64,
    /// Offsets of records a flush superseded since the store opened (see `gc::Superseded`).
    pub(crate) superseded: Mutex<gc::Superseded>,
    /// Whether the segment is sealed for this process: no byte before `end` is written
    /// again and `end` no longer moves (a segment the writer rotated out, or one recovery
    /// replayed: the open starts a new one).
    pub(crate) sealed: AtomicBool,
    /// Whether this process's writer appends to it (it was started here). With
    /// `Options::mmap_reads` its handle maps the whole file as it stands, reserved space
    /// included, and maps it again when a read needs bytes appended since
    /// ([`VlogPlacement::handle_through`]); a segment another process may be appending to
    /// (a read-only open's newest) is read with `pread` until sealed.
    written_here: bool,
    /// The cached read handle, opened on first use.
    handle: RwLock<Option<ReadFile>>,
}

impl Segment {
    /// A segment this process's writer starts (empty but for its header).
    fn active(number: u64) -> Segment {
        Segment {
            written_here: true,
            ..Segment::with_handle(number, format::HEADER_LEN, 0, None)
        }
    }

    /// A segment whose read handle is already open (`None`: opened on first use).
    fn with_handle(number: u64, end: u64, garbage: u64, handle: Option<ReadFile>) -> Segment {
        Segment {
            number,
            end: AtomicU64::new(end),
            start: AtomicU64::new(format::HEADER_LEN),
            punched: AtomicU64::new(0),
            garbage: AtomicU64::new(garbage),
            superseded: Mutex::new(gc::Superseded::default()),
            sealed: AtomicBool::new(false),
            written_here: false,
            handle: RwLock::new(handle),
        }
    }
}

/// Garbage-collection counters.
#[derive(Debug, Default)]
pub(crate) struct GcCounters {
    pub(crate) runs: AtomicU64,
    pub(crate) bytes_read: AtomicU64,
    pub(crate) bytes_relocated: AtomicU64,
    pub(crate) records_relocated: AtomicU64,
    pub(crate) records_skipped: AtomicU64,
    pub(crate) segments_deleted: AtomicU64,
    /// Steps committed inside a segment (its prefix then punched out).
    pub(crate) steps: AtomicU64,
}

/// Whether `e` is the operating system running out of file descriptors (`EMFILE`, or
/// `ENFILE` for the whole system; 24 and 23 on Linux and the BSDs).
fn out_of_descriptors(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if matches!(source.raw_os_error(), Some(23 | 24)))
}

/// See the module documentation.
pub struct VlogPlacement {
    env: Env,
    dir: PathBuf,
    file_numbers: Arc<AtomicU64>,
    min_separated: usize,
    segment_size: u64,
    writer: Mutex<Option<SegmentWriter>>,
    /// The store's id, set by a read-write recovery: the sweep deletes only segments whose
    /// header carries it.
    store_id: std::sync::OnceLock<u64>,
    /// Segments rotated out and not yet synced.
    sealer: Arc<Sealer>,
    /// Live segments by number (sealed and active). A segment leaves this map when garbage
    /// collection has dropped it and no reader can still hold a pointer into it.
    segments: RwLock<BTreeMap<u64, Arc<Segment>>>,
    /// Garbage found since the last MANIFEST edit, per segment (persisted by `note_edit`).
    pub(crate) pending_garbage: Mutex<BTreeMap<u64, u64>>,
    /// Segments garbage collection could not read to the end (left alone).
    pub(crate) unreadable: Mutex<std::collections::BTreeMap<u64, u64>>,
    min_gc_ratio: f64,
    /// Bytes of a segment garbage collection goes through before it commits its progress
    /// (and the prefix can be punched out): a quarter of a segment, at least
    /// [`gc::MIN_STEP`].
    gc_step: u64,
    /// Memtable entries keep values of at most this many bytes after the pointer
    /// ([`crate::Options::vlog_memtable_value_max`]); relocations never do.
    carry_max: usize,
    /// Log bytes after which a memtable that is not full is frozen anyway (separated values
    /// make memtables fill slowly, and the head only moves at a flush).
    freeze_after: u64,
    /// Log bytes appended since the last freeze.
    since_freeze: AtomicU64,
    /// The sequence number the next appended group takes (0 until the first append).
    next_seq: AtomicU64,
    /// Freeze positions not yet flushed, with the sequence number of the write after each.
    frozen_at: Mutex<Vec<(LogPosition, SeqNo)>>,
    gc_enabled: bool,
    /// Bytes per second garbage collection reads while writes go on (0: no limit).
    gc_bytes_per_sec: u64,
    /// How much user writes are slowed while collection is behind.
    pace: pace::Pace,
    pub(crate) gc: GcCounters,
    /// Segments whose read handle is cached, oldest opened first: at most
    /// `max_open_handles` (the table cache's budget, `Options::max_open_files`); the oldest
    /// is closed past it (a reader holding it keeps it until done).
    open_handles: Mutex<std::collections::VecDeque<u64>>,
    max_open_handles: usize,
    /// Bytes of log (not zeros) that recovery dropped as torn tails.
    dropped: AtomicU64,
    /// A read-only recovery keeps every live segment open when there are at most this many
    /// (`Options::max_open_files`), so that a writer in another process deleting one
    /// cannot take it from under the handle.
    pin_limit: usize,
    /// The store's block cache (set by recovery), where value reads keep the records they
    /// read, keyed by segment number and offset (RocksDB's blob cache).
    cache: std::sync::OnceLock<Arc<crate::cache::block_cache::BlockCache>>,
    /// What repair's first step found, for its second (`salvage.rs`).
    salvage_scan: Mutex<Option<salvage::Scan>>,
    /// Read sealed segments through a memory map of their valid bytes
    /// (`Options::mmap_reads`).
    mmap_reads: bool,
    /// Copy small appends into a map of the segment (`Options::mmap_log_writes`).
    mmap_log_writes: bool,
}

impl std::fmt::Debug for VlogPlacement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VlogPlacement")
            .field("dir", &self.dir)
            .finish()
    }
}

impl VlogPlacement {
    /// Keep value records in the store's block cache, if it has one.
    fn use_cache(&self, ctx: &RecoverContext<'_>) {
        if let Some(c) = ctx.block_cache {
            let _ = self.cache.set(Arc::clone(c));
        }
    }

    /// The block cache value reads use.
    pub(crate) fn cache(&self) -> Option<&Arc<crate::cache::block_cache::BlockCache>> {
        self.cache.get()
    }

    /// A placement for the store in `dir`; [`ValueStore::recover`] opens its log.
    pub fn new(options: &Options, dir: &Path, file_numbers: Arc<AtomicU64>) -> VlogPlacement {
        VlogPlacement {
            env: options.env.clone(),
            dir: dir.to_path_buf(),
            file_numbers,
            min_separated: options.min_separated_value_size,
            segment_size: options.vlog_segment_size,
            writer: Mutex::new(None),
            store_id: std::sync::OnceLock::new(),
            sealer: Arc::default(),
            segments: RwLock::new(BTreeMap::new()),
            pending_garbage: Mutex::new(BTreeMap::new()),
            unreadable: Mutex::new(std::collections::BTreeMap::new()),
            min_gc_ratio: options.vlog_gc_ratio,
            gc_step: (options.vlog_segment_size / 4).max(gc::MIN_STEP),
            carry_max: options.vlog_memtable_value_max,
            freeze_after: 2 * options
                .vlog_segment_size
                .max(options.write_buffer_size as u64),
            since_freeze: AtomicU64::new(0),
            next_seq: AtomicU64::new(0),
            frozen_at: Mutex::new(Vec::new()),
            gc_enabled: options.vlog_gc,
            gc_bytes_per_sec: options.vlog_gc_bytes_per_sec,
            pace: pace::Pace::default(),
            gc: GcCounters::default(),
            open_handles: Mutex::default(),
            max_open_handles: options.max_open_files.max(1),
            dropped: AtomicU64::new(0),
            cache: std::sync::OnceLock::new(),
            pin_limit: options.max_open_files,
            salvage_scan: Mutex::new(None),
            mmap_reads: options.mmap_reads,
            mmap_log_writes: options.mmap_log_writes,
        }
    }

    fn segment_path(&self, number: u64) -> PathBuf {
        self.dir.join(format::segment_file_name(number))
    }

    /// Whether a value of this kind and size goes to the log (the tree gets a pointer).
    fn separates(&self, kind: ValueKind, value: &[u8]) -> bool {
        kind == ValueKind::Value && value.len() >= self.min_separated
    }

    /// The live segment `number`.
    pub(crate) fn segment(&self, number: u64) -> Option<Arc<Segment>> {
        self.segments.read().get(&number).cloned()
    }

    /// Sealed segments (every one but the active), oldest first.
    pub(crate) fn sealed_segments(&self) -> Vec<Arc<Segment>> {
        let active = self.writer.lock().as_ref().map(SegmentWriter::number);
        self.segments
            .read()
            .values()
            .filter(|s| Some(s.number) != active)
            .cloned()
            .collect()
    }

    /// Count `bytes` of garbage found in `segment` (it may have been dropped already).
    pub(crate) fn add_garbage(&self, segment: u64, bytes: u64) {
        if let Some(s) = self.segment(segment) {
            s.garbage.fetch_add(bytes, Ordering::Relaxed);
            *self.pending_garbage.lock().entry(segment).or_default() += bytes;
        }
    }

    /// The cached read handle of `seg`, opened on first use. Cached handles are capped
    /// like the table cache's (see `open_handles`), and when the process runs out of file
    /// descriptors every cached one is closed and the open tried once more, so a scan over
    /// more segments than the descriptor limit still reads (issue 17, case 10).
    ///
    /// The handle serves pointer reads, which land anywhere in the segment: it is opened
    /// with [`Access::Random`], so a read that misses the page cache reads the record's
    /// pages and not a read-ahead window around them (issue 19).
    ///
    /// With `Options::mmap_reads`, a sealed segment's handle is a read-only memory map of
    /// its valid bytes (`Env::open_mapped`, within the process's map budget; `pread` past
    /// it): a value read from the page cache then costs a copy and no system call, as a
    /// table block read does. The segment this process's writer appends to is mapped
    /// whole, as the file stands (records and the space reserved after them), and mapped
    /// again when a read needs more ([`VlogPlacement::handle_through`]); its cached handle
    /// is closed when it is sealed, so that the next read maps its final extent (a handle
    /// opened just before the seal may be cached after it: a map of the file before the
    /// seal cut its reserved tail, harmless, since reads stay below the valid end). Other
    /// unsealed segments (a read-only open's newest) keep `pread`.
    pub(crate) fn handle(&self, seg: &Segment) -> Result<ReadFile> {
        if let Some(f) = seg.handle.read().as_ref() {
            return Ok(f.clone());
        }
        let map_len = self.map_len(seg);
        // Opened without the segment's lock held: closing handles takes other segments'.
        let f = self.open_segment(seg.number, map_len)?;
        f.advise(Access::Random);
        {
            let mut h = seg.handle.write();
            if let Some(f) = h.as_ref() {
                return Ok(f.clone());
            }
            *h = Some(f.clone());
        }
        let mut open = self.open_handles.lock();
        open.push_back(seg.number);
        let keep = self.max_open_handles;
        drop(open);
        self.close_handles(keep);
        Ok(f)
    }

    /// How much of `seg` a new handle maps (`None`: read with `pread`). A sealed segment's
    /// valid bytes (sealed before `end` is read: a sealed segment's end is final, stored
    /// before the flag is set, `seal_segment`); the whole file of the segment this process
    /// appends to. Reads copy only below `end`, which nothing writes again: the writer
    /// appends after it, and cutting the reservation at the seal (`finish`) removes pages
    /// past it only (`UNSAFE.md`).
    fn map_len(&self, seg: &Segment) -> Option<u64> {
        if !self.mmap_reads {
            None
        } else if seg.sealed.load(Ordering::Acquire) {
            Some(seg.end.load(Ordering::Acquire))
        } else if seg.written_here {
            Some(u64::MAX)
        } else {
            None
        }
    }

    /// [`VlogPlacement::handle`] for a read that ends at byte `end` of `seg`: a mapped
    /// handle of the segment being appended to that ends before `end` (records were
    /// appended since it was mapped) is replaced by a new map of the file as it stands.
    pub(crate) fn handle_through(&self, seg: &Segment, end: u64) -> Result<ReadFile> {
        let f = self.handle(seg)?;
        if !f.is_mapped() || f.len() >= end {
            return Ok(f);
        }
        let fresh = self.open_segment(seg.number, self.map_len(seg))?;
        fresh.advise(Access::Random);
        let mut h = seg.handle.write();
        match h.as_ref() {
            // Another reader mapped it again first.
            Some(cur) if !cur.is_mapped() || cur.len() >= end => return Ok(cur.clone()),
            Some(_) => *h = Some(fresh.clone()),
            // Sealed (or closed) meanwhile: the next read opens the handle to cache.
            None => {}
        }
        Ok(fresh)
    }

    /// A new read handle of segment `number`, not cached: a memory map of its first
    /// `mapped` bytes where given (a sealed segment's valid bytes, see
    /// [`VlogPlacement::handle`]), else for `pread`. When the process is out of file
    /// descriptors the cached ones are closed and the open is tried once more.
    fn open_segment(&self, number: u64, mapped: Option<u64>) -> Result<ReadFile> {
        let path = self.segment_path(number);
        let open = || match mapped {
            Some(len) => self.env.open_mapped(&path, len, MapUse::Punchable),
            None => self.env.open(&path),
        };
        match open() {
            Err(e) if out_of_descriptors(&e) => {
                self.close_handles(0);
                open()
            }
            r => r,
        }
    }

    /// Mark `seg` sealed (its `end` final, nothing before it written again) and close its
    /// cached `pread` handle, so that with `Options::mmap_reads` the next read maps it. A
    /// reader holding the old handle keeps it until done.
    fn seal_segment(&self, seg: &Segment) {
        seg.sealed.store(true, Ordering::Release);
        if self.mmap_reads && seg.handle.write().take().is_some() {
            self.open_handles.lock().retain(|&n| n != seg.number);
        }
    }

    /// A handle of `seg` for one pass from front to back (garbage collection's scan): its
    /// own, opened with [`Access::Sequential`] (read-ahead on, and larger), not the cached
    /// handle whose pointer reads want none; dropped when the pass ends.
    pub(crate) fn scan_handle(&self, seg: &Segment) -> Result<ReadFile> {
        let f = self.open_segment(seg.number, None)?;
        f.advise(Access::Sequential);
        Ok(f)
    }

    /// Close the oldest cached segment handles until at most `keep` stay cached.
    fn close_handles(&self, keep: usize) {
        let mut open = self.open_handles.lock();
        while open.len() > keep {
            let Some(n) = open.pop_front() else { break };
            // A segment dropped meanwhile has no handle to close.
            if let Some(s) = self.segment(n) {
                s.handle.write().take();
            }
        }
    }

    /// Append a group; `relocation` counts its bytes as garbage-collection writes.
    /// Append `batch`'s records; returns the entries the tree stores for them: a pointer
    /// for each separated value, the entry itself otherwise.
    fn append_as(&self, batch: &WriteBatch, sync: bool, relocation: bool) -> Result<WriteBatch> {
        if batch.iter().any(|e| e.kind == ValueKind::ValuePointer) {
            return Err(Error::InvalidArgument(
                "a write batch for the value log holds a value pointer".into(),
            ));
        }
        let (segment, base) = {
            let mut guard = self.writer.lock();
            let w = guard.as_mut().ok_or(Error::Closed)?;
            // A sealed segment whose sync failed may have lost pages: later writes must not
            // be acknowledged after a hole.
            self.sealer.check()?;
            if w.len() >= self.segment_size {
                let next = self.file_numbers.fetch_add(1, Ordering::Relaxed);
                let sealed = w.rotate(&self.env, &self.dir, next)?;
                // Its end was stored by its last append, and `rotate` cut the space
                // reserved after it (`WriteFile::finish`): nothing changes below the end.
                if let Some(old) = self.segment(sealed.number) {
                    self.seal_segment(&old);
                }
                self.sealer.push(sealed);
                self.segments
                    .write()
                    .insert(next, Arc::new(Segment::active(next)));
            }
            if sync {
                // Before this group is synced, every older segment must be.
                self.sealer.sync_through(u64::MAX)?;
            }
            let (base, end) = w.append_batch(batch, sync, relocation)?;
            self.next_seq
                .store(batch.sequence() + batch.len() as u64, Ordering::Relaxed);
            self.since_freeze.fetch_add(end - base, Ordering::Relaxed);
            if let Some(s) = self.segment(w.number()) {
                s.end.store(end, Ordering::Release);
            }
            (w.number(), base)
        };
        // A relocation's values stay in the log only: collection must not fill memtables.
        let carry_max = if relocation { 0 } else { self.carry_max };
        // Without values kept beside pointers, the stored entries take no more room than
        // the batch's own unless a separated value is shorter than its pointer (then the
        // batch grows), and large values are not given their room. A kept value adds its
        // pointer to its entry: room for one per entry, but no more than the values that
        // can be kept need. A pass over the batch to size it exactly cost more than it
        // saved.
        let room = batch.room_to_copy();
        let capacity = if carry_max > 0 {
            let entries = batch.len();
            (room + entries * format::MAX_POINTER_LEN)
                .min(4096 + entries.saturating_mul(carry_max + format::MAX_POINTER_LEN))
        } else {
            room.min(4096)
        };
        let mut stored = WriteBatch::with_capacity(capacity);
        let mut offset = base;
        let mut ptr = [0u8; format::MAX_POINTER_LEN];
        let mut inline_bytes = 0u64;
        for e in batch.iter() {
            let len = format::record_len(e.key, e.value);
            if self.separates(e.kind, e.value) {
                let p = Pointer {
                    segment,
                    offset,
                    length: len as u32,
                };
                if carry_max > 0 && e.value.len() <= carry_max {
                    stored.put_value_pointer_carrying(e.key, p.encode(&mut ptr), e.value);
                } else {
                    stored.put_value_pointer(e.key, p.encode(&mut ptr));
                }
            } else {
                // The tree keeps this one: its record is garbage once flushed.
                inline_bytes += len as u64;
                match e.kind {
                    ValueKind::Delete => stored.delete(e.key),
                    ValueKind::RangeDelete => stored.delete_range(e.key, e.value),
                    _ => stored.put(e.key, e.value),
                }
            }
            offset += len as u64;
        }
        stored.set_sequence(batch.sequence());
        if inline_bytes > 0 {
            self.add_garbage(segment, inline_bytes);
        }
        Ok(stored)
    }

    /// The value a pointer entry of `key` carries after the pointer (a memtable's,
    /// [`crate::Options::vlog_memtable_value_max`]); `None` for a bare pointer.
    ///
    /// # Errors
    /// [`Error::Corruption`] for bytes after the pointer that are not the value it names.
    fn carried<'a>(&self, key: &[u8], stored: &'a [u8]) -> Result<Option<&'a [u8]>> {
        match format::carried_value(stored, key) {
            format::Carried::No => Ok(None),
            format::Carried::At(at) => Ok(stored.get(at..)),
            format::Carried::Bad(len, expect) => Err(Error::corruption(
                &self.dir,
                0,
                format!(
                    "the entry of key {:?} holds {len} bytes after its value pointer where the \
                     record it names holds a value of {expect}",
                    String::from_utf8_lossy(key)
                ),
            )),
        }
    }

    /// Whether the file of segment `number` is this store's to delete: its header checks
    /// against `store_id` (a version-1 header, which records no store, is taken as the
    /// store's), or it holds no header at all (cut short or zeros: crash debris holding no
    /// record). A segment another store wrote, copied in under a number this store dropped,
    /// is left alone (issue 17: files Shale does not own are never deleted), and so is one
    /// whose header is damaged, which cannot be told from it.
    fn owns_segment_file(&self, number: u64, store_id: u64) -> bool {
        let Ok(file) = self.env.open(&self.segment_path(number)) else {
            return false;
        };
        if file.len() < format::HEADER_LEN {
            return true;
        }
        match file.read_at(0, format::HEADER_LEN as usize, crate::env::ReadCause::Other) {
            Ok(header) => {
                header.iter().all(|&b| b == 0)
                    || format::check_header(&header, number, store_id).is_ok()
            }
            Err(_) => false,
        }
    }

    /// Punch out of segment `number`'s file the prefix garbage collection committed
    /// (`collected`, a record boundary), once no reader can need it: the engine offers the
    /// segment's name to [`ValueStore::delete_obsolete`] only then. Reads refuse the prefix
    /// from here on (a pointer into it is a dangling one). Only whole pages after the
    /// header's page are punched, so the header and the record straddling `collected` keep
    /// their bytes. Errors are ignored: the prefix stays on disk, unread.
    fn punch_collected(&self, number: u64, collected: u64) {
        let Some(seg) = self.segment(number) else {
            return;
        };
        seg.start.fetch_max(collected, Ordering::AcqRel);
        if seg.punched.load(Ordering::Acquire) >= collected {
            return;
        }
        const PAGE: u64 = 4096;
        let from = format::HEADER_LEN.next_multiple_of(PAGE);
        let to = collected / PAGE * PAGE;
        if to > from {
            let _ = self
                .env
                .fs()
                .punch_hole(&self.segment_path(number), from, to - from);
        }
        seg.punched.fetch_max(collected, Ordering::AcqRel);
    }

    /// Forget a dropped segment and delete its file.
    pub(crate) fn remove_segment(&self, number: u64) {
        self.segments.write().remove(&number);
        let _ = self.env.fs().remove_file(&self.segment_path(number));
        if let Some(c) = self.cache() {
            c.erase_file(number);
        }
    }
}

impl ValueStore for VlogPlacement {
    fn name(&self) -> &'static str {
        "vlog"
    }

    fn store_tag(&self) -> Option<&'static str> {
        Some("vlog")
    }

    fn empty_state(&self) -> Box<dyn crate::manifest::AxisState> {
        Box::new(VlogState::default())
    }

    fn verify(
        &self,
        ctx: &crate::values::VerifyContext<'_>,
    ) -> Result<crate::values::PlacementChecked> {
        verify::check(self, ctx)
    }

    fn recover(
        &self,
        ctx: &RecoverContext<'_>,
        apply: &mut Apply<'_>,
        edit: &mut VersionEdit,
    ) -> Result<SeqNo> {
        self.use_cache(ctx);
        let (last, torn) = reader::replay(self, ctx, apply, false)?;
        for (segment, end) in torn {
            VlogRecord::SegmentEnd(segment, end).push(edit);
        }
        self.note_edit(edit);
        let number = self.file_numbers.fetch_add(1, Ordering::Relaxed);
        let w = SegmentWriter::create(
            &self.env,
            &self.dir,
            number,
            ctx.store_id,
            self.mmap_log_writes,
        )?;
        let _ = self.store_id.set(ctx.store_id);
        self.segments
            .write()
            .insert(number, Arc::new(Segment::active(number)));
        *self.writer.lock() = Some(w);
        VlogRecord::Head(number, format::HEADER_LEN).push(edit);
        // The engine continues after the larger of the two (`db::open`).
        VlogRecord::HeadSeq(ctx.last_sequence.max(last) + 1).push(edit);
        Ok(last)
    }

    /// The same replay, which removes no half-created segment and keeps every live
    /// segment open (up to `max_open_files`); no segment is started, so the placement takes
    /// no writes.
    fn recover_read_only(&self, ctx: &RecoverContext<'_>, apply: &mut Apply<'_>) -> Result<SeqNo> {
        self.use_cache(ctx);
        Ok(reader::replay(self, ctx, apply, true)?.0)
    }

    fn append(&self, batch: &WriteBatch, sync: bool) -> Result<Option<WriteBatch>> {
        self.append_as(batch, sync, false).map(Some)
    }

    fn append_relocation(&self, batch: &WriteBatch) -> Result<Option<WriteBatch>> {
        // Not synced here: the drop that makes a relocation necessary syncs the whole log
        // before it commits (`GcHost::retire`), and until then the original record
        // is still live. One sync per collected segment instead of one per chunk: with
        // mostly dead segments nearly every chunk relocated a few records and paid an fsync
        // of the writers' dirty log, which held collection to ~35 MB/s.
        self.append_as(batch, false, true).map(Some)
    }

    fn wants_freeze(&self) -> bool {
        self.since_freeze.load(Ordering::Relaxed) >= self.freeze_after
    }

    fn freeze(&self) -> Result<LogPosition> {
        self.since_freeze.store(0, Ordering::Relaxed);
        let guard = self.writer.lock();
        let w = guard.as_ref().ok_or(Error::Closed)?;
        let at = LogPosition {
            file: w.number(),
            offset: w.len(),
        };
        // Appends run only under the engine's write lock, as this does: the next group
        // appended takes `next_seq`.
        let seq = self.next_seq.load(Ordering::Relaxed);
        if seq > 0 {
            self.frozen_at.lock().push((at, seq));
        }
        Ok(at)
    }

    fn flushed(&self, end: LogPosition, edit: &mut VersionEdit) -> Result<()> {
        // The flushed tables point into the log before `end`: those records must be durable
        // before the edit commits. Sealed segments up to `end.file` (it too, if it has been
        // rotated out since) are synced here or by the sealer; `note_edit` then records them.
        // The writer is asked first: a segment it leaves after this is queued by then.
        let active = {
            let mut guard = self.writer.lock();
            match guard.as_mut() {
                Some(w) if w.number() == end.file => match w.syncer() {
                    Some(s) => Some(s),
                    // No separate syncer: sync under the writer's lock, older segments first.
                    None => {
                        self.sealer.sync_through(u64::MAX)?;
                        w.sync_through(end.offset)?;
                        None
                    }
                },
                _ => None,
            }
        };
        self.sealer.sync_through(end.file)?;
        if let Some(s) = active {
            // Outside the writer's lock: the writer keeps appending while this syncs
            // (everything before `end` was handed to the OS before the freeze returned).
            s.sync_data()?;
        }
        VlogRecord::Head(end.file, end.offset).push(edit);
        let mut frozen = self.frozen_at.lock();
        if let Some(&(_, s)) = frozen.iter().find(|(p, _)| *p == end) {
            VlogRecord::HeadSeq(s).push(edit);
        }
        frozen.retain(|(p, _)| *p > end);
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let mut guard = self.writer.lock();
        self.sealer.sync_through(u64::MAX)?;
        match guard.as_mut() {
            Some(w) => w.sync_through(u64::MAX),
            None => Ok(()),
        }
    }

    fn close(&self) -> Result<()> {
        let mut guard = self.writer.lock();
        self.sealer.sync_through(u64::MAX)?;
        if let Some(w) = guard.as_mut() {
            w.finish()?;
            // Synced in full and never appended to again (the next open starts a new
            // segment): sealed, like a rotated segment.
            self.sealer.record(w.number(), w.len());
        }
        *guard = None;
        Ok(())
    }

    /// Deletes dropped segments, and punches out the collected prefix of the others
    /// (`names` leaves out a segment while a reader may still need what was retired of it).
    fn delete_obsolete(&self, names: &[String], state: &PersistedState) {
        let store_id = self.store_id.get().copied();
        let vstate = VlogState::of(state.state.as_ref());
        for name in names {
            let Some(number) = parse_segment_name(name) else {
                continue;
            };
            if vstate.dropped.contains(&number)
                && store_id.is_some_and(|id| self.owns_segment_file(number, id))
            {
                self.remove_segment(number);
            } else if let Some(&collected) = vstate.collected.get(&number) {
                self.punch_collected(number, collected);
            }
        }
    }

    /// Every segment `state` has not dropped: sealed ones whole (they never change
    /// again), the active one through what was appended.
    fn checkpoint_files(
        &self,
        names: &[String],
        state: &PersistedState,
    ) -> Result<Vec<super::LogFile>> {
        use super::{LogFile, LogFileTake};
        let guard = self.writer.lock();
        let w = guard.as_ref().ok_or(Error::Closed)?;
        let dropped = &VlogState::of(state.state.as_ref()).dropped;
        let mut out = Vec::new();
        for name in names {
            let Some(n) = parse_segment_name(name) else {
                continue;
            };
            if dropped.contains(&n) || n > w.number() {
                continue;
            }
            let take = if n == w.number() {
                LogFileTake::Prefix(w.len())
            } else {
                LogFileTake::Whole
            };
            out.push(LogFile {
                name: name.clone(),
                take,
            });
        }
        Ok(out)
    }

    // `discarded` keeps its default (nothing): garbage is counted when a flush supersedes a
    // pointer (`superseded`), and every pointer a merge drops was superseded by a flush
    // before, so counting merge discards too would count it twice.

    /// A filtered pointer's record is garbage: counted, but not marked superseded (garbage
    /// collection still looks the key up before dropping the record, so a merge that never
    /// commits loses nothing). A newer version of the key in a shallower level may have
    /// counted the same record already when it was flushed: the count can run high, which
    /// only makes collection look at the segment sooner.
    fn filtered(&self, kind: ValueKind, stored: &[u8]) {
        if kind == ValueKind::ValuePointer
            && let Ok((p, _)) = Pointer::decode_prefix(stored)
        {
            self.add_garbage(p.segment, u64::from(p.length));
        }
    }

    fn note_edit(&self, edit: &mut VersionEdit) {
        let pending = std::mem::take(&mut *self.pending_garbage.lock());
        for (segment, bytes) in pending {
            VlogRecord::Garbage(segment, bytes).push(edit);
        }
        for (segment, end) in self.sealer.take_unrecorded() {
            VlogRecord::Sealed(segment, end).push(edit);
        }
    }

    fn salvage_check(&self, ctx: &super::SalvageContext<'_>) -> Result<Vec<(usize, String)>> {
        salvage::check(self, ctx)
    }

    fn salvage(
        &self,
        ctx: &super::SalvageContext<'_>,
        flushed_seq: SeqNo,
        apply: &mut Apply<'_>,
        edit: &mut VersionEdit,
    ) -> Result<super::Salvaged> {
        salvage::salvage(self, ctx, flushed_seq, apply, edit)
    }

    fn salvage_garbage(
        &self,
        newest: &mut dyn Iterator<Item = Result<(ValueKind, Vec<u8>)>>,
        edit: &mut VersionEdit,
    ) -> Result<()> {
        salvage::count_garbage(newest, edit)
    }

    fn gc(&self) -> Option<&dyn super::ValueGc> {
        Some(self)
    }

    fn resolve<'a>(
        &self,
        key: &[u8],
        kind: ValueKind,
        stored: &'a [u8],
        cause: crate::env::ReadCause,
        fill: super::CacheFill,
    ) -> Result<ValueBytes<'a>> {
        match kind {
            ValueKind::Value => Ok(ValueBytes::Borrowed(stored)),
            ValueKind::ValuePointer => match self.carried(key, stored)? {
                Some(v) => Ok(ValueBytes::Borrowed(v)),
                None => reader::read_value(self, key, stored, cause, fill),
            },
            ValueKind::Delete | ValueKind::RangeDelete => Err(Error::InvalidArgument(
                "a delete has no value to resolve".into(),
            )),
        }
    }

    fn resolve_in<'a>(
        &self,
        memo: &mut crate::values::ResolveMemo,
        key: &[u8],
        kind: ValueKind,
        stored: &'a [u8],
        cause: crate::env::ReadCause,
        fill: super::CacheFill,
    ) -> Result<ValueBytes<'a>> {
        match kind {
            ValueKind::ValuePointer => match self.carried(key, stored)? {
                Some(v) => Ok(ValueBytes::Borrowed(v)),
                None => reader::read_value_in(self, memo, key, stored, cause, fill),
            },
            _ => self.resolve(key, kind, stored, cause, fill),
        }
    }

    fn carried_at(&self) -> Option<super::CarriedAt> {
        // With none kept, no memtable entry carries a value (recovery replays bare pointers).
        (self.carry_max > 0).then_some(carried_at)
    }

    fn table_value<'a>(&self, kind: ValueKind, stored: &'a [u8]) -> &'a [u8] {
        match (kind, Pointer::decode_prefix(stored)) {
            (ValueKind::ValuePointer, Ok((_, n))) => stored.get(..n).unwrap_or(stored),
            _ => stored,
        }
    }

    fn stats(&self) -> PlacementStats {
        let segments = self
            .segments
            .read()
            .values()
            .map(|s| {
                (
                    s.number,
                    s.end.load(Ordering::Relaxed),
                    s.garbage.load(Ordering::Relaxed),
                )
            })
            .collect();
        PlacementStats {
            segments,
            gc_runs: self.gc.runs.load(Ordering::Relaxed),
            gc_bytes_read: self.gc.bytes_read.load(Ordering::Relaxed),
            gc_bytes_relocated: self.gc.bytes_relocated.load(Ordering::Relaxed),
            gc_records_relocated: self.gc.records_relocated.load(Ordering::Relaxed),
            gc_records_skipped: self.gc.records_skipped.load(Ordering::Relaxed),
            gc_segments_deleted: self.gc.segments_deleted.load(Ordering::Relaxed),
            gc_steps: self.gc.steps.load(Ordering::Relaxed),
            gc_damaged_segments: self
                .unreadable
                .lock()
                .iter()
                .map(|(&n, &at)| (n, at))
                .collect(),
            wal_bytes_dropped: self.dropped.load(Ordering::Relaxed),
        }
    }
}

impl Drop for VlogPlacement {
    fn drop(&mut self) {
        self.sealer.stop();
    }
}

/// [`super::CarriedAt`] of the value log: a pointer entry followed by exactly its record's
/// value (`format::carried_value`).
fn carried_at(key: &[u8], kind: ValueKind, stored: &[u8]) -> Option<usize> {
    match (kind, format::carried_value(stored, key)) {
        (ValueKind::ValuePointer, format::Carried::At(at)) => Some(at),
        _ => None,
    }
}

impl super::ValueGc for VlogPlacement {
    fn superseded(&self, kind: ValueKind, stored: &[u8], edit: &mut VersionEdit) {
        if kind == ValueKind::ValuePointer
            && let Ok((p, _)) = Pointer::decode_prefix(stored)
        {
            gc::count_superseded(self, p, edit);
        }
    }

    fn may_count_in(&self, table: &crate::table::TableProperties) -> bool {
        table.num_value_pointers > 0
    }

    fn before_write(&self, bytes: usize) {
        self.pace.pay(bytes);
    }

    fn wants_gc(&self) -> bool {
        self.gc_enabled
    }

    fn collect_garbage(&self, host: &dyn super::GcHost, force: bool) -> Result<u64> {
        gc::collect(self, host, force)
    }
}

/// The number of a segment file name `NNNNNN.vlog`.
pub(crate) fn parse_segment_name(name: &str) -> Option<u64> {
    match crate::filename::parse_file_name(name)? {
        crate::filename::FileKind::Segment(n) => Some(n),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
