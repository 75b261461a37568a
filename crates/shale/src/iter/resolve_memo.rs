//! [`ResolveMemo`]: what one scan's value resolves may keep between entries.

use std::any::Any;

use super::ValueBytes;

/// A cursor keeps a spare buffer of at most this many bytes (a larger one is freed): a
/// scan of large values does not hold on to one for its whole life.
pub const SPARE_MAX: usize = 128 * 1024;

/// State a value placement keeps between the resolves of one scan (one cursor), so that
/// what every entry of a scan would look up again (a value log's segment) is looked up
/// once. Owned by the cursor, so keeping it costs no lock; its contents are the
/// placement's own ([`crate::values::ValueStore::resolve_in`]), and a memo a placement does
/// not recognise is replaced.
///
/// A cursor pins what it reads (its tables and the value-log segments they point into)
/// for its whole life, so what the memo holds stays readable as long as the memo lives.
///
/// It also keeps one spare buffer: the cursor gives back each value it is done with
/// ([`ResolveMemo::give_back`]), and a placement that reads a value into a buffer of its
/// own ([`ValueBytes::Tail`]) takes that buffer again for the next one
/// ([`ResolveMemo::get_mut_and_spare`]) instead of allocating and freeing one per value.
#[derive(Default)]
pub struct ResolveMemo {
    state: Option<Box<dyn Any + Send + Sync>>,
    spare: Vec<u8>,
}

impl std::fmt::Debug for ResolveMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolveMemo")
            .field("state", &self.state.is_some())
            .field("spare", &self.spare.capacity())
            .finish()
    }
}

impl ResolveMemo {
    /// The memo's contents, if it holds a `T`.
    pub fn get_mut<T: Any>(&mut self) -> Option<&mut T> {
        self.state.as_mut()?.downcast_mut::<T>()
    }

    /// [`ResolveMemo::get_mut`], and the spare buffer (empty; no capacity when there is
    /// none). A placement that takes the buffer (`std::mem::take`) leaves the memo without
    /// one until the cursor gives one back.
    pub fn get_mut_and_spare<T: Any>(&mut self) -> (Option<&mut T>, &mut Vec<u8>) {
        let state = self.state.as_mut().and_then(|s| s.downcast_mut::<T>());
        (state, &mut self.spare)
    }

    /// Hold `value` from now on (dropping what the memo held).
    pub fn set<T: Any + Send + Sync>(&mut self, value: T) {
        self.state = Some(Box::new(value));
    }

    /// Forget what the memo holds (the spare buffer too).
    pub fn clear(&mut self) {
        self.state = None;
        self.spare = Vec::new();
    }

    /// The cursor is done with `value`: a buffer of its own ([`ValueBytes::Tail`]) of up to
    /// [`SPARE_MAX`] bytes becomes the spare one (emptied) if there is none; anything else
    /// is dropped.
    #[inline]
    pub fn give_back(&mut self, value: ValueBytes<'static>) {
        if let ValueBytes::Tail(mut v, _) = value
            && self.spare.capacity() == 0
            && v.capacity() <= SPARE_MAX
        {
            v.clear();
            self.spare = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_back_buffer_is_kept_once_and_only_up_to_its_bound() {
        let mut memo = ResolveMemo::default();
        let (_, spare) = memo.get_mut_and_spare::<u32>();
        assert_eq!(spare.capacity(), 0);
        // Only a buffer of the value's own is kept, emptied.
        memo.give_back(ValueBytes::Owned(vec![1; 100]));
        assert_eq!(memo.get_mut_and_spare::<u32>().1.capacity(), 0);
        let v = vec![7u8; 1000];
        let at = v.as_ptr();
        memo.give_back(ValueBytes::Tail(v, 10));
        let spare = memo.get_mut_and_spare::<u32>().1;
        assert!(spare.is_empty() && spare.capacity() >= 1000);
        assert_eq!(spare.as_ptr(), at);
        // One spare: the next is dropped.
        memo.give_back(ValueBytes::Tail(vec![8u8; 2000], 0));
        assert_eq!(memo.get_mut_and_spare::<u32>().1.as_ptr(), at);
        // Taken, then a buffer over the bound is not kept.
        let _ = std::mem::take(memo.get_mut_and_spare::<u32>().1);
        memo.give_back(ValueBytes::Tail(vec![0u8; SPARE_MAX + 1], 0));
        assert_eq!(memo.get_mut_and_spare::<u32>().1.capacity(), 0);
        // The state beside it.
        memo.set(5u32);
        assert_eq!(memo.get_mut_and_spare::<u32>().0.copied(), Some(5));
        memo.clear();
        assert!(memo.get_mut::<u32>().is_none());
    }
}
