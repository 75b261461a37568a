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

/// Scan `bytes` as a whole value-log segment numbered 1, as replay and garbage collection
/// do: check the header, then read records until the end or the first bad one. Returns the
/// number of whole records read, or `None` if the header is refused.
pub fn scan_vlog_segment(bytes: &[u8]) -> Option<usize> {
    use crate::env::{Env, ReadCause, WriteCause};
    use crate::values::vlog::format::{HEADER_LEN, check_header};
    use crate::values::vlog::reader::SegmentScanner;
    let env = Env::memory();
    let path = std::path::Path::new("/000001.vlog");
    let mut f = env.create(path, WriteCause::Other).ok()?;
    f.append(bytes).ok()?;
    f.sync().ok()?;
    let file = env.open(path).ok()?;
    check_header(bytes.get(..HEADER_LEN as usize)?, 1, 1).ok()?;
    let mut scan = SegmentScanner::new(file, bytes.len() as u64, HEADER_LEN, ReadCause::Other);
    let mut n = 0;
    while let Ok(Ok(rec)) = scan.next() {
        assert!(rec.offset + rec.len <= bytes.len() as u64);
        n += 1;
    }
    Some(n)
}
