//! `verify` over a value log: a sound store passes with its segments and pointers counted,
//! and a flipped byte in a segment is reported as corruption of that segment.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "a test helper's failure is a test failure"
)]

use std::path::Path;

use shale::env::{Env, ReadCause, WriteCause};
use shale::{Db, Options};

const DIR: &str = "/db";

fn opts(env: &Env) -> Options {
    let mut o = Options::preset("wisckey").expect("preset");
    o.env = env.clone();
    o.write_buffer_size = 64 * 1024;
    o.vlog_segment_size = 16 * 1024;
    o.min_separated_value_size = 64;
    o.vlog_gc = false;
    o
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("v{i}-").into_bytes();
    v.resize(300, b'a' + (i % 26) as u8);
    v
}

fn build(env: &Env) {
    let db = Db::open(DIR, opts(env)).expect("open");
    for i in 0..200 {
        db.put(format!("key{i:05}").as_bytes(), &value(i))
            .expect("put");
    }
    // Overwrite some and collect, so that dropped segments and relocations are verified too.
    for i in 0..100 {
        db.put(format!("key{i:05}").as_bytes(), &value(i + 1))
            .expect("put");
    }
    db.flush().expect("flush");
    db.run_value_gc().expect("gc");
    db.close().expect("close");
}

fn segments(env: &Env) -> Vec<String> {
    let mut v: Vec<String> = env
        .fs()
        .list_dir(Path::new(DIR))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".vlog"))
        .collect();
    v.sort();
    v
}

#[test]
fn a_sound_value_log_verifies() {
    let env = Env::memory();
    build(&env);
    let r = shale::verify(DIR, opts(&env)).expect("verify");
    assert!(r.placement.segments >= 2, "{r:?}");
    assert!(r.placement.records >= 200, "{r:?}");
    assert!(r.placement.pointers >= 200, "{r:?}");
}

#[test]
fn a_flipped_byte_in_a_segment_is_reported() {
    let env = Env::memory();
    build(&env);
    // The oldest live segment: sealed, full of records the tables point to.
    let name = segments(&env).into_iter().next().expect("a segment");
    let path = Path::new(DIR).join(&name);
    let mut bytes = env.read_all(&path, ReadCause::Other).expect("read");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    let mut f = env.create(&path, WriteCause::Other).expect("create");
    f.append(&bytes).expect("append");
    f.sync().expect("sync");
    match shale::verify(DIR, opts(&env)) {
        Err(shale::Error::Corruption { .. }) => {
            let e = shale::verify(DIR, opts(&env)).unwrap_err().to_string();
            assert!(e.contains(&name), "the error names the segment: {e}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn pointers_of_a_table_a_compaction_moved_are_checked() {
    let env = Env::memory();
    let mut o = opts(&env);
    // Level 1 overflows at once: its one table is moved (nothing lies below it), whose edit
    // deletes the table from level 1 and adds it to level 2.
    o.level0_compaction_trigger = 1;
    o.max_bytes_for_level_base = 1024;
    o.level_size_multiplier = 1 << 20;
    let db = Db::open(DIR, o.clone()).expect("open");
    for i in 0..50 {
        db.put(format!("key{i:05}").as_bytes(), &value(i))
            .expect("put");
    }
    db.flush().expect("flush");
    // Wait for the background compactions (a merge into level 1, then the move).
    while db.property("shale.num-files-at-level2").as_deref() != Some("1") {
        std::thread::yield_now();
    }
    db.close().expect("close");
    let r = shale::verify(DIR, o).expect("verify");
    assert_eq!(r.tables, 1, "{r:?}");
    assert_eq!(r.placement.pointers, 50, "{r:?}");
}

#[test]
fn a_damaged_length_mid_newest_segment_is_corruption_not_a_torn_tail() {
    // A record whose length now runs past the end of the newest segment, with whole records
    // after it: no crash leaves that (`open` refuses it), so `verify` must not pass it as a
    // torn tail.
    let env = Env::memory();
    let mut o = opts(&env);
    o.vlog_segment_size = 1 << 20;
    let db = Db::open(DIR, o.clone()).expect("open");
    for i in 0..50 {
        db.put(format!("key{i:05}").as_bytes(), &value(i))
            .expect("put");
    }
    // Closed without a flush: the records lie after the head, no table points at them.
    db.close().expect("close");
    let name = segments(&env).pop().expect("a segment");
    let path = Path::new(DIR).join(&name);
    let mut bytes = env.read_all(&path, ReadCause::Other).expect("read");
    let key = b"key00010";
    let at = bytes
        .windows(key.len())
        .position(|w| w == key)
        .expect("the record");
    // The record header ends with the key and value lengths (u32 LE each), just before the
    // key: add 1 MiB to the value length.
    bytes[at - 2] ^= 0x10;
    let mut f = env.create(&path, WriteCause::Other).expect("create");
    f.append(&bytes).expect("append");
    f.sync().expect("sync");
    assert!(
        matches!(
            Db::open(DIR, o.clone()),
            Err(shale::Error::Corruption { .. })
        ),
        "open refuses the damage"
    );
    match shale::verify(DIR, o) {
        Err(shale::Error::Corruption { .. }) => {}
        other => panic!("expected corruption, got {other:?}"),
    }
}
