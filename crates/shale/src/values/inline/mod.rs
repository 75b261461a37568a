//! Inline placement (LevelDB): the tree stores values as written, and the durability log is
//! the write-ahead log, one `NNNNNN.log` file per memtable (`docs/format/wal.md`).
//!
//! Thread-safety: the log writer sits behind a mutex that only the write leader (`append`,
//! `freeze`) and `sync` take; resolution touches no state.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::{
    Apply, LogFile, LogFileTake, LogPosition, PersistedState, PlacementChecked, PlacementStats,
    RecoverContext, SalvageContext, Salvaged, ValueBytes, ValueStore, VerifyContext,
};
use crate::env::{Env, WriteCause};
use crate::error::{Error, Result};
use crate::filename::{FileKind, parse_file_name};
use crate::key::{SeqNo, ValueKind};
use crate::manifest::{AxisState, VersionEdit};
use crate::wal::{LogWriter, WriteBatch, log_file_name};

mod header;
mod replay;
mod salvage;
mod state;

use header::LogHeader;
use replay::{ReplayInput, Replayed, replay};
use state::{WalRecord, WalState};

/// The open WAL.
struct OpenLog {
    log: LogWriter,
    /// Its number.
    number: u64,
    /// The store's id, written in the header of every new log.
    store_id: u64,
    /// Logs closed at a memtable switch that a committed edit may not have retired yet,
    /// with the length each was synced at (recorded as sealed by the next flush's edit).
    closed: Vec<(u64, u64)>,
    /// Set by `close`: the log synced in full at this length, recorded by the next edit.
    seal: Option<(u64, u64)>,
}

/// See the module documentation.
pub struct InlinePlacement {
    env: Env,
    dir: PathBuf,
    file_numbers: Arc<AtomicU64>,
    /// `None` until recovery opened the first log.
    log: Mutex<Option<OpenLog>>,
    /// Bytes of the logs recovery dropped (torn tails, or what the recovery mode cut).
    dropped: AtomicU64,
    /// Logs recovery read, and their bytes (for `verify`).
    replayed_logs: AtomicU64,
    replayed_bytes: AtomicU64,
    /// Copy small appends into a map of the log (`Options::mmap_log_writes`).
    mmap_log_writes: bool,
}

impl std::fmt::Debug for InlinePlacement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlinePlacement")
            .field("dir", &self.dir)
            .finish()
    }
}

impl InlinePlacement {
    /// A placement for the store in `dir`; [`ValueStore::recover`] opens its log.
    pub fn new(env: Env, dir: &Path, file_numbers: Arc<AtomicU64>) -> InlinePlacement {
        InlinePlacement {
            env,
            dir: dir.to_path_buf(),
            file_numbers,
            log: Mutex::new(None),
            dropped: AtomicU64::new(0),
            replayed_logs: AtomicU64::new(0),
            replayed_bytes: AtomicU64::new(0),
            mmap_log_writes: false,
        }
    }

    /// Copy small appends into a writable map of each log (`Options::mmap_log_writes`,
    /// [`Env::create_log_with`]).
    pub fn with_mmap_log_writes(mut self, mapped: bool) -> InlinePlacement {
        self.mmap_log_writes = mapped;
        self
    }

    /// Replay the logs from the MANIFEST's log number on through `apply` and count what
    /// was read and dropped.
    fn replay_logs(&self, ctx: &RecoverContext<'_>, apply: &mut Apply<'_>) -> Result<Replayed> {
        let replayed = replay(
            &ReplayInput {
                env: &self.env,
                dir: &self.dir,
                names: ctx.names,
                floor: ctx.state.log_number,
                state: WalState::of(ctx.state.state.as_ref()),
                store_id: ctx.store_id,
                mode: ctx.wal_recovery_mode,
            },
            apply,
        )?;
        self.dropped.fetch_add(replayed.dropped, Ordering::Relaxed);
        self.replayed_logs
            .fetch_add(replayed.logs as u64, Ordering::Relaxed);
        self.replayed_bytes
            .fetch_add(replayed.bytes, Ordering::Relaxed);
        Ok(replayed)
    }

    /// Create the log `header` names, write the header and make its directory entry
    /// durable.
    fn create_log(&self, header: &LogHeader) -> Result<LogWriter> {
        let path = self.dir.join(log_file_name(header.number));
        // A log file: space reserved ahead of the writer (`Env::create_log`), whose zeros
        // replay reads as the log's end.
        let file = self
            .env
            .create_log_with(&path, WriteCause::Wal, self.mmap_log_writes)?;
        let mut log = LogWriter::new(file);
        log.add_record(&header.encode())?;
        log.flush()?;
        self.env.fs().sync_dir(&self.dir)?;
        Ok(log)
    }
}

impl ValueStore for InlinePlacement {
    fn name(&self) -> &'static str {
        "inline"
    }

    fn empty_state(&self) -> Box<dyn AxisState> {
        Box::new(WalState::default())
    }

    fn recover(
        &self,
        ctx: &RecoverContext<'_>,
        apply: &mut Apply<'_>,
        edit: &mut VersionEdit,
    ) -> Result<SeqNo> {
        let replayed = self.replay_logs(ctx, apply)?;
        // A fresh log for new writes, chained to the newest one; the edit retires every
        // replayed log.
        let number = self.file_numbers.fetch_add(1, Ordering::Relaxed);
        let (prev, prev_len) = replayed.newest.unwrap_or((0, 0));
        let log = self.create_log(&LogHeader {
            store_id: ctx.store_id,
            number,
            prev,
            prev_len,
        })?;
        *self.log.lock() = Some(OpenLog {
            log,
            number,
            store_id: ctx.store_id,
            closed: Vec::new(),
            seal: None,
        });
        edit.log_number = Some(number);
        WalRecord::Retired(number).push(edit);
        WalRecord::Live(number).push(edit);
        Ok(replayed.last_seq)
    }

    /// The same replay; no log is opened, so the placement takes no writes.
    fn recover_read_only(&self, ctx: &RecoverContext<'_>, apply: &mut Apply<'_>) -> Result<SeqNo> {
        Ok(self.replay_logs(ctx, apply)?.last_seq)
    }

    /// The memory component stores the entries as written: the writers insert them.
    fn append(&self, batch: &WriteBatch, sync: bool) -> Result<Option<WriteBatch>> {
        let mut guard = self.log.lock();
        // Not `ok_or(Error::Closed)`, which builds and drops an error on every write.
        let Some(open) = guard.as_mut() else {
            return Err(Error::Closed);
        };
        open.log.add_record_and_flush(batch.data())?;
        if sync {
            open.log.sync()?;
        }
        Ok(None)
    }

    /// Start a new log: the frozen memtable's writes are exactly the old log's.
    ///
    /// The old log is synced first: a later synced write in the new log must never survive
    /// a crash that loses an earlier unsynced write in the old one (recovery yields a prefix).
    ///
    /// The new log's header records the old one's synced length: from then on the old log
    /// is known complete through it.
    fn freeze(&self) -> Result<LogPosition> {
        let mut guard = self.log.lock();
        let open = guard.as_mut().ok_or(Error::Closed)?;
        open.log.sync()?;
        let number = self.file_numbers.fetch_add(1, Ordering::Relaxed);
        let header = LogHeader {
            store_id: open.store_id,
            number,
            prev: open.number,
            prev_len: open.log.len(),
        };
        open.log = self.create_log(&header)?;
        open.closed.push((header.prev, header.prev_len));
        open.number = number;
        Ok(LogPosition {
            file: number,
            offset: 0,
        })
    }

    /// The tables hold the values; nothing else must be made durable. The edit records
    /// the logs still live: the ones closed since `end.file` began, sealed at their synced
    /// lengths, and the open one.
    fn flushed(&self, end: LogPosition, edit: &mut VersionEdit) -> Result<()> {
        edit.log_number = Some(end.file);
        WalRecord::Retired(end.file).push(edit);
        let mut guard = self.log.lock();
        if let Some(open) = guard.as_mut() {
            open.closed.retain(|&(n, _)| n >= end.file);
            for &(n, len) in &open.closed {
                WalRecord::Sealed(n, len).push(edit);
            }
            WalRecord::Live(open.number).push(edit);
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let mut guard = self.log.lock();
        match guard.as_mut() {
            Some(open) => open.log.flush().and_then(|()| open.log.sync()),
            None => Ok(()),
        }
    }

    /// Sync the log and seal it at its length (recorded by the closing edit): the next
    /// open then knows the whole log was written, and reports any damage in it.
    fn close(&self) -> Result<()> {
        let mut guard = self.log.lock();
        if let Some(open) = guard.as_mut() {
            open.log.flush()?;
            open.log.sync()?;
            open.seal = Some((open.number, open.log.len()));
        }
        Ok(())
    }

    fn note_edit(&self, edit: &mut VersionEdit) {
        if let Some((n, len)) = self.log.lock().as_mut().and_then(|o| o.seal.take()) {
            WalRecord::Sealed(n, len).push(edit);
        }
    }

    fn stats(&self) -> PlacementStats {
        PlacementStats {
            wal_bytes_dropped: self.dropped.load(Ordering::Relaxed),
            ..PlacementStats::default()
        }
    }

    /// Deletes the logs below the log number that are this store's: a log whose header
    /// names another store (copied in under a number this store retired) is left alone
    /// (issue 17: files Shale does not own are never deleted), and so is one that cannot be
    /// read now. A log with no header (crash debris, or written before store ids) is the
    /// store's.
    fn delete_obsolete(&self, names: &[String], state: &PersistedState) {
        let ours = self.log.lock().as_ref().map(|o| o.store_id);
        for name in names {
            if let Some(FileKind::Log(n)) = parse_file_name(name)
                && n < state.log_number
            {
                match salvage::header(&self.env, &self.dir, n) {
                    Ok(Some(h)) if Some(h.store_id) != ours => continue,
                    Err(_) => continue,
                    Ok(_) => {}
                }
                let _ = self.env.fs().remove_file(&self.dir.join(name));
            }
        }
    }

    /// The logs from the MANIFEST's log number through the open one: the closed ones whole
    /// (copied: a log is small and is never linked), the open one through what was appended.
    fn checkpoint_files(&self, names: &[String], state: &PersistedState) -> Result<Vec<LogFile>> {
        let guard = self.log.lock();
        let open = guard.as_ref().ok_or(Error::Closed)?;
        let mut out = Vec::new();
        for name in names {
            if let Some(FileKind::Log(n)) = parse_file_name(name)
                && n >= state.log_number
                && n < open.number
            {
                let size = self.env.fs().file_size(&self.dir.join(name))?;
                out.push(LogFile {
                    name: name.clone(),
                    take: LogFileTake::Prefix(size),
                });
            }
        }
        out.push(LogFile {
            name: log_file_name(open.number),
            take: LogFileTake::Prefix(open.log.len()),
        });
        Ok(out)
    }

    /// A store that keeps values inline holds no pointer to a value elsewhere: a live table
    /// that counts one is damaged (or written by another design). The logs were checked by
    /// the recovery before this; what it read and dropped is reported.
    fn verify(&self, ctx: &VerifyContext<'_>) -> Result<PlacementChecked> {
        for t in ctx.tables {
            let n = t.properties().num_value_pointers;
            if n > 0 {
                return Err(Error::corruption(
                    t.path(),
                    0,
                    format!(
                        "the table holds {n} value pointers, but this store keeps values inline"
                    ),
                ));
            }
        }
        Ok(PlacementChecked {
            logs: self.replayed_logs.load(Ordering::Relaxed) as usize,
            bytes: self.replayed_bytes.load(Ordering::Relaxed),
            log_bytes_dropped: self.dropped.load(Ordering::Relaxed),
            ..PlacementChecked::default()
        })
    }

    fn salvage_store_id(&self, env: &Env, dir: &Path, names: &[String]) -> Option<u64> {
        salvage::store_id(env, dir, names)
    }

    fn salvage_check(&self, ctx: &SalvageContext<'_>) -> Result<Vec<(usize, String)>> {
        salvage::check(ctx)
    }

    fn salvage(
        &self,
        ctx: &SalvageContext<'_>,
        flushed_seq: SeqNo,
        apply: &mut Apply<'_>,
        edit: &mut VersionEdit,
    ) -> Result<Salvaged> {
        let next = self.file_numbers.fetch_add(1, Ordering::Relaxed);
        salvage::salvage(ctx, next, flushed_seq, apply, edit)
    }

    fn resolve<'a>(
        &self,
        _key: &[u8],
        kind: ValueKind,
        stored: &'a [u8],
        _cause: crate::env::ReadCause,
        _fill: crate::values::CacheFill,
    ) -> Result<ValueBytes<'a>> {
        match kind {
            ValueKind::Value => Ok(ValueBytes::Borrowed(stored)),
            other => Err(Error::Unsupported(format!(
                "found a {other:?} entry, but this store keeps values inline"
            ))),
        }
    }
}
