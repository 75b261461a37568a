//! `Options::min_memtables_to_merge` (RocksDB's `min_write_buffer_number_to_merge`): frozen
//! memtables wait until that many are frozen, then one flush writes them out as one; a
//! `Db::flush` does not wait. On every design.

#![allow(clippy::unwrap_used, reason = "a test's failure is a test failure")]

use shale::env::Env;
use shale::{Db, Options};

const DIR: &str = "/db";

fn options(design: &str, env: &Env) -> Options {
    let mut o = Options::preset(design).unwrap().with_env(env.clone());
    o.write_buffer_size = 16 * 1024;
    o.min_memtables_to_merge = 3;
    o.max_immutable_memtables = 4;
    // Frozen memtables wait for three of their kind however long the test takes.
    o.memtable_merge_timeout = None;
    o
}

fn prop(db: &Db, name: &str) -> String {
    db.property(name)
        .unwrap_or_else(|| panic!("no property {name}"))
}

fn frozen(db: &Db) -> usize {
    prop(db, "shale.num-immutable-mem-table").parse().unwrap()
}

fn files(db: &Db) -> usize {
    prop(db, "shale.levels")
        .split_whitespace()
        .map(|n| n.parse::<usize>().unwrap())
        .sum()
}

fn key(i: u32) -> Vec<u8> {
    // Spread over the key space, so each memtable's keys interleave with the others'.
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000).into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("value-{i}-").into_bytes();
    v.resize(200, b'.');
    v
}

/// Put keys from `*next` on until `stop` holds after a put; returns how many were put.
fn put_until(db: &Db, next: &mut u32, stop: impl Fn(&Db) -> bool) -> u32 {
    let first = *next;
    while !stop(db) {
        db.put(&key(*next), &value(*next)).unwrap();
        *next += 1;
        assert!(*next - first < 100_000, "the condition never held");
    }
    *next - first
}

#[test]
fn frozen_memtables_wait_for_each_other_then_flush_as_one_table() {
    let mut designs = Options::available_presets();
    designs.retain(|d| *d != "flodb");
    designs.push("flodb");
    for design in designs {
        let env = Env::memory();
        let db = Db::open(DIR, options(design, &env)).unwrap();
        let mut next = 0;
        // Two frozen memtables: fewer than three, so nothing is flushed or due, and the
        // store is settled with them waiting.
        put_until(&db, &mut next, |db| frozen(db) == 2);
        db.wait_for_compactions().unwrap();
        assert_eq!(frozen(&db), 2, "{design}");
        assert_eq!(files(&db), 0, "{design}");
        assert_eq!(prop(&db, "shale.mem-table-flush-pending"), "0", "{design}");
        assert_eq!(db.stats().lifetime.flushes, 0, "{design}");
        for i in 0..next {
            assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "{design}");
        }
        // The third freeze starts one flush of all three.
        put_until(&db, &mut next, |db| frozen(db) != 2);
        db.wait_for_compactions().unwrap();
        assert_eq!(frozen(&db), 0, "{design}");
        assert_eq!(db.stats().lifetime.flushes, 1, "{design}");
        assert_eq!(files(&db), 1, "{design}: {}", prop(&db, "shale.levels"));
        // Everything reads back, from the table and after a reopen (the log before the
        // third memtable's end is no longer replayed: the table must hold all three).
        for i in 0..next {
            assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "{design}");
        }
        db.close().unwrap();
        let db = Db::open(DIR, options(design, &env)).unwrap();
        for i in 0..next {
            assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "{design}");
        }
        db.close().unwrap();
    }
}

/// `Db::flush` writes out the frozen memtables waiting for more, with the mutable one, as
/// one flush.
#[test]
fn an_asked_flush_does_not_wait_for_more_memtables() {
    let env = Env::memory();
    let db = Db::open(DIR, options("leveldb", &env)).unwrap();
    let mut next = 0;
    put_until(&db, &mut next, |db| frozen(db) == 1);
    db.flush().unwrap();
    assert_eq!(frozen(&db), 0);
    assert_eq!(db.stats().lifetime.flushes, 1);
    assert_eq!(files(&db), 1);
    for i in 0..next {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)));
    }
}

/// Versions of one key in different memtables of one flush: the newest wins, a snapshot
/// keeps its own, a delete hides the older puts, on every design that scans.
#[test]
fn versions_across_merged_memtables() {
    for design in ["leveldb", "pebblesdb", "wisckey", "lwc", "lsm-trie"] {
        let env = Env::memory();
        let db = Db::open(DIR, options(design, &env)).unwrap();
        let mut next = 0;
        db.put(b"a", b"1").unwrap();
        db.put(b"b", b"1").unwrap();
        let snap = db.snapshot();
        put_until(&db, &mut next, |db| frozen(db) == 1);
        db.put(b"a", b"2").unwrap();
        db.delete(b"b").unwrap();
        put_until(&db, &mut next, |db| frozen(db) == 2);
        db.put(b"a", b"3").unwrap();
        put_until(&db, &mut next, |db| frozen(db) != 2);
        db.wait_for_compactions().unwrap();
        assert_eq!(db.stats().lifetime.flushes, 1, "{design}");
        assert_eq!(
            db.get(b"a").unwrap().as_deref(),
            Some(&b"3"[..]),
            "{design}"
        );
        assert_eq!(db.get(b"b").unwrap(), None, "{design}");
        let at = |k: &[u8]| db.get_at(k, &snap).unwrap();
        assert_eq!(at(b"a").as_deref(), Some(&b"1"[..]), "{design}");
        assert_eq!(at(b"b").as_deref(), Some(&b"1"[..]), "{design}");
        drop(snap);
        db.close().unwrap();
        let db = Db::open(DIR, options(design, &env)).unwrap();
        assert_eq!(
            db.get(b"a").unwrap().as_deref(),
            Some(&b"3"[..]),
            "{design}"
        );
        assert_eq!(db.get(b"b").unwrap(), None, "{design}");
        db.close().unwrap();
    }
}

/// With a timeout, frozen memtables that wait for more are flushed (together) once no
/// memtable was frozen for that long; until then a flush is pending, so the store is not
/// settled.
#[test]
fn frozen_memtables_are_flushed_when_the_merge_timeout_runs_out() {
    for design in ["leveldb", "pebblesdb", "flodb"] {
        let env = Env::memory();
        let mut o = options(design, &env);
        o.memtable_merge_timeout = Some(std::time::Duration::from_millis(20));
        let db = Db::open(DIR, o).unwrap();
        let mut next = 0;
        // Two frozen (or fewer, if the timeout ran out between the freezes: a slow machine).
        put_until(&db, &mut next, |db| frozen(db) == 2 || files(db) > 0);
        // No more writes: the wait covers the timed flush (with no timeout it returns with
        // both still frozen, as the test above shows).
        db.wait_for_compactions().unwrap();
        assert_eq!(frozen(&db), 0, "{design}");
        let flushes = db.stats().lifetime.flushes;
        assert!((1..=2).contains(&flushes), "{design}: {flushes}");
        assert!(files(&db) >= 1, "{design}");
        assert_eq!(prop(&db, "shale.mem-table-flush-pending"), "0", "{design}");
        for i in 0..next {
            assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "{design}");
        }
    }
}

/// `Db::flush` returns while other writers freeze memtables that wait for more (no
/// timeout): it waits only for what was frozen when it was called. (It used to wait until
/// nothing was frozen, which with writers stopped after a freeze could be for ever.) The
/// workload runs on a thread, so a hang fails the test instead of stopping the suite.
#[test]
fn flush_returns_while_writers_freeze_memtables_that_wait() {
    for design in ["leveldb", "pebblesdb"] {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let env = Env::memory();
            let db = std::sync::Arc::new(Db::open(DIR, options(design, &env)).unwrap());
            // Three writers; the first also flushes every 500 of its puts.
            let writers: Vec<_> = (0..3u32)
                .map(|w| {
                    let db = std::sync::Arc::clone(&db);
                    std::thread::spawn(move || {
                        for i in 0..4000 {
                            let k = w * 100_000 + i;
                            db.put(&key(k), &value(k)).unwrap();
                            if w == 0 && i % 500 == 499 {
                                db.flush().unwrap();
                            }
                        }
                    })
                })
                .collect();
            for w in writers {
                w.join().unwrap();
            }
            db.flush().unwrap();
            for w in 0..3u32 {
                for i in 0..4000 {
                    let k = w * 100_000 + i;
                    assert_eq!(db.get(&key(k)).unwrap(), Some(value(k)), "{design}");
                }
            }
            let _ = done.send(());
        });
        let r = finished.recv_timeout(std::time::Duration::from_secs(120));
        assert!(r.is_ok(), "{design}: Db::flush did not return");
    }
}

#[test]
fn merging_more_memtables_than_may_wait_is_refused() {
    let mut o = Options::default().with_env(Env::memory());
    o.min_memtables_to_merge = 3;
    o.max_immutable_memtables = 2;
    let e = Db::open(DIR, o).unwrap_err().to_string();
    assert!(e.contains("min_memtables_to_merge"), "{e}");
}
