use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::iter::InternalIterator;
use crate::key::{ValueKind, make_internal_key};

fn entries(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    // Several versions per user key, long shared prefixes, some empty values.
    (0..n)
        .map(|i| {
            let user = format!("user-key-{:05}", i / 3 * 2);
            let seq = 1000 - (i % 3) as u64;
            let value = if i % 7 == 0 {
                Vec::new()
            } else {
                format!("value-{i}").repeat(i % 5 + 1).into_bytes()
            };
            (
                make_internal_key(user.as_bytes(), seq, ValueKind::Value),
                value,
            )
        })
        .collect()
}

fn build(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Block {
    let mut b = BlockBuilder::new(interval);
    for (k, v) in entries {
        b.add(k, v);
    }
    let est = b.estimated_size();
    let bytes = b.finish().to_vec();
    assert_eq!(bytes.len(), est);
    Block::new(bytes.into()).unwrap()
}

fn iter(b: &Block) -> BlockIter {
    b.iter(Arc::from(Path::new("test.sst")), 0)
}

fn seek_key(user: &str, seq: u64) -> Vec<u8> {
    crate::key::seek_key(user.as_bytes(), seq)
}

#[test]
fn round_trips_at_every_interval() {
    let es = entries(200);
    for interval in [1, 2, 16] {
        let block = build(&es, interval);
        let mut it = iter(&block);

        // forward
        it.seek_to_first().unwrap();
        for (k, v) in &es {
            assert!(it.valid());
            assert_eq!(it.key(), &k[..]);
            assert_eq!(it.value(), &v[..]);
            it.next().unwrap();
        }
        assert!(!it.valid());

        // backward
        it.seek_to_last().unwrap();
        for (k, v) in es.iter().rev() {
            assert!(it.valid());
            assert_eq!(it.key(), &k[..]);
            assert_eq!(it.value(), &v[..]);
            it.prev().unwrap();
        }
        assert!(!it.valid());

        // seek to every key, then step both ways
        for (i, (k, _)) in es.iter().enumerate() {
            it.seek(k).unwrap();
            assert_eq!(it.key(), &k[..], "interval {interval} key {i}");
            if i > 0 {
                it.prev().unwrap();
                assert_eq!(it.key(), &es[i - 1].0[..]);
                it.next().unwrap();
                assert_eq!(it.key(), &k[..]);
            }
        }
    }
}

#[test]
fn seeks_between_before_and_after() {
    let es = entries(100);
    for interval in [1, 2, 16] {
        let block = build(&es, interval);
        let mut it = iter(&block);
        // before the first key
        it.seek(&seek_key("a", 5)).unwrap();
        assert_eq!(it.key(), &es[0].0[..]);
        // after the last key
        it.seek(&seek_key("zzz", 5)).unwrap();
        assert!(!it.valid());
        // a user key that is absent (odd numbers are missing) lands on the next present one
        it.seek(&seek_key("user-key-00003", 5000)).unwrap();
        assert_eq!(crate::key::user_key(it.key()), b"user-key-00004");
        // a snapshot between versions lands on the newest visible version
        it.seek(&seek_key("user-key-00004", 999)).unwrap();
        let p = crate::key::parse_internal_key(it.key()).unwrap();
        assert_eq!((p.user_key, p.seq), (&b"user-key-00004"[..], 999));
        // a snapshot older than every version of a key lands on the next user key
        it.seek(&seek_key("user-key-00004", 10)).unwrap();
        assert_eq!(crate::key::user_key(it.key()), b"user-key-00006");
        // seek_for_prev
        it.seek_for_prev(&seek_key("user-key-00003", 5000)).unwrap();
        assert_eq!(it.key(), &es[5].0[..]);
        it.seek_for_prev(&seek_key("a", 5)).unwrap();
        assert!(!it.valid());
    }
}

#[test]
fn empty_and_single_entry_blocks() {
    let empty = build(&[], 16);
    let mut it = iter(&empty);
    it.seek_to_first().unwrap();
    assert!(!it.valid());
    it.seek_to_last().unwrap();
    assert!(!it.valid());
    it.seek(&seek_key("x", 1)).unwrap();
    assert!(!it.valid());

    let one = entries(1);
    let b = build(&one, 16);
    let mut it = iter(&b);
    it.seek_to_last().unwrap();
    assert_eq!(it.key(), &one[0].0[..]);
    it.prev().unwrap();
    assert!(!it.valid());
}

#[test]
fn reset_reuses_the_iterator() {
    let a = entries(40);
    let b: Vec<_> = entries(80).into_iter().skip(40).collect();
    let (ba, bb) = (build(&a, 4), build(&b, 4));
    let mut it = iter(&ba);
    it.seek_to_last().unwrap();
    it.cursor().reset(bb, 4096);
    assert!(!it.valid());
    assert_eq!(it.cursor().block_offset(), 4096);
    it.seek_to_first().unwrap();
    assert_eq!(it.key(), &b[0].0[..]);
    it.next().unwrap();
    // the second key shares a prefix, so it lives in the buffer and is handed over
    let k = it.cursor().take_key();
    assert_eq!(k, b[1].0);
    assert!(!it.valid());
    // a key read in place is copied
    it.seek_to_first().unwrap();
    assert_eq!(it.cursor().take_key(), b[0].0);
}

#[test]
fn bad_trailers_rejected() {
    assert!(Block::new(Vec::new().into()).is_err());
    assert!(Block::new(b"\x01\0\0".to_vec().into()).is_err());
    // zero restarts
    assert!(Block::new([0u8, 0, 0, 0].to_vec().into()).is_err());
    // more restarts than fit
    assert!(Block::new([0u8, 0, 0, 0, 2, 0, 0, 0].to_vec().into()).is_err());
}

/// Drive every movement over a damaged block: each may fail, none may panic or loop.
fn exercise(block: Block) -> crate::Result<usize> {
    let mut it = iter(&block);
    let mut n = 0;
    it.seek_to_first()?;
    while it.valid() && n < 10_000 {
        let _ = (it.key(), it.value());
        it.next()?;
        n += 1;
    }
    it.seek_to_last()?;
    while it.valid() && n < 20_000 {
        it.prev()?;
        n += 1;
    }
    it.seek(&seek_key("user-key-00050", 999))?;
    if it.valid() {
        it.prev()?;
    }
    Ok(n)
}

#[test]
fn corrupt_blocks_never_panic() {
    let es = entries(60);
    for interval in [1, 3, 16] {
        let good = build(&es, interval).data().to_vec();
        for pos in 0..good.len() {
            for bit in [0x01u8, 0x10, 0x80] {
                let mut bad = good.clone();
                bad[pos] ^= bit;
                if let Ok(block) = Block::new(bad.into())
                    && let Err(e) = exercise(block)
                {
                    assert!(e.is_corruption(), "{e}");
                    assert!(e.to_string().contains("test.sst"), "{e}");
                }
            }
        }
        // truncations that keep a plausible restart count
        for cut in 0..good.len() {
            if let Ok(block) = Block::new(good[..cut].to_vec().into()) {
                let _ = exercise(block);
            }
        }
    }
}

#[test]
fn errors_leave_the_iterator_invalid() {
    let es = entries(20);
    let mut bytes = build(&es, 4).data().to_vec();
    // Point the last restart past the entries.
    let n = bytes.len();
    let restarts_off = n - 4 - 4 * 5;
    bytes[restarts_off + 16..restarts_off + 20].copy_from_slice(&(n as u32).to_le_bytes());
    let block = Block::new(bytes.into()).unwrap();
    let mut it = iter(&block);
    let e = it.seek_to_last().unwrap_err();
    assert!(e.is_corruption());
    assert!(!it.valid());
}
