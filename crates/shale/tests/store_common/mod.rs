//! Shared by the issue-17 tests (`lock_removed`, `new_table_check`, `stray_files`): rounds of
//! writes kept in a model, and a full scan to compare with it.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::BTreeMap;
use std::ops::Range;

use shale::{Db, IterOptions};

/// What the store must hold: key to value.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Key `i`.
pub fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// The value of key `i` in `round`: long enough to be separated into a value log set to
/// separate values of 24 bytes or more.
pub fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value {i} of round {round}, long enough to separate").into_bytes()
}

/// Put `keys` with their values of `round`, in the store and in `model`.
pub fn put_round(db: &Db, model: &mut Model, keys: Range<u32>, round: u32) {
    for i in keys {
        db.put(&key(i), &value(i, round)).unwrap();
        model.insert(key(i), value(i, round));
    }
}

/// Every entry of the store, by a full scan; for a store that answers point reads only
/// (`Db::supports_scans`), by a get of every key these tests write (`key(0..8000)` and
/// `after`).
pub fn scan(db: &Db) -> Model {
    if !db.supports_scans() {
        return (0..8000)
            .map(key)
            .chain([b"after".to_vec()])
            .filter_map(|k| db.get(&k).unwrap().map(|v| (k, v)))
            .collect();
    }
    db.iter(IterOptions::default())
        .unwrap()
        .map(Result::unwrap)
        .collect()
}
