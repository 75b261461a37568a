//! Replays the fuzz seed corpus (`fuzz/corpus/<target>/`) through the fuzz targets' own
//! functions (`fuzz/src/lib.rs`, included below), so that every `cargo test` runs each
//! decoder on real encoder output and on a few thousand deterministic mutations of it,
//! without libFuzzer.
//!
//! `cargo test -p shale --test fuzz_corpus -- --ignored write_seed_corpus` regenerates the
//! checked-in seeds from the current encoders.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test setup failures fail the test"
)]

#[path = "../../../fuzz/src/lib.rs"]
mod harness;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use shale::env::mem::MemFs;
use shale::env::{Env, ReadCause};
use shale::table::block::BlockBuilder;
use shale::table::bloom::BloomBuilder;
use shale::table::sst::{BlockHandle, Table};
use shale::wal::LogReader;
use shale::{Compression, Db, Options, WriteBatch};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

/// A store's files, made by the engine itself.
fn store_files(compression: Compression) -> Vec<(String, Vec<u8>)> {
    let mem = MemFs::new();
    let env = Env::new(Arc::new(mem.clone()));
    let mut o = Options::default().with_env(env.clone());
    o.write_buffer_size = 8 * 1024;
    o.target_file_size = 4 * 1024;
    o.table.block_size = 256;
    o.table.compression = compression;
    let db = Db::open("/db", o).unwrap();
    for i in 0..300u32 {
        let v = format!("value-{i}-").repeat(1 + i as usize % 4);
        db.put(format!("key{:04}", i * 7 % 300).as_bytes(), v.as_bytes())
            .unwrap();
        if i % 9 == 0 {
            db.delete(format!("key{:04}", i / 2).as_bytes()).unwrap();
        }
    }
    db.compact_range(None, None).unwrap();
    for i in 0..20u32 {
        let mut b = WriteBatch::new();
        b.put(format!("b{i}").as_bytes(), b"batched");
        b.delete(format!("key{:04}", i).as_bytes());
        db.write(b).unwrap();
    }
    db.close().unwrap();
    mem.file_names()
        .into_iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            let bytes = env.read_all(&p, ReadCause::Other).ok()?;
            Some((name, bytes))
        })
        .collect()
}

fn with_mode(mode: u8, bytes: &[u8]) -> Vec<u8> {
    let mut v = vec![mode];
    v.extend_from_slice(bytes);
    v
}

fn log_records(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut r = LogReader::with_source(bytes, "seed.log");
    let mut out = Vec::new();
    let mut rec = Vec::new();
    while r.next_record(&mut rec).unwrap() {
        out.push(rec.clone());
    }
    out
}

/// Seeds for every target, from the real encoders.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut s: Vec<(&'static str, Vec<u8>)> = Vec::new();
    for (restart, n) in [(1usize, 5u32), (4, 40), (16, 3)] {
        let mut b = BlockBuilder::new(restart);
        for i in 0..n {
            let k = shale::key::make_internal_key(
                format!("key{i:03}").as_bytes(),
                u64::from(n - i),
                shale::key::ValueKind::Value,
            );
            b.add(&k, format!("v{i}").as_bytes());
        }
        s.push(("block", with_mode(0, b.finish())));
    }
    let mut bloom = BloomBuilder::new(10);
    for i in 0..50 {
        bloom.add_key(format!("key{i}").as_bytes());
    }
    s.push(("bloom", bloom.finish()));
    let mut h = Vec::new();
    BlockHandle {
        offset: 4096,
        size: 300,
    }
    .encode_varint(&mut h);
    s.push(("table_meta", with_mode(2, &h)));

    {
        use shale::key::ValueKind;
        use shale::values::vlog::format::{Pointer, encode_header, encode_record};
        let mut seg = encode_header(1, 1).to_vec();
        let mut rec = Vec::new();
        encode_record(&mut rec, 300, ValueKind::Value, false, b"k1", b"abc");
        encode_record(&mut rec, 301, ValueKind::Delete, true, b"k2", b"");
        seg.extend_from_slice(&rec);
        let mut one = Vec::new();
        encode_record(&mut one, 7, ValueKind::Value, true, b"key", &[b'v'; 100]);
        s.push(("vlog", with_mode(0, &one)));
        s.push(("vlog", with_mode(3, &one)));
        let p = Pointer {
            segment: 12,
            offset: 4096,
            length: 4118,
        };
        s.push(("vlog", with_mode(1, &p.to_vec())));
        s.push(("vlog", with_mode(2, &seg)));
    }
    for compression in [Compression::None, Compression::Lz4] {
        let files = store_files(compression);
        let mut tables = 0;
        for (name, bytes) in &files {
            if name.ends_with(".sst") && bytes.len() <= 8 * 1024 && tables < 3 {
                tables += 1;
                s.push(("table", with_mode(0, bytes)));
                s.push(("table", with_mode(7, bytes)));
                s.push(("table_meta", with_mode(0, &bytes[bytes.len() - 64..])));
                let env = Env::memory();
                let p = Path::new("/t.sst");
                let mut f = env
                    .create(p, shale::env::WriteCause::Other)
                    .expect("create");
                f.append(bytes).unwrap();
                f.sync().unwrap();
                let t = Table::open(env.open(p).unwrap(), 1, None, true).unwrap();
                s.push(("table_meta", with_mode(1, &t.properties().encode())));
            } else if name.ends_with(".log") && !bytes.is_empty() {
                s.push(("wal", with_mode(0, bytes)));
                s.push(("wal", with_mode(3, bytes)));
                for r in log_records(bytes).into_iter().take(4) {
                    s.push(("batch", r));
                }
            } else if name.starts_with("MANIFEST-") {
                s.push(("manifest_log", with_mode(0, bytes)));
                s.push(("manifest_log", with_mode(1, bytes)));
                for r in log_records(bytes).into_iter().take(6) {
                    s.push(("manifest_edit", r));
                }
            } else if name == "CURRENT" {
                s.push(("current", bytes.clone()));
            }
        }
    }
    s
}

/// Deterministic mutations: bit flips at a stride, truncations, a byte run set to 0xff.
fn mutations(seed: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let len = seed.len();
    if len == 0 {
        return out;
    }
    let stride = (len / 48).max(1);
    for (n, pos) in (0..len).step_by(stride).enumerate() {
        let mut m = seed.to_vec();
        m[pos] ^= 1 << (n % 8);
        out.push(m);
    }
    for cut in [
        1,
        2,
        7,
        len / 2,
        len.saturating_sub(1),
        len.saturating_sub(9),
    ] {
        out.push(seed[..cut.min(len)].to_vec());
    }
    for at in [1, len / 3, len.saturating_sub(12)] {
        let mut m = seed.to_vec();
        for b in m.iter_mut().skip(at).take(8) {
            *b = 0xff;
        }
        out.push(m);
    }
    out
}

fn run_checked(target: &str, data: &[u8], what: &str) {
    let r = std::panic::catch_unwind(|| harness::run(target, data));
    assert!(r.is_ok(), "target {target} panicked on {what}");
}

#[test]
fn checked_in_seed_corpus_replays() {
    let mut total = 0;
    for target in harness::TARGETS {
        let dir = corpus_dir().join(target);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no seeds for target {target}");
        for f in &files {
            let data = std::fs::read(f).unwrap();
            run_checked(target, &data, &f.display().to_string());
            total += 1;
        }
    }
    eprintln!("replayed {total} corpus files");
}

#[test]
fn fresh_seeds_and_their_mutations_replay() {
    let seeds = seeds();
    for target in harness::TARGETS {
        assert!(
            seeds.iter().any(|(t, _)| *t == target),
            "no fresh seed for {target}"
        );
    }
    let mut runs = 0;
    for (i, (target, seed)) in seeds.iter().enumerate() {
        run_checked(target, seed, &format!("fresh seed {i}"));
        for (j, m) in mutations(seed).iter().enumerate() {
            run_checked(target, m, &format!("mutation {j} of fresh seed {i}"));
            runs += 1;
        }
    }
    eprintln!("{} seeds, {runs} mutations", seeds.len());
}

/// Regenerate `fuzz/corpus/<target>/seed-*` from the current encoders.
#[test]
#[ignore = "writes into the source tree; run by hand after a format change"]
fn write_seed_corpus() {
    let seeds = seeds();
    for target in harness::TARGETS {
        let dir = corpus_dir().join(target);
        std::fs::create_dir_all(&dir).unwrap();
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("seed-"))
            {
                std::fs::remove_file(p).unwrap();
            }
        }
        for (n, (_, bytes)) in seeds.iter().filter(|(t, _)| *t == target).enumerate() {
            std::fs::write(dir.join(format!("seed-{n:02}")), bytes).unwrap();
        }
    }
}
