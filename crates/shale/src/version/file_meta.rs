//! What the engine knows about one table file without opening it.

use crate::key::SeqNo;

/// Metadata of one table file, as recorded in the MANIFEST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// The file number: the table lives in `{number:06}.sst`.
    pub number: u64,
    /// File size in bytes.
    pub size: u64,
    /// Smallest internal key in the file.
    pub smallest: Vec<u8>,
    /// Largest internal key in the file.
    pub largest: Vec<u8>,
    /// Smallest sequence number of any entry in the file.
    pub smallest_seq: SeqNo,
    /// Largest sequence number of any entry in the file.
    pub largest_seq: SeqNo,
    /// Number of entries (puts and tombstones).
    pub entries: u64,
    /// Number of tombstones among the entries.
    pub tombstones: u64,
}

impl FileMeta {
    /// The smallest user key in the file.
    pub fn smallest_user_key(&self) -> &[u8] {
        crate::key::user_key(&self.smallest)
    }
    /// The largest user key in the file.
    pub fn largest_user_key(&self) -> &[u8] {
        crate::key::user_key(&self.largest)
    }
    /// Whether the file's user-key range intersects `[lo, hi]` (either bound may be open).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        let below = hi.is_some_and(|h| self.smallest_user_key() > h);
        let above = lo.is_some_and(|l| self.largest_user_key() < l);
        !(below || above)
    }
}
