//! `verify`: read every byte of every file of a store and check every checksum.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::Wiring;
use super::store_files::Presence;

use crate::error::{Error, Result};
use crate::filename::{FileKind, parse_file_name};
use crate::manifest;
use crate::manifest::AxisStates;
use crate::options::Options;
use crate::table::{TableId, TableReadOptions};
use crate::values::{PersistedState, PlacementChecked, VerifyContext};
use crate::version::Version;

/// What [`crate::verify`] checked.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Table files checked.
    pub tables: usize,
    /// Log files (WAL and MANIFEST) checked.
    pub logs: usize,
    /// Bytes of the files checked.
    pub bytes: u64,
    /// Entries seen in tables.
    pub entries: u64,
    /// What the value placement's own checks found (for a value log: its segments, their
    /// records and the pointers into them).
    pub placement: PlacementChecked,
}

/// `verify` with the parts `wiring` builds (the public [`crate::verify`] is in
/// `crate::design`): see there.
pub(crate) fn verify_with(dir: &Path, options: Options, wiring: &Wiring) -> Result<VerifyReport> {
    let env = &options.env;
    let fs = env.fs();
    if super::store_files::presence(env, dir)? == Presence::None {
        return Err(Error::InvalidArgument(format!(
            "no store at {}: CURRENT is missing",
            dir.display()
        )));
    }
    let mut report = VerifyReport::default();
    let manifest_number = manifest::read_current(env, dir)?;
    let manifest_path = dir.join(manifest::manifest_file_name(manifest_number));
    let (edits, dropped_tail) = manifest::read_manifest_and_tail(env, dir, manifest_number)?;
    // The placement is built to read its state and check its files; nothing is opened.
    let axes = wiring(&options, dir, Arc::new(AtomicU64::new(0)));
    let expected = super::open::format_tag(axes.layout.as_ref(), axes.values.as_ref());
    if let Some(t) = edits.iter().find_map(|e| e.format_tag.as_ref())
        && *t != expected
    {
        return Err(Error::InvalidArgument(format!(
            "the store in {} was created with the {t} design, but the options ask for {expected}",
            dir.display()
        )));
    }
    // Replay as recovery does: every axis record to its owner (the layout's to the
    // version), every file edit to the version.
    let mut states = AxisStates::with_values(axes.values.empty_state());
    let mut version = Version::with_layout(options.num_levels, axes.layout.empty_state());
    let mut log_number = 0;
    for (i, e) in edits.iter().enumerate() {
        let bad = |d: String| {
            Error::corruption(&manifest_path, 0, format!("edit {i} does not apply: {d}"))
        };
        states.absorb(&e.records).map_err(bad)?;
        version = version.apply(e).map_err(bad)?;
        log_number = e.log_number.unwrap_or(log_number);
    }
    crate::version::check_tables_present(env, dir, &version, &manifest_path)
        .map_err(|e| crate::version::blame_dropped_tail(e, &manifest_path, dropped_tail))?;
    let live_sizes: BTreeMap<u64, u64> = version.files().map(|(_, f)| (f.number, f.size)).collect();
    let mut tables = Vec::new();
    report.logs += 1;
    report.bytes += fs.file_size(&dir.join(manifest::manifest_file_name(manifest_number)))?;
    let mut names = fs.list_dir(dir)?;
    names.sort();
    for name in &names {
        let Some(FileKind::Table(n)) = parse_file_name(name) else {
            continue;
        };
        let file = env.open(&dir.join(name))?;
        report.bytes += file.len();
        // A live table is read as the generation the MANIFEST committed (its recorded size);
        // a file of another length is corruption, as open would find.
        let size = live_sizes.get(&n).copied().unwrap_or(file.len());
        let read = TableReadOptions {
            block_cache: None,
            verify_checksums: true,
        };
        let table = axes.table.open(file, TableId { number: n, size }, &read)?;
        table.verify()?;
        report.entries += table.properties().num_entries;
        report.tables += 1;
        if live_sizes.contains_key(&n) {
            tables.push(table);
        }
    }
    let state = PersistedState {
        log_number,
        state: states.values,
    };
    report.placement = axes.values.verify(&VerifyContext {
        env,
        dir,
        names: &names,
        state: &state,
        tables: &tables,
        store_id: edits.iter().rev().find_map(|e| e.store_id).unwrap_or(0),
        wal_recovery_mode: options.wal_recovery_mode,
    })?;
    report.bytes += report.placement.bytes;
    report.logs += report.placement.logs;
    Ok(report)
}
