//! `Db::open_secondary` and `Db::try_catch_up` (issue 18): a read-only handle that follows a
//! writer. In this process over the in-memory file system (what a catch-up shows, what it
//! refuses, that snapshots and iterators keep their view), and against a writer in another
//! process on the real file system that keeps writing, flushing, compacting and deleting
//! files while the test catches up again and again: every write the writer acknowledged
//! before a catch-up is visible after it, with its value. Every design preset.

#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use shale::env::Env;
use shale::{Db, Error, IterOptions, Options};

const CHILD_DIR: &str = "SHALE_SECONDARY_TEST_CHILD_DIR";
const CHILD_DESIGN: &str = "SHALE_SECONDARY_TEST_CHILD_DESIGN";

/// Keys the writer writes, each once per round.
const KEYS: u32 = 300;
/// Rounds the writer in another process writes.
const ROUNDS: u32 = 6;

/// Small buffers, files and levels, so a few hundred writes flush and compact often.
fn opts(design: &str) -> Options {
    let mut o = Options::preset(design).unwrap();
    o.write_buffer_size = 8 * 1024;
    o.target_file_size = 4 * 1024;
    o.max_bytes_for_level_base = 16 * 1024;
    o.min_separated_value_size = 24;
    o.vlog_segment_size = 8 * 1024;
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("v{i}:{round}: padded so that the value log separates it").into_bytes()
}

/// The round a value read for key `i` was written in, checking it is one of key `i`'s.
fn round_of(i: u32, v: &[u8]) -> u32 {
    let s = String::from_utf8_lossy(v);
    let mut parts = s.split(':');
    let (Some(k), Some(r)) = (parts.next(), parts.next()) else {
        panic!("key {i}: value {s:?} is none the writer wrote");
    };
    assert_eq!(k, format!("v{i}"), "key {i}: value {s:?} of another key");
    let r: u32 = r.parse().unwrap();
    assert_eq!(v, value(i, r), "key {i}: value {s:?} damaged");
    r
}

/// The round of each key `0..KEYS` as `db` reads it (`None`: absent), by a scan where the
/// store has one, else by gets; `at` reads at a snapshot.
fn rounds(db: &Db, at: Option<&shale::Snapshot>) -> Vec<Option<u32>> {
    let mut found: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    if db.supports_scans() {
        let mut o = IterOptions::default();
        if let Some(s) = at {
            o = o.at(s);
        }
        for kv in db.iter(o).unwrap() {
            let (k, v) = kv.unwrap();
            found.insert(k, v);
        }
    }
    (0..KEYS)
        .map(|i| {
            let got = match at {
                Some(s) => db.get_at(&key(i), s).unwrap(),
                None => db.get(&key(i)).unwrap(),
            };
            if db.supports_scans() {
                assert_eq!(found.remove(&key(i)), got, "key {i}: scan and get differ");
            }
            got.map(|v| round_of(i, &v))
        })
        .collect()
}

/// Keys the writer wrote in order, round after round: every view of the store is a prefix
/// of that history. Returns the number of writes in it.
fn prefix_length(rounds: &[Option<u32>], what: &str) -> u64 {
    // Writes of each key so far: 0 for an absent key, round + 1 otherwise.
    let n: Vec<u64> = rounds
        .iter()
        .map(|r| r.map_or(0, |r| u64::from(r) + 1))
        .collect();
    let first = n.first().copied().unwrap_or(0);
    let boundary = n.iter().position(|&x| x != first).unwrap_or(n.len());
    for (i, &x) in n.iter().enumerate().skip(boundary) {
        assert_eq!(
            x + 1,
            first,
            "{what}: not a prefix of the writes at key {i}: {rounds:?}"
        );
    }
    if boundary == n.len() {
        first * u64::from(KEYS)
    } else {
        (first - 1) * u64::from(KEYS) + boundary as u64
    }
}

/// A catch-up, retried while it fails because the writer kept committing (the failure the
/// documentation allows; the handle keeps its view meanwhile), up to a deadline.
fn catch_up(db: &Db, what: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match db.try_catch_up() {
            Ok(seq) => return seq,
            Err(e) if Instant::now() < deadline && matches!(e, Error::Io { .. }) => {}
            Err(e) => panic!("{what}: catch-up failed: {e}"),
        }
    }
}

#[test]
fn follows_a_writer_in_this_process_and_keeps_old_views() {
    for design in Options::available_presets() {
        let env = Env::memory();
        let o = opts(design).with_env(env.clone());
        let db = Db::open("/db", o.clone()).unwrap();
        for i in 0..KEYS {
            db.put(&key(i), &value(i, 0)).unwrap();
        }
        let follower = Db::open_secondary("/db", o.clone()).unwrap();
        let before = rounds(&follower, None);
        assert!(before.iter().all(|r| *r == Some(0)), "{design}: {before:?}");

        // Writes are refused as on a read-only handle; catching up a handle that is not a
        // secondary is a caller's mistake.
        assert!(matches!(
            follower.put(b"k", b"v"),
            Err(Error::ReadOnlyOpen { .. })
        ));
        assert!(matches!(follower.flush(), Err(Error::ReadOnlyOpen { .. })));
        assert!(matches!(
            follower.compact_range(None, None),
            Err(Error::ReadOnlyOpen { .. })
        ));
        let e = db.try_catch_up().unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("open_secondary")),
            "{design}: {e}"
        );
        let ro = Db::open_read_only("/db", o.clone()).unwrap();
        assert!(matches!(ro.try_catch_up(), Err(Error::InvalidArgument(_))));

        // A snapshot and an iterator of the first view.
        let snap = follower.snapshot();
        let old_iter = follower
            .supports_scans()
            .then(|| follower.iter(IterOptions::default()).unwrap());

        // The writer overwrites everything, flushes, compacts (deleting the tables the first
        // view reads) and writes more into its log.
        for i in 0..KEYS {
            db.put(&key(i), &value(i, 1)).unwrap();
        }
        db.compact_range(None, None).unwrap();
        if design == "wisckey" {
            db.run_value_gc().unwrap();
        }
        for i in 0..KEYS / 2 {
            db.put(&key(i), &value(i, 2)).unwrap();
        }
        assert_eq!(
            rounds(&follower, None),
            before,
            "{design}: moved before a catch-up"
        );

        let seq = catch_up(&follower, design);
        assert_eq!(seq.to_string(), db.property("shale.last-sequence").unwrap());
        let now = rounds(&follower, None);
        let expected: Vec<Option<u32>> = (0..KEYS)
            .map(|i| Some(if i < KEYS / 2 { 2 } else { 1 }))
            .collect();
        assert_eq!(now, expected, "{design}: after the catch-up");

        // The old snapshot and iterator still read the first view.
        assert_eq!(rounds(&follower, Some(&snap)), before, "{design}: snapshot");
        if let Some(it) = old_iter {
            let old: Vec<u32> = it
                .map(|kv| {
                    let (k, v) = kv.unwrap();
                    let i: u32 = String::from_utf8_lossy(&k)[3..].parse().unwrap();
                    round_of(i, &v)
                })
                .collect();
            assert_eq!(old, vec![0; KEYS as usize], "{design}: iterator");
        }
        // A snapshot taken now reads the new view after the writer moves on.
        let snap2 = follower.snapshot();
        for i in 0..KEYS {
            db.put(&key(i), &value(i, 3)).unwrap();
        }
        db.compact_range(None, None).unwrap();
        catch_up(&follower, design);
        assert_eq!(
            rounds(&follower, Some(&snap2)),
            expected,
            "{design}: snapshot 2"
        );
        assert_eq!(
            rounds(&follower, None),
            vec![Some(3); KEYS as usize],
            "{design}: second catch-up"
        );
        drop(snap);
        follower.close().unwrap();
        db.close().unwrap();
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("shale-secondary-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn table_names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

/// The writer of the two-process test: writes `KEYS` keys in `ROUNDS` rounds, prints
/// `acked <n>` after the `n`th write returned (counting from 1), compacts the whole store
/// after each round (and for a value log collects garbage), and prints `done` after its
/// close. After the first round it waits for a line on its standard input: the follower
/// pins a view of the first round's tables first, which the later rounds then delete
/// (without the wait, a writer faster than the follower could finish before any view was
/// pinned, and the pinned view's tables would never be deleted). Does nothing when run on
/// its own.
#[test]
#[ignore = "run as a child process by follows_a_writer_in_another_process"]
fn child_writer() {
    let (Some(dir), Ok(design)) = (std::env::var_os(CHILD_DIR), std::env::var(CHILD_DESIGN)) else {
        return;
    };
    let db = Db::open(&dir, opts(&design)).unwrap();
    let mut out = std::io::stdout().lock();
    let mut n = 0u64;
    for round in 0..ROUNDS {
        for i in 0..KEYS {
            db.put(&key(i), &value(i, round)).unwrap();
            n += 1;
            writeln!(out, "acked {n}").unwrap();
            out.flush().unwrap();
        }
        db.compact_range(None, None).unwrap();
        if design == "wisckey" {
            db.run_value_gc().unwrap();
        }
        if round == 0 {
            let mut go = String::new();
            std::io::stdin().read_line(&mut go).unwrap();
        }
    }
    db.close().unwrap();
    writeln!(out, "done").unwrap();
    out.flush().unwrap();
}

/// What the writer process reported so far.
#[derive(Default)]
struct Reported {
    acked: u64,
    done: bool,
    lines: Vec<String>,
}

/// A writer in another process writes, flushes, compacts and deletes files while this
/// process catches up again and again. After each catch-up: every write acknowledged before
/// it began is visible with its value, the view is a prefix of the writer's history (no
/// write missing before a visible one), and the view never goes back. Along the way a
/// snapshot taken on an early view still reads it after the writer deleted that view's
/// tables. At the end the follower reads exactly the writer's last state.
#[test]
fn follows_a_writer_in_another_process() {
    for design in Options::available_presets() {
        let tmp = TempDir::new(design);
        let dir = tmp.0.clone();
        // The store exists before the writer starts (a secondary open never creates one).
        Db::open(&dir, opts(design)).unwrap().close().unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["child_writer", "--exact", "--ignored", "--nocapture"])
            .env(CHILD_DIR, &dir)
            .env(CHILD_DESIGN, design)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        // Written once a view is pinned: the writer then goes on past its first round.
        let mut go = child.stdin.take();
        let reported = Arc::new((Mutex::new(Reported::default()), Condvar::new()));
        let reader = {
            let reported = Arc::clone(&reported);
            let stdout = child.stdout.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let line = line.unwrap();
                    let (lock, cv) = &*reported;
                    let mut r = lock.lock().unwrap();
                    if let Some(n) = line.strip_prefix("acked ") {
                        r.acked = n.parse().unwrap();
                    } else if line == "done" {
                        r.done = true;
                    } else {
                        r.lines.push(line);
                    }
                    cv.notify_all();
                }
            })
        };
        let state = || {
            let r = reported.0.lock().unwrap();
            (r.acked, r.done)
        };

        let follower = Db::open_secondary(&dir, opts(design)).unwrap();
        let mut seen = 0u64;
        let mut catch_ups = 0u32;
        // A snapshot of an early view with writes in tables, and what it read.
        let mut pinned: Option<(shale::Snapshot, Vec<Option<u32>>, BTreeSet<String>)> = None;
        loop {
            let (acked, done) = state();
            let what = format!("{design}, catch-up {catch_ups}, {acked} writes acknowledged");
            catch_up(&follower, &what);
            catch_ups += 1;
            let view = rounds(&follower, None);
            let n = prefix_length(&view, &what);
            assert!(n >= acked, "{what}: only {n} writes visible: {view:?}");
            assert!(n >= seen, "{what}: went back from {seen} to {n} writes");
            seen = n;
            if pinned.is_none() && n >= u64::from(KEYS) && !follower.live_files().is_empty() {
                let files = follower
                    .live_files()
                    .iter()
                    .map(|f| format!("{:06}.sst", f.number))
                    .collect();
                pinned = Some((follower.snapshot(), view, files));
            }
            if pinned.is_some()
                && let Some(mut w) = go.take()
            {
                writeln!(w, "go").unwrap();
            }
            if done {
                break;
            }
            // The writer waits after its first round until a view is pinned: catch up
            // again (its compaction may still be writing the first tables) instead of
            // waiting for a write that comes only after the pin.
            if go.is_some() && acked >= u64::from(KEYS) && child.try_wait().unwrap().is_none() {
                continue;
            }
            // Wait for something new from the writer (a condition with a deadline, not a
            // sleep): every catch-up then has a write to find.
            let (lock, cv) = &*reported;
            let r = lock.lock().unwrap();
            let (r, timeout) = cv
                .wait_timeout_while(r, Duration::from_secs(120), |r| r.acked == acked && !r.done)
                .unwrap();
            assert!(
                !timeout.timed_out(),
                "{what}: the writer stalled: {:?}",
                r.lines
            );
        }
        let status = child.wait().unwrap();
        reader.join().unwrap();
        assert!(status.success(), "{design}: the writer failed");
        assert_eq!(
            seen,
            u64::from(KEYS * ROUNDS),
            "{design}: the last catch-up"
        );
        assert!(catch_ups > 2, "{design}: {catch_ups} catch-ups");
        eprintln!("{design}: {catch_ups} catch-ups");

        // The early view's tables are gone from the directory (the writer compacted them
        // away); its snapshot still reads them.
        let (snap, view, files) = pinned.expect("a view with tables was seen");
        let now = table_names(&dir);
        assert!(
            files.iter().any(|f| !now.contains(f)),
            "{design}: the writer deleted none of {files:?} (now {now:?})"
        );
        assert_eq!(
            rounds(&follower, Some(&snap)),
            view,
            "{design}: old snapshot"
        );
        drop(snap);
        follower.close().unwrap();
    }
}
