//! Opening a store: lock, read the MANIFEST, replay the durability log, start fresh.
//!
//! The value placement replays every write its log holds beyond what the MANIFEST covers
//! (the WAL from the log number, or the value log from its head) into memtables; they are
//! written out as level-0 tables, and one edit adds those tables and moves the placement's
//! position past the replayed writes. A crash during recovery leaves the old logs in place,
//! so recovery can simply run again.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use super::background::flush_memtable;
use super::store_files::Presence;
use super::value_jobs::{Tree, count_superseded_over};
use super::{DbInner, Parts, Recovered, Wiring};
use crate::cache::block_cache::BlockCache;
use crate::compaction::CompactionContext;
use crate::env::WriteCause;
use crate::error::{Error, Result};
use crate::filename::{CURRENT_TMP_FILE, LOCK_FILE, parse_file_name};
use crate::key::SeqNo;
use crate::layout::Layout;
use crate::manifest::{AxisStates, Lifetime, VersionEdit};
use crate::memory::MemTable;
use crate::options::Options;
use crate::options::stored::StoredOptions;
use crate::table::TableFormat;
use crate::table::cache::TableCache;
use crate::values::ValueStore;
use crate::values::{PersistedState, RecoverContext};
use crate::version::set::{Makeup, VersionSet};

/// Open the store in `dir` with the parts `wiring` builds from `options`.
pub(crate) fn open(dir: &Path, options: Options, wiring: &Wiring) -> Result<Arc<DbInner>> {
    options.validate()?;
    let env = options.env.clone();
    let fs = env.fs().clone();
    // The directories this open creates, deepest first: a failed open removes them again.
    let mut created: Vec<std::path::PathBuf> = Vec::new();
    if !fs.exists(dir)? {
        if !options.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "no store at {} (create_if_missing is false)",
                dir.display()
            )));
        }
        for a in dir.ancestors() {
            if a.as_os_str().is_empty() || fs.exists(a)? {
                break;
            }
            created.push(a.to_path_buf());
        }
        if let Err(e) = fs.create_dir_all(dir) {
            remove_created_dirs(&env, &created);
            return Err(e);
        }
    }
    let r = open_in(dir, options, wiring, !created.is_empty());
    if r.is_err() {
        remove_created_dirs(&env, &created);
    }
    r
}

/// Remove (best effort) the directories in `created` (deepest first) that a failed open
/// made; one that is not empty (a file that is not the open's, put there meanwhile) stops
/// the removal, keeping it and its parents.
fn remove_created_dirs(env: &crate::env::Env, created: &[std::path::PathBuf]) {
    for d in created {
        if env.fs().remove_dir(d).is_err() {
            return;
        }
    }
}

/// [`open`] once the directory exists; `new_dir`: this open created it, so a failure
/// removes every store file in it, whatever CURRENT holds (no store was there before).
fn open_in(dir: &Path, options: Options, wiring: &Wiring, new_dir: bool) -> Result<Arc<DbInner>> {
    let env = options.env.clone();
    let fs = env.fs().clone();
    let had_lock = fs.exists(&dir.join(LOCK_FILE))?;
    let mut lock = Some(fs.lock(&dir.join(LOCK_FILE))?);
    let before = match Undo::before(&env, dir) {
        Ok(b) => b,
        Err(e) => {
            if !had_lock {
                let _ = fs.remove_file(&dir.join(LOCK_FILE));
            }
            return Err(e);
        }
    };
    let r = open_locked(dir, options, wiring, &mut lock);
    if r.is_err() {
        before.undo(&env, dir, had_lock, new_dir);
    }
    // A failed open releases the lock here, after removing what it created.
    drop(lock);
    r
}

/// What a failed open removes: the files it created (issue 17: a refused open adds no
/// file, and one that ran out of space leaves no empty log or segment behind to take the
/// space the next attempt needs).
struct Undo {
    /// The directory's names once the open took the lock (`LOCK` among them).
    names: Vec<String>,
    /// What CURRENT held then (`None`: no CURRENT, or unreadable).
    current: Option<Vec<u8>>,
}

impl Undo {
    fn before(env: &crate::env::Env, dir: &Path) -> Result<Undo> {
        Ok(Undo {
            names: env.fs().list_dir(dir)?,
            current: read_current_bytes(env, dir),
        })
    }

    /// Remove (best effort) the `LOCK` file if the open created it, and the store files it
    /// created (tables, logs, segments, a MANIFEST, `CURRENT.tmp`), unless CURRENT changed:
    /// then the new MANIFEST may already be the store's (a commit whose directory sync
    /// failed after the rename) and list the others, so they are left for the next open,
    /// which keeps or sweeps them. While CURRENT names what it named before, nothing the
    /// open created is part of the store.
    ///
    /// In a directory the open created (`new_dir`), no store was there before: every store
    /// file it wrote goes, `CURRENT` too, so the directory can be removed after.
    fn undo(&self, env: &crate::env::Env, dir: &Path, had_lock: bool, new_dir: bool) {
        let fs = env.fs();
        let Ok(now) = fs.list_dir(dir) else {
            return;
        };
        let current_kept = new_dir || read_current_bytes(env, dir) == self.current;
        for name in now.iter().filter(|n| !self.names.contains(n)) {
            let ours = parse_file_name(name).is_some()
                || (new_dir && name == crate::filename::CURRENT_FILE);
            if ours && current_kept {
                let _ = fs.remove_file(&dir.join(name));
            }
        }
        // `LOCK`, if this open created it (the listing above was taken after locking, so it
        // is not among the new names). Removed while the lock is still held.
        if !had_lock {
            let _ = fs.remove_file(&dir.join(LOCK_FILE));
        }
    }
}

/// The bytes of `dir`'s CURRENT, if it can be read.
fn read_current_bytes(env: &crate::env::Env, dir: &Path) -> Option<Vec<u8>> {
    let path = dir.join(crate::filename::CURRENT_FILE);
    env.read_all(&path, crate::env::ReadCause::Other).ok()
}

/// [`open`] once the store's lock is taken (`lock`; the open moves it into the store when it
/// succeeds).
fn open_locked(
    dir: &Path,
    options: Options,
    wiring: &Wiring,
    lock: &mut Option<Box<dyn crate::env::FileLock>>,
) -> Result<Arc<DbInner>> {
    let env = options.env.clone();
    let fs = env.fs().clone();
    // What this open writes counts toward the store's lifetime counters from here.
    let io_at_open = WriteCause::ALL.map(|c| env.io().written(c));
    let (parts, file_numbers) = build_parts(dir, &options, wiring)?;
    // A directory with store files but no CURRENT is a damaged store, never a new one.
    let has_current = super::store_files::presence(&env, dir)? == Presence::Store;
    let (mut versions, placement_state, mut last_seq, lifetime_base) = if has_current {
        if options.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "a store already exists at {} (error_if_exists is true)",
                dir.display()
            )));
        }
        recover_versions(dir, &options, &parts, Arc::clone(&file_numbers))?
    } else {
        if !options.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "no store at {} (create_if_missing is false)",
                dir.display()
            )));
        }
        (
            VersionSet::create(
                &env,
                dir,
                makeup(&options, &parts, Arc::clone(&file_numbers)),
            )?,
            PersistedState {
                log_number: 0,
                state: parts.values.empty_state(),
            },
            0,
            Lifetime::default(),
        )
    };
    let Parts {
        layout,
        values,
        memory,
        table,
    } = parts;

    versions.set_max_manifest_bytes(options.max_manifest_bytes);

    // Remove the leftover of an interrupted CURRENT update; other `*.tmp` files are not
    // the store's.
    if fs.exists(&dir.join(CURRENT_TMP_FILE))? {
        let _ = fs.remove_file(&dir.join(CURRENT_TMP_FILE));
    }

    let (block_cache, tables) = caches(dir, &options, table, Some(versions.store_id()));
    // Replay the writes the placement's log holds beyond the tables, then start a fresh log;
    // the edit moves the placement's position past the replayed writes.
    let mut edit = VersionEdit::default();
    {
        let replay = Replay {
            options: &options,
            dir,
            layout: layout.as_ref(),
            tables: &tables,
            versions: &versions,
            values: values.as_ref(),
            version: std::cell::RefCell::new(versions.current()),
        };
        let names = fs.list_dir(dir)?;
        let ctx = RecoverContext {
            env: &env,
            dir,
            state: &placement_state,
            names: &names,
            last_sequence: last_seq,
            store_id: versions.store_id(),
            wal_recovery_mode: options.wal_recovery_mode,
            block_cache: block_cache.as_ref(),
        };
        let mut mem: Arc<dyn MemTable> = memory.new_memtable();
        let mut failed: Option<Error> = None;
        let mut flushed = VersionEdit::default();
        // The logs' range tombstones: every log is flushed here, so they all go into the
        // edit that commits the flushes.
        let mut range_dels: Vec<crate::rangedel::RangeTombstone> = Vec::new();
        // The memtables written out, oldest first, kept to count what they supersede once
        // `recover` returns (it holds the placement's segment map, which counting takes).
        let counts = values.gc().is_some();
        let mut written: Vec<Arc<dyn MemTable>> = Vec::new();
        let replayed = values.recover(
            &ctx,
            &mut |key, seq, kind, value| {
                if failed.is_some() {
                    return;
                }
                if kind == crate::key::ValueKind::RangeDelete {
                    range_dels.push(crate::rangedel::RangeTombstone::from_record(
                        key, seq, value,
                    ));
                    return;
                }
                mem.insert(key, seq, kind, value);
                if mem.approximate_bytes() >= options.write_buffer_size {
                    if let Err(e) = replay.flush(&mem, &mut flushed) {
                        failed = Some(e);
                    }
                    let full = std::mem::replace(&mut mem, memory.new_memtable());
                    if counts {
                        written.push(full);
                    }
                }
            },
            &mut edit,
        );
        // A refused recovery leaves no table it wrote behind (the store stays as it was).
        let replayed = match (replayed, failed) {
            (Ok(r), None) => r,
            (Err(e), _) | (Ok(_), Some(e)) => {
                replay.discard(&flushed);
                return Err(e);
            }
        };
        replay.flush(&mem, &mut flushed)?;
        written.push(mem);
        edit.extend(flushed);
        edit.range_dels.extend(range_dels);
        // Count in the edit that adds the tables, as a flush does: a crash before it commits
        // replays and counts again, once. Each memtable supersedes the ones replayed before
        // it, then the tree the MANIFEST holds.
        let base = versions.current();
        let tree = Tree {
            values: values.as_ref(),
            layout: layout.as_ref(),
            tables: &tables,
            version: &base,
        };
        for (i, m) in written.iter().enumerate() {
            count_superseded_over(&tree, m, written.get(..i).unwrap_or_default(), &mut edit);
        }
        last_seq = last_seq.max(replayed);
    }
    fs.sync_dir(dir)?;
    let version = versions.log_and_apply(edit, last_seq)?;

    let inner = Arc::new(DbInner::new(Recovered {
        dir: dir.to_path_buf(),
        mem: memory.new_memtable(),
        imms: Vec::new(),
        layout,
        values,
        memory,
        lifetime_base,
        io_at_open,
        tables,
        block_cache,
        versions,
        version,
        last_seq,
        range_dels: Vec::new(),
        lock: lock.take(),
        read_only: false,
        options,
    }));
    let weak = Arc::downgrade(&inner);
    inner.versions.lock().set_lifetime_source(Box::new(move || {
        weak.upgrade().map(|i| super::stats::lifetime(&i))
    }));
    super::background::delete_obsolete_files(&inner);
    Ok(inner)
}

/// What the version set of the store in `dir` is made with for `parts` and `options`.
fn makeup(options: &Options, parts: &Parts, file_numbers: Arc<AtomicU64>) -> Makeup {
    Makeup {
        num_levels: options.num_levels,
        format_tag: format_tag(parts.layout.as_ref(), parts.values.as_ref()),
        options: StoredOptions::of(options),
        file_numbers,
        layout: parts.layout.empty_state(),
        axes: AxisStates::new(
            parts.values.empty_state(),
            parts.memory.empty_state(),
            parts.table.empty_state(),
        ),
    }
}

/// The parts `wiring` builds for the store in `dir`, and their file-number counter, which
/// starts past every file number in the directory (logs created after the last edit are
/// not in the MANIFEST; their numbers must not be handed out again).
pub(super) fn build_parts(
    dir: &Path,
    options: &Options,
    wiring: &Wiring,
) -> Result<(Parts, Arc<AtomicU64>)> {
    let min_next_file = options
        .env
        .fs()
        .list_dir(dir)?
        .iter()
        .filter_map(|n| Some(parse_file_name(n)?.number()? + 1))
        .max()
        .unwrap_or(1);
    let file_numbers = Arc::new(AtomicU64::new(min_next_file));
    Ok((
        wiring(options, dir, Arc::clone(&file_numbers)),
        file_numbers,
    ))
}

/// Read the MANIFEST of the store in `dir` for `parts` (`VersionSet::recover`, which
/// writes nothing): the version set, what it records for the value placement, the last
/// sequence number and the lifetime counters.
pub(super) fn recover_versions(
    dir: &Path,
    options: &Options,
    parts: &Parts,
    file_numbers: Arc<AtomicU64>,
) -> Result<(VersionSet, PersistedState, SeqNo, Lifetime)> {
    let r = VersionSet::recover(&options.env, dir, makeup(options, parts, file_numbers))?;
    let placement = PersistedState {
        log_number: r.log_number,
        state: r.axes.values,
    };
    Ok((r.set, placement, r.last_sequence, r.lifetime))
}

/// The block cache (if `options` ask for one) and the table cache of the store in `dir`,
/// whose tables must record `store_id` when they record one.
pub(super) fn caches(
    dir: &Path,
    options: &Options,
    table: Arc<dyn TableFormat>,
    store_id: Option<u64>,
) -> (Option<Arc<BlockCache>>, Arc<TableCache>) {
    let block_cache = (options.block_cache_bytes > 0)
        .then(|| Arc::new(BlockCache::new(options.block_cache_bytes)));
    let tables = Arc::new(
        TableCache::new(
            options.env.clone(),
            dir.to_path_buf(),
            options.max_open_files,
            table,
            block_cache.clone(),
            options.verify_checksums,
            store_id,
        )
        .with_mmap_reads(options.mmap_reads),
    );
    (block_cache, tables)
}

/// The identity a MANIFEST records: the layout, and a value placement whose stores
/// another placement cannot read.
pub(crate) fn format_tag(layout: &dyn Layout, values: &dyn ValueStore) -> String {
    match values.store_tag() {
        None => layout.name().to_string(),
        Some(t) => format!("{}+{t}", layout.name()),
    }
}

/// What log replay needs: it runs before the store's shared state exists.
struct Replay<'a> {
    options: &'a Options,
    dir: &'a Path,
    layout: &'a dyn Layout,
    tables: &'a Arc<TableCache>,
    versions: &'a VersionSet,
    values: &'a dyn ValueStore,
    /// The MANIFEST's version with the replay's flushes so far applied (not committed:
    /// recovery commits them in one edit), so each flush sees the files of the ones before.
    version: std::cell::RefCell<Arc<crate::version::Version>>,
}

impl Replay<'_> {
    /// Remove the tables `edit` adds (best effort: an orphan table is deleted by the next
    /// open that succeeds).
    fn discard(&self, edit: &VersionEdit) {
        for (_, f) in &edit.new_files {
            self.tables.evict(f.number);
            let path = self.dir.join(crate::filename::table_file_name(f.number));
            let _ = self.options.env.fs().remove_file(&path);
        }
    }

    /// Flush `mem` through the layout, adding what it wrote to `edit`.
    fn flush(&self, mem: &Arc<dyn MemTable>, edit: &mut VersionEdit) -> Result<()> {
        let version = Arc::clone(&self.version.borrow());
        let new_file = || self.versions.new_file_number();
        let stop = AtomicBool::new(false);
        let ctx = CompactionContext {
            env: &self.options.env,
            dir: self.dir,
            table_options: &self.options.table,
            tables: self.tables,
            version: &version,
            snapshots: &[],
            new_file_number: &new_file,
            stop: &stop,
            cause: WriteCause::Flush,
            on_discard: &|_, _| {},
            check_new_tables: self.options.verify_new_tables,
            // Not while the log is replayed: entries meet the filter at their first
            // compaction (`options::filter`).
            filter: None,
        };
        let flushed = flush_memtable(self.layout, self.values, mem, &ctx)?;
        let next = version
            .apply(&flushed)
            .map_err(|d| Error::corruption(self.dir, 0, format!("a recovery flush: {d}")))?;
        *self.version.borrow_mut() = Arc::new(next);
        edit.extend(flushed);
        Ok(())
    }
}
