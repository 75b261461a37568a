use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::cache::block_cache::BlockCache;
use crate::env::{Env, ReadCause, WriteCause};
use crate::iter::InternalIterator;
use crate::key::{self, MAX_SEQNO, ValueKind, make_internal_key};
use crate::options::{Compression, TableOptions};
use crate::table::format::TableRead;
use crate::table::test_fs::TestFs;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Sorted entries: user keys with 1..=3 versions each (some tombstones), values of varied
/// length. Even user-key numbers only, so odd numbers are known to be absent.
fn entries(n: usize) -> Entries {
    let mut out = Vec::with_capacity(n);
    let mut i = 0u64;
    while out.len() < n {
        let user = format!("key-{:08}", i * 2);
        let versions = 1 + i % 3;
        for v in 0..versions {
            let seq = 10_000 + i * 4 - v;
            let kind = if (i + v).is_multiple_of(11) {
                ValueKind::Delete
            } else {
                ValueKind::Value
            };
            let value = if kind == ValueKind::Delete {
                Vec::new()
            } else {
                format!("value-{i}-{v}-")
                    .repeat((i % 9) as usize + 1)
                    .into_bytes()
            };
            out.push((make_internal_key(user.as_bytes(), seq, kind), value));
        }
        i += 1;
    }
    out.truncate(n);
    out
}

fn opts(compression: Compression) -> TableOptions {
    TableOptions {
        block_size: 1024,
        block_restart_interval: 16,
        bloom_bits_per_key: 10,
        compression,
    }
}

fn write(env: &Env, path: &Path, es: &Entries, o: &TableOptions) -> TableSummary {
    let f = env.create(path, WriteCause::Flush).unwrap();
    let mut b = TableBuilder::new(f, o);
    for (k, v) in es {
        b.add(k, v).unwrap();
    }
    assert_eq!(b.num_entries(), es.len() as u64);
    b.finish().unwrap()
}

fn open(
    env: &Env,
    path: &Path,
    cache: Option<Arc<BlockCache>>,
    verify: bool,
) -> crate::Result<Arc<Table>> {
    Table::open(env.open(path)?, 7, cache, verify).map(Arc::new)
}

fn setup(n: usize, c: Compression) -> (TestFs, Env, PathBuf, Entries) {
    let (fs, env) = TestFs::env();
    let path = PathBuf::from("/db/000007.sst");
    let es = entries(n);
    write(&env, &path, &es, &opts(c));
    (fs, env, path, es)
}

fn collect_forward(t: &Arc<Table>) -> crate::Result<Entries> {
    let mut it = t.iter(ReadCause::Scan);
    let mut out = Vec::new();
    it.seek_to_first()?;
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next()?;
    }
    Ok(out)
}

#[test]
fn get_every_key_and_absent_keys() {
    for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
        for cached in [false, true] {
            let (_fs, env, path, es) = setup(10_000, c);
            let cache = cached.then(|| Arc::new(BlockCache::new(1 << 20)));
            let t = open(&env, &path, cache.clone(), true).unwrap();
            assert!(t.properties().num_data_blocks > 20, "want several blocks");
            for (k, v) in &es {
                let p = key::parse_internal_key(k).unwrap();
                // seeking at exactly this entry's sequence number finds it
                let sk = key::seek_key(p.user_key, p.seq);
                let got = t.get(p.user_key, &sk, ReadCause::Get).unwrap();
                assert_eq!(got, Some((k.clone(), v.clone())));
            }
            // at the newest snapshot, each user key yields its newest version
            let mut prev_user: &[u8] = b"";
            for (k, _) in &es {
                let u = key::user_key(k);
                if u != prev_user {
                    let got = t
                        .get(u, &key::seek_key(u, MAX_SEQNO), ReadCause::Get)
                        .unwrap();
                    assert_eq!(got.unwrap().0, *k);
                    prev_user = u;
                }
            }
            // absent user keys, and snapshots older than every version
            for i in [0u64, 1, 777, 3333, 9999, 99_999] {
                let u = format!("key-{:08}", i * 2 + 1);
                let sk = key::seek_key(u.as_bytes(), MAX_SEQNO);
                assert_eq!(t.get(u.as_bytes(), &sk, ReadCause::Get).unwrap(), None);
            }
            let first = key::user_key(&es[0].0).to_vec();
            assert_eq!(
                t.get(&first, &key::seek_key(&first, 1), ReadCause::Get)
                    .unwrap(),
                None
            );
            for u in [&b""[..], b"a", b"zzzz"] {
                assert_eq!(
                    t.get(u, &key::seek_key(u, MAX_SEQNO), ReadCause::Get)
                        .unwrap(),
                    None
                );
            }
            if let Some(c) = cache {
                assert!(c.hits() > 0);
            }
            t.verify().unwrap();
        }
    }
}

#[test]
fn iterate_both_ways_and_seek() {
    for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let (_fs, env, path, es) = setup(10_000, c);
        let t = open(&env, &path, Some(Arc::new(BlockCache::new(1 << 20))), true).unwrap();
        assert_eq!(collect_forward(&t).unwrap(), es);

        let mut it = t.iter(ReadCause::Scan);
        it.seek_to_last().unwrap();
        for (k, v) in es.iter().rev() {
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            it.prev().unwrap();
        }
        assert!(!it.valid());

        for (i, (k, _)) in es.iter().enumerate().step_by(7) {
            it.seek(k).unwrap();
            assert_eq!(it.key(), &k[..]);
            if i > 0 {
                it.prev().unwrap();
                assert_eq!(it.key(), &es[i - 1].0[..]);
                it.next().unwrap();
            }
            it.next().unwrap();
            match es.get(i + 1) {
                Some(n) => assert_eq!(it.key(), &n.0[..]),
                None => assert!(!it.valid()),
            }
        }
        // between keys: an absent user key lands on the next present one
        let u = b"key-00000101";
        it.seek(&key::seek_key(u, MAX_SEQNO)).unwrap();
        assert_eq!(key::user_key(it.key()), b"key-00000102");
        it.seek(&key::seek_key(b"a", MAX_SEQNO)).unwrap();
        assert_eq!(it.key(), &es[0].0[..]);
        it.seek(&key::seek_key(b"zzz", MAX_SEQNO)).unwrap();
        assert!(!it.valid());
        it.seek_for_prev(&key::seek_key(b"zzz", MAX_SEQNO)).unwrap();
        assert_eq!(it.key(), &es[es.len() - 1].0[..]);
    }
}

#[test]
fn summary_and_properties_agree() {
    let (fs, env, path, es) = setup(3000, Compression::Lz4);
    let t = open(&env, &path, None, true).unwrap();
    let p = t.properties();
    assert_eq!(p.num_entries, 3000);
    assert_eq!(p.smallest, es[0].0);
    assert_eq!(p.largest, es[2999].0);
    let tomb = es
        .iter()
        .filter(|(k, _)| key::parse_internal_key(k).unwrap().kind == ValueKind::Delete)
        .count() as u64;
    assert_eq!(p.num_tombstones, tomb);
    assert!(tomb > 0);
    assert_eq!(p.compression, Compression::Lz4);
    assert_eq!(
        p.raw_value_bytes,
        es.iter().map(|e| e.1.len() as u64).sum::<u64>()
    );
    assert!(p.smallest_seq < p.largest_seq);
    assert_eq!(t.file_size(), fs.get(&path).len() as u64);

    // the builder's summary says the same
    let (_fs2, env2) = TestFs::env();
    let s = write(&env2, Path::new("/x.sst"), &es, &opts(Compression::Lz4));
    assert_eq!(s.size, t.file_size());
    assert_eq!(
        (s.smallest, s.largest),
        (p.smallest.clone(), p.largest.clone())
    );
    assert_eq!(
        (s.smallest_seq, s.largest_seq),
        (p.smallest_seq, p.largest_seq)
    );
    assert_eq!((s.entries, s.tombstones), (3000, tomb));
}

#[test]
fn lz4_shrinks_compressible_tables() {
    let (fs, _env, path, _) = setup(3000, Compression::None);
    let (fs2, _env2, path2, _) = setup(3000, Compression::Lz4);
    assert!(fs2.get(&path2).len() * 2 < fs.get(&path).len());
}

#[test]
fn empty_and_filterless_tables() {
    let (_fs, env) = TestFs::env();
    let s = write(
        &env,
        Path::new("/e.sst"),
        &Vec::new(),
        &opts(Compression::None),
    );
    assert_eq!(s.entries, 0);
    let t = open(&env, Path::new("/e.sst"), None, true).unwrap();
    assert!(collect_forward(&t).unwrap().is_empty());
    let mut it = t.iter(ReadCause::Scan);
    it.seek_to_last().unwrap();
    assert!(!it.valid());
    assert_eq!(
        t.get(b"k", &key::seek_key(b"k", 5), ReadCause::Get)
            .unwrap(),
        None
    );
    t.verify().unwrap();

    let es = entries(500);
    let o = TableOptions {
        bloom_bits_per_key: 0,
        ..opts(Compression::None)
    };
    write(&env, Path::new("/n.sst"), &es, &o);
    let t = open(&env, Path::new("/n.sst"), None, true).unwrap();
    assert!(t.may_contain(b"anything"));
    assert_eq!(collect_forward(&t).unwrap(), es);
    t.verify().unwrap();
}

#[test]
fn bloom_filters_absent_keys_without_io() {
    let (_fs, env, path, es) = setup(2000, Compression::None);
    let t = open(&env, &path, None, true).unwrap();
    for (k, _) in &es {
        assert!(t.may_contain(key::user_key(k)));
    }
    let before = env.io().read(ReadCause::Get);
    let mut passed = 0;
    for i in 0..2000u64 {
        let u = format!("key-{:08}", i * 2 + 1);
        if t.may_contain(u.as_bytes()) {
            passed += 1;
        }
        t.get(
            u.as_bytes(),
            &key::seek_key(u.as_bytes(), MAX_SEQNO),
            ReadCause::Get,
        )
        .unwrap();
    }
    let read = env.io().read(ReadCause::Get) - before;
    assert!(passed < 60, "{passed} false positives");
    // only the false positives read a block
    assert!(
        read <= passed * 1100,
        "{read} bytes read for {passed} false positives"
    );
}

#[test]
fn versions_of_one_key_span_blocks() {
    let (_fs, env) = TestFs::env();
    let es: Entries = (0..500u64)
        .map(|i| {
            (
                make_internal_key(b"hot", 1000 - i, ValueKind::Value),
                vec![i as u8; 40],
            )
        })
        .chain([(
            make_internal_key(b"hotter", 5, ValueKind::Value),
            b"x".to_vec(),
        )])
        .collect();
    write(&env, Path::new("/h.sst"), &es, &opts(Compression::None));
    let t = open(&env, Path::new("/h.sst"), None, true).unwrap();
    assert!(t.properties().num_data_blocks > 5);
    for snap in [1000, 999, 800, 501, MAX_SEQNO] {
        let (k, _) = t
            .get(b"hot", &key::seek_key(b"hot", snap), ReadCause::Get)
            .unwrap()
            .unwrap();
        assert_eq!(key::parse_internal_key(&k).unwrap().seq, snap.min(1000));
    }
    assert_eq!(
        t.get(b"hot", &key::seek_key(b"hot", 500), ReadCause::Get)
            .unwrap(),
        None
    );
    t.verify().unwrap();
}

#[test]
fn compaction_reads_do_not_fill_the_cache() {
    let (_fs, env, path, es) = setup(2000, Compression::None);
    let cache = Arc::new(BlockCache::new(1 << 20));
    let t = open(&env, &path, Some(Arc::clone(&cache)), true).unwrap();
    let mut it = t.iter(ReadCause::Compaction);
    it.seek_to_first().unwrap();
    let mut n = 0;
    while it.valid() {
        n += 1;
        it.next().unwrap();
    }
    assert_eq!(n, es.len());
    assert_eq!(cache.usage(), 0);
    assert!(env.io().read(ReadCause::Compaction) > 0);
    collect_forward(&t).unwrap();
    assert!(cache.usage() > 0);
}

/// Per-read choices: a read that skips checksums is not refused a damaged block, which a
/// checking read of the same table reports, and caches only blocks whose checksum holds
/// (checked on the side: the store checks); `fill_cache` off leaves the cache alone.
#[test]
fn per_read_checksums_and_cache_choices_are_honoured() {
    let (fs, env, path, es) = setup(2000, Compression::None);
    // A value byte of the first data block flipped: the block still parses.
    let mut bytes = fs.get(&path);
    let (first_key, first_value) = es
        .iter()
        .find(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.clone(), v.clone()))
        .unwrap();
    let at = bytes
        .windows(first_value.len())
        .position(|w| w == first_value.as_slice())
        .unwrap();
    bytes[at] ^= 0x20;
    fs.set(&path, bytes);
    let user = key::user_key(&first_key).to_vec();
    let seek = key::seek_key(&user, MAX_SEQNO);
    let read = |verify: Option<bool>, fill_cache: bool| TableRead {
        cause: ReadCause::Get,
        verify_checksums: verify,
        fill_cache,
    };

    let cache = Arc::new(BlockCache::new(1 << 20));
    let t = open(&env, &path, Some(Arc::clone(&cache)), true).unwrap();
    let (_, v) = t
        .get(&user, &seek, read(Some(false), true))
        .unwrap()
        .unwrap();
    assert_ne!(v, first_value, "the flipped byte is read as it is");
    assert_eq!(
        cache.usage(),
        0,
        "a block whose checksum fails is not cached"
    );
    for verify in [None, Some(true)] {
        let e = t.get(&user, &seek, read(verify, true)).unwrap_err();
        assert!(e.is_corruption(), "{e}");
    }
    assert_eq!(cache.usage(), 0);

    // An intact block: cached by a checking read, unless it asks not to fill the cache.
    let other = key::user_key(&es[es.len() - 1].0).to_vec();
    let seek = key::seek_key(&other, MAX_SEQNO);
    t.get(&other, &seek, read(None, false)).unwrap();
    t.get(&other, &seek, read(Some(false), false)).unwrap();
    assert_eq!(cache.usage(), 0, "fill_cache off");
    t.get(&other, &seek, read(Some(false), true)).unwrap();
    assert!(cache.usage() > 0, "checked on the side, then cached");
    let used = cache.usage();
    let third = key::user_key(&es[es.len() / 2].0).to_vec();
    t.get(&third, &key::seek_key(&third, MAX_SEQNO), read(None, true))
        .unwrap();
    assert!(cache.usage() > used);

    // A store that checks nothing caches what it reads, and a read may still check.
    let cache = Arc::new(BlockCache::new(1 << 20));
    let t = open(&env, &path, Some(Arc::clone(&cache)), false).unwrap();
    let seek = key::seek_key(&user, MAX_SEQNO);
    let e = t.get(&user, &seek, read(Some(true), true)).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    t.get(&user, &seek, read(None, true)).unwrap().unwrap();
    assert!(cache.usage() > 0);
}

#[test]
fn truncated_files_rejected_at_open() {
    let (fs, env, path, _) = setup(300, Compression::None);
    let good = fs.get(&path);
    for cut in (0..good.len()).rev().step_by(7).chain([good.len() - 1, 0]) {
        fs.set(&path, good[..cut].to_vec());
        let e = open(&env, &path, None, true).unwrap_err();
        assert!(e.is_corruption(), "cut at {cut}: {e}");
    }
}

/// Open, get some keys, iterate and verify a damaged table. Every answer must be an error
/// or the truth.
fn check_damaged(env: &Env, path: &Path, es: &Entries, verify: bool) -> bool {
    let t = match open(env, path, None, verify) {
        Ok(t) => t,
        Err(e) => {
            assert!(e.is_corruption(), "{e}");
            return true;
        }
    };
    let mut saw_error = false;
    for (k, v) in es.iter().step_by(13) {
        let p = key::parse_internal_key(k).unwrap();
        match t.get(
            p.user_key,
            &key::seek_key(p.user_key, p.seq),
            ReadCause::Get,
        ) {
            Ok(got) if verify => assert_eq!(got, Some((k.clone(), v.clone()))),
            Ok(_) => {}
            Err(e) => {
                assert!(e.is_corruption(), "{e}");
                saw_error = true;
            }
        }
    }
    let mut it = t.iter(ReadCause::Scan);
    let mut i = 0;
    let mut r = it.seek_to_first();
    while r.is_ok() && it.valid() && i <= es.len() {
        if verify {
            assert_eq!(
                (it.key(), it.value()),
                (&es[i].0[..], &es[i].1[..]),
                "entry {i}"
            );
        }
        i += 1;
        r = it.next();
    }
    match r {
        Err(e) => {
            assert!(e.is_corruption(), "{e}");
            saw_error = true;
        }
        Ok(()) if verify => assert_eq!(i, es.len()),
        Ok(()) => {}
    }
    if let Err(e) = t.verify() {
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains("000007.sst"), "{e}");
        saw_error = true;
    }
    saw_error
}

#[test]
fn flipped_bytes_give_errors_or_the_truth() {
    for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let (fs, env, path, es) = setup(400, c);
        let good = fs.get(&path);
        let mut detected = 0;
        let positions: Vec<usize> = (0..good.len()).step_by(3).collect();
        for &pos in &positions {
            let mut bad = good.clone();
            bad[pos] ^= 1 << (pos % 8);
            fs.set(&path, bad);
            if check_damaged(&env, &path, &es, true) {
                detected += 1;
            }
            check_damaged(&env, &path, &es, false);
        }
        // Every byte is under a checksum, so verify() catches every flip.
        assert_eq!(detected, positions.len());
    }
}

/// The two entries of the worked example of `docs/format/sst.md`.
fn worked_example_entries() -> Entries {
    vec![
        (
            make_internal_key(b"apple", 1, ValueKind::Value),
            b"red".to_vec(),
        ),
        (
            make_internal_key(b"apricot", 2, ValueKind::Value),
            b"orange".to_vec(),
        ),
    ]
}

/// The worked example of `docs/format/sst.md`: these bytes are quoted there.
#[test]
fn worked_example_bytes() {
    let (fs, env) = TestFs::env();
    let es = worked_example_entries();
    let path = Path::new("/000001.sst");
    write(&env, path, &es, &TableOptions::default());
    let bytes = fs.get(path);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let expected = "000d036170706c650101000000000000726564020d067269636f740102000000\
                    0000006f72616e6765000000000100000000f1db5aab00000040000000000000\
                    0000000020000000000000002000000000009000000000000000000020008000\
                    00000000400200000108102000000000000000000002870054fc482901010202\
                    010010010005010106010207011c0801090901010a01360b01410c01000d0280\
                    200e01100f010a030d6170706c650101000000000000040f61707269636f7401\
                    020000000000000025cc13620009026202ffffffffffffff0031000000000100\
                    0000000deec6d436000000000000004100000000000000cc0000000000000016\
                    000000000000007c000000000000004b00000000000000020000001690442253\
                    48414c45535354";
    assert_eq!(hex, expected);
}

#[test]
fn shared_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Table>();
    send_sync::<crate::table::cache::TableCache>();
    send::<TableIter>();
    send::<TableBuilder>();

    let (_fs, env, path, es) = setup(3000, Compression::Lz4);
    let t = open(&env, &path, Some(Arc::new(BlockCache::new(1 << 20))), false).unwrap();
    std::thread::scope(|s| {
        for start in 0..2 {
            let (t, es) = (&t, &es);
            s.spawn(move || {
                for (k, v) in es.iter().skip(start).step_by(2) {
                    let p = key::parse_internal_key(k).unwrap();
                    let got = t.get(
                        p.user_key,
                        &key::seek_key(p.user_key, p.seq),
                        ReadCause::Get,
                    );
                    assert_eq!(got.unwrap(), Some((k.clone(), v.clone())));
                }
                assert_eq!(collect_forward(t).unwrap(), *es);
            });
        }
    });
}

/// The 239-byte worked example of format version 1 (classic filter, `k = 07` without the
/// layout bit, footer version 1), as the previous build wrote it: it still opens, verifies
/// and answers gets.
#[test]
fn a_version_1_table_with_a_classic_filter_still_reads() {
    let (fs, env) = TestFs::env();
    let old = "000d036170706c650101000000000000726564020d067269636f740102000000\
               0000006f72616e6765000000000100000000f1db5aab8500458030220808070050\
               c4f99001010202010010010005010106010207011c0801090901010a01360b0109\
               0c01000d0280200e01100f010a030d6170706c650101000000000000040f617072\
               69636f74010200000000000000700e16fa0009026202ffffffffffffff00310000\
               000001000000000deec6d43600000000000000090000000000000094000000000000\
               00160000000000000044000000000000004b0000000000000001000000e8fff315\
               5348414c45535354";
    let bytes: Vec<u8> = (0..old.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&old[i..i + 2], 16).unwrap())
        .collect();
    assert_eq!(bytes.len(), 239);
    let path = Path::new("/000007.sst");
    fs.set(path, bytes);
    let t = Table::open(env.open(path).unwrap(), 7, None, true).unwrap();
    t.verify().unwrap();
    for (k, v) in [(&b"apple"[..], &b"red"[..]), (b"apricot", b"orange")] {
        let sk = key::seek_key(k, MAX_SEQNO);
        assert!(t.may_contain_hash(crate::table::bloom::hash64(k)));
        assert_eq!(t.get(k, &sk, ReadCause::Get).unwrap().unwrap().1, v);
    }
    assert_eq!(
        t.get(
            b"banana",
            &key::seek_key(b"banana", MAX_SEQNO),
            ReadCause::Get
        )
        .unwrap(),
        None
    );
}

/// A filter block under a valid checksum whose layout byte is impossible (no probes, more
/// than 30) is refused with Corruption when the table opens.
#[test]
fn a_bad_filter_layout_byte_is_corruption() {
    let (fs, env) = TestFs::env();
    let es = worked_example_entries();
    let path = Path::new("/000007.sst");
    write(&env, path, &es, &TableOptions::default());
    let good = fs.get(path);
    // The filter is at (54, 65): its last byte at 118, trailer type at 119, CRC at 120..124.
    assert_eq!(good[118], 0x87);
    for bad_last in [0x80u8, 0x80 | 31, 0xff, 0] {
        let mut b = good.clone();
        b[118] = bad_last;
        let crc = crate::format::mask_crc(crate::format::crc32c(&b[54..120]));
        b[120..124].copy_from_slice(&crc.to_le_bytes());
        fs.set(path, b);
        let r = Table::open(env.open(path).unwrap(), 7, None, true);
        assert!(
            matches!(r, Err(crate::Error::Corruption { .. })),
            "layout byte {bad_last:#x}: {:?}",
            r.map(|_| ())
        );
    }
}

/// The quick check of a new table reads its first and last data blocks and finds the
/// properties' first and last keys there; a table without entries passes.
#[test]
fn verify_ends_reads_the_first_and_last_blocks() {
    for n in [0, 1, 10, 500] {
        let (_fs, env, path, _es) = setup(n, Compression::None);
        let t = open(&env, &path, None, true).unwrap();
        t.verify_ends()
            .unwrap_or_else(|e| panic!("{n} entries: {e}"));
    }
}
