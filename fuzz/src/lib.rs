//! The bodies of Shale's fuzz targets, one function per decoder.
//!
//! Each `fuzz_targets/<name>.rs` calls [`run`] with its name; `crates/shale/tests/fuzz_corpus.rs`
//! includes this file and replays the seed corpus through the same functions in a normal
//! `cargo test`, so this file uses only the public API of `shale` and `std`.
//!
//! Every function must return normally for any input: a decoder may reject bytes, never
//! panic, hang or allocate by an unchecked length. The first input byte often selects a
//! mode; modes that recompute checksums let the fuzzer reach the code behind them.

use std::path::Path;
use std::sync::Arc;

use shale::cache::block_cache::BlockCache;
use shale::env::{Env, ReadCause};
use shale::format::{crc32c_two, mask_crc};
use shale::iter::InternalIterator;
use shale::manifest::{self, VersionEdit};
use shale::table::block::{Block, BlockCursor};
use shale::table::bloom::BloomFilter;
use shale::table::sst::{BlockHandle, FOOTER_LEN, Footer, Table, TableProperties};
use shale::version::Version;
use shale::wal::{BLOCK_SIZE, HEADER_SIZE, LogReader};

/// Every target, by name.
pub const TARGETS: [&str; 10] = [
    "block",
    "table",
    "table_meta",
    "bloom",
    "wal",
    "batch",
    "manifest_edit",
    "manifest_log",
    "current",
    "vlog",
];

/// Run target `name` on `data`.
///
/// # Panics
/// On an unknown target name, and wherever a decoder breaks its own contract.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "block" => block(data),
        "table" => table(data),
        "table_meta" => table_meta(data),
        "bloom" => bloom(data),
        "wal" => wal(data),
        "batch" => batch(data),
        "manifest_edit" => manifest_edit(data),
        "manifest_log" => manifest_log(data),
        "current" => current(data),
        "vlog" => vlog(data),
        other => panic!("unknown fuzz target {other}"),
    }
}

/// Steps an iterator walk may take: enough for any block or table the fuzzer builds.
const MAX_STEPS: usize = 100_000;

/// Walk `it` forwards and backwards and seek to each key seen; returns the keys.
fn exercise(it: &mut dyn InternalIterator) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    if it.seek_to_first().is_ok() {
        while it.valid() && keys.len() < MAX_STEPS {
            keys.push(it.key().to_vec());
            let _ = it.value();
            if it.next().is_err() {
                break;
            }
        }
    }
    let mut steps = 0;
    if it.seek_to_last().is_ok() {
        while it.valid() && steps < MAX_STEPS {
            let _ = (it.key(), it.value());
            if it.prev().is_err() {
                break;
            }
            steps += 1;
        }
    }
    for k in keys.iter().take(64) {
        let _ = it.seek(k);
        let _ = it.seek_for_prev(k);
    }
    for k in [
        &b""[..],
        &[0u8; 8],
        &[0xff; 12],
        b"k\x00\x00\x00\x00\x00\x00\x00\x01",
    ] {
        let _ = it.seek(k);
        let _ = it.seek_for_prev(k);
        if it.valid() {
            let _ = it.next();
        }
    }
    keys
}

/// A block's bytes (after the mode byte): restart array, cursor moves, seeks.
pub fn block(data: &[u8]) {
    let Some((_, bytes)) = data.split_first() else {
        return;
    };
    let Ok(b) = Block::new(bytes.to_vec().into()) else {
        return;
    };
    for i in 0..b.num_restarts().min(1024) {
        let _ = b.restart_entry(i);
    }
    let mut it = b.iter(Arc::from(Path::new("fuzz.blk")), 0);
    exercise(&mut it);
    let mut c = BlockCursor::new(b.clone(), 0);
    for i in 0..b.num_restarts().min(64) {
        let _ = c.seek_to_entry(i);
        if c.valid() {
            let _ = c.next_entry();
        }
        if c.valid() {
            let _ = c.prev_entry();
        }
        if c.valid() {
            let _ = c.take_key();
        }
    }
}

/// Recompute the checksums of the footer and of the blocks it points at, so that mutated
/// tables get past them.
fn fix_table_checksums(bytes: &mut [u8]) {
    let len = bytes.len();
    if len < FOOTER_LEN {
        return;
    }
    let f = len - FOOTER_LEN;
    let u64_at = |b: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(w)
    };
    for h in 0..3 {
        let off = u64_at(bytes, f + 16 * h);
        let size = u64_at(bytes, f + 16 * h + 8);
        let end = off.checked_add(size).and_then(|e| e.checked_add(5));
        if end.is_some_and(|e| e <= f as u64) {
            let (off, size) = (off as usize, size as usize);
            let ty = bytes[off + size];
            let crc = mask_crc(crc32c_two(&bytes[off..off + size], &[ty]));
            bytes[off + size + 1..off + size + 5].copy_from_slice(&crc.to_le_bytes());
        }
    }
    let crc = mask_crc(crc32c_two(&bytes[f..f + 52], &[]));
    bytes[f + 52..f + 56].copy_from_slice(&crc.to_le_bytes());
}

/// A whole table file. Mode bits: 1 fix checksums, 2 use a block cache, 4 verify data block
/// checksums on reads.
pub fn table(data: &[u8]) {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    let mut bytes = bytes.to_vec();
    if mode & 1 != 0 {
        fix_table_checksums(&mut bytes);
    }
    let env = Env::memory();
    let path = Path::new("/000001.sst");
    if write_file(&env, path, &bytes).is_err() {
        return;
    }
    let Ok(file) = env.open(path) else {
        return;
    };
    let cache = (mode & 2 != 0).then(|| Arc::new(BlockCache::new(1 << 20)));
    let Ok(t) = Table::open(file, 1, cache, mode & 4 != 0) else {
        return;
    };
    let t = Arc::new(t);
    let _ = (t.properties(), t.file_size(), t.may_contain(b"k"));
    let _ = t.verify();
    let mut it = t.iter(ReadCause::Scan);
    let keys = exercise(&mut it);
    for k in keys.iter().take(64) {
        let user = k.get(..k.len().saturating_sub(8)).unwrap_or_default();
        let _ = t.get(user, k, ReadCause::Get);
    }
    let _ = t.get(b"", b"\xff\xff\xff\xff\xff\xff\xff\xff", ReadCause::Get);
}

/// The fixed-size and small table structures: footer, properties block, block handle.
pub fn table_meta(data: &[u8]) {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => {
            for file_len in [bytes.len() as u64, 1 << 20, u64::MAX] {
                if let Ok(f) = Footer::decode(bytes, file_len) {
                    let again = Footer::decode(&f.encode(), file_len);
                    assert_eq!(again.ok(), Some(f), "footer round trip");
                }
            }
        }
        1 => {
            if let Ok(p) = TableProperties::decode(bytes) {
                let again = TableProperties::decode(&p.encode());
                assert_eq!(again.ok(), Some(p), "properties round trip");
            }
        }
        _ => {
            if let Ok(h) = BlockHandle::decode_varint(bytes) {
                let _ = (h.end(), h.check_within(1 << 30, "block"));
            }
        }
    }
}

/// A bloom filter block: construction and probes.
pub fn bloom(data: &[u8]) {
    let Ok(f) = BloomFilter::new(data.to_vec()) else {
        return;
    };
    let _ = (f.len(), f.probes());
    for k in data.chunks(7).take(64) {
        let _ = f.may_contain(k);
    }
    let _ = f.may_contain_hash(u64::MAX);
}

/// Recompute the checksum of every physical record that fits, walking blocks as the reader
/// does, so that mutated logs reach fragment assembly and payload decoding.
fn fix_log_checksums(bytes: &mut [u8]) {
    let mut pos = 0;
    while pos + HEADER_SIZE <= bytes.len() {
        let left = BLOCK_SIZE - pos % BLOCK_SIZE;
        if left < HEADER_SIZE {
            pos += left;
            continue;
        }
        let len = usize::from(u16::from_le_bytes([bytes[pos + 4], bytes[pos + 5]]));
        let end = pos + HEADER_SIZE + len;
        if len > left - HEADER_SIZE || end > bytes.len() {
            return;
        }
        let typ = bytes[pos + 6];
        let crc = mask_crc(crc32c_two(&[typ], &bytes[pos + HEADER_SIZE..end]));
        bytes[pos..pos + 4].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
}

/// A log file (WAL framing) and the write batches in it. Mode bits: 1 fix checksums, 2 a
/// small record size limit.
pub fn wal(data: &[u8]) {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    let mut bytes = bytes.to_vec();
    if mode & 1 != 0 {
        fix_log_checksums(&mut bytes);
    }
    let mut r = LogReader::with_source(bytes.as_slice(), "fuzz.log");
    if mode & 2 != 0 {
        r = r.with_max_record_size(1000);
    }
    let mut record = Vec::new();
    // Each record holds at least one byte of the file, so this bounds the loop.
    for _ in 0..=bytes.len() {
        match r.next_record(&mut record) {
            Ok(true) => {
                batch(&record);
                let _ = r.last_record_offset();
            }
            Ok(false) => break,
            Err(_) => {
                assert!(r.next_record(&mut record).is_err(), "errors are sticky");
                break;
            }
        }
    }
    assert!(r.valid_end_offset() <= bytes.len() as u64);
    assert!(r.dropped_tail_bytes() <= bytes.len() as u64);
}

/// A write batch as logged.
pub fn batch(data: &[u8]) {
    if let Some((declared, walked)) = shale::fuzzing::decode_batch(data) {
        assert_eq!(
            declared, walked,
            "an accepted batch yields every entry it declares"
        );
    }
}

/// One MANIFEST record: a version edit, its round trip, and applying it to a version.
pub fn manifest_edit(data: &[u8]) {
    let Ok(e) = VersionEdit::decode(data) else {
        return;
    };
    let mut buf = Vec::new();
    e.encode(&mut buf);
    assert_eq!(
        VersionEdit::decode(&buf).ok(),
        Some(e.clone()),
        "edit round trip"
    );
    if let Ok(v) = Version::new(7).apply(&e) {
        check_version(&v);
    }
}

fn check_version(v: &Version) {
    for level in 0..v.num_levels() {
        let _ = v.level_bytes(level);
        for f in v.level(level).iter().take(16) {
            let _ = v.overlapping(level, Some(&f.smallest), Some(&f.largest));
        }
    }
    let snap = v.snapshot_edit();
    let again = Version::new(v.num_levels()).apply(&snap);
    assert!(
        again.is_ok(),
        "a version's snapshot edit applies to an empty version"
    );
}

/// A whole MANIFEST file: framing, the torn-tail rule, edits, and replaying them. Mode bit
/// 1 fixes record checksums.
pub fn manifest_log(data: &[u8]) {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    let mut bytes = bytes.to_vec();
    if mode & 1 != 0 {
        fix_log_checksums(&mut bytes);
    }
    let env = Env::memory();
    let dir = Path::new("/db");
    if write_file(&env, &dir.join("MANIFEST-000001"), &bytes).is_err() {
        return;
    }
    let Ok(edits) = manifest::read_manifest(&env, dir, 1) else {
        return;
    };
    let mut v = Version::new(7);
    for e in &edits {
        match v.apply(e) {
            Ok(next) => v = next,
            Err(_) => return,
        }
    }
    check_version(&v);
}

/// The CURRENT file.
pub fn current(data: &[u8]) {
    let env = Env::memory();
    let dir = Path::new("/db");
    if write_file(&env, &dir.join("CURRENT"), data).is_err() {
        return;
    }
    if let Ok(n) = manifest::read_current(&env, dir) {
        // Whatever CURRENT names must be what write_current writes for that number.
        let env2 = Env::memory();
        if env2.fs().create_dir_all(dir).is_ok() && manifest::write_current(&env2, dir, n).is_ok() {
            assert_eq!(manifest::read_current(&env2, dir).ok(), Some(n));
        }
    }
}

/// Create `path` (and its directory) holding `bytes`.
fn write_file(env: &Env, path: &Path, bytes: &[u8]) -> shale::Result<()> {
    if let Some(dir) = path.parent() {
        env.fs().create_dir_all(dir)?;
    }
    let mut f = env.create(path, shale::env::WriteCause::Other)?;
    f.append(bytes)?;
    f.sync()
}

/// `vlog`: the value-log decoders. Mode (first byte) 0: a record and its header alone;
/// 1: a value pointer; 2: a whole segment, scanned as replay does; 3: a record whose
/// checksum is recomputed first (to reach the length and key checks behind it).
pub fn vlog(data: &[u8]) {
    use shale::format::crc32c;
    use shale::values::vlog::format::{Pointer, decode_header, decode_record, record_len};
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => {
            let _ = decode_header(rest);
            if let Ok(r) = decode_record(rest) {
                assert_eq!(record_len(r.key, r.value), rest.len());
            }
        }
        1 => {
            if let Ok(p) = Pointer::decode(rest) {
                assert_eq!(Pointer::decode(&p.to_vec()), Ok(p));
            }
        }
        2 => {
            let _ = shale::fuzzing::scan_vlog_segment(rest);
        }
        _ => {
            if rest.len() < 4 {
                return;
            }
            let mut b = rest.to_vec();
            let c = mask_crc(crc32c(&b[4..]));
            b[..4].copy_from_slice(&c.to_le_bytes());
            if let Ok(r) = decode_record(&b) {
                assert_eq!(record_len(r.key, r.value), b.len());
            }
        }
    }
}
