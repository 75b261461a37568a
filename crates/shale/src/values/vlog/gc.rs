//! Value-log garbage collection: picking a segment, reading its records at a paced rate,
//! counting, and slowing writers while the backlog is high (`pace.rs`). The engine offers
//! the rest as generic services ([`GcHost`], `db/value_jobs.rs`): it checks liveness
//! against the tree and writes relocations atomically with user writes, commits the drop,
//! and keeps the file until no reader needs it.
//!
//! One run:
//! 1. pick the sealed segment with the largest garbage ratio among those wholly before the
//!    MANIFEST's head (so recovery never needs it again); the read rate adapts to the
//!    garbage backlog (`rate_factor`), which also sets how much user writes are slowed
//!    (`pace.rs`);
//! 2. read its records in order; each separated value is a relocation candidate (inline
//!    values and deletes there are garbage by construction: the tree keeps them);
//! 3. hand candidates to the host in chunks: it rewrites at the head, synced, those the tree
//!    still points to;
//! 4. ask the host to commit the segment's drop; it deletes the file later.
//!
//! A crash anywhere leaves a correct store: before the drop commits, the segment is live and
//! the relocated copies are merely newer versions of the same values; after, the relocations
//! were synced before the drop edit and lie after the head, so recovery replays them if they
//! were not yet flushed.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::format::HEADER_LEN;
use super::reader::{ScanEnd, SegmentScanner};
use super::{Pointer, Segment, VlogPlacement};
use crate::env::ReadCause;
use crate::error::{Error, Result};
use crate::key::{SeqNo, ValueKind};
use crate::manifest::VersionEdit;
use crate::values::{GcHost, Relocation};

/// Candidates are handed to the host in chunks of about this many value bytes. The host
/// checks a chunk without the write lock first and takes the lock once for the records
/// still live; in a mostly dead segment, small chunks made the collector queue for the
/// writers' lock for every few live records (256 KiB chunks: GC spent most of its time
/// waiting for the lock, at ~35% of one core). At 4 MiB a wholly live chunk holds the lock
/// for about 1,000 lookups and one 4 MiB append.
const CHUNK_BYTES: usize = 4 << 20;

/// The smallest step (bytes of a segment) after which a collection commits its progress:
/// the prefix it went through is recorded (value-log record kind 16) and, once no reader can
/// need it, punched out of the file (`docs/format/vlog.md` §4). A step costs a sync of the
/// log and a MANIFEST edit.
pub(crate) const MIN_STEP: u64 = 1 << 20;

/// Where collection of `s` resumes (the end of its committed prefix, or the header's) and
/// an estimate of the garbage after it: the segment's count less the prefix (all of which
/// is garbage once collected; a prefix's relocated records are counted when their copies
/// are flushed, so the estimate runs low until then).
fn remaining(s: &Segment, state: &super::state::VlogState) -> (u64, u64, u64) {
    let from = state
        .collected
        .get(&s.number)
        .copied()
        .unwrap_or(HEADER_LEN)
        .max(HEADER_LEN);
    let end = s.end.load(Ordering::Relaxed);
    let size = end.saturating_sub(from);
    let garbage = s
        .garbage
        .load(Ordering::Relaxed)
        .saturating_sub(from - HEADER_LEN)
        .min(size);
    (from, size, garbage)
}

/// Below this fraction of garbage in the collectable segments, collection reads at the
/// configured rate; above it, faster.
const CALM_FRACTION: f64 = 0.1;

/// How much faster than the configured rate collection may read when `fraction` of the
/// collectable bytes is garbage: 1 up to [`CALM_FRACTION`], then doubling every 5 points,
/// up to 16 (from 25%). Garbage grows as fast as overwrites arrive; a fixed rate either falls
/// behind a fast writer or slows a writer that leaves little garbage.
pub(crate) fn rate_factor(fraction: f64) -> u64 {
    if fraction.is_nan() || fraction < CALM_FRACTION {
        return 1;
    }
    let steps = ((fraction - CALM_FRACTION) / 0.05).floor() as u32 + 1;
    1 << steps.min(4)
}

/// Foreground writes are judged idle when no user write was sequenced during this long.
const IDLE_WINDOW: Duration = Duration::from_millis(50);

/// The read-rate budget of one collection run.
struct Throttle<'a> {
    host: &'a dyn GcHost,
    /// Start of the current rate budget (reset while writes are idle).
    started: Cell<Instant>,
    /// Bytes read against the current budget.
    read: Cell<u64>,
    /// Bytes per second; 0: no limit.
    rate: u64,
    /// Sequence numbers this run's relocations took (not user writes).
    own_seqs: Cell<u64>,
    /// The idle check's window: its start, and user sequence numbers seen at its start.
    window: Cell<(Instant, SeqNo)>,
}

impl<'a> Throttle<'a> {
    fn new(host: &'a dyn GcHost, rate: u64) -> Throttle<'a> {
        let now = Instant::now();
        Throttle {
            host,
            started: Cell::new(now),
            read: Cell::new(0),
            rate,
            own_seqs: Cell::new(0),
            window: Cell::new((now, host.last_sequence())),
        }
    }

    /// Sequence numbers taken by user writes (the last sequence number less relocations).
    fn user_seq(&self) -> SeqNo {
        self.host
            .last_sequence()
            .saturating_sub(self.own_seqs.get())
    }

    /// Whether no user write arrived during the last full window; collection then reads at
    /// full speed (it competes with no one).
    fn writes_idle(&self) -> bool {
        let (since, seq) = self.window.get();
        if since.elapsed() < IDLE_WINDOW {
            return false;
        }
        let now = self.user_seq();
        self.window.set((Instant::now(), now));
        now == seq
    }

    /// Account `bytes` of reading, sleeping to keep to the rate; an error once the store
    /// is closing (it stops the collection).
    fn pay(&self, bytes: u64) -> Result<()> {
        if self.host.closing() {
            return Err(Error::Closed);
        }
        if self.rate == 0 {
            return Ok(());
        }
        if self.writes_idle() {
            self.started.set(Instant::now());
            self.read.set(0);
            return Ok(());
        }
        let read = self.read.get() + bytes;
        self.read.set(read);
        let due = Duration::from_secs_f64(read as f64 / self.rate as f64);
        let elapsed = self.started.get().elapsed();
        if due > elapsed {
            std::thread::sleep((due - elapsed).min(Duration::from_millis(100)));
        }
        Ok(())
    }
}

/// Segments garbage collection may pick: sealed, wholly before the head, not dropped and
/// readable.
fn collectable(vlog: &VlogPlacement, state: &crate::values::PersistedState) -> Vec<Arc<Segment>> {
    let state = super::state::VlogState::of(state.state.as_ref());
    let Some((head, _)) = state.head else {
        return Vec::new();
    };
    let unreadable = vlog.unreadable.lock().clone();
    vlog.sealed_segments()
        .into_iter()
        .filter(|s| {
            s.number < head
                && !state.dropped.contains(&s.number)
                && !unreadable.contains_key(&s.number)
        })
        .collect()
}

/// The backlog of `segments` (see [`reclaimable_fraction`]), their collected prefixes left
/// out.
fn garbage_fraction(
    segments: &[Arc<Segment>],
    state: &super::state::VlogState,
    min_ratio: f64,
) -> f64 {
    reclaimable_fraction(
        segments.iter().map(|s| {
            let (_, size, garbage) = remaining(s, state);
            (size, garbage)
        }),
        min_ratio,
    )
}

/// The backlog, given `(size, garbage)` per collectable segment: the fraction of their
/// bytes that is garbage, or 0 when no segment reaches `min_ratio`. With nothing automatic
/// collection may take, neither a faster rate nor slower user writes would bring the
/// garbage back (overwrites spread evenly leave every segment under the ratio), so there is
/// no backlog; once one segment qualifies, all garbage counts (the initial load's segments,
/// a quarter garbage under a hot set, keep the log larger while the hot segments wait).
pub(crate) fn reclaimable_fraction(
    segments: impl Iterator<Item = (u64, u64)>,
    min_ratio: f64,
) -> f64 {
    let (mut garbage, mut size, mut any) = (0u64, 0u64, false);
    for (len, g) in segments {
        let g = g.min(len);
        size = size.saturating_add(len);
        garbage = garbage.saturating_add(g);
        any |= g > 0 && g as f64 >= min_ratio * len as f64;
    }
    if size == 0 || !any {
        0.0
    } else {
        garbage as f64 / size as f64
    }
}

/// Records of one segment known dead since the store opened: a flush wrote a newer entry
/// of their key (or a delete) to a table. Such a record never becomes the newest entry of
/// its key again (entries only get newer; a merge drops an entry only below a newer one or
/// with every older version), so collection skips its liveness lookup. In memory only: after
/// a reopen, collection looks every record up as before. Bounded: past [`MAX_SUPERSEDED`]
/// offsets a segment stops remembering, and its other records are looked up.
#[derive(Debug, Default)]
pub(crate) struct Superseded {
    offsets: std::collections::HashSet<u64>,
}

/// Offsets remembered per segment at most (about 16 MiB of memory at worst, a full 128 MiB
/// segment of records of 128 bytes or less).
const MAX_SUPERSEDED: usize = 1 << 20;

impl Superseded {
    fn insert(&mut self, offset: u64) {
        if self.offsets.len() < MAX_SUPERSEDED {
            self.offsets.insert(offset);
        }
    }

    /// Whether the record at `offset` is known dead.
    pub(crate) fn contains(&self, offset: u64) -> bool {
        self.offsets.contains(&offset)
    }
}

/// A flush supersedes the record `p` points to: count it in its segment and in the flush's
/// edit, so that the count is persisted exactly when the superseding entry is (a crash
/// before the edit commits replays the entry and counts it again, once).
pub(crate) fn count_superseded(vlog: &VlogPlacement, p: Pointer, edit: &mut VersionEdit) {
    let Some(s) = vlog.segment(p.segment) else {
        return;
    };
    let bytes = u64::from(p.length);
    s.garbage.fetch_add(bytes, Ordering::Relaxed);
    s.superseded.lock().insert(p.offset);
    // One garbage record per segment and edit: a flush supersedes many pointers.
    let counted = edit
        .records
        .iter_mut()
        .find_map(|r| match super::state::VlogRecord::decode(r) {
            Ok(super::state::VlogRecord::Garbage(n, b)) if n == p.segment => Some((r, b)),
            _ => None,
        });
    match counted {
        Some((r, b)) => {
            *r = super::state::VlogRecord::Garbage(p.segment, b.saturating_add(bytes)).encode();
        }
        None => super::state::VlogRecord::Garbage(p.segment, bytes).push(edit),
    }
}

/// The segment to collect, if any, the offset to resume from, and the rate factor for its
/// collection.
fn pick(vlog: &VlogPlacement, host: &dyn GcHost, force: bool) -> Option<(Arc<Segment>, u64, u64)> {
    let state = host.persisted();
    let segments = collectable(vlog, &state);
    let vstate = super::state::VlogState::of(state.state.as_ref());
    let fraction = garbage_fraction(&segments, vstate, vlog.min_gc_ratio);
    // Only automatic collection slows writers: with it off, nothing would catch up.
    if vlog.gc_enabled {
        vlog.pace.set_backlog(fraction);
    }
    let mut best: Option<(f64, Arc<Segment>, u64)> = None;
    for s in segments {
        let (from, size, garbage) = remaining(&s, vstate);
        let ratio = if size == 0 {
            1.0
        } else {
            garbage as f64 / size as f64
        };
        // The configured ratio whatever the backlog: lowering it under pressure made the
        // collector rewrite young segments whose garbage was still growing (measured: 4.8 GB
        // relocated over 1.6M overwrites); user writes are slowed instead (`backlog`).
        if !force && ratio < vlog.min_gc_ratio {
            continue;
        }
        // Forced: any garbage at all. A segment without any is never rewritten (forced
        // collection in a loop must end).
        if garbage == 0 && size > 0 {
            continue;
        }
        if best.as_ref().is_none_or(|(r, _, _)| ratio > *r) {
            best = Some((ratio, s, from));
        }
    }
    best.map(|(_, s, from)| (s, from, rate_factor(fraction)))
}

/// One garbage-collection run; returns the segments dropped (0 or 1).
///
/// The run resumes where the segment's committed prefix ends and, every `gc_step` bytes,
/// commits its progress (`commit_step`): the prefix's bytes are then freed by punching
/// them out of the file, before the whole segment is dead. An automatic run stops after a
/// step when the rest of the segment is estimated under the garbage ratio (a dead prefix
/// before live records: the space comes back without rewriting the live ones); a forced
/// run goes to the end and drops the segment.
pub(crate) fn collect(vlog: &VlogPlacement, host: &dyn GcHost, force: bool) -> Result<u64> {
    let Some((seg, from, factor)) = pick(vlog, host, force) else {
        return Ok(0);
    };
    vlog.gc.runs.fetch_add(1, Ordering::Relaxed);
    let throttle = Throttle::new(host, if force { 0 } else { vlog.gc_bytes_per_sec });
    let file = vlog.scan_handle(&seg)?;
    let end = seg.end.load(Ordering::Acquire);
    let mut scan = SegmentScanner::new(file, end, from, ReadCause::Gc);
    let mut chunk: Vec<Relocation> = Vec::new();
    let mut chunk_bytes = 0;
    // The garbage estimated after `from` at the start, and what this run found dead since.
    let start_garbage = {
        let state = host.persisted();
        remaining(&seg, super::state::VlogState::of(state.state.as_ref())).2
    };
    let mut dead = 0u64;
    // Record lengths of the candidates in `chunk` (dead ones are known after relocation).
    let mut chunk_lens = 0u64;
    let mut committed = from;
    loop {
        let rec = match scan.next()? {
            Ok(r) => r,
            Err(ScanEnd::Clean) => break,
            Err(ScanEnd::Bad(at, detail)) => {
                // Damage: leave the segment alone rather than drop records that may be
                // live, and say so (issue 17, case 10: it used to be skipped silently,
                // forever). Not picked again until a reopen; counted in the stats.
                vlog.unreadable.lock().insert(seg.number, at);
                return Err(Error::corruption(
                    vlog.segment_path(seg.number),
                    at,
                    format!(
                        "value-log garbage collection stopped at a damaged record ({detail}); \
                         the segment is kept as it is and not collected again until the store \
                         is reopened"
                    ),
                ));
            }
        };
        vlog.gc.bytes_read.fetch_add(rec.len, Ordering::Relaxed);
        throttle.pay(rec.len / factor)?;
        let next = rec.offset + rec.len;
        if next - committed >= vlog.gc_step && rec.offset > committed && next < end {
            // Before this record's own chunk entry: the step ends at its start.
            dead += relocate(vlog, &throttle, &mut chunk, &mut chunk_lens)?;
            chunk_bytes = 0;
            commit_step(vlog, host, &seg, rec.offset)?;
            committed = rec.offset;
            let rest = end - committed;
            let garbage = start_garbage.saturating_sub(dead);
            if !force && (garbage as f64) < vlog.min_gc_ratio * rest as f64 {
                // The rest is mostly live: leave it in place.
                return Ok(0);
            }
        }
        if rec.kind != ValueKind::Value || !vlog.separates(rec.kind, &rec.value) {
            dead += rec.len;
            continue;
        }
        if seg.superseded.lock().contains(rec.offset) {
            vlog.gc.records_skipped.fetch_add(1, Ordering::Relaxed);
            dead += rec.len;
            continue;
        }
        chunk_lens += rec.len;
        chunk_bytes += rec.key.len() + rec.value.len();
        let pointer = Pointer {
            segment: seg.number,
            offset: rec.offset,
            length: rec.len as u32,
        };
        chunk.push(Relocation {
            key: rec.key,
            value: rec.value,
            pointer: pointer.to_vec(),
        });
        if chunk_bytes >= CHUNK_BYTES {
            dead += relocate(vlog, &throttle, &mut chunk, &mut chunk_lens)?;
            chunk_bytes = 0;
        }
    }
    relocate(vlog, &throttle, &mut chunk, &mut chunk_lens)?;
    host.retire(
        vec![super::state::VlogRecord::Dropped(seg.number).encode()],
        vec![super::format::segment_file_name(seg.number)],
    )?;
    vlog.gc.segments_deleted.fetch_add(1, Ordering::Relaxed);
    Ok(1)
}

/// Commit that collection of `seg` went through `offset` (a record boundary): the host
/// syncs the log (the relocations so far) and commits the record, and keeps the segment's
/// name from the obsolete-file sweep until no reader that started before can need the
/// prefix; the sweep then offers it and the placement punches the prefix out
/// (`VlogPlacement::punch_collected`).
fn commit_step(vlog: &VlogPlacement, host: &dyn GcHost, seg: &Segment, offset: u64) -> Result<()> {
    host.retire(
        vec![super::state::VlogRecord::Collected(seg.number, offset).encode()],
        vec![super::format::segment_file_name(seg.number)],
    )?;
    vlog.gc.steps.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Relocate the live records of `chunk`; returns an estimate of the bytes of its records
/// that were dead (`lens`: the chunk's record lengths, reset with it).
fn relocate(
    vlog: &VlogPlacement,
    throttle: &Throttle<'_>,
    chunk: &mut Vec<Relocation>,
    lens: &mut u64,
) -> Result<u64> {
    let total = std::mem::take(lens);
    if chunk.is_empty() {
        return Ok(0);
    }
    let n = throttle.host.relocate(chunk)?;
    let dead = total - total * n.min(chunk.len() as u64) / chunk.len() as u64;
    throttle.own_seqs.set(throttle.own_seqs.get() + n);
    let bytes: u64 = chunk
        .iter()
        .map(|r| (r.key.len() + r.value.len()) as u64)
        .sum();
    vlog.gc.records_relocated.fetch_add(n, Ordering::Relaxed);
    if n > 0 {
        // Approximate when only some were live: the counter is for reports, not decisions.
        let per = bytes / chunk.len() as u64;
        vlog.gc
            .bytes_relocated
            .fetch_add(per * n, Ordering::Relaxed);
    }
    chunk.clear();
    Ok(dead)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_is_no_backlog_while_no_segment_reaches_the_ratio() {
        // Four segments a quarter garbage (under a 0.5 ratio): no backlog at all.
        let quarter = [(100u64, 25u64); 4];
        assert_eq!(reclaimable_fraction(quarter.into_iter(), 0.5), 0.0);
        // The same with one segment 60% garbage: all garbage counts.
        let mixed = [(100u64, 25u64), (100, 25), (100, 25), (100, 60)];
        assert!((reclaimable_fraction(mixed.into_iter(), 0.5) - 135.0 / 400.0).abs() < 1e-9);
        // Garbage counted past a segment's size is capped; nothing collectable: none.
        assert_eq!(reclaimable_fraction([(10u64, 50u64)].into_iter(), 0.5), 1.0);
        assert_eq!(reclaimable_fraction(std::iter::empty(), 0.5), 0.0);
    }

    #[test]
    fn the_rate_grows_with_the_backlog() {
        assert_eq!(rate_factor(0.0), 1);
        assert_eq!(rate_factor(0.099), 1);
        assert_eq!(rate_factor(0.1), 2);
        assert_eq!(rate_factor(0.16), 4);
        assert_eq!(rate_factor(0.21), 8);
        assert_eq!(rate_factor(0.26), 16);
        assert_eq!(rate_factor(1.0), 16);
        assert_eq!(rate_factor(f64::NAN), 1);
    }
}
