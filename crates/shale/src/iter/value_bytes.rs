//! [`ValueBytes`]: a resolved value, without a copy where the placement can avoid one.

use crate::cache::block_cache::SharedBytes;
use std::ops::{Deref, Range};

/// A value as [`crate::values::ValueStore::resolve`] returns it: borrowed from the bytes the tree
/// stored (an inline value), owned, or a range of a shared buffer (a value-log record kept
/// in the block cache). A scan hands the shared form to its reader as it is, so a cached
/// value is never copied unless the caller asks for a `Vec` ([`ValueBytes::into_owned`]).
#[derive(Clone, Debug)]
pub enum ValueBytes<'a> {
    /// The stored bytes themselves.
    Borrowed(&'a [u8]),
    /// Bytes of its own.
    Owned(Vec<u8>),
    /// `range` of a shared buffer; a range outside the buffer reads as empty (never made:
    /// the placement builds it from a record it has just decoded).
    Shared(SharedBytes, Range<usize>),
    /// Bytes of its own from the offset on (a value-log record read whole, its header and
    /// key before the value): a scan's cursor gives the buffer back to its
    /// [`crate::values::ResolveMemo`] when it steps on, and the next record read is read
    /// into it ([`crate::values::ResolveMemo::give_back`]). An offset past the end reads as
    /// empty.
    Tail(Vec<u8>, usize),
}

impl Default for ValueBytes<'_> {
    fn default() -> Self {
        ValueBytes::Owned(Vec::new())
    }
}

impl ValueBytes<'_> {
    /// The value as a vector (copied unless owned already).
    pub fn into_owned(self) -> Vec<u8> {
        match self {
            ValueBytes::Owned(v) => v,
            ValueBytes::Tail(mut v, start) => {
                // Moved to the front in place: no second buffer.
                v.drain(..start.min(v.len()));
                v
            }
            other => other.to_vec(),
        }
    }

    /// The same value without the borrow (a borrowed value is copied; a shared one is not).
    pub fn into_static(self) -> ValueBytes<'static> {
        match self {
            ValueBytes::Borrowed(b) => ValueBytes::Owned(b.to_vec()),
            ValueBytes::Owned(v) => ValueBytes::Owned(v),
            ValueBytes::Shared(buf, range) => ValueBytes::Shared(buf, range),
            ValueBytes::Tail(v, start) => ValueBytes::Tail(v, start),
        }
    }
}

impl Deref for ValueBytes<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            ValueBytes::Borrowed(b) => b,
            ValueBytes::Owned(v) => v,
            ValueBytes::Shared(buf, range) => buf.get(range.clone()).unwrap_or_default(),
            ValueBytes::Tail(v, start) => v.get(*start..).unwrap_or_default(),
        }
    }
}

impl AsRef<[u8]> for ValueBytes<'_> {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for ValueBytes<'_> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for ValueBytes<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_reads_its_bytes() {
        let buf: SharedBytes = SharedBytes::from(b"headvaluetail".to_vec());
        let shared = ValueBytes::Shared(buf.clone(), 4..9);
        assert_eq!(&*shared, b"value");
        assert_eq!(shared, ValueBytes::Borrowed(b"value"));
        assert_eq!(shared.clone().into_owned(), b"value".to_vec());
        assert!(matches!(shared.into_static(), ValueBytes::Shared(..)));
        let borrowed = ValueBytes::Borrowed(b"abc");
        assert_eq!(borrowed.into_static(), ValueBytes::Owned(b"abc".to_vec()));
        assert_eq!(&*ValueBytes::Shared(buf, 10..20), b"");
        assert!(ValueBytes::default().is_empty());
        let tail = ValueBytes::Tail(b"headvalue".to_vec(), 4);
        assert_eq!(&*tail, b"value");
        assert!(matches!(tail.clone().into_static(), ValueBytes::Tail(..)));
        assert_eq!(tail.into_owned(), b"value".to_vec());
        assert_eq!(&*ValueBytes::Tail(b"ab".to_vec(), 5), b"");
        assert_eq!(
            ValueBytes::Tail(b"ab".to_vec(), 5).into_owned(),
            b"".to_vec()
        );
    }
}
