//! Helpers for tests that run a whole store.

use crate::Db;

/// Wait until no flush waits, no compaction runs and the background found nothing more to
/// start, so that counters read next move only by what the test itself does.
pub(crate) fn settle(db: &Db) {
    db.wait_for_compactions().expect("the store settles");
}
