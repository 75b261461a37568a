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

use parking_lot::{Condvar, Mutex, RwLock};

use super::background::write_memtable;
use super::value_jobs::{Tree, count_superseded_over};
use super::{BgState, Counters, DbInner, SuperVersion, WalState};
use crate::cache::block_cache::BlockCache;
use crate::cache::table_cache::TableCache;
use crate::compaction::CompactionContext;
use crate::env::WriteCause;
use crate::error::{Error, Result};
use crate::layout::new_layout;
use crate::manifest::{AxisStates, VersionEdit};
use crate::memory::{MemTable, new_memtable};
use crate::options::Options;
use crate::values::{PersistedState, RecoverContext, empty_state, new_value_store};
use crate::version::set::VersionSet;

/// The largest file number the engine hands out (far beyond any real store): larger numbers
/// in a directory or a MANIFEST are not the engine's, and arithmetic on them cannot overflow.
pub(crate) const MAX_FILE_NUMBER: u64 = 1 << 48;

/// The kinds of file a store directory holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// `NNNNNN.sst`
    Table(u64),
    /// `NNNNNN.log`
    Log(u64),
    /// `NNNNNN.vlog` (a value-log segment)
    Segment(u64),
    /// `MANIFEST-NNNNNN`
    Manifest(u64),
    /// `*.tmp`
    Temp,
}

/// Recognize a file name of the store; `None` for names the store does not own (`LOCK`,
/// `CURRENT`, anything a user put there).
pub(crate) fn parse_file_name(name: &str) -> Option<FileKind> {
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return n
            .parse()
            .ok()
            .filter(|&n| n <= MAX_FILE_NUMBER)
            .map(FileKind::Manifest);
    }
    if name.ends_with(".tmp") {
        return Some(FileKind::Temp);
    }
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = stem.parse().ok()?;
    if n > MAX_FILE_NUMBER {
        // Not a number this engine hands out; leave the file alone.
        return None;
    }
    match ext {
        "sst" => Some(FileKind::Table(n)),
        "log" => Some(FileKind::Log(n)),
        "vlog" => Some(FileKind::Segment(n)),
        _ => None,
    }
}

pub(crate) fn open(dir: &Path, options: Options) -> Result<Arc<DbInner>> {
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
    let lock = fs.lock(&dir.join("LOCK"))?;
    let layout = new_layout(&options);
    let min_next_file = fs
        .list_dir(dir)?
        .iter()
        .filter_map(|n| match parse_file_name(n)? {
            FileKind::Table(n)
            | FileKind::Log(n)
            | FileKind::Segment(n)
            | FileKind::Manifest(n) => Some(n + 1),
            FileKind::Temp => None,
        })
        .max()
        .unwrap_or(1);
    let has_current = fs.exists(&dir.join("CURRENT"))?;
    let format_tag = format_tag(&options, layout.as_ref());
    let (mut versions, placement_state, mut last_seq) = if has_current {
        if options.error_if_exists {
            return Err(Error::InvalidArgument(format!(
                "a store already exists at {} (error_if_exists is true)",
                dir.display()
            )));
        }
        let r = VersionSet::recover(
            &env,
            dir,
            options.num_levels,
            &format_tag,
            min_next_file,
            layout.empty_state(),
            AxisStates::with_values(empty_state(&options)),
        )?;
        let placement = PersistedState {
            log_number: r.log_number,
            state: r.axes.values,
        };
        (r.set, placement, r.last_sequence)
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
                options.num_levels,
                &format_tag,
                min_next_file,
                layout.empty_state(),
                AxisStates::with_values(empty_state(&options)),
            )?,
            PersistedState {
                log_number: 0,
                state: empty_state(&options),
            },
            0,
        )
    };

    versions.set_max_manifest_bytes(options.max_manifest_bytes);

    // Remove leftovers of an interrupted CURRENT update.
    for name in fs.list_dir(dir)? {
        if parse_file_name(&name) == Some(FileKind::Temp) {
            let _ = fs.remove_file(&dir.join(&name));
        }
    }

    let block_cache = (options.block_cache_bytes > 0)
        .then(|| Arc::new(BlockCache::new(options.block_cache_bytes)));
    let tables = Arc::new(TableCache::new(
        env.clone(),
        dir.to_path_buf(),
        options.max_open_files,
        block_cache.clone(),
        options.verify_checksums,
    ));
    // Replay the writes the placement's log holds beyond the tables, then start a fresh log;
    // the edit moves the placement's position past the replayed writes.
    let values = new_value_store(&options, dir, versions.file_numbers());
    let mut edit = VersionEdit::default();
    {
        let replay = Replay {
            options: &options,
            dir,
            tables: &tables,
            versions: &versions,
        };
        let names = fs.list_dir(dir)?;
        let ctx = RecoverContext {
            env: &env,
            dir,
            state: &placement_state,
            names: &names,
            last_sequence: last_seq,
        };
        let mut mem: Arc<dyn MemTable> = new_memtable(options.memory);
        let mut failed: Option<Error> = None;
        let mut flushed = VersionEdit::default();
        // The memtables written out, oldest first, kept to count what they supersede once
        // `recover` returns (it holds the placement's segment map, which counting takes).
        let counts = values.counts_superseded();
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
                    let full = std::mem::replace(&mut mem, new_memtable(options.memory));
                    if counts {
                        written.push(full);
                    }
                }
            },
            &mut edit,
        )?;
        if let Some(e) = failed {
            return Err(e);
        }
        replay.flush(&mem, &mut flushed)?;
        written.push(mem);
        edit.new_files.append(&mut flushed.new_files);
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

    let mem = new_memtable(options.memory);
    let inner = Arc::new(DbInner {
        dir: dir.to_path_buf(),
        values,
        layout,
        env: env.clone(),
        tables,
        block_cache,
        snapshots: Arc::default(),
        last_seq: AtomicU64::new(last_seq),
        file_numbers: versions.file_numbers(),
        wal: Mutex::new(WalState {
            mem: Arc::clone(&mem),
        }),
        queue: Mutex::default(),
        queue_cv: Condvar::new(),
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
        retired: Mutex::default(),
        value_job_lock: Mutex::new(()),
        shutting_down: AtomicBool::new(false),
        lock: Mutex::new(Some(lock)),
        options,
    });
    super::background::delete_obsolete_files(&inner);
    Ok(inner)
}

/// The identity a MANIFEST records: the layout, and a separated value placement (whose
/// stores another placement cannot read).
pub(crate) fn format_tag(options: &Options, layout: &dyn crate::layout::Layout) -> String {
    match options.values {
        crate::options::ValuesKind::Inline => layout.name().to_string(),
        _ => format!("{}+{}", layout.name(), values_name(options)),
    }
}

/// The name of the configured value placement (for the MANIFEST's format tag).
fn values_name(options: &Options) -> &'static str {
    match options.values {
        crate::options::ValuesKind::Inline => "inline",
        crate::options::ValuesKind::Vlog => "vlog",
    }
}

/// What log replay needs: it runs before the store's shared state exists.
struct Replay<'a> {
    options: &'a Options,
    dir: &'a Path,
    tables: &'a Arc<TableCache>,
    versions: &'a VersionSet,
}

impl Replay<'_> {
    fn flush(&self, mem: &Arc<dyn MemTable>, edit: &mut VersionEdit) -> Result<()> {
        let version = self.versions.current();
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
        };
        if let Some(f) = write_memtable(mem, &ctx)? {
            edit.new_files.push((0, f));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names() {
        assert_eq!(parse_file_name("000012.sst"), Some(FileKind::Table(12)));
        assert_eq!(parse_file_name("000007.log"), Some(FileKind::Log(7)));
        assert_eq!(
            parse_file_name("MANIFEST-000003"),
            Some(FileKind::Manifest(3))
        );
        assert_eq!(parse_file_name("CURRENT.tmp"), Some(FileKind::Temp));
        assert_eq!(parse_file_name("CURRENT"), None);
        assert_eq!(parse_file_name("LOCK"), None);
        assert_eq!(parse_file_name("notes.sst"), None);
        assert_eq!(parse_file_name("MANIFEST-x"), None);
    }
}
