//! Per-axis records: the part of a version edit that belongs to one design.
//!
//! The engine's own fields of an edit (files, counters, the format tag) are the same for
//! every design. What a design must persist beyond them (the FLSM layout's guard keys, the
//! value log's head, garbage counts and sealed segments; later trie containers or DTable
//! ranges) travels as [`AxisRecord`]s: the axis that owns the record, a kind number the
//! axis assigns, a format version, and bytes only the owner reads. The MANIFEST frames
//! them (tag 16, `docs/format/manifest.md`) without knowing what they mean, and replay
//! hands each one to its owner: layout records to the version's [`crate::version::LayoutState`],
//! the others to the axis's [`AxisState`].

use std::any::Any;
use std::fmt::Debug;

/// The axis that owns a record.
///
/// On-disk: [`Axis::code`] is stored in every axis record. Never renumber.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Axis {
    /// How tables are arranged (records read by the version's layout state).
    Layout,
    /// Where values live, and the durability log.
    Values,
    /// Where fresh writes live.
    Memory,
    /// The bytes of one table file.
    Table,
}

impl Axis {
    /// Every axis, in code order.
    pub const ALL: [Axis; 4] = [Axis::Layout, Axis::Values, Axis::Memory, Axis::Table];

    /// The on-disk code.
    pub fn code(self) -> u8 {
        match self {
            Axis::Layout => 1,
            Axis::Values => 2,
            Axis::Memory => 3,
            Axis::Table => 4,
        }
    }

    /// The axis with on-disk code `code`.
    pub fn from_code(code: u8) -> Option<Axis> {
        Axis::ALL.into_iter().find(|a| a.code() == code)
    }

    /// A lower-case name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Layout => "layout",
            Axis::Values => "value placement",
            Axis::Memory => "memory component",
            Axis::Table => "table format",
        }
    }
}

/// One record an axis persists in a version edit. Only its owner interprets `kind`,
/// `version` and `payload`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisRecord {
    /// The owner.
    pub axis: Axis,
    /// What the record says, numbered by the owner (on-disk: never renumber).
    pub kind: u32,
    /// The format version of `payload` for this kind; an owner refuses versions it does not
    /// know, so a store written by a newer release is refused, not half-read.
    pub version: u8,
    /// The owner's bytes.
    pub payload: Vec<u8>,
}

impl AxisRecord {
    /// A record of `axis` with format version 1.
    pub fn new(axis: Axis, kind: u32, payload: Vec<u8>) -> AxisRecord {
        AxisRecord {
            axis,
            kind,
            version: 1,
            payload,
        }
    }
}

/// The durable state of one axis other than the layout (whose state lives in each
/// [`crate::version::Version`]): folded from the records of every edit of the MANIFEST and
/// written out whole as the first edit of a new MANIFEST.
///
/// The version set keeps one per axis and never looks inside; the axis that made it reads
/// it back with [`AxisState::as_any`].
pub trait AxisState: AxisStateCopy + Send + Sync + Debug {
    /// Fold in the records one edit holds for this axis (in the edit's order; an edit with
    /// none is not passed). A record that does not fit (unknown kind or version, a bad
    /// payload) is an error describing it.
    fn absorb(&mut self, records: &[&AxisRecord]) -> Result<(), String>;

    /// Records that rebuild this state from nothing, for the first edit of a new MANIFEST.
    fn snapshot(&self, out: &mut Vec<AxisRecord>);
}

/// Copying and downcasting an [`AxisState`]: implemented for every state that is `Clone`,
/// so an axis writes only `absorb` and `snapshot`.
pub trait AxisStateCopy {
    /// A copy (the version set applies an edit to a copy and keeps it once committed).
    fn clone_box(&self) -> Box<dyn AxisState>;

    /// The concrete state, for the axis that made it.
    fn as_any(&self) -> &dyn Any;

    /// As [`AxisStateCopy::as_any`], mutable.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: AxisState + Clone + 'static> AxisStateCopy for T {
    fn clone_box(&self) -> Box<dyn AxisState> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl Clone for Box<dyn AxisState> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// The state of an axis that persists nothing: any record for it is an error.
#[derive(Clone, Copy, Debug)]
pub struct NoState(pub Axis);

impl AxisState for NoState {
    fn absorb(&mut self, records: &[&AxisRecord]) -> Result<(), String> {
        match records.first() {
            None => Ok(()),
            Some(r) => Err(format!(
                "a {} record of kind {} for a {} that keeps no state",
                self.0.name(),
                r.kind,
                self.0.name()
            )),
        }
    }

    fn snapshot(&self, _out: &mut Vec<AxisRecord>) {}
}

/// What the MANIFEST says about the value placement: the engine's log number and the
/// placement's own durable state (folded from its axis records; see
/// `ValueStore::empty_state`).
#[derive(Clone, Debug)]
pub struct PersistedState {
    /// Durability-log files numbered below this are flushed (the WAL's number; the log
    /// number of LevelDB's MANIFEST).
    pub log_number: u64,
    /// The placement's own state.
    pub state: Box<dyn AxisState>,
}

/// The durable states of the axes other than the layout, as the version set keeps them.
#[derive(Clone, Debug)]
pub struct AxisStates {
    /// The value placement's state.
    pub values: Box<dyn AxisState>,
    /// The memory component's state.
    pub memory: Box<dyn AxisState>,
    /// The table format's state.
    pub table: Box<dyn AxisState>,
}

impl AxisStates {
    /// Each axis's state, as its part starts it in a new store
    /// (`ValueStore::empty_state`, `MemoryComponent::empty_state`, `TableFormat::empty_state`).
    pub fn new(
        values: Box<dyn AxisState>,
        memory: Box<dyn AxisState>,
        table: Box<dyn AxisState>,
    ) -> AxisStates {
        AxisStates {
            values,
            memory,
            table,
        }
    }

    /// States for axes that persist nothing but the given value placement's.
    pub fn with_values(values: Box<dyn AxisState>) -> AxisStates {
        AxisStates {
            values,
            memory: Box::new(NoState(Axis::Memory)),
            table: Box::new(NoState(Axis::Table)),
        }
    }

    /// Fold in the non-layout records of one edit, each axis its own.
    ///
    /// # Errors
    /// The first axis's description of a record that does not fit.
    pub fn absorb(&mut self, records: &[AxisRecord]) -> Result<(), String> {
        for (axis, state) in [
            (Axis::Values, &mut self.values),
            (Axis::Memory, &mut self.memory),
            (Axis::Table, &mut self.table),
        ] {
            let mine: Vec<&AxisRecord> = records.iter().filter(|r| r.axis == axis).collect();
            if !mine.is_empty() {
                state.absorb(&mine)?;
            }
        }
        Ok(())
    }

    /// Records that rebuild every state.
    pub fn snapshot(&self, out: &mut Vec<AxisRecord>) {
        self.values.snapshot(out);
        self.memory.snapshot(out);
        self.table.snapshot(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_distinct() {
        for a in Axis::ALL {
            assert_eq!(Axis::from_code(a.code()), Some(a));
        }
        assert_eq!(Axis::from_code(0), None);
        assert_eq!(Axis::from_code(5), None);
    }

    #[test]
    fn an_axis_without_state_refuses_records() {
        let mut s = AxisStates::with_values(Box::new(NoState(Axis::Values)));
        assert!(s.absorb(&[]).is_ok());
        let r = AxisRecord::new(Axis::Memory, 3, vec![1]);
        let e = s.absorb(&[r]).unwrap_err();
        assert!(e.contains("memory component record of kind 3"), "{e}");
    }
}
