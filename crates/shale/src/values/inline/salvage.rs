//! Repair of the write-ahead logs (`ValueStore::salvage`, as LevelDB's `RepairDB` converts
//! its logs): every log in the directory is read from its start, whatever the MANIFEST says
//! about it, and the entries the tables do not hold yet are replayed. A log's torn or
//! damaged tail is dropped with everything after it in that log; the next log is still
//! read. A log of another store (its header names another store id) or one renamed (its
//! header names another number) is set aside unread.

use std::path::Path;

use super::header::LogHeader;
use super::state::WalRecord;
use crate::env::{Env, ReadCause};
use crate::error::{Error, Result};
use crate::filename::{FileKind, log_file_name, parse_file_name};
use crate::key::SeqNo;
use crate::manifest::VersionEdit;
use crate::values::{Apply, RecoveredLog, SalvageContext, Salvaged};
use crate::wal::{LogReader, WriteBatch};

/// The numbers of the logs in `names`, oldest first.
fn log_numbers(names: &[String]) -> Vec<u64> {
    let mut numbers: Vec<u64> = names
        .iter()
        .filter_map(|n| match parse_file_name(n) {
            Some(FileKind::Log(n)) => Some(n),
            _ => None,
        })
        .collect();
    numbers.sort_unstable();
    numbers
}

/// The header of log `number`, if its first record is one.
pub(super) fn header(env: &Env, dir: &Path, number: u64) -> Result<Option<LogHeader>> {
    let file = env.open(&dir.join(log_file_name(number)))?;
    let mut reader = LogReader::new(file, ReadCause::Recovery);
    let mut record = Vec::new();
    match reader.next_record(&mut record) {
        Ok(true) => Ok(LogHeader::decode(&record).ok().flatten()),
        Ok(false) | Err(Error::Corruption { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The store id the newest log with a header records.
pub(super) fn store_id(env: &Env, dir: &Path, names: &[String]) -> Option<u64> {
    log_numbers(names)
        .into_iter()
        .rev()
        .find_map(|n| header(env, dir, n).ok().flatten().map(|h| h.store_id))
}

/// Tables that hold value pointers cannot be kept (this store keeps values inline), and a
/// directory holding value-log segments but no MANIFEST to say how it was made is a store
/// of a value-log design: refused, so that its tables are not set aside as damaged.
pub(super) fn check(ctx: &SalvageContext<'_>) -> Result<Vec<(usize, String)>> {
    let segments = ctx
        .names
        .iter()
        .filter(|n| matches!(parse_file_name(n), Some(FileKind::Segment(_))))
        .count();
    if ctx.state.is_none() && segments > 0 {
        return Err(Error::InvalidArgument(format!(
            "{} holds {segments} value-log segments (.vlog) and no readable MANIFEST: it is a \
             store with a value log; repair it with that design (--design wisckey, or \
             --values vlog), which keeps its values",
            ctx.dir.display()
        )));
    }
    Ok(ctx
        .tables
        .iter()
        .enumerate()
        .filter(|(_, t)| t.properties().num_value_pointers > 0)
        .map(|(i, t)| {
            (
                i,
                format!(
                    "it holds {} value pointers, but this store keeps values inline",
                    t.properties().num_value_pointers
                ),
            )
        })
        .collect())
}

/// Why log `number` (whose first record is `first`) is not this store's, if it is not.
fn foreign(ctx: &SalvageContext<'_>, number: u64, first: &[u8]) -> Option<String> {
    match LogHeader::decode(first) {
        Ok(Some(h)) if ctx.store_id_known && h.store_id != ctx.store_id => Some(format!(
            "the log belongs to another store: its header names store {:016x}, this store \
             is {:016x}",
            h.store_id, ctx.store_id
        )),
        Ok(Some(h)) if h.number != number => Some(format!(
            "the log's header says it is log {}, but its file name says {number}",
            h.number
        )),
        Ok(_) => None,
        Err(d) => Some(format!(
            "its first record is no header this build reads: {d}"
        )),
    }
}

/// See the module documentation. Every log read is converted (moved to `lost/` once the
/// repaired MANIFEST commits); the repaired store starts its log numbers after them.
pub(super) fn salvage(
    ctx: &SalvageContext<'_>,
    next_file: u64,
    flushed_seq: SeqNo,
    apply: &mut Apply<'_>,
    edit: &mut VersionEdit,
) -> Result<Salvaged> {
    // Logs below the MANIFEST's log number were flushed before it was written.
    let floor = ctx.state.map_or(0, |s| s.log_number);
    let mut out = Salvaged::default();
    for number in log_numbers(ctx.names) {
        let name = log_file_name(number);
        let file = ctx.env.open(&ctx.dir.join(&name))?;
        // What the log held, without the zeros it reserved ahead of its writer
        // (`Env::create_log`): those are neither a torn tail nor dropped bytes.
        let data_end = crate::values::data_end(&file, file.len(), ReadCause::Recovery)?;
        let mut reader = LogReader::new(file, ReadCause::Recovery);
        let mut log = RecoveredLog {
            name: name.clone(),
            ..RecoveredLog::default()
        };
        let mut record = Vec::new();
        let mut first = true;
        let mut refused = None;
        loop {
            let at = reader.valid_end_offset();
            match reader.next_record(&mut record) {
                Ok(true) => {}
                Ok(false) => {
                    log.bytes_dropped = data_end.saturating_sub(reader.valid_end_offset());
                    if log.bytes_dropped > 0 {
                        log.damage =
                            Some(format!("a torn tail at byte {}", reader.valid_end_offset()));
                    }
                    break;
                }
                Err(Error::Corruption { offset, detail, .. }) => {
                    log.damage = Some(format!("damaged at byte {offset}: {detail}"));
                    log.bytes_dropped = data_end.saturating_sub(offset);
                    break;
                }
                Err(e) => return Err(e),
            }
            if std::mem::take(&mut first) {
                refused = foreign(ctx, number, &record);
                if refused.is_some() {
                    break;
                }
                if matches!(LogHeader::decode(&record), Ok(Some(_))) {
                    continue;
                }
            }
            match WriteBatch::from_data(std::mem::take(&mut record)) {
                Ok(batch) => {
                    let seq = batch.sequence();
                    for (i, e) in batch.iter().enumerate() {
                        let s = seq + i as u64;
                        if s > flushed_seq && number >= floor {
                            apply(e.key, s, e.kind, e.value);
                            log.entries += 1;
                            out.last_seq = out.last_seq.max(s);
                        } else {
                            log.skipped += 1;
                        }
                    }
                }
                Err(d) => {
                    log.damage = Some(format!("damaged at byte {at}: bad write batch: {d}"));
                    log.bytes_dropped = data_end.saturating_sub(at);
                    break;
                }
            }
        }
        match refused {
            Some(why) => out.set_aside.push((name, why)),
            None => {
                out.logs.push(log);
                out.converted.push(name);
            }
        }
    }
    // Nothing left to replay: the next open starts a new log after every number in use.
    edit.log_number = Some(next_file);
    WalRecord::Retired(next_file).push(edit);
    Ok(out)
}
