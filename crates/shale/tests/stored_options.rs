//! The options record (`docs/format/options.md`): a store opens with what it was created
//! with, refuses options that cannot read it (naming the option, the stored value and the
//! flag), and follows options that may change.

#![allow(
    clippy::unwrap_used,
    reason = "a test helper's failure is a test failure"
)]

use std::path::PathBuf;

use shale::{Compression, Db, Error, LayoutKind, Options, ValuesKind};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("shale-stored-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn created(design: &str) -> Options {
    let mut o = Options::preset(design).unwrap();
    o.table.bloom_bits_per_key = 16;
    o.table.compression = Compression::Lz4;
    o.flsm.top_level_bits = 9;
    o.vlog_segment_size = 1 << 20;
    o.trie.max_sub_levels = 5;
    o.trie.gc_garbage_ratio = 0.25;
    o.trie.gc_sample_bits = 3;
    o
}

#[test]
fn a_store_opens_with_what_it_was_created_with() {
    for design in ["leveldb", "pebblesdb", "wisckey", "lsm-trie"] {
        let dir = temp(design);
        let db = Db::open(&dir, created(design)).unwrap();
        db.put(b"k", b"v").unwrap();
        db.close().unwrap();
        let loaded = shale::load_options(&dir, Options::default()).unwrap();
        let want = created(design);
        assert_eq!(loaded.axes(), want.axes(), "{design}");
        assert_eq!(loaded.table, want.table, "{design}");
        assert_eq!(loaded.flsm, want.flsm, "{design}");
        assert_eq!(loaded.trie.max_sub_levels, 5, "{design}");
        assert_eq!(loaded.trie.gc_garbage_ratio, 0.25, "{design}");
        assert_eq!(loaded.trie.gc_sample_bits, 3, "{design}");
        assert_eq!(loaded.write_buffer_size, want.write_buffer_size, "{design}");
        assert_eq!(loaded.vlog_segment_size, 1 << 20, "{design}");
        assert_eq!(
            loaded.max_bytes_for_level_base, want.max_bytes_for_level_base,
            "{design}"
        );
        // Settings that do not shape the files come from the base.
        let mut base = Options::default();
        base.block_cache_bytes = 12345;
        base.create_if_missing = false;
        let loaded = shale::load_options(&dir, base).unwrap();
        assert_eq!(loaded.block_cache_bytes, 12345);
        assert!(!loaded.create_if_missing);
        let db = Db::open(&dir, loaded).unwrap();
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        db.close().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_fixed_option_that_differs_is_refused_and_nothing_changes() {
    let dir = temp("fixed");
    let db = Db::open(&dir, created("pebblesdb")).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let listing = || {
        let mut v: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let before = listing();
    let mut wrong = created("pebblesdb");
    wrong.layout = LayoutKind::Leveled;
    match Db::open(&dir, wrong) {
        Err(Error::InvalidArgument(m)) => assert!(
            m.contains("created with layout=flsm, but the options ask for leveled")
                && m.contains("`--layout flsm` or `--design pebblesdb`")
                && m.contains("shale::load_options"),
            "{m}"
        ),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    let mut wrong = created("pebblesdb");
    wrong.values = ValuesKind::Vlog;
    assert!(
        matches!(Db::open(&dir, wrong), Err(Error::InvalidArgument(m)) if m.contains("values=inline"))
    );
    // The guard hash decides where keys are found: it is fixed for an FLSM store.
    let mut wrong = created("pebblesdb");
    wrong.flsm.top_level_bits = 18;
    assert!(
        matches!(Db::open(&dir, wrong), Err(Error::InvalidArgument(m)) if m.contains("flsm.top_level_bits=9, but the options ask for 18"))
    );
    let mut wrong = created("pebblesdb");
    wrong.num_levels = 5;
    assert!(
        matches!(Db::open(&dir, wrong), Err(Error::InvalidArgument(m)) if m.contains("num_levels=7"))
    );
    assert_eq!(listing(), before, "a refused open writes nothing");
    let db = Db::open(&dir, created("pebblesdb")).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_free_option_may_change_and_the_record_follows() {
    let dir = temp("free");
    let db = Db::open(&dir, created("wisckey")).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let mut changed = created("wisckey");
    changed.table.bloom_bits_per_key = 4;
    changed.table.compression = Compression::None;
    changed.write_buffer_size = 1 << 20;
    let db = Db::open(&dir, changed).unwrap();
    db.put(b"k2", b"v2").unwrap();
    db.close().unwrap();
    let loaded = shale::load_options(&dir, Options::default()).unwrap();
    assert_eq!(loaded.table.bloom_bits_per_key, 4);
    assert_eq!(loaded.table.compression, Compression::None);
    assert_eq!(loaded.write_buffer_size, 1 << 20);
    assert_eq!(loaded.values, ValuesKind::Vlog);
    let db = Db::open(&dir, loaded).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.get(b"k2").unwrap().as_deref(), Some(&b"v2"[..]));
    db.close().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn load_options_without_a_store_is_an_error() {
    let dir = temp("none");
    match shale::load_options(&dir, Options::default()) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("no store at"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn an_lsm_trie_store_keeps_its_layout_and_depth_and_follows_its_trie_options() {
    let dir = temp("trie");
    let db = Db::open(&dir, created("lsm-trie")).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i}").as_bytes(), b"v").unwrap();
    }
    db.close().unwrap();
    // The layout and the depth decide which container holds a table: fixed.
    let mut wrong = created("lsm-trie");
    wrong.num_levels = 7;
    assert!(
        matches!(Db::open(&dir, wrong), Err(Error::InvalidArgument(m)) if m.contains("num_levels=5, but the options ask for 7"))
    );
    let mut wrong = created("lsm-trie");
    wrong.layout = LayoutKind::Leveled;
    wrong.table_format = shale::TableKind::Sst;
    match Db::open(&dir, wrong) {
        Err(Error::InvalidArgument(m)) => assert!(
            m.contains("created with layout=trie, but the options ask for leveled")
                && m.contains("`--layout trie` or `--design lsm-trie`"),
            "{m}"
        ),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // The trie's own options steer compaction only: they may change, and the record follows.
    let mut changed = created("lsm-trie");
    changed.trie.max_sub_levels = 3;
    changed.trie.gc_garbage_ratio = 0.75;
    let db = Db::open(&dir, changed).unwrap();
    db.put(b"k100", b"v").unwrap();
    db.close().unwrap();
    let loaded = shale::load_options(&dir, Options::default()).unwrap();
    assert_eq!(loaded.layout, LayoutKind::Trie);
    assert_eq!(loaded.trie.max_sub_levels, 3);
    assert_eq!(loaded.trie.gc_garbage_ratio, 0.75);
    assert_eq!(loaded.trie.gc_sample_bits, 3);
    let db = Db::open(&dir, loaded).unwrap();
    for i in 0..=100u32 {
        assert_eq!(
            db.get(format!("k{i}").as_bytes()).unwrap().as_deref(),
            Some(&b"v"[..])
        );
    }
    db.close().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_options_property_is_the_record_of_the_running_options() {
    for (settings, buffer) in [
        (
            shale::PresetSettings::Paper,
            shale::options::PRESET_WRITE_BUFFER_SIZE,
        ),
        (
            shale::PresetSettings::Tuned,
            Options::preset("wisckey").unwrap().write_buffer_size,
        ),
    ] {
        let dir = temp(&format!("property-{}", settings.name()));
        let mut o = Options::preset_with("wisckey", settings).unwrap();
        o.table.bloom_bits_per_key = 12;
        let db = Db::open(&dir, o).unwrap();
        let record = db.property("shale.options").unwrap();
        let mut lines = record.lines();
        assert_eq!(lines.next(), Some("shale-options 1"));
        let fields: std::collections::BTreeMap<&str, &str> =
            lines.filter_map(|l| l.split_once('=')).collect();
        assert_eq!(fields.get("values"), Some(&"vlog"), "{record}");
        assert_eq!(
            fields.get("table.bloom_bits_per_key"),
            Some(&"12"),
            "{record}"
        );
        assert_eq!(
            fields.get("write_buffer_size"),
            Some(&buffer.to_string().as_str()),
            "{record}"
        );
        db.close().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
