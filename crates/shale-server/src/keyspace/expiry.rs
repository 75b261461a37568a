//! Reclaiming expired keys in compaction: the store's compaction filter
//! (`shale::CompactionFilter`) reads the server's value header ([`super::format`]) and
//! removes a data key whose expiry has passed, so a key that expired and that no client
//! reads (and the sweep has not reached) leaves the files at the next flush or compaction
//! that writes it, with no read, no deletion and no lock.
//!
//! The engine calls it only for the newest version of a key that no snapshot sees, so a
//! command reading at a snapshot (MGET) still finds what it saw, and treats it as expired
//! by its own check. Removing a key that has expired is what a read or the sweep would have
//! done: an expired key is never returned, and a write of the key afterwards does not look
//! at the old value's expiry (SET replaces it; a read-modify-write reads it as absent). The
//! removal is not counted in INFO's `expired_keys`, which counts deletions the server made.

use std::sync::Arc;

use shale::ttl::Clock;
use shale::{CompactionFilter, Decision, FilterContext};

use super::format;

/// Removes data keys whose expiry has passed by the server's clock; keeps everything else
/// (metadata, keys without expiry, values it cannot read: reads report those).
#[derive(Debug)]
pub struct ExpiryFilter {
    clock: Arc<dyn Clock>,
}

impl ExpiryFilter {
    /// A filter reading the time from `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> ExpiryFilter {
        ExpiryFilter { clock }
    }
}

impl CompactionFilter for ExpiryFilter {
    fn filter(&self, _context: &FilterContext, key: &[u8], value: &[u8]) -> Decision {
        if key.first() != Some(&format::DATA) {
            return Decision::Keep;
        }
        match format::decode_header(value) {
            Ok(h) if h.expire_at.is_some_and(|t| t <= self.clock.now_millis()) => Decision::Remove,
            _ => Decision::Keep,
        }
    }

    fn name(&self) -> &str {
        "shale-server expiry filter"
    }
}
