//! Checkpoints: a consistent copy of an open store in a new directory, taken while writes
//! continue (RocksDB's `Checkpoint::CreateCheckpoint`). The procedure and why it is
//! consistent are in `docs/architecture.md` ("Checkpoints").
//!
//! In short: under the write lock (no log append runs) and the MANIFEST lock (no commit
//! runs), the log is synced and the state is *captured*: the current version, the live
//! MANIFEST's number and length, and the log files the placement says the state needs with
//! how much of each. Those files are pinned against the obsolete-file sweep (tables by the
//! version the checkpoint holds, the MANIFEST and the logs by name in [`Pins`]) and the
//! locks are released. The files are then hard-linked (tables, sealed segments) or copied
//! (the MANIFEST and the logs, each through its captured length; tables of a format that
//! appends, through their committed size) into a staging directory,
//! synced, `CURRENT` is written last, and the staging directory is renamed to the
//! checkpoint's name: the copy is what the store would recover after a crash at the moment
//! of the capture with every appended byte synced.

use std::collections::HashMap;
use std::path::Path;

use parking_lot::Mutex;

use super::{Db, DbInner};
use crate::env::{Env, ReadCause, WriteCause};
use crate::error::{Error, Result};
use crate::filename::{
    CURRENT_FILE, LOCK_FILE, manifest_file_name, parse_file_name, table_file_name,
};
use crate::key::SeqNo;
use crate::values::{LogFile, LogFileTake};

/// What [`Db::checkpoint`] made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// Files hard-linked to the store's own (tables and sealed value-log segments, where the
    /// file system allows it).
    pub files_linked: usize,
    /// Files copied (the MANIFEST, the logs, and immutable files that could not be linked).
    pub files_copied: usize,
    /// Bytes copied.
    pub bytes_copied: u64,
    /// The newest sequence number the checkpoint holds: every write sequenced at or before
    /// it, and none after.
    pub sequence: SeqNo,
}

/// File names a checkpoint in progress still copies: the obsolete-file sweep leaves them.
/// Counted, so that two checkpoints may pin the same file.
#[derive(Debug, Default)]
pub(crate) struct Pins {
    names: Mutex<HashMap<String, usize>>,
}

impl Pins {
    /// Remove from `names` every pinned file.
    pub(crate) fn retain_unpinned(&self, names: &mut Vec<String>) {
        let pins = self.names.lock();
        if !pins.is_empty() {
            names.retain(|n| !pins.contains_key(n));
        }
    }

    fn pin(&self, names: &[String]) -> PinGuard<'_> {
        let mut pins = self.names.lock();
        for n in names {
            *pins.entry(n.clone()).or_insert(0) += 1;
        }
        PinGuard {
            pins: self,
            names: names.to_vec(),
        }
    }
}

/// Unpins its names when dropped (also when the checkpoint fails).
struct PinGuard<'a> {
    pins: &'a Pins,
    names: Vec<String>,
}

impl Drop for PinGuard<'_> {
    fn drop(&mut self) {
        let mut pins = self.pins.names.lock();
        for n in &self.names {
            if let Some(c) = pins.get_mut(n) {
                *c -= 1;
                if *c == 0 {
                    pins.remove(n);
                }
            }
        }
    }
}

impl Db {
    /// Make a consistent copy of the store in the new directory `dir` (RocksDB's
    /// `Checkpoint::CreateCheckpoint`), while writes continue: it holds every write
    /// sequenced before the call took its snapshot of the store and none after, and opens
    /// on its own with [`Db::open`], [`Db::open_read_only`] or [`crate::load_options`].
    /// Tables and sealed value-log segments are hard-linked where the file system allows
    /// (on the same file system; copied otherwise), the MANIFEST and the logs are copied
    /// through the length that belongs to the snapshot, and everything is synced.
    ///
    /// The copy is built in `dir` with `.checkpoint-tmp` added to its name, `CURRENT` is
    /// written last, and the directory is renamed to `dir` at the end: `dir` appears
    /// complete or not at all. A staging directory left by a checkpoint that did not
    /// finish (an error, or the process killed) holds no `CURRENT` (or a whole copy); the
    /// next checkpoint to `dir` empties and reuses it. The file system must rename
    /// directories (the POSIX and the in-memory ones do).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `dir` exists, or its staging directory holds files no
    /// checkpoint writes; [`Error::ReadOnlyOpen`] on a read-only handle;
    /// [`Error::ReadOnly`] after an earlier failure; [`Error::Io`] from the copy.
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<CheckpointInfo> {
        create(&self.inner(), dir.as_ref())
    }
}

/// The state a checkpoint copies, captured under the write and MANIFEST locks.
struct Capture<'a> {
    version: std::sync::Arc<crate::version::Version>,
    manifest_number: u64,
    manifest_len: u64,
    logs: Vec<LogFile>,
    sequence: SeqNo,
    _pins: PinGuard<'a>,
}

/// The suffix of the directory a checkpoint is built in before it is renamed to its name.
pub(crate) const STAGING_SUFFIX: &str = ".checkpoint-tmp";

fn create(inner: &DbInner, dir: &Path) -> Result<CheckpointInfo> {
    inner.check_writable()?;
    let env = &inner.env;
    let fs = env.fs();
    let staging = staging_dir(dir)?;
    if fs.exists(dir)? {
        return Err(Error::InvalidArgument(format!(
            "the checkpoint directory {} already exists (a checkpoint goes into a new directory)",
            dir.display()
        )));
    }
    let _building = Building::enter(&staging)?;
    if fs.exists(&staging)? {
        clear_staging(env, &staging)?;
    } else {
        fs.create_dir_all(&staging)?;
    }
    let capture = capture(inner)?;
    let mut info = CheckpointInfo {
        sequence: capture.sequence,
        ..CheckpointInfo::default()
    };
    // A table that may still grow (an appendable format) is copied through the size the
    // captured version commits: a hard link would share later appends (and the cut of an
    // uncommitted tail) between the store and the checkpoint.
    let appendable = inner.tables.format().appendable();
    for (_, f) in capture.version.files() {
        let name = table_file_name(f.number);
        let (from, to) = (inner.dir.join(&name), staging.join(&name));
        if appendable {
            copy(env, &from, &to, Some(f.size), &mut info)?;
        } else {
            link_or_copy(env, &from, &to, &mut info)?;
        }
    }
    for log in &capture.logs {
        let (from, to) = (inner.dir.join(&log.name), staging.join(&log.name));
        match log.take {
            LogFileTake::Whole => link_or_copy(env, &from, &to, &mut info)?,
            LogFileTake::Prefix(n) => copy(env, &from, &to, Some(n), &mut info)?,
        }
    }
    let manifest = manifest_file_name(capture.manifest_number);
    copy(
        env,
        &inner.dir.join(&manifest),
        &staging.join(&manifest),
        Some(capture.manifest_len),
        &mut info,
    )?;
    // Every file is synced (copies) or was durable in the store (links: the capture synced
    // the log; tables and the MANIFEST are synced before they are committed); their
    // directory entries become durable here, before CURRENT names the MANIFEST (which
    // syncs the directory again).
    fs.sync_dir(&staging)?;
    crate::manifest::write_current(env, &staging, capture.manifest_number)?;
    drop(capture);
    fs.rename(&staging, dir)?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs.sync_dir(parent)?;
    }
    Ok(info)
}

/// Staging directories a checkpoint of this process is building: a second checkpoint into
/// the same directory would empty the first one's (as a leftover) while it copies.
static BUILDING: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

/// A staging directory registered in [`BUILDING`] until dropped.
struct Building(std::path::PathBuf);

impl Building {
    fn enter(staging: &Path) -> Result<Building> {
        let mut building = BUILDING.lock();
        if building.iter().any(|b| b == staging) {
            return Err(Error::InvalidArgument(format!(
                "a checkpoint into {} is already being built",
                staging.display()
            )));
        }
        building.push(staging.to_path_buf());
        Ok(Building(staging.to_path_buf()))
    }
}

impl Drop for Building {
    fn drop(&mut self) {
        BUILDING.lock().retain(|b| *b != self.0);
    }
}

/// `dir` with [`STAGING_SUFFIX`] added to its last component.
fn staging_dir(dir: &Path) -> Result<std::path::PathBuf> {
    let Some(name) = dir.file_name() else {
        return Err(Error::InvalidArgument(format!(
            "{} cannot be a checkpoint directory: it has no name of its own",
            dir.display()
        )));
    };
    let mut staged = name.to_os_string();
    staged.push(STAGING_SUFFIX);
    Ok(dir.with_file_name(staged))
}

/// Empty the staging directory a checkpoint that did not finish left (the process was
/// killed, or the copy failed): only if it holds nothing but store files, which that
/// checkpoint wrote (and a `LOCK` an attempt to open it left); anything else is the
/// user's, and the checkpoint is refused.
fn clear_staging(env: &Env, staging: &Path) -> Result<()> {
    let names = env.fs().list_dir(staging)?;
    if let Some(other) = names
        .iter()
        .find(|n| ![CURRENT_FILE, LOCK_FILE].contains(&n.as_str()) && parse_file_name(n).is_none())
    {
        return Err(Error::InvalidArgument(format!(
            "{} exists and holds {other}, which no checkpoint writes: remove it to take a \
             checkpoint here",
            staging.display()
        )));
    }
    // CURRENT first: the directory is never a store while it is emptied.
    let mut names = names;
    names.sort_by_key(|n| n.as_str() != CURRENT_FILE);
    for n in names {
        env.fs().remove_file(&staging.join(n))?;
    }
    env.fs().sync_dir(staging)
}

/// Capture the state to copy and pin its files (see the module documentation).
fn capture(inner: &DbInner) -> Result<Capture<'_>> {
    let wal = inner.wal.lock();
    inner.check_writable()?;
    // Every logged write becomes durable: linked files must hold what the copy needs
    // without a sync of their own, and a sync failure makes the store read-only as any
    // failed log sync does.
    inner.values.sync().inspect_err(|e| inner.set_error(e))?;
    let versions = inner.versions.lock();
    let manifest_len = versions.manifest_len().ok_or_else(|| {
        Error::InvalidArgument("the store has no MANIFEST open to checkpoint".into())
    })?;
    let manifest_number = versions.manifest_number();
    let names = inner.env.fs().list_dir(&inner.dir)?;
    let logs = inner
        .values
        .checkpoint_files(&names, &versions.placement())?;
    let mut pinned: Vec<String> = logs.iter().map(|l| l.name.clone()).collect();
    pinned.push(manifest_file_name(manifest_number));
    Ok(Capture {
        version: versions.current(),
        manifest_number,
        manifest_len,
        logs,
        sequence: wal.last_assigned,
        _pins: inner.pins.pin(&pinned),
    })
}

/// Hard-link `from` to `to`; copy it whole where the file system cannot link (another file
/// system, or none with links).
fn link_or_copy(env: &Env, from: &Path, to: &Path, info: &mut CheckpointInfo) -> Result<()> {
    match env.fs().hard_link(from, to) {
        Ok(()) => {
            info.files_linked += 1;
            Ok(())
        }
        Err(_) => copy(env, from, to, None, info),
    }
}

/// Copy the first `len` bytes of `from` (all of it for `None`) to the new file `to`, synced.
fn copy(
    env: &Env,
    from: &Path,
    to: &Path,
    len: Option<u64>,
    info: &mut CheckpointInfo,
) -> Result<()> {
    const CHUNK: u64 = 1 << 20;
    let src = env.open(from)?;
    let len = len.unwrap_or(src.len());
    if src.len() < len {
        return Err(Error::corruption(
            from,
            src.len(),
            format!(
                "the file holds {} bytes, but the checkpoint's state needs {len}",
                src.len()
            ),
        ));
    }
    let mut out = env.create(to, WriteCause::Other)?;
    let mut at = 0;
    while at < len {
        let n = CHUNK.min(len - at);
        let buf = src.read_at(at, n as usize, ReadCause::Other)?;
        out.append(&buf)?;
        at += n;
    }
    out.flush()?;
    out.sync()?;
    out.finish()?;
    info.files_copied += 1;
    info.bytes_copied += len;
    Ok(())
}
