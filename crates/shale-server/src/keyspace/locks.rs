//! Striped key locks: what makes a read-modify-write (INCR, APPEND, SET NX, ...) atomic per
//! key. Every command that writes a key holds that key's stripe from its read to its
//! write; plain reads take no lock (one engine read is atomic).
//!
//! Thread-safe. Deadlock-free: a command that locks several stripes takes them in
//! ascending order, and no thread holds a stripe while it waits for another in any other
//! order.

use parking_lot::{Mutex, MutexGuard};

/// Stripes: enough that 50-1000 clients writing random keys rarely share one.
const STRIPES: usize = 4096;

/// The stripes.
pub struct KeyLocks {
    stripes: Box<[Mutex<()>]>,
}

/// Held stripes; released when dropped.
pub struct KeyGuard<'a> {
    _one: Option<MutexGuard<'a, ()>>,
    _many: Vec<MutexGuard<'a, ()>>,
}

impl Default for KeyLocks {
    fn default() -> Self {
        KeyLocks::new()
    }
}

impl KeyLocks {
    /// All stripes unlocked.
    pub fn new() -> KeyLocks {
        KeyLocks {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    fn stripe(key: &[u8]) -> usize {
        // FNV-1a: keys are chosen by clients, but a client that makes its own keys collide
        // only serializes its own writes.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in key {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        (h % STRIPES as u64) as usize
    }

    fn lock_index(&self, i: usize) -> MutexGuard<'_, ()> {
        self.stripes.get(i).unwrap_or(&self.stripes[0]).lock()
    }

    /// Lock `key`'s stripe.
    pub fn lock(&self, key: &[u8]) -> KeyGuard<'_> {
        KeyGuard {
            _one: Some(self.lock_index(Self::stripe(key))),
            _many: Vec::new(),
        }
    }

    /// Lock the stripes of every key in `keys` (duplicates allowed), in ascending order.
    pub fn lock_many<'k>(&self, keys: impl IntoIterator<Item = &'k [u8]>) -> KeyGuard<'_> {
        let mut idx: Vec<usize> = keys.into_iter().map(Self::stripe).collect();
        idx.sort_unstable();
        idx.dedup();
        KeyGuard {
            _one: None,
            _many: idx.into_iter().map(|i| self.lock_index(i)).collect(),
        }
    }

    /// Lock every stripe (FLUSHDB): no key is written until the guard drops.
    pub fn lock_all(&self) -> KeyGuard<'_> {
        KeyGuard {
            _one: None,
            _many: self.stripes.iter().map(|m| m.lock()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_and_all_do_not_deadlock_with_one() {
        let locks = std::sync::Arc::new(KeyLocks::new());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let locks = locks.clone();
                std::thread::spawn(move || {
                    for i in 0..2000u32 {
                        let a = format!("k{}", (i * 7 + t) % 50);
                        let b = format!("k{}", (i * 13 + t) % 50);
                        if i % 500 == 0 {
                            drop(locks.lock_all());
                        }
                        let _g = locks.lock_many([a.as_bytes(), b.as_bytes(), a.as_bytes()]);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(locks.lock(b"x"));
    }
}
