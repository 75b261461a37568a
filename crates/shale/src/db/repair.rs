//! Repair (LevelDB's `RepairDB`, RocksDB's `RepairDB`): rebuild a store's MANIFEST and
//! CURRENT from the files in its directory, keeping every table and log record that reads.
//!
//! 1. **Find files**: every table, log, value-log segment and MANIFEST by its name; files
//!    the engine does not name are left alone. The newest MANIFEST that reads whole (the
//!    one CURRENT names first) is used for hints only: the store's id, the options record,
//!    a table's committed size (an appendable table may hold an uncommitted tail), the
//!    placement's log position, and the key range of a table that no longer reads.
//! 2. **Read every table** in full (`TableReader::verify`: every block's checksum, key
//!    order, counts). A table that fails, belongs to another store (its recorded store id),
//!    or whose values the placement cannot resolve (`ValueStore::salvage_check`) is *set
//!    aside*: moved into `lost/`, never deleted, and reported with its key range.
//! 3. **Convert the logs** (`ValueStore::salvage`): every entry the logs hold that the
//!    kept tables do not (newer than the newest sequence number they hold) goes through
//!    memtables into level-0 tables written by the layout's own flush; a torn or damaged
//!    tail of a log is dropped with what follows it in that log.
//! 4. **Place the tables**: everything in level 0, as LevelDB does. Level 0 is searched
//!    newest table first (by largest sequence number, `Version`), the first version found
//!    wins; that is right only if two tables whose key ranges overlap never have
//!    overlapping sequence ranges (tables of different levels can: a deeper table may hold
//!    an older version of one key and a newer version of another).
//!    Such tables are merged (in groups that keep the rule, `conflict_groups`) into new
//!    level-0 tables, as a compaction would, and the originals moved into `lost/`. Every
//!    layout answers from level 0 by this order (the leveled and LWC reads, FLSM's
//!    unguarded level 0, the trie's root container, whose pile is ordered the same way), and
//!    each compacts level 0 down by its own rules, so no layout needs a placement of its
//!    own.
//! 5. **Write a new MANIFEST** (a snapshot: the tables, the placement's state, the last
//!    sequence number, the next file number above every file, the store id and the options
//!    record) and point CURRENT at it, the commit point. Files set aside were moved before
//!    it; files whose contents the new tables now hold (converted logs, merged tables, old
//!    MANIFESTs) are moved into `lost/` after it.
//!
//! Repair takes the store's `LOCK`; a crash during it leaves a directory repair can run on
//! again (the tables it wrote before the commit are read as tables the next time).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::describe::Description;
use super::{Parts, Wiring};
use crate::compaction::{CompactionContext, MergeSpec, merge_into_tables};
use crate::env::{Env, ReadCause, WriteCause};
use crate::error::{Error, Result};
use crate::filename::{FileKind, LOCK_FILE, parse_file_name, table_file_name};
use crate::iter::InternalIterator;
use crate::iter::merging::MergingIterator;
use crate::key::SeqNo;
use crate::manifest::{
    self, AxisStates, FileMeta, Lifetime, MANIFEST_FORMAT_VERSION, ManifestWriter, PersistedState,
    VersionEdit,
};
use crate::memory::MemTable;
use crate::options::Options;
use crate::options::stored::StoredOptions;
use crate::table::format::recorded_identity;
use crate::table::{TableFormat, TableId, TableReadOptions, TableReader};
use crate::values::{RecoveredLog, SalvageContext};
use crate::version::Version;

/// The directory, inside the store's, that repair moves files into (as LevelDB does).
pub const LOST_DIR: &str = "lost";

/// A file repair moved into `lost/` because the store cannot use it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SetAside {
    /// Its name in the store's directory.
    pub name: String,
    /// Where it is now, relative to the store's directory (`lost/NAME`, or `lost/NAME.N`
    /// when an earlier repair left a file of that name there).
    pub moved_to: String,
    /// Why.
    pub reason: String,
    /// For a table: the entries it held, if known (its properties, or the MANIFEST's).
    pub entries: Option<u64>,
    /// For a table: its smallest and largest user key, if known (its properties, or the
    /// MANIFEST's record of it): the keys whose newest versions may be lost.
    pub key_range: Option<(Vec<u8>, Vec<u8>)>,
}

/// What [`crate::repair`] did.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct RepairReport {
    /// Tables the repaired store holds (all in level 0).
    pub tables: usize,
    /// Entries in them.
    pub entries: u64,
    /// Bytes of them.
    pub bytes: u64,
    /// Tables kept as they were.
    pub tables_kept: usize,
    /// Tables written from the logs' entries.
    pub tables_from_logs: usize,
    /// Tables merged because their key and sequence ranges overlapped (moved to `lost/`:
    /// the new tables hold their entries), and the tables the merges wrote.
    pub tables_merged: usize,
    /// Tables the merges wrote.
    pub tables_written_by_merges: usize,
    /// Every log and value-log segment read, with what it gave.
    pub logs: Vec<RecoveredLog>,
    /// Files the store cannot use, moved into `lost/`: damaged tables (their keys are
    /// lost), another store's files.
    pub set_aside: Vec<SetAside>,
    /// Files moved into `lost/` because the repaired store holds what they held (converted
    /// logs, merged tables, the old MANIFESTs), as `(name, where it is now)`.
    pub archived: Vec<(String, String)>,
    /// Other findings, one line each.
    pub notes: Vec<String>,
    /// The repaired store's newest sequence number.
    pub last_sequence: SeqNo,
    /// The repaired store's id (16 hex digits in `shale.store-id`).
    pub store_id: u64,
    /// The MANIFEST repair wrote.
    pub manifest: String,
    /// The MANIFEST repair took hints from, if one read.
    pub hints_from: Option<String>,
}

/// What the newest readable MANIFEST says.
struct Hints {
    name: String,
    /// Its tables, by number.
    files: BTreeMap<u64, FileMeta>,
    store_id: Option<u64>,
    placement: PersistedState,
    lifetime: Option<Lifetime>,
    /// Its flushed range tombstones, by sequence number.
    range_dels: BTreeMap<u64, crate::rangedel::RangeTombstone>,
}

/// The MANIFEST numbers of `names`, the one CURRENT names first, then the others newest
/// first.
fn manifest_candidates(env: &Env, dir: &Path, names: &[String]) -> Vec<u64> {
    let mut numbers: Vec<u64> = names
        .iter()
        .filter_map(|n| match parse_file_name(n) {
            Some(FileKind::Manifest(n)) => Some(n),
            _ => None,
        })
        .collect();
    numbers.sort_unstable_by(|a, b| b.cmp(a));
    if let Ok(current) = manifest::read_current(env, dir)
        && let Some(i) = numbers.iter().position(|&n| n == current)
    {
        numbers.remove(i);
        numbers.insert(0, current);
    }
    numbers
}

/// The edits of the first of `manifest_candidates` that reads whole.
fn newest_edits(env: &Env, dir: &Path, names: &[String]) -> Option<(u64, Vec<VersionEdit>)> {
    manifest_candidates(env, dir, names)
        .into_iter()
        .find_map(|n| match manifest::read_manifest(env, dir, n) {
            Ok(edits) if !edits.is_empty() => Some((n, edits)),
            _ => None,
        })
}

/// What the newest readable MANIFEST of `dir` records about the store's design, whether
/// CURRENT names it or not (`None`: no MANIFEST reads): what repair opens the store as.
///
/// # Errors
/// I/O listing the directory; a damaged options record in a MANIFEST that reads.
pub(crate) fn describe_for_repair(dir: &Path, env: &Env) -> Result<Option<Description>> {
    if !env.fs().exists(dir)? {
        return Ok(None);
    }
    let names = env.fs().list_dir(dir)?;
    let Some((number, edits)) = newest_edits(env, dir, &names) else {
        return Ok(None);
    };
    let options = match edits.iter().rev().find_map(|e| e.store_options.as_ref()) {
        Some(bytes) => Some(StoredOptions::decode(bytes).map_err(|detail| {
            Error::corruption(dir.join(manifest::manifest_file_name(number)), 0, detail)
        })?),
        None => None,
    };
    Ok(Some(Description {
        format_tag: edits.iter().find_map(|e| e.format_tag.clone()),
        options,
    }))
}

/// Fold the edits of the newest readable MANIFEST into hints (`None` when none reads, or
/// its records do not fit this store's parts).
fn hints(env: &Env, dir: &Path, names: &[String], parts: &Parts) -> Option<Hints> {
    let (number, edits) = newest_edits(env, dir, names)?;
    let mut files = BTreeMap::new();
    let mut axes = AxisStates::new(
        parts.values.empty_state(),
        parts.memory.empty_state(),
        parts.table.empty_state(),
    );
    let mut store_id = None;
    let mut log_number = 0;
    let mut lifetime = None;
    let mut range_dels = BTreeMap::new();
    for e in &edits {
        for (_, n) in &e.deleted_files {
            files.remove(n);
        }
        for t in &e.range_dels {
            range_dels.insert(t.seq, t.clone());
        }
        for s in &e.dropped_range_dels {
            range_dels.remove(s);
        }
        for (_, f) in &e.new_files {
            files.insert(f.number, f.clone());
        }
        axes.absorb(&e.records).ok()?;
        store_id = e.store_id.or(store_id);
        log_number = e.log_number.unwrap_or(log_number);
        if e.lifetime.is_some() {
            lifetime.clone_from(&e.lifetime);
        }
    }
    Some(Hints {
        name: manifest::manifest_file_name(number),
        files,
        store_id,
        placement: PersistedState {
            log_number,
            state: axes.values,
        },
        lifetime,
        range_dels,
    })
}

/// One table repair keeps.
struct Kept {
    meta: FileMeta,
    reader: Arc<dyn TableReader>,
}

/// Open generation `size` of table `number` and read it whole.
fn open_table(
    env: &Env,
    dir: &Path,
    format: &dyn TableFormat,
    number: u64,
    size: u64,
) -> Result<Arc<dyn TableReader>> {
    let file = env.open(&dir.join(table_file_name(number)))?;
    let options = TableReadOptions {
        block_cache: None,
        verify_checksums: true,
    };
    let table = format.open(file, TableId { number, size }, &options)?;
    table.verify()?;
    Ok(table)
}

/// The metadata of a table that read whole.
fn meta_of(number: u64, table: &dyn TableReader) -> FileMeta {
    let p = table.properties();
    FileMeta {
        number,
        size: table.file_size(),
        smallest: p.smallest.clone(),
        largest: p.largest.clone(),
        smallest_seq: p.smallest_seq,
        largest_seq: p.largest_seq,
        entries: p.num_entries,
        tombstones: p.num_tombstones,
        filter: Default::default(),
    }
}

/// Move `name` of `dir` into `dir/lost/` (a free name there: an earlier repair's file is
/// never replaced). Returns where it went, relative to `dir`.
fn move_to_lost(env: &Env, dir: &Path, name: &str) -> Result<String> {
    let fs = env.fs();
    let lost = dir.join(LOST_DIR);
    fs.create_dir_all(&lost)?;
    let mut target = name.to_string();
    let mut i = 1;
    while fs.exists(&lost.join(&target))? {
        target = format!("{name}.{i}");
        i += 1;
    }
    fs.rename(&dir.join(name), &lost.join(&target))?;
    Ok(format!("{LOST_DIR}/{target}"))
}

/// Groups (indexes into `metas`) such that tables of different groups never have both
/// overlapping user-key ranges and overlapping sequence ranges: within level 0 their order
/// by sequence number then gives every key's newest version first. A group of one is a
/// table that can stay as it is; a larger group is merged. Groups grow until the ranges
/// they span (which bound what their merge writes) keep the rule too.
fn conflict_groups(metas: &[&FileMeta]) -> Vec<Vec<usize>> {
    struct Span {
        members: Vec<usize>,
        lo: Vec<u8>,
        hi: Vec<u8>,
        lo_seq: SeqNo,
        hi_seq: SeqNo,
    }
    let conflict = |a: &Span, b: &Span| {
        a.lo <= b.hi && b.lo <= a.hi && a.lo_seq <= b.hi_seq && b.lo_seq <= a.hi_seq
    };
    let mut spans: Vec<Span> = metas
        .iter()
        .enumerate()
        .map(|(i, f)| Span {
            members: vec![i],
            lo: f.smallest_user_key().to_vec(),
            hi: f.largest_user_key().to_vec(),
            lo_seq: f.smallest_seq,
            hi_seq: f.largest_seq,
        })
        .collect();
    // By smallest sequence number: a span meets only the ones starting before its end.
    loop {
        spans.sort_by_key(|s| s.lo_seq);
        let mut merged = false;
        let mut out: Vec<Span> = Vec::with_capacity(spans.len());
        for s in spans {
            match out.iter_mut().rev().find(|o| conflict(o, &s)) {
                Some(o) => {
                    o.members.extend(s.members);
                    if s.lo < o.lo {
                        o.lo = s.lo;
                    }
                    if s.hi > o.hi {
                        o.hi = s.hi;
                    }
                    o.lo_seq = o.lo_seq.min(s.lo_seq);
                    o.hi_seq = o.hi_seq.max(s.hi_seq);
                    merged = true;
                }
                None => out.push(s),
            }
        }
        spans = out;
        if !merged {
            break;
        }
    }
    spans.into_iter().map(|s| s.members).collect()
}

/// Repair the store in `dir` with the parts `wiring` builds (the public [`crate::repair`]
/// is in `crate::design`, which reads the options record first): see the module docs.
pub(crate) fn repair_with(dir: &Path, options: Options, wiring: &Wiring) -> Result<RepairReport> {
    options.validate()?;
    let env = options.env.clone();
    let fs = env.fs().clone();
    if !fs.exists(dir)? {
        return Err(Error::InvalidArgument(format!(
            "no store at {}: the directory does not exist",
            dir.display()
        )));
    }
    let _lock = fs.lock(&dir.join(LOCK_FILE))?;
    let names = fs.list_dir(dir)?;
    if !names
        .iter()
        .any(|n| parse_file_name(n).is_some_and(|k| k.number().is_some()))
    {
        return Err(Error::InvalidArgument(format!(
            "no store at {}: it holds no table, log, value-log segment or MANIFEST",
            dir.display()
        )));
    }
    let (parts, file_numbers) = super::open::build_parts(dir, &options, wiring)?;
    let hints = hints(&env, dir, &names, &parts);
    let mut report = RepairReport {
        hints_from: hints.as_ref().map(|h| h.name.clone()),
        ..RepairReport::default()
    };
    let format = Arc::clone(&parts.table);

    // Read every table.
    let mut table_numbers: Vec<u64> = names
        .iter()
        .filter_map(|n| match parse_file_name(n) {
            Some(FileKind::Table(n)) => Some(n),
            _ => None,
        })
        .collect();
    table_numbers.sort_unstable();
    let mut opened: Vec<Kept> = Vec::new();
    // Tables to set aside, with why (moved before the commit).
    let mut refused: Vec<(u64, String, Option<FileMeta>)> = Vec::new();
    let mut archive: Vec<String> = Vec::new();
    for &n in &table_numbers {
        let size = fs.file_size(&dir.join(table_file_name(n)))?;
        let hinted = hints.as_ref().and_then(|h| h.files.get(&n)).map(|f| f.size);
        // An appendable table may hold an append whose edit never committed: its committed
        // generation first.
        let mut sizes = vec![size];
        if let Some(s) = hinted.filter(|&s| s != size && s < size) {
            sizes.insert(0, s);
        }
        let mut last_err = None;
        let mut table = None;
        for s in sizes {
            match open_table(&env, dir, format.as_ref(), n, s) {
                Ok(t) => {
                    table = Some(t);
                    break;
                }
                Err(
                    e @ (Error::Corruption { .. }
                    | Error::Unsupported(_)
                    | Error::InvalidArgument(_)),
                ) => {
                    last_err = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        match (table, last_err) {
            (Some(t), _) => opened.push(Kept {
                meta: meta_of(n, t.as_ref()),
                reader: t,
            }),
            (None, e) => {
                let why = e.map_or_else(|| "unreadable".to_string(), |e| e.to_string());
                refused.push((n, format!("the table does not read: {why}"), None));
            }
        }
    }
    if hints.is_none() && !table_numbers.is_empty() && opened.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "none of the {} tables in {} reads as a {} table, and no MANIFEST says how the \
             store was made: repair it with its own design (--design, or the axis flags); \
             nothing was changed",
            table_numbers.len(),
            dir.display(),
            format.name()
        )));
    }

    // The store's id.
    let from_tables = || {
        let mut counts: HashMap<u64, usize> = HashMap::new();
        for k in &opened {
            if let Some(id) = recorded_identity(k.reader.as_ref()) {
                *counts.entry(id.store_id).or_default() += 1;
            }
        }
        counts
            .into_iter()
            .max_by_key(|&(id, c)| (c, id))
            .map(|(id, _)| id)
    };
    let known = hints
        .as_ref()
        .and_then(|h| h.store_id)
        .or_else(from_tables)
        .or_else(|| parts.values.salvage_store_id(&env, dir, &names));
    let store_id = known.unwrap_or_else(manifest::new_store_id);
    report.store_id = store_id;
    opened.retain(|k| {
        let foreign = recorded_identity(k.reader.as_ref()).filter(|id| id.store_id != store_id);
        if let Some(id) = foreign {
            refused.push((
                k.meta.number,
                format!(
                    "the table belongs to another store: it records store {:016x}, this store is {store_id:016x}",
                    id.store_id
                ),
                Some(k.meta.clone()),
            ));
        } else if k.meta.entries == 0 {
            archive.push(table_file_name(k.meta.number));
        }
        foreign.is_none() && k.meta.entries > 0
    });

    // The placement's check of the kept tables (value pointers).
    let readers: Vec<Arc<dyn TableReader>> = opened.iter().map(|k| Arc::clone(&k.reader)).collect();
    let ctx = SalvageContext {
        env: &env,
        dir,
        names: &names,
        store_id,
        store_id_known: known.is_some(),
        state: hints.as_ref().map(|h| &h.placement),
        tables: &readers,
    };
    let mut bad = parts.values.salvage_check(&ctx)?;
    bad.sort_by_key(|b| std::cmp::Reverse(b.0));
    bad.dedup_by_key(|b| b.0);
    for (i, why) in bad {
        if i < opened.len() {
            let k = opened.remove(i);
            refused.push((k.meta.number, why, Some(k.meta)));
        }
    }
    let flushed_seq = opened.iter().map(|k| k.meta.largest_seq).max().unwrap_or(0);

    // Convert the logs into level-0 tables, through memtables and the layout's flush.
    let (_, tables) = super::open::caches(dir, &options, Arc::clone(&format), Some(store_id));
    let empty = Version::with_layout(options.num_levels, parts.layout.empty_state());
    let new_file = || file_numbers.fetch_add(1, Ordering::Relaxed);
    let stop = AtomicBool::new(false);
    let cctx = CompactionContext {
        env: &env,
        dir,
        table_options: &options.table,
        tables: &tables,
        version: &empty,
        snapshots: &[],
        new_file_number: &new_file,
        stop: &stop,
        cause: WriteCause::Flush,
        on_discard: &|_, _| {},
        check_new_tables: options.verify_new_tables,
        filter: None,
    };
    let readers: Vec<Arc<dyn TableReader>> = opened.iter().map(|k| Arc::clone(&k.reader)).collect();
    let ctx = SalvageContext {
        tables: &readers,
        ..ctx
    };
    let mut placement_edit = VersionEdit::default();
    let mut from_logs: Vec<FileMeta> = Vec::new();
    // Range tombstones the logs hold: kept with the flushed ones the MANIFEST listed.
    let mut salvaged_dels: Vec<crate::rangedel::RangeTombstone> = Vec::new();
    let salvaged = {
        let flush = |mem: &Arc<dyn MemTable>, out: &mut Vec<FileMeta>| -> Result<()> {
            let edit = super::background::flush_memtable(
                parts.layout.as_ref(),
                parts.values.as_ref(),
                mem,
                &cctx,
            )?;
            out.extend(edit.new_files.into_iter().map(|(_, f)| f));
            Ok(())
        };
        let mut mem: Arc<dyn MemTable> = parts.memory.new_memtable();
        let mut failed: Option<Error> = None;
        let salvaged = parts.values.salvage(
            &ctx,
            flushed_seq,
            &mut |key, seq, kind, value| {
                if failed.is_some() {
                    return;
                }
                if kind == crate::key::ValueKind::RangeDelete {
                    salvaged_dels.push(crate::rangedel::RangeTombstone::from_record(
                        key, seq, value,
                    ));
                    return;
                }
                mem.insert(key, seq, kind, value);
                if mem.approximate_bytes() >= options.write_buffer_size {
                    if let Err(e) = flush(&mem, &mut from_logs) {
                        failed = Some(e);
                    }
                    mem = parts.memory.new_memtable();
                }
            },
            &mut placement_edit,
        );
        let salvaged = match (salvaged, failed) {
            (Ok(s), None) => s,
            (Err(e), _) | (Ok(_), Some(e)) => {
                discard(&env, dir, &from_logs);
                return Err(e);
            }
        };
        if let Err(e) = flush(&mem, &mut from_logs) {
            discard(&env, dir, &from_logs);
            return Err(e);
        }
        salvaged
    };
    report.tables_from_logs = from_logs.len();
    report.logs.clone_from(&salvaged.logs);
    report.notes.extend(salvaged.notes.iter().cloned());

    // Place everything in level 0, merging tables whose order there would be wrong.
    let mut metas: Vec<FileMeta> = opened.iter().map(|k| k.meta.clone()).collect();
    let logs_from = metas.len();
    metas.extend(from_logs.iter().cloned());
    let groups = {
        let refs: Vec<&FileMeta> = metas.iter().collect();
        conflict_groups(&refs)
    };
    let mut placed: Vec<FileMeta> = Vec::new();
    let mut merged_away: Vec<usize> = Vec::new();
    let mut written: Vec<FileMeta> = Vec::new();
    let merge = |group: &[usize], written: &mut Vec<FileMeta>| -> Result<Vec<FileMeta>> {
        let mut inputs: Vec<Box<dyn InternalIterator>> = Vec::with_capacity(group.len());
        for &i in group {
            let reader = match opened.get(i) {
                Some(k) => Arc::clone(&k.reader),
                None => tables.table(metas[i].table_id())?,
            };
            inputs.push(reader.iter(ReadCause::Compaction.into()));
        }
        let mut input = MergingIterator::new(inputs);
        let spec = MergeSpec {
            target_file_size: options.target_file_size,
            // Tombstones stay: a table of another group may hold an older version.
            is_base_for_key: &|_| false,
            level: 0,
            partition: None,
            pile: None,
        };
        let ctx = CompactionContext {
            cause: WriteCause::Compaction,
            ..cctx
        };
        let (files, _) = merge_into_tables(&mut input, &spec, &ctx)?;
        written.extend(files.iter().cloned());
        Ok(files)
    };
    for group in &groups {
        match group.as_slice() {
            [i] => {
                placed.push(metas[*i].clone());
                if *i < logs_from {
                    report.tables_kept += 1;
                }
            }
            _ => match merge(group, &mut written) {
                Ok(files) => {
                    placed.extend(files);
                    merged_away.extend(group.iter().copied());
                }
                Err(e) => {
                    discard(&env, dir, &written);
                    discard(&env, dir, &from_logs);
                    return Err(e);
                }
            },
        }
    }
    report.tables_merged = merged_away.len();
    report.tables_written_by_merges = written.len();
    for &i in &merged_away {
        let name = table_file_name(metas[i].number);
        if i < logs_from {
            archive.push(name);
        } else {
            // A table this repair wrote from the logs: its entries are in the merge's.
            tables.evict(metas[i].number);
            let _ = fs.remove_file(&dir.join(name));
        }
    }

    // The repaired version and the placement's state.
    let mut files_edit = VersionEdit::default();
    files_edit
        .new_files
        .extend(placed.iter().cloned().map(|f| (0u32, f)));
    if let Some(h) = &hints {
        files_edit.range_dels.extend(h.range_dels.values().cloned());
    }
    files_edit.range_dels.extend(salvaged_dels);
    let version = empty.apply(&files_edit).map_err(|d| {
        Error::corruption(
            dir,
            0,
            format!("repair built a version that does not apply: {d}"),
        )
    })?;
    // The placement counts its garbage against the repaired tables' newest versions (the
    // old MANIFEST's counts are gone with it).
    if let Err(e) = count_garbage(&placed, &tables, parts.values.as_ref(), &mut placement_edit) {
        discard(&env, dir, &written);
        discard(&env, dir, &from_logs);
        return Err(e);
    }
    let mut axes = AxisStates::new(
        parts.values.empty_state(),
        parts.memory.empty_state(),
        parts.table.empty_state(),
    );
    axes.absorb(&placement_edit.records).map_err(|d| {
        Error::corruption(
            dir,
            0,
            format!("repair's value-placement state does not fit: {d}"),
        )
    })?;
    let last_sequence = placed
        .iter()
        .map(|f| f.largest_seq)
        .chain([flushed_seq, salvaged.last_seq])
        .max()
        .unwrap_or(0);

    // Before the commit: set aside what the store cannot use, so that no open sweeps it.
    let hinted_meta = |n: u64| hints.as_ref().and_then(|h| h.files.get(&n)).cloned();
    for (n, reason, meta) in refused {
        let name = table_file_name(n);
        let meta = meta.or_else(|| hinted_meta(n));
        let moved_to = move_to_lost(&env, dir, &name)?;
        report.set_aside.push(SetAside {
            name,
            moved_to,
            reason,
            entries: meta.as_ref().map(|m| m.entries),
            key_range: meta.as_ref().filter(|m| !m.smallest.is_empty()).map(|m| {
                (
                    m.smallest_user_key().to_vec(),
                    m.largest_user_key().to_vec(),
                )
            }),
        });
    }
    for (name, reason) in &salvaged.set_aside {
        let moved_to = move_to_lost(&env, dir, name)?;
        report.set_aside.push(SetAside {
            name: name.clone(),
            moved_to,
            reason: reason.clone(),
            entries: None,
            key_range: None,
        });
    }
    if !report.set_aside.is_empty() {
        fs.sync_dir(&dir.join(LOST_DIR))?;
    }
    fs.sync_dir(dir)?;

    // The commit: a new MANIFEST holding the whole repaired store, then CURRENT.
    let number = file_numbers.fetch_add(1, Ordering::Relaxed);
    let mut edit = version.snapshot_edit();
    edit.manifest_version = Some(MANIFEST_FORMAT_VERSION);
    axes.snapshot(&mut edit.records);
    edit.log_number = Some(placement_edit.log_number.unwrap_or(0));
    edit.next_file_number = Some(file_numbers.load(Ordering::Relaxed));
    edit.last_sequence = Some(last_sequence);
    edit.format_tag = Some(super::format_tag(
        parts.layout.as_ref(),
        parts.values.as_ref(),
    ));
    edit.store_id = Some(store_id);
    edit.store_options = Some(StoredOptions::of(&options).encode());
    edit.lifetime = Some(
        hints
            .as_ref()
            .and_then(|h| h.lifetime.clone())
            .unwrap_or_default(),
    );
    let mut writer = ManifestWriter::create(&env, dir, number)?;
    writer.append(&edit)?;
    drop(writer);
    manifest::write_current(&env, dir, number)?;
    report.manifest = manifest::manifest_file_name(number);

    // After it: what the repaired store no longer needs goes to `lost/` too.
    archive.extend(salvaged.converted.iter().cloned());
    archive.extend(
        names
            .iter()
            .filter(|n| matches!(parse_file_name(n), Some(FileKind::Manifest(m)) if m != number))
            .cloned(),
    );
    for name in archive {
        if fs.exists(&dir.join(&name))? {
            let moved_to = move_to_lost(&env, dir, &name)?;
            report.archived.push((name, moved_to));
        }
    }
    if !report.archived.is_empty() {
        fs.sync_dir(&dir.join(LOST_DIR))?;
        fs.sync_dir(dir)?;
    }
    report.tables = placed.len();
    report.entries = placed.iter().map(|f| f.entries).sum();
    report.bytes = placed.iter().map(|f| f.size).sum();
    report.last_sequence = last_sequence;
    Ok(report)
}

/// [`crate::values::ValueStore::salvage_garbage`] over the newest version of each key the
/// tables `placed` hold.
fn count_garbage(
    placed: &[FileMeta],
    tables: &crate::table::cache::TableCache,
    values: &dyn crate::values::ValueStore,
    edit: &mut VersionEdit,
) -> Result<()> {
    let mut inputs: Vec<Box<dyn InternalIterator>> = Vec::with_capacity(placed.len());
    for f in placed {
        inputs.push(tables.table(f.table_id())?.iter(ReadCause::Other.into()));
    }
    let mut it = MergingIterator::new(inputs);
    it.seek_to_first()?;
    let mut last: Option<Vec<u8>> = None;
    let mut newest = std::iter::from_fn(|| {
        while it.valid() {
            let entry = match crate::key::parse_internal_key(it.key()) {
                Ok(p) if last.as_deref() != Some(p.user_key) => {
                    last = Some(p.user_key.to_vec());
                    Some((p.kind, it.value().to_vec()))
                }
                Ok(_) => None,
                Err(d) => return Some(Err(Error::corruption(Path::new(""), 0, d.to_string()))),
            };
            if let Err(e) = it.next() {
                return Some(Err(e));
            }
            if let Some(entry) = entry {
                return Some(Ok(entry));
            }
        }
        None
    });
    values.salvage_garbage(&mut newest, edit)
}

/// Remove tables this repair wrote and will not commit (best effort: a later repair reads
/// any left as tables, whose entries it then holds twice, harmlessly).
fn discard(env: &Env, dir: &Path, files: &[FileMeta]) {
    for f in files {
        let _ = env.fs().remove_file(&dir.join(table_file_name(f.number)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key};

    fn file(number: u64, lo: &str, hi: &str, seqs: (SeqNo, SeqNo)) -> FileMeta {
        FileMeta {
            number,
            size: 1,
            smallest: make_internal_key(lo.as_bytes(), seqs.0, ValueKind::Value),
            largest: make_internal_key(hi.as_bytes(), seqs.1, ValueKind::Value),
            smallest_seq: seqs.0,
            largest_seq: seqs.1,
            entries: 1,
            tombstones: 0,
            filter: Default::default(),
        }
    }

    fn groups(files: &[FileMeta]) -> Vec<Vec<u64>> {
        let refs: Vec<&FileMeta> = files.iter().collect();
        let mut g: Vec<Vec<u64>> = conflict_groups(&refs)
            .into_iter()
            .map(|g| {
                let mut n: Vec<u64> = g.iter().map(|&i| files[i].number).collect();
                n.sort_unstable();
                n
            })
            .collect();
        g.sort();
        g
    }

    #[test]
    fn tables_overlapping_in_keys_and_sequences_are_grouped() {
        // Flushes: disjoint sequence ranges, overlapping keys: each stays.
        let flushes = [file(1, "a", "z", (1, 10)), file(2, "a", "z", (11, 20))];
        assert_eq!(groups(&flushes), [vec![1], vec![2]]);
        // Two levels of a leveled tree: overlapping keys and sequences: merged.
        let levels = [file(3, "c", "f", (5, 40)), file(4, "a", "z", (1, 30))];
        assert_eq!(groups(&levels), [vec![3, 4]]);
        // Disjoint keys: each stays, whatever the sequences.
        let apart = [file(5, "a", "b", (1, 40)), file(6, "c", "d", (1, 40))];
        assert_eq!(groups(&apart), [vec![5], vec![6]]);
        // A merge's span reaches a third table it did not meet on its own.
        let chain = [
            file(7, "a", "c", (1, 10)),
            file(8, "b", "f", (5, 20)),
            file(9, "e", "g", (15, 25)),
            file(10, "x", "z", (1, 30)),
        ];
        assert_eq!(groups(&chain), [vec![7, 8, 9], vec![10]]);
    }
}
