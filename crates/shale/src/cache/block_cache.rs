//! Block cache (placeholder: a map with no eviction, so the table code compiles and its
//! tests run; the real sharded LRU replaces this file on merge).
#![allow(missing_docs)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

type Blocks = HashMap<(u64, u64), Arc<[u8]>>;

#[derive(Debug, Default)]
pub struct BlockCache {
    capacity: usize,
    map: Mutex<Blocks>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl BlockCache {
    pub fn new(capacity_bytes: usize) -> BlockCache {
        BlockCache {
            capacity: capacity_bytes,
            ..BlockCache::default()
        }
    }
    pub fn get(&self, file_number: u64, offset: u64) -> Option<Arc<[u8]>> {
        let r = self.map.lock().get(&(file_number, offset)).cloned();
        let c = if r.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        c.fetch_add(1, Ordering::Relaxed);
        r
    }
    pub fn insert(&self, file_number: u64, offset: u64, block: Arc<[u8]>) {
        self.map.lock().insert((file_number, offset), block);
    }
    pub fn usage(&self) -> usize {
        self.map.lock().values().map(|b| b.len()).sum()
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }
    pub fn erase_file(&self, file_number: u64) {
        self.map.lock().retain(|&(f, _), _| f != file_number);
    }
}
