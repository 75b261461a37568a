//! `verify` for the value log: every live segment's header and record checksums, and every
//! value pointer in a live table resolving to a record holding its key.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::format::{self, HEADER_LEN, Pointer};
use super::reader::{ScanEnd, SegmentScanner, torn_tail};
use super::state::VlogState;
use super::{Segment, VlogPlacement};
use crate::env::ReadCause;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{ValueKind, parse_internal_key};
use crate::table::TableReader;
use crate::values::{PlacementChecked as VlogChecked, VerifyContext};

/// Check every live segment the read-only recovery registered (`vlog`'s map, each with the
/// valid end replay found or the MANIFEST records): every record's checksum up to that end.
/// Returns the valid end and the read handle of each.
///
/// A segment the MANIFEST does not record as sealed may end in a tail a crash tore, or in
/// zeros reserved ahead of its writer (recovery cuts it there): damage in it is accepted
/// where recovery accepts it (`reader::torn_tail`). A sealed segment is read to its
/// recorded end and must be whole. Replay checked the headers, removed nothing and kept
/// the handles open, so a writer in another process deleting a segment meanwhile does not
/// change what is read.
fn check_segments(
    vlog: &VlogPlacement,
    state: &VlogState,
    checked: &mut VlogChecked,
) -> Result<BTreeMap<u64, u64>> {
    let segments: Vec<Arc<Segment>> = vlog.segments.read().values().cloned().collect();
    let mut ends = BTreeMap::new();
    // Where a torn tail ended the log, once one has: a sealed segment after it means the
    // damage was in synced bytes (as recovery judges it, `reader::replay`).
    let mut ended: Option<(u64, u64)> = None;
    for seg in segments {
        let number = seg.number;
        let path = vlog.segment_path(number);
        let sealed = state.sealed.get(&number).copied();
        if let (Some(_), Some((at_seg, at))) = (sealed, ended) {
            return Err(Error::corruption(
                vlog.segment_path(at_seg),
                at,
                format!("damaged record in a segment older than sealed segment {number}"),
            ));
        }
        let file = vlog.handle(&seg)?;
        let end = seg.end.load(Ordering::Acquire);
        // A prefix garbage collection committed is never read (it may be punched out).
        let from = state
            .collected
            .get(&number)
            .copied()
            .unwrap_or(HEADER_LEN)
            .clamp(HEADER_LEN, end.max(HEADER_LEN));
        let mut scan = SegmentScanner::new(file.clone(), end, from, ReadCause::Other);
        let valid_end = loop {
            match scan.next()? {
                Ok(rec) => {
                    checked.records += 1;
                    if rec.offset + rec.len > end {
                        return Err(Error::corruption(&path, rec.offset, "record past the end"));
                    }
                }
                Err(ScanEnd::Clean) => break end,
                Err(ScanEnd::Bad(at, why)) => {
                    // As recovery judges it: damage followed by a whole record, with no lost
                    // page between, lies in synced bytes and is no torn tail.
                    if sealed.is_none() && torn_tail(&file, at, end)? {
                        ended.get_or_insert((number, at));
                        break at;
                    }
                    return Err(Error::corruption(&path, at, why));
                }
            }
        };
        // Only the end is kept: the pointer check opens segments again through the
        // placement's capped handle cache (a store may have more segments than descriptors).
        drop(scan);
        drop(file);
        ends.insert(number, valid_end);
        checked.segments += 1;
        checked.bytes += valid_end;
    }
    Ok(ends)
}

/// Check that every value pointer in `tables` names a record in a live segment (before its
/// valid end) that decodes, passes its checksum and holds the pointer's key. Pointers into
/// segments garbage collection dropped, or into the prefix of a segment it collected
/// (`collected`), are skipped: an older version of a key may point there until a compaction
/// drops it; the newest never does.
fn check_pointers(
    vlog: &VlogPlacement,
    tables: &[Arc<dyn TableReader>],
    ends: &BTreeMap<u64, u64>,
    dropped: &BTreeSet<u64>,
    collected: &BTreeMap<u64, u64>,
    checked: &mut VlogChecked,
) -> Result<()> {
    for table in tables {
        let mut it = Arc::clone(table).iter(ReadCause::Other.into());
        it.seek_to_first()?;
        while it.valid() {
            let ikey = parse_internal_key(it.key()).map_err(|d| {
                Error::corruption(table.path(), 0, format!("bad internal key: {d}"))
            })?;
            if ikey.kind == ValueKind::ValuePointer {
                let p = Pointer::decode(it.value()).map_err(|d| {
                    Error::corruption(table.path(), 0, format!("bad value pointer: {d}"))
                })?;
                let in_prefix = collected.get(&p.segment).is_some_and(|&c| p.offset < c);
                if !dropped.contains(&p.segment) && !in_prefix {
                    check_pointer(vlog, ends, ikey.user_key, &p)?;
                    checked.pointers += 1;
                }
            }
            it.next()?;
        }
    }
    Ok(())
}

fn check_pointer(
    vlog: &VlogPlacement,
    ends: &BTreeMap<u64, u64>,
    key: &[u8],
    p: &Pointer,
) -> Result<()> {
    let path = vlog.segment_path(p.segment);
    let bad = |m: String| Error::corruption(&path, p.offset, m);
    let (Some(end), Some(seg)) = (ends.get(&p.segment), vlog.segment(p.segment)) else {
        return Err(bad(format!(
            "a pointer of key {:?} names segment {}, which is missing",
            String::from_utf8_lossy(key),
            p.segment
        )));
    };
    let len = p.length as usize;
    if !p.fits(key.len(), *end) {
        return Err(bad(format!(
            "a pointer ({} bytes at {}) lies outside the segment's {end} valid bytes",
            p.length, p.offset
        )));
    }
    let file = vlog.handle(&seg)?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, p.offset, ReadCause::Other)?;
    let rec = format::decode_record(&buf).map_err(bad)?;
    if rec.key != key || rec.kind != ValueKind::Value {
        return Err(bad(format!(
            "the record a pointer names holds key {:?} ({:?}), not {:?}",
            String::from_utf8_lossy(rec.key),
            rec.kind,
            String::from_utf8_lossy(key)
        )));
    }
    Ok(())
}

/// The value-log checks of `verify`, after `vlog`'s read-only recovery (nothing to do for a
/// store without segments).
pub(crate) fn check(vlog: &VlogPlacement, ctx: &VerifyContext<'_>) -> Result<VlogChecked> {
    let state = VlogState::of(ctx.state.state.as_ref());
    let mut checked = VlogChecked {
        log_bytes_dropped: vlog.dropped.load(Ordering::Relaxed),
        ..VlogChecked::default()
    };
    let ends = check_segments(vlog, state, &mut checked)?;
    check_pointers(
        vlog,
        ctx.tables,
        &ends,
        &state.dropped,
        &state.collected,
        &mut checked,
    )?;
    Ok(checked)
}
