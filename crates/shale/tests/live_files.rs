//! `Db::live_files`: the current version's tables, their levels, sizes and key ranges.

#![allow(clippy::unwrap_used, reason = "a test's failure is a test failure")]

use shale::env::Env;
use shale::{Db, Options};

#[test]
fn live_files_list_every_table_with_its_level_size_and_range() {
    for design in Options::available_presets() {
        let env = Env::memory();
        let mut o = Options::preset(design).unwrap();
        o.env = env.clone();
        o.write_buffer_size = 16 * 1024;
        o.target_file_size = 8 * 1024;
        let db = Db::open("/db", o).unwrap();
        assert!(
            db.live_files().is_empty(),
            "{design}: a new store has no table"
        );
        for i in 0..3000u32 {
            db.put(format!("key{i:05}").as_bytes(), &[b'v'; 40])
                .unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        let files = db.live_files();
        assert!(!files.is_empty(), "{design}");
        let stats = db.stats();
        for (level, l) in stats.levels.iter().enumerate() {
            let at: Vec<_> = files.iter().filter(|f| f.level == level).collect();
            assert_eq!(at.len(), l.files, "{design}: files at L{level}");
            assert_eq!(at.iter().map(|f| f.size).sum::<u64>(), l.bytes, "{design}");
        }
        for f in &files {
            assert!(f.smallest_key <= f.largest_key, "{design}: {f:?}");
            assert!(
                f.smallest_key.starts_with(b"key") && f.entries > 0,
                "{design}: {f:?}"
            );
            assert!(
                f.seq_range.0 <= f.seq_range.1 && f.seq_range.1 <= 3000,
                "{design}"
            );
            let path = format!("/db/{:06}.sst", f.number);
            assert_eq!(
                env.fs().file_size(path.as_ref()).unwrap(),
                f.size,
                "{design}"
            );
        }
        // After a full compaction the deepest level's files are disjoint, in key order, and
        // hold every key.
        let deepest = files.iter().map(|f| f.level).max().unwrap();
        let last: Vec<_> = files.iter().filter(|f| f.level == deepest).collect();
        if !db.supports_scans() {
            // Keys placed by hash (lsm-trie): the deepest level's tables hold every key
            // once, in no key order.
            assert!(files.iter().all(|f| f.level == deepest), "{design}");
            assert_eq!(
                last.iter().map(|f| f.entries).sum::<u64>(),
                3000,
                "{design}"
            );
            continue;
        }
        for w in last.windows(2) {
            assert!(w[0].largest_key < w[1].smallest_key, "{design}: {w:?}");
        }
        assert_eq!(last.first().unwrap().smallest_key, b"key00000");
        assert_eq!(last.last().unwrap().largest_key, b"key02999");
        assert_eq!(
            last.iter().map(|f| f.entries).sum::<u64>(),
            3000,
            "{design}"
        );
    }
}

/// `approximate_sizes` sums the tables' bytes over a key range from their indexes: the
/// whole key space is every table's bytes (within the footers and filters), half of it
/// about half, a range outside the keys or inverted 0.
#[test]
fn approximate_sizes_follow_the_tables() {
    for design in Options::available_presets() {
        let env = Env::memory();
        let mut o = Options::preset(design).unwrap();
        o.env = env.clone();
        o.write_buffer_size = 64 * 1024;
        o.target_file_size = 32 * 1024;
        o.min_separated_value_size = 1 << 20; // values inline, so tables hold the bytes
        let db = Db::open("/db", o).unwrap();
        for i in 0..20000u32 {
            db.put(format!("key{i:05}").as_bytes(), &[b'v'; 100])
                .unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        let total: u64 = db.live_files().iter().map(|f| f.size).sum();
        if !db.supports_scans() {
            // Keys placed by hash: no key range has a size to estimate.
            assert!(matches!(
                db.approximate_sizes(&[(b"key", b"kez")]),
                Err(shale::Error::Unsupported(_))
            ));
            db.close().unwrap();
            continue;
        }
        let sizes = db
            .approximate_sizes(&[
                (b"key", b"kez"),
                (b"key00000", b"key10000"),
                (b"key10000", b"key20000"),
                (b"a", b"b"),
                (b"kez", b"key"),
                (b"key05000", b"key05000"),
            ])
            .unwrap();
        assert!(
            sizes[0] <= total && sizes[0] * 10 >= total * 9,
            "{design}: all {} of {total}",
            sizes[0]
        );
        for half in &sizes[1..3] {
            assert!(
                *half * 10 >= total * 4 && *half * 10 <= total * 6,
                "{design}: half {half} of {total}"
            );
        }
        assert_eq!(&sizes[3..], &[0, 0, 0], "{design}");
        db.close().unwrap();
    }
}
