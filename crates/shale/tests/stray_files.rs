//! Issue 17, case 10 (the remaining rough edges): files that are not the store's are neither
//! read nor deleted; a refused open leaves no new MANIFEST; value-log garbage collection
//! reports a damaged segment instead of skipping it silently; value-log segments opened for
//! reads are capped, so a scan and `verify` work with few file descriptors.

#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::collections::BTreeMap;

mod store_common;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use store_common::{put_round, scan};

use shale::env::mem::MemFs;
use shale::env::{Env, FileSystem, ReadCause};
use shale::{Db, Error, IterOptions, Options};

const DIR: &str = "/db";

fn opts(env: &Env, design: &str) -> Options {
    let mut o = Options::preset(design).unwrap().with_env(env.clone());
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.min_separated_value_size = 24;
    o.vlog_segment_size = 16 * 1024;
    o.vlog_gc = false;
    o
}

fn write(mem: &MemFs, path: &Path, bytes: &[u8]) {
    let mut f = mem.create(path).unwrap();
    f.append(bytes).unwrap();
    f.sync().unwrap();
    mem.sync_dir(Path::new(DIR)).unwrap();
}

fn read(env: &Env, path: &Path) -> Vec<u8> {
    env.read_all(path, ReadCause::Other).unwrap()
}

fn manifests(mem: &MemFs) -> Vec<PathBuf> {
    mem.file_names()
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("MANIFEST-") && n != "MANIFEST-5")
        })
        .collect()
}

/// Stray `99.log`, `98.vlog`, `7.sst` and temporary files that are not the store's (numbers
/// not written as the store writes them): open used to fail naming `000099.log`, a file
/// that does not exist. Now they are not the store's: open, reads, verify and the sweeps
/// ignore them and leave their bytes as they were; every open leaves one MANIFEST.
#[test]
fn stray_files_are_neither_read_nor_deleted() {
    let strays = [
        "99.log",
        "98.vlog",
        "7.sst",
        "MANIFEST-5",
        "draft.tmp",
        "000012.tmp",
    ];
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let mut model = BTreeMap::new();
        let db = Db::open(DIR, opts(&env, design)).unwrap();
        put_round(&db, &mut model, 0..600, 0);
        db.close().unwrap();
        for name in strays {
            write(&mem, &Path::new(DIR).join(name), name.as_bytes());
        }
        for attempt in 0..3 {
            shale::verify(DIR, opts(&env, design)).unwrap();
            let db = Db::open(DIR, opts(&env, design)).unwrap();
            assert_eq!(scan(&db), model, "{design} attempt {attempt}");
            put_round(&db, &mut model, 0..300, attempt + 1);
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
            db.close().unwrap();
            assert_eq!(manifests(&mem).len(), 1, "{design}: {:?}", manifests(&mem));
            for name in strays {
                assert_eq!(
                    read(&env, &Path::new(DIR).join(name)),
                    name.as_bytes(),
                    "{design}: {name}"
                );
            }
        }
    }
}

/// A refused open (here: a table the MANIFEST lists is missing) writes nothing, however
/// often it is tried: no new MANIFEST per attempt.
#[test]
fn refused_opens_leave_no_manifest_behind() {
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let db = Db::open(DIR, opts(&env, design)).unwrap();
        put_round(&db, &mut BTreeMap::new(), 0..600, 0);
        db.flush().unwrap();
        db.close().unwrap();
        let table = mem
            .file_names()
            .into_iter()
            .find(|p| p.extension().is_some_and(|e| e == "sst"))
            .unwrap();
        mem.remove_file(&table).unwrap();
        let before = mem.file_names();
        for _ in 0..3 {
            let e = Db::open(DIR, opts(&env, design)).unwrap_err();
            assert!(e.is_corruption(), "{design}: {e}");
            assert_eq!(mem.file_names(), before, "{design}");
        }
    }
}

/// A directory holding a store's files without `CURRENT` (a damaged store, never a new one)
/// and without `LOCK` (copied without it): the refused open adds no file, `LOCK` included.
#[test]
fn a_refused_open_creates_no_lock_file() {
    for design in Options::available_presets() {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let db = Db::open(DIR, opts(&env, design)).unwrap();
        put_round(&db, &mut BTreeMap::new(), 0..600, 0);
        db.flush().unwrap();
        db.close().unwrap();
        for name in ["CURRENT", "LOCK"] {
            mem.remove_file(&Path::new(DIR).join(name)).unwrap();
        }
        let before = mem.file_names();
        for _ in 0..2 {
            let e = Db::open(DIR, opts(&env, design)).unwrap_err();
            assert!(e.is_corruption(), "{design}: {e}");
            assert_eq!(mem.file_names(), before, "{design}");
        }
    }
}

/// A record of a sealed value-log segment is damaged: garbage collection reaching it fails
/// with `Error::Corruption` naming the segment and offset, lists it in
/// `Stats::placement.gc_damaged_segments`, keeps the file, and does not pick it again
/// (other segments are still collected).
#[test]
fn value_gc_reports_a_damaged_segment() {
    let mem = MemFs::new();
    let env = Env::new(Arc::new(mem.clone()));
    let mut model = BTreeMap::new();
    let db = Db::open(DIR, opts(&env, "wisckey")).unwrap();
    put_round(&db, &mut model, 0..600, 0);
    db.flush().unwrap();
    put_round(&db, &mut model, 0..600, 1);
    db.flush().unwrap();
    db.close().unwrap();
    let mut segments: Vec<PathBuf> = mem
        .file_names()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "vlog"))
        .collect();
    segments.sort();
    let damaged = segments[0].clone();
    let mut bytes = read(&env, &damaged);
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    write(&mem, &damaged, &bytes);

    let db = Db::open(DIR, opts(&env, "wisckey")).unwrap();
    let mut reported = None;
    for _ in 0..segments.len() + 2 {
        match db.run_value_gc() {
            Ok(_) => {}
            Err(e @ Error::Corruption { .. }) => {
                assert!(reported.is_none(), "reported twice: {e}");
                reported = Some(e);
            }
            Err(e) => panic!("{e}"),
        }
    }
    let e = reported.expect("garbage collection reported the damaged segment");
    match &e {
        Error::Corruption { file, offset, .. } => {
            assert_eq!(file, &damaged, "{e}");
            assert!(*offset <= at as u64, "{e}");
        }
        _ => unreachable!(),
    }
    let number: u64 = damaged
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let listed = db.stats().placement.gc_damaged_segments;
    assert!(listed.iter().any(|&(n, _)| n == number), "{listed:?}");
    assert!(
        mem.file_names().contains(&damaged),
        "the damaged segment is kept"
    );
    // Every value is still readable where its record is intact.
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    db.close().unwrap();
    // `verify` names the same damage.
    match shale::verify(DIR, opts(&env, "wisckey")) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, damaged),
        other => panic!("verify: {other:?}"),
    }
}

/// A store of 120 value-log segments, read by a process allowed 64 file descriptors
/// (`ulimit -n 64` in a child process): a scan and `verify` read every value.
#[cfg(unix)]
#[test]
fn a_scan_over_more_segments_than_descriptors() {
    let dir = std::env::temp_dir().join(format!("shale-segments-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut o = Options::preset("wisckey").unwrap();
    o.vlog_segment_size = 4096;
    o.min_separated_value_size = 24;
    o.vlog_gc = false;
    let db = Db::open(&dir, o).unwrap();
    let mut model = BTreeMap::new();
    put_round(&db, &mut model, 0..8000, 0);
    db.close().unwrap();
    let segments = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".vlog")
        })
        .count();
    assert!(segments >= 120, "{segments} segments");
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" child_scans_the_store --exact --ignored --nocapture")
        .arg(&exe)
        .env("SHALE_SEGMENTS_CHILD_DIR", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("child-scanned {}", model.len())),
        "{stdout}"
    );
}

/// The child of [`a_scan_over_more_segments_than_descriptors`].
#[test]
#[ignore = "run as a child process by a_scan_over_more_segments_than_descriptors"]
fn child_scans_the_store() {
    let Some(dir) = std::env::var_os("SHALE_SEGMENTS_CHILD_DIR") else {
        return;
    };
    let mut o = Options::preset("wisckey").unwrap();
    o.min_separated_value_size = 24;
    o.vlog_gc = false;
    // Default max_open_files (1000): segments beyond the descriptor limit are closed when
    // an open fails for lack of descriptors.
    shale::verify(&dir, o.clone()).unwrap();
    let db = Db::open(&dir, o).unwrap();
    let n = db
        .iter(IterOptions::default())
        .unwrap()
        .map(Result::unwrap)
        .count();
    db.close().unwrap();
    println!("child-scanned {n}");
}
