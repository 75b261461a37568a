//! What a store on disk says about itself: the design that wrote it (its format tag) and
//! the options it was made with (its options record, `docs/format/options.md`), read
//! without opening it.

use std::path::Path;

use super::store_files::Presence;
use crate::env::Env;
use crate::error::{Error, Result};
use crate::manifest;
use crate::options::stored::StoredOptions;

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Description {
    /// The design's format tag (every store since the first release has one).
    pub format_tag: Option<String>,
    /// The options record (stores written before records existed have none until their
    /// next open).
    pub options: Option<StoredOptions>,
}

/// What the store in `dir` records about itself, or `None` when `dir` holds no store (it
/// does not exist, or has no CURRENT and no store file).
///
/// # Errors
/// A damaged or missing CURRENT (store files without one), a damaged MANIFEST or options
/// record ([`Error::Corruption`] naming the MANIFEST), or I/O.
pub(crate) fn describe(dir: &Path, env: &Env) -> Result<Option<Description>> {
    if !env.fs().exists(dir)? || super::store_files::presence(env, dir)? == Presence::None {
        return Ok(None);
    }
    let mut number = manifest::read_current(env, dir)?;
    let mut attempt = 0;
    let edits = loop {
        attempt += 1;
        match manifest::read_manifest(env, dir, number) {
            Ok(edits) => break edits,
            Err(e) => {
                // A writer in another process may have started a new MANIFEST and removed
                // this one since CURRENT was read.
                let now = manifest::read_current(env, dir)?;
                if now == number || attempt >= super::read_only::ATTEMPTS {
                    return Err(e);
                }
                number = now;
            }
        }
    };
    let options = match edits.iter().rev().find_map(|e| e.store_options.as_ref()) {
        Some(bytes) => Some(StoredOptions::decode(bytes).map_err(|detail| {
            Error::corruption(dir.join(manifest::manifest_file_name(number)), 0, detail)
        })?),
        None => None,
    };
    Ok(Some(Description {
        format_tag: edits.into_iter().find_map(|e| e.format_tag),
        options,
    }))
}
