//! `shale stress` under real `kill -9`: start the workload, wait until it has printed a
//! pseudo-random number of progress lines (0: kill right after it recovered the store, while
//! it verifies and before it writes), send SIGKILL, and check with `--verify-only` that every
//! acknowledged write survived, nothing was resurrected and no value is wrong. Every cycle
//! continues on the same store, so later cycles recover from a store that was itself
//! recovered after a kill. Moments vary with where each thread is when the line appears:
//! mid-write, mid-flush, mid-compaction, mid-MANIFEST-update.
//!
//! `SHALE_KILL_CYCLES=N` runs more cycles (`scripts/kill-loop.sh` runs many more).

#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("shale-kill-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn shale(db: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_shale"));
    // The design is chosen by the store's directory name (`...-wisckey`, `...-flodb`,
    // `...-lwc`).
    let name = db.to_string_lossy();
    let design = if name.ends_with("-wisckey") {
        "wisckey"
    } else if name.ends_with("-flodb") {
        "flodb"
    } else if name.ends_with("-lsm-trie") {
        "lsm-trie"
    } else if name.ends_with("-lwc") {
        "lwc"
    } else {
        "leveldb"
    };
    c.arg("stress")
        .arg("--design")
        .arg(design)
        .arg("--db")
        .arg(db)
        .args(["--keys", "1500", "--write-buffer-size", "32768"])
        .args(args);
    c
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Start the workload and kill it once it has printed `lines` progress lines (after the
/// `recovered` line when `lines` is 0). Returns the lines it printed.
fn run_and_kill(db: &Path, seed: u64, lines: usize) -> Vec<String> {
    let mut child: Child = shale(
        db,
        &[
            "--ops",
            "100000000",
            "--threads",
            "4",
            "--progress-every",
            "150",
            "--seed",
            &seed.to_string(),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    let mut progress = 0;
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            // The workload ended by itself: that is a failure (it has ops for hours).
            let status = child.wait().unwrap();
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("stress exited early ({status}) after {seen:?}\nstderr:\n{err}");
        }
        let line = line.trim_end().to_string();
        let done = if lines == 0 {
            line == "recovered"
        } else {
            progress += usize::from(line.starts_with("progress "));
            progress >= lines
        };
        seen.push(line);
        if done {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child should have died of SIGKILL");
    seen
}

#[test]
fn every_acknowledged_write_survives_kill_9() {
    kill_cycles("db");
}

#[test]
fn every_acknowledged_write_survives_kill_9_wisckey() {
    kill_cycles("db-wisckey");
}

#[test]
fn every_acknowledged_write_survives_kill_9_flodb() {
    kill_cycles("db-flodb");
}

#[test]
fn every_acknowledged_write_survives_kill_9_lsm_trie() {
    kill_cycles("db-lsm-trie");
}

#[test]
fn every_acknowledged_write_survives_kill_9_lwc() {
    kill_cycles("db-lwc");
}

fn kill_cycles(name: &str) {
    let tmp = TempDir::new(&format!("cycles-{name}"));
    let db = tmp.0.join(name);
    let cycles: u64 = std::env::var("SHALE_KILL_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let mut unacknowledged = 0;
    for cycle in 0..cycles {
        // A deterministic spread of kill points: right after recovery, or after 1-9 progress
        // lines (150 operations each).
        let lines = ((cycle * 7 + 3) % 10) as usize;
        let lines = if cycle == 0 { lines.max(1) } else { lines };
        run_and_kill(&db, cycle, lines);
        let o = shale(&db, &["--verify-only"]).output().unwrap();
        assert!(
            o.status.success(),
            "verification after kill {cycle} (at {lines} progress lines) failed:\n{}",
            text(&o)
        );
        let out = String::from_utf8_lossy(&o.stdout);
        let v = out
            .lines()
            .find(|l| l.starts_with("verified: "))
            .unwrap_or_else(|| panic!("no verified line in:\n{out}"));
        unacknowledged += v
            .split(", ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    // A clean run on the same store recovers, verifies, runs to completion and verifies.
    let o = shale(&db, &["--ops", "2000", "--seed", "999"])
        .output()
        .unwrap();
    assert!(o.status.success(), "final clean run failed:\n{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("done: "), "{out}");
    eprintln!("{cycles} kill -9 cycles verified; {unacknowledged} unacknowledged writes resolved");
}

#[test]
fn verify_only_catches_a_wrong_expectation() {
    let tmp = TempDir::new("catch");
    let db = tmp.0.join("db");
    let o = shale(&db, &["--ops", "600", "--sync-every", "0"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    // Claim that a write which never happened was acknowledged.
    let expected = tmp.0.join("db.expected");
    let mut log = std::fs::read_to_string(&expected).unwrap();
    log.push_str("w 999999 p 3 999999999\na 999999\n");
    std::fs::write(&expected, log).unwrap();
    let o = shale(&db, &["--verify-only"]).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("key 3 "), "{err}");
}
