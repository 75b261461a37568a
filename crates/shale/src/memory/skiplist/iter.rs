//! A cursor over a skiplist memtable that owns a reference to it.

use std::sync::Arc;

use super::SkipListMemTable;
use super::node::{NIL, NodeId, Target};
use crate::iter::InternalIterator;

/// A positioned cursor over a [`SkipListMemTable`]; holds the memtable alive.
///
/// Moves never allocate: `next` follows one link; `prev` searches from the head for the
/// last entry before the current one (as LevelDB does: towers have no back links), so it
/// costs a seek. Entries inserted while the cursor lives may or may not be seen, each one
/// whole.
pub struct SkipListIter {
    table: Arc<SkipListMemTable>,
    /// Current node, or NIL when not positioned.
    node: NodeId,
}

impl std::fmt::Debug for SkipListIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipListIter")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl SkipListIter {
    /// An unpositioned cursor over `table`.
    pub fn new(table: Arc<SkipListMemTable>) -> Self {
        SkipListIter { table, node: NIL }
    }
}

impl InternalIterator for SkipListIter {
    fn valid(&self) -> bool {
        self.node != NIL
    }

    fn seek_to_first(&mut self) -> crate::Result<()> {
        self.node = self.table.list.first();
        Ok(())
    }

    fn seek_to_last(&mut self) -> crate::Result<()> {
        self.node = self.table.list.last();
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> crate::Result<()> {
        self.node = self.table.list.seek(&Target::from_internal(target));
        Ok(())
    }

    fn seek_for_prev(&mut self, target: &[u8]) -> crate::Result<()> {
        // Last entry <= target: the first entry >= target if it equals target, otherwise
        // the last entry < target. One descent in the common case.
        let list = &self.table.list;
        let t = Target::from_internal(target);
        let ge = list.seek(&t);
        self.node =
            if ge != NIL && crate::key::compare_internal(list.key_value(ge).0, target).is_eq() {
                ge
            } else {
                list.seek_lt(&t)
            };
        Ok(())
    }

    fn next(&mut self) -> crate::Result<()> {
        self.node = self.table.list.next_of(self.node);
        Ok(())
    }

    fn prev(&mut self) -> crate::Result<()> {
        if self.node != NIL {
            let list = &self.table.list;
            let key = list.key_value(self.node).0;
            self.node = list.seek_lt(&Target::from_internal(key));
        }
        Ok(())
    }

    fn key(&self) -> &[u8] {
        self.table.list.key_value(self.node).0
    }

    fn value(&self) -> &[u8] {
        self.table.list.key_value(self.node).1
    }

    fn entry(&self) -> (&[u8], &[u8]) {
        self.table.list.key_value(self.node)
    }
}
