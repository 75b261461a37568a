//! The 5-byte block trailer and block compression, for both directions.
//!
//! ```text
//! +------------------------------+-----------+------------------------------------------+
//! | stored block (`size` bytes)  | type: u8  | masked crc32c(stored block ++ type) u32  |
//! +------------------------------+-----------+------------------------------------------+
//! ```
//!
//! Type 0 stores the block as it is. Type 1 stores `varint(uncompressed length)` followed by
//! an LZ4 block (`lz4_flex::block` format). Type 2 stores `varint(uncompressed length)`
//! followed by one Zstandard frame (RFC 8878; written by `ruzstd` at zstd's level 1).

use crate::cache::block_cache::SharedBytes;
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
    if compression == Compression::None || raw.len() > MAX_UNCOMPRESSED_BLOCK {
        return (raw, Compression::None as u8);
    }
    let prefix = varint_len(raw.len() as u64);
    scratch.clear();
    put_varint64(scratch, raw.len() as u64);
    let compressed = match compression {
        Compression::Lz4 => {
            scratch.resize(
                prefix + lz4_flex::block::get_maximum_output_size(raw.len()),
                0,
            );
            match scratch.get_mut(prefix..) {
                Some(out) => lz4_flex::block::compress_into(raw, out)
                    .ok()
                    .map(|n| scratch.truncate(prefix + n))
                    .is_some(),
                None => false,
            }
        }
        Compression::Zstd => {
            ruzstd::encoding::compress(
                raw,
                &mut *scratch,
                ruzstd::encoding::CompressionLevel::Fastest,
            );
            true
        }
        Compression::None => false,
    };
    // Compression must save at least 1/8 to be worth a decompression on every read.
    if compressed && scratch.len() <= raw.len() - raw.len() / 8 {
        return (scratch.as_slice(), compression as u8);
    }
    (raw, Compression::None as u8)
}

/// The trailer for `stored` with type byte `ty`.
pub fn trailer(stored: &[u8], ty: u8) -> [u8; BLOCK_TRAILER_LEN] {
    let crc = mask_crc(crc32c_two(stored, &[ty])).to_le_bytes();
    [ty, crc[0], crc[1], crc[2], crc[3]]
}

/// Check the trailer at the end of `buf` (stored block followed by trailer) when `verify`
/// is set, and return the uncompressed block. An uncompressed block is `buf` itself with
/// its trailer cut off (no copy).
///
/// # Errors
/// A description of a checksum mismatch, an unknown type or a bad compressed payload.
pub fn decode_block(mut buf: Vec<u8>, verify: bool) -> std::result::Result<SharedBytes, String> {
    let (size, ty) = check_trailer(&buf, verify)?;
    if ty == Compression::None as u8 {
        buf.truncate(size);
        return Ok(SharedBytes::from(buf));
    }
    decompress_stored(&buf[..size], ty)
}

/// [`decode_block`] for a stored block lent from a memory map
/// ([`crate::env::ReadFile::read_shared`]): an uncompressed block is a range of `stored`,
/// with no copy; a compressed one is decompressed into a buffer of its own. The flag says
/// which: `true` for a decompressed block (worth keeping in the block cache, as it cost a
/// decompression), `false` for a range of the map (caching it would only hold a second
/// reference to pages the map already serves).
///
/// # Errors
/// As [`decode_block`].
pub fn decode_shared_block(
    stored: SharedBytes,
    verify: bool,
) -> std::result::Result<(SharedBytes, bool), String> {
    let (size, ty) = check_trailer(&stored, verify)?;
    if ty == Compression::None as u8 {
        return Ok((stored.slice(..size), false));
    }
    Ok((decompress_stored(&stored[..size], ty)?, true))
}

/// Whether `buf` (a stored block followed by its trailer) matches its checksum: for a read
/// that did not ask for the check but keeps the block in the block cache, which holds only
/// checked blocks.
pub fn checksum_holds(buf: &[u8]) -> bool {
    check_trailer(buf, true).is_ok()
}

/// Whether `buf` (a stored block followed by its trailer) is stored compressed.
pub fn is_compressed(buf: &[u8]) -> bool {
    buf.len()
        .checked_sub(BLOCK_TRAILER_LEN)
        .and_then(|i| buf.get(i))
        .is_some_and(|&ty| ty != Compression::None as u8)
}

/// The stored length (before the trailer) and compression type of `buf`, a stored block
/// followed by its trailer, with the checksum checked when `verify` is set.
fn check_trailer(buf: &[u8], verify: bool) -> std::result::Result<(usize, u8), String> {
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
    Ok((size, ty))
}

/// A compressed stored block (trailer cut off) of type `ty`, decompressed.
fn decompress_stored(stored: &[u8], ty: u8) -> std::result::Result<SharedBytes, String> {
    match ty {
        t if t == Compression::Lz4 as u8 => decompress_lz4(stored),
        t if t == Compression::Zstd as u8 => decompress_zstd(stored),
        t => Err(format!("unknown block compression type {t}")),
    }
}

/// A compressed block's payload (after its `varint64` uncompressed length), decompressed
/// by `decode` into a buffer of exactly that length. The length must be at most
/// `max_ratio * payload + 64` (when the codec bounds its ratio) and 64 MiB: a flipped length
/// is refused before anything is allocated.
fn decompress(
    stored: &[u8],
    codec: &str,
    max_ratio: Option<usize>,
    decode: impl FnOnce(&[u8], &mut [u8]) -> std::result::Result<usize, String>,
) -> std::result::Result<SharedBytes, String> {
    let (len, n) = decode_varint64(stored)?;
    let payload = stored.get(n..).unwrap_or_default();
    let limit = max_ratio.map_or(MAX_UNCOMPRESSED_BLOCK, |r| {
        MAX_UNCOMPRESSED_BLOCK.min(payload.len().saturating_mul(r).saturating_add(64))
    });
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= limit)
        .ok_or_else(|| {
            format!(
                "compressed block of {} bytes claims an uncompressed size of {len} (limit {limit})",
                payload.len()
            )
        })?;
    let mut out = vec![0u8; len];
    let got =
        decode(payload, &mut out).map_err(|e| format!("{codec} decompression failed: {e}"))?;
    if got != len {
        return Err(format!(
            "{codec} block decompressed to {got} bytes, its header says {len}"
        ));
    }
    Ok(SharedBytes::from(out))
}

fn decompress_lz4(stored: &[u8]) -> std::result::Result<SharedBytes, String> {
    decompress(stored, "lz4", Some(MAX_LZ4_RATIO), |payload, dst| {
        lz4_flex::block::decompress_into(payload, dst).map_err(|e| e.to_string())
    })
}

thread_local! {
    /// One zstd decoder per thread, reused so that its buffers are allocated once.
    static ZSTD_DECODER: std::cell::RefCell<ruzstd::decoding::FrameDecoder> =
        std::cell::RefCell::new(ruzstd::decoding::FrameDecoder::new());
}

fn decompress_zstd(stored: &[u8]) -> std::result::Result<SharedBytes, String> {
    decompress(stored, "zstd", None, |payload, dst| {
        // The decoder returns errors for damaged frames; a panic in it on some input it
        // does not expect must still not take the reader down with it.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ZSTD_DECODER.with(|d| d.borrow_mut().decode_all(payload, dst))
        }))
        .map_err(|_| "the decoder panicked".to_string())?
        .map_err(|e| e.to_string())
    })
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
            for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
                let s = stored(raw, c);
                assert_eq!(&*decode_block(s, true).unwrap(), raw);
            }
        }
        for c in [Compression::Lz4, Compression::Zstd] {
            let s = stored(&compressible, c);
            assert!(s.len() < 2000, "{c:?}: {}", s.len());
            assert_eq!(s[s.len() - BLOCK_TRAILER_LEN], c as u8);
            // incompressible data is stored as is
            let s = stored(&random, c);
            assert_eq!(s[random.len()], Compression::None as u8);
        }
    }

    #[test]
    fn bad_blocks_rejected() {
        let raw: Vec<u8> = (0..4000u32).map(|i| (i % 13) as u8).collect();
        for c in [Compression::Lz4, Compression::Zstd] {
            let s = stored(&raw, c);
            for i in 0..s.len() {
                for bit in [0x01, 0x04, 0x80] {
                    let mut bad = s.clone();
                    bad[i] ^= bit;
                    assert!(
                        decode_block(bad.clone(), true).is_err(),
                        "{c:?}: flip at {i} accepted"
                    );
                    // without checksums: an error or some bytes, never a panic
                    let _ = decode_block(bad, false);
                }
            }
        }
        assert!(decode_block(stored(&raw, Compression::Lz4)[..3].to_vec(), true).is_err());
        // an absurd uncompressed length is refused before allocating
        let mut huge = Vec::new();
        put_varint64(&mut huge, 1 << 40);
        huge.extend_from_slice(&[0u8; 10]);
        let t = trailer(&huge, 1);
        huge.extend_from_slice(&t);
        assert!(
            decode_block(huge, true)
                .unwrap_err()
                .contains("uncompressed size")
        );
        // unknown type
        let mut u = b"abc".to_vec();
        u.extend_from_slice(&trailer(b"abc", 9));
        assert!(decode_block(u, true).unwrap_err().contains("type 9"));
    }
}
