//! Whether a directory holds a store, before anything in it is read or written.
//!
//! `CURRENT` is what makes a directory a store, but its absence alone does not make the
//! directory empty: a directory holding tables, logs, value-log segments or a MANIFEST
//! without `CURRENT` is a *damaged* store. Creating a new store there would hide the old
//! one and the obsolete-file sweep would then delete its files (issue 17, case 1), so open
//! and `verify` refuse it with [`Error::Corruption`] and change nothing.
//!
//! One state without `CURRENT` is not damage: a crash while a store was being created,
//! after its first MANIFEST was written and before `CURRENT` named it. That MANIFEST holds
//! at most the snapshot of an empty store, and the directory holds no other store file, so
//! creating the store again loses nothing.

use std::path::Path;

use crate::env::Env;
use crate::error::{Error, Result};
use crate::filename::{CURRENT_FILE, FileKind, parse_file_name};
use crate::manifest;

/// What a directory holds, as far as a store is concerned.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Presence {
    /// `CURRENT` exists: a store (whose files are checked when its MANIFEST is read).
    Store,
    /// No store file (or only what an interrupted creation leaves): a store may be created.
    None,
}

/// Whether `dir` (which exists) holds a store.
///
/// # Errors
/// [`Error::Corruption`] naming `dir/CURRENT` when `CURRENT` is missing but store files
/// are present; the file system's error.
pub(crate) fn presence(env: &Env, dir: &Path) -> Result<Presence> {
    let fs = env.fs();
    if fs.exists(&dir.join(CURRENT_FILE))? {
        return Ok(Presence::Store);
    }
    let mut names = fs.list_dir(dir)?;
    names.sort();
    let mut store_files = Vec::new();
    for name in names {
        match parse_file_name(&name) {
            // A temporary file is not evidence of a store (and may be a user's).
            None | Some(FileKind::Temp) => {}
            Some(FileKind::Manifest(n)) if is_creation_leftover(env, dir, n) => {}
            Some(_) => store_files.push(name),
        }
    }
    if store_files.is_empty() {
        return Ok(Presence::None);
    }
    const SHOWN: usize = 8;
    let mut list = store_files
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if store_files.len() > SHOWN {
        list.push_str(&format!(" and {} more", store_files.len() - SHOWN));
    }
    Err(Error::corruption(
        dir.join(CURRENT_FILE),
        0,
        format!(
            "CURRENT is missing, but {} holds {} store files ({list}): this is a damaged store, \
             not an empty directory, so no new store is created over it and no file was \
             changed or removed. To repair, run `shale repair` (`shale::repair`: it rebuilds \
             the MANIFEST and CURRENT from the store's files), or restore CURRENT from a \
             backup, or write one naming the newest MANIFEST (docs/format/manifest.md §3), \
             then run `shale verify`",
            dir.display(),
            store_files.len()
        ),
    ))
}

/// Whether MANIFEST `number` is what a crash while creating a store leaves: every edit it
/// holds (none, if its only append was torn) describes an empty store.
fn is_creation_leftover(env: &Env, dir: &Path, number: u64) -> bool {
    match manifest::read_manifest(env, dir, number) {
        Ok(edits) => edits.iter().all(|e| {
            e.new_files.is_empty()
                && e.deleted_files.is_empty()
                && e.last_sequence.unwrap_or(0) == 0
                && e.log_number.unwrap_or(0) == 0
        }),
        Err(_) => false,
    }
}
