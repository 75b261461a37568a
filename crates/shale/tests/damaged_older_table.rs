//! A get answered by a newer table does not fail on an older table it never needs (found in
//! review: batched filter probes used to open every candidate table before searching any).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a test helper's failure is a test failure"
)]

use std::sync::Arc;

use shale::env::mem::MemFs;
use shale::env::{Env, FileSystem};
use shale::{Db, Options};

#[test]
fn a_get_answered_by_a_newer_table_ignores_a_damaged_older_one() {
    for design in ["leveldb", "pebblesdb"] {
        let mem = MemFs::new();
        let env = Env::new(Arc::new(mem.clone()));
        let mut o = Options::preset(design).unwrap().with_env(env.clone());
        o.level0_compaction_trigger = 8;
        o.level0_slowdown_trigger = 8;
        o.level0_stop_trigger = 8;
        let db = Db::open("/db", o.clone()).unwrap();
        db.put(b"k", b"old").unwrap();
        db.flush().unwrap();
        db.put(b"k", b"new").unwrap();
        db.flush().unwrap();
        assert_eq!(
            db.property("shale.num-files-at-level0").as_deref(),
            Some("2")
        );
        db.close().unwrap();
        let mut ssts: Vec<_> = mem
            .file_names()
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "sst"))
            .collect();
        ssts.sort();
        let older = &ssts[0];
        let f = env.open(older).unwrap();
        let len = usize::try_from(f.len()).unwrap();
        let mut bytes = f.read_at(0, len, shale::env::ReadCause::Other).unwrap();
        drop(f);
        // Damage the older table's magic number: it can no longer be opened.
        let n = bytes.len();
        bytes[n - 1] ^= 0xff;
        mem.remove_file(older).unwrap();
        let mut w = mem.create(older).unwrap();
        w.append(&bytes).unwrap();
        w.sync().unwrap();
        drop(w);
        let db = Db::open("/db", o).unwrap();
        assert_eq!(db.get(b"k").unwrap(), Some(b"new".to_vec()), "{design}");
    }
}
