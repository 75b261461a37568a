//! Inline placement (LevelDB): the tree stores values as written, and the durability log is
//! the write-ahead log, one `NNNNNN.log` file per memtable (`docs/format/wal.md`).
//!
//! Thread-safety: the log writer sits behind a mutex that only the write leader (`append`,
//! `freeze`) and `sync` take; resolution touches no state.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::{
    Apply, LogPosition, PersistedState, PlacementChecked, RecoverContext, ValueStore, VerifyContext,
};
use crate::env::{Env, ReadCause, WriteCause};
use crate::error::{Error, Result};
use crate::filename::{FileKind, parse_file_name};
use crate::key::{SeqNo, ValueKind};
use crate::manifest::VersionEdit;
use crate::wal::{LogReader, LogWriter, WriteBatch, log_file_name};

/// The open WAL.
struct OpenLog {
    log: LogWriter,
}

/// See the module documentation.
pub struct InlinePlacement {
    env: Env,
    dir: PathBuf,
    file_numbers: Arc<AtomicU64>,
    /// `None` until recovery opened the first log.
    log: Mutex<Option<OpenLog>>,
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
        }
    }

    /// Create log `number` and make its directory entry durable.
    fn create_log(&self, number: u64) -> Result<LogWriter> {
        let path = self.dir.join(log_file_name(number));
        let file = self.env.create(&path, WriteCause::Wal)?;
        self.env.fs().sync_dir(&self.dir)?;
        Ok(LogWriter::new(file))
    }

    /// Replay one log. In the `newest` log, pages lost from the unsynced tail end the log
    /// instead of being reported as damage.
    fn replay_log(&self, number: u64, newest: bool, apply: &mut Apply<'_>) -> Result<SeqNo> {
        let path = self.dir.join(log_file_name(number));
        let file = self.env.open(&path)?;
        let mut reader = LogReader::new(file, ReadCause::Recovery).tolerate_lost_pages(newest);
        let mut record = Vec::new();
        let mut last = 0;
        loop {
            let offset = reader.valid_end_offset();
            if !reader.next_record(&mut record)? {
                return Ok(last);
            }
            let batch = WriteBatch::from_data(std::mem::take(&mut record)).map_err(|d| {
                Error::corruption(&path, offset, format!("bad write batch in log: {d}"))
            })?;
            let seq = batch.sequence();
            for (i, e) in batch.iter().enumerate() {
                apply(e.key, seq + i as u64, e.kind, e.value);
            }
            if !batch.is_empty() {
                last = last.max(seq + batch.len() as u64 - 1);
            }
        }
    }
}

impl ValueStore for InlinePlacement {
    fn name(&self) -> &'static str {
        "inline"
    }

    fn recover(
        &self,
        ctx: &RecoverContext<'_>,
        apply: &mut Apply<'_>,
        edit: &mut VersionEdit,
    ) -> Result<SeqNo> {
        let fs = self.env.fs();
        let mut logs: Vec<u64> = ctx
            .names
            .iter()
            .filter_map(|n| match parse_file_name(n) {
                Some(FileKind::Log(n)) if n >= ctx.state.log_number => Some(n),
                _ => None,
            })
            .collect();
        logs.sort_unstable();
        // Only the newest log holding data can have an unsynced tail: a log is synced in
        // full before the next one is started.
        let mut newest = None;
        for &number in &logs {
            if fs.file_size(&self.dir.join(log_file_name(number)))? > 0 {
                newest = Some(number);
            }
        }
        let mut last = 0;
        for &number in &logs {
            let is_newest = newest.is_none_or(|n| number >= n);
            last = last.max(self.replay_log(number, is_newest, apply)?);
        }
        // A fresh log for new writes; the edit retires every replayed log.
        let number = self.file_numbers.fetch_add(1, Ordering::Relaxed);
        let log = self.create_log(number)?;
        *self.log.lock() = Some(OpenLog { log });
        edit.log_number = Some(number);
        Ok(last)
    }

    fn stores_entries_as_written(&self) -> bool {
        true
    }

    fn append(&self, batch: &WriteBatch, sync: bool, apply: &mut Apply<'_>) -> Result<()> {
        {
            let mut guard = self.log.lock();
            let open = guard.as_mut().ok_or(Error::Closed)?;
            open.log.add_record(batch.data())?;
            open.log.flush()?;
            if sync {
                open.log.sync()?;
            }
        }
        let seq = batch.sequence();
        for (i, e) in batch.iter().enumerate() {
            apply(e.key, seq + i as u64, e.kind, e.value);
        }
        Ok(())
    }

    /// Start a new log: the frozen memtable's writes are exactly the old log's.
    ///
    /// The old log is synced first: a later synced write in the new log must never survive
    /// a crash that loses an earlier unsynced write in the old one (recovery yields a prefix).
    fn freeze(&self) -> Result<LogPosition> {
        let mut guard = self.log.lock();
        let open = guard.as_mut().ok_or(Error::Closed)?;
        open.log.sync()?;
        let number = self.file_numbers.fetch_add(1, Ordering::Relaxed);
        open.log = self.create_log(number)?;
        Ok(LogPosition {
            file: number,
            offset: 0,
        })
    }

    fn flushed(&self, end: LogPosition, edit: &mut VersionEdit) -> Result<()> {
        // The tables hold the values; nothing else must be made durable.
        edit.log_number = Some(end.file);
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let mut guard = self.log.lock();
        match guard.as_mut() {
            Some(open) => open.log.flush().and_then(|()| open.log.sync()),
            None => Ok(()),
        }
    }

    fn delete_obsolete(&self, names: &[String], state: &PersistedState) {
        for name in names {
            if let Some(FileKind::Log(n)) = parse_file_name(name)
                && n < state.log_number
            {
                let _ = self.env.fs().remove_file(&self.dir.join(name));
            }
        }
    }

    /// A store that keeps values inline holds no pointer to a value elsewhere: a live table
    /// that counts one is damaged (or written by another design).
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
        Ok(PlacementChecked::default())
    }

    fn resolve<'a>(&self, _key: &[u8], kind: ValueKind, stored: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        match kind {
            ValueKind::Value => Ok(Cow::Borrowed(stored)),
            other => Err(Error::Unsupported(format!(
                "found a {other:?} entry, but this store keeps values inline"
            ))),
        }
    }
}
