//! A sharded LRU cache of decoded table blocks under a byte budget.
//!
//! Blocks are keyed by `(file_number, offset)`: table files are immutable and their numbers
//! never reused, so a key names the same bytes forever and entries need no invalidation
//! except [`BlockCache::erase_file`] to free the memory of a deleted table early.
//!
//! Each shard is a `HashMap` from key to the block and a slot of a slab of nodes that form
//! a doubly linked recency list (indices, not pointers), so `get` and `insert` are O(1).
//! Eviction is LRU with lazy promotion (CLOCK's second chance): a hit marks its entry, and
//! eviction moves a marked tail back to the head instead of dropping it; a hit touches
//! only the map. The budget is split
//! evenly over the shards; the number of shards shrinks for small budgets (each shard keeps
//! at least [`MIN_SHARD_BYTES`]) so that a small cache is not cut into slivers too small to
//! hold a block.
//!
//! Thread-safety: shared by every reader of a store; each shard has its own mutex, and a
//! returned block is an `Arc`, so eviction never invalidates a block a reader is using.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// At most this many shards: enough that 2-16 reader threads rarely meet on one mutex.
const MAX_SHARDS: usize = 16;
const _: () = assert!(MAX_SHARDS.is_power_of_two(), "`BlockCache::shard` masks");
/// A shard gets at least this much budget, or the cache uses fewer shards.
pub const MIN_SHARD_BYTES: usize = 512 * 1024;
/// Bytes charged per entry on top of the block: node, map slot and `Arc` header, roughly.
pub const ENTRY_OVERHEAD: usize = 64;

const NIL: usize = usize::MAX;

/// The bytes of one block (or value-log record): the buffer it was read (or decompressed)
/// into, shared as it is (`Bytes::from(Vec)` takes the buffer without copying it), or a
/// range of a table's memory map lent with no copy at all
/// ([`crate::env::ReadFile::read_shared`]). Cloning one, or slicing it, shares the bytes.
pub type SharedBytes = bytes::Bytes;

type Key = (u64, u64);

struct Node {
    key: Key,
    charge: usize,
    /// Towards the most recently inserted (or promoted) end.
    prev: usize,
    /// Towards the eviction end.
    next: usize,
}

/// What the map holds for a key: the block itself, so that a hit reads one hash-table slot
/// and never the recency list.
struct Entry {
    slot: usize,
    block: SharedBytes,
    /// Read since it was inserted or last passed over by eviction.
    referenced: bool,
}

/// One shard: a recency list over a slab, with lazy promotion ("second chance", CLOCK):
/// a hit only marks its entry; eviction takes the tail, and a marked tail is unmarked and
/// moved to the head instead of evicted. A hit therefore writes nothing but one flag in the
/// map slot it read anyway: moving the node to the head at every hit, as a strict LRU
/// does, touched the node and both its neighbours, three cache misses per hit that a scan
/// of separated values paid once per value (`docs/designs/wisckey.md`).
struct Shard {
    map: HashMap<Key, Entry, super::IntHashBuilder>,
    nodes: Vec<Node>,
    free: Vec<usize>,
    head: usize,
    tail: usize,
    usage: usize,
    capacity: usize,
}

impl Shard {
    fn new(capacity: usize) -> Shard {
        Shard {
            map: HashMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            usage: 0,
            capacity,
        }
    }

    fn unlink(&mut self, i: usize) {
        let (prev, next) = match self.nodes.get(i) {
            Some(n) => (n.prev, n.next),
            None => return,
        };
        match self.nodes.get_mut(prev) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match self.nodes.get_mut(next) {
            Some(n) => n.prev = prev,
            None => self.tail = prev,
        }
    }

    fn push_front(&mut self, i: usize) {
        let old_head = self.head;
        if let Some(n) = self.nodes.get_mut(i) {
            n.prev = NIL;
            n.next = old_head;
        }
        match self.nodes.get_mut(old_head) {
            Some(h) => h.prev = i,
            None => self.tail = i,
        }
        self.head = i;
    }

    fn get(&mut self, key: Key) -> Option<SharedBytes> {
        let e = self.map.get_mut(&key)?;
        e.referenced = true;
        Some(e.block.clone())
    }

    /// Remove the node at slot `i` (the caller removes its map entry) and return its charge
    /// to the budget.
    fn release(&mut self, i: usize) {
        self.unlink(i);
        if let Some(n) = self.nodes.get_mut(i) {
            self.usage -= n.charge;
            n.charge = 0;
            self.free.push(i);
        }
    }

    fn remove(&mut self, key: Key) {
        if let Some(e) = self.map.remove(&key) {
            self.release(e.slot);
        }
    }

    fn insert(&mut self, key: Key, block: SharedBytes, charge: usize) {
        // Replacing an entry: drop the old one first so the budget check below is exact.
        self.remove(key);
        if charge > self.capacity {
            return;
        }
        let node = Node {
            key,
            charge,
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                if let Some(slot) = self.nodes.get_mut(i) {
                    *slot = node;
                }
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        };
        self.push_front(i);
        self.map.insert(
            key,
            Entry {
                slot: i,
                block,
                referenced: false,
            },
        );
        self.usage += charge;
        // Each pass over a marked node unmarks it, so this ends within two rounds of the
        // list; the new node is unmarked and never moved.
        while self.usage > self.capacity && self.tail != NIL {
            let victim = self.tail;
            let Some(vkey) = self.nodes.get(victim).map(|n| n.key) else {
                break;
            };
            if let Some(e) = self.map.get_mut(&vkey)
                && e.referenced
            {
                e.referenced = false;
                self.unlink(victim);
                self.push_front(victim);
                continue;
            }
            self.map.remove(&vkey);
            self.release(victim);
        }
    }

    fn erase_file(&mut self, file_number: u64) {
        let keys: Vec<Key> = self
            .map
            .keys()
            .filter(|k| k.0 == file_number)
            .copied()
            .collect();
        for key in keys {
            self.remove(key);
        }
    }
}

/// A sharded cache of blocks (LRU with lazy promotion), charged by size. See the module
/// documentation.
pub struct BlockCache {
    shards: Box<[Mutex<Shard>]>,
    capacity: usize,
    usage: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity)
            .field("usage", &self.usage())
            .field("shards", &self.shards.len())
            .field("hits", &self.hits())
            .field("misses", &self.misses())
            .finish()
    }
}

/// Spread `(file, offset)` over the shards. Offsets are block-aligned-ish and files are
/// numbered consecutively, so the bits are mixed before taking the low ones.
fn shard_hash(file_number: u64, offset: u64) -> u64 {
    let mut h = file_number.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ offset;
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h
}

impl BlockCache {
    /// A cache holding at most `capacity_bytes` of blocks (plus [`ENTRY_OVERHEAD`] each).
    /// A capacity of 0 caches nothing.
    pub fn new(capacity_bytes: usize) -> BlockCache {
        let mut shards = MAX_SHARDS;
        while shards > 1 && capacity_bytes / shards < MIN_SHARD_BYTES {
            shards /= 2;
        }
        // Split the budget exactly: the first `rem` shards take one byte more.
        let (per, rem) = (capacity_bytes / shards, capacity_bytes % shards);
        let shards: Box<[Mutex<Shard>]> = (0..shards)
            .map(|i| Mutex::new(Shard::new(per + usize::from(i < rem))))
            .collect();
        BlockCache {
            shards,
            capacity: capacity_bytes,
            usage: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn shard(&self, file_number: u64, offset: u64) -> &Mutex<Shard> {
        // The number of shards is a power of two (`new` halves from `MAX_SHARDS`), so a
        // mask takes the remainder without a division (this runs for every block and every
        // cached value a scan reads); there is at least one shard.
        let i = shard_hash(file_number, offset) as usize & (self.shards.len() - 1);
        &self.shards[i]
    }

    /// The block of `file_number` at `offset`, if cached; marks it read, so that eviction
    /// passes over it once.
    pub fn get(&self, file_number: u64, offset: u64) -> Option<SharedBytes> {
        let found = self.get_uncounted(file_number, offset);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// [`BlockCache::get`] without counting the hit or miss: for a caller that counts its
    /// lookups itself and adds them with [`BlockCache::count`] (a scan's value reads, one
    /// shared counter update per many lookups instead of one per lookup).
    pub fn get_uncounted(&self, file_number: u64, offset: u64) -> Option<SharedBytes> {
        self.shard(file_number, offset)
            .lock()
            .get((file_number, offset))
    }

    /// Add `hits` and `misses` of [`BlockCache::get_uncounted`] lookups to the counters.
    pub fn count(&self, hits: u64, misses: u64) {
        if hits > 0 {
            self.hits.fetch_add(hits, Ordering::Relaxed);
        }
        if misses > 0 {
            self.misses.fetch_add(misses, Ordering::Relaxed);
        }
    }

    /// Cache `block` as the block of `file_number` at `offset`, replacing any previous entry
    /// and evicting the least recently used blocks of its shard to stay within budget. A
    /// block larger than a shard's budget is not cached.
    pub fn insert(&self, file_number: u64, offset: u64, block: SharedBytes) {
        let charge = block.len().saturating_add(ENTRY_OVERHEAD);
        self.with_shard(file_number, offset, |s| {
            s.insert((file_number, offset), block, charge)
        });
    }

    /// [`BlockCache::insert`], but only where the block fits in its shard's budget without
    /// evicting anything (and its key is not cached yet); returns whether it was kept. For
    /// a reader whose reads are cheap to repeat and that passes over much data once (a
    /// scan of values read from a mapped value-log segment): it fills an empty cache but
    /// never pushes out what others keep, and then costs a lookup of the shard's usage,
    /// not an insert and an eviction. The block is cloned (shared) only when kept.
    pub fn insert_if_room(&self, file_number: u64, offset: u64, block: &SharedBytes) -> bool {
        let charge = block.len().saturating_add(ENTRY_OVERHEAD);
        let mut kept = false;
        self.with_shard(file_number, offset, |s| {
            if s.usage.saturating_add(charge) <= s.capacity
                && !s.map.contains_key(&(file_number, offset))
            {
                s.insert((file_number, offset), block.clone(), charge);
                kept = true;
            }
        });
        kept
    }

    /// Whether a block of `len` bytes at `file_number`/`offset` fits in its shard's budget
    /// now without evicting anything ([`BlockCache::insert_if_room`] would keep it, unless
    /// another insert takes the room first).
    pub fn has_room(&self, file_number: u64, offset: u64, len: usize) -> bool {
        let charge = len.saturating_add(ENTRY_OVERHEAD);
        let s = self.shard(file_number, offset).lock();
        s.usage.saturating_add(charge) <= s.capacity
    }

    /// Drop every cached block of `file_number` (a table that was deleted). O(entries).
    pub fn erase_file(&self, file_number: u64) {
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            let before = s.usage;
            s.erase_file(file_number);
            self.usage.fetch_sub(before - s.usage, Ordering::Relaxed);
        }
    }

    /// Run a mutation on one shard and keep the global usage counter in step with it.
    fn with_shard(&self, file_number: u64, offset: u64, f: impl FnOnce(&mut Shard)) {
        let mut s = self.shard(file_number, offset).lock();
        let before = s.usage;
        f(&mut s);
        let after = s.usage;
        // Updated under the shard lock, so the total never counts a shard's change twice.
        if after >= before {
            self.usage.fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.usage.fetch_sub(before - after, Ordering::Relaxed);
        }
    }

    /// Bytes charged by the cached blocks now (never more than [`BlockCache::capacity`]).
    pub fn usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed)
    }

    /// The byte budget given to [`BlockCache::new`].
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Lookups that found their block.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(len: usize, fill: u8) -> SharedBytes {
        SharedBytes::from(vec![fill; len])
    }

    #[test]
    fn get_after_insert_and_counters() {
        let c = BlockCache::new(1 << 20);
        assert!(c.get(1, 0).is_none());
        c.insert(1, 0, block(100, 7));
        let b = c.get(1, 0).unwrap();
        assert_eq!(&*b, &[7u8; 100][..]);
        assert!(c.get(1, 4096).is_none());
        assert!(c.get(2, 0).is_none());
        assert_eq!(c.hits(), 1);
        assert_eq!(c.misses(), 3);
        assert_eq!(c.usage(), 100 + ENTRY_OVERHEAD);
        assert_eq!(c.capacity(), 1 << 20);
        // Replacing an entry charges only the new block.
        c.insert(1, 0, block(50, 8));
        assert_eq!(&*c.get(1, 0).unwrap(), &[8u8; 50][..]);
        assert_eq!(c.usage(), 50 + ENTRY_OVERHEAD);
        assert!(format!("{c:?}").contains("hits: 2"));
    }

    #[test]
    fn eviction_respects_the_budget() {
        let charge = 1000 + ENTRY_OVERHEAD;
        let c = BlockCache::new(10 * charge);
        for i in 0..100u64 {
            c.insert(3, i * 4096, block(1000, i as u8));
            assert!(c.usage() <= c.capacity());
        }
        assert_eq!(c.usage(), 10 * charge);
        // Exactly the ten newest survive (one shard at this size, nothing read: FIFO).
        let present: Vec<u64> = (0..100u64)
            .filter(|i| c.get(3, i * 4096).is_some())
            .collect();
        assert_eq!(present, (90..100).collect::<Vec<_>>());
    }

    #[test]
    fn recently_used_block_survives() {
        let charge = 1000 + ENTRY_OVERHEAD;
        let c = BlockCache::new(3 * charge);
        c.insert(1, 0, block(1000, 0));
        c.insert(1, 1, block(1000, 1));
        c.insert(1, 2, block(1000, 2));
        assert!(c.get(1, 0).is_some()); // 0 is now the most recent; 1 the least.
        c.insert(1, 3, block(1000, 3));
        assert!(c.get(1, 1).is_none());
        for off in [0, 2, 3] {
            assert!(c.get(1, off).is_some(), "offset {off}");
        }
    }

    #[test]
    fn a_read_block_gets_one_second_chance() {
        let charge = 1000 + ENTRY_OVERHEAD;
        let c = BlockCache::new(3 * charge);
        for off in 0..3 {
            c.insert(1, off, block(1000, off as u8));
        }
        assert!(c.get(1, 0).is_some());
        assert!(c.get(1, 1).is_some());
        // 0 and 1 are marked: the insert evicts 2, the oldest unmarked one, and moves 0 and 1
        // to the head unmarked (the list is now 1, 0, 3 from the head).
        c.insert(1, 3, block(1000, 3));
        assert!(c.get(1, 2).is_none());
        // Nothing read since: the next two inserts evict from the tail, 3 and then 0; 1,
        // inserted before 3, outlives it by its second chance.
        c.insert(1, 4, block(1000, 4));
        c.insert(1, 5, block(1000, 5));
        let present: Vec<u64> = (0..6).filter(|&o| c.get(1, o).is_some()).collect();
        assert_eq!(present, vec![1, 4, 5]);
        assert_eq!(c.usage(), 3 * charge);
    }

    #[test]
    fn zero_capacity_and_oversized_blocks_are_not_cached() {
        let c = BlockCache::new(0);
        c.insert(1, 0, block(10, 1));
        assert!(c.get(1, 0).is_none());
        assert_eq!(c.usage(), 0);

        let c = BlockCache::new(4096);
        c.insert(1, 0, block(100, 1));
        c.insert(1, 8192, block(4096, 2));
        assert!(c.get(1, 8192).is_none());
        assert!(c.get(1, 0).is_some(), "an oversized block evicts nothing");
        assert_eq!(c.usage(), 100 + ENTRY_OVERHEAD);
    }

    #[test]
    fn insert_if_room_fills_but_never_evicts() {
        let charge = 1000 + ENTRY_OVERHEAD;
        let c = BlockCache::new(3 * charge);
        for off in 0..3 {
            assert!(c.insert_if_room(1, off, &block(1000, off as u8)));
        }
        assert_eq!(c.usage(), 3 * charge);
        // Full: the next block is not kept, and nothing was evicted for it.
        assert!(!c.has_room(1, 3, 1000));
        assert!(!c.insert_if_room(1, 3, &block(1000, 3)));
        assert!(c.get(1, 3).is_none());
        for off in 0..3 {
            assert_eq!(
                &*c.get(1, off).unwrap(),
                &[off as u8; 1000][..],
                "offset {off}"
            );
        }
        // A cached key is not replaced.
        let c = BlockCache::new(3 * charge);
        assert!(c.has_room(1, 0, 1000));
        assert!(c.insert_if_room(1, 0, &block(1000, 0)));
        assert!(!c.insert_if_room(1, 0, &block(10, 9)));
        assert_eq!(&*c.get(1, 0).unwrap(), &[0u8; 1000][..]);
        assert_eq!(c.usage(), charge);
        // Room made by an erase is filled again.
        c.erase_file(1);
        assert!(c.insert_if_room(1, 7, &block(1000, 7)));
        assert_eq!(c.usage(), charge);
    }

    #[test]
    fn erase_file_drops_only_that_file() {
        let c = BlockCache::new(64 << 20);
        for f in 1..=3u64 {
            for off in 0..50u64 {
                c.insert(f, off * 4096, block(512, f as u8));
            }
        }
        assert_eq!(c.usage(), 150 * (512 + ENTRY_OVERHEAD));
        c.erase_file(2);
        assert_eq!(c.usage(), 100 * (512 + ENTRY_OVERHEAD));
        for off in 0..50u64 {
            assert!(c.get(2, off * 4096).is_none());
            assert!(c.get(1, off * 4096).is_some());
            assert!(c.get(3, off * 4096).is_some());
        }
        // Slots freed by the erase are reused.
        for off in 0..50u64 {
            c.insert(4, off * 4096, block(512, 4));
        }
        assert_eq!(c.usage(), 150 * (512 + ENTRY_OVERHEAD));
    }

    #[test]
    fn sharded_cache_stays_within_budget() {
        let c = BlockCache::new(16 * MIN_SHARD_BYTES);
        assert_eq!(c.shards.len(), 16);
        for i in 0..20_000u64 {
            c.insert(i % 7, i * 4096, block(4000, 0));
        }
        assert!(c.usage() <= c.capacity());
        // Every shard is nearly full: the hash spreads the keys.
        assert!(c.usage() > c.capacity() - 16 * (4000 + ENTRY_OVERHEAD));
        let sum: usize = c.shards.iter().map(|s| s.lock().usage).sum();
        assert_eq!(sum, c.usage());
    }

    #[test]
    fn concurrent_use() {
        let c = BlockCache::new(4 * MIN_SHARD_BYTES);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let c = &c;
                s.spawn(move || {
                    for i in 0..2000u64 {
                        c.insert(t, i, block(1000, t as u8));
                        if let Some(b) = c.get(t, i / 2) {
                            assert!(b.iter().all(|&x| x == t as u8));
                        }
                    }
                });
            }
        });
        assert!(c.usage() <= c.capacity());
        assert_eq!(c.hits() + c.misses(), 8000);
    }
}
