//! An append-only arena of geometrically growing chunks, addressed by `u32` index.
//!
//! Chunk `k` holds `2^(k + BASE_BITS)` slots, so chunk `k` starts at index
//! `2^BASE_BITS * (2^k - 1)` and an index maps to its chunk with one `leading_zeros`. Chunks
//! are allocated once (by the writer, through `OnceLock::get_or_init`) and never move or
//! shrink, so a slot reference handed to a reader stays valid for the arena's lifetime. The
//! arena does not track which slots are in use: its owner does, and never hands out an index
//! before the slot behind it has been written and published (see the proof sketch in
//! `list.rs`).
//!
//! Thread-safety: `Sync` when `T` is; slots are shared references, so `T` brings its own
//! interior mutability (`AtomicU64` for node words; `bytes.rs`'s `Cell`, an `UnsafeCell`
//! whose `Sync` rests on that module's reservation and publication rules).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Enough chunks to address every `u32` index for any `BASE_BITS >= 1`.
const MAX_CHUNKS: usize = 32;
/// Chunks of at least this many bytes ask for transparent huge pages before they are
/// first written ([`crate::env::posix::advise_huge_pages`]): a search of a large skiplist
/// steps onto nodes spread over the whole arena, and with 4 KiB pages nearly every step
/// also misses the TLB (a 1 GiB memory-only fill took 0.87x the time with them,
/// `docs/designs/flodb.md`).
const HUGE_PAGE_CHUNK: usize = 4 << 20;

/// A segmented arena of `T`; see the module docs.
pub(crate) struct Arena<T, const BASE_BITS: u32> {
    chunks: [OnceLock<Box<[T]>>; MAX_CHUNKS],
}

impl<T, const BASE_BITS: u32> Arena<T, BASE_BITS> {
    /// An arena with no chunks allocated.
    pub(crate) fn new() -> Self {
        Arena {
            chunks: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// The chunk holding `index` and the offset of `index` inside it.
    #[inline]
    pub(crate) fn locate(index: u32) -> (usize, usize) {
        let j = u64::from(index) + (1u64 << BASE_BITS);
        let log2 = 63 - j.leading_zeros();
        let chunk = log2 - BASE_BITS;
        (chunk as usize, (j - (1u64 << log2)) as usize)
    }

    /// First index of chunk `chunk`.
    #[inline]
    pub(crate) fn chunk_start(chunk: usize) -> u64 {
        ((1u64 << chunk) - 1) << BASE_BITS
    }

    /// Number of slots in chunk `chunk`.
    #[inline]
    pub(crate) fn chunk_len(chunk: usize) -> u64 {
        1u64 << (chunk as u32 + BASE_BITS)
    }

    /// Chunk number `chunk`, if allocated.
    #[inline]
    pub(crate) fn chunk(&self, chunk: usize) -> Option<&[T]> {
        self.chunks.get(chunk)?.get().map(|c| &c[..])
    }

    /// The slot at `index`, if its chunk is allocated.
    #[cfg(test)]
    pub(crate) fn slot(&self, index: u32) -> Option<&T> {
        let (chunk, offset) = Self::locate(index);
        self.chunks.get(chunk)?.get()?.get(offset)
    }

    /// Reserve `need` consecutive slots inside one chunk from `next`, the owner's counter of
    /// the first free slot, and make sure that chunk exists (building its slots with
    /// `init`); returns the first slot. A run never straddles two chunks: when it would,
    /// it starts at the next chunk where it fits, and the slots skipped stay unused. `None`
    /// (nothing reserved) when the run would end past index `u32::MAX` or `need` is 0.
    pub(crate) fn reserve(
        &self,
        next: &AtomicU64,
        need: u64,
        init: impl FnMut() -> T,
    ) -> Option<u32> {
        if need == 0 {
            return None;
        }
        let mut cur = next.load(Relaxed);
        loop {
            let mut start = cur;
            let (mut chunk, _) = Self::locate(u32::try_from(start).ok()?);
            while start + need > Self::chunk_start(chunk) + Self::chunk_len(chunk) {
                chunk += 1;
                start = Self::chunk_start(chunk);
            }
            u32::try_from(start + need - 1).ok()?;
            match next.compare_exchange_weak(cur, start + need, Relaxed, Relaxed) {
                Ok(_) => {
                    self.ensure_chunk(chunk, init);
                    return u32::try_from(start).ok();
                }
                Err(now) => cur = now,
            }
        }
    }

    /// Make sure chunk `chunk` exists, building its slots with `init`. Returns the bytes
    /// newly allocated (0 if it already existed or `chunk` is out of range).
    pub(crate) fn ensure_chunk(&self, chunk: usize, init: impl FnMut() -> T) -> usize {
        let Some(cell) = self.chunks.get(chunk) else {
            return 0;
        };
        let mut made = 0;
        cell.get_or_init(|| {
            // The last chunk would reach past index `u32::MAX`; no index beyond it exists.
            let room = (1u64 << 32).saturating_sub(Self::chunk_start(chunk));
            let len = Self::chunk_len(chunk).min(room) as usize;
            made = len * std::mem::size_of::<T>();
            let mut v: Vec<T> = Vec::with_capacity(len);
            if made >= HUGE_PAGE_CHUNK {
                crate::env::posix::advise_huge_pages(&mut v);
            }
            v.extend(std::iter::repeat_with(init).take(len));
            v.into_boxed_slice()
        });
        made
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn locate_matches_chunk_bounds() {
        type A = Arena<AtomicU32, 4>;
        assert_eq!(A::locate(0), (0, 0));
        assert_eq!(A::locate(15), (0, 15));
        assert_eq!(A::locate(16), (1, 0));
        assert_eq!(A::locate(47), (1, 31));
        assert_eq!(A::locate(48), (2, 0));
        for chunk in 0..20 {
            let start = A::chunk_start(chunk) as u32;
            assert_eq!(A::locate(start), (chunk, 0));
            let last = (A::chunk_start(chunk) + A::chunk_len(chunk) - 1) as u32;
            assert_eq!(A::locate(last), (chunk, A::chunk_len(chunk) as usize - 1));
        }
        let (c, _) = A::locate(u32::MAX);
        assert!(c < MAX_CHUNKS);
    }

    #[test]
    fn slots_appear_after_ensure() {
        let a: Arena<AtomicU32, 2> = Arena::new();
        assert!(a.slot(0).is_none());
        assert_eq!(a.ensure_chunk(0, || AtomicU32::new(7)), 16);
        assert_eq!(a.ensure_chunk(0, || AtomicU32::new(7)), 0);
        assert_eq!(a.chunk(0).map(<[_]>::len), Some(4));
        assert!(a.chunk(1).is_none());
        assert!(a.slot(4).is_none());
        assert_eq!(a.ensure_chunk(MAX_CHUNKS, || AtomicU32::new(0)), 0);
    }

    /// Runs never straddle chunks, follow each other, and an index past `u32::MAX` is
    /// refused without moving the counter.
    #[test]
    fn reserved_runs_stay_inside_one_chunk() {
        type A = Arena<AtomicU32, 2>;
        let a = A::new();
        let next = AtomicU64::new(0);
        let mut end = 0u64;
        for need in [3u64, 3, 1, 6, 2, 9, 1] {
            let start = u64::from(
                a.reserve(&next, need, || AtomicU32::new(0))
                    .unwrap_or(u32::MAX),
            );
            assert!(start >= end, "runs overlap");
            let (chunk, at) = A::locate(start as u32);
            assert!(
                at as u64 + need <= A::chunk_len(chunk),
                "run of {need} straddles"
            );
            assert!(a.chunk(chunk).is_some());
            end = start + need;
            assert_eq!(next.load(Relaxed), end);
        }
        assert_eq!(a.reserve(&next, 0, || AtomicU32::new(0)), None);
        let last = AtomicU64::new(u64::from(u32::MAX) - 1);
        assert_eq!(a.reserve(&last, 4, || AtomicU32::new(0)), None);
        assert_eq!(last.load(Relaxed), u64::from(u32::MAX) - 1);
    }

    /// A chunk large enough to ask for huge pages holds every slot, each built by `init`.
    #[test]
    fn a_huge_page_chunk_holds_every_slot() {
        let a: Arena<AtomicU32, 20> = Arena::new();
        let made = a.ensure_chunk(1, || AtomicU32::new(7));
        assert_eq!(made, 8 << 20);
        assert!(made >= HUGE_PAGE_CHUNK);
        let chunk = a.chunk(1).unwrap_or_default();
        assert_eq!(chunk.len(), 2 << 20);
        assert!(
            chunk
                .iter()
                .all(|s| s.load(std::sync::atomic::Ordering::Relaxed) == 7)
        );
        assert!(
            a.slot(u32::try_from(Arena::<AtomicU32, 20>::chunk_start(1)).unwrap_or(0))
                .is_some()
        );
    }
}
