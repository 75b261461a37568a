//! Entry points for the fuzz targets in `fuzz/` that reach decoders the public API keeps
//! private. Not part of the API: hidden from the docs and free to change.

use crate::wal::WriteBatch;

/// Decode `bytes` as a logged write batch (what WAL replay does) and walk its entries.
/// Returns the entry count the batch declares and the number of entries its iterator
/// yielded, which must agree for any batch the decoder accepts; `None` if it is rejected.
pub fn decode_batch(bytes: &[u8]) -> Option<(usize, usize)> {
    let batch = WriteBatch::from_data(bytes.to_vec()).ok()?;
    let _ = batch.sequence();
    let walked = batch.iter().count();
    Some((batch.len(), walked))
}
