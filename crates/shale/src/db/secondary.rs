//! Secondary open: a read-only handle that follows a running writer (RocksDB's secondary
//! instance and its `TryCatchUpWithPrimary`).
//!
//! A secondary handle holds a *view*: the state of one read-only open (`read_only.rs`),
//! with its version, its memtables replayed from the log, and its files open. A catch-up
//! ([`Db::try_catch_up`]) makes a new view the way a read-only open does (CURRENT, the
//! whole MANIFEST, the log replayed into fresh memtables, every table of the version held
//! open, the placement's files too) and installs it in one step; readers then see the new
//! view, and what the writer flushed since the last view is in its tables instead of its
//! memtables. The new view takes over the tables the old one holds open that are still in
//! the new version, and the block cache, so a catch-up opens only the tables that are new.
//!
//! Why the whole MANIFEST and not its tail since the last catch-up: the writer may switch
//! to a new MANIFEST (a snapshot of the version, then the edits after it) any number of
//! times between two catch-ups, and telling the snapshot edits of a new MANIFEST from the
//! newer ones is where RocksDB's incremental tailing went wrong (facebook/rocksdb#7815).
//! Reading it whole costs one pass over a file the writer keeps below
//! `max_manifest_bytes`, and shares all of the read-only open's checks.
//!
//! # Beside a writer that compacts and deletes files
//!
//! A catch-up is safe for the same reasons a read-only open is (`read_only.rs`): it is
//! bracketed by two marks of the store, and a failure while the writer committed (a table
//! or log deleted between the MANIFEST being read and the file being opened) makes it start
//! again, at most `read_only::ATTEMPTS` times; after that the catch-up returns the error
//! and the handle keeps its view, so the caller may simply try again. A catch-up never
//! installs a view it could not read whole.
//!
//! Views taken before a catch-up keep their files: an iterator holds its memtables, its
//! version's tables and the value placement it resolves through, and a [`Snapshot`] taken
//! on a secondary handle holds its whole view, so reads at it after later catch-ups still
//! read that view (the writer's compactions, which do not know the secondary's snapshots,
//! may have dropped the versions it sees from newer views). POSIX keeps an unlinked file
//! readable while a descriptor is open, so the writer deleting them changes nothing. A view
//! no iterator or snapshot holds is dropped with its descriptors at the next catch-up.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use super::{Db, DbInner, Parts, read_only};
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::options::Options;

/// A [`super::Wiring`] a secondary handle keeps for its catch-ups: a function, so that the
/// handle stays `Send + Sync`.
pub(crate) type WiringFn = fn(&Options, &Path, Arc<AtomicU64>) -> Parts;

/// A `Db` is shared between threads, a secondary one too.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Db>();
};

/// The changing view of a secondary handle.
pub(crate) struct Follow {
    /// The view readers use now.
    view: RwLock<Arc<DbInner>>,
    /// The options the handle was opened with (each catch-up opens with them).
    options: Options,
    dir: PathBuf,
    wiring: WiringFn,
    /// Held by a catch-up: one at a time.
    catching_up: Mutex<()>,
}

impl Follow {
    /// The current view.
    pub(crate) fn view(&self) -> Arc<DbInner> {
        Arc::clone(&self.view.read())
    }

    /// The store's directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Open the store in `dir` as a secondary handle.
pub(crate) fn open(dir: &Path, options: Options, wiring: WiringFn) -> Result<Follow> {
    let (view, _) = read_only::open_after(dir, options.clone(), &wiring, None)?;
    Ok(Follow {
        view: RwLock::new(view),
        options,
        dir: dir.to_path_buf(),
        wiring,
        catching_up: Mutex::new(()),
    })
}

impl Db {
    /// Bring a handle from [`Db::open_secondary`] up to what the writer has committed and
    /// logged now: every write it acknowledged before this call (with `sync: false` too, as
    /// long as its process wrote it to the log file, which it does before acknowledging),
    /// and the tables its flushes and compactions made. Returns the sequence number the
    /// handle reads at afterwards.
    ///
    /// Iterators and snapshots taken before keep reading what they read. On an error the
    /// handle keeps its view, and the call may be made again: a catch-up that met the
    /// writer's commits on every attempt fails with [`Error::Io`] saying so.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a handle not opened with [`Db::open_secondary`];
    /// as [`Db::open_read_only`] otherwise.
    pub fn try_catch_up(&self) -> Result<SeqNo> {
        let super::Handle::Follows(follow) = &self.handle else {
            return Err(Error::InvalidArgument(format!(
                "try_catch_up: the handle of {} was not opened with Db::open_secondary",
                self.path().display()
            )));
        };
        let _one = follow.catching_up.lock();
        let prev = follow.view();
        let (next, _) = read_only::open_after(
            &follow.dir,
            follow.options.clone(),
            &follow.wiring,
            Some(&prev),
        )?;
        let seq = next.last_seq.load(Ordering::Acquire);
        *follow.view.write() = next;
        Ok(seq)
    }
}
