//! The maintenance commands: checkpoint, flush, gc, properties, repair. Each opens the store
//! with the options it records (`--design` is never needed: these never create a store;
//! `repair` uses it only when no MANIFEST of the store reads).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use shale::Db;

use crate::cmd_kv::{StoreArgs, plural};
use crate::{CliError, CliResult};

/// `shale checkpoint`.
#[derive(Args, Debug)]
pub struct CheckpointArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The new directory to copy the store into (it must not exist).
    pub dest: PathBuf,
}

/// `shale properties`.
#[derive(Args, Debug)]
pub struct PropertiesArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Print only this property's value (e.g. shale.levels); without it, every property
    /// the store answers, one `name: value` per line.
    pub name: Option<String>,
}

/// Copy the store into a new directory while it stays usable (`Db::checkpoint`): tables
/// and sealed value-log segments hard-linked where the file system allows, the rest copied.
pub fn checkpoint(a: &CheckpointArgs) -> CliResult {
    let db = a.store.open_existing()?;
    let info = db.checkpoint(&a.dest)?;
    db.close()?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "checkpoint of {} in {}: {} {} linked, {} {} copied ({} bytes), up to sequence {}",
        a.store.db.display(),
        a.dest.display(),
        info.files_linked,
        plural(info.files_linked, "file", "files"),
        info.files_copied,
        plural(info.files_copied, "file", "files"),
        info.bytes_copied,
        info.sequence
    )?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Write the memtable to tables (the store's log then holds nothing to replay).
pub fn flush(a: &StoreArgs) -> CliResult {
    let db = a.open_existing()?;
    db.flush()?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// Collect value-log garbage until no sealed segment holds any.
pub fn gc(a: &StoreArgs) -> CliResult {
    let db = a.open_existing()?;
    // A value log always has a segment (the one being written): a placement with none keeps
    // its values in the tree.
    if db.stats().placement.segments.is_empty() {
        let design = db.property("shale.design").unwrap_or_default();
        db.close()?;
        return Err(CliError::msg(format!(
            "the store in {} has no value log ({design}): its values are in the tables, and \
             `shale compact` reclaims their space",
            a.db.display()
        )));
    }
    let spinner = crate::progress::spinner("gc");
    let mut dropped = 0;
    let r = loop {
        match db.run_value_gc() {
            Ok(0) => break Ok(()),
            Ok(n) => dropped += n,
            Err(e) => break Err(e),
        }
    };
    spinner.finish_and_clear();
    r?;
    let segments = db.stats().placement.segments;
    let bytes: u64 = segments.iter().map(|s| s.1).sum();
    let garbage: u64 = segments.iter().map(|s| s.2).sum();
    db.close()?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "value-log gc: {dropped} {} collected; {} {} left ({bytes} bytes, {garbage} of them \
         known garbage)",
        plural(dropped as usize, "segment", "segments"),
        segments.len(),
        plural(segments.len(), "segment", "segments"),
    )?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The property names to try when listing: the engine's, one per level for the per-level
/// ones, and the layouts' per-level ones (a store answers those of its own layout).
fn candidate_names(db: &Db) -> Vec<String> {
    let mut names: Vec<String> = [
        "shale.design",
        "shale.last-sequence",
        "shale.levels",
        "shale.total-sst-bytes",
        "shale.memtable-bytes",
        "shale.num-immutable-mem-table",
        "shale.block-cache-usage",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let levels = db
        .property("shale.levels")
        .map_or(0, |l| l.split_whitespace().count());
    for prefix in [
        "shale.num-files-at-level",
        "shale.num-guards-at-level",
        "shale.guards-at-level",
    ] {
        names.extend((0..levels).map(|l| format!("{prefix}{l}")));
    }
    names.push("shale.stats".to_string());
    names
}

/// Print one property, or every property the store answers.
pub fn properties(a: &PropertiesArgs) -> CliResult {
    let db = a.store.open_read_only()?;
    let mut out = std::io::stdout().lock();
    match &a.name {
        Some(name) => {
            let Some(v) = db.property(name) else {
                db.close()?;
                return Err(CliError::msg(format!(
                    "unknown property {name:?} (`shale properties --db {}` lists the ones \
                     this store has)",
                    a.store.db.display()
                )));
            };
            writeln!(out, "{}", v.trim_end())?;
        }
        None => {
            for name in candidate_names(&db) {
                let Some(v) = db.property(&name) else {
                    continue;
                };
                let v = v.trim_end();
                if v.contains('\n') {
                    writeln!(out, "{name}:")?;
                    for line in v.lines() {
                        writeln!(out, "  {line}")?;
                    }
                } else {
                    writeln!(out, "{name}: {v}")?;
                }
            }
        }
    }
    out.flush()?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// Rebuild the store's MANIFEST from its files (`shale::repair`, LevelDB's `RepairDB`) and
/// print what was recovered, what was set aside in `lost/` and why.
pub fn repair(a: &StoreArgs) -> CliResult {
    let spinner = crate::progress::spinner("repair");
    let r = shale::repair(&a.db, a.options_for_repair()?);
    spinner.finish_and_clear();
    let r = r?;
    let mut out = std::io::stdout().lock();
    let mb = |b: u64| b as f64 / 1e6;
    writeln!(
        out,
        "repaired {}: {} {} ({} {}, {:.1} MB) in level 0, last sequence {}, {}",
        a.db.display(),
        r.tables,
        plural(r.tables, "table", "tables"),
        r.entries,
        plural(r.entries as usize, "entry", "entries"),
        mb(r.bytes),
        r.last_sequence,
        r.manifest
    )?;
    writeln!(
        out,
        "  {} {} kept, {} written from the logs, {} merged into {} (their key and sequence ranges overlapped){}",
        r.tables_kept,
        plural(r.tables_kept, "table", "tables"),
        r.tables_from_logs,
        r.tables_merged,
        r.tables_written_by_merges,
        match &r.hints_from {
            Some(m) => format!("; hints from {m}"),
            None => "; no MANIFEST read: the files alone".to_string(),
        }
    )?;
    for l in &r.logs {
        write!(
            out,
            "  log {}: {} {} recovered, {} already in tables",
            l.name,
            l.entries,
            plural(l.entries as usize, "entry", "entries"),
            l.skipped
        )?;
        match &l.damage {
            Some(d) => writeln!(out, ", {} bytes dropped ({d})", l.bytes_dropped)?,
            None => writeln!(out)?,
        }
    }
    for s in &r.set_aside {
        write!(out, "set aside: {} -> {}: {}", s.name, s.moved_to, s.reason)?;
        if let Some(n) = s.entries {
            write!(out, "; {n} {}", plural(n as usize, "entry", "entries"))?;
        }
        match &s.key_range {
            Some((lo, hi)) => writeln!(
                out,
                "; keys {} .. {} may have lost their newest versions",
                crate::escape::escape(lo),
                crate::escape::escape(hi)
            )?,
            None => writeln!(out)?,
        }
    }
    for (name, to) in &r.archived {
        writeln!(
            out,
            "archived: {name} -> {to} (the repaired store holds what it held)"
        )?;
    }
    for n in &r.notes {
        writeln!(out, "note: {n}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
