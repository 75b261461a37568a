//! Skiplist memtable (in progress: a stub that keeps the crate compiling).
#![allow(missing_docs)]
use std::sync::Arc;
use super::{MemLookup, MemTable};
use crate::iter::{InternalIterator, VecIter};
use crate::key::{SeqNo, ValueKind};
#[derive(Default)]
pub struct SkipListMemTable;
impl SkipListMemTable { pub fn new() -> Self { SkipListMemTable } }
impl MemTable for SkipListMemTable {
    fn insert(&self, _: &[u8], _: SeqNo, _: ValueKind, _: &[u8]) {}
    fn get(&self, _: &[u8], _: SeqNo) -> Option<MemLookup> { None }
    fn iter(self: Arc<Self>) -> Box<dyn InternalIterator> { Box::new(VecIter::new(Vec::new())) }
    fn approximate_bytes(&self) -> usize { 0 }
    fn len(&self) -> usize { 0 }
}
