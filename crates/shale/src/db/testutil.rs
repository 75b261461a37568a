//! Helpers for tests that run a whole store.

use crate::Db;

/// Wait until no flush waits, no compaction runs and the background found nothing more to
/// start, so that counters read next move only by what the test itself does.
pub(crate) fn settle(db: &Db) {
    let start = std::time::Instant::now();
    let busy = |name: &str| db.property(name).as_deref() != Some("0");
    while busy("shale.mem-table-flush-pending")
        || busy("shale.compaction-pending")
        || busy("shale.num-running-compactions")
    {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "the store never settled: {:?}",
            db.property("shale.levels")
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
