//! The MANIFEST's file set is authoritative: a table it lists must be in the directory.
//!
//! LevelDB refuses to open a store with "N missing files"; so does Shale. Opening anyway
//! would let every later read that reaches the table fail with an I/O error, and a
//! compaction would fail for good, long after the damage was done.

use std::collections::HashSet;
use std::path::Path;

use super::Version;
use crate::env::Env;
use crate::error::{Error, Result};
use crate::filename::{FileKind, parse_file_name, table_file_name};

/// Check that every table `version` lists (as replayed from `manifest`) is in `dir`.
///
/// # Errors
/// [`Error::Corruption`] naming the first missing table and listing them all; the file
/// system's error.
pub fn check_tables_present(
    env: &Env,
    dir: &Path,
    version: &Version,
    manifest: &Path,
) -> Result<()> {
    let present: HashSet<u64> = env
        .fs()
        .list_dir(dir)?
        .iter()
        .filter_map(|n| match parse_file_name(n) {
            Some(FileKind::Table(n)) => Some(n),
            _ => None,
        })
        .collect();
    let mut missing: Vec<(usize, u64)> = version
        .files()
        .filter(|(_, f)| !present.contains(&f.number))
        .map(|(level, f)| (level, f.number))
        .collect();
    missing.sort_unstable_by_key(|&(_, n)| n);
    let Some(&(_, first)) = missing.first() else {
        return Ok(());
    };
    const SHOWN: usize = 8;
    let mut list = missing
        .iter()
        .take(SHOWN)
        .map(|&(level, n)| format!("{} (level {level})", table_file_name(n)))
        .collect::<Vec<_>>()
        .join(", ");
    if missing.len() > SHOWN {
        list.push_str(&format!(" and {} more", missing.len() - SHOWN));
    }
    Err(Error::corruption(
        dir.join(table_file_name(first)),
        0,
        format!(
            "{} missing files: {} lists {list}, but the directory does not hold them",
            missing.len(),
            manifest.display()
        ),
    ))
}

/// `e`, a missing file found after replaying a MANIFEST whose last `dropped` bytes were
/// taken for an interrupted append, explained: an edit deletes files only after it
/// commits, so the dropped record was a committed edit, cut afterwards.
pub fn blame_dropped_tail(e: Error, manifest: &Path, dropped: u64) -> Error {
    match e {
        Error::Corruption {
            file,
            offset,
            detail,
        } if dropped > 0 => Error::Corruption {
            file,
            offset,
            detail: format!(
                "{detail}; the last {dropped} bytes of {} were dropped as an interrupted \
                 append, but an edit deletes files only once committed: that record was a \
                 committed edit, cut afterwards",
                manifest.display()
            ),
        },
        e => e,
    }
}
