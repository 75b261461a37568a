//! [`ResolveMemo`]: what one scan's value resolves may keep between entries.

use std::any::Any;

/// State a value placement keeps between the resolves of one scan (one cursor), so that
/// what every entry of a scan would look up again (a value log's segment) is looked up
/// once. Owned by the cursor, so keeping it costs no lock; its contents are the
/// placement's own ([`crate::values::ValueStore::resolve_in`]), and a memo a placement does
/// not recognise is replaced.
///
/// A cursor pins what it reads (its tables and the value-log segments they point into)
/// for its whole life, so what the memo holds stays readable as long as the memo lives.
#[derive(Default)]
pub struct ResolveMemo(Option<Box<dyn Any + Send + Sync>>);

impl std::fmt::Debug for ResolveMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ResolveMemo")
            .field(&self.0.is_some())
            .finish()
    }
}

impl ResolveMemo {
    /// The memo's contents, if it holds a `T`.
    pub fn get_mut<T: Any>(&mut self) -> Option<&mut T> {
        self.0.as_mut()?.downcast_mut::<T>()
    }

    /// Hold `value` from now on (dropping what the memo held).
    pub fn set<T: Any + Send + Sync>(&mut self, value: T) {
        self.0 = Some(Box::new(value));
    }

    /// Forget what the memo holds.
    pub fn clear(&mut self) {
        self.0 = None;
    }
}
