//! Repair of the value log (`ValueStore::salvage_check`, `ValueStore::salvage`).
//!
//! Every segment in the directory is read from its header on, whatever the MANIFEST says:
//! its records up to the end of its last whole write batch are kept, and a torn or damaged
//! tail is dropped with everything after it in that segment (pointers into it then fail,
//! and their tables are set aside). A segment whose header does not check against the
//! store's id (another store's, or a damaged header) is set aside unread. Segments stay
//! where they are: the kept tables point into them, and the repaired MANIFEST records each
//! as sealed at its valid end, with the head after the last one, so the next open replays
//! nothing. Entries newer than the tables are replayed as pointers into their segment.
//!
//! When the store's id is unknown (no readable MANIFEST, and no table recording one: a
//! store never flushed) a version-2 header cannot be checked: such a segment's records are
//! replayed with their values copied into the new tables and the segment is moved to
//! `lost/` once the repaired MANIFEST commits.
//!
//! Without the MANIFEST, a segment whose prefix garbage collection punched out
//! (`docs/format/vlog.md` §4: whole pages from 4096 on read as zeros) stops the scan at
//! the hole. When the zeros start at byte 4096, fill at least one whole page, and a whole
//! record with a valid checksum starts within a page of their end, and every record from
//! there on is older than the newest table (garbage collection punches only segments wholly
//! in tables), the scan skips the hole and resumes at that record ([`find_resume`]); the
//! skipped bytes are the segment's collected prefix in the repaired MANIFEST (record kind
//! 16) and the report names them. Any other hole is damage, as before: a page a crash lost
//! in a segment still being written holds records newer than the tables, and the records
//! after it must not come back without it.
//!
//! A pointer into a segment the directory does not hold is kept: garbage collection drops
//! segments whose records no newest version points to, and older versions may still point
//! there until a compaction drops them (`verify` skips them too). The segment is recorded
//! as dropped; a newest version among them is a value lost, which the report says.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::format::{self, HEADER_LEN, Pointer};
use super::reader::{ScanEnd, SegmentScanner};
use super::state::{VlogRecord, VlogState};
use super::{VlogPlacement, parse_segment_name};
use crate::env::{ReadCause, WriteCause};
use crate::error::{Error, Result};
use crate::filename::{FileKind, parse_file_name};
use crate::iter::InternalIterator;
use crate::key::{SeqNo, ValueKind, parse_internal_key};
use crate::manifest::VersionEdit;
use crate::values::{Apply, RecoveredLog, SalvageContext, Salvaged};

/// How repair uses one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// This store's (its header checks against the store's id): kept in place.
    Keep,
    /// Its header reads, but the store's id is unknown: its records are copied into the
    /// new tables and the file goes to `lost/`.
    Unbound,
    /// It holds no record (shorter than a header, or all zeros: a creation a crash cut).
    Empty,
    /// The MANIFEST records that garbage collection dropped it.
    Dropped,
    /// Not usable: why.
    Refused(String),
}

/// One segment as repair found it.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    number: u64,
    size: u64,
    kind: Use,
    /// The end of its last whole write batch.
    valid_end: u64,
    /// Where its records start: after the header, or after the prefix garbage collection
    /// committed (the MANIFEST's record kind 16, when it could be read; punched out).
    from: u64,
    /// Where and why its records ended before the file did (zeros after the last record
    /// are no damage).
    damage: Option<String>,
    /// A punched-out prefix the scan skipped without the MANIFEST: `(first bad record,
    /// first record after the hole)`; `from` is the second.
    skipped: Option<(u64, u64)>,
}

/// What the first step found, kept for the second.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scan {
    found: Vec<Found>,
    /// Segments some kept pointer names that the directory does not hold.
    missing: BTreeMap<u64, u64>,
}

/// Read every segment of the directory.
fn scan(vlog: &VlogPlacement, ctx: &SalvageContext<'_>) -> Result<Vec<Found>> {
    let dropped: BTreeSet<u64> = ctx
        .state
        .map(|s| VlogState::of(s.state.as_ref()).dropped.clone())
        .unwrap_or_default();
    let collected: BTreeMap<u64, u64> = ctx
        .state
        .map(|s| VlogState::of(s.state.as_ref()).collected.clone())
        .unwrap_or_default();
    // The newest sequence number the tables hold: records after a punched hole must be
    // older (see `find_resume`).
    let tables_seq = ctx
        .tables
        .iter()
        .map(|t| t.properties().largest_seq)
        .max()
        .unwrap_or(0);
    let mut numbers: Vec<u64> = ctx
        .names
        .iter()
        .filter_map(|n| parse_segment_name(n))
        .collect();
    numbers.sort_unstable();
    let mut out = Vec::with_capacity(numbers.len());
    for number in numbers {
        let path = vlog.segment_path(number);
        let file = ctx.env.open(&path)?;
        let size = file.len();
        let mut found = Found {
            number,
            size,
            kind: Use::Keep,
            valid_end: HEADER_LEN,
            from: HEADER_LEN,
            damage: None,
            skipped: None,
        };
        if dropped.contains(&number) {
            found.kind = Use::Dropped;
            out.push(found);
            continue;
        }
        if size < HEADER_LEN {
            found.kind = Use::Empty;
            out.push(found);
            continue;
        }
        let mut header = [0u8; HEADER_LEN as usize];
        file.read_exact_at(&mut header, 0, ReadCause::Recovery)?;
        let checked = if ctx.store_id_known {
            format::check_header(&header, number, ctx.store_id)
        } else {
            format::check_header_unbound(&header, number).map(|()| found.kind = Use::Unbound)
        };
        if let Err(d) = checked {
            found.kind = if crate::values::zeros_between(&file, 0, size, ReadCause::Recovery)? {
                Use::Empty
            } else {
                Use::Refused(d)
            };
            out.push(found);
            continue;
        }
        found.from = collected
            .get(&number)
            .copied()
            .unwrap_or(HEADER_LEN)
            .clamp(HEADER_LEN, size);
        found.valid_end = found.from;
        let mut scanner = SegmentScanner::new(file.clone(), size, found.from, ReadCause::Recovery);
        let mut last_end = found.from;
        let end = loop {
            match scanner.next()? {
                Ok(rec) => {
                    last_end = rec.offset + rec.len;
                    if rec.last_in_batch {
                        found.valid_end = last_end;
                    }
                }
                Err(ScanEnd::Clean) => break last_end,
                Err(ScanEnd::Bad(at, why)) => {
                    let resume = if found.from == HEADER_LEN && found.skipped.is_none() {
                        find_resume(&file, at, size, tables_seq)?
                    } else {
                        None
                    };
                    if let Some(resume) = resume {
                        found.skipped = Some((at, resume));
                        found.from = resume;
                        found.valid_end = resume;
                        last_end = resume;
                        scanner =
                            SegmentScanner::new(file.clone(), size, resume, ReadCause::Recovery);
                        continue;
                    }
                    if !crate::values::zeros_between(&file, at, size, ReadCause::Recovery)? {
                        found.damage = Some(format!("damaged at byte {at}: {why}"));
                    }
                    break at;
                }
            }
        };
        if found.damage.is_none() && end > found.valid_end {
            found.damage = Some(format!(
                "the write batch at byte {} is incomplete",
                found.valid_end
            ));
        }
        out.push(found);
    }
    Ok(out)
}

/// The page garbage collection's punch starts at (`VlogPlacement::punch_collected`: whole
/// pages after the header's).
const PAGE: u64 = 4096;

/// Where the records after a punched-out prefix resume, if the scan that stopped at `at`
/// (in a segment of `size` bytes) stopped at one: zeros from byte [`PAGE`] to a page
/// boundary `z` (at least one whole page, and not to the end of the file: that is a torn
/// tail), `at` no later than [`PAGE`] (the record the hole cut, or the one at its start),
/// the first offset from `z - PAGE` on (the collected offset lies in the page before `z` or
/// in `z`'s: a record's header is not all zeros, but the page it starts in may be) where a
/// whole record with a valid checksum starts, within two pages, and every record from there
/// to the end of the scan no newer than `tables_seq` (the segment was wholly in tables, as
/// every segment garbage collection touches is). `None`: not a punched prefix.
fn find_resume(
    file: &crate::env::ReadFile,
    at: u64,
    size: u64,
    tables_seq: u64,
) -> Result<Option<u64>> {
    if at > PAGE || size < 2 * PAGE {
        return Ok(None);
    }
    let cause = ReadCause::Recovery;
    // The end of the zeros, page by page.
    let mut z = PAGE;
    let mut page = vec![0u8; PAGE as usize];
    while z + PAGE <= size {
        file.read_exact_at(&mut page, z, cause)?;
        if page.iter().any(|&b| b != 0) {
            break;
        }
        z += PAGE;
    }
    if z == PAGE || z + PAGE > size {
        // No whole zero page, or zeros to the end (a torn tail).
        return Ok(None);
    }
    let lo = z - PAGE;
    let hi = (z + PAGE).min(size);
    let window_end = (hi + format::RECORD_HEADER_LEN as u64).min(size);
    let mut window = vec![0u8; (window_end - lo) as usize];
    file.read_exact_at(&mut window, lo, cause)?;
    for pos in lo..hi {
        let rel = (pos - lo) as usize;
        let Some(h) = window
            .get(rel..rel + format::RECORD_HEADER_LEN)
            .and_then(|b| format::decode_header(b).ok())
        else {
            continue;
        };
        let len = h.record_len() as u64;
        if h.seq == 0 || pos + len > size {
            continue;
        }
        let mut rec = vec![0u8; len as usize];
        file.read_exact_at(&mut rec, pos, cause)?;
        if format::decode_record(&rec).is_err() {
            continue;
        }
        // Found: every record from here on must be in the tables already.
        let mut scanner = SegmentScanner::new(file.clone(), size, pos, cause);
        while let Ok(r) = scanner.next()? {
            if r.seq > tables_seq {
                return Ok(None);
            }
        }
        return Ok(Some(pos));
    }
    Ok(None)
}

/// Why the pointer `p` of `key` does not resolve, if it does not (`None`: it names a record
/// of a kept segment holding `key`, or a segment the directory does not hold).
fn check_pointer(
    vlog: &VlogPlacement,
    found: &BTreeMap<u64, &Found>,
    missing: &mut BTreeMap<u64, u64>,
    key: &[u8],
    p: &Pointer,
) -> Result<Option<String>> {
    let name = format::segment_file_name(p.segment);
    let Some(f) = found.get(&p.segment) else {
        *missing.entry(p.segment).or_default() += 1;
        return Ok(None);
    };
    match &f.kind {
        Use::Keep => {}
        // Garbage collection dropped it: only shadowed versions point there.
        Use::Dropped => {
            *missing.entry(p.segment).or_default() += 1;
            return Ok(None);
        }
        Use::Unbound => {
            return Ok(Some(format!(
                "a value pointer names {name}, whose header cannot be checked without the store's id"
            )));
        }
        Use::Empty => {
            return Ok(Some(format!(
                "a value pointer names {name}, which holds no record"
            )));
        }
        Use::Refused(why) => {
            return Ok(Some(format!(
                "a value pointer names {name}, which is not usable: {why}"
            )));
        }
    }
    if p.offset < f.from {
        // Into the prefix garbage collection collected (and punched out): only an older
        // version can point there, as into a dropped segment.
        *missing.entry(p.segment).or_default() += 1;
        return Ok(None);
    }
    if !p.fits(key.len(), f.valid_end) {
        return Ok(Some(format!(
            "a value pointer ({} bytes at {}) lies past the {} valid bytes of {name}",
            p.length, p.offset, f.valid_end
        )));
    }
    let file = ctx_open(vlog, p.segment)?;
    let mut buf = vec![0u8; p.length as usize];
    file.read_exact_at(&mut buf, p.offset, ReadCause::Recovery)?;
    match format::decode_record(&buf) {
        Ok(rec) if rec.key == key && rec.kind == ValueKind::Value => Ok(None),
        Ok(rec) => Ok(Some(format!(
            "the record a pointer names in {name} at {} holds key {:?}, not {:?}",
            p.offset,
            String::from_utf8_lossy(rec.key),
            String::from_utf8_lossy(key)
        ))),
        Err(d) => Ok(Some(format!(
            "the record a pointer names in {name} at {}: {d}",
            p.offset
        ))),
    }
}

fn ctx_open(vlog: &VlogPlacement, number: u64) -> Result<crate::env::ReadFile> {
    vlog.env.open(&vlog.segment_path(number))
}

/// See the module documentation (first step).
pub(super) fn check(
    vlog: &VlogPlacement,
    ctx: &SalvageContext<'_>,
) -> Result<Vec<(usize, String)>> {
    let logs = ctx
        .names
        .iter()
        .filter(|n| matches!(parse_file_name(n), Some(FileKind::Log(_))))
        .count();
    if ctx.state.is_none() && logs > 0 {
        return Err(Error::InvalidArgument(format!(
            "{} holds {logs} write-ahead logs (.log) and no readable MANIFEST: it is a store \
             that keeps values inline; repair it with that design (--values inline)",
            ctx.dir.display()
        )));
    }
    let found = scan(vlog, ctx)?;
    let by_number: BTreeMap<u64, &Found> = found.iter().map(|f| (f.number, f)).collect();
    let mut missing = BTreeMap::new();
    let mut bad = Vec::new();
    for (i, table) in ctx.tables.iter().enumerate() {
        if table.properties().num_value_pointers == 0 {
            continue;
        }
        let mut it = Arc::clone(table).iter(ReadCause::Recovery.into());
        it.seek_to_first()?;
        while it.valid() {
            let ikey = parse_internal_key(it.key()).map_err(|d| {
                Error::corruption(table.path(), 0, format!("bad internal key: {d}"))
            })?;
            if ikey.kind == ValueKind::ValuePointer {
                let why = match Pointer::decode(it.value()) {
                    Err(d) => Some(format!("a bad value pointer: {d}")),
                    Ok(p) => check_pointer(vlog, &by_number, &mut missing, ikey.user_key, &p)?,
                };
                if let Some(why) = why {
                    bad.push((i, why));
                    break;
                }
            }
            it.next()?;
        }
    }
    *vlog.salvage_scan.lock() = Some(Scan {
        found: found.clone(),
        missing,
    });
    Ok(bad)
}

/// See the module documentation (second step).
pub(super) fn salvage(
    vlog: &VlogPlacement,
    ctx: &SalvageContext<'_>,
    flushed_seq: SeqNo,
    apply: &mut Apply<'_>,
    edit: &mut VersionEdit,
) -> Result<Salvaged> {
    let Scan { found, missing } = match vlog.salvage_scan.lock().take() {
        Some(s) => s,
        None => Scan {
            found: scan(vlog, ctx)?,
            missing: BTreeMap::new(),
        },
    };
    // Records before the MANIFEST's head are in tables (or were dropped from them).
    let head = ctx.state.and_then(|s| VlogState::of(s.state.as_ref()).head);
    let mut out = Salvaged::default();
    let mut last_kept: Option<(u64, u64)> = None;
    let mut ptr = [0u8; format::MAX_POINTER_LEN];
    for f in &found {
        let name = format::segment_file_name(f.number);
        match &f.kind {
            Use::Refused(why) => {
                out.set_aside.push((name, why.clone()));
                continue;
            }
            Use::Empty => {
                out.notes
                    .push(format!("{name} holds no record (a creation a crash cut)"));
                out.converted.push(name);
                continue;
            }
            Use::Dropped => {
                VlogRecord::Dropped(f.number).push(edit);
                out.converted.push(name);
                continue;
            }
            Use::Keep | Use::Unbound => {}
        }
        let keep = f.kind == Use::Keep;
        let path = vlog.segment_path(f.number);
        let file = ctx.env.open(&path)?;
        let mut log = RecoveredLog {
            name: name.clone(),
            bytes_dropped: f.size - f.valid_end,
            damage: f.damage.clone(),
            ..RecoveredLog::default()
        };
        if f.damage.is_none() {
            // Zeros after the last record: space reserved ahead of the writer, no data.
            log.bytes_dropped = 0;
        }
        if let Some((at, resume)) = f.skipped {
            out.notes.push(format!(
                "{name}: skipped bytes {at} to {resume}, a prefix garbage collection punched                  out (zeros from byte {PAGE}); its records resume at byte {resume}"
            ));
        }
        let mut inline = 0u64;
        let mut scanner = SegmentScanner::new(file, f.valid_end, f.from, ReadCause::Recovery);
        while let Ok(rec) = scanner.next()? {
            let before_head = head.is_some_and(|h| (f.number, rec.offset) < h);
            if rec.seq <= flushed_seq || before_head {
                log.skipped += 1;
                continue;
            }
            if keep && vlog.separates(rec.kind, &rec.value) {
                let p = Pointer {
                    segment: f.number,
                    offset: rec.offset,
                    length: rec.len as u32,
                };
                apply(
                    &rec.key,
                    rec.seq,
                    ValueKind::ValuePointer,
                    p.encode(&mut ptr),
                );
            } else {
                inline += rec.len;
                apply(&rec.key, rec.seq, rec.kind, &rec.value);
            }
            log.entries += 1;
            out.last_seq = out.last_seq.max(rec.seq);
        }
        if keep {
            // Synced in full (the repaired MANIFEST records it sealed): tables point into it.
            let mut w = ctx.env.reopen(&path, f.size, WriteCause::Vlog)?;
            w.sync()?;
            drop(w);
            VlogRecord::Sealed(f.number, f.valid_end).push(edit);
            if f.from > HEADER_LEN {
                // Nothing reads the collected prefix again (and an open punches it).
                VlogRecord::Collected(f.number, f.from).push(edit);
            }
            if f.valid_end < f.size {
                VlogRecord::SegmentEnd(f.number, f.valid_end).push(edit);
            }
            if inline > 0 {
                VlogRecord::Garbage(f.number, inline).push(edit);
            }
            last_kept = Some((f.number, f.valid_end));
        } else {
            out.notes.push(format!(
                "{name}: the store's id is unknown, so its header cannot be checked; its \
                 records were copied into the new tables"
            ));
            out.converted.push(name);
        }
        out.logs.push(log);
    }
    for (&segment, &pointers) in &missing {
        if !found.iter().any(|f| f.number == segment) {
            VlogRecord::Dropped(segment).push(edit);
        }
        let name = format::segment_file_name(segment);
        out.notes.push(
            if found
                .iter()
                .any(|f| f.number == segment && f.kind == Use::Keep)
            {
                format!(
                    "{pointers} value pointers name the prefix of {name} that garbage collection \
                 collected: they are older versions, or values lost"
                )
            } else {
                format!(
                    "{pointers} value pointers name {name}, which is not in the directory (or \
                 garbage collection dropped it): they are older versions, or values lost"
                )
            },
        );
    }
    // Nothing left to replay: the next open starts a new segment after the last one.
    if let Some((segment, end)) = last_kept {
        VlogRecord::Head(segment, end).push(edit);
    }
    Ok(out)
}

/// [`ValueStore::salvage_garbage`](crate::values::ValueStore::salvage_garbage): each
/// segment `edit` keeps (records sealed) gets one garbage count, every byte after its
/// header that no newest version in `newest` points to (the collected prefix included, as
/// the count always holds it). It replaces the counts [`salvage`] pushed (for records it
/// replayed inline). Without it a repaired store's segments had no garbage count, and
/// forced collection, which skips segments without garbage, never reclaimed them.
pub(super) fn count_garbage(
    newest: &mut dyn Iterator<Item = Result<(ValueKind, Vec<u8>)>>,
    edit: &mut VersionEdit,
) -> Result<()> {
    let mut sealed: BTreeMap<u64, u64> = BTreeMap::new();
    for r in &edit.records {
        if let Ok(VlogRecord::Sealed(n, end)) = VlogRecord::decode(r) {
            sealed.insert(n, end);
        }
    }
    let mut live: BTreeMap<u64, u64> = BTreeMap::new();
    for entry in newest {
        let (kind, stored) = entry?;
        if kind != ValueKind::ValuePointer {
            continue;
        }
        // A pointer that does not decode names no record: repair's check set its table
        // aside already, so it is not counted.
        if let Ok(p) = Pointer::decode(&stored)
            && sealed.contains_key(&p.segment)
        {
            *live.entry(p.segment).or_default() += u64::from(p.length);
        }
    }
    edit.records
        .retain(|r| !matches!(VlogRecord::decode(r), Ok(VlogRecord::Garbage(n, _)) if sealed.contains_key(&n)));
    for (n, end) in sealed {
        let garbage = end
            .saturating_sub(HEADER_LEN)
            .saturating_sub(live.get(&n).copied().unwrap_or(0));
        if garbage > 0 {
            VlogRecord::Garbage(n, garbage).push(edit);
        }
    }
    Ok(())
}
