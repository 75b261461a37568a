//! The 5-byte block trailer and block compression, for both directions.
//!
//! ```text
//! +------------------------------+-----------+------------------------------------------+
//! | stored block (`size` bytes)  | type: u8  | masked crc32c(stored block ++ type) u32  |
//! +------------------------------+-----------+------------------------------------------+
//! ```
//!
//! Type 0 stores the block as it is. Type 1 stores `varint(uncompressed length)` followed by
//! an LZ4 block (`lz4_flex::block` format).

use std::sync::Arc;

use crate::format::{crc32c_two, decode_fixed32, decode_varint64, mask_crc, put_varint64};
use crate::format::{unmask_crc, varint_len};
use crate::options::Compression;

use super::footer::BLOCK_TRAILER_LEN;

/// Blocks larger than this are never compressed, and a compressed block claiming to expand
/// beyond it is rejected as corrupt.
pub const MAX_UNCOMPRESSED_BLOCK: usize = 64 << 20;

/// LZ4 cannot expand data by more than about 255x; a larger claim is corruption, and
/// rejecting it before allocating keeps a flipped length from costing 64 MiB.
const MAX_LZ4_RATIO: usize = 256;

/// Encode `raw` for storage. Returns the bytes to write and the type byte. `scratch` holds
/// the compressed form between calls so its allocation is reused.
pub fn encode_block<'a>(
    raw: &'a [u8],
    compression: Compression,
    scratch: &'a mut Vec<u8>,
) -> (&'a [u8], u8) {
    if compression == Compression::Lz4 && raw.len() <= MAX_UNCOMPRESSED_BLOCK {
        let prefix = varint_len(raw.len() as u64);
        scratch.clear();
        put_varint64(scratch, raw.len() as u64);
        scratch.resize(
            prefix + lz4_flex::block::get_maximum_output_size(raw.len()),
            0,
        );
        if let Some(out) = scratch.get_mut(prefix..)
            && let Ok(n) = lz4_flex::block::compress_into(raw, out)
        {
            let total = prefix + n;
            // Compression must save at least 1/8 to be worth a decompression on every read.
            if total <= raw.len() - raw.len() / 8 {
                scratch.truncate(total);
                return (scratch.as_slice(), Compression::Lz4 as u8);
            }
        }
    }
    (raw, Compression::None as u8)
}

/// The trailer for `stored` with type byte `ty`.
pub fn trailer(stored: &[u8], ty: u8) -> [u8; BLOCK_TRAILER_LEN] {
    let crc = mask_crc(crc32c_two(stored, &[ty])).to_le_bytes();
    [ty, crc[0], crc[1], crc[2], crc[3]]
}

/// Check the trailer at the end of `buf` (stored block followed by trailer) when `verify`
/// is set, and return the uncompressed block.
///
/// # Errors
/// A description of a checksum mismatch, an unknown type or a bad compressed payload.
pub fn decode_block(buf: &[u8], verify: bool) -> std::result::Result<Arc<[u8]>, String> {
    let size = buf
        .len()
        .checked_sub(BLOCK_TRAILER_LEN)
        .ok_or_else(|| format!("block of {} bytes is shorter than its trailer", buf.len()))?;
    let (stored, tr) = buf.split_at(size);
    let ty = tr.first().copied().unwrap_or_default();
    if verify {
        let expected = unmask_crc(decode_fixed32(tr, 1)?);
        let actual = crc32c_two(stored, &[ty]);
        if expected != actual {
            return Err(format!(
                "block checksum mismatch: stored {expected:#010x}, computed {actual:#010x} over {size} bytes"
            ));
        }
    }
    match ty {
        t if t == Compression::None as u8 => Ok(Arc::from(stored)),
        t if t == Compression::Lz4 as u8 => decompress_lz4(stored),
        t => Err(format!("unknown block compression type {t}")),
    }
}

fn decompress_lz4(stored: &[u8]) -> std::result::Result<Arc<[u8]>, String> {
    let (len, n) = decode_varint64(stored)?;
    let payload = stored.get(n..).unwrap_or_default();
    let limit = MAX_UNCOMPRESSED_BLOCK.min(
        payload
            .len()
            .saturating_mul(MAX_LZ4_RATIO)
            .saturating_add(64),
    );
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= limit)
        .ok_or_else(|| {
            format!(
                "compressed block of {} bytes claims an uncompressed size of {len} (limit {limit})",
                payload.len()
            )
        })?;
    // Collecting a trusted-length iterator allocates the shared block once; we then
    // decompress straight into it while we still hold the only reference.
    let mut out: Arc<[u8]> = std::iter::repeat_n(0u8, len).collect();
    let dst = Arc::get_mut(&mut out).ok_or_else(|| "block buffer is shared".to_string())?;
    let got = lz4_flex::block::decompress_into(payload, dst)
        .map_err(|e| format!("lz4 decompression failed: {e}"))?;
    if got != len {
        return Err(format!(
            "lz4 block decompressed to {got} bytes, its header says {len}"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(raw: &[u8], c: Compression) -> Vec<u8> {
        let mut scratch = Vec::new();
        let (s, ty) = encode_block(raw, c, &mut scratch);
        let mut v = s.to_vec();
        v.extend_from_slice(&trailer(s, ty));
        v
    }

    #[test]
    fn round_trips() {
        let compressible: Vec<u8> = (0..5000u32).flat_map(|i| (i % 7).to_le_bytes()).collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let random: Vec<u8> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        for raw in [&compressible[..], &random[..], b""] {
            for c in [Compression::None, Compression::Lz4] {
                let s = stored(raw, c);
                assert_eq!(&*decode_block(&s, true).unwrap(), raw);
            }
        }
        assert!(stored(&compressible, Compression::Lz4).len() < 2000);
        // incompressible data is stored as is
        let s = stored(&random, Compression::Lz4);
        assert_eq!(s[random.len()], Compression::None as u8);
    }

    #[test]
    fn bad_blocks_rejected() {
        let raw = vec![3u8; 4000];
        let s = stored(&raw, Compression::Lz4);
        for i in 0..s.len() {
            let mut bad = s.clone();
            bad[i] ^= 0x04;
            assert!(decode_block(&bad, true).is_err(), "flip at {i} accepted");
            // without checksums: an error or some bytes, never a panic
            let _ = decode_block(&bad, false);
        }
        assert!(decode_block(&s[..3], true).is_err());
        // an absurd uncompressed length is refused before allocating
        let mut huge = Vec::new();
        put_varint64(&mut huge, 1 << 40);
        huge.extend_from_slice(&[0u8; 10]);
        let t = trailer(&huge, 1);
        huge.extend_from_slice(&t);
        assert!(
            decode_block(&huge, true)
                .unwrap_err()
                .contains("uncompressed size")
        );
        // unknown type
        let mut u = b"abc".to_vec();
        u.extend_from_slice(&trailer(b"abc", 9));
        assert!(decode_block(&u, true).unwrap_err().contains("type 9"));
    }
}
