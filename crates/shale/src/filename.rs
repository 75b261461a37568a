//! The names of the files in a store directory: one place for every kind, so no module
//! needs another's to tell its files apart (LevelDB's `filename.cc`).
//!
//! | name | kind | owner |
//! |---|---|---|
//! | `NNNNNN.sst` | table | the table format (`docs/format/sst.md`) |
//! | `NNNNNN.log` | write-ahead log | the inline value placement (`docs/format/wal.md`) |
//! | `NNNNNN.vlog` | value-log segment | the vlog value placement (`docs/format/vlog.md`) |
//! | `MANIFEST-NNNNNN` | MANIFEST | the version set (`docs/format/manifest.md`) |
//! | `CURRENT`, `CURRENT.tmp` | names the live MANIFEST | the version set |
//! | `LOCK` | one process at a time | the engine |
//!
//! File numbers come from one counter per store, so no two files share a number. They are
//! written with at least six digits.

/// The largest file number the engine hands out (far beyond any real store): larger numbers
/// in a directory or a MANIFEST are not the engine's, and arithmetic on them cannot overflow.
pub const MAX_FILE_NUMBER: u64 = 1 << 48;

/// Name of the file that names the live MANIFEST.
pub const CURRENT_FILE: &str = "CURRENT";

/// Name of the temporary file renamed over [`CURRENT_FILE`].
pub const CURRENT_TMP_FILE: &str = "CURRENT.tmp";

/// Name of the lock file a process holds while the store is open.
pub const LOCK_FILE: &str = "LOCK";

/// The prefix of MANIFEST file names.
pub const MANIFEST_PREFIX: &str = "MANIFEST-";

/// The kinds of file a store directory holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// `NNNNNN.sst`
    Table(u64),
    /// `NNNNNN.log`
    Log(u64),
    /// `NNNNNN.vlog` (a value-log segment)
    Segment(u64),
    /// `MANIFEST-NNNNNN`
    Manifest(u64),
    /// `CURRENT.tmp`, the engine's one temporary file (other `*.tmp` files are not the
    /// store's)
    Temp,
}

impl FileKind {
    /// The file's number (none for a temporary file).
    pub fn number(self) -> Option<u64> {
        match self {
            FileKind::Table(n)
            | FileKind::Log(n)
            | FileKind::Segment(n)
            | FileKind::Manifest(n) => Some(n),
            FileKind::Temp => None,
        }
    }
}

/// The file name of table `number`.
pub fn table_file_name(number: u64) -> String {
    format!("{number:06}.sst")
}

/// The file name of write-ahead log `number`.
pub fn log_file_name(number: u64) -> String {
    format!("{number:06}.log")
}

/// The file name of value-log segment `number`.
pub fn segment_file_name(number: u64) -> String {
    format!("{number:06}.vlog")
}

/// The file name of MANIFEST `number`.
pub fn manifest_file_name(number: u64) -> String {
    format!("{MANIFEST_PREFIX}{number:06}")
}

/// The number a name's numeric part spells, if it is exactly how the engine writes
/// numbers (at least six digits, zero-padded, nothing else) and not beyond
/// [`MAX_FILE_NUMBER`].
fn canonical_number(digits: &str) -> Option<u64> {
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    // `99.log` or `0000099.log` is not a name the engine writes (it would open
    // `000099.log`, a file that may not exist): not the store's, left alone.
    (n <= MAX_FILE_NUMBER && format!("{n:06}") == digits).then_some(n)
}

/// Recognize a file name of the store; `None` for names the store does not own (`LOCK`,
/// `CURRENT`, anything a user put there, a number beyond [`MAX_FILE_NUMBER`], a number not
/// written as the engine writes it). Only names the engine writes are recognized, so only
/// those are ever deleted or read as the store's.
pub fn parse_file_name(name: &str) -> Option<FileKind> {
    if let Some(n) = name.strip_prefix(MANIFEST_PREFIX) {
        return canonical_number(n).map(FileKind::Manifest);
    }
    if name == CURRENT_TMP_FILE {
        return Some(FileKind::Temp);
    }
    let (stem, ext) = name.rsplit_once('.')?;
    let n = canonical_number(stem)?;
    match ext {
        "sst" => Some(FileKind::Table(n)),
        "log" => Some(FileKind::Log(n)),
        "vlog" => Some(FileKind::Segment(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        assert_eq!(parse_file_name("000012.sst"), Some(FileKind::Table(12)));
        assert_eq!(parse_file_name("000007.log"), Some(FileKind::Log(7)));
        assert_eq!(parse_file_name("000009.vlog"), Some(FileKind::Segment(9)));
        assert_eq!(
            parse_file_name("MANIFEST-000003"),
            Some(FileKind::Manifest(3))
        );
        assert_eq!(parse_file_name("CURRENT.tmp"), Some(FileKind::Temp));
        assert_eq!(parse_file_name("CURRENT"), None);
        assert_eq!(parse_file_name("LOCK"), None);
        assert_eq!(parse_file_name("notes.sst"), None);
        // Only names as the engine writes them (issue 17, case 10: a stray `99.log` made
        // open look for `000099.log`).
        for name in [
            "99.log",
            "98.vlog",
            "7.sst",
            "0000099.log",
            "+00099.log",
            "MANIFEST-5",
            "MANIFEST-0000005",
            "draft.tmp",
            "000012.tmp",
        ] {
            assert_eq!(parse_file_name(name), None, "{name}");
        }
        assert_eq!(
            parse_file_name("1234567.sst"),
            Some(FileKind::Table(1_234_567))
        );
        assert_eq!(parse_file_name("MANIFEST-x"), None);
        assert_eq!(parse_file_name(&table_file_name(MAX_FILE_NUMBER + 1)), None);
        for n in [0, 5, 123_456_789] {
            assert_eq!(
                parse_file_name(&table_file_name(n)),
                Some(FileKind::Table(n))
            );
            assert_eq!(parse_file_name(&log_file_name(n)), Some(FileKind::Log(n)));
            assert_eq!(
                parse_file_name(&segment_file_name(n)),
                Some(FileKind::Segment(n))
            );
            assert_eq!(
                parse_file_name(&manifest_file_name(n)),
                Some(FileKind::Manifest(n))
            );
        }
    }
}
