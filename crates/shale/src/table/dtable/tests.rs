//! DTable: generations, appends beside readers of older generations, torn tails, damage.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::env::{Env, ReadCause, WriteCause};
use crate::iter::InternalIterator;
use crate::key::{ValueKind, make_internal_key, parse_internal_key, seek_key};
use crate::options::TableOptions;
use crate::table::format::TableSummary;

const NUMBER: u64 = 12;

fn path() -> PathBuf {
    Path::new("/db").join(crate::table::table_file_name(NUMBER))
}

fn mem_env() -> Env {
    let env = Env::memory();
    env.fs().create_dir_all(Path::new("/db")).unwrap();
    env
}

fn opts() -> TableOptions {
    TableOptions {
        block_size: 128,
        ..TableOptions::default()
    }
}

fn identity() -> Option<TableIdentity> {
    Some(TableIdentity {
        store_id: 0xabcd,
        number: NUMBER,
    })
}

/// `(user key, seq, kind, value)` entries, sorted by the caller.
type Entries = Vec<(String, u64, ValueKind, String)>;

fn add_all(w: &mut dyn TableWriter, entries: &Entries) {
    for (k, seq, kind, v) in entries {
        w.add(&make_internal_key(k.as_bytes(), *seq, *kind), v.as_bytes())
            .unwrap();
    }
}

/// A new DTable holding `entries`.
fn create(env: &Env, entries: &Entries) -> TableSummary {
    let f = env.create(&path(), WriteCause::Flush).unwrap();
    let mut w = DTableFormat.builder(f, &opts(), identity());
    add_all(w.as_mut(), entries);
    w.finish().unwrap()
}

/// Append `entries` to generation `size`, without committing anything anywhere.
fn append(env: &Env, size: u64, entries: &Entries) -> TableSummary {
    let f = env.reopen(&path(), size, WriteCause::Compaction).unwrap();
    let r = env.open(&path()).unwrap();
    let id = TableId {
        number: NUMBER,
        size,
    };
    let mut w = DTableFormat
        .appender(f, r, id, &opts(), identity())
        .unwrap();
    add_all(w.as_mut(), entries);
    w.finish().unwrap()
}

fn open(env: &Env, size: u64) -> Result<Arc<dyn TableReader>> {
    let f = env.open(&path())?;
    DTableFormat.open(
        f,
        TableId {
            number: NUMBER,
            size,
        },
        &TableReadOptions {
            block_cache: None,
            verify_checksums: true,
        },
    )
}

fn puts(keys: impl IntoIterator<Item = u32>, seq: u64, tag: &str) -> Entries {
    keys.into_iter()
        .map(|i| {
            (
                format!("k{i:04}"),
                seq,
                ValueKind::Value,
                format!("{tag}-{i}-{}", "x".repeat((i % 7) as usize)),
            )
        })
        .collect()
}

fn get(t: &dyn TableReader, k: &str, snapshot: u64) -> Option<(u64, ValueKind, String)> {
    let (ik, v) = t
        .lookup(
            k.as_bytes(),
            &seek_key(k.as_bytes(), snapshot),
            ReadCause::Get.into(),
        )
        .unwrap()?;
    let p = parse_internal_key(&ik).unwrap();
    assert_eq!(p.user_key, k.as_bytes());
    Some((p.seq, p.kind, String::from_utf8(v).unwrap()))
}

fn scan(t: &Arc<dyn TableReader>) -> Vec<(String, u64)> {
    let mut it = Arc::clone(t).iter(ReadCause::Scan.into());
    it.seek_to_first().unwrap();
    let mut out = Vec::new();
    while it.valid() {
        let p = parse_internal_key(it.key()).unwrap();
        out.push((String::from_utf8(p.user_key.to_vec()).unwrap(), p.seq));
        it.next().unwrap();
    }
    out
}

#[test]
fn a_new_table_reads_back() {
    let env = mem_env();
    let s = create(&env, &puts(0..300, 5, "a"));
    assert_eq!(s.entries, 300);
    assert_eq!(s.size, env.fs().file_size(&path()).unwrap());
    let t = open(&env, s.size).unwrap();
    assert_eq!(t.properties().num_entries, 300);
    assert_eq!(t.properties().file_number, Some(NUMBER));
    assert_eq!(t.properties().smallest, s.smallest);
    assert_eq!(get(t.as_ref(), "k0123", 100).unwrap().2, "a-123-xxxx");
    assert!(get(t.as_ref(), "k0123", 4).is_none());
    assert!(get(t.as_ref(), "k9999", 100).is_none());
    assert_eq!(scan(&t).len(), 300);
    t.verify().unwrap();
    t.verify_quick().unwrap();
    assert!(t.filter().is_none());
    assert!(t.may_contain_hash(crate::table::bloom::hash64(b"k0001")));
}

/// Three generations: each reader keeps answering from its own generation while the file
/// grows, lookups take the newest segment's version (or an older one below a snapshot), and
/// scans merge every segment.
#[test]
fn appends_make_generations_and_old_readers_keep_theirs() {
    let env = mem_env();
    let g1 = create(&env, &puts(0..200, 10, "a"));
    let r1 = open(&env, g1.size).unwrap();
    // Overwrites of the even keys and new keys beyond the first range.
    let mut e2 = puts((0..200).step_by(2), 20, "b");
    e2.extend(puts(200..260, 20, "b"));
    let g2 = append(&env, g1.size, &e2);
    assert!(g2.size > g1.size);
    assert_eq!(g2.entries, 200 + 100 + 60);
    assert_eq!(g2.smallest_seq, 10);
    assert_eq!(g2.largest_seq, 20);
    let r2 = open(&env, g2.size).unwrap();
    // Deletes of some keys in a third segment.
    let e3: Entries = (0..50)
        .step_by(5)
        .map(|i| (format!("k{i:04}"), 30, ValueKind::Delete, String::new()))
        .collect();
    let g3 = append(&env, g2.size, &e3);
    assert_eq!(g3.tombstones, 10);
    let r3 = open(&env, g3.size).unwrap();

    // Generation 1 knows nothing later.
    assert_eq!(get(r1.as_ref(), "k0002", 100).unwrap().2, "a-2-xx");
    assert!(get(r1.as_ref(), "k0250", 100).is_none());
    assert_eq!(scan(&r1).len(), 200);
    r1.verify().unwrap();
    // Generation 2: the newer segment wins, a snapshot below it sees the older one.
    assert_eq!(get(r2.as_ref(), "k0002", 100).unwrap().2, "b-2-xx");
    assert_eq!(get(r2.as_ref(), "k0002", 15).unwrap().2, "a-2-xx");
    assert_eq!(get(r2.as_ref(), "k0003", 100).unwrap().2, "a-3-xxx");
    assert_eq!(get(r2.as_ref(), "k0250", 100).unwrap().2, "b-250-xxxxx");
    r2.verify().unwrap();
    // Generation 3: tombstones on top.
    assert_eq!(get(r3.as_ref(), "k0010", 100).unwrap().1, ValueKind::Delete);
    assert_eq!(get(r3.as_ref(), "k0010", 25).unwrap().2, "b-10-xxx");
    assert_eq!(get(r3.as_ref(), "k0010", 12).unwrap().2, "a-10-xxx");
    let all = scan(&r3);
    assert_eq!(all.len(), 370);
    for w in all.windows(2) {
        assert!(
            w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 > w[1].1),
            "{w:?}"
        );
    }
    r3.verify().unwrap();
    r3.verify_quick().unwrap();
    // approximate offsets grow through the key space and end near the data's size.
    let lo = r3.approximate_offset_of(&seek_key(b"k0000", 100)).unwrap();
    let mid = r3.approximate_offset_of(&seek_key(b"k0100", 100)).unwrap();
    let hi = r3.approximate_offset_of(&seek_key(b"k9999", 100)).unwrap();
    assert!(lo < mid && mid < hi && hi < g3.size, "{lo} {mid} {hi}");
}

/// An append that never committed (its generation is not what the MANIFEST records) is a
/// tail: the committed generation opens and verifies as if it were not there, and the next
/// append cuts it.
#[test]
fn an_uncommitted_tail_is_ignored_and_cut_by_the_next_append() {
    let env = mem_env();
    let g1 = create(&env, &puts(0..100, 10, "a"));
    let torn = append(&env, g1.size, &puts(0..100, 20, "torn"));
    // Half of it survives a crash, say.
    let bytes = env.read_all(&path(), ReadCause::Other).unwrap();
    let cut = g1.size + (torn.size - g1.size) / 2;
    let mut f = env.create(&path(), WriteCause::Other).unwrap();
    f.append(&bytes[..cut as usize]).unwrap();
    f.flush().unwrap();
    drop(f);
    let r = open(&env, g1.size).unwrap();
    r.verify().unwrap();
    assert_eq!(get(r.as_ref(), "k0007", 100).unwrap().2, "a-7-");
    // The whole torn generation opens too when it survived (nothing reads past a size).
    let g2 = append(&env, g1.size, &puts(50..60, 30, "c"));
    assert_eq!(env.fs().file_size(&path()).unwrap(), g2.size);
    let r2 = open(&env, g2.size).unwrap();
    r2.verify().unwrap();
    assert_eq!(get(r2.as_ref(), "k0055", 100).unwrap().2, "c-55-xxxxxx");
    assert_eq!(get(r2.as_ref(), "k0007", 100).unwrap().2, "a-7-");
    assert_eq!(scan(&r2).len(), 110);
    // The torn generation's size is not a generation of the new file.
    assert!(open(&env, torn.size).is_err());
}

/// Damage anywhere in a two-generation table is found by `verify` (old commit records
/// included) and named with the file and an offset; metadata damage already at open; and
/// no damaged table answers with a wrong value.
#[test]
fn every_flipped_byte_is_found_with_file_and_offset() {
    let env = mem_env();
    let g1 = create(&env, &puts(0..40, 10, "a"));
    let g2 = append(&env, g1.size, &puts((0..40).step_by(3), 20, "b"));
    let good = env.read_all(&path(), ReadCause::Other).unwrap();
    assert_eq!(good.len() as u64, g2.size);
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x20;
        let mut f = env.create(&path(), WriteCause::Other).unwrap();
        f.append(&bad).unwrap();
        f.flush().unwrap();
        drop(f);
        let err = match open(&env, g2.size) {
            Err(e) => e,
            Ok(t) => {
                // Whatever it answers is right or an error.
                for k in 0..40u32 {
                    let key = format!("k{k:04}");
                    if let Ok(Some((ik, v))) = t.lookup(
                        key.as_bytes(),
                        &seek_key(key.as_bytes(), 100),
                        ReadCause::Get.into(),
                    ) {
                        let seq = parse_internal_key(&ik).unwrap().seq;
                        let want = if k % 3 == 0 { "b" } else { "a" };
                        assert_eq!(seq, if want == "b" { 20 } else { 10 }, "byte {i}");
                        assert!(v.starts_with(want.as_bytes()), "byte {i}");
                    }
                }
                t.verify()
                    .expect_err(&format!("flip at byte {i} not found"))
            }
        };
        assert!(err.is_corruption(), "byte {i}: {err}");
        assert!(err.to_string().contains("000012.sst"), "byte {i}: {err}");
    }
}

#[test]
fn a_short_file_another_number_or_identity_is_refused() {
    let env = mem_env();
    let g1 = create(&env, &puts(0..10, 1, "a"));
    let err = open(&env, g1.size + 1).unwrap_err();
    assert!(
        err.is_corruption() && err.to_string().contains("committed"),
        "{err}"
    );
    let err = open(&env, 3).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    // The same bytes under another number.
    let f = env.open(&path()).unwrap();
    let err = DTableFormat
        .open(
            f,
            TableId {
                number: NUMBER + 1,
                size: g1.size,
            },
            &TableReadOptions::default(),
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("MANIFEST lists it as table 13"),
        "{err}"
    );
    // An append under another store's identity.
    let f = env
        .reopen(&path(), g1.size, WriteCause::Compaction)
        .unwrap();
    let r = env.open(&path()).unwrap();
    let other = Some(TableIdentity {
        store_id: 1,
        number: NUMBER,
    });
    let id = TableId {
        number: NUMBER,
        size: g1.size,
    };
    assert!(DTableFormat.appender(f, r, id, &opts(), other).is_err());
    // An sst reader refuses a DTable and the other way round.
    let f = env.open(&path()).unwrap();
    assert!(
        crate::table::SstFormat
            .open(f, id, &TableReadOptions::default())
            .is_err()
    );
}

#[test]
fn the_sst_format_does_not_append() {
    let env = mem_env();
    create(&env, &puts(0..3, 1, "a"));
    let f = env.reopen(&path(), 10, WriteCause::Compaction).unwrap();
    let r = env.open(&path()).unwrap();
    let id = TableId {
        number: NUMBER,
        size: 10,
    };
    let err = crate::table::SstFormat
        .appender(f, r, id, &opts(), None)
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    assert!(!crate::table::SstFormat.appendable());
    assert!(DTableFormat.appendable());
}

/// The worked example of `docs/format/dtable.md`: its sizes, directory and footer are what
/// this code writes.
#[test]
fn the_format_docs_example() {
    use crate::format::{put_length_prefixed, put_varint32, put_varint64};
    let env = mem_env();
    let number = 7;
    let path = Path::new("/db").join(crate::table::table_file_name(number));
    let id = Some(TableIdentity {
        store_id: 0x1234,
        number,
    });
    let o = TableOptions::default();
    let f = env.create(&path, WriteCause::Flush).unwrap();
    let mut w = DTableFormat.builder(f, &o, id);
    w.add(&make_internal_key(b"a", 1, ValueKind::Value), b"x")
        .unwrap();
    let g1 = w.finish().unwrap();
    let f = env.reopen(&path, g1.size, WriteCause::Compaction).unwrap();
    let r = env.open(&path).unwrap();
    let tid = TableId {
        number,
        size: g1.size,
    };
    let mut w = DTableFormat.appender(f, r, tid, &o, id).unwrap();
    w.add(&make_internal_key(b"b", 2, ValueKind::Value), b"y")
        .unwrap();
    let g2 = w.finish().unwrap();
    let bytes = env.read_all(&path, ReadCause::Other).unwrap();
    let (footer, dir) = read_commit(&env.open(&path).unwrap(), g2.size).unwrap();
    let seg2_end = dir.segments[1].end;
    assert_eq!(footer.directory.offset, seg2_end);

    // The directory, annotated field by field.
    let line = |b: &[u8], comment: &str| {
        let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
        format!("{:<37}{comment}\n", hex.join(" "))
    };
    let mut text = String::new();
    text.push_str(&line(&[1], "flags: the identity follows"));
    let mut p = Vec::new();
    put_varint64(&mut p, 0x1234);
    text.push_str(&line(&p, "store id 0x1234"));
    text.push_str(&line(&[7], "table 7"));
    let mut p = Vec::new();
    put_varint32(&mut p, 2);
    text.push_str(&line(&p, "2 segments"));
    let mut all = vec![1u8];
    put_varint64(&mut all, 0x1234);
    all.push(7);
    all.push(2);
    for (i, s) in dir.segments.iter().enumerate() {
        let mut p = Vec::new();
        put_varint64(&mut p, s.start);
        put_varint64(&mut p, s.end);
        text.push_str(&line(
            &p,
            &format!("segment {}: bytes {}..{}", i + 1, s.start, s.end),
        ));
        all.extend_from_slice(&p);
        let mut p = Vec::new();
        for v in [s.entries, s.tombstones, s.smallest_seq, s.largest_seq] {
            put_varint64(&mut p, v);
        }
        text.push_str(&line(
            &p,
            &format!(
                "  {} entry, {} tombstones, sequence {}..={}",
                s.entries, s.tombstones, s.smallest_seq, s.largest_seq
            ),
        ));
        all.extend_from_slice(&p);
        for (k, what) in [(&s.smallest, "smallest"), (&s.largest, "largest")] {
            let mut p = Vec::new();
            put_length_prefixed(&mut p, k);
            let u = String::from_utf8_lossy(crate::key::user_key(k)).to_string();
            let q = parse_internal_key(k).unwrap();
            text.push_str(&line(
                &p,
                &format!("  {what}: \"{u}\", sequence {}, value", q.seq),
            ));
            all.extend_from_slice(&p);
        }
    }
    let dir_bytes = &bytes[footer.directory.offset as usize..][..footer.directory.size as usize];
    assert_eq!(dir_bytes, all.as_slice());
    let footer_bytes = &bytes[(g2.size as usize - FOOTER_LEN)..g2.size as usize];
    let mut ftext = String::new();
    let fb = |a: usize, b: usize| &footer_bytes[a..b];
    ftext.push_str(&line(
        fb(0, 8),
        &format!("directory offset {}", footer.directory.offset),
    ));
    ftext.push_str(&line(
        fb(8, 16),
        &format!(
            "directory size {} (without its trailer)",
            footer.directory.size
        ),
    ));
    ftext.push_str(&line(fb(16, 20), "2 segments"));
    ftext.push_str(&line(fb(20, 24), "reserved"));
    ftext.push_str(&line(fb(24, 28), "version 1"));
    ftext.push_str(&line(fb(28, 32), "masked CRC32C of bytes 0..28"));
    ftext.push_str(&line(fb(32, 40), "magic \"SHALEDTB\""));
    let doc = include_str!("../../../../../docs/format/dtable.md");
    let want = [
        format!(
            "generation 1 ends at\nbyte {}, generation 2 at byte {}",
            g1.size, g2.size
        ),
        format!(
            "The commit record of generation 2, from byte {}:",
            footer.directory.offset
        ),
        format!("```\n{text}```"),
        format!("```\n{ftext}```"),
    ];
    let missing: Vec<&String> = want.iter().filter(|w| !doc.contains(w.as_str())).collect();
    assert!(
        missing.is_empty(),
        "docs/format/dtable.md should hold:\n{}",
        missing
            .iter()
            .map(|w| w.as_str())
            .collect::<Vec<_>>()
            .join("\n----\n")
    );
}
