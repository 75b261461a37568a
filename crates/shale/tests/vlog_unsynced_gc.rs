//! Garbage collection must not durably drop a segment because of a newer write that is not
//! durable yet: a crash loses that write, and the tree points into the dropped segment again.

#![allow(
    clippy::unwrap_used,
    reason = "a test helper's failure is a test failure"
)]

use std::sync::Arc;

use shale::env::Env;
use shale::env::mem::MemFs;
use shale::{Db, IterOptions, Options, WriteBatch, WriteOptions};

fn opts(env: &Env) -> Options {
    let mut o = Options::preset("wisckey").unwrap();
    o.env = env.clone();
    o.vlog_segment_size = 4096;
    o.min_separated_value_size = 40;
    o.vlog_gc = false;
    o
}

fn put(db: &Db, k: &[u8], v: &[u8], sync: bool) {
    let mut b = WriteBatch::new();
    b.put(k, v);
    db.write_opt(b, WriteOptions { sync }).unwrap();
}

#[test]
fn gc_after_an_unsynced_overwrite_survives_a_crash() {
    let fs = MemFs::new();
    let env = Env::new(Arc::new(fs.clone()));
    let db = Db::open("/db", opts(&env)).unwrap();
    // key0 in the first segment, durable; two rounds of fill make the early segments garbage.
    put(&db, b"key0", &[b'a'; 500], true);
    for round in 0..2u8 {
        for i in 0..40u32 {
            put(
                &db,
                format!("fill{i:03}").as_bytes(),
                &[b'f' + round; 500],
                true,
            );
        }
    }
    // The head moves past the early segments and compaction counts their garbage.
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // Overwrite key0 without sync: its old record is dead only while this write lives.
    put(&db, b"key0", &[b'b'; 500], false);
    // Collect until key0's segment is gone (the all-garbage segments go first).
    for _ in 0..5 {
        db.run_value_gc().unwrap();
    }
    // A machine crash now keeps only what was made durable.
    let image = fs.snapshot_durable();
    drop(db);
    let env = Env::new(Arc::new(image));
    let db = Db::open("/db", opts(&env)).unwrap();
    let scan: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter(IterOptions::default())
        .unwrap()
        .collect::<shale::Result<_>>()
        .unwrap();
    let v = scan.iter().find(|(k, _)| k == b"key0").map(|(_, v)| v[0]);
    assert!(matches!(v, Some(b'a' | b'b')), "{v:?}");
}
