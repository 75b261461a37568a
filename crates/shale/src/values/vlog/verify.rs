//! `verify` for the value log: every live segment's header and record checksums, and every
//! value pointer in a live table resolving to a record holding its key.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use super::format::{self, HEADER_LEN, Pointer};
use super::parse_segment_name;
use super::reader::{ScanEnd, SegmentScanner, all_zeros, torn_tail};
use super::state::VlogState;
use crate::env::{Env, ReadCause};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{ValueKind, parse_internal_key};
use crate::table::TableReader;
use crate::values::{PlacementChecked as VlogChecked, VerifyContext};

/// Check every segment in `names` that the MANIFEST (`state`) has not dropped: its header,
/// and every record's checksum up to its valid end. Returns the valid end of each segment.
///
/// A segment the MANIFEST does not record as sealed may end in a tail a crash tore, or in
/// zeros reserved ahead of its writer (recovery cuts it there): damage in it is accepted
/// where recovery accepts it (`reader::torn_tail`). A sealed segment is read to its
/// recorded end and must be whole.
fn check_segments(
    env: &Env,
    dir: &Path,
    names: &[String],
    state: &VlogState,
    checked: &mut VlogChecked,
) -> Result<BTreeMap<u64, u64>> {
    let mut numbers: Vec<u64> = names
        .iter()
        .filter_map(|n| parse_segment_name(n))
        .filter(|n| !state.dropped.contains(n))
        .collect();
    numbers.sort_unstable();
    super::reader::check_sealed_present(state, &numbers, dir)?;
    let mut sizes = Vec::with_capacity(numbers.len());
    for &n in &numbers {
        sizes.push(
            env.fs()
                .file_size(&dir.join(format::segment_file_name(n)))?,
        );
    }
    let mut ends = BTreeMap::new();
    // Where a torn tail ended the log, once one has: a sealed segment after it means the
    // damage was in synced bytes (as recovery judges it, `reader::replay`).
    let mut ended: Option<(u64, u64)> = None;
    for (&number, &size) in numbers.iter().zip(&sizes) {
        let path = dir.join(format::segment_file_name(number));
        let sealed = state.sealed.get(&number).copied();
        if let (Some(_), Some((at_seg, at))) = (sealed, ended) {
            return Err(Error::corruption(
                dir.join(format::segment_file_name(at_seg)),
                at,
                format!("damaged record in a segment older than sealed segment {number}"),
            ));
        }
        // As recovery judges it (`reader::replay`): the MANIFEST knows these had a header.
        let header_synced = sealed.is_some()
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
            // A segment whose creation a crash cut: it holds no record (open removes it).
            continue;
        }
        let file = env.open(&path)?;
        let mut header = [0u8; HEADER_LEN as usize];
        file.read_exact_at(&mut header, 0, ReadCause::Other)?;
        if let Err(d) = format::check_header(&header, number) {
            if !header_synced && all_zeros(&file, size, ReadCause::Other)? {
                // The same, with its file extended by reserved space: open removes it.
                continue;
            }
            return Err(Error::corruption(&path, 0, d));
        }
        let end = match sealed {
            Some(e) if e > size => {
                return Err(Error::corruption(
                    &path,
                    size,
                    format!("the segment was sealed with {e} bytes (MANIFEST) but holds {size}"),
                ));
            }
            Some(e) => e,
            None => state
                .segment_ends
                .get(&number)
                .copied()
                .unwrap_or(size)
                .min(size),
        };
        let mut scan = SegmentScanner::new(file.clone(), end, HEADER_LEN, ReadCause::Other);
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
        ends.insert(number, valid_end);
        checked.segments += 1;
        checked.bytes += valid_end;
    }
    Ok(ends)
}

/// Check that every value pointer in `tables` names a record in a live segment (before its
/// valid end) that decodes, passes its checksum and holds the pointer's key. Pointers into
/// segments garbage collection dropped are skipped: an older version of a key may point
/// there until a compaction drops it; the newest never does.
fn check_pointers(
    env: &Env,
    dir: &Path,
    tables: &[Arc<dyn TableReader>],
    ends: &BTreeMap<u64, u64>,
    dropped: &BTreeSet<u64>,
    checked: &mut VlogChecked,
) -> Result<()> {
    let mut files = BTreeMap::new();
    for table in tables {
        let mut it = Arc::clone(table).iter(ReadCause::Other);
        it.seek_to_first()?;
        while it.valid() {
            let ikey = parse_internal_key(it.key()).map_err(|d| {
                Error::corruption(table.path(), 0, format!("bad internal key: {d}"))
            })?;
            if ikey.kind == ValueKind::ValuePointer {
                let p = Pointer::decode(it.value()).map_err(|d| {
                    Error::corruption(table.path(), 0, format!("bad value pointer: {d}"))
                })?;
                if !dropped.contains(&p.segment) {
                    check_pointer(env, dir, &mut files, ends, ikey.user_key, &p)?;
                    checked.pointers += 1;
                }
            }
            it.next()?;
        }
    }
    Ok(())
}

fn check_pointer(
    env: &Env,
    dir: &Path,
    files: &mut BTreeMap<u64, crate::env::ReadFile>,
    ends: &BTreeMap<u64, u64>,
    key: &[u8],
    p: &Pointer,
) -> Result<()> {
    let path = dir.join(format::segment_file_name(p.segment));
    let bad = |m: String| Error::corruption(&path, p.offset, m);
    let Some(&end) = ends.get(&p.segment) else {
        return Err(bad(format!(
            "a pointer of key {:?} names segment {}, which is missing",
            String::from_utf8_lossy(key),
            p.segment
        )));
    };
    let len = p.length as usize;
    if !p.fits(key.len(), end) {
        return Err(bad(format!(
            "a pointer ({} bytes at {}) lies outside the segment's {end} valid bytes",
            p.length, p.offset
        )));
    }
    let file = match files.get(&p.segment) {
        Some(f) => f.clone(),
        None => {
            let f = env.open(&path)?;
            // A bounded set of open segments (pointers mostly run through one segment at a
            // time): a store of more segments than the descriptor limit still verifies.
            if files.len() >= MAX_OPEN_SEGMENTS {
                files.clear();
            }
            files.insert(p.segment, f.clone());
            f
        }
    };
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

/// Segments the pointer check keeps open at once.
const MAX_OPEN_SEGMENTS: usize = 16;

/// The value-log checks of `verify` (nothing to do for a store without segments).
pub(crate) fn check(ctx: &VerifyContext<'_>) -> Result<VlogChecked> {
    let state = VlogState::of(ctx.state.state.as_ref());
    let mut checked = VlogChecked::default();
    let ends = check_segments(ctx.env, ctx.dir, ctx.names, state, &mut checked)?;
    check_pointers(
        ctx.env,
        ctx.dir,
        ctx.tables,
        &ends,
        &state.dropped,
        &mut checked,
    )?;
    Ok(checked)
}
