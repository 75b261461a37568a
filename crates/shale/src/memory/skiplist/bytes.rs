//! Entry bytes: each entry's `user key | trailer | value`, written once into a run of an
//! append-only arena and lent to readers as `&[u8]` after the entry is published.
//!
//! A run is 8-byte cells of one chunk of an [`Arena`]: a 4-byte length, then the entry,
//! padded to a whole cell. A writer reserves its run with a `compare_exchange` loop on the
//! first free cell (runs never straddle chunks), copies the entry in, and only then
//! publishes the run's first cell, in a skiplist node's header, with the `Release` exchange
//! that links the node (`list.rs`). Before this arena each entry was one heap allocation
//! behind a slot of a second arena: a `malloc` and a `free` per entry, a third place for a
//! flush to read, and 4 KiB pages.
//!
//! Readers borrow a published run while other writers fill other runs of the same chunk,
//! which safe Rust cannot express: the cells are `UnsafeCell`s, `append` copies into its
//! reserved run through a raw pointer, and `run` (an `unsafe fn`) lends a published one.
//! The soundness boundary is the `skiplist` module: `SkipList` is private to it, and a run
//! is asked for only with the header of a node learned from a link (`list.rs`). The
//! argument that they are sound is in `UNSAFE.md` ("The skiplist's entry bytes") and on each
//! block. No well-kept crate fits: `bumpalo` arenas are not `Sync`, and `bumpalo-herd` hands
//! out references that could not be stored in the list's atomic node words without the same
//! `unsafe`.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::AtomicU64;

use super::arena::Arena;

/// Bytes of a run's length prefix.
const LEN_BYTES: usize = 4;
/// Bytes of a cell.
const CELL: usize = 8;

/// Eight bytes of one run: written only by the writer that reserved the run, before the run
/// is published, and read only after.
#[repr(transparent)]
pub(super) struct Cell(UnsafeCell<MaybeUninit<u64>>);

// SAFETY: a `Cell` is shared between threads only inside `EntryBytes`, whose two accesses
// never overlap in time on the same bytes: `append` writes only the run it reserved from the
// shared counter (no other thread is given those cells, and none reads them before the run
// is published), and `run` reads only published runs, which nobody writes again. See
// `UNSAFE.md`, "The skiplist's entry bytes".
#[allow(unsafe_code)]
unsafe impl Sync for Cell {}

/// Cells; first chunk 2^12 cells (32 KiB).
type Cells = Arena<Cell, 12>;

/// The entry byte arena; see the module docs.
pub(super) struct EntryBytes {
    cells: Cells,
    /// First free cell. Cell 0 is never part of a run, so a zero header names none.
    next: AtomicU64,
}

impl EntryBytes {
    pub(super) fn new() -> Self {
        EntryBytes {
            cells: Cells::new(),
            next: AtomicU64::new(1),
        }
    }

    /// Copy `parts`, concatenated, into a fresh run: returns the run's first cell and the
    /// bytes the run takes (a multiple of 8). `None` when the entry is longer than a length
    /// prefix can state, or the run would lie past the arena's 2^32 cells.
    #[allow(unsafe_code)]
    pub(super) fn append(&self, parts: &[&[u8]]) -> Option<(u32, usize)> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let prefix = u32::try_from(len).ok()?.to_le_bytes();
        let need = (LEN_BYTES + len).div_ceil(CELL);
        let start = self.cells.reserve(&self.next, need as u64, new_cell)?;
        let (chunk, at) = Cells::locate(start);
        // `reserve` made the chunk and kept the run inside it, so this is the whole run; if
        // it somehow were not, `start` is not returned and the cells stay unused.
        let run = self.cells.chunk(chunk)?.get(at..at + need)?;
        let dst =
            UnsafeCell::raw_get(run.as_ptr().cast::<UnsafeCell<MaybeUninit<u64>>>()).cast::<u8>();
        let mut written = 0;
        for part in std::iter::once(&prefix[..]).chain(parts.iter().copied()) {
            // SAFETY: in bounds: the parts add up to `LEN_BYTES + len <= need * CELL`, the
            // bytes of `run`, and `dst` is derived from the pointer to the whole `run` slice
            // (provenance over every cell of it). The cells are `UnsafeCell`s, so writing
            // through a pointer derived from the shared slice is allowed. `run` was reserved
            // from the counter for this call alone: no other thread writes it, and none
            // reads it before `start` is returned and published, so nothing else accesses
            // these bytes during the copy. A part cannot overlap the arena's unpublished
            // cells (no one holds a reference to them).
            unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), dst.add(written), part.len()) };
            written += part.len();
        }
        Some((start, need * CELL))
    }

    /// The entry stored at run `start`, as `append` was given it (empty for 0, which names
    /// no run, and when `start` lies outside every allocated chunk).
    ///
    /// # Safety
    ///
    /// `start` is 0 or a run's first cell returned by [`EntryBytes::append`] on this arena, and
    /// that call happens-before this one (the list learns `start` from a node header read
    /// after an `Acquire` load that synchronizes with the `Release` exchange publishing the
    /// node, `list.rs` proof sketch steps 1 and 2).
    #[allow(unsafe_code)]
    #[inline]
    pub(super) unsafe fn run(&self, start: u32) -> &[u8] {
        if start == 0 {
            return &[];
        }
        let (chunk, at) = Cells::locate(start);
        let Some(cells) = self.cells.chunk(chunk).and_then(|c| c.get(at..)) else {
            return &[];
        };
        let room = cells.len() * CELL;
        let base = UnsafeCell::raw_get(cells.as_ptr().cast::<UnsafeCell<MaybeUninit<u64>>>())
            .cast::<u8>()
            .cast_const();
        let mut prefix = [0u8; LEN_BYTES];
        // SAFETY: `base` points into `cells`, a live slice of at least one cell (8 bytes),
        // so the 4 bytes read are in bounds; by the contract they were written by the
        // `append` that reserved this run, which happens-before this call, and no one writes
        // them again (every later `append` reserves cells past them).
        unsafe { std::ptr::copy_nonoverlapping(base, prefix.as_mut_ptr(), LEN_BYTES) };
        let len = u32::from_le_bytes(prefix) as usize;
        if LEN_BYTES + len > room {
            return &[];
        }
        // SAFETY: the `len` bytes after the prefix are in bounds (checked against `room`,
        // the bytes from `base` to the chunk's end, and the chunk lives as long as `self`:
        // arena chunks are never freed or moved before the arena is dropped). They are the
        // entry `append` wrote into this run before it returned `start` (the run holds
        // `LEN_BYTES + len` bytes, all written), which happens-before this call by the
        // contract, so they are initialized and seen whole. No one writes them while the
        // borrow lives: every other `append` writes only the run it reserved, disjoint from
        // this one, through its own pointer, never through a reference to the chunk.
        unsafe { std::slice::from_raw_parts(base.add(LEN_BYTES), len) }
    }
}

/// A cell not yet written.
fn new_cell() -> Cell {
    Cell(UnsafeCell::new(MaybeUninit::uninit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test sizes small enough for Miri (which checks the `unsafe` blocks), larger outside.
    const SCALE: usize = if cfg!(miri) { 1 } else { 20 };

    #[allow(unsafe_code)]
    fn read(a: &EntryBytes, start: u32) -> Vec<u8> {
        // SAFETY: `start` came from `append` on this thread, earlier.
        unsafe { a.run(start) }.to_vec()
    }

    #[test]
    fn runs_hold_what_was_appended() {
        let a = EntryBytes::new();
        let mut runs = Vec::new();
        for i in 0..700 * SCALE {
            let key = format!("key{i:06}");
            let value = vec![(i % 251) as u8; (i * 37) % 300];
            let (start, taken) = a.append(&[key.as_bytes(), b"", &value]).unwrap_or((0, 0));
            assert_eq!(
                taken,
                (LEN_BYTES + key.len() + value.len()).div_ceil(CELL) * CELL
            );
            runs.push((start, [key.into_bytes(), value].concat()));
        }
        for (start, want) in &runs {
            assert_eq!(&read(&a, *start), want);
        }
        // The entries reached past the first two chunks (read back whole above).
        let (last, _) = runs.last().map_or((0, 0), |r| Cells::locate(r.0));
        assert!(last >= 2, "the entries should span several chunks");
    }

    #[test]
    fn an_entry_larger_than_the_first_chunks_gets_a_chunk_it_fits() {
        let a = EntryBytes::new();
        let small = a.append(&[b"a"]).map(|r| r.0);
        let big = vec![7u8; 64 << 10];
        let large = a.append(&[&big]).map(|r| r.0);
        let after = a.append(&[b"b"]).map(|r| r.0);
        let (Some(small), Some(large), Some(after)) = (small, large, after) else {
            panic!("appends failed");
        };
        assert_eq!(read(&a, small), b"a");
        assert_eq!(read(&a, large), big);
        assert_eq!(read(&a, after), b"b");
        assert!(Cells::locate(large).0 > 0);
    }

    #[test]
    fn no_run_reads_empty() {
        let a = EntryBytes::new();
        assert!(read(&a, 1 << 30).is_empty());
        assert!(read(&a, 0).is_empty());
        let first = a.append(&[b"x"]).map(|r| r.0);
        assert_eq!(first, Some(1), "cell 0 is never a run");
        assert!(read(&a, 0).is_empty());
    }

    /// Readers borrow runs published through a `Release` store while appenders go on
    /// filling other runs of the same chunks (the skiplist's pattern, in small).
    #[test]
    fn readers_borrow_published_runs_while_appends_go_on() {
        use std::sync::atomic::{AtomicU32, Ordering::Acquire, Ordering::Release};
        let a = EntryBytes::new();
        let n = 100 * SCALE;
        let published: Vec<AtomicU32> = (0..2 * n).map(|_| AtomicU32::new(0)).collect();
        let entry = |t: usize, i: usize| vec![(t * 31 + i) as u8; 1 + (i * 13) % 40];
        std::thread::scope(|s| {
            for t in 0..2 {
                let (a, published) = (&a, &published);
                s.spawn(move || {
                    for i in 0..n {
                        let e = entry(t, i);
                        // A failed append publishes `u32::MAX`, which fails the reader
                        // (rather than leave it waiting for a run that never comes).
                        let start = a.append(&[&e]).map_or(u32::MAX, |r| r.0);
                        published[t * n + i].store(start, Release);
                    }
                });
            }
            let (a, published) = (&a, &published);
            s.spawn(move || {
                let mut seen = 0;
                while seen < 2 * n {
                    seen = 0;
                    for (k, p) in published.iter().enumerate() {
                        let start = p.load(Acquire);
                        if start == 0 {
                            continue;
                        }
                        assert_ne!(start, u32::MAX, "entry {k}: append failed");
                        seen += 1;
                        #[allow(unsafe_code)]
                        // SAFETY: `start` was published with `Release` after its `append`,
                        // and this `Acquire` load read it.
                        let got = unsafe { a.run(start) };
                        assert_eq!(got, entry(k / n, k % n), "entry {k}");
                    }
                }
            });
        });
    }

    #[test]
    fn concurrent_appends_keep_their_own_runs() {
        let a = EntryBytes::new();
        let per_thread: Vec<Vec<(u32, Vec<u8>)>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4u8)
                .map(|t| {
                    let a = &a;
                    s.spawn(move || {
                        (0..150 * SCALE)
                            .filter_map(|i| {
                                let e = vec![t; 1 + (i * 7) % 97];
                                a.append(&[&e]).map(|(start, _)| (start, e))
                            })
                            .collect()
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        for runs in &per_thread {
            assert_eq!(runs.len(), 150 * SCALE);
            for (start, want) in runs {
                assert_eq!(&read(&a, *start), want);
            }
        }
    }
}
