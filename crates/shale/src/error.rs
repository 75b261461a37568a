//! The one error type of the engine.
//!
//! Every fallible function returns [`Result`]. Messages are written for a person: they say
//! what happened and where (file, offset, expected and found), never just a debug dump.

use std::fmt;
use std::path::PathBuf;

/// Shorthand for `std::result::Result<T, shale::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The operating system (or the file-system backend) failed an operation.
    Io {
        /// What the engine was doing, e.g. "sync" or "rename".
        op: &'static str,
        /// The file or directory involved, when there is one.
        path: Option<PathBuf>,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Bytes read from a file are not what the format says they must be.
    Corruption {
        /// The file that holds the bad bytes.
        file: PathBuf,
        /// Byte offset in that file where the problem was found.
        offset: u64,
        /// What was expected and what was found.
        detail: String,
    },
    /// Another handle (in this process or another one) holds the store's `LOCK` file.
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// The caller passed something the engine cannot accept (a key too large, bad options).
    InvalidArgument(String),
    /// The chosen design cannot do this operation (for example a range scan on a hash layout).
    Unsupported(String),
    /// A durable write failed earlier (for example an fsync of the log), or background work
    /// did (a flush, or a compaction, including one that found a damaged table: as in LevelDB
    /// and RocksDB with its default `paranoid_checks`), so the store refuses further writes
    /// rather than pretending they are safe. Reopen the store to recover.
    ReadOnly(String),
    /// The handle was opened with [`crate::Db::open_read_only`]: it takes no writes,
    /// flushes, compactions or garbage collection, and changes no file of the store.
    ReadOnlyOpen {
        /// The store's directory.
        path: PathBuf,
    },
    /// The store has been closed.
    Closed,
}

impl Error {
    /// An I/O error with the operation and the path it concerned.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: Some(path.into()),
            source,
        }
    }

    /// A corruption error at `offset` of `file`.
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, detail: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            detail: detail.into(),
        }
    }

    /// A copy of this error for another caller (the followers of a group commit get the
    /// leader's error). I/O errors keep their kind and message.
    pub(crate) fn duplicate(&self) -> Error {
        match self {
            Error::Io { op, path, source } => Error::Io {
                op,
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corruption {
                file,
                offset,
                detail,
            } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                detail: detail.clone(),
            },
            Error::Locked { path } => Error::Locked { path: path.clone() },
            Error::InvalidArgument(m) => Error::InvalidArgument(m.clone()),
            Error::Unsupported(m) => Error::Unsupported(m.clone()),
            Error::ReadOnly(m) => Error::ReadOnly(m.clone()),
            Error::ReadOnlyOpen { path } => Error::ReadOnlyOpen { path: path.clone() },
            Error::Closed => Error::Closed,
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io {
                op,
                path: Some(p),
                source,
            } => write!(f, "I/O error during {op} of {}: {source}", p.display()),
            Error::Io {
                op,
                path: None,
                source,
            } => write!(f, "I/O error during {op}: {source}"),
            Error::Corruption {
                file,
                offset,
                detail,
            } => write!(
                f,
                "corruption in {} at byte offset {offset}: {detail}",
                file.display()
            ),
            Error::Locked { path } => write!(
                f,
                "the store is already open: {} is locked by another handle or process",
                path.display()
            ),
            Error::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            Error::Unsupported(m) => write!(f, "unsupported operation: {m}"),
            Error::ReadOnly(m) => write!(
                f,
                "the store refuses writes after an earlier failure of a durable write or of background work ({m}); reopen it to recover"
            ),
            Error::ReadOnlyOpen { path } => write!(
                f,
                "the store in {} is open read-only (Db::open_read_only or Db::open_secondary): it takes no writes, \
                 flushes, compactions or garbage collection",
                path.display()
            ),
            Error::Closed => write!(f, "the store is closed"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Attach the failing file and offset to a decoding failure: format code returns a plain
/// description, and the caller that knows the file turns it into [`Error::Corruption`].
pub(crate) trait CorruptionContext<T> {
    /// Map a `Result<T, String>` into a corruption error at `file`/`offset`.
    fn at(self, file: &std::path::Path, offset: u64) -> Result<T>;
}

impl<T> CorruptionContext<T> for std::result::Result<T, String> {
    fn at(self, file: &std::path::Path, offset: u64) -> Result<T> {
        self.map_err(|detail| Error::corruption(file, offset, detail))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_file_and_offset() {
        let e = Error::corruption("/db/000005.sst", 4096, "block checksum mismatch");
        let s = e.to_string();
        assert!(s.contains("/db/000005.sst"), "{s}");
        assert!(s.contains("4096"), "{s}");
        assert!(e.is_corruption());
        let l = Error::Locked {
            path: "/db/LOCK".into(),
        };
        assert!(l.to_string().contains("/db/LOCK"));
    }
}
