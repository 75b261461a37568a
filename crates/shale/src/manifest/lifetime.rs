//! The store's counters since it was created (MANIFEST tag 19, `docs/format/manifest.md`):
//! user writes and the bytes written for each cause, carried by every edit so that they
//! survive restarts. A crash loses what was counted after the last committed edit (at most
//! one memtable's worth of writes and the log bytes behind them).

use crate::env::WriteCause;
use crate::format::{Reader, put_varint64};

/// On-disk code of each write cause in the record. Never renumber.
fn cause_code(c: WriteCause) -> u8 {
    match c {
        WriteCause::Wal => 1,
        WriteCause::Flush => 2,
        WriteCause::Compaction => 3,
        WriteCause::Manifest => 4,
        WriteCause::Vlog => 5,
        WriteCause::Gc => 6,
        WriteCause::Other => 7,
    }
}

/// Counters since the store was created.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lifetime {
    /// Key and value bytes of every put and delete accepted.
    pub user_bytes: u64,
    /// Puts and deletes accepted.
    pub user_ops: u64,
    /// Memtable flushes.
    pub flushes: u64,
    /// Compactions (moves included).
    pub compactions: u64,
    /// Bytes written to storage, by cause (indexed as [`WriteCause::ALL`]).
    pub written: [u64; WriteCause::ALL.len()],
}

impl Lifetime {
    /// `self` plus `other`, field by field.
    pub fn plus(&self, other: &Lifetime) -> Lifetime {
        let mut written = self.written;
        for (w, o) in written.iter_mut().zip(other.written) {
            *w = w.saturating_add(o);
        }
        Lifetime {
            user_bytes: self.user_bytes.saturating_add(other.user_bytes),
            user_ops: self.user_ops.saturating_add(other.user_ops),
            flushes: self.flushes.saturating_add(other.flushes),
            compactions: self.compactions.saturating_add(other.compactions),
            written,
        }
    }

    /// The record's bytes: version 1, the four counters as varints, the number of causes,
    /// then (cause code u8, bytes varint) for each cause with bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(1);
        for v in [
            self.user_bytes,
            self.user_ops,
            self.flushes,
            self.compactions,
        ] {
            put_varint64(out, v);
        }
        let causes: Vec<(u8, u64)> = WriteCause::ALL
            .iter()
            .zip(self.written)
            .filter(|&(_, n)| n > 0)
            .map(|(&c, n)| (cause_code(c), n))
            .collect();
        put_varint64(out, causes.len() as u64);
        for (code, n) in causes {
            out.push(code);
            put_varint64(out, n);
        }
    }

    /// Read a record written by [`Lifetime::encode`]. A cause code this build does not know
    /// is skipped (a newer build may count more causes).
    ///
    /// # Errors
    /// A description of a truncated record or an unknown version.
    pub fn decode(bytes: &[u8]) -> Result<Lifetime, String> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        if version != 1 {
            return Err(format!("lifetime counters of unknown version {version}"));
        }
        let mut l = Lifetime {
            user_bytes: r.varint64()?,
            user_ops: r.varint64()?,
            flushes: r.varint64()?,
            compactions: r.varint64()?,
            ..Lifetime::default()
        };
        let n = r.varint64()?;
        for _ in 0..n {
            let code = r.u8()?;
            let bytes = r.varint64()?;
            if let Some(i) = WriteCause::ALL.iter().position(|&c| cause_code(c) == code) {
                l.written[i] = bytes;
            }
        }
        if !r.is_empty() {
            return Err(format!(
                "{} bytes follow the lifetime counters",
                r.remaining()
            ));
        }
        Ok(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage() {
        let mut l = Lifetime {
            user_bytes: 1 << 40,
            user_ops: 12345,
            flushes: 7,
            compactions: 3,
            ..Lifetime::default()
        };
        l.written[0] = 999;
        l.written[2] = 1 << 33;
        let mut b = Vec::new();
        l.encode(&mut b);
        assert_eq!(Lifetime::decode(&b).unwrap(), l);
        assert_eq!(l.plus(&l).written[2], 2 << 33);
        assert!(Lifetime::decode(&b[..b.len() - 1]).is_err());
        let mut extra = b.clone();
        extra.push(0);
        assert!(Lifetime::decode(&extra).is_err());
        assert!(Lifetime::decode(&[2]).unwrap_err().contains("version 2"));
        // A cause a newer build counts is skipped.
        let newer = [1, 0, 0, 0, 0, 1, 99, 5];
        assert_eq!(Lifetime::decode(&newer).unwrap(), Lifetime::default());
    }
}
