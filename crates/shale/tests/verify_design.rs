//! `verify` checks a store as the design that wrote it, and replays its MANIFEST as
//! recovery would: every design's records by their owner.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "a test helper's failure is a test failure"
)]

use std::path::Path;

use shale::env::Env;
use shale::manifest::{self, Axis, AxisRecord, ManifestWriter, VersionEdit};
use shale::{Db, Error, Options};

const DIR: &str = "/db";

/// A store of `design` with tables in several levels (FLSM: with guards; wisckey: with
/// value pointers in its tables).
fn build(env: &Env, design: &str) -> Options {
    let mut o = Options::preset(design).unwrap().with_env(env.clone());
    o.write_buffer_size = 16 * 1024;
    o.target_file_size = 8 * 1024;
    o.max_bytes_for_level_base = 32 * 1024;
    o.flsm.top_level_bits = 3;
    o.flsm.bit_decrement = 1;
    o.min_separated_value_size = 64;
    o.vlog_gc = false;
    let db = Db::open(DIR, o.clone()).unwrap();
    for i in 0..2000u32 {
        let mut v = format!("v{i}-").into_bytes();
        v.resize(100, b'x');
        db.put(format!("key{:05}", i * 7919 % 2000).as_bytes(), &v)
            .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    o
}

/// Rewrite the store's MANIFEST as its edits passed through `change`, in a new MANIFEST
/// that CURRENT names.
fn rewrite_manifest(env: &Env, change: impl FnOnce(&mut Vec<VersionEdit>)) {
    let dir = Path::new(DIR);
    let number = manifest::read_current(env, dir).unwrap();
    let mut edits = manifest::read_manifest(env, dir, number).unwrap();
    change(&mut edits);
    let mut w = ManifestWriter::create(env, dir, number + 1000).unwrap();
    for e in &edits {
        w.append(e).unwrap();
    }
    manifest::write_current(env, dir, number + 1000).unwrap();
}

#[test]
fn a_store_is_verified_as_the_design_that_wrote_it() {
    for design in ["leveldb", "pebblesdb", "wisckey"] {
        let env = Env::memory();
        build(&env, design);
        // The leveldb preset's options, whatever wrote the store (the CLI's default).
        let r = shale::verify(DIR, Options::default().with_env(env.clone()))
            .unwrap_or_else(|e| panic!("{design}: {e}"));
        assert!(r.tables > 0, "{design}: {r:?}");
        assert_eq!(
            r.placement.pointers > 0,
            design == "wisckey",
            "{design}: {r:?}"
        );
    }
}

#[test]
fn a_layout_record_the_layout_does_not_know_fails_verify_as_it_fails_open() {
    let env = Env::memory();
    let o = build(&env, "pebblesdb");
    rewrite_manifest(&env, |edits| {
        edits.push(VersionEdit {
            records: vec![AxisRecord::new(Axis::Layout, 99, vec![1])],
            ..VersionEdit::default()
        });
    });
    let e = shale::verify(DIR, o.clone()).unwrap_err();
    assert!(
        matches!(e, Error::Corruption { .. }) && e.to_string().contains("kind 99"),
        "{e}"
    );
    let e = Db::open(DIR, o).unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
}

#[test]
fn value_pointers_in_a_store_that_claims_inline_values_fail_verify() {
    let env = Env::memory();
    build(&env, "wisckey");
    // The same tables under the format tag and options record of the inline placement.
    rewrite_manifest(&env, |edits| {
        for e in edits.iter_mut() {
            if e.format_tag.is_some() {
                e.format_tag = Some("leveled".into());
            }
            if let Some(o) = &mut e.store_options {
                let text = String::from_utf8(o.clone()).unwrap();
                assert!(text.contains("values=vlog\n"), "{text}");
                *o = text
                    .replace("values=vlog\n", "values=inline\n")
                    .into_bytes();
            }
            e.records.retain(|r| r.axis != Axis::Values);
        }
    });
    let e = shale::verify(DIR, Options::default().with_env(env.clone())).unwrap_err();
    assert!(
        matches!(e, Error::Corruption { .. }) && e.to_string().contains("value pointers"),
        "{e}"
    );
}

#[test]
fn a_store_of_a_design_this_build_lacks_is_refused_by_name() {
    let env = Env::memory();
    build(&env, "leveldb");
    rewrite_manifest(&env, |edits| {
        for e in edits.iter_mut() {
            if e.format_tag.is_some() {
                e.format_tag = Some("trie+htable".into());
            }
        }
    });
    let e = shale::verify(DIR, Options::default().with_env(env.clone())).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("trie+htable"),
        "{e}"
    );
}
