use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::writer::place;
use super::*;
use crate::env::{Env, ReadCause, WriteCause};
use crate::iter::InternalIterator;
use crate::key::{self, MAX_SEQNO, ValueKind, make_internal_key, seek_key};
use crate::options::TableOptions;
use crate::table::format::{TableIdentity, TableReader, TableSummary, TableWriter};
use crate::table::properties::TableProperties;
use crate::table::test_fs::TestFs;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Entries of `n` user keys (even numbers only, so odd ones are absent), 1..=3 versions
/// each, some tombstones, values of `value_len(i)` bytes.
fn entries(n: u64, value_len: impl Fn(u64) -> usize) -> Entries {
    let mut out = Vec::new();
    for i in 0..n {
        let user = format!("key-{:06}", i * 2);
        for v in 0..(1 + i % 3) {
            let seq = 1000 + i * 4 - v;
            let kind = if (i + v).is_multiple_of(7) {
                ValueKind::Delete
            } else {
                ValueKind::Value
            };
            let value = if kind == ValueKind::Delete {
                Vec::new()
            } else {
                let mut s = format!("v{i}.{v}:").into_bytes();
                s.resize(value_len(i).max(s.len()), b'a' + (i % 26) as u8);
                s
            };
            out.push((make_internal_key(user.as_bytes(), seq, kind), value));
        }
    }
    out
}

fn options(bucket: usize) -> TableOptions {
    TableOptions {
        block_size: bucket,
        bloom_bits_per_key: 16,
        ..TableOptions::default()
    }
}

/// Write `es` (added in reverse order: the writer takes any order) as table 7.
fn write(env: &Env, path: &Path, es: &Entries, o: &TableOptions) -> TableSummary {
    let f = env.create(path, WriteCause::Flush).unwrap();
    let mut w: Box<dyn TableWriter> = Box::new(HTableWriter::new(
        f,
        o,
        Some(TableIdentity {
            store_id: 1,
            number: 7,
        }),
    ));
    for (k, v) in es.iter().rev() {
        w.add(k, v).unwrap();
    }
    assert_eq!(w.num_entries(), es.len() as u64);
    w.finish().unwrap()
}

fn open(env: &Env, path: &Path) -> crate::Result<Arc<HTable>> {
    let f = env.open(path)?;
    let len = f.len();
    HTable::open(f, 7, len, None, true).map(Arc::new)
}

fn setup(
    n: u64,
    bucket: usize,
    value_len: impl Fn(u64) -> usize,
) -> (TestFs, Env, PathBuf, Entries) {
    let (fs, env) = TestFs::env();
    let path = PathBuf::from("/db/000007.sst");
    let es = entries(n, value_len);
    write(&env, &path, &es, &options(bucket));
    (fs, env, path, es)
}

/// Every key, at every sequence number that matters, answers as the sorted entries say.
fn check_lookups(t: &HTable, es: &Entries) {
    for (k, v) in es {
        let p = key::parse_internal_key(k).unwrap();
        let got = t
            .lookup(
                p.user_key,
                &seek_key(p.user_key, p.seq),
                ReadCause::Get.into(),
            )
            .unwrap();
        assert_eq!(got, Some((k.clone(), v.clone())), "{:?}", p.user_key);
    }
    // The newest version for a snapshot past everything; none below the oldest.
    for (k, _) in es {
        let uk = key::user_key(k);
        let newest = es.iter().find(|(e, _)| key::user_key(e) == uk).unwrap();
        let got = t
            .lookup(uk, &seek_key(uk, MAX_SEQNO), ReadCause::Get.into())
            .unwrap();
        assert_eq!(got.as_ref(), Some(newest));
        assert_eq!(
            t.lookup(uk, &seek_key(uk, 1), ReadCause::Get.into())
                .unwrap(),
            None
        );
    }
    for i in 0..50 {
        let absent = format!("key-{:06}", i * 2 + 1);
        let got = t
            .lookup(
                absent.as_bytes(),
                &seek_key(absent.as_bytes(), MAX_SEQNO),
                ReadCause::Get.into(),
            )
            .unwrap();
        assert_eq!(got, None);
    }
}

fn collect(t: &Arc<HTable>) -> Entries {
    let mut it = Arc::clone(t).iter(ReadCause::Scan.into());
    it.seek_to_first().unwrap();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    out
}

#[test]
fn round_trip_lookups_iteration_and_verify() {
    let (_fs, env, path, es) = setup(2000, 4096, |i| (i % 90) as usize);
    let t = open(&env, &path).unwrap();
    assert_eq!(t.properties().num_entries, es.len() as u64);
    assert_eq!(t.properties().file_number, Some(7));
    assert_eq!(t.properties().store_id, Some(1));
    assert!(t.bucket_count() > 1);
    check_lookups(&t, &es);
    assert_eq!(collect(&t), es);
    // Seeks land where internal-key order says.
    let mut it = Arc::clone(&t).iter(ReadCause::Scan.into());
    it.seek(&es[100].0).unwrap();
    assert_eq!(it.key(), es[100].0.as_slice());
    it.prev().unwrap();
    assert_eq!(it.key(), es[99].0.as_slice());
    it.seek_to_last().unwrap();
    assert_eq!(it.key(), es.last().unwrap().0.as_slice());
    t.verify().unwrap();
    t.verify_quick().unwrap();
}

#[test]
fn buckets_fill_to_at_most_95_percent_on_average() {
    let (_fs, env, path, es) = setup(3000, 4096, |i| (i % 60) as usize);
    let t = open(&env, &path).unwrap();
    let bytes: usize = es.iter().map(|(k, v)| writer::item_len(k, v)).sum();
    let payload = 4096 - BUCKET_HEADER_LEN - BUCKET_TRAILER_LEN;
    let capacity = t.bucket_count() as usize * payload;
    assert!(bytes * 100 <= capacity * 95, "{bytes} in {capacity}");
    assert!(
        bytes * 100 > (capacity - payload) * 95,
        "one bucket fewer would do"
    );
}

#[test]
fn overloaded_buckets_migrate_by_hashmark_and_lookups_read_one_bucket() {
    // Small buckets and varied items: many buckets overflow their home.
    let (_fs, env, path, es) = setup(3000, 512, |i| (i * 37 % 120) as usize);
    let t = open(&env, &path).unwrap();
    assert!(t.migrations() > 0, "no bucket migrated");
    check_lookups(&t, &es);
    t.verify().unwrap();
    // One bucket read (or one overflow record) per lookup of a present key.
    let io = env.io();
    let before = io.read(ReadCause::Get);
    let mut n = 0u64;
    for (k, _) in es.iter().step_by(5) {
        let uk = key::user_key(k);
        t.lookup(uk, &seek_key(uk, MAX_SEQNO), ReadCause::Get.into())
            .unwrap()
            .unwrap();
        n += 1;
    }
    let read = io.read(ReadCause::Get) - before;
    assert!(read <= n * 512, "{read} bytes for {n} lookups");
}

#[test]
fn greedy_placement_moves_the_top_ranks_of_an_overloaded_bucket() {
    // Twelve 100-byte groups whose hashkeys all choose bucket 0 of 4 (payload 400).
    let mut groups = Vec::new();
    for i in 0..12u8 {
        let mut h = [0u8; 20];
        h[8] = i * 16; // rank, increasing with i
        groups.push((h, 100));
    }
    let p = place(&groups, 4, 400);
    assert_eq!(p.buckets[0], vec![0, 1, 2, 3]);
    // The rank of group 4 is the mark; the emptiest bucket (1, the lowest of the empty
    // ones) takes groups 4..8, the rest overflow (no other bucket was tried).
    assert_eq!(p.migrations.len(), 1);
    let m = p.migrations[0];
    assert_eq!((m.source, m.dest, m.mark), (0, 1, (4 * 16) << 24));
    assert_eq!(p.buckets[1], vec![4, 5, 6, 7]);
    assert_eq!(p.overflow, vec![8, 9, 10, 11]);
    // Groups of the mark's rank move together, even when the first of them fits.
    let mut tied = groups.clone();
    tied[3].0[8] = 4 * 16;
    let p = place(&tied, 4, 400);
    assert_eq!(p.buckets[0], vec![0, 1, 2]);
    assert_eq!(p.migrations[0].mark, (4 * 16) << 24);
}

#[test]
fn items_too_big_for_a_bucket_go_to_the_indexed_overflow_area() {
    let (_fs, env, path, es) = setup(300, 256, |i| if i % 10 == 0 { 700 } else { 10 });
    let t = open(&env, &path).unwrap();
    assert!(t.overflow_entries() >= 30, "{}", t.overflow_entries());
    check_lookups(&t, &es);
    assert_eq!(collect(&t), es);
    t.verify().unwrap();
}

#[test]
fn one_entry_and_only_big_entries() {
    let (_fs, env) = TestFs::env();
    let path = PathBuf::from("/db/000007.sst");
    let es = vec![(
        make_internal_key(b"k", 5, ValueKind::Value),
        vec![7u8; 10_000],
    )];
    write(&env, &path, &es, &options(4096));
    let t = open(&env, &path).unwrap();
    assert_eq!(t.bucket_count(), 1);
    check_lookups(&t, &es);
    assert_eq!(collect(&t), es);
    t.verify().unwrap();
}

#[test]
fn an_internal_key_added_twice_is_refused() {
    let (_fs, env) = TestFs::env();
    let f = env
        .create(Path::new("/db/000009.sst"), WriteCause::Flush)
        .unwrap();
    let mut w: Box<dyn TableWriter> = Box::new(HTableWriter::new(f, &options(4096), None));
    let k = make_internal_key(b"k", 5, ValueKind::Value);
    w.add(&k, b"a").unwrap();
    w.add(&k, b"b").unwrap();
    assert!(matches!(w.finish(), Err(crate::Error::InvalidArgument(_))));
}

/// Damage at `at` is found by `check` and reported with the file and an offset.
fn damaged(
    fs: &TestFs,
    env: &Env,
    path: &Path,
    at: usize,
    check: impl Fn(&Env) -> crate::Result<()>,
) -> crate::Error {
    let good = fs.get(path);
    let mut bad = good.clone();
    bad[at] ^= 0x40;
    fs.set(path, bad);
    let e = check(env).expect_err("damage must be found");
    fs.set(path, good);
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains("000007.sst"), "{e}");
    e
}

#[test]
fn damage_anywhere_is_found_with_file_and_offset() {
    let (fs, env, path, es) = setup(
        400,
        512,
        |i| if i % 25 == 0 { 900 } else { (i % 40) as usize },
    );
    let len = fs.get(&path).len();
    let t = open(&env, &path).unwrap();
    let buckets = t.bucket_count() as usize;
    drop(t);
    // A bucket: found by verify and by a lookup of a key in it.
    let e = damaged(&fs, &env, &path, 512 + 100, |env| {
        open(env, &path)?.verify()
    });
    assert!(e.to_string().contains("offset 512:"), "{e}");
    // An overflow record: found by verify.
    damaged(&fs, &env, &path, buckets * 512 + 3, |env| {
        open(env, &path)?.verify()
    });
    // The footer and every metadata block: found by open.
    for at in [len - 1, len - 10, len - 60, len - super::FOOTER_LEN - 2] {
        damaged(&fs, &env, &path, at, |env| open(env, &path).map(|_| ()));
    }
    // A lookup of every key meets a damaged bucket when its own bucket is hit.
    let bad_bucket = 3;
    let good = fs.get(&path);
    let mut bad = good.clone();
    bad[bad_bucket * 512 + 20] ^= 1;
    fs.set(&path, bad);
    let t = open(&env, &path).unwrap();
    let errors = es
        .iter()
        .filter(|(k, _)| {
            let uk = key::user_key(k);
            t.lookup(uk, &seek_key(uk, MAX_SEQNO), ReadCause::Get.into())
                .is_err()
        })
        .count();
    assert!(errors > 0);
    fs.set(&path, good);
}

#[test]
fn a_truncated_file_is_corruption() {
    let (fs, env, path, _) = setup(50, 4096, |_| 10);
    let data = fs.get(&path);
    let f = env.open(&path).unwrap();
    let e = HTable::open(f, 7, data.len() as u64 + 10, None, true).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    fs.set(&path, data[..data.len() - 1].to_vec());
    assert!(open(&env, &path).unwrap_err().is_corruption());
}

#[test]
fn hashkey_fields() {
    // SHA-1("abc") = a9993e36 4706816a ba3e2571 7850c26c 9cd0d89d
    let h = hashkey(b"abc");
    assert_eq!(prefix64(&h), 0xa999_3e36_4706_816a);
    assert_eq!(rank(&h), 0xba3e_2571);
    assert_eq!(cluster::column_word(&h), 0x7850_c26c);
    assert_eq!(home_bucket(&h, 1 << 32), 0x9cd0_d89d);
    assert_eq!(home_bucket(&h, 10), 0x9cd0_d89d % 10);
}

/// The three entries of the worked examples, written with buckets of 128 bytes and
/// `bloom_bits` bits per key, as table 7 of store 1, in format `version`.
fn example_table(bloom_bits: usize, version: u32) -> (TestFs, Env, PathBuf, Vec<u8>) {
    let (fs, env) = TestFs::env();
    let path = PathBuf::from("/db/000007.sst");
    let o = TableOptions {
        block_size: 128,
        bloom_bits_per_key: bloom_bits,
        ..TableOptions::default()
    };
    let f = env.create(&path, WriteCause::Flush).unwrap();
    let mut w = HTableWriter::new(
        f,
        &o,
        Some(TableIdentity {
            store_id: 1,
            number: 7,
        }),
    );
    if version == 1 {
        w = w.version_1();
    }
    w.add(&make_internal_key(b"b", 2, ValueKind::Value), b"y")
        .unwrap();
    w.add(&make_internal_key(b"a", 1, ValueKind::Value), b"x")
        .unwrap();
    w.add(&make_internal_key(b"b", 3, ValueKind::Delete), b"")
        .unwrap();
    Box::new(w).finish().unwrap();
    let bytes = fs.get(&path);
    (fs, env, path, bytes)
}

/// The worked example of version 1 (the format before filter clusters), which this build
/// still reads: no filter, so the file is the version 2 example without its cluster.
fn worked_example_bytes() -> Vec<u8> {
    example_table(0, 1).3
}

#[test]
fn worked_example_of_version_1_is_still_read() {
    // docs/format/htable.md §7 (version 1), byte for byte.
    let want = "\
        03 00 09 01 61 01 01 00 00 00 00 00 00 78 09 00 \
        62 00 03 00 00 00 00 00 00 09 01 62 01 02 00 00 \
        00 00 00 00 79"
        .split_whitespace()
        .chain(std::iter::repeat_n("00", 0x7c - 0x25))
        .chain(
            "42 c2 a2 61 \
             00 d2 8f 25 49 \
             00 d2 8f 25 49"
                .split_whitespace(),
        )
        .map(|h| u8::from_str_radix(h, 16).unwrap())
        .collect::<Vec<u8>>();
    let bytes = worked_example_bytes();
    assert_eq!(bytes.len(), 306);
    assert_eq!(&bytes[..0x8a], want.as_slice());
    let footer = "01 00 00 00 00 00 00 00 80 00 00 00 01 00 00 00 \
        80 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 \
        85 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 \
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 \
        8a 00 00 00 00 00 00 00 48 00 00 00 00 00 00 00 \
        67 d0 c0 63 53 48 41 4c 45 48 54 42"
        .split_whitespace()
        .map(|h| u8::from_str_radix(h, 16).unwrap())
        .collect::<Vec<u8>>();
    assert_eq!(&bytes[306 - 92..], footer.as_slice());
    // The properties block in between: 72 bytes and its crc.
    let props = TableProperties::decode(&bytes[0x8a..0x8a + 72]).unwrap();
    assert_eq!(props.num_entries, 3);
    assert_eq!(props.file_number, Some(7));
    assert_eq!(&bytes[0xd2..0xd6], &[0xc4, 0xc6, 0x01, 0xea]);
    // Read as version 1: lookups, iteration, verify.
    let (_fs, env, path, _) = example_table(0, 1);
    let t = open(&env, &path).unwrap();
    assert_eq!(t.format_version(), 1);
    assert!(!t.has_cluster());
    t.verify().unwrap();
    let got = t
        .lookup(b"b", &seek_key(b"b", 2), ReadCause::Get.into())
        .unwrap();
    assert_eq!(
        got,
        Some((make_internal_key(b"b", 2, ValueKind::Value), b"y".to_vec()))
    );
    assert_eq!(collect(&t).len(), 3);
}

#[test]
fn version_1_tables_with_a_whole_filter_are_read() {
    let (fs, env) = TestFs::env();
    let path = PathBuf::from("/db/000007.sst");
    let es = entries(300, |i| (i % 50) as usize);
    let f = env.create(&path, WriteCause::Flush).unwrap();
    let mut w: Box<dyn TableWriter> = Box::new(
        HTableWriter::new(
            f,
            &options(512),
            Some(TableIdentity {
                store_id: 1,
                number: 7,
            }),
        )
        .version_1(),
    );
    for (k, v) in &es {
        w.add(k, v).unwrap();
    }
    w.finish().unwrap();
    let t = open(&env, &path).unwrap();
    assert_eq!(t.format_version(), 1);
    assert!(t.filter().is_some() && !t.has_cluster());
    check_lookups(&t, &es);
    t.verify().unwrap();
    // A version this build does not know is refused, saying so.
    let mut bad = fs.get(&path);
    let foot = bad.len() - super::FOOTER_LEN;
    bad[foot + 12] = 3;
    let crc = crate::format::mask_crc(crate::format::crc32c(&bad[foot..foot + 80]));
    bad[foot + 80..foot + 84].copy_from_slice(&crc.to_le_bytes());
    fs.set(&path, bad);
    let e = open(&env, &path).unwrap_err().to_string();
    assert!(
        e.contains("htable format version 3") && e.contains("newer Shale"),
        "{e}"
    );
}

#[test]
fn worked_example() {
    // docs/format/htable.md §6 (version 2, with its filter cluster), byte for byte.
    let (_fs, env, path, bytes) = example_table(16, 2);
    assert_eq!(bytes.len(), 332);
    // The bucket is version 1's, byte for byte.
    assert_eq!(&bytes[..0x80], &worked_example_bytes()[..0x80]);
    let hex = |b: &[u8]| {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // The filter cluster: one column block.
    assert_eq!(
        hex(&bytes[0x80..0x91]),
        "01 07 00 09 18 11 cb 88 a9 08 10 42 0b 90 a6 d0 5d"
    );
    // Migration block and overflow index (empty), then the cluster index.
    assert_eq!(hex(&bytes[0x91..0x9b]), "00 d2 8f 25 49 00 d2 8f 25 49");
    assert_eq!(hex(&bytes[0x9b..0xa4]), "00 00 80 01 11 5d 6a 5d 5d");
    let props = TableProperties::decode(&bytes[0xa4..0xa4 + 72]).unwrap();
    assert_eq!(props.num_entries, 3);
    assert_eq!(props.filter_bytes, 17);
    assert_eq!(hex(&bytes[0xec..0xf0]), "a2 a8 82 9f");
    assert_eq!(
        hex(&bytes[0xf0..]),
        "01 00 00 00 00 00 00 00 80 00 00 00 02 00 00 00 \
         91 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 \
         96 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 \
         9b 00 00 00 00 00 00 00 05 00 00 00 00 00 00 00 \
         a4 00 00 00 00 00 00 00 48 00 00 00 00 00 00 00 \
         3e f8 b4 4c 53 48 41 4c 45 48 54 42"
    );
    // "a": hash64 0x0fa36e601150bbb6, 11 probes over 64 bits: bits 4, 8, …, 43 are set.
    assert_eq!(crate::table::bloom::hash64(b"a"), 0x0fa3_6e60_1150_bbb6);
    let t = open(&env, &path).unwrap();
    t.verify().unwrap();
    assert_eq!(t.format_version(), 2);
    let mut asked = Vec::new();
    let w = cluster::column_word(&hashkey(b"a"));
    assert_eq!(w, 0xb9ea_eaea);
    let h = crate::table::bloom::hash64(b"a");
    assert!(
        t.cluster_probe(w, h, ReadCause::Get, |n, m| asked.push((n, m)))
            .unwrap()
    );
    assert_eq!(asked, vec![(7, true)]);
}

/// Write `es` as table `number`, laid on `pile` if given; open it (with a block cache).
fn write_on(
    env: &Env,
    number: u64,
    es: &Entries,
    pile: Option<&crate::table::Pile>,
) -> Arc<HTable> {
    let path = PathBuf::from(format!("/db/{number:06}.sst"));
    let f = env.create(&path, WriteCause::Flush).unwrap();
    let mut w: Box<dyn TableWriter> = Box::new(HTableWriter::new(
        f,
        &options(4096),
        Some(TableIdentity {
            store_id: 1,
            number,
        }),
    ));
    if let Some(p) = pile {
        w.lay_on(p);
    }
    for (k, v) in es {
        w.add(k, v).unwrap();
    }
    w.finish().unwrap();
    let f = env.open(&path).unwrap();
    let len = f.len();
    let cache = Arc::new(crate::cache::block_cache::BlockCache::new(1 << 20));
    Arc::new(HTable::open(f, number, len, Some(cache), true).unwrap())
}

/// Entries of `n` keys named `{prefix}{i}`.
fn named(prefix: &str, n: u64, seq: u64) -> Entries {
    (0..n)
        .map(|i| {
            let k = format!("{prefix}{i:05}");
            (
                make_internal_key(k.as_bytes(), seq + i, ValueKind::Value),
                b"v".to_vec(),
            )
        })
        .collect()
}

/// What `t`'s cluster answers for `uk`: (table, may hold), its own first.
fn asked(t: &HTable, uk: &[u8]) -> Vec<(u64, bool)> {
    let mut out = Vec::new();
    let w = cluster::column_word(&hashkey(uk));
    let h = crate::table::bloom::hash64(uk);
    assert!(
        t.cluster_probe(w, h, ReadCause::Get, |n, m| out.push((n, m)))
            .unwrap()
    );
    let mut loaded = Vec::new();
    t.load_cluster(ReadCause::Get)
        .unwrap()
        .unwrap()
        .probe(w, h, |n, m| loaded.push((n, m)))
        .unwrap();
    assert_eq!(out, loaded, "one block read and the loaded cluster agree");
    out
}

#[test]
fn a_table_laid_on_a_pile_carries_the_pile_s_filters() {
    let (_fs, env) = TestFs::env();
    let a_es = named("a", 3000, 1);
    let b_es = named("b", 200, 10_000);
    let c_es = named("c", 1500, 20_000);
    let a = write_on(&env, 1, &a_es, None);
    let pile = |below: &Arc<HTable>, live: &[u64], max: usize| crate::table::Pile {
        below: Arc::clone(below) as Arc<dyn TableReader>,
        live: live.to_vec(),
        max,
    };
    let b = write_on(&env, 2, &b_es, Some(&pile(&a, &[1], 8)));
    let c = write_on(&env, 3, &c_es, Some(&pile(&b, &[2, 1], 8)));
    for t in [&a, &b, &c] {
        t.verify().unwrap();
    }
    // C's cluster is C's own filters, then B's and A's, copied bit for bit.
    let own = |t: &HTable| t.cluster_tables(ReadCause::Get).unwrap().unwrap().remove(0);
    let cs = c.cluster_tables(ReadCause::Get).unwrap().unwrap();
    assert_eq!(
        cs.iter().map(|t| t.number).collect::<Vec<_>>(),
        vec![3, 2, 1]
    );
    assert_eq!(cs[1], own(&b));
    assert_eq!(cs[2], own(&a));
    // No false negative: every key of every table passes for its table in C's block.
    for (es, number) in [(&a_es, 1), (&b_es, 2), (&c_es, 3)] {
        for (k, _) in es.iter() {
            let uk = key::user_key(k);
            let ans = asked(&c, uk);
            assert_eq!(ans.len(), 3);
            assert!(
                ans.contains(&(number, true)),
                "{:?}",
                String::from_utf8_lossy(uk)
            );
        }
    }
    // Absent keys: one block read answers for the three tables, rarely passing.
    let mut passed = 0;
    for i in 0..3000 {
        let uk = format!("absent{i}");
        passed += asked(&c, uk.as_bytes()).iter().filter(|a| a.1).count();
    }
    assert!(passed < 20, "{passed} false positives in 9000 answers");
    // Tables no longer in the pile are not copied; a full cluster is not extended.
    let d = write_on(
        &env,
        4,
        &named("d", 10, 30_000),
        Some(&pile(&c, &[3, 1], 8)),
    );
    let ds = d.cluster_tables(ReadCause::Get).unwrap().unwrap();
    assert_eq!(
        ds.iter().map(|t| t.number).collect::<Vec<_>>(),
        vec![4, 3, 1]
    );
    let e = write_on(
        &env,
        5,
        &named("e", 10, 40_000),
        Some(&pile(&c, &[3, 2, 1], 3)),
    );
    let es = e.cluster_tables(ReadCause::Get).unwrap().unwrap();
    assert_eq!(es.iter().map(|t| t.number).collect::<Vec<_>>(), vec![5]);
}

#[test]
fn a_get_reads_one_filter_block_and_the_block_cache_keeps_it() {
    let (_fs, env) = TestFs::env();
    let t = write_on(&env, 1, &named("k", 5000, 1), None);
    let io = env.io();
    let blocks = |k| io.block_reads(ReadCause::Get, k);
    let before = (
        blocks(crate::env::BlockKind::Filter),
        blocks(crate::env::BlockKind::Data),
    );
    asked(&t, b"absent");
    // The probe reads one block; the whole-cluster load of `asked` one more read.
    assert_eq!(blocks(crate::env::BlockKind::Filter) - before.0, 2);
    asked(&t, b"absent");
    assert_eq!(
        blocks(crate::env::BlockKind::Filter) - before.0,
        3,
        "the block was cached"
    );
    assert_eq!(
        blocks(crate::env::BlockKind::Data),
        before.1,
        "no bucket was read"
    );
}

#[test]
fn damage_in_the_filter_cluster_is_found_with_file_and_offset() {
    let (fs, env, path, es) = setup(3000, 4096, |i| (i % 40) as usize);
    let t = open(&env, &path).unwrap();
    let (start, end) = t.cluster_range().unwrap();
    let (start, len) = (start as usize, (end - start) as usize);
    assert_eq!(len as u64, t.properties().filter_bytes);
    drop(t);
    for at in [start + 1, start + len / 2, start + len - 1] {
        let e = damaged(&fs, &env, &path, at, |env| open(env, &path)?.verify());
        assert!(e.to_string().contains("filter cluster"), "{e}");
        // Some key's get meets the damaged block, and says where it is.
        let e = damaged(&fs, &env, &path, at, |env| {
            let t = open(env, &path)?;
            for (k, _) in &es {
                let uk = key::user_key(k);
                let w = cluster::column_word(&hashkey(uk));
                t.cluster_probe(
                    w,
                    crate::table::bloom::hash64(uk),
                    ReadCause::Get,
                    |_, _| {},
                )?;
            }
            Ok(())
        });
        assert!(e.to_string().contains("filter cluster"), "{e}");
    }
}

/// A table written with each key's hashkey given ([`TableWriter::add_hashed`], what a
/// compaction of the trie does) is the same file, byte for byte, as one whose writer hashes
/// the keys itself; so is one where some entries come with the hashkey and some without,
/// in any order.
#[test]
fn a_given_hashkey_writes_the_same_table() {
    let es = entries(300, |i| (i % 90) as usize);
    let o = options(512);
    let (fs, env) = TestFs::env();
    let plain = PathBuf::from("/db/000007.sst");
    write(&env, &plain, &es, &o);
    let hashed_write =
        |path: &Path, order: &mut dyn Iterator<Item = (usize, &(Vec<u8>, Vec<u8>))>| {
            let f = env.create(path, WriteCause::Flush).unwrap();
            let mut w: Box<dyn TableWriter> = Box::new(HTableWriter::new(
                f,
                &o,
                Some(TableIdentity {
                    store_id: 1,
                    number: 7,
                }),
            ));
            for (i, (k, v)) in order {
                if i % 5 == 4 {
                    w.add(k, v).unwrap();
                } else {
                    w.add_hashed(k, v, &hashkey(key::user_key(k))).unwrap();
                }
            }
            w.finish().unwrap();
        };
    let sorted = PathBuf::from("/db/000008.sst");
    hashed_write(&sorted, &mut es.iter().enumerate());
    let reversed = PathBuf::from("/db/000009.sst");
    hashed_write(&reversed, &mut es.iter().enumerate().rev());
    let want = fs.get(&plain);
    assert!(!want.is_empty());
    assert!(fs.get(&sorted) == want, "in order, with hashkeys");
    assert!(fs.get(&reversed) == want, "reversed, with hashkeys");
    let t = open(&env, &sorted).unwrap();
    check_lookups(&t, &es);
}
