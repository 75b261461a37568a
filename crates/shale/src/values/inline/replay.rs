//! Replaying the write-ahead logs: which logs must be there, how far each is known
//! complete, and what damage means under each [`WalRecoveryMode`]. Read-only, so recovery
//! and `verify` run the same code and agree (`docs/format/wal.md` §4).
//!
//! What is checked, before any record is replayed:
//! - every log the MANIFEST records (live or sealed, from the log number on) is present;
//! - each log's header names this store and the log's own number (a log copied from
//!   another store, or renamed, is refused in every mode);
//! - the logs form a chain: each header names the log before it, so a missing log between
//!   two present ones (or a stray one inside the chain) is found.
//!
//! Each log is then *known complete* through the larger of the length the MANIFEST sealed
//! it at (`Db::close`) and the length the next log's header records (the log was synced
//! before the next one started). A log that ends before that length is damaged, whatever
//! the damage looks like; bytes after it (in the newest log, not synced) may be a torn
//! tail, which is dropped and counted. Zeros after the last record are no torn tail: space
//! reserved ahead of the writer (`Env::create_log`), in a log a crash left or one a running
//! writer is appending to (a read-only open), counted nowhere and refused in no mode.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::header::LogHeader;
use super::state::WalState;
use crate::env::{Env, ReadCause};
use crate::error::{Error, Result};
use crate::filename::{FileKind, log_file_name, parse_file_name};
use crate::key::SeqNo;
use crate::options::WalRecoveryMode;
use crate::values::Apply;
use crate::wal::{LogReader, WriteBatch};

/// What replay starts from.
pub(super) struct ReplayInput<'a> {
    pub env: &'a Env,
    pub dir: &'a Path,
    /// The directory's names.
    pub names: &'a [String],
    /// The MANIFEST's log number: logs below it are flushed.
    pub floor: u64,
    /// The MANIFEST's record of the logs.
    pub state: &'a WalState,
    /// The store's id (MANIFEST tag 17).
    pub store_id: u64,
    pub mode: WalRecoveryMode,
}

/// What replay did.
#[derive(Debug, Default)]
pub(super) struct Replayed {
    /// The largest sequence number replayed (0 if none).
    pub last_seq: SeqNo,
    /// Logs read.
    pub logs: usize,
    /// Bytes of the logs read.
    pub bytes: u64,
    /// Bytes dropped: torn tails, and what the mode cut or skipped.
    pub dropped: u64,
    /// The newest log in the directory and how far it was replayed: the next log's header
    /// records it as its predecessor.
    pub newest: Option<(u64, u64)>,
}

/// One log in the directory, with what its first record says.
struct Probe {
    number: u64,
    path: PathBuf,
    size: u64,
    /// `size` without the zeros after the last non-zero byte (`values::data_end`): the
    /// bytes the log held, for counting what replay read or dropped.
    data_end: u64,
    header: Option<LogHeader>,
    /// Why the log may not be replayed although it is present (not in the chain).
    excluded: Option<String>,
}

/// A log expected but absent, or present; in number order.
enum Step {
    Missing(u64, String),
    Present(usize),
}

/// Replay every log from `input.floor` on through `apply`, in order.
///
/// # Errors
/// [`Error::Corruption`] naming the log and offset for damage the mode does not tolerate,
/// and always for a log of another store; the file system's error.
pub(super) fn replay(input: &ReplayInput<'_>, apply: &mut Apply<'_>) -> Result<Replayed> {
    let mut numbers: Vec<u64> = input
        .names
        .iter()
        .filter_map(|n| match parse_file_name(n) {
            Some(FileKind::Log(n)) if n >= input.floor => Some(n),
            _ => None,
        })
        .collect();
    numbers.sort_unstable();
    let mut probes = Vec::with_capacity(numbers.len());
    for &n in &numbers {
        probes.push(probe(input, n)?);
    }
    let (steps, known) = plan(input, &mut probes);
    // Only the newest log holding a record can hold unsynced writes whose pages a crash
    // lost (`LogReader::tolerate_lost_pages`): a log is synced before the next one starts.
    let newest_with_data = probes
        .iter()
        .rev()
        .find(|p| p.data_end > header_end(p))
        .map(|p| p.number);

    let mut out = Replayed {
        newest: numbers.last().map(|&n| (n, 0)),
        ..Replayed::default()
    };
    let mut stopped = false;
    for step in steps {
        let p = match step {
            Step::Present(i) => probes.get(i),
            Step::Missing(..) => None,
        };
        if stopped {
            out.dropped += p.map_or(0, |p| p.data_end);
            continue;
        }
        let damage = match (&step, p) {
            (Step::Missing(n, why), _) => Some(Error::corruption(
                input.dir.join(log_file_name(*n)),
                0,
                format!("log {n} is missing: {why}"),
            )),
            (_, Some(p)) => p
                .excluded
                .as_ref()
                .map(|why| Error::corruption(&p.path, 0, why.clone())),
            _ => None,
        };
        if let Some(e) = damage {
            match input.mode {
                WalRecoveryMode::SkipAnyCorruptedRecords => {
                    out.dropped += p.map_or(0, |p| p.data_end);
                    continue;
                }
                WalRecoveryMode::PointInTimeRecovery => {
                    out.dropped += p.map_or(0, |p| p.data_end);
                    stopped = true;
                    continue;
                }
                _ => return Err(e),
            }
        }
        let Some(p) = p else { continue };
        let tolerate = Some(p.number) == newest_with_data;
        let flow = read_log(
            input,
            p,
            known.get(&p.number).copied(),
            tolerate,
            apply,
            &mut out,
        )?;
        stopped = flow == Flow::Stop;
    }
    Ok(out)
}

/// Read a log's first record: its header, if it has one.
fn probe(input: &ReplayInput<'_>, number: u64) -> Result<Probe> {
    let path = input.dir.join(log_file_name(number));
    let file = input.env.open(&path)?;
    let size = file.len();
    let data_end = crate::values::data_end(&file, size, ReadCause::Recovery)?;
    let mut reader = LogReader::new(file, ReadCause::Recovery);
    let mut record = Vec::new();
    // A damaged first record is reported when the log is read, as the mode says.
    let (header, has_record) = match reader.next_record(&mut record) {
        Ok(true) => (
            LogHeader::decode(&record).map_err(|d| Error::corruption(&path, 0, d))?,
            true,
        ),
        Ok(false) | Err(Error::Corruption { .. }) => (None, false),
        Err(e) => return Err(e),
    };
    if let Some(h) = header {
        if h.store_id != input.store_id {
            return Err(Error::corruption(
                &path,
                0,
                format!(
                    "the log belongs to another store: its header names store {:016x}, this \
                     store is {:016x}; a log copied from another store is never replayed",
                    h.store_id, input.store_id
                ),
            ));
        }
        if h.number != number {
            return Err(Error::corruption(
                &path,
                0,
                format!(
                    "the log's header says it is log {}, but its file name says {number}",
                    h.number
                ),
            ));
        }
    } else if input.state.tracked() && has_record {
        return Err(Error::corruption(
            &path,
            0,
            "a log without a header in a store whose logs carry one: this store did not \
             write it",
        ));
    }
    Ok(Probe {
        number,
        path,
        size,
        data_end,
        header,
        excluded: None,
    })
}

/// Where the header record ends (0 for a log without one).
fn header_end(p: &Probe) -> u64 {
    match p.header {
        Some(_) => (super::header::HEADER_LEN + crate::wal::HEADER_SIZE) as u64,
        None => 0,
    }
}

/// The logs in order, with the missing ones the MANIFEST and the chain name; and each
/// log's known-complete length. Marks present logs that are not in the chain.
fn plan(input: &ReplayInput<'_>, probes: &mut [Probe]) -> (Vec<Step>, BTreeMap<u64, u64>) {
    let present: BTreeSet<u64> = probes.iter().map(|p| p.number).collect();
    let mut missing: BTreeMap<u64, String> = BTreeMap::new();
    for &n in input.state.live.range(input.floor..) {
        if !present.contains(&n) {
            let what = match input.state.sealed.get(&n) {
                Some(len) => format!("the MANIFEST records it, closed at {len} bytes"),
                None => "the MANIFEST records it".to_string(),
            };
            missing.insert(n, what);
        }
    }
    let mut known: BTreeMap<u64, u64> = input.state.sealed.clone();
    for i in 0..probes.len() {
        let Some(h) = probes.get(i).and_then(|p| p.header) else {
            continue;
        };
        let number = h.number;
        let before = i
            .checked_sub(1)
            .and_then(|j| probes.get(j))
            .map(|p| p.number);
        let prev = (h.prev >= input.floor && h.prev != 0).then_some(h.prev);
        match (prev, before) {
            (Some(p), Some(b)) if p == b => {
                let k = known.entry(p).or_insert(0);
                *k = (*k).max(h.prev_len);
            }
            (Some(p), _) if !present.contains(&p) => {
                missing.entry(p).or_insert_with(|| {
                    format!("log {number}'s header names it as the log before it")
                });
            }
            (_, Some(b)) => {
                // Logs after the named predecessor (or all before this one, when it names
                // none from the log number on) are not this chain's.
                let from = prev.map_or(input.floor, |p| p + 1);
                for q in probes
                    .iter_mut()
                    .filter(|q| q.number >= from && q.number <= b)
                {
                    q.excluded.get_or_insert_with(|| {
                        format!(
                            "log {} is not in the store's chain of logs: log {number}'s header \
                             names {} as the log before it",
                            q.number,
                            prev.map_or("none".to_string(), |p| format!("log {p}"))
                        )
                    });
                }
            }
            _ => {}
        }
    }
    let mut steps: Vec<(u64, Step)> = missing
        .into_iter()
        .map(|(n, why)| (n, Step::Missing(n, why)))
        .collect();
    steps.extend(
        probes
            .iter()
            .enumerate()
            .map(|(i, p)| (p.number, Step::Present(i))),
    );
    steps.sort_by_key(|(n, _)| *n);
    (steps.into_iter().map(|(_, s)| s).collect(), known)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Stop,
}

/// What the mode makes of damage `e` at `offset` of a log of `size` bytes: an error, or
/// the flow of replay (the dropped bytes counted).
fn on_damage(mode: WalRecoveryMode, e: Error, dropped: u64, out: &mut Replayed) -> Result<Flow> {
    match mode {
        WalRecoveryMode::SkipAnyCorruptedRecords => {
            out.dropped += dropped;
            Ok(Flow::Continue)
        }
        WalRecoveryMode::PointInTimeRecovery => {
            out.dropped += dropped;
            Ok(Flow::Stop)
        }
        _ => Err(e),
    }
}

/// Replay one log.
fn read_log(
    input: &ReplayInput<'_>,
    p: &Probe,
    known: Option<u64>,
    tolerate_lost_pages: bool,
    apply: &mut Apply<'_>,
    out: &mut Replayed,
) -> Result<Flow> {
    let mode = input.mode;
    let file = input.env.open(&p.path)?;
    let mut reader = LogReader::new(file.clone(), ReadCause::Recovery)
        .tolerate_lost_pages(tolerate_lost_pages && mode != WalRecoveryMode::AbsoluteConsistency);
    let mut record = Vec::new();
    let mut first = true;
    loop {
        let offset = reader.valid_end_offset();
        match reader.next_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(Error::Corruption {
                file,
                offset: at,
                detail,
            }) => {
                let e = Error::Corruption {
                    file,
                    offset: at,
                    detail,
                };
                if mode == WalRecoveryMode::SkipAnyCorruptedRecords {
                    out.dropped += reader.skip_past_damage(at);
                    continue;
                }
                return on_damage(mode, e, p.data_end.saturating_sub(at), out);
            }
            Err(e) => return Err(e),
        }
        if std::mem::take(&mut first) && p.header.is_some() {
            continue;
        }
        match WriteBatch::from_data(std::mem::take(&mut record)) {
            Ok(batch) => {
                let seq = batch.sequence();
                for (i, e) in batch.iter().enumerate() {
                    apply(e.key, seq + i as u64, e.kind, e.value);
                }
                if !batch.is_empty() {
                    out.last_seq = out.last_seq.max(seq + batch.len() as u64 - 1);
                }
            }
            Err(d) => {
                let e = Error::corruption(&p.path, offset, format!("bad write batch in log: {d}"));
                let dropped = match mode {
                    WalRecoveryMode::SkipAnyCorruptedRecords => reader.valid_end_offset() - offset,
                    _ => p.data_end.saturating_sub(offset),
                };
                if on_damage(mode, e, dropped, out)? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
        }
    }
    let end = reader.valid_end_offset();
    out.logs += 1;
    out.bytes += p.data_end;
    if out.newest.is_some_and(|(n, _)| n == p.number) {
        out.newest = Some((p.number, end));
    }
    if let Some(k) = known.filter(|&k| end < k) {
        let detail = if p.size < k {
            format!(
                "the log holds {} bytes, but it was complete through byte {k} (synced when it \
                 was closed): it was cut short",
                p.size
            )
        } else {
            format!(
                "the log's records end at byte {end}, but it was complete through byte {k} \
                 (synced when it was closed): damage, not a torn tail"
            )
        };
        let e = Error::corruption(&p.path, end, detail);
        return on_damage(mode, e, p.data_end.saturating_sub(end), out);
    }
    let tail = reader.dropped_tail_bytes();
    // Zeros after the last record hold no write: the space a log reserves ahead of its
    // writer (a running writer's log, or one a crash left), not a torn tail. The torn tail
    // is the bytes up to the last non-zero one.
    let torn = if tail > 0 {
        crate::values::data_end(&file, end + tail, ReadCause::Recovery)?.saturating_sub(end)
    } else {
        0
    };
    if torn > 0 {
        if mode == WalRecoveryMode::AbsoluteConsistency {
            return Err(Error::corruption(
                &p.path,
                end,
                format!(
                    "{torn} bytes after the last whole record: a torn tail, which the \
                     absolute-consistency WAL recovery mode does not drop"
                ),
            ));
        }
        out.dropped += torn;
        if mode == WalRecoveryMode::PointInTimeRecovery {
            // Later logs would replay writes after a hole.
            return Ok(Flow::Stop);
        }
    }
    Ok(Flow::Continue)
}
