//! Read-only open: the recovery of `open.rs` with nothing written, beside a running writer.
//!
//! A read-only handle reads CURRENT, replays the MANIFEST, checks that every table it lists
//! is present, and replays the durability log through the placement's
//! [`crate::values::ValueStore::recover_read_only`] (the same checks as a read-write open)
//! into memtables that it keeps, frozen, instead of writing them out as tables. It takes
//! no lock, starts no thread, and reaches the store through [`ReadOnlyFs`], a file system
//! that refuses every change: no MANIFEST, log, segment or `LOCK` is created, nothing is
//! removed.
//!
//! # Beside a writer in another process
//!
//! The writer commits flushes and compactions and then deletes the files they made
//! obsolete (tables, logs, value-log segments, older MANIFESTs); it deletes a file only
//! after the commit that stops using it, and every commit appends to the MANIFEST or makes
//! CURRENT name a new one. So an open brackets its recovery between two [`Mark`]s:
//! - the same commit mark before and after: no commit happened while the store was read,
//!   so every file recovery read belongs to the state the MANIFEST described (plus log
//!   writes appended since, a newer prefix of the history), and the open stands;
//! - a failure (corruption or I/O) with any mark changed (a commit, or a log switch, which
//!   creates a log and cuts the old one's reserved tail without a commit) may be the
//!   writer's doing: the open starts again, at most [`ATTEMPTS`] times;
//! - a failure with nothing changed is the store's: reported as it is; corruption in a log
//!   only when the next attempt finds it at the same place (an append into a log's reserved
//!   space changes no size, and a scan can meet a record the writer had not finished and,
//!   looking further, whole ones it wrote since).
//!
//! After the open the handle's version never changes, and it keeps its files: every table
//! of the version is opened at open time (when there are at most `max_open_files`; they
//! stay in the table cache, which nothing else fills) and every live value-log segment
//! too; the WAL is in memory. A file the writer deletes afterwards stays readable through
//! the open handle (POSIX keeps an unlinked file's data while a descriptor is open). With
//! more tables than `max_open_files`, tables are opened on first use, as a read-write store
//! does, and one the writer has deleted since fails that read with an error saying so;
//! never with another version's data (file numbers are never reused).
//!
//! RocksDB's `OpenForReadOnly` is the model (a static view, no lock, WAL replayed into
//! memory); RocksDB keeps such a view's files only with `max_open_files = -1`, and
//! LevelDB has no read-only open at all (every open takes `LOCK` and writes a MANIFEST).

use std::path::Path;
use std::sync::Arc;

use super::store_files::Presence;
use super::{DbInner, Parts, Recovered, Wiring};
use crate::env::{Env, FileLock, FileSystem, RandomAccessFile, WritableFile, WriteCause};
use crate::error::{Error, Result};
use crate::filename::{FileKind, parse_file_name};
use crate::manifest;
use crate::memory::MemTable;
use crate::options::Options;
use crate::table::TableId;
use crate::table::cache::TableCache;
use crate::values::RecoverContext;

/// Opens tried before giving up on a store that keeps changing while it is read.
pub(crate) const ATTEMPTS: usize = 16;

/// Open the store in `dir` read-only (see the module documentation).
pub(crate) fn open(dir: &Path, options: Options, wiring: &Wiring) -> Result<Arc<DbInner>> {
    open_marked(dir, options, wiring).map(|(inner, _)| inner)
}

/// [`open`], also returning the mark the store had when the open's recovery ended.
pub(crate) fn open_marked(
    dir: &Path,
    options: Options,
    wiring: &Wiring,
) -> Result<(Arc<DbInner>, Mark)> {
    open_after(dir, options, wiring, None)
}

/// [`open_marked`] for a secondary handle's catch-up (`db/secondary.rs`): the new view
/// takes over from `prev`, the view it replaces, the tables `prev` holds open that are
/// still in the new version and the block cache, when `prev` is of the same store (the
/// same store id; file numbers are never reused within a store, so a table or block of a
/// number is the same bytes in both views).
pub(crate) fn open_after(
    dir: &Path,
    options: Options,
    wiring: &Wiring,
    prev: Option<&DbInner>,
) -> Result<(Arc<DbInner>, Mark)> {
    options.validate()?;
    let mut options = options;
    options.env = Env::new(Arc::new(ReadOnlyFs {
        inner: Arc::clone(options.env.fs()),
        dir: dir.to_path_buf(),
    }));
    if !options.env.fs().exists(dir)? {
        return Err(no_store(dir));
    }
    let mut changed: Option<Error> = None;
    for _ in 0..ATTEMPTS {
        let before = Mark::of(&options.env, dir);
        let result = recover(dir, &options, wiring, prev);
        let after = Mark::of(&options.env, dir);
        match result {
            Ok(inner) if after.same_commit(&before) => return Ok((Arc::new(inner), after)),
            Ok(_) => changed = None,
            // What a change under the open can cause: a file gone or cut, a log whose
            // chain or length no longer fits the MANIFEST read before it, or a record the
            // writer was appending when the log was scanned and had finished, with more
            // after it, when the scan looked further (appends into a log's reserved space
            // change no size). Damage on disk repeats the same error with nothing changed.
            Err(e @ (Error::Corruption { .. } | Error::Io { .. }))
                if after != before
                    || (in_a_log(&e) && changed.as_ref().is_none_or(|c| !same_site(c, &e))) =>
            {
                changed = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    let last = changed.map_or(String::new(), |e| format!("; the last attempt failed: {e}"));
    Err(Error::Io {
        op: "read-only open",
        path: Some(dir.to_path_buf()),
        source: std::io::Error::other(format!(
            "the store changed while it was being read, {ATTEMPTS} times in a row (a writer \
             in another process committed flushes or compactions meanwhile){last}"
        )),
    })
}

/// Whether `e` is corruption in a log (WAL or value-log segment): the only files a writer
/// appends to, so the only ones a scan can see change under it with no size changed.
fn in_a_log(e: &Error) -> bool {
    let Error::Corruption { file, .. } = e else {
        return false;
    };
    let kind = file
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_file_name);
    matches!(kind, Some(FileKind::Log(_) | FileKind::Segment(_)))
}

/// Whether two failures are the same: the same file and offset for corruption (the text
/// may differ, e.g. a store id drawn afresh for a MANIFEST without one), the same file and
/// kind for I/O.
fn same_site(a: &Error, b: &Error) -> bool {
    match (a, b) {
        (
            Error::Corruption {
                file: f, offset: o, ..
            },
            Error::Corruption {
                file: g, offset: p, ..
            },
        ) => f == g && o == p,
        (
            Error::Io {
                path: f, source: s, ..
            },
            Error::Io {
                path: g, source: t, ..
            },
        ) => f == g && s.kind() == t.kind(),
        _ => false,
    }
}

fn no_store(dir: &Path) -> Error {
    Error::InvalidArgument(format!(
        "no store at {}: CURRENT is missing (a read-only open never creates a store)",
        dir.display()
    ))
}

/// What a writer changes: the commit point (CURRENT's MANIFEST and its length) and the
/// store's files with their sizes. Read errors (a file deleted between the listing and
/// its size) leave a value that differs from any real one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    commit: Option<(u64, u64)>,
    files: Vec<(String, Option<u64>)>,
}

impl Mark {
    /// The mark of the store in `dir` now.
    pub(crate) fn of(env: &Env, dir: &Path) -> Mark {
        let fs = env.fs();
        let commit = manifest::read_current(env, dir).ok().and_then(|n| {
            let len = fs
                .file_size(&dir.join(manifest::manifest_file_name(n)))
                .ok()?;
            Some((n, len))
        });
        let mut files: Vec<(String, Option<u64>)> = fs
            .list_dir(dir)
            .unwrap_or_default()
            .into_iter()
            .filter(|n| parse_file_name(n).is_some())
            .map(|n| {
                let size = fs.file_size(&dir.join(&n)).ok();
                (n, size)
            })
            .collect();
        files.sort();
        Mark { commit, files }
    }

    /// The length of the MANIFEST CURRENT named (0 if it could not be read).
    pub(crate) fn manifest_len(&self) -> u64 {
        self.commit.map_or(0, |(_, len)| len)
    }

    /// Whether no commit happened between `other` and this mark.
    pub(crate) fn same_commit(&self, other: &Mark) -> bool {
        self.commit.is_some() && self.commit == other.commit
    }
}

/// One read-only recovery: the MANIFEST's version, the log replayed into memtables, every
/// table of the version opened (up to `max_open_files`), those `prev` holds taken from it.
fn recover(
    dir: &Path,
    options: &Options,
    wiring: &Wiring,
    prev: Option<&DbInner>,
) -> Result<DbInner> {
    let env = &options.env;
    let fs = env.fs();
    if super::store_files::presence(env, dir)? == Presence::None {
        return Err(no_store(dir));
    }
    let (parts, file_numbers) = super::open::build_parts(dir, options, wiring)?;
    let (versions, placement, last_sequence, lifetime_base) =
        super::open::recover_versions(dir, options, &parts, file_numbers)?;
    let Parts {
        layout,
        values,
        memory,
        table,
    } = parts;
    let store_id = versions.store_id();
    let prev = prev.filter(|p| p.versions.lock().store_id() == store_id);
    let (block_cache, tables) = match prev {
        Some(p) => {
            let tables = TableCache::new(
                env.clone(),
                dir.to_path_buf(),
                options.max_open_files,
                table,
                p.block_cache.clone(),
                options.verify_checksums,
                Some(store_id),
            )
            .with_mmap_reads(options.mmap_reads);
            (p.block_cache.clone(), Arc::new(tables))
        }
        None => super::open::caches(dir, options, table, Some(store_id)),
    };
    let names = fs.list_dir(dir)?;
    let ctx = RecoverContext {
        env,
        dir,
        state: &placement,
        names: &names,
        last_sequence,
        store_id: versions.store_id(),
        wal_recovery_mode: options.wal_recovery_mode,
        block_cache: block_cache.as_ref(),
    };
    // Each full memtable is frozen and kept, oldest first.
    let mut frozen: Vec<Arc<dyn MemTable>> = Vec::new();
    let mut mem: Arc<dyn MemTable> = memory.new_memtable();
    let mut range_dels: Vec<crate::rangedel::RangeTombstone> = Vec::new();
    let replayed = values.recover_read_only(&ctx, &mut |key, seq, kind, value| {
        if kind == crate::key::ValueKind::RangeDelete {
            range_dels.push(crate::rangedel::RangeTombstone::from_record(
                key, seq, value,
            ));
            return;
        }
        mem.insert(key, seq, kind, value);
        if mem.approximate_bytes() >= options.write_buffer_size {
            frozen.push(std::mem::replace(&mut mem, memory.new_memtable()));
        }
    })?;
    let version = versions.current();
    if version.files().count() <= options.max_open_files {
        for (_, f) in version.files() {
            let id = TableId {
                number: f.number,
                size: f.size,
            };
            match prev.and_then(|p| p.tables.cached(id)) {
                Some(t) => tables.adopt(id, t),
                None => drop(tables.table(id)?),
            }
        }
    }
    frozen.reverse();
    Ok(DbInner::new(Recovered {
        dir: dir.to_path_buf(),
        options: options.clone(),
        layout,
        values,
        memory,
        lifetime_base,
        io_at_open: WriteCause::ALL.map(|c| env.io().written(c)),
        tables,
        block_cache,
        versions,
        version,
        last_seq: last_sequence.max(replayed),
        mem,
        imms: frozen,
        range_dels,
        lock: None,
        read_only: true,
    }))
}

/// The file system of a read-only handle: reads go to the store's own file system, every
/// change is refused with [`Error::ReadOnlyOpen`] (so a read-only handle writes nothing
/// by construction, whatever code it runs). A file that is gone when it is opened is
/// reported as possibly deleted by a writer in another process.
#[derive(Debug)]
pub(crate) struct ReadOnlyFs {
    inner: Arc<dyn FileSystem>,
    dir: std::path::PathBuf,
}

impl ReadOnlyFs {
    fn refuse<T>(&self) -> Result<T> {
        Err(Error::ReadOnlyOpen {
            path: self.dir.clone(),
        })
    }
}

/// A file a read-only handle cannot find may have been deleted by a writer since the handle
/// read the MANIFEST: the error says so.
fn deleted_by_writer(e: Error) -> Error {
    match e {
        Error::Io {
            path: p, source, ..
        } if source.kind() == std::io::ErrorKind::NotFound => Error::Io {
            op: "open (on a read-only handle: the file may have been deleted by a writer \
                 in another process since this handle read the MANIFEST; reopen to read \
                 the current version)",
            path: p,
            source,
        },
        e => e,
    }
}

impl FileSystem for ReadOnlyFs {
    fn create(&self, _path: &Path) -> Result<Box<dyn WritableFile>> {
        self.refuse()
    }
    fn create_log(&self, _path: &Path) -> Result<Box<dyn WritableFile>> {
        self.refuse()
    }
    fn reopen(&self, _path: &Path, _at: u64) -> Result<Box<dyn WritableFile>> {
        self.refuse()
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path).map_err(deleted_by_writer)
    }
    fn open_mapped(
        &self,
        path: &Path,
        len: u64,
        map_use: crate::env::MapUse,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner
            .open_mapped(path, len, map_use)
            .map_err(deleted_by_writer)
    }
    fn rename(&self, _from: &Path, _to: &Path) -> Result<()> {
        self.refuse()
    }
    fn remove_file(&self, _path: &Path) -> Result<()> {
        self.refuse()
    }
    fn create_dir_all(&self, _path: &Path) -> Result<()> {
        self.refuse()
    }
    fn list_dir(&self, path: &Path) -> Result<Vec<String>> {
        self.inner.list_dir(path)
    }
    fn sync_dir(&self, _path: &Path) -> Result<()> {
        self.refuse()
    }
    fn exists(&self, path: &Path) -> Result<bool> {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn lock(&self, _path: &Path) -> Result<Box<dyn FileLock>> {
        self.refuse()
    }
}
