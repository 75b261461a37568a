//! The `CURRENT` file: which MANIFEST is live.
//!
//! Unlike LevelDB's, Shale's CURRENT carries its own checksum, so a damaged CURRENT is
//! reported instead of naming a wrong (or nonexistent) MANIFEST, and (from format version
//! 2) its format version, so a CURRENT of a newer release is refused by name:
//!
//! ```text
//! shale-current 2\n
//! MANIFEST-000005\n
//! crc32c:<8 lowercase hex digits of crc32c("shale-current 2\nMANIFEST-000005")>\n
//! ```
//!
//! Format version 1, which releases before format versions existed wrote and this one still
//! reads, has no first line, and its checksum covers the name alone:
//!
//! ```text
//! MANIFEST-000005\n
//! crc32c:<8 lowercase hex digits of crc32c("MANIFEST-000005")>\n
//! ```
//!
//! It is replaced atomically: write `CURRENT.tmp`, sync it, rename it over `CURRENT`, sync
//! the directory. See `docs/format/manifest.md`.

use std::path::Path;

use crate::env::{Env, ReadCause, WriteCause};
use crate::error::{CorruptionContext, Error, Result};
use crate::format::crc32c;

use crate::filename::MANIFEST_PREFIX as PREFIX;
pub use crate::filename::{CURRENT_FILE, CURRENT_TMP_FILE, manifest_file_name};

/// No CURRENT this release writes is longer than 62 bytes (the version line, "MANIFEST-" +
/// 20 digits, the checksum line); a larger file is rejected before it is read into memory.
/// The bound leaves room for a newer release's longer CURRENT, which is then refused by its
/// version, not its size.
const MAX_CURRENT_LEN: u64 = 256;

const CRC_PREFIX: &str = "crc32c:";

/// The first line of a CURRENT that records its format version: this, a space, the version
/// in decimal.
const VERSION_PREFIX: &str = "shale-current ";

/// The CURRENT format version this release writes and the newest it reads. Version 1 is the
/// unversioned CURRENT of earlier releases (no version line). On-disk: never renumber.
pub const CURRENT_FORMAT_VERSION: u64 = 2;

/// The exact bytes of a CURRENT naming MANIFEST `number` (format
/// [`CURRENT_FORMAT_VERSION`]).
pub(crate) fn current_contents(number: u64) -> String {
    let body = format!(
        "{VERSION_PREFIX}{CURRENT_FORMAT_VERSION}\n{}",
        manifest_file_name(number)
    );
    let crc = crc32c(body.as_bytes());
    format!("{body}\n{CRC_PREFIX}{crc:08x}\n")
}

/// The exact bytes of a format-version-1 CURRENT (earlier releases) naming MANIFEST
/// `number`: tests of reading older stores write it.
#[cfg(test)]
pub(crate) fn current_contents_v1(number: u64) -> String {
    let name = manifest_file_name(number);
    let crc = crc32c(name.as_bytes());
    format!("{name}\n{CRC_PREFIX}{crc:08x}\n")
}

/// Point `dir/CURRENT` at MANIFEST `manifest_number`, atomically and durably: write
/// `CURRENT.tmp`, sync it, rename it over `CURRENT`, sync the directory. The directory sync
/// also makes the entry of a MANIFEST created since the last one durable.
///
/// # Errors
/// The file system's errors. If the rename has not happened, `CURRENT` is unchanged.
pub fn write_current(env: &Env, dir: &Path, manifest_number: u64) -> Result<()> {
    let tmp = dir.join(CURRENT_TMP_FILE);
    let r = write_tmp(env, &tmp, manifest_number)
        .and_then(|()| env.fs().rename(&tmp, &dir.join(CURRENT_FILE)));
    if r.is_err() {
        // Best effort: a stale CURRENT.tmp is harmless (it is overwritten next time), and the
        // first error is the one worth reporting.
        let _ = env.fs().remove_file(&tmp);
        return r;
    }
    env.fs().sync_dir(dir)
}

fn write_tmp(env: &Env, tmp: &Path, manifest_number: u64) -> Result<()> {
    let mut f = env.create(tmp, WriteCause::Manifest)?;
    f.append(current_contents(manifest_number).as_bytes())?;
    f.sync()
}

/// The number of the MANIFEST that `dir/CURRENT` names, after checking its format and
/// checksum.
///
/// # Errors
/// [`Error::Corruption`] naming the CURRENT path when its contents are not exactly what
/// [`write_current`] writes; the file system's error if it cannot be read (including when it
/// does not exist).
pub fn read_current(env: &Env, dir: &Path) -> Result<u64> {
    let path = dir.join(CURRENT_FILE);
    let f = env.open(&path)?;
    if f.len() > MAX_CURRENT_LEN {
        return Err(Error::corruption(
            &path,
            0,
            format!(
                "CURRENT is {} bytes; a valid one is at most {MAX_CURRENT_LEN}",
                f.len()
            ),
        ));
    }
    // Bounded by MAX_CURRENT_LEN just above.
    let bytes = f.read_at(0, f.len() as usize, ReadCause::Recovery)?;
    parse_current(&bytes).at(&path, 0)
}

/// Parse the contents of CURRENT, of format version 1 or 2 (see the module docs).
pub(crate) fn parse_current(bytes: &[u8]) -> Result<u64, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "CURRENT is not UTF-8 text".to_string())?;
    // The version is read before anything else: a newer release may change the rest.
    let (covered, name, rest) = match text.strip_prefix(VERSION_PREFIX) {
        Some(after) => {
            let Some((v, after)) = after.split_once('\n') else {
                return Err(format!("CURRENT has no line break: {text:?}"));
            };
            let version = Some(v)
                .filter(|v| !v.is_empty() && v.len() <= 20 && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("CURRENT format version {v:?} is not a number"))?;
            if version > CURRENT_FORMAT_VERSION {
                return Err(format!(
                    "CURRENT is format version {version}; this release reads versions 1 to \
                     {CURRENT_FORMAT_VERSION} (a store written by a newer release)"
                ));
            }
            if version < 2 {
                return Err(format!(
                    "CURRENT's version line names format version {version}, which has none \
                     (version 1 has no version line)"
                ));
            }
            let Some((name, rest)) = after.split_once('\n') else {
                return Err(format!(
                    "CURRENT has no line break after its name: {text:?}"
                ));
            };
            // The version line, its newline and the name.
            let covered = text.len() - after.len() + name.len();
            (text.get(..covered).unwrap_or_default(), name, rest)
        }
        None => {
            let Some((name, rest)) = text.split_once('\n') else {
                return Err(format!("CURRENT has no line break: {text:?}"));
            };
            (name, name, rest)
        }
    };
    let Some(hex) = rest
        .strip_prefix(CRC_PREFIX)
        .and_then(|r| r.strip_suffix('\n'))
    else {
        return Err(format!(
            "second line of CURRENT should be \"{CRC_PREFIX}<8 hex digits>\\n\", found {rest:?}"
        ));
    };
    let well_formed_hex = hex.len() == 8
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let stored = if well_formed_hex {
        u32::from_str_radix(hex, 16).ok()
    } else {
        None
    };
    let Some(stored) = stored else {
        return Err(format!(
            "CURRENT checksum {hex:?} is not 8 lowercase hex digits"
        ));
    };
    let computed = crc32c(covered.as_bytes());
    if stored != computed {
        return Err(format!(
            "CURRENT checksum mismatch: stored {stored:08x}, computed {computed:08x} over \
             {covered:?}"
        ));
    }
    let number = name
        .strip_prefix(PREFIX)
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse::<u64>().ok())
        .filter(|&n| manifest_file_name(n) == name)
        .ok_or_else(|| format!("CURRENT names {name:?}, not a MANIFEST file name"))?;
    Ok(number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::test_fs::TestFs;

    #[test]
    fn names() {
        assert_eq!(manifest_file_name(5), "MANIFEST-000005");
        assert_eq!(manifest_file_name(1234567), "MANIFEST-1234567");
    }

    #[test]
    fn contents_round_trip() {
        for n in [0, 1, 5, 999_999, 1_000_000, u64::MAX] {
            assert_eq!(parse_current(current_contents(n).as_bytes()), Ok(n));
            assert_eq!(parse_current(current_contents_v1(n).as_bytes()), Ok(n));
        }
        // The example of docs/format/manifest.md §3.
        assert_eq!(
            current_contents(5),
            "shale-current 2\nMANIFEST-000005\ncrc32c:20a1f735\n"
        );
        // What releases before format versions wrote (the fixtures under tests/fixtures/v0
        // hold such files): version 1, still read.
        assert_eq!(current_contents_v1(5), "MANIFEST-000005\ncrc32c:b949be95\n");
        assert!(current_contents(u64::MAX).len() as u64 <= MAX_CURRENT_LEN);
    }

    #[test]
    fn a_newer_or_unknown_version_is_refused_by_name() {
        let with_version = |v: &str| {
            let body = format!("shale-current {v}\nMANIFEST-000005");
            let s = format!("{body}\ncrc32c:{:08x}\n", crc32c(body.as_bytes()));
            parse_current(s.as_bytes())
        };
        assert_eq!(with_version("2"), Ok(5));
        for v in ["3", "18446744073709551615"] {
            let e = with_version(v).unwrap_err();
            assert!(e.contains(&format!("format version {v};")), "{v}: {e}");
            assert!(
                e.contains("versions 1 to 2") && e.contains("newer release"),
                "{v}: {e}"
            );
        }
        for v in ["0", "1"] {
            let e = with_version(v).unwrap_err();
            assert!(e.contains("has no version line"), "{v}: {e}");
        }
        // A newer release may change everything after the version line: still refused by
        // the version, not as damage.
        let e = parse_current(b"shale-current 3\nsomething else entirely\n").unwrap_err();
        assert!(e.contains("format version 3"), "{e}");
        for v in ["", "x", "2 ", "-1", "99999999999999999999999"] {
            let s = format!("shale-current {v}\nMANIFEST-000005\ncrc32c:00000000\n");
            let e = parse_current(s.as_bytes()).unwrap_err();
            assert!(e.contains("not a number"), "{v:?}: {e}");
        }
    }

    #[test]
    fn bad_contents_rejected() {
        for good in [current_contents(5), current_contents_v1(5)] {
            bad_contents_of(&good);
        }
    }

    fn bad_contents_of(good: &str) {
        for cut in 0..good.len() {
            assert!(parse_current(&good.as_bytes()[..cut]).is_err(), "cut {cut}");
        }
        for i in 0..good.len() {
            let mut b = good.to_string().into_bytes();
            b[i] ^= 0x01;
            assert!(parse_current(&b).is_err(), "flip at {i} of {good:?}");
        }
        let mut extra = good.to_string();
        extra.push('\n');
        assert!(parse_current(extra.as_bytes()).is_err());
        // Well-formed checksum over a non-canonical name.
        for name in [
            "MANIFEST-5",
            "MANIFEST-0000005",
            "MANIFEST-",
            "LOG-000005",
            "MANIFEST-+00005",
        ] {
            let s = format!("{name}\ncrc32c:{:08x}\n", crc32c(name.as_bytes()));
            let e = parse_current(s.as_bytes()).unwrap_err();
            assert!(e.contains("not a MANIFEST"), "{name}: {e}");
        }
        // Upper-case hex is not what the writer produces.
        let crc = crc32c(b"MANIFEST-000005");
        let upper = format!("MANIFEST-000005\ncrc32c:{crc:08X}\n");
        assert_ne!(
            upper,
            current_contents_v1(5),
            "the example checksum must contain a letter"
        );
        assert!(parse_current(upper.as_bytes()).is_err());
    }

    #[test]
    fn write_then_read() {
        let (fs, env) = TestFs::env();
        let dir = Path::new("/db");
        write_current(&env, dir, 7).unwrap();
        assert_eq!(read_current(&env, dir).unwrap(), 7);
        assert_eq!(
            fs.ops(),
            [
                "create /db/CURRENT.tmp",
                "append /db/CURRENT.tmp",
                "sync /db/CURRENT.tmp",
                "rename /db/CURRENT.tmp /db/CURRENT",
                "sync_dir /db",
            ]
        );
        write_current(&env, dir, 8).unwrap();
        assert_eq!(read_current(&env, dir).unwrap(), 8);
        assert!(!fs.contains(Path::new("/db/CURRENT.tmp")));
        assert_eq!(
            env.io().written(WriteCause::Manifest),
            2 * current_contents(7).len() as u64
        );
    }

    #[test]
    fn damaged_current_is_corruption_naming_it() {
        let (fs, env) = TestFs::env();
        let dir = Path::new("/db");
        write_current(&env, dir, 7).unwrap();
        fs.modify(Path::new("/db/CURRENT"), |b| b[26] = b'9');
        let e = read_current(&env, dir).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains("/db/CURRENT"), "{e}");

        fs.modify(Path::new("/db/CURRENT"), |b| b.resize(1 << 20, b'x'));
        let e = read_current(&env, dir).unwrap_err();
        assert!(
            e.is_corruption() && e.to_string().contains("at most"),
            "{e}"
        );
    }

    #[test]
    fn missing_current_is_an_io_error() {
        let (_fs, env) = TestFs::env();
        let e = read_current(&env, Path::new("/db")).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
    }
}
