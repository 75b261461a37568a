//! Active expiry: a thread that walks the keys in SCAN order, a bounded number per tick,
//! and deletes the expired ones, so keys nobody reads again do not stay forever.
//!
//! It reads every value (the expiry is in the value's header), so it is paced:
//! `--expire-scan-rate` keys per second. After a full pass that found no key with an expiry,
//! it sleeps until a key with an expiry is written. Deleting a key writes a tombstone; the
//! space is reclaimed by compaction as for any deletion. Compaction also drops expired keys
//! on its own, through the store's compaction filter (`super::expiry`), so the sweep is what
//! makes expired keys leave SCAN's and DBSIZE's reach early, not what frees their space.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::Keyspace;

/// Ticks per second.
const TICKS_PER_SEC: u64 = 10;

/// Run the sweep until `stop` is set. Errors are logged and the pass restarts.
pub fn run(ks: Arc<Keyspace>, keys_per_sec: u64, stop: Arc<AtomicBool>) {
    if keys_per_sec == 0 {
        return;
    }
    let per_tick = (keys_per_sec / TICKS_PER_SEC).max(1) as usize;
    let tick = Duration::from_millis(1000 / TICKS_PER_SEC);
    let mut position: Vec<u8> = Vec::new();
    let mut pass_saw_ttl = false;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(tick);
        if position.is_empty() {
            // At the start of a pass: sleep through it unless a key with an expiry was
            // written since the last one began.
            if !ks.ttl_written.swap(false, Ordering::Relaxed) {
                continue;
            }
        }
        match sweep_some(&ks, &position, per_tick) {
            Ok((next, saw_ttl)) => {
                pass_saw_ttl |= saw_ttl;
                match next {
                    Some(k) => position = k,
                    None => {
                        // A pass ended. Keys with an expiry remain if this pass saw any.
                        if pass_saw_ttl {
                            ks.ttl_written.store(true, Ordering::Relaxed);
                        }
                        position.clear();
                        pass_saw_ttl = false;
                    }
                }
            }
            Err(e) => {
                eprintln!("shale-server: expiry sweep: {e}");
                position.clear();
                pass_saw_ttl = true;
            }
        }
    }
}

/// Examine up to `n` keys from `from`. Returns the next key to examine (`None` at the end
/// of the keyspace) and whether any key examined has an expiry still to come.
fn sweep_some(ks: &Keyspace, from: &[u8], n: usize) -> super::Result<(Option<Vec<u8>>, bool)> {
    let mut expired = Vec::new();
    let mut saw_ttl = false;
    let now = ks.now_ms();
    let mut it = ks.entries(from, b"")?;
    for _ in 0..n {
        let Some(item) = it.next() else {
            drop(it);
            delete(ks, &expired)?;
            return Ok((None, saw_ttl));
        };
        let (key, entry) = item?;
        if entry.expired(now) {
            expired.push(key);
        } else if entry.expire_at().is_some() {
            saw_ttl = true;
        }
    }
    let next = it.next().transpose()?.map(|(k, _)| k);
    drop(it);
    delete(ks, &expired)?;
    Ok((next, saw_ttl))
}

fn delete(ks: &Keyspace, keys: &[Vec<u8>]) -> super::Result<()> {
    for k in keys {
        ks.delete_if_expired(k)?;
    }
    Ok(())
}
