//! The MANIFEST: a log of [`VersionEdit`]s, and `CURRENT`, which names the live MANIFEST.
//!
//! The MANIFEST uses the record framing of the WAL ([`crate::wal::LogWriter`]); each record
//! is one encoded edit. Appending an edit and syncing it is the commit point of every
//! flush, compaction and garbage collection: files an edit adds are synced before it, and
//! files it deletes are removed only after it. Replaying the edits in order rebuilds the
//! store's file set. The formats and the update protocol are in `docs/format/manifest.md`.
//!
//! A new MANIFEST becomes live in this order: [`ManifestWriter::create`], append a first edit
//! that snapshots the whole version (with its `format_tag`), then [`write_current`], whose
//! directory sync also makes the new MANIFEST's directory entry durable.

use std::path::{Path, PathBuf};

use crate::env::{Env, ReadCause, WriteCause, WriteFile};
use crate::error::{CorruptionContext, Error, Result};
use crate::wal::{LogReader, LogWriter};

mod current;
mod edit;
mod file_meta;
mod lifetime;
mod store_id;
mod tail;
#[cfg(test)]
mod test_fs;

pub use crate::axis::{
    Axis, AxisRecord, AxisState, AxisStateCopy, AxisStates, NoState, PersistedState,
};
pub use current::{
    CURRENT_FILE, CURRENT_TMP_FILE, manifest_file_name, read_current, write_current,
};
pub use edit::{LEGACY_AXIS_TAGS, MANIFEST_FORMAT_VERSION, VersionEdit};
pub use file_meta::{FileMeta, PinnedFilter};
pub use lifetime::Lifetime;
pub use store_id::new_store_id;

/// Appends edits to one MANIFEST file, syncing each.
///
/// Thread-safety: one owner at a time; the engine appends under its version lock.
#[derive(Debug)]
pub struct ManifestWriter {
    log: LogWriter<WriteFile>,
    number: u64,
    path: PathBuf,
    scratch: Vec<u8>,
}

impl ManifestWriter {
    /// Create (truncating) `dir/MANIFEST-{number:06}`. Its directory entry becomes durable
    /// with the [`write_current`] that makes it live.
    ///
    /// # Errors
    /// The file system's error.
    pub fn create(env: &Env, dir: &Path, number: u64) -> Result<ManifestWriter> {
        let path = dir.join(manifest_file_name(number));
        let file = env.create(&path, WriteCause::Manifest)?;
        Ok(ManifestWriter {
            log: LogWriter::new(file),
            number,
            path,
            scratch: Vec::new(),
        })
    }

    /// Encode `edit`, append it as one record and sync. When this returns `Ok` the edit is
    /// durable: it is the commit point.
    ///
    /// # Errors
    /// The file system's error. After a failure the writer refuses further edits
    /// ([`crate::Error::ReadOnly`]): whether the edit reached the disk is unknown, so the
    /// engine must stop and recover from what the MANIFEST holds.
    pub fn append(&mut self, edit: &VersionEdit) -> Result<()> {
        self.scratch.clear();
        edit.encode(&mut self.scratch);
        self.log.add_record(&self.scratch)?;
        self.log.sync()
    }

    /// Bytes written to the MANIFEST so far (used to decide when to start a new one).
    pub fn len(&self) -> u64 {
        self.log.len()
    }

    /// True when no edit has been written.
    pub fn is_empty(&self) -> bool {
        self.log.is_empty()
    }

    /// The MANIFEST's file number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The MANIFEST's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Every edit of `dir/MANIFEST-{number:06}`, in order.
///
/// A torn tail (a crash during the last append) is dropped, as in the WAL: the edit that
/// was being written had not committed. A dropped tail that does not look torn (a whole
/// record with a bad checksum, see `tail.rs`) is corruption: that edit may have committed.
///
/// # Errors
/// [`crate::Error::Corruption`] naming the file and offset for damage in the middle of the
/// log, for a record that does not decode as an edit (naming the record's offset) and for a
/// missing file (CURRENT names it); the file system's error if the file cannot be read.
pub fn read_manifest(env: &Env, dir: &Path, number: u64) -> Result<Vec<VersionEdit>> {
    read_manifest_and_tail(env, dir, number).map(|(edits, _)| edits)
}

/// As [`read_manifest`], also returning how many bytes at the end were dropped as an
/// interrupted append (0 when the MANIFEST ends with a whole record). A caller that finds
/// the dropped edit's effects on disk (a file it deleted after committing) must report
/// that, not the store's state without it (`docs/format/manifest.md` §1).
///
/// # Errors
/// As [`read_manifest`].
pub fn read_manifest_and_tail(
    env: &Env,
    dir: &Path,
    number: u64,
) -> Result<(Vec<VersionEdit>, u64)> {
    let path = dir.join(manifest_file_name(number));
    let file = match env.open(&path) {
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::corruption(
                &path,
                0,
                "CURRENT names this MANIFEST, but the file is missing",
            ));
        }
        r => r?,
    };
    let mut reader = LogReader::new(file.clone(), ReadCause::Recovery);
    let mut edits = Vec::new();
    let mut record = Vec::new();
    while reader.next_record(&mut record)? {
        let edit = VersionEdit::decode(&record)
            .map_err(|m| format!("MANIFEST record does not decode as a version edit: {m}"))
            .at(&path, reader.last_record_offset())?;
        edits.push(edit);
    }
    let dropped = reader.dropped_tail_bytes();
    if dropped > 0 {
        let start = reader.valid_end_offset();
        let len = usize::try_from(dropped)
            .map_err(|_| Error::corruption(&path, start, "MANIFEST tail too large"))?;
        let tail = file.read_at(start, len, ReadCause::Recovery)?;
        if !tail::looks_torn(&tail, start) {
            return Err(Error::corruption(
                &path,
                start,
                format!(
                    "the last {dropped} bytes hold a damaged record, not an interrupted append: \
                     its edit may have committed, so it cannot be dropped"
                ),
            ));
        }
    }
    Ok((edits, dropped))
}

#[cfg(test)]
mod tests {
    use super::test_fs::TestFs;
    use super::*;
    use crate::error::Error;
    use crate::version::FileMeta;
    use crate::wal::BLOCK_SIZE;

    fn edit(i: u64) -> VersionEdit {
        VersionEdit {
            last_sequence: Some(i * 100),
            next_file_number: Some(i + 10),
            new_files: (0..i)
                .map(|n| {
                    (
                        (n % 7) as u32,
                        FileMeta {
                            number: n,
                            size: 100 * n,
                            smallest: vec![b'a'; 9],
                            largest: vec![b'z'; 9 + n as usize],
                            smallest_seq: n,
                            largest_seq: n + 1,
                            entries: 10,
                            tombstones: 1,
                            filter: Default::default(),
                        },
                    )
                })
                .collect(),
            deleted_files: vec![(1, i)],
            format_tag: (i == 0).then(|| "leveled".to_string()),
            ..VersionEdit::default()
        }
    }

    /// Write edits 0..n to MANIFEST-000003; returns each record's (start, end) offset.
    fn write(env: &Env, n: u64) -> Vec<(u64, u64)> {
        let mut w = ManifestWriter::create(env, Path::new("/db"), 3).unwrap();
        assert!(w.is_empty());
        assert_eq!(w.path(), Path::new("/db/MANIFEST-000003"));
        (0..n)
            .map(|i| {
                let start = w.len();
                w.append(&edit(i)).unwrap();
                (start, w.len())
            })
            .collect()
    }

    #[test]
    fn round_trip_and_each_append_syncs() {
        let (fs, env) = TestFs::env();
        write(&env, 300);
        let edits = read_manifest(&env, Path::new("/db"), 3).unwrap();
        assert_eq!(edits, (0..300).map(edit).collect::<Vec<_>>());
        let syncs = fs
            .ops()
            .iter()
            .filter(|o| *o == "sync /db/MANIFEST-000003")
            .count();
        assert_eq!(syncs, 300);
        assert!(
            env.fs()
                .file_size(Path::new("/db/MANIFEST-000003"))
                .unwrap()
                > BLOCK_SIZE as u64
        );
        assert!(env.io().written(WriteCause::Manifest) > 0);
        assert!(env.io().read(ReadCause::Recovery) > 0);
    }

    #[test]
    fn torn_tail_is_dropped() {
        let (fs, env) = TestFs::env();
        let spans = write(&env, 40);
        let path = Path::new("/db/MANIFEST-000003");
        let last = spans[39];
        for cut in [last.1 - 1, last.0 + 3, last.0 + 1] {
            fs.modify(path, |b| b.truncate(cut as usize));
            let (edits, dropped) = read_manifest_and_tail(&env, Path::new("/db"), 3).unwrap();
            assert_eq!(edits.len(), 39, "cut {cut}");
            assert_eq!(dropped, cut - last.0, "cut {cut}");
        }
        fs.modify(path, |b| b.truncate(last.0 as usize));
        let (edits, dropped) = read_manifest_and_tail(&env, Path::new("/db"), 3).unwrap();
        assert_eq!((edits.len(), dropped), (39, 0));
    }

    #[test]
    fn flip_in_the_last_record_is_corruption_not_a_torn_tail() {
        let (fs, env) = TestFs::env();
        let spans = write(&env, 40);
        let path = Path::new("/db/MANIFEST-000003");
        let last = spans[39];
        fs.modify(path, |b| b[last.1 as usize - 3] ^= 0x04);
        match read_manifest(&env, Path::new("/db"), 3).unwrap_err() {
            Error::Corruption { file, offset, .. } => {
                assert_eq!(file, path);
                assert!(offset >= last.0 && offset < last.1, "{offset} in {last:?}");
            }
            e => panic!("{e}"),
        }
        // Zeros from the record on (a lost page or preallocated space) are still a torn tail.
        fs.modify(path, |b| b[last.0 as usize..].fill(0));
        assert_eq!(read_manifest(&env, Path::new("/db"), 3).unwrap().len(), 39);
    }

    #[test]
    fn damage_in_the_middle_is_corruption() {
        let (fs, env) = TestFs::env();
        let spans = write(&env, 40);
        let path = Path::new("/db/MANIFEST-000003");
        // The record's first header: past the zero tail if its block had under 7 bytes left.
        let bad = match spans[20].0 % BLOCK_SIZE as u64 {
            r if BLOCK_SIZE as u64 - r < 7 => spans[20].0 + (BLOCK_SIZE as u64 - r),
            _ => spans[20].0,
        };
        fs.modify(path, |b| b[bad as usize + 9] ^= 0x20);
        match read_manifest(&env, Path::new("/db"), 3).unwrap_err() {
            Error::Corruption { file, offset, .. } => {
                assert_eq!(file, path);
                assert_eq!(offset, bad);
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn undecodable_record_is_corruption_at_its_offset() {
        let (_fs, env) = TestFs::env();
        let file = env
            .create(Path::new("/db/MANIFEST-000004"), WriteCause::Manifest)
            .unwrap();
        let mut w = LogWriter::new(file);
        let mut good = Vec::new();
        edit(1).encode(&mut good);
        w.add_record(&good).unwrap();
        let bad_at = w.len();
        w.add_record(&[1, 99, 0]).unwrap(); // one field, unknown tag 99
        w.add_record(&good).unwrap();
        w.sync().unwrap();
        let e = read_manifest(&env, Path::new("/db"), 4).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("MANIFEST-000004") && s.contains("tag 99"), "{s}");
        assert!(matches!(e, Error::Corruption { offset, .. } if offset == bad_at));
    }

    #[test]
    fn missing_manifest_is_corruption() {
        let (_fs, env) = TestFs::env();
        let e = read_manifest(&env, Path::new("/db"), 9).unwrap_err();
        assert!(
            matches!(&e, Error::Corruption { file, offset: 0, .. } if file == Path::new("/db/MANIFEST-000009")),
            "{e}"
        );
    }

    #[test]
    fn new_manifest_becomes_live() {
        let (fs, env) = TestFs::env();
        let dir = Path::new("/db");
        let mut w = ManifestWriter::create(&env, dir, 5).unwrap();
        w.append(&edit(0)).unwrap();
        write_current(&env, dir, w.number()).unwrap();
        let n = read_current(&env, dir).unwrap();
        assert_eq!(read_manifest(&env, dir, n).unwrap(), [edit(0)]);
        let ops = fs.ops();
        let pos = |s: &str| ops.iter().position(|o| o == s).unwrap();
        assert!(pos("sync /db/MANIFEST-000005") < pos("rename /db/CURRENT.tmp /db/CURRENT"));
        assert!(pos("rename /db/CURRENT.tmp /db/CURRENT") < pos("sync_dir /db"));
    }
}
