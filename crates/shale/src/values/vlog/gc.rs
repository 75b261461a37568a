//! Value-log garbage collection: the placement's half (picking a segment, reading its
//! records, counting). The engine's half (`db/gc.rs`) checks liveness against the tree and
//! writes relocations atomically with user writes, commits the drop, and deletes the file
//! when no reader needs it.
//!
//! One run:
//! 1. pick the sealed segment with the largest garbage ratio among those wholly before the
//!    MANIFEST's head (so recovery never needs it again);
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

use std::sync::atomic::Ordering;

use super::format::HEADER_LEN;
use super::reader::{ScanEnd, SegmentScanner};
use super::{Pointer, Segment, VlogPlacement};
use crate::env::ReadCause;
use crate::error::Result;
use crate::key::ValueKind;
use crate::values::{GcHost, Relocation};

/// Candidates are handed to the host in chunks of about this many value bytes: one chunk
/// holds the write lock for its liveness checks and its append.
const CHUNK_BYTES: usize = 256 << 10;

/// The segment to collect, if any.
fn pick(vlog: &VlogPlacement, host: &dyn GcHost, force: bool) -> Option<std::sync::Arc<Segment>> {
    let state = host.persisted();
    let head = state.vlog_head?.0;
    let unreadable = vlog.unreadable.lock().clone();
    let mut best: Option<(f64, std::sync::Arc<Segment>)> = None;
    for s in vlog.sealed_segments() {
        if s.number >= head || state.vlog_dropped.contains(&s.number) {
            continue;
        }
        if unreadable.contains(&s.number) {
            continue;
        }
        let size = s.end.load(Ordering::Relaxed).saturating_sub(HEADER_LEN);
        let garbage = s.garbage.load(Ordering::Relaxed);
        let ratio = if size == 0 {
            1.0
        } else {
            garbage as f64 / size as f64
        };
        if !force && ratio < vlog.min_gc_ratio {
            continue;
        }
        // Forced: any garbage at all. A segment without any is never rewritten (forced
        // collection in a loop must end).
        if garbage == 0 && size > 0 {
            continue;
        }
        if best.as_ref().is_none_or(|(r, _)| ratio > *r) {
            best = Some((ratio, s));
        }
    }
    best.map(|(_, s)| s)
}

/// One garbage-collection run; returns the segments dropped (0 or 1).
pub(crate) fn collect(vlog: &VlogPlacement, host: &dyn GcHost, force: bool) -> Result<u64> {
    let Some(seg) = pick(vlog, host, force) else {
        return Ok(0);
    };
    vlog.gc.runs.fetch_add(1, Ordering::Relaxed);
    let file = vlog.handle(&seg)?;
    let end = seg.end.load(Ordering::Acquire);
    let mut scan = SegmentScanner::new(file, end, HEADER_LEN, ReadCause::Gc);
    let mut chunk: Vec<Relocation> = Vec::new();
    let mut chunk_bytes = 0;
    loop {
        let rec = match scan.next()? {
            Ok(r) => r,
            Err(ScanEnd::Clean) => break,
            Err(ScanEnd::Bad(_, _)) => {
                // Damage (or a tail torn by a crash before an earlier recovery): leave the
                // segment alone rather than drop records that may be live.
                vlog.unreadable.lock().insert(seg.number);
                return Ok(0);
            }
        };
        vlog.gc.bytes_read.fetch_add(rec.len, Ordering::Relaxed);
        host.throttle(rec.len)?;
        if rec.kind != ValueKind::Value || !vlog.separates(rec.kind, &rec.value) {
            continue;
        }
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
            relocate(vlog, host, &mut chunk)?;
            chunk_bytes = 0;
        }
    }
    relocate(vlog, host, &mut chunk)?;
    host.drop_segment(seg.number)?;
    vlog.gc.segments_deleted.fetch_add(1, Ordering::Relaxed);
    Ok(1)
}

fn relocate(vlog: &VlogPlacement, host: &dyn GcHost, chunk: &mut Vec<Relocation>) -> Result<()> {
    if chunk.is_empty() {
        return Ok(());
    }
    let n = host.relocate(chunk)?;
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
    Ok(())
}
