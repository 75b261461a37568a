//! `verify`: recover the store as a read-only open does, then read every byte of every
//! file the recovered version needs and check every checksum.

use std::path::Path;

use super::{DbInner, Wiring};

use crate::error::Result;
use crate::filename::{FileKind, parse_file_name};
use crate::options::Options;
use crate::table::TableId;
use crate::values::{PlacementChecked, VerifyContext};

/// What [`crate::verify`] checked.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Table files checked.
    pub tables: usize,
    /// Write-ahead log files replayed and checked (0 for a placement whose log is the
    /// value log: its segments are in [`VerifyReport::placement`]).
    pub logs: usize,
    /// MANIFEST files read and checked (every record's checksum, the edits replayed): 1,
    /// the one CURRENT names. CURRENT itself is checked too (its checksum and version).
    pub manifests: usize,
    /// Bytes of the files checked.
    pub bytes: u64,
    /// Entries seen in tables.
    pub entries: u64,
    /// What the value placement's own checks found (for a value log: its segments, their
    /// records and the pointers into them).
    pub placement: PlacementChecked,
    /// Table files no version lists that record another store's id or another file number:
    /// not the store's, so open neither reads nor deletes them (see
    /// [`crate::ForeignTable`]); they do not make the store damaged.
    pub foreign_tables: Vec<super::ForeignTable>,
}

/// `verify` with the parts `wiring` builds (the public [`crate::verify`] is in
/// `crate::design`): see there.
///
/// The store is recovered exactly as a read-only open recovers it (which runs the checks of
/// a read-write open and writes nothing), then every table of the recovered version is read
/// in full and the placement checks its own files. Beside a writer in another process the
/// files checked are the ones the recovered version needs, kept open; when a check fails
/// and the store changed meanwhile (a table opened late was deleted by a compaction), the
/// whole verification runs again, as the open does.
pub(crate) fn verify_with(dir: &Path, options: Options, wiring: &Wiring) -> Result<VerifyReport> {
    let mut options = options;
    // Every block read from the file and checked.
    options.block_cache_bytes = 0;
    options.verify_checksums = true;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let (inner, mark) = super::read_only::open_marked(dir, options.clone(), wiring)?;
        match check(&inner) {
            Ok(mut report) => {
                report.bytes += mark.manifest_len();
                return Ok(report);
            }
            Err(_)
                if attempt < super::read_only::ATTEMPTS
                    && super::read_only::Mark::of(&inner.env, dir) != mark => {}
            Err(e) => return Err(e),
        }
    }
}

/// Read every table of a read-only handle's version and the placement's files.
fn check(inner: &DbInner) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let (version, placement) = {
        let v = inner.versions.lock();
        (v.current(), v.placement())
    };
    // The MANIFEST, read by the recovery.
    report.manifests = 1;
    let mut tables = Vec::new();
    for (_, f) in version.files() {
        let table = inner.tables.table(TableId {
            number: f.number,
            size: f.size,
        })?;
        table.verify()?;
        report.entries += table.properties().num_entries;
        report.tables += 1;
        report.bytes += f.size;
        tables.push(table);
    }
    report.placement = inner.values.verify(&VerifyContext {
        state: &placement,
        tables: &tables,
    })?;
    report.bytes += report.placement.bytes;
    report.logs += report.placement.logs;
    report.foreign_tables = foreign_tables(inner, &version)?;
    Ok(report)
}

/// The table files in the directory that `version` does not list and that record another
/// store's identity: what the obsolete-file sweep of a read-write open would leave alone.
fn foreign_tables(
    inner: &DbInner,
    version: &crate::version::Version,
) -> Result<Vec<super::ForeignTable>> {
    let listed: std::collections::HashSet<u64> = version.files().map(|(_, f)| f.number).collect();
    let mut names = inner.env.fs().list_dir(&inner.dir)?;
    names.sort();
    Ok(names
        .iter()
        .filter_map(|name| match parse_file_name(name)? {
            FileKind::Table(n) if !listed.contains(&n) => {
                let recorded = inner.tables.foreign(n)?;
                Some(super::ForeignTable::new(&inner.dir, name, recorded))
            }
            _ => None,
        })
        .collect())
}
