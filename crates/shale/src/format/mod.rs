//! Encoding primitives shared by every file kind: varints, fixed-width integers, checksums.
//!
//! All fixed-width integers on disk are little-endian. Decoders never trust a length: every
//! `get_*` function checks that the bytes it needs are there and returns `Err(description)`
//! otherwise; the caller, which knows the file and offset, turns that into
//! [`crate::Error::Corruption`].

/// CRC32C (Castagnoli) of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC32C of the concatenation of `a` and `b`, without copying.
#[inline]
pub fn crc32c_two(a: &[u8], b: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(a), b)
}

const MASK_DELTA: u32 = 0xa282_ead8;

/// Mask a CRC before storing it, as LevelDB does, so that a CRC of data that itself contains
/// CRCs does not degenerate.
#[inline]
pub fn mask_crc(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Undo [`mask_crc`].
#[inline]
pub fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// Append `v` as a LEB128 varint (at most 10 bytes).
#[inline]
pub fn put_varint64(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Append `v` as a LEB128 varint (at most 5 bytes).
#[inline]
pub fn put_varint32(buf: &mut Vec<u8>, v: u32) {
    put_varint64(buf, u64::from(v));
}

/// Number of bytes [`put_varint64`] writes for `v`.
#[inline]
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Append a varint length followed by the bytes.
#[inline]
pub fn put_length_prefixed(buf: &mut Vec<u8>, data: &[u8]) {
    put_varint64(buf, data.len() as u64);
    buf.extend_from_slice(data);
}

/// Append a little-endian u32.
#[inline]
pub fn put_fixed32(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Append a little-endian u64.
#[inline]
pub fn put_fixed64(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Decode a varint from the front of `src`; returns the value and the bytes it used.
#[inline]
pub fn decode_varint64(src: &[u8]) -> Result<(u64, usize), String> {
    let mut result: u64 = 0;
    for (i, &b) in src.iter().enumerate().take(10) {
        let part = u64::from(b & 0x7f);
        if i == 9 && b > 1 {
            return Err("varint overflows 64 bits".to_string());
        }
        result |= part << (7 * i);
        if b & 0x80 == 0 {
            return Ok((result, i + 1));
        }
    }
    if src.len() >= 10 {
        Err("varint longer than 10 bytes".to_string())
    } else {
        Err(format!("truncated varint ({} bytes available)", src.len()))
    }
}

/// Decode a varint that must fit in 32 bits.
#[inline]
pub fn decode_varint32(src: &[u8]) -> Result<(u32, usize), String> {
    let (v, n) = decode_varint64(src)?;
    let v = u32::try_from(v).map_err(|_| format!("varint {v} does not fit in 32 bits"))?;
    Ok((v, n))
}

/// Read a little-endian u32 at `pos`.
#[inline]
pub fn decode_fixed32(src: &[u8], pos: usize) -> Result<u32, String> {
    let b = src
        .get(pos..pos.saturating_add(4))
        .ok_or_else(|| format!("truncated: need 4 bytes at {pos}, have {}", src.len()))?;
    let mut a = [0u8; 4];
    a.copy_from_slice(b);
    Ok(u32::from_le_bytes(a))
}

/// Read a little-endian u64 at `pos`.
#[inline]
pub fn decode_fixed64(src: &[u8], pos: usize) -> Result<u64, String> {
    let b = src
        .get(pos..pos.saturating_add(8))
        .ok_or_else(|| format!("truncated: need 8 bytes at {pos}, have {}", src.len()))?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Ok(u64::from_le_bytes(a))
}

/// A cursor over a byte slice for decoders: every read is bounds-checked.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Start reading at the front of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// True when every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    /// Read a varint.
    pub fn varint64(&mut self) -> Result<u64, String> {
        let (v, n) = decode_varint64(&self.buf[self.pos..])?;
        self.pos += n;
        Ok(v)
    }
    /// Read a varint that fits in 32 bits.
    pub fn varint32(&mut self) -> Result<u32, String> {
        let (v, n) = decode_varint32(&self.buf[self.pos..])?;
        self.pos += n;
        Ok(v)
    }
    /// Read a little-endian u32.
    pub fn fixed32(&mut self) -> Result<u32, String> {
        let v = decode_fixed32(self.buf, self.pos)?;
        self.pos += 4;
        Ok(v)
    }
    /// Read a little-endian u64.
    pub fn fixed64(&mut self) -> Result<u64, String> {
        let v = decode_fixed64(self.buf, self.pos)?;
        self.pos += 8;
        Ok(v)
    }
    /// Read one byte.
    pub fn u8(&mut self) -> Result<u8, String> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| "truncated: need 1 byte".to_string())?;
        self.pos += 1;
        Ok(b)
    }
    /// Read exactly `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.remaining() {
            return Err(format!(
                "length {n} exceeds the {} bytes that remain",
                self.remaining()
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    /// Read a varint length and then that many bytes.
    #[inline]
    pub fn length_prefixed(&mut self) -> Result<&'a [u8], String> {
        // Most lengths (keys, small values) take one byte: read those without the general
        // varint loop.
        if let Some(&b) = self.buf.get(self.pos)
            && b < 0x80
        {
            let start = self.pos + 1;
            if let Some(s) = self.buf.get(start..start + b as usize) {
                self.pos = start + b as usize;
                return Ok(s);
            }
        }
        let n = self.varint64()?;
        let n = usize::try_from(n).map_err(|_| format!("length {n} too large"))?;
        self.bytes(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip() {
        for v in [0u64, 1, 127, 128, 300, 1 << 32, u64::MAX - 1, u64::MAX] {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            assert_eq!(b.len(), varint_len(v));
            assert_eq!(decode_varint64(&b).unwrap(), (v, b.len()));
        }
    }

    #[test]
    fn bad_varints_rejected() {
        assert!(decode_varint64(&[]).is_err());
        assert!(decode_varint64(&[0x80, 0x80]).is_err());
        assert!(decode_varint64(&[0xff; 11]).is_err());
        assert!(
            decode_varint64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]).is_err()
        );
        assert!(decode_varint32(&[0xff, 0xff, 0xff, 0xff, 0x1f]).is_err());
    }

    #[test]
    fn reader_checks_lengths() {
        let mut b = Vec::new();
        put_length_prefixed(&mut b, b"hello");
        put_fixed32(&mut b, 9);
        let mut r = Reader::new(&b);
        assert_eq!(r.length_prefixed().unwrap(), b"hello");
        assert_eq!(r.fixed32().unwrap(), 9);
        assert!(r.is_empty());
        assert!(r.u8().is_err());
        let mut bad = Vec::new();
        put_varint64(&mut bad, 1 << 40);
        assert!(Reader::new(&bad).length_prefixed().is_err());
        // A one-byte length past the end (the fast path) and a two-byte one.
        let mut r = Reader::new(&[3, b'a', b'b']);
        let e = r.length_prefixed().unwrap_err();
        assert!(e.contains("exceeds"), "{e}");
        let mut long = Vec::new();
        put_length_prefixed(&mut long, &[7u8; 300]);
        let mut r = Reader::new(&long);
        assert_eq!(r.length_prefixed().unwrap(), &[7u8; 300][..]);
        assert!(r.is_empty());
    }

    #[test]
    fn crc_mask_round_trip() {
        let c = crc32c(b"shale");
        assert_ne!(mask_crc(c), c);
        assert_eq!(unmask_crc(mask_crc(c)), c);
        assert_eq!(crc32c_two(b"sha", b"le"), c);
    }
}
