//! The store's identity: a random u64 drawn when the store is created and kept in the
//! MANIFEST (tag 17). Logs carry it in their header, so a log copied in from another
//! store is refused instead of replayed (`docs/format/wal.md` §4).

use std::hash::{BuildHasher, Hasher};

/// A fresh store id: random, never 0 (0 means "none" in a log header).
///
/// Drawn from the standard library's per-process random hasher keys, mixed with the time
/// and the process id, so two stores created at once get different ids without a
/// dependency on a random-number crate.
pub fn new_store_id() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.finish().max(1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_differ_and_are_not_zero() {
        let a = super::new_store_id();
        let b = super::new_store_id();
        assert_ne!(a, b);
        assert_ne!(a, 0);
    }
}
