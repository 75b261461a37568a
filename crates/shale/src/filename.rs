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
    /// `*.tmp`
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

/// Recognize a file name of the store; `None` for names the store does not own (`LOCK`,
/// `CURRENT`, anything a user put there, a number beyond [`MAX_FILE_NUMBER`]).
pub fn parse_file_name(name: &str) -> Option<FileKind> {
    if let Some(n) = name.strip_prefix(MANIFEST_PREFIX) {
        return n
            .parse()
            .ok()
            .filter(|&n| n <= MAX_FILE_NUMBER)
            .map(FileKind::Manifest);
    }
    if name.ends_with(".tmp") {
        return Some(FileKind::Temp);
    }
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = stem.parse().ok()?;
    if n > MAX_FILE_NUMBER {
        // Not a number this engine hands out; leave the file alone.
        return None;
    }
    // Only the spelling the engine writes (`{n:06}`): `98.vlog` or `0000012.sst` is a
    // user's file, and reading it as segment 98 would name a file that does not exist.
    if stem.len() != (n.checked_ilog10().unwrap_or(0) as usize + 1).max(6) {
        return None;
    }
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
        assert_eq!(parse_file_name("98.vlog"), None);
        assert_eq!(parse_file_name("99.log"), None);
        assert_eq!(parse_file_name("0000012.sst"), None);
        assert_eq!(parse_file_name("1234567.sst"), Some(FileKind::Table(1234567)));
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
