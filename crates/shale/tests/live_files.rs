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
