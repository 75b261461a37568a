//! The block cache: decoded blocks under a byte budget (the table cache, open tables under
//! a file-count budget, is the table format's: `table::cache`).

pub mod block_cache;

/// A fast hasher for the caches' integer keys (file number, block offset). The keys are not
/// attacker-chosen in a way that matters here, so SipHash's protection buys nothing and
/// costs a visible share of a cached read.
#[derive(Default, Clone, Copy)]
pub(crate) struct IntHasher(u64);

impl std::hash::Hasher for IntHasher {
    fn finish(&self) -> u64 {
        // A final avalanche so that the low bits the table uses depend on every input bit.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(29) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// `BuildHasher` for [`IntHasher`].
pub(crate) type IntHashBuilder = std::hash::BuildHasherDefault<IntHasher>;
