//! The compaction executor: merge sorted inputs into new table files, dropping what no
//! reader can see any more.
//!
//! Layouts decide *what* to compact ([`crate::layout::Layout::pick`]); the common work of
//! merging and writing lives here so every layout drops versions by the same rules.
//!
//! # What may be dropped
//!
//! Let the live snapshots be `s_1 < … < s_k`, and `s_{k+1} = ∞` stand for the latest view.
//! An entry with sequence number `q` is seen by the snapshots `s_i >= q`; call the smallest
//! such `i` its *stripe*. For one user key, entries arrive newest first. A reader at `s_i`
//! sees the newest entry with `q <= s_i`, so within a stripe only the newest entry is ever
//! seen: every older entry in the same stripe is dropped. A tombstone in stripe 1 that is the
//! newest of its stripe hides everything older from every reader; if no deeper level can hold
//! the key (`is_base_for_key`), nothing older exists outside this compaction either, and the
//! tombstone itself is dropped.
//!
//! # Range tombstones
//!
//! The flushed range tombstones of the version the plan was made from
//! ([`crate::rangedel`]) drop an entry `(key, q)` when a tombstone `r > q` covers `key` and
//! no snapshot lies in `[q, r)`: every reader that would see the entry sees the tombstone
//! too (the same stripe rule). Older entries of the key are covered by the same tombstone
//! and dropped by the same test or as shadowed. The tombstones stay in the version until
//! no file holds an entry they could hide (`Version::obsolete_range_dels`), so what a
//! compaction leaves in deeper levels stays hidden. Only flushed tombstones are used: they
//! were all published before the plan was made.
//!
//! # The compaction filter
//!
//! With [`crate::Options::compaction_filter`] set, the same loop asks it about the newest
//! entry of each user key when that entry is in the last stripe (no snapshot sees it) and
//! holds a value ([`filter`]; the rules are `crate::options::filter`'s). A removal becomes
//! a tombstone in that stripe, dropped where a tombstone would be; a changed value is
//! written inline with the entry's sequence number. Either way the older entries of the
//! stripe are dropped as shadowed, as they would be behind any newer entry.

pub mod filter;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::env::{Env, WriteCause};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{SeqNo, ValueKind, make_internal_key, parse_internal_key};
use crate::options::filter::{FilterContext, FilterReason};
use crate::options::{NewTableCheck, TableOptions};
use crate::table::cache::TableCache;
use crate::table::table_file_name;
use crate::table::{KeyDigest, TableWriter};
use crate::version::FileMeta;

/// What the engine gives a layout to write files with.
pub struct CompactionContext<'a> {
    /// The file system.
    pub env: &'a Env,
    /// The store's directory.
    pub dir: &'a Path,
    /// Table format options.
    pub table_options: &'a TableOptions,
    /// Open tables (inputs are read through it); outputs are written in its format
    /// ([`TableCache::format`]).
    pub tables: &'a std::sync::Arc<TableCache>,
    /// The version the plan was made from.
    pub version: &'a crate::version::Version,
    /// Sequence numbers of live snapshots, ascending.
    pub snapshots: &'a [SeqNo],
    /// Draw a new file number for an output (the engine keeps it from being deleted as
    /// obsolete until the edit is committed).
    pub new_file_number: &'a dyn Fn() -> u64,
    /// Set when the store is closing: long compactions stop early with an error.
    pub stop: &'a AtomicBool,
    /// Counted cause of the bytes written.
    pub cause: WriteCause,
    /// Told of every entry the merge drops, as (kind, stored value): the value placement
    /// learns which separated values became garbage.
    pub on_discard: &'a dyn Fn(ValueKind, &[u8]),
    /// How each table written is read back before it is handed on to be committed
    /// ([`crate::options::Options::verify_new_tables`]).
    pub check_new_tables: NewTableCheck,
    /// The store's compaction filter and what running it needs; `None` without one.
    pub filter: Option<filter::FilterHook<'a>>,
}

/// Which output partition a user key goes to ([`MergeSpec::partition`]), and the key's
/// SHA-1 if the function computed it to choose: the writer is then given it with each of
/// the key's entries ([`TableWriter::add_hashed`]), so a format that hashes keys the same
/// way does not hash them again.
pub type Partition<'a> = dyn Fn(&[u8]) -> (usize, Option<KeyDigest>) + 'a;

/// How one merge writes its output.
pub struct MergeSpec<'a> {
    /// Start a new output file once the current one reaches this size (at a user-key
    /// boundary, so all versions of a key stay in one file).
    pub target_file_size: u64,
    /// True if no data older than this merge's inputs can hold `user_key` (so a tombstone
    /// for it can be dropped).
    pub is_base_for_key: &'a dyn Fn(&[u8]) -> bool,
    /// The level the output goes to (what the compaction filter is told).
    pub level: usize,
    /// Split the output by key: each user key goes to the output table of the partition
    /// this returns for it, one open table per partition (LSM-trie writes one table per
    /// child container). `None`: one stream of tables, cut by size.
    pub partition: Option<&'a Partition<'a>>,
    /// The pile a new output of a partition (0 without partitions) is laid on, told to its
    /// writer ([`TableWriter::lay_on`]): a layout of piles gives it so that a format that
    /// clusters filters across a pile (`htable`) can. `None`: nothing is said.
    pub pile: Option<&'a PileOf<'a>>,
}

/// The pile the output of a partition is laid on ([`MergeSpec::pile`]).
pub type PileOf<'a> = dyn Fn(usize) -> Option<crate::table::Pile> + 'a;

/// Where a merge appends instead of writing new tables (a layout of appendable tables,
/// [`crate::table::TableFormat::appendable`]): each user key's entries go to one of
/// `targets` as part of a new segment, and the tables keep their numbers and grow.
pub struct AppendSpec<'a> {
    /// The tables that receive the entries, in key order.
    pub targets: &'a [std::sync::Arc<FileMeta>],
    /// The index in `targets` of the table a user key goes to. It must not decrease as the
    /// keys increase: each table receives one contiguous run of keys, one segment.
    pub route: &'a dyn Fn(&[u8]) -> usize,
}

/// Where one merge writes.
#[derive(Clone, Copy)]
enum Outputs<'a> {
    /// New tables, cut at user-key boundaries once they reach the size.
    New { target_file_size: u64 },
    /// One new segment per target that receives entries.
    Append(&'a AppendSpec<'a>),
}

/// The table a merge writes into now.
struct OpenOutput {
    /// Its file number (a new one, or the target's).
    number: u64,
    /// The target's index for an append.
    target: Option<usize>,
    writer: Box<dyn TableWriter>,
}

/// Counters of one merge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Entries read.
    pub entries_in: u64,
    /// Entries written.
    pub entries_out: u64,
    /// Entries dropped because a newer one hides them from every reader.
    pub dropped_shadowed: u64,
    /// Tombstones dropped at the base level.
    pub dropped_tombstones: u64,
    /// Entries dropped because a flushed range tombstone hides them from every reader.
    pub dropped_range_deleted: u64,
    /// Entries the compaction filter removed (written as tombstones, or dropped).
    pub filter_removed: u64,
    /// Entries whose value the compaction filter changed.
    pub filter_changed: u64,
    /// Entries left unfiltered because their separated value could not be read (a version
    /// shadowed by a newer one, whose record collection dropped).
    pub filter_unreadable: u64,
}

/// Merge everything `input` yields (in internal-key order) into new table files.
/// Returns the files written (already synced, directory synced) and counters.
pub fn merge_into_tables(
    input: &mut dyn InternalIterator,
    spec: &MergeSpec<'_>,
    ctx: &CompactionContext<'_>,
) -> Result<(Vec<FileMeta>, MergeStats)> {
    let outputs = Outputs::New {
        target_file_size: spec.target_file_size,
    };
    merge_filtered(input, spec, outputs, ctx)
}

/// Merge everything `input` yields (in internal-key order), dropping what no reader can
/// see as [`merge_into_tables`] does, and append it to `append.targets` as new segments
/// (`spec.target_file_size` is not used). Returns the new generation of every target that
/// received entries (same number, the new committed size, its whole key and sequence
/// range), in key order, and counters. Nothing is committed: until the edit recording the
/// new sizes commits, readers see the targets as they were, and a crash leaves tails that
/// the next append cuts. On failure the targets are left as they were committed.
///
/// # Errors
/// I/O errors; [`Error::Unsupported`] for a format that does not append;
/// [`Error::Corruption`] for a target that cannot be read; [`Error::Closed`].
pub fn merge_into_appends(
    input: &mut dyn InternalIterator,
    spec: &MergeSpec<'_>,
    append: &AppendSpec<'_>,
    ctx: &CompactionContext<'_>,
) -> Result<(Vec<FileMeta>, MergeStats)> {
    merge_filtered(input, spec, Outputs::Append(append), ctx)
}

fn merge_filtered(
    input: &mut dyn InternalIterator,
    spec: &MergeSpec<'_>,
    outputs: Outputs<'_>,
    ctx: &CompactionContext<'_>,
) -> Result<(Vec<FileMeta>, MergeStats)> {
    // The one check of the filter per merge: the loop is compiled once without it.
    match ctx.filter {
        None => merge_with(input, spec, outputs, ctx, &mut filter::NoFilter),
        Some(hook) => {
            let reason = match ctx.cause {
                WriteCause::Flush => FilterReason::Flush,
                _ => FilterReason::Compaction,
            };
            let mut f = filter::Filtering {
                hook,
                context: FilterContext {
                    reason,
                    level: spec.level,
                },
                unreadable: 0,
            };
            let (files, mut stats) = merge_with(input, spec, outputs, ctx, &mut f)?;
            stats.filter_unreadable = f.unreadable;
            Ok((files, stats))
        }
    }
}

fn merge_with<H: filter::EntryHook>(
    input: &mut dyn InternalIterator,
    spec: &MergeSpec<'_>,
    outputs_to: Outputs<'_>,
    ctx: &CompactionContext<'_>,
    hook: &mut H,
) -> Result<(Vec<FileMeta>, MergeStats)> {
    let mut outputs: Vec<FileMeta> = Vec::new();
    let mut stats = MergeStats::default();
    // The open output of the current key's partition, and those of the other partitions.
    let mut builder: Option<OpenOutput> = None;
    let mut parked: Vec<(usize, OpenOutput)> = Vec::new();
    let mut part = 0usize;
    let range_dels = ctx.version.range_dels();
    let result = (|| -> Result<()> {
        let mut current_key: Vec<u8> = Vec::new();
        let mut has_current = false;
        let mut last_stripe = usize::MAX;
        // The target the current user key goes to (appends).
        let mut route = 0usize;
        // The current user key's SHA-1, when the partition computed it.
        let mut digest: Option<KeyDigest> = None;
        input.seek_to_first()?;
        while input.valid() {
            if ctx.stop.load(Ordering::Relaxed) {
                return Err(Error::Closed);
            }
            let ikey = input.key();
            let parsed = parse_internal_key(ikey)
                .map_err(|d| Error::corruption(ctx.dir, 0, format!("compaction input: {d}")))?;
            stats.entries_in += 1;
            let new_key = !has_current || parsed.user_key != current_key.as_slice();
            if new_key {
                digest = None;
            }
            if new_key && let Some(f) = spec.partition {
                let (p, d) = f(parsed.user_key);
                digest = d;
                if p != part {
                    if let Some(b) = builder.take() {
                        parked.push((part, b));
                    }
                    if let Some(i) = parked.iter().position(|(q, _)| *q == p) {
                        builder = Some(parked.swap_remove(i).1);
                    }
                    part = p;
                }
            }
            if new_key {
                // A user-key boundary: the place where an output file may end.
                let end = match outputs_to {
                    Outputs::New { target_file_size } => builder
                        .as_ref()
                        .is_some_and(|b| b.writer.estimated_size() >= target_file_size),
                    Outputs::Append(a) => {
                        route = (a.route)(parsed.user_key);
                        builder.as_ref().is_some_and(|b| b.target != Some(route))
                    }
                };
                if end && let Some(b) = builder.take() {
                    outputs.push(finish(b.number, b.writer)?);
                }
                current_key.clear();
                current_key.extend_from_slice(parsed.user_key);
                has_current = true;
                last_stripe = usize::MAX;
            }
            let stripe = ctx.snapshots.partition_point(|&s| s < parsed.seq);
            // A range tombstone newer than the entry in the same stripe hides it from
            // every reader that could see it (module docs).
            if range_dels
                .min_covering_above(parsed.user_key, parsed.seq)
                .is_some_and(|r| ctx.snapshots.partition_point(|&s| s < r) == stripe)
            {
                stats.dropped_range_deleted += 1;
                (ctx.on_discard)(parsed.kind, input.value());
                last_stripe = stripe;
                input.next()?;
                continue;
            }
            // The filter: the newest entry of the key, seen by no snapshot.
            let mut rewritten: Option<(ValueKind, Vec<u8>)> = None;
            if H::ACTIVE && new_key && stripe == ctx.snapshots.len() {
                match hook.decide(parsed.user_key, parsed.kind, input.value())? {
                    filter::Verdict::Keep => {}
                    filter::Verdict::Remove => {
                        stats.filter_removed += 1;
                        rewritten = Some((ValueKind::Delete, Vec::new()));
                    }
                    filter::Verdict::Change(v) => {
                        stats.filter_changed += 1;
                        rewritten = Some((ValueKind::Value, v));
                    }
                }
            }
            let kind = rewritten.as_ref().map_or(parsed.kind, |(k, _)| *k);
            let drop = if stripe == last_stripe {
                stats.dropped_shadowed += 1;
                true
            } else if kind == ValueKind::Delete
                && stripe == 0
                && (spec.is_base_for_key)(parsed.user_key)
            {
                stats.dropped_tombstones += 1;
                true
            } else {
                false
            };
            last_stripe = stripe;
            if drop {
                // A filtered entry's stored value was reported by the filter's hook.
                if rewritten.is_none() {
                    (ctx.on_discard)(parsed.kind, input.value());
                }
            } else {
                if builder.is_none() {
                    let mut o = open_output(outputs_to, route, &outputs, ctx)?;
                    if let (Outputs::New { .. }, Some(pile)) = (outputs_to, spec.pile)
                        && let Some(p) = pile(part)
                    {
                        o.writer.lay_on(&p);
                    }
                    builder = Some(o);
                }
                if let Some(b) = builder.as_mut().map(|o| &mut o.writer) {
                    match (&rewritten, &digest) {
                        (None, None) => b.add(input.key(), input.value())?,
                        (None, Some(d)) => b.add_hashed(input.key(), input.value(), d)?,
                        (Some((kind, value)), d) => {
                            let key = make_internal_key(parsed.user_key, parsed.seq, *kind);
                            match d {
                                Some(d) => b.add_hashed(&key, value, d)?,
                                None => b.add(&key, value)?,
                            }
                        }
                    }
                }
                stats.entries_out += 1;
            }
            input.next()?;
        }
        if let Some(b) = builder.take() {
            outputs.push(finish(b.number, b.writer)?);
        }
        parked.sort_by_key(|(p, _)| *p);
        while !parked.is_empty() {
            let (_, b) = parked.remove(0);
            outputs.push(finish(b.number, b.writer)?);
        }
        if !outputs.is_empty() && matches!(outputs_to, Outputs::New { .. }) {
            ctx.env.fs().sync_dir(ctx.dir)?;
        }
        for f in &outputs {
            check_new_table(f, ctx)?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        if let Outputs::Append(a) = outputs_to {
            // The targets stay as committed: what was appended is a tail no reader of the
            // committed generation reads, which the next append cuts. Nothing of it may
            // stay cached (a later append writes other blocks at the same offsets).
            let open = builder
                .take()
                .into_iter()
                .chain(std::mem::take(&mut parked).into_iter().map(|(_, b)| b));
            for b in open {
                b.writer.abandon();
            }
            for t in a.targets {
                ctx.tables.evict(t.number);
            }
            return Err(e);
        }
        let open = builder
            .take()
            .into_iter()
            .chain(std::mem::take(&mut parked).into_iter().map(|(_, b)| b));
        for OpenOutput {
            number, writer: b, ..
        } in open
        {
            b.abandon();
            outputs.push(FileMeta {
                number,
                size: 0,
                smallest: Vec::new(),
                largest: Vec::new(),
                smallest_seq: 0,
                largest_seq: 0,
                entries: 0,
                tombstones: 0,
                filter: Default::default(),
            });
        }
        // Best effort: the files are not referenced by any version, and the next sweep of
        // obsolete files would remove them anyway.
        for f in &outputs {
            ctx.tables.evict(f.number);
            let _ = ctx
                .env
                .fs()
                .remove_file(&ctx.dir.join(table_file_name(f.number)));
        }
        return Err(e);
    }
    Ok((outputs, stats))
}

/// The writer of the next output: a new table, or a new segment of the target `route`.
fn open_output(
    to: Outputs<'_>,
    route: usize,
    done: &[FileMeta],
    ctx: &CompactionContext<'_>,
) -> Result<OpenOutput> {
    match to {
        Outputs::New { .. } => {
            let number = (ctx.new_file_number)();
            let path = ctx.dir.join(table_file_name(number));
            let file = ctx.env.create(&path, ctx.cause)?;
            let identity = ctx.tables.identity(number);
            let writer = ctx
                .tables
                .format()
                .builder(file, ctx.table_options, identity);
            Ok(OpenOutput {
                number,
                target: None,
                writer,
            })
        }
        Outputs::Append(a) => {
            let t = a.targets.get(route).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "an append routes a key to target {route} of {}",
                    a.targets.len()
                ))
            })?;
            if done.iter().any(|f| f.number == t.number) {
                return Err(Error::InvalidArgument(format!(
                    "an append routes keys to table {} again after others: routes must not \
                     decrease",
                    t.number
                )));
            }
            let path = ctx.dir.join(table_file_name(t.number));
            let committed = ctx.env.open(&path)?;
            if committed.len() < t.size {
                return Err(Error::corruption(
                    &path,
                    committed.len(),
                    format!(
                        "the table file holds {} bytes, but {} were committed",
                        committed.len(),
                        t.size
                    ),
                ));
            }
            // Cuts what an append that never committed left after the committed size.
            let file = ctx.env.reopen(&path, t.size, ctx.cause)?;
            let identity = ctx.tables.identity(t.number);
            let writer = ctx.tables.format().appender(
                file,
                committed,
                t.table_id(),
                ctx.table_options,
                identity,
            )?;
            Ok(OpenOutput {
                number: t.number,
                target: Some(route),
                writer,
            })
        }
    }
}

/// Read back table `f`, just written, as `ctx.check_new_tables` asks: through the table
/// cache (which checks the size, footer, metadata blocks and identity, and keeps the
/// table open for the reads that follow), then the format's quick or full check, and that
/// it holds what the writer wrote.
fn check_new_table(f: &FileMeta, ctx: &CompactionContext<'_>) -> Result<()> {
    if ctx.check_new_tables == NewTableCheck::Off {
        return Ok(());
    }
    let table = ctx.tables.table(f.table_id())?;
    match ctx.check_new_tables {
        NewTableCheck::Off => {}
        NewTableCheck::Quick => table.verify_quick()?,
        NewTableCheck::Full => table.verify()?,
    }
    let p = table.properties();
    if p.num_entries != f.entries || p.smallest != f.smallest || p.largest != f.largest {
        return Err(Error::corruption(
            table.path(),
            0,
            format!(
                "the table just written reads back {} entries from {:?} to {:?}; {} from {:?} \
                 to {:?} were written",
                p.num_entries, p.smallest, p.largest, f.entries, f.smallest, f.largest
            ),
        ));
    }
    Ok(())
}

fn finish(number: u64, builder: Box<dyn TableWriter>) -> Result<FileMeta> {
    let s = builder.finish()?;
    Ok(FileMeta {
        number,
        size: s.size,
        smallest: s.smallest,
        largest: s.largest,
        smallest_seq: s.smallest_seq,
        largest_seq: s.largest_seq,
        entries: s.entries,
        tombstones: s.tombstones,
        filter: Default::default(),
    })
}
