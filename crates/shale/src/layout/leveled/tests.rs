//! Tests of the leveled layout that need tables on a file system: output cutting by
//! grandparent overlap in a real compaction, and seek charges from gets and seeks.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::Leveled;
use crate::compaction::CompactionContext;
use crate::env::{Env, ReadCause, WriteCause};
use crate::key::{MAX_SEQNO, ValueKind, make_internal_key, seek_key};
use crate::layout::{Layout, PickContext, Plan, PlanKind, ReadContext};
use crate::options::{NewTableCheck, Options, TableOptions};
use crate::table::cache::TableCache;
use crate::table::test_fs::TestFs;
use crate::table::{TableBuilder, table_file_name};
use crate::version::{Version, text};

/// Write table `number` under `/db` holding `keys` (one version each, at `seq`); returns
/// its size.
fn write(env: &Env, number: u64, keys: &[String], seq: u64) -> u64 {
    let path = Path::new("/db").join(table_file_name(number));
    let f = env.create(&path, WriteCause::Compaction).unwrap();
    let mut b = TableBuilder::new(f, &TableOptions::default());
    for k in keys {
        b.add(
            &make_internal_key(k.as_bytes(), seq, ValueKind::Value),
            &[b'v'; 100],
        )
        .unwrap();
    }
    b.finish().unwrap().size
}

fn cache(env: &Env) -> Arc<TableCache> {
    Arc::new(TableCache::new(
        env.clone(),
        "/db".into(),
        100,
        Arc::new(crate::table::SstFormat),
        None,
        true,
        None,
    ))
}

fn key(i: usize) -> String {
    format!("k{i:02}")
}

/// Run `plan` over `v` with `layout`, as the engine would; the output files' key ranges.
fn compact(layout: &Leveled, plan: &Plan, v: &Version, env: &Env) -> Vec<(u32, String, String)> {
    let tables = cache(env);
    let next = std::sync::atomic::AtomicU64::new(100);
    let new_file = || next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let stop = AtomicBool::new(false);
    let ctx = CompactionContext {
        env,
        dir: Path::new("/db"),
        table_options: &TableOptions::default(),
        tables: &tables,
        version: v,
        snapshots: &[],
        new_file_number: &new_file,
        stop: &stop,
        cause: WriteCause::Compaction,
        on_discard: &|_, _| {},
        check_new_tables: NewTableCheck::Quick,
        filter: None,
    };
    let edit = layout.compact(plan, &ctx).unwrap();
    assert_eq!(edit.deleted_files, [(1, 1)]);
    edit.new_files
        .iter()
        .map(|(l, f)| {
            let s = |k: &[u8]| String::from_utf8(k.to_vec()).unwrap();
            (*l, s(f.smallest_user_key()), s(f.largest_user_key()))
        })
        .collect()
}

fn options(overlap_factor: u64) -> Options {
    let mut o = Options::paper_preset("leveldb").unwrap();
    // Files are never cut by size here: 1 MiB, far above the test's tables.
    o.target_file_size = 1 << 20;
    o.leveled.max_grandparent_overlap_factor = overlap_factor;
    o
}

/// An output is cut when its overlap with the level below its own passes the limit
/// (LevelDB's `kMaxGrandParentOverlapBytes`).
#[test]
fn a_compaction_output_is_cut_where_its_grandparent_overlap_passes_the_limit() {
    let (_fs, env) = TestFs::env();
    let keys: Vec<String> = (0..40).map(key).collect();
    let size = write(&env, 1, &keys, 5);
    // L3 holds 8 files of 8 MiB, five keys each; the output goes to L2.
    let mut desc = format!("L1: 1:k00-k39/{size}\nL3:");
    for g in 0..8 {
        desc.push_str(&format!(" {}:{}-{}/8M", 20 + g, key(5 * g), key(5 * g + 4)));
    }
    let v = text::parse(&desc).unwrap();
    let plan = Plan {
        kind: PlanKind::Merge,
        inputs: vec![(1, v.level(1).to_vec()), (2, Vec::new())],
        output_level: 2,
        reason: "test".into(),
    };
    // 20 x 1 MiB = 20 MiB: an output may pass two files below and is cut at the third.
    assert_eq!(
        compact(&Leveled::new(&options(20)), &plan, &v, &env),
        [
            (2, "k00".into(), "k14".into()),
            (2, "k15".into(), "k29".into()),
            (2, "k30".into(), "k39".into()),
        ]
    );
    // Without the limit the output is one file.
    assert_eq!(
        compact(&Leveled::new(&options(0)), &plan, &v, &env),
        [(2, "k00".into(), "k39".into())]
    );
}

/// A file whose range holds more than the limit of the level below the next is merged into
/// the next level (and cut there) instead of moved (LevelDB's `IsTrivialMove`).
#[test]
fn a_file_over_too_much_of_the_grandparent_level_is_rewritten_not_moved() {
    let tree = "L1: 1:a-f/12M\nL2: 9:x-z/1M\nL3: 20:a-c/15M 21:d-f/15M";
    let v = text::parse(tree).unwrap();
    let mut o = Options::paper_preset("leveldb").unwrap();
    o.target_file_size = 2 << 20;
    o.leveled.max_grandparent_overlap_factor = 10;
    let pick = |o: &Options| {
        Leveled::new(o)
            .pick(&v, &PickContext::idle())
            .map(|p| p.describe())
    };
    assert_eq!(pick(&o), Some("L1[1] -> L2 (merge)".to_string()));
    o.leveled.max_grandparent_overlap_factor = 0;
    assert_eq!(pick(&o), Some("L1[1] -> L2 (move)".to_string()));
}

fn seek_options(min_seeks: u32) -> Options {
    let mut o = Options::paper_preset("leveldb").unwrap();
    o.leveled.seek_compaction_min_seeks = min_seeks;
    o
}

/// A file charged with its whole allowance by seeks is picked for compaction, but only
/// when no level is over its size limit; each file is wanted once.
#[test]
fn a_file_charged_with_enough_seeks_is_compacted() {
    let v = text::parse("L1: 1:a-f/1K 2:p-s/1K\nL2: 5:a-z/1K").unwrap();
    let layout = Leveled::new(&seek_options(3));
    // "x" is in one file only, "b" in files 1 and 5: file 1 is charged.
    for _ in 0..10 {
        assert!(!layout.note_read_sample(&v, b"x"));
    }
    assert!(layout.pick(&v, &PickContext::idle()).is_none());
    assert!(!layout.note_read_sample(&v, b"b"));
    assert!(!layout.note_read_sample(&v, b"c"));
    assert!(
        layout.note_read_sample(&v, b"b"),
        "the third seek uses up file 1's allowance"
    );
    assert!(!layout.note_read_sample(&v, b"b"), "wanted once");
    // A busy file waits.
    let busy = PickContext {
        busy_files: [1].into_iter().collect(),
        ..PickContext::default()
    };
    assert!(layout.pick(&v, &busy).is_none());
    // File 2 joins in: it is within the range of the level-2 file rewritten anyway.
    let plan = layout.pick(&v, &PickContext::idle()).unwrap();
    assert_eq!(plan.describe(), "L1[1,2]+L2[5] -> L2 (merge)");
    assert_eq!(plan.reason, "seeks used up the allowance of L1 file 1");
    // Picked once: its charges are gone with it.
    assert!(layout.pick(&v, &PickContext::idle()).is_none());

    // Size comes first: with level 1 over its limit, its compaction is picked before a
    // file due for seeks.
    let v = text::parse("L1: 1:a-f/1K 2:p-s/11M\nL2: 5:a-z/1K").unwrap();
    let layout = Leveled::new(&seek_options(1));
    assert!(layout.note_read_sample(&v, b"b"));
    assert_eq!(
        layout.pick(&v, &PickContext::idle()).unwrap().reason,
        "L1 score 1.10"
    );

    // Seek compaction off: no charges.
    let mut o = seek_options(1);
    o.leveled.seek_compaction = false;
    let layout = Leveled::new(&o);
    assert!(!layout.note_read_sample(&v, b"b"));
}

/// Big files absorb more seeks: one per 16 KiB.
#[test]
fn the_allowance_grows_with_the_file() {
    let v = text::parse("L1: 1:a-f/4M\nL2: 5:a-z/1K").unwrap();
    let layout = Leveled::new(&seek_options(100));
    assert!((1..256).all(|_| !layout.note_read_sample(&v, b"b")));
    assert!(
        layout.note_read_sample(&v, b"b"),
        "4 MiB / 16 KiB = 256 seeks"
    );
}

/// Gets charge the first file they looked into when they had to look into another, as
/// LevelDB's `Version::Get`; a get answered by the first file charges nothing.
#[test]
fn gets_that_probe_two_files_charge_the_first() {
    let (_fs, env) = TestFs::env();
    let s1 = write(&env, 1, &["a".into(), "z".into()], 150);
    let s2 = write(&env, 2, &["a".into(), "m".into(), "z".into()], 50);
    let s3 = write(&env, 3, &["b".into(), "y".into()], 350);
    let v = text::parse(&format!("L0: 3:b-y/{s3}\nL1: 1:a-z/{s1}\nL2: 2:a-z/{s2}")).unwrap();
    let tables = cache(&env);
    let ctx = ReadContext {
        tables: &tables,
        read: ReadCause::Get.into(),
    };
    let layout = Leveled::new(&seek_options(2));
    let get = |k: &str| {
        layout
            .get(&v, &ctx, k.as_bytes(), &seek_key(k.as_bytes(), MAX_SEQNO))
            .unwrap()
            .map(|(_, v)| v.len())
    };
    // "a" is answered by file 1, the first whose range holds it: no charge, however often.
    for _ in 0..5 {
        assert_eq!(get("a"), Some(100));
    }
    assert!(!layout.take_compaction_wanted());
    // "m" is looked for in file 3 (level 0), then 1, then found in 2: file 3 is charged.
    assert_eq!(get("m"), Some(100));
    assert!(!layout.take_compaction_wanted());
    assert_eq!(get("n"), None);
    assert!(
        layout.take_compaction_wanted(),
        "two charges use up file 3's allowance"
    );
    assert!(!layout.take_compaction_wanted());
    // Level 0 is under its trigger, so the file due for seeks is what is picked.
    let plan = layout.pick(&v, &PickContext::idle()).unwrap();
    assert_eq!(plan.describe(), "L0[3]+L1[1] -> L1 (merge)");
    assert_eq!(plan.reason, "seeks used up the allowance of L0 file 3");
}
