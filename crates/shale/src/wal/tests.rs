//! Tests of the log framing and the write batch, on byte buffers.

use super::reader::LOST_PAGE_SIZE;
use super::writer::frame_record;
use super::*;
use crate::error::{Error, Result};
use crate::key::ValueKind;

/// Deterministic pseudo-random numbers (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A record of `len` lowercase letters derived from `seed`. Letters never look like a
/// record type byte (1..=4), which keeps the brute-force resync scan cheap in the
/// every-truncation tests; checksums and lengths in headers still do.
fn record(seed: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| b'a' + ((seed * 7 + i) % 26) as u8)
        .collect()
}

/// Write `records` to a byte log; returns the bytes and each record's (start, end) offset.
fn write_log(records: &[Vec<u8>]) -> (Vec<u8>, Vec<(u64, u64)>) {
    let mut w = LogWriter::with_sink(Vec::new());
    let mut spans = Vec::new();
    for r in records {
        let start = w.len();
        w.add_record(r).unwrap();
        spans.push((start, w.len()));
    }
    assert_eq!(w.len(), w.sink().len() as u64);
    (w.into_sink(), spans)
}

/// The records read from a log and the reader, positioned at the end.
type ReadBack<'a> = (Vec<Vec<u8>>, LogReader<&'a [u8]>);

/// Read every record; Err if the reader reports an error.
fn read_all(log: &[u8]) -> Result<ReadBack<'_>> {
    let mut r = LogReader::with_source(log, "test.log");
    let mut out = Vec::new();
    let mut rec = Vec::new();
    while r.next_record(&mut rec)? {
        out.push(rec.clone());
    }
    Ok((out, r))
}

/// The physical start offsets (header positions) of a log written by our writer.
fn physical_offsets(log: &[u8]) -> Vec<(u64, u8)> {
    let mut v = Vec::new();
    let mut pos = 0usize;
    while pos < log.len() {
        let in_block = pos % BLOCK_SIZE;
        if BLOCK_SIZE - in_block < HEADER_SIZE {
            pos += BLOCK_SIZE - in_block;
            continue;
        }
        let len = u16::from_le_bytes([log[pos + 4], log[pos + 5]]) as usize;
        v.push((pos as u64, log[pos + 6]));
        pos += HEADER_SIZE + len;
    }
    v
}

fn corruption_offset(e: &Error) -> u64 {
    match e {
        Error::Corruption { offset, .. } => *offset,
        other => panic!("expected corruption, got {other}"),
    }
}

#[test]
fn round_trip_sizes() {
    let sizes = [
        0,
        1,
        100,
        BLOCK_SIZE - HEADER_SIZE,
        BLOCK_SIZE - HEADER_SIZE - 1,
        BLOCK_SIZE - 2 * HEADER_SIZE,
        BLOCK_SIZE,
        3 * BLOCK_SIZE + 17,
        0,
        100_000,
        5,
    ];
    let records: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| record(i, n))
        .collect();
    let (log, spans) = write_log(&records);
    let (got, r) = read_all(&log).unwrap();
    assert_eq!(got, records);
    assert_eq!(r.valid_end_offset(), log.len() as u64);
    assert_eq!(r.dropped_tail_bytes(), 0);
    assert_eq!(r.last_record_offset(), spans.last().unwrap().0);
}

#[test]
fn only_empty_records() {
    let records = vec![Vec::new(); 10_000];
    let (log, _) = write_log(&records);
    // 10,000 seven-byte headers cross two block boundaries.
    assert!(log.len() > 2 * BLOCK_SIZE);
    assert_eq!(read_all(&log).unwrap().0, records);
}

#[test]
fn empty_log() {
    let (got, r) = read_all(&[]).unwrap();
    assert!(got.is_empty());
    assert_eq!(r.valid_end_offset(), 0);
    assert_eq!(r.dropped_tail_bytes(), 0);
}

#[test]
fn exactly_one_block() {
    let (log, _) = write_log(&[record(1, BLOCK_SIZE - HEADER_SIZE), record(2, 3)]);
    // The first record fills block 0 exactly; the second starts block 1 with no padding.
    assert_eq!(log.len(), BLOCK_SIZE + HEADER_SIZE + 3);
    assert_eq!(log[6], RecordType::Full as u8);
    assert_eq!(log[BLOCK_SIZE + 6], RecordType::Full as u8);
}

#[test]
fn short_block_tail_is_zero_filled() {
    // Leave 6 bytes in block 0: too few for a header.
    let first = BLOCK_SIZE - HEADER_SIZE - 6;
    let (log, spans) = write_log(&[record(1, first), record(2, 10)]);
    assert_eq!(spans[1].0, (BLOCK_SIZE - 6) as u64);
    assert_eq!(&log[BLOCK_SIZE - 6..BLOCK_SIZE], &[0u8; 6]);
    assert_eq!(log[BLOCK_SIZE + 6], RecordType::Full as u8);
    assert_eq!(read_all(&log).unwrap().0.len(), 2);

    // Exactly 7 bytes left: an empty FIRST fragment fills them.
    let (log, _) = write_log(&[record(1, BLOCK_SIZE - 2 * HEADER_SIZE), record(2, 10)]);
    assert_eq!(log[BLOCK_SIZE - 1], RecordType::First as u8);
    assert_eq!(log[BLOCK_SIZE + 6], RecordType::Last as u8);
    assert_eq!(read_all(&log).unwrap().0[1], record(2, 10));
}

#[test]
fn fragment_types() {
    let (log, _) = write_log(&[record(0, 2 * BLOCK_SIZE + 100)]);
    let types: Vec<u8> = physical_offsets(&log).iter().map(|p| p.1).collect();
    assert_eq!(types, [2, 3, 4]);
}

#[test]
fn one_append_per_record() {
    #[derive(Default)]
    struct Counting(Vec<u8>, usize);
    impl LogSink for Counting {
        fn append(&mut self, d: &[u8]) -> Result<()> {
            self.1 += 1;
            self.0.extend_from_slice(d);
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
    }
    let mut w = LogWriter::with_sink(Counting::default());
    w.add_record(&record(0, 5 * BLOCK_SIZE)).unwrap();
    w.add_record(b"x").unwrap();
    assert_eq!(w.sink().1, 2);
}

#[test]
fn failed_sink_poisons_writer() {
    struct Failing;
    impl LogSink for Failing {
        fn append(&mut self, _: &[u8]) -> Result<()> {
            Err(Error::io(
                "append",
                "x.log",
                std::io::Error::other("disk full"),
            ))
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            0
        }
    }
    let mut w = LogWriter::with_sink(Failing);
    assert!(matches!(w.add_record(b"a"), Err(Error::Io { .. })));
    assert!(matches!(w.sync(), Err(Error::ReadOnly(_))));
    assert!(matches!(w.add_record(b"a"), Err(Error::ReadOnly(_))));
}

/// `add_record_and_flush` frames records exactly as `add_record` then `flush` do, and a
/// sink whose flush fails poisons the writer with the step named as before ("flush: ...").
#[test]
fn add_record_and_flush_matches_add_record_then_flush() {
    let records: Vec<Vec<u8>> = (0..40)
        .map(|i| record(i, (i * 997) % (BLOCK_SIZE + 50)))
        .collect();
    let (expected, _) = write_log(&records);
    let mut w = LogWriter::with_sink(Vec::new());
    for r in &records {
        w.add_record_and_flush(r).unwrap();
    }
    assert_eq!(w.len(), expected.len() as u64);
    assert_eq!(w.sink(), &expected);

    struct FailingFlush(Vec<u8>);
    impl LogSink for FailingFlush {
        fn append(&mut self, d: &[u8]) -> Result<()> {
            self.0.extend_from_slice(d);
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Err(Error::io(
                "write",
                "x.log",
                std::io::Error::other("disk full"),
            ))
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
    }
    let mut w = LogWriter::with_sink(FailingFlush(Vec::new()));
    assert!(matches!(
        w.add_record_and_flush(b"a"),
        Err(Error::Io { .. })
    ));
    // The record was appended before the flush failed: the offset counts it.
    assert_eq!(w.len(), w.sink().0.len() as u64);
    match w.add_record(b"b") {
        Err(Error::ReadOnly(m)) => assert!(m.contains("(flush: "), "{m}"),
        other => panic!("expected ReadOnly, got {other:?}"),
    }
}

#[test]
fn many_records_crossing_blocks() {
    let mut rng = Rng(42);
    let records: Vec<Vec<u8>> = (0..2000)
        .map(|i| {
            let n = match rng.below(10) {
                0 => 0,
                1 => rng.below(3 * BLOCK_SIZE),
                _ => rng.below(3000),
            };
            let mut v = record(i, n);
            for b in v.iter_mut().take(8) {
                *b = rng.next() as u8; // arbitrary bytes too
            }
            v
        })
        .collect();
    let (log, _) = write_log(&records);
    assert!(log.len() > 100 * BLOCK_SIZE);
    assert_eq!(read_all(&log).unwrap().0, records);
}

#[test]
fn writer_continues_at_sink_offset() {
    // Framing depends on the file offset: a writer resumed on a non-empty sink must place
    // records exactly as one writer would have.
    let records = [record(0, 20_000), record(1, 20_000)];
    let (whole, _) = write_log(&records);
    let mut w = LogWriter::with_sink(Vec::new());
    w.add_record(&records[0]).unwrap();
    let mut w = LogWriter::with_sink(w.into_sink());
    w.add_record(&records[1]).unwrap();
    assert_eq!(w.into_sink(), whole);
}

#[test]
fn torn_tail_at_every_length() {
    let records = vec![
        record(0, 5),
        record(1, 0),
        record(2, 1200),
        record(3, 29_000),
        record(4, 4000), // crosses into block 1
        record(5, 40),
        record(6, 0),
        record(7, 7),
    ];
    let (log, spans) = write_log(&records);
    assert!(log.len() > BLOCK_SIZE);
    for cut in 0..=log.len() {
        let (got, r) = read_all(&log[..cut]).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let complete = spans.iter().filter(|s| s.1 <= cut as u64).count();
        assert_eq!(got.len(), complete, "cut at {cut}");
        assert_eq!(got, records[..complete], "cut at {cut}");
        let end = if complete == 0 {
            0
        } else {
            spans[complete - 1].1
        };
        assert_eq!(r.valid_end_offset(), end, "cut at {cut}");
        assert_eq!(r.dropped_tail_bytes(), cut as u64 - end, "cut at {cut}");
    }
}

#[test]
fn zero_filled_tail_is_tolerated() {
    let records = vec![record(0, 100), record(1, 50_000)];
    let (mut log, spans) = write_log(&records);
    log.resize(log.len() + 3 * BLOCK_SIZE + 11, 0);
    let (got, r) = read_all(&log).unwrap();
    assert_eq!(got, records);
    assert_eq!(r.valid_end_offset(), spans[1].1);
    assert_eq!(r.dropped_tail_bytes(), 3 * BLOCK_SIZE as u64 + 11);
}

#[test]
fn flipped_bit_in_middle_is_corruption() {
    let records: Vec<Vec<u8>> = (0..6).map(|i| record(i, 300 + i * 10)).collect();
    let (log, spans) = write_log(&records);
    let bad = spans[2].0 as usize;
    // A bit in the checksum, the length, the type and the payload of record 2.
    for at in [bad, bad + 4, bad + 5, bad + 6, bad + 7, bad + 200] {
        for bit in [0, 3, 7] {
            let mut damaged = log.clone();
            damaged[at] ^= 1 << bit;
            let e = read_all(&damaged)
                .err()
                .unwrap_or_else(|| panic!("byte {at} bit {bit}"));
            assert_eq!(
                corruption_offset(&e),
                bad as u64,
                "byte {at} bit {bit}: {e}"
            );
            assert!(e.to_string().contains("test.log"), "{e}");
        }
    }
}

#[test]
fn corruption_is_reported_again_and_records_before_it_come_back() {
    let records: Vec<Vec<u8>> = (0..4).map(|i| record(i, 100)).collect();
    let (mut log, spans) = write_log(&records);
    log[spans[2].0 as usize + 50] ^= 0x10;
    let mut r = LogReader::with_source(&log[..], "x.log");
    let mut rec = Vec::new();
    assert!(r.next_record(&mut rec).unwrap());
    assert!(r.next_record(&mut rec).unwrap());
    let e1 = r.next_record(&mut rec).unwrap_err();
    let e2 = r.next_record(&mut rec).unwrap_err();
    assert_eq!(corruption_offset(&e1), spans[2].0);
    assert_eq!(corruption_offset(&e2), spans[2].0);
}

#[test]
fn damage_in_a_middle_fragment_names_that_fragment() {
    let records = vec![record(0, 10), record(1, 3 * BLOCK_SIZE), record(2, 10)];
    let (mut log, _) = write_log(&records);
    let phys = physical_offsets(&log);
    let (middle, typ) = phys[2];
    assert_eq!(typ, RecordType::Middle as u8);
    log[middle as usize + 1000] ^= 1;
    let e = read_all(&log).unwrap_err();
    assert_eq!(corruption_offset(&e), middle);
}

#[test]
fn corrupt_length_with_valid_record_in_a_later_block() {
    // The bad record is the last one of its block; the next valid record is in block 1.
    let records = vec![
        record(0, 10),
        record(1, BLOCK_SIZE - 2 * HEADER_SIZE - 10),
        record(2, 10),
    ];
    let (mut log, spans) = write_log(&records);
    assert_eq!(spans[2].0, BLOCK_SIZE as u64);
    log[spans[1].0 as usize + 5] ^= 0x80; // length field: runs past the block
    assert_eq!(corruption_offset(&read_all(&log).unwrap_err()), spans[1].0);
}

#[test]
fn flipped_bit_in_last_record_is_a_torn_tail() {
    let records: Vec<Vec<u8>> = (0..5).map(|i| record(i, 1000 * i)).collect();
    let (log, spans) = write_log(&records);
    let last = spans[4];
    for at in [last.0, last.0 + 5, last.0 + 6, last.0 + 500, last.1 - 1] {
        let mut damaged = log.clone();
        damaged[at as usize] ^= 0x04;
        let (got, r) = read_all(&damaged).unwrap();
        assert_eq!(got, records[..4], "byte {at}");
        assert_eq!(r.valid_end_offset(), last.0);
        assert_eq!(r.dropped_tail_bytes(), last.1 - last.0);
    }
}

#[test]
fn zeros_in_the_middle_are_corruption() {
    let records: Vec<Vec<u8>> = (0..3).map(|i| record(i, 100)).collect();
    let (mut log, spans) = write_log(&records);
    let (s, e) = spans[1];
    log[s as usize..e as usize].fill(0);
    assert_eq!(corruption_offset(&read_all(&log).unwrap_err()), s);
}

/// Read every record with the lost-page rule of the newest log.
fn read_all_newest(log: &[u8]) -> Result<ReadBack<'_>> {
    let mut r = LogReader::with_source(log, "test.log").tolerate_lost_pages(true);
    let mut out = Vec::new();
    let mut rec = Vec::new();
    while r.next_record(&mut rec)? {
        out.push(rec.clone());
    }
    Ok((out, r))
}

#[test]
fn lost_pages_end_the_newest_log() {
    let records: Vec<Vec<u8>> = (0..60).map(|i| record(i, 500)).collect();
    let (log, spans) = write_log(&records);
    let page = LOST_PAGE_SIZE as usize;
    // A whole page lost from the unsynced tail: zeros, with valid records after it.
    let mut holed = log.clone();
    holed[2 * page..3 * page].fill(0);
    assert!(read_all(&holed).is_err(), "without the rule it is damage");
    let (got, r) = read_all_newest(&holed).unwrap();
    let before = spans
        .iter()
        .take_while(|&&(_, e)| e <= 2 * page as u64)
        .count();
    assert_eq!(got, records[..before]);
    assert_eq!(r.valid_end_offset(), spans[before - 1].1);
    // The unsynced rest of the page holding the synced end: zeros from a record boundary.
    let (s, _) = spans[20];
    let end = (s as usize / page + 1) * page;
    let mut torn = log.clone();
    torn[s as usize..end].fill(0);
    let (got, _) = read_all_newest(&torn).unwrap();
    assert_eq!(got, records[..20]);
    // A flipped bit, or zeros that stop short of a page end, stay corruption.
    let mut flipped = log.clone();
    flipped[spans[20].0 as usize + 9] ^= 4;
    assert_eq!(
        corruption_offset(&read_all_newest(&flipped).unwrap_err()),
        s
    );
    let mut zeroed = log.clone();
    zeroed[s as usize..s as usize + 100].fill(0);
    assert_eq!(corruption_offset(&read_all_newest(&zeroed).unwrap_err()), s);
}

#[test]
fn random_damage_yields_a_prefix_or_corruption() {
    // Whatever the damage, the reader never panics, and what it returns without error is a
    // prefix of what was written: never a hole, never a changed record.
    let mut rng = Rng(7);
    let records: Vec<Vec<u8>> = (0..60)
        .map(|i| {
            let n = if i % 9 == 0 { 40_000 } else { rng.below(2000) };
            (0..n).map(|_| rng.next() as u8).collect()
        })
        .collect();
    let (log, _) = write_log(&records);
    for round in 0..300 {
        let mut d = log.clone();
        for _ in 0..=rng.below(4) {
            let at = rng.below(d.len());
            match rng.below(5) {
                0 | 1 => d[at] ^= 1 << rng.below(8),
                2 | 3 => d[at] = rng.next() as u8,
                _ => d.truncate(at.max(1)),
            }
        }
        match read_all(&d) {
            Ok((got, _)) => assert_eq!(got, records[..got.len()], "round {round}"),
            Err(e) => assert!(e.is_corruption(), "round {round}: {e}"),
        }
    }
}

/// One physical record with an explicit type (for malformed sequences).
fn physical(typ: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = record_checksum(typ, payload).to_le_bytes().to_vec();
    v.extend_from_slice(&(payload.len() as u16).to_le_bytes());
    v.push(typ);
    v.extend_from_slice(payload);
    v
}

#[test]
fn malformed_sequences() {
    let full = physical(1, b"ok");
    // FIRST never finished, then a FULL: corruption at the FIRST.
    let mut log = physical(1, b"a");
    let first_at = log.len() as u64;
    log.extend(physical(2, b"b"));
    log.extend(&full);
    assert_eq!(corruption_offset(&read_all(&log).unwrap_err()), first_at);

    // MIDDLE without FIRST followed by a valid record.
    let mut log = physical(3, b"m");
    log.extend(&full);
    assert_eq!(corruption_offset(&read_all(&log).unwrap_err()), 0);

    // Unknown type with a valid checksum, followed by a valid record.
    let mut log = full.clone();
    log.extend(physical(9, b"future"));
    log.extend(&full);
    let e = read_all(&log).unwrap_err();
    assert_eq!(corruption_offset(&e), full.len() as u64);
    assert!(e.to_string().contains("unknown record type 9"), "{e}");

    // A FIRST without LAST at the end of the file is a torn tail.
    let mut log = full.clone();
    log.extend(physical(2, b"x"));
    log.extend(physical(3, b"y"));
    let (got, r) = read_all(&log).unwrap();
    assert_eq!(got, [b"ok".to_vec()]);
    assert_eq!(r.valid_end_offset(), full.len() as u64);
}

#[test]
fn record_size_is_bounded() {
    let (log, spans) = write_log(&[record(0, 10), record(1, 5 * BLOCK_SIZE)]);
    let mut r = LogReader::with_source(&log[..], "x.log").with_max_record_size(2 * BLOCK_SIZE);
    let mut rec = Vec::new();
    assert!(r.next_record(&mut rec).unwrap());
    let e = r.next_record(&mut rec).unwrap_err();
    assert_eq!(corruption_offset(&e), spans[1].0);
    assert!(rec.capacity() <= 4 * BLOCK_SIZE);
}

#[test]
fn worked_example_of_the_format_doc() {
    // docs/format/wal.md: the record "hello" at the start of a log.
    let mut buf = Vec::new();
    frame_record(&mut buf, 0, b"hello");
    let hex: String = buf.iter().map(|b| format!("{b:02x} ")).collect();
    assert_eq!(hex.trim_end(), "0b b9 57 58 05 00 01 68 65 6c 6c 6f");
    assert_eq!(crate::format::crc32c(b"\x01hello"), 0x6719_daea);
    assert_eq!(crate::format::mask_crc(0x6719_daea), 0x5857_b90b);
}

// ---- write batch ----

#[test]
fn batch_round_trip() {
    let mut b = WriteBatch::new();
    assert!(b.is_empty());
    b.put(b"k1", b"v1");
    b.delete(b"k2");
    b.put(b"", b"");
    b.put_value_pointer(b"k3", b"ptr");
    b.set_sequence(77);
    assert_eq!(b.len(), 4);
    assert_eq!(b.sequence(), 77);
    assert_eq!(b.approximate_size(), b.data().len());
    let entries: Vec<BatchEntry<'_>> = b.iter().collect();
    let want = [
        (ValueKind::Value, &b"k1"[..], &b"v1"[..]),
        (ValueKind::Delete, b"k2", b""),
        (ValueKind::Value, b"", b""),
        (ValueKind::ValuePointer, b"k3", b"ptr"),
    ];
    assert_eq!(entries.len(), want.len());
    for (e, w) in entries.iter().zip(want) {
        assert_eq!((e.kind, e.key, e.value), w);
    }
    let back = WriteBatch::from_data(b.data().to_vec()).unwrap();
    assert_eq!(back, b);
    assert_eq!(back.sequence(), 77);

    b.clear();
    assert!(b.is_empty());
    assert_eq!(b.sequence(), 0);
    assert_eq!(b.iter().count(), 0);
    assert_eq!(WriteBatch::from_data(b.data().to_vec()).unwrap().len(), 0);
}

#[test]
fn batch_layout_is_as_documented() {
    let mut b = WriteBatch::new();
    b.set_sequence(0x0102);
    b.put(b"ab", b"xyz");
    b.delete(b"c");
    assert_eq!(
        b.data(),
        [
            0x02, 0x01, 0, 0, 0, 0, 0, 0, // seq
            2, 0, 0, 0, // count
            1, 2, b'a', b'b', 3, b'x', b'y', b'z', // put
            0, 1, b'c', // delete
        ]
    );
}

#[test]
fn batch_append_concatenates() {
    let mut a = WriteBatch::new();
    a.put(b"a", b"1");
    a.set_sequence(10);
    let mut b = WriteBatch::new();
    b.delete(b"b");
    b.put(b"c", b"3");
    b.set_sequence(99);
    a.append(&b);
    assert_eq!(a.len(), 3);
    assert_eq!(a.sequence(), 10);
    let keys: Vec<&[u8]> = a.iter().map(|e| e.key).collect();
    assert_eq!(keys, [&b"a"[..], b"b", b"c"]);
    assert_eq!(WriteBatch::from_data(a.data().to_vec()).unwrap(), a);
}

#[test]
fn batch_bad_bytes_rejected() {
    let mut b = WriteBatch::new();
    b.put(b"key", b"value");
    b.delete(b"gone");
    b.set_sequence(1);
    let good = b.data().to_vec();
    assert!(WriteBatch::from_data(good.clone()).is_ok());
    // Sequence numbers must fit in a trailer, every one of them.
    for seq in [0u64, crate::key::MAX_SEQNO, u64::MAX] {
        let mut s = good.clone();
        s[0..8].copy_from_slice(&seq.to_le_bytes());
        let e = WriteBatch::from_data(s).unwrap_err();
        assert!(e.contains("sequence"), "{e}");
    }
    let mut s = good.clone();
    s[0..8].copy_from_slice(&(crate::key::MAX_SEQNO - 1).to_le_bytes());
    assert!(
        WriteBatch::from_data(s).is_ok(),
        "two entries ending at MAX_SEQNO fit"
    );
    for cut in 0..good.len() {
        assert!(
            WriteBatch::from_data(good[..cut].to_vec()).is_err(),
            "cut {cut}"
        );
    }
    let mut trailing = good.clone();
    trailing.push(0);
    assert!(WriteBatch::from_data(trailing).is_err());

    let mut bad_kind = good.clone();
    bad_kind[12] = 7;
    let e = WriteBatch::from_data(bad_kind).unwrap_err();
    assert!(e.contains("kind 7"), "{e}");

    for count in [0u32, 1, 3, u32::MAX] {
        let mut c = good.clone();
        c[8..12].copy_from_slice(&count.to_le_bytes());
        assert!(WriteBatch::from_data(c).is_err(), "count {count}");
    }

    // A key length far beyond the buffer.
    let mut huge = good[..12].to_vec();
    huge[8] = 1;
    huge.push(1);
    crate::format::put_varint64(&mut huge, 1 << 40);
    assert!(WriteBatch::from_data(huge).is_err());
}

#[test]
fn batch_in_a_log() {
    let mut b = WriteBatch::new();
    b.put(b"k", &record(0, 70_000));
    b.set_sequence(5);
    let mut w = LogWriter::with_sink(Vec::new());
    w.add_record(b.data()).unwrap();
    let log = w.into_sink();
    let (got, _) = read_all(&log).unwrap();
    assert_eq!(WriteBatch::from_data(got[0].clone()).unwrap(), b);
}

#[test]
fn skip_past_damage_resumes_at_the_next_block() {
    // 1000-byte records across several blocks; one damaged in the second block.
    let records: Vec<Vec<u8>> = (0..150).map(|i| record(i, 1000)).collect();
    let (mut log, spans) = write_log(&records);
    let bad = spans
        .iter()
        .position(|&(s, _)| s > BLOCK_SIZE as u64 + 500)
        .unwrap();
    log[spans[bad].0 as usize + 20] ^= 0x08;
    let mut r = LogReader::with_source(&log[..], "test.log");
    let mut got = Vec::new();
    let mut rec = Vec::new();
    let mut skipped = 0;
    loop {
        match r.next_record(&mut rec) {
            Ok(true) => got.push(rec.clone()),
            Ok(false) => break,
            Err(e) => skipped += r.skip_past_damage(corruption_offset(&e)),
        }
    }
    let next_block = (spans[bad].0 / BLOCK_SIZE as u64 + 1) * BLOCK_SIZE as u64;
    assert_eq!(skipped, next_block - spans[bad].0);
    // Every record before the damaged one, and every one starting after the next block
    // boundary; the one cut by that boundary is dropped with the damaged one.
    let expected: Vec<Vec<u8>> = spans
        .iter()
        .zip(&records)
        .filter(|((s, _), _)| *s < spans[bad].0 || *s >= next_block)
        .map(|(_, r)| r.clone())
        .collect();
    assert_eq!(got, expected);
    assert!(got.len() >= records.len() - 34);
}
