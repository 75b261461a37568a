//! Issue 17, case 9: a new table is read back before the edit adding it commits
//! (`Options::verify_new_tables`). A file system that silently loses or damages a write of
//! a flush or compaction output makes that flush or compaction fail instead of committing
//! a corrupt table; the store turns read-only, and reopened it holds every acknowledged
//! write. With the check off the same damage is committed (the test's damage is real).
//! Every case runs for every design preset.

#![expect(clippy::unwrap_used, reason = "test setup failures fail the test")]

use std::collections::BTreeMap;

mod store_common;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use store_common::{put_round, scan};

use shale::env::Env;
use shale::env::fault::{FaultControl, FaultFs, Op, OpKind, WriteDamage};
use shale::env::mem::MemFs;
use shale::{Db, NewTableCheck, Options};

const DIR: &str = "/db";

fn opts(env: &Env, design: &str, check: NewTableCheck) -> Options {
    let mut o = Options::preset(design).unwrap().with_env(env.clone());
    // Large enough that only the explicit flushes write tables (nothing runs in the
    // background when the damage is armed).
    o.write_buffer_size = 4 << 20;
    o.target_file_size = 16 * 1024;
    o.min_separated_value_size = 24;
    o.vlog_gc = false;
    // Compactions run only when asked.
    o.level0_compaction_trigger = 1000;
    o.level0_slowdown_trigger = 2000;
    o.level0_stop_trigger = 3000;
    o.verify_new_tables = check;
    o
}

/// Damage the `nth` append to a table file from now on (0: the first data block's bytes of
/// the next table written; the trailers are appends of their own).
fn damage_nth_table_append(ctl: &FaultControl, nth: u64, damage: WriteDamage) {
    let seen = AtomicU64::new(0);
    ctl.damage_append_when(
        Arc::new(move |op: &Op| {
            op.kind == OpKind::Append
                && op.path.extension().is_some_and(|e| e == "sst")
                && seen.fetch_add(1, Ordering::Relaxed) == nth
        }),
        damage,
    );
}

const DAMAGES: [WriteDamage; 3] = [WriteDamage::Drop, WriteDamage::Zero, WriteDamage::FlipBit];

/// What happens to a store after a damaged write into the table a flush (or, with
/// `compact`, a full compaction) writes, under `check`. Returns whether that flush or
/// compaction reported an error, after checking the store reopens with every acknowledged
/// write when it did.
fn run(design: &str, damage: WriteDamage, nth: u64, compact: bool, check: NewTableCheck) -> bool {
    let mem = MemFs::new();
    let fault = FaultFs::new(mem.clone());
    let ctl = fault.control();
    let env = Env::new(Arc::new(fault));
    let db = Db::open(DIR, opts(&env, design, check)).unwrap();
    let mut model = BTreeMap::new();
    put_round(&db, &mut model, 0..1000, 0);
    if compact {
        db.flush().unwrap();
        put_round(&db, &mut model, 0..1000, 1);
        db.flush().unwrap();
    }
    damage_nth_table_append(&ctl, nth, damage);
    let r = if compact {
        db.compact_range(None, None)
    } else {
        db.flush()
    };
    assert_eq!(
        ctl.damaged().len(),
        1,
        "{design} {damage:?}: the damage happened"
    );
    let what = format!("{design} {damage:?} append {nth} compact {compact} {check:?}");
    let failed = r.is_err();
    if failed {
        // Read-only now, with the reason; no table with the damage is committed.
        let e = db.put(b"k", b"v").unwrap_err();
        assert!(matches!(e, shale::Error::ReadOnly(_)), "{what}: {e}");
        let _ = db.close();
        let env = Env::new(Arc::new(mem.clone()));
        shale::verify(DIR, opts(&env, design, check)).unwrap();
        let db = Db::open(DIR, opts(&env, design, check)).unwrap();
        assert_eq!(scan(&db), model, "{what}");
        db.close().unwrap();
    } else {
        db.close().unwrap();
    }
    failed
}

/// The quick default finds a write lost or damaged in the first data block or in the
/// metadata (the last appends: filter, properties, index, footer) of a flushed table.
#[test]
fn a_damaged_flush_fails_instead_of_committing() {
    for design in Options::available_presets() {
        for damage in DAMAGES {
            assert!(
                run(design, damage, 0, false, NewTableCheck::Quick),
                "{design} {damage:?} first block"
            );
        }
    }
}

/// The same for a compaction's output.
#[test]
fn a_damaged_compaction_output_fails_instead_of_committing() {
    for design in Options::available_presets() {
        for damage in DAMAGES {
            assert!(
                run(design, damage, 0, true, NewTableCheck::Quick),
                "{design} {damage:?}"
            );
        }
    }
}

/// A bit flipped in a middle data block: only the full check reads it; the quick one
/// commits it (its documented limit), as does no check at all.
#[test]
fn a_middle_block_needs_the_full_check() {
    for design in Options::available_presets() {
        // Append 6 is the fourth data block's bytes (block, trailer, block, ...).
        assert!(
            run(design, WriteDamage::FlipBit, 6, false, NewTableCheck::Full),
            "{design}"
        );
        assert!(
            !run(design, WriteDamage::FlipBit, 6, false, NewTableCheck::Quick),
            "{design}"
        );
    }
}

/// With the check off, the damage is committed: the test's damage is one the check must
/// catch.
#[test]
fn without_the_check_the_damage_is_committed() {
    for design in Options::available_presets() {
        for damage in DAMAGES {
            assert!(
                !run(design, damage, 0, false, NewTableCheck::Off),
                "{design} {damage:?}"
            );
        }
    }
}
