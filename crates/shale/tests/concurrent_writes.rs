//! Many writers at once: group commit, memtable inserts outside the write lock, and sequence
//! numbers published in order.
//!
//! Two and twelve writers (small groups whose writers insert in parallel, and large groups
//! the leader inserts alone). Each writer writes its own keys `w{w}-{i:06}` in order, the next only after the previous
//! one was acknowledged, so within a writer a later key has a larger sequence number. A
//! snapshot that shows key `i` of a writer must therefore show every key before it: readers
//! check that every snapshot (scan and gets) shows each writer's keys as a gap-free prefix,
//! while the writers race and memtables switch and flush under them. At the end every key is
//! there, before and after a reopen. Every preset runs it (the value log inserts under the
//! write lock, the others outside it).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a test's failure is a test failure"
)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use shale::env::Env;
use shale::{Db, IterOptions, Options, WriteBatch, WriteOptions};

const PER_WRITER: usize = 1000;

fn key(w: usize, i: usize) -> Vec<u8> {
    format!("w{w}-{i:06}").into_bytes()
}

fn value(w: usize, i: usize) -> Vec<u8> {
    // Some values long enough for the value log to separate them.
    let len = if i.is_multiple_of(5) { 300 } else { 20 };
    let mut v = format!("{w}:{i}:").into_bytes();
    v.resize(len, b'.');
    v
}

fn options(design: &str, env: &Env) -> Options {
    let mut o = Options::preset(design).expect("preset");
    o.env = env.clone();
    // Small memtables: writers keep switching them while others still insert.
    o.write_buffer_size = 32 * 1024;
    o.target_file_size = 16 * 1024;
    o.max_bytes_for_level_base = 64 * 1024;
    o.min_separated_value_size = 64;
    o.vlog_segment_size = 64 * 1024;
    o
}

/// How many keys of writer `w` the iterator's view holds, checking they are exactly
/// `w{w}-000000 .. w{w}-{n-1}` with their values.
fn prefix_len(design: &str, db: &Db, w: usize, opts: IterOptions) -> usize {
    if !db.supports_scans() {
        // A store that answers point reads only: every key of the writer, by gets.
        let mut n = 0;
        for i in 0..PER_WRITER {
            let got = match &opts.snapshot {
                Some(s) => db.get_at(&key(w, i), s),
                None => db.get(&key(w, i)),
            }
            .expect("get");
            if let Some(v) = got {
                assert_eq!(
                    n, i,
                    "{design}: writer {w}: the view skips key {n} but shows key {i}"
                );
                assert_eq!(v, value(w, i));
                n += 1;
            }
        }
        return n;
    }
    let mut n = 0;
    for item in db.iter(opts).expect("iter") {
        let (k, v) = item.expect("scan");
        assert_eq!(
            k,
            key(w, n),
            "{design}: writer {w}: the view skips key {n} but shows a later one"
        );
        assert_eq!(v, value(w, n));
        n += 1;
    }
    n
}

/// Counts a writer out when it ends, normally or by a panic (see `run`).
struct Finish<'a> {
    done: &'a AtomicUsize,
    stop_readers: &'a AtomicBool,
    writers: usize,
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        let last = self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.writers;
        if last || std::thread::panicking() {
            self.stop_readers.store(true, Ordering::Release);
        }
    }
}

fn run(design: &str, writers: usize) {
    let env = Env::memory();
    let dir = std::path::Path::new("/db");
    let db = Db::open(dir, options(design, &env)).expect("open");
    let done = AtomicUsize::new(0);
    let stop_readers = AtomicBool::new(false);
    std::thread::scope(|s| {
        for w in 0..writers {
            let (db, done, stop_readers) = (&db, &done, &stop_readers);
            s.spawn(move || {
                // The last writer to finish lets the readers stop after their current round,
                // and so does a writer that panics: otherwise the readers would wait for it
                // forever and the test would hang instead of failing.
                let _finish = Finish {
                    done,
                    stop_readers,
                    writers,
                };
                let mut i = 0;
                while i < PER_WRITER {
                    // Single puts, two-key batches and some synced writes.
                    if i % 7 == 3 && i + 1 < PER_WRITER {
                        let mut b = WriteBatch::new();
                        b.put(&key(w, i), &value(w, i));
                        b.put(&key(w, i + 1), &value(w, i + 1));
                        let sync = i % 21 == 3;
                        db.write_opt(b, WriteOptions { sync }).expect("write");
                        i += 2;
                    } else {
                        db.put(&key(w, i), &value(w, i)).expect("put");
                        i += 1;
                    }
                }
            });
        }
        for _ in 0..2 {
            let (db, stop_readers) = (&db, &stop_readers);
            s.spawn(move || {
                let mut rounds = 0;
                while !stop_readers.load(Ordering::Acquire) || rounds == 0 {
                    let snap = db.snapshot();
                    for w in 0..writers {
                        let prefix = format!("w{w}-").into_bytes();
                        let n = prefix_len(design, db, w, IterOptions::prefix(prefix).at(&snap));
                        // Gets at the snapshot agree with the scan at its edge.
                        if n > 0 {
                            assert_eq!(
                                db.get_at(&key(w, n - 1), &snap).expect("get"),
                                Some(value(w, n - 1))
                            );
                        }
                        if n < PER_WRITER {
                            assert_eq!(db.get_at(&key(w, n), &snap).expect("get"), None);
                        }
                    }
                    rounds += 1;
                }
            });
        }
    });
    for w in 0..writers {
        let prefix = format!("w{w}-").into_bytes();
        assert_eq!(
            prefix_len(design, &db, w, IterOptions::prefix(prefix)),
            PER_WRITER
        );
    }
    // Every writer's entries and bytes are counted once, whoever led its group.
    let stats = db.stats();
    assert_eq!(
        stats.user_ops_written,
        (writers * PER_WRITER) as u64,
        "{design}"
    );
    let bytes: usize = (0..writers)
        .flat_map(|w| (0..PER_WRITER).map(move |i| key(w, i).len() + value(w, i).len()))
        .sum();
    assert_eq!(stats.user_bytes_written, bytes as u64, "{design}");
    drop(db);
    let db = Db::open(dir, options(design, &env)).expect("reopen");
    for w in 0..writers {
        let prefix = format!("w{w}-").into_bytes();
        assert_eq!(
            prefix_len(design, &db, w, IterOptions::prefix(prefix)),
            PER_WRITER,
            "{design}: after reopen"
        );
    }
}

#[test]
fn concurrent_writers_publish_in_order_for_every_preset() {
    // Two writers form groups their writers insert in parallel; twelve form groups larger
    // than that, which the leader inserts alone.
    for design in Options::available_presets() {
        for writers in [2, 12] {
            run(design, writers);
        }
    }
}
