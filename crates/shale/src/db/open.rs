//! Opening a store: lock, read the MANIFEST, replay the durability log, start fresh.
//!
//! The value placement replays every write its log holds beyond what the MANIFEST covers
//! (the WAL from the log number, or the value log from its head) into memtables; they are
//! written out as level-0 tables, and one edit adds those tables and moves the placement's
//! position past the replayed writes. A crash during recovery leaves the old logs in place,
//! so recovery can simply run again.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

use parking_lot::{Condvar, Mutex, RwLock};

use super::background::flush_memtable;
use super::store_files::Presence;
use super::value_jobs::{Tree, count_superseded_over};
use super::{BgState, Counters, DbInner, Parts, SuperVersion, WalState, Wiring};
use crate::cache::block_cache::BlockCache;
use crate::compaction::CompactionContext;
use crate::env::WriteCause;
use crate::error::{Error, Result};
use crate::filename::{CURRENT_TMP_FILE, LOCK_FILE, parse_file_name};
use crate::layout::Layout;
use crate::manifest::{AxisStates, VersionEdit};
use crate::memory::MemTable;
use crate::options::Options;
use crate::table::cache::TableCache;
use crate::values::ValueStore;
use crate::values::{PersistedState, RecoverContext};
use crate::options::stored::StoredOptions;
use crate::version::set::{Makeup, VersionSet};

/// Open the store in `dir` with the parts `wiring` builds from `options`.
pub(crate) fn open(dir: &Path, options: Options, wiring: &Wiring) -> Result<Arc<DbInner>> {
    options.validate()?;
    let env = options.env.clone();
    let fs = env.fs().clone();
    if !fs.exists(dir)? {
        if !options.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "no store at {} (create_if_missing is false)",
                dir.display()
            )));
        }
        fs.create_dir_all(dir)?;
    }
    let lock = fs.lock(&dir.join(LOCK_FILE))?;
    // What this open writes counts toward the store's lifetime counters from here.
    let io_at_open = WriteCause::ALL.map(|c| env.io().written(c));
    let min_next_file = fs
        .list_dir(dir)?
        .iter()
        .filter_map(|n| Some(parse_file_name(n)?.number()? + 1))
        .max()
        .unwrap_or(1);
    let file_numbers = Arc::new(AtomicU64::new(min_next_file));
    let Parts {
        layout,
        values,
        memory,
        table,
    } = wiring(&options, dir, Arc::clone(&file_numbers));
    // A directory with store files but no CURRENT is a damaged store, never a new one.
    let has_current = super::store_files::presence(&env, dir)? == Presence::Store;
    let makeup = Makeup {
        num_levels: options.num_levels,
        format_tag: format_tag(layout.as_ref(), values.as_ref()),
        options: StoredOptions::of(&options),
        file_numbers: Arc::clone(&file_numbers),
        layout: layout.empty_state(),
        axes: AxisStates::with_values(values.empty_state()),
    };
    let (mut versions, placement_state, mut last_seq, lifetime_base) = if has_current {
        if options.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "a store already exists at {} (error_if_exists is true)",
                dir.display()
            )));
        }
        let r = VersionSet::recover(&env, dir, makeup)?;
        let placement = PersistedState {
            log_number: r.log_number,
            state: r.axes.values,
        };
        (r.set, placement, r.last_sequence, r.lifetime)
    } else {
        if !options.create_if_missing {
            return Err(Error::InvalidArgument(format!(
                "no store at {} (create_if_missing is false)",
                dir.display()
            )));
        }
        (
            VersionSet::create(&env, dir, makeup)?,
            PersistedState {
                log_number: 0,
                state: values.empty_state(),
            },
            0,
            crate::manifest::Lifetime::default(),
        )
    };

    versions.set_max_manifest_bytes(options.max_manifest_bytes);

    // Remove the leftover of an interrupted CURRENT update; other `*.tmp` files are not
    // the store's.
    if fs.exists(&dir.join(CURRENT_TMP_FILE))? {
        let _ = fs.remove_file(&dir.join(CURRENT_TMP_FILE));
    }

    let block_cache = (options.block_cache_bytes > 0)
        .then(|| Arc::new(BlockCache::new(options.block_cache_bytes)));
    let tables = Arc::new(TableCache::new(
        env.clone(),
        dir.to_path_buf(),
        options.max_open_files,
        Arc::clone(&table),
        block_cache.clone(),
        options.verify_checksums,
        Some(versions.store_id()),
    ));
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
        };
        let mut mem: Arc<dyn MemTable> = memory.new_memtable();
        let mut failed: Option<Error> = None;
        let mut flushed = VersionEdit::default();
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

    let mem = memory.new_memtable();
    let inner = Arc::new(DbInner {
        dir: dir.to_path_buf(),
        values,
        layout,
        memory,
        env: env.clone(),
        tables,
        block_cache,
        snapshots: Arc::default(),
        last_seq: AtomicU64::new(last_seq),
        publish_waiters: AtomicUsize::new(0),
        publish_lock: Mutex::new(()),
        publish_cv: Condvar::new(),
        file_numbers: versions.file_numbers(),
        wal: Mutex::new(WalState {
            mem: Arc::clone(&mem),
            last_assigned: last_seq,
        }),
        queue: Mutex::default(),
        super_version: RwLock::new(Arc::new(SuperVersion {
            mem,
            imms: Vec::new(),
            version,
        })),
        versions: Mutex::new(versions),
        bg: Mutex::new(BgState {
            compaction_wanted: true,
            ..BgState::default()
        }),
        bg_cv: Condvar::new(),
        pending_outputs: Mutex::default(),
        compaction_lock: Mutex::new(()),
        counters: Counters::default(),
        lifetime_base,
        io_at_open,
        retired: Mutex::default(),
        value_job_lock: Mutex::new(()),
        shutting_down: AtomicBool::new(false),
        lock: Mutex::new(Some(lock)),
        options,
    });
    let weak = Arc::downgrade(&inner);
    inner
        .versions
        .lock()
        .set_lifetime_source(Box::new(move || {
            weak.upgrade().map(|i| super::stats::lifetime(&i))
        }));
    super::background::delete_obsolete_files(&inner);
    Ok(inner)
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
        };
        let flushed = flush_memtable(self.layout, mem, &ctx)?;
        let next = version
            .apply(&flushed)
            .map_err(|d| Error::corruption(self.dir, 0, format!("a recovery flush: {d}")))?;
        *self.version.borrow_mut() = Arc::new(next);
        edit.extend(flushed);
        Ok(())
    }
}
