//! The value-placement axis: where values live and how a stored value becomes the user's.
//!
//! With `inline` placement (LevelDB) the tree stores the value itself and resolution is the
//! identity. A separated placement (WiscKey's value log) stores a pointer in the tree
//! (`ValueKind::ValuePointer`) and resolves it by reading the log; it will also take over the
//! role of the write-ahead log, which is why this trait will grow write-path methods when
//! that design lands.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::key::ValueKind;
use crate::options::ValuesKind;

/// A value placement.
pub trait ValueStore: Send + Sync + std::fmt::Debug {
    /// The placement's name.
    fn name(&self) -> &'static str;
    /// Turn a stored value of `kind` into the user's value.
    fn resolve<'a>(&self, kind: ValueKind, stored: &'a [u8]) -> Result<Cow<'a, [u8]>>;
}

/// Values stored in the tree as written.
#[derive(Debug, Default)]
pub struct Inline;

impl ValueStore for Inline {
    fn name(&self) -> &'static str {
        "inline"
    }
    fn resolve<'a>(&self, kind: ValueKind, stored: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        match kind {
            ValueKind::Value => Ok(Cow::Borrowed(stored)),
            other => Err(Error::Unsupported(format!(
                "found a {other:?} entry, but this store keeps values inline"
            ))),
        }
    }
}

/// Build the configured value placement.
pub fn new_value_store(kind: ValuesKind) -> std::sync::Arc<dyn ValueStore> {
    match kind {
        ValuesKind::Inline => std::sync::Arc::new(Inline),
    }
}
