//! Deleting a store (LevelDB's `DestroyDB`, RocksDB's `DestroyDB`).

use std::path::Path;

use crate::error::Result;
use crate::filename::{CURRENT_FILE, CURRENT_TMP_FILE, FileKind, LOCK_FILE, parse_file_name};
use crate::options::Options;

/// Whether the engine writes a file named `name` into a store directory: `CURRENT`,
/// `CURRENT.tmp`, `LOCK`, `MANIFEST-N`, `N.sst`, `N.log`, `N.vlog`.
fn is_store_file(name: &str) -> bool {
    matches!(name, CURRENT_FILE | CURRENT_TMP_FILE | LOCK_FILE)
        || matches!(
            parse_file_name(name),
            Some(
                FileKind::Table(_)
                    | FileKind::Log(_)
                    | FileKind::Segment(_)
                    | FileKind::Manifest(_)
            )
        )
}

/// Delete the store in `path`: every file the engine writes there (`CURRENT`, `LOCK`, the
/// MANIFESTs, tables, logs and value-log segments). Files the engine does not write stay.
/// The directory itself stays too (the file-system interface has no directory removal;
/// the Python package's `destroy_db` removes it when it is left empty, as LevelDB does).
/// Nothing happens when `path` does not exist. Uses `options.env` (its file system).
///
/// # Errors
/// [`crate::Error::Locked`] while a handle has the store open (nothing is deleted);
/// [`crate::Error::Io`].
pub fn destroy_db(path: impl AsRef<Path>, options: &Options) -> Result<()> {
    let dir = path.as_ref();
    let fs = options.env.fs();
    if !fs.exists(dir)? {
        return Ok(());
    }
    let lock = fs.lock(&dir.join(LOCK_FILE))?;
    // CURRENT first: a crash part way leaves a directory no open mistakes for a store.
    let mut names = fs.list_dir(dir)?;
    names.sort_by_key(|n| n != CURRENT_FILE);
    for name in names {
        if is_store_file(&name) && name != LOCK_FILE {
            fs.remove_file(&dir.join(&name))?;
        }
    }
    drop(lock);
    fs.remove_file(&dir.join(LOCK_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;
    use crate::env::Env;

    #[test]
    fn destroys_what_the_store_wrote_and_nothing_else() {
        for design in Options::available_presets() {
            let env = Env::memory();
            let o = Options::preset(design).unwrap().with_env(env.clone());
            let db = Db::open("/d", o.clone()).unwrap();
            for i in 0..100u32 {
                db.put(&i.to_be_bytes(), &[7; 600]).unwrap();
            }
            db.flush().unwrap();
            // Open: refused, nothing deleted.
            assert!(matches!(
                destroy_db("/d", &o),
                Err(crate::Error::Locked { .. })
            ));
            assert!(env.fs().exists(Path::new("/d/CURRENT")).unwrap());
            db.close().unwrap();
            let fs = env.fs();
            for other in ["notes.tmp", "README", "12.txt", "x.sst"] {
                fs.create(&Path::new("/d").join(other))
                    .unwrap()
                    .sync()
                    .unwrap();
            }
            destroy_db("/d", &o).unwrap();
            let mut left = fs.list_dir(Path::new("/d")).unwrap();
            left.sort();
            assert_eq!(left, ["12.txt", "README", "notes.tmp", "x.sst"], "{design}");
            destroy_db("/d", &o).unwrap();
            destroy_db("/nothing-here", &o).unwrap();
        }
    }
}
