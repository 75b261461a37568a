//! Slowing user writes while garbage collection is behind.
//!
//! Each write adds its size times `ns_per_kib` to a shared debt, and the write that brings
//! the debt past a millisecond sleeps that millisecond (short sleeps are not precise enough
//! to spread). The collector sets the rate from its backlog at every choice of a segment
//! ([`Pace::set_backlog`]); the engine's write path pays through
//! [`crate::values::ValueGc::before_write`], outside every lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Pace {
    ns_per_kib: AtomicU64,
    debt_ns: AtomicU64,
}

/// Garbage fraction of the collectable log from which user writes are slowed, while some
/// segment is collectable (see `gc::reclaimable_fraction`): a store that is mostly log then
/// has space amplification of about 1.33, and the collector (which on 2 shared cores
/// reclaims less than a writer at full speed overwrites) gets time to catch up.
const PACE_FRACTION: f64 = 0.25;

/// The debt a write pays at once.
const SLICE: u64 = 1_000_000;

/// The delay per KiB written for a garbage `fraction`: none below [`PACE_FRACTION`], then
/// 2 µs doubling every 5 points up to 16 µs (a 4 KiB write at ~20 µs is slowed to about
/// 0.7x at the first step).
pub(crate) fn pace_ns_per_kib(fraction: f64) -> u64 {
    if fraction.is_nan() || fraction < PACE_FRACTION {
        return 0;
    }
    let steps = ((fraction - PACE_FRACTION) / 0.05).floor() as u32;
    2_000 << steps.min(3)
}

impl Pace {
    /// `fraction` of the bytes collection could collect is garbage: set the delay (and
    /// forgive the debt when there is none).
    pub(crate) fn set_backlog(&self, fraction: f64) {
        self.set_ns_per_kib(pace_ns_per_kib(fraction));
    }

    fn set_ns_per_kib(&self, per: u64) {
        self.ns_per_kib.store(per, Ordering::Relaxed);
        if per == 0 {
            self.debt_ns.store(0, Ordering::Relaxed);
        }
    }

    /// Slow a user write of `bytes` as the backlog asks.
    pub(crate) fn pay(&self, bytes: usize) {
        let per = self.ns_per_kib.load(Ordering::Relaxed);
        if per == 0 {
            return;
        }
        let add = per.saturating_mul(bytes as u64) / 1024;
        let debt = self
            .debt_ns
            .fetch_add(add, Ordering::Relaxed)
            .saturating_add(add);
        // Pay a slice only if the debt still holds one: another writer may have paid it, or
        // the collector reset the debt, since the add (an unconditional subtraction wrapped
        // it).
        if debt >= SLICE
            && self
                .debt_ns
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |d| {
                    d.checked_sub(SLICE)
                })
                .is_ok()
        {
            std::thread::sleep(Duration::from_nanos(SLICE));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_paced_only_while_the_backlog_is_high() {
        assert_eq!(pace_ns_per_kib(0.0), 0);
        assert_eq!(pace_ns_per_kib(0.249), 0);
        assert_eq!(pace_ns_per_kib(0.25), 2_000);
        assert_eq!(pace_ns_per_kib(0.31), 4_000);
        assert_eq!(pace_ns_per_kib(0.9), 16_000);
        assert_eq!(pace_ns_per_kib(f64::NAN), 0);
    }

    #[test]
    fn paced_writes_never_wrap_the_debt_below_zero() {
        use std::sync::atomic::AtomicBool;
        // The collector resets the debt when the backlog falls (`set_backlog`), possibly
        // between a writer adding its share and paying a slice: the payment must not wrap
        // the debt below zero (every later write would then sleep a slice, until the next
        // reset).
        let pace = Pace::default();
        pace.set_ns_per_kib(16_000);
        // 1.2 ms of debt per write: each write pays a slice.
        let bytes = 76_800;
        let done = AtomicBool::new(false);
        let mut wrapped = 0u64;
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        for _ in 0..1000 {
                            pace.pay(bytes);
                        }
                    })
                })
                .collect();
            s.spawn(|| {
                for w in writers {
                    w.join().expect("writer");
                }
                done.store(true, Ordering::Relaxed);
            });
            while !done.load(Ordering::Relaxed) {
                // What the collector's reset does, observing the debt it overwrites.
                let debt = pace.debt_ns.swap(0, Ordering::Relaxed);
                if debt > 1 << 62 {
                    wrapped = debt;
                }
            }
        });
        assert_eq!(wrapped, 0, "the debt wrapped below zero");
    }
}
