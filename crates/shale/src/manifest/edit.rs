//! Version edits: the records of the MANIFEST.
//!
//! An edit is `field_count: varint` followed by that many fields, each `tag: varint`,
//! `len: varint`, then `len` bytes of payload. Every field is length-checked on its own and
//! its payload must be consumed exactly; the count makes a truncated edit an error even
//! when it is cut at a field boundary. An unknown tag is an error: a MANIFEST written by a newer format is refused, not
//! half-understood. The normative layout is `docs/format/manifest.md`.

use super::file_meta::FileMeta;
use crate::axis::{Axis, AxisRecord};
use crate::format::{Reader, put_length_prefixed, put_varint32, put_varint64};

/// The axis owning each retired per-design tag: a MANIFEST written before axis records
/// existed is read as if it held an axis record of kind `tag`, version 1, with the field's
/// payload. The owners keep those kind numbers and payloads.
pub const LEGACY_AXIS_TAGS: [(u64, Axis); 8] = [
    (8, Axis::Layout),
    (9, Axis::Layout),
    (10, Axis::Values),
    (11, Axis::Values),
    (12, Axis::Values),
    (13, Axis::Values),
    (14, Axis::Values),
    (15, Axis::Values),
];

/// Field tags of an encoded edit.
///
/// On-disk: these values are stored in every MANIFEST. Never renumber them; a retired tag
/// stays listed here as a comment so that it is never reused. 0 is reserved.
mod tag {
    /// The layout/design identity, UTF-8 (first edit of a MANIFEST).
    pub const FORMAT_TAG: u64 = 1;
    /// The WAL file number whose records are not all flushed.
    pub const LOG_NUMBER: u64 = 2;
    /// The next file number to allocate.
    pub const NEXT_FILE_NUMBER: u64 = 3;
    /// The last sequence number used.
    pub const LAST_SEQUENCE: u64 = 4;
    /// Where the next compaction of a level starts.
    pub const COMPACT_POINTER: u64 = 5;
    /// A table file removed from a level.
    pub const DELETED_FILE: u64 = 6;
    /// A table file added to a level.
    pub const NEW_FILE: u64 = 7;
    /// Retired: tags 8 to 15 were the FLSM layout's guard fields (8, 9) and the value log's
    /// fields (10 to 15) before each axis had its own records. Still read, as axis records
    /// of the same kind number (see [`LEGACY_AXIS_TAGS`]); never written.
    pub const LEGACY_FIRST: u64 = 8;
    /// The last retired per-design tag.
    pub const LEGACY_LAST: u64 = 15;
    /// A record of one axis: `axis: u8`, `kind: varint32`, `version: u8`, then the owner's
    /// bytes (the rest of the payload).
    pub const AXIS_RECORD: u64 = 16;
    /// The store's identity, a random u64 drawn when the store was created (in the first
    /// edit of each MANIFEST); logs carry it so that another store's log is refused.
    pub const STORE_ID: u64 = 17;
    /// The store's options record (`docs/format/options.md`): how it was made, as
    /// `shale-options 1` and `key=value` lines (first edit of each MANIFEST, and any edit
    /// that changes it).
    pub const STORE_OPTIONS: u64 = 18;
    /// The store's counters since creation ([`super::Lifetime`]), in every edit the engine
    /// commits once the store is open and in each snapshot.
    pub const LIFETIME: u64 = 19;
    /// The MANIFEST's format version (first edit of each MANIFEST): a reader refuses a
    /// version it does not know. A MANIFEST without it is version 1.
    pub const MANIFEST_VERSION: u64 = 20;
    /// A range tombstone flushed from a memtable (`Db::delete_range`): `start`
    /// (length-prefixed), `end` (length-prefixed), `seq: varint64`.
    pub const RANGE_DEL: u64 = 21;
    /// A range tombstone removed from the version (it can no longer hide anything):
    /// `seq: varint64`, the tombstone's sequence number.
    pub const RANGE_DEL_DROPPED: u64 = 22;
}

/// The MANIFEST format version this release writes (tag 20) and the newest it reads.
pub const MANIFEST_FORMAT_VERSION: u64 = 1;

/// A change to the set of files of the store and its counters, logged to the MANIFEST.
/// Replaying every edit of a MANIFEST in order rebuilds the current version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// The WAL file number from which recovery must replay (older logs are flushed).
    pub log_number: Option<u64>,
    /// The next file number to allocate.
    pub next_file_number: Option<u64>,
    /// The last sequence number used by a write.
    pub last_sequence: Option<u64>,
    /// Files added, as (level, metadata).
    pub new_files: Vec<(u32, FileMeta)>,
    /// Files removed, as (level, file number).
    pub deleted_files: Vec<(u32, u64)>,
    /// The internal key where the next compaction of a level starts, as (level, key).
    pub compact_pointers: Vec<(u32, Vec<u8>)>,
    /// The identity of the layout/design that wrote the store (for example `"leveled"`),
    /// recorded in the first edit of each MANIFEST so that a store is never opened by the
    /// wrong design.
    pub format_tag: Option<String>,
    /// What the axes persist with this edit, in order (see [`crate::axis`]).
    pub records: Vec<AxisRecord>,
    /// The store's identity (the first edit of each MANIFEST; stores written before it
    /// existed have none until their next open).
    pub store_id: Option<u64>,
    /// The store's options record, encoded ([`crate::options::stored::StoredOptions`]):
    /// in the first edit of each MANIFEST and in an edit that changes it. Stores written
    /// before it existed have none until their next open.
    pub store_options: Option<Vec<u8>>,
    /// The store's counters since creation as of this edit (the last one read wins).
    pub lifetime: Option<super::Lifetime>,
    /// The MANIFEST's format version ([`MANIFEST_FORMAT_VERSION`]), in the first edit of
    /// each MANIFEST written since it existed; decoding refuses a newer one.
    pub manifest_version: Option<u64>,
    /// Range tombstones added to the version (flushed from a memtable).
    pub range_dels: Vec<crate::rangedel::RangeTombstone>,
    /// Range tombstones removed from the version, by sequence number.
    pub dropped_range_dels: Vec<u64>,
}

impl VersionEdit {
    /// Add `later`'s file changes, compaction pointers and axis records after this edit's
    /// own, so that applying the result equals applying this edit and then `later` when
    /// `later` deletes nothing this edit adds (recovery gathers several flushes into the
    /// one edit it commits). Scalars, the format tag, the store id and the options record are taken from
    /// `later` where it sets them.
    pub fn extend(&mut self, later: VersionEdit) {
        let VersionEdit {
            log_number,
            next_file_number,
            last_sequence,
            new_files,
            deleted_files,
            compact_pointers,
            format_tag,
            store_id,
            store_options,
            lifetime,
            records,
            manifest_version,
            range_dels,
            dropped_range_dels,
        } = later;
        self.range_dels.extend(range_dels);
        self.dropped_range_dels.extend(dropped_range_dels);
        self.log_number = log_number.or(self.log_number);
        self.next_file_number = next_file_number.or(self.next_file_number);
        self.last_sequence = last_sequence.or(self.last_sequence);
        self.new_files.extend(new_files);
        self.deleted_files.extend(deleted_files);
        self.compact_pointers.extend(compact_pointers);
        self.format_tag = format_tag.or(self.format_tag.take());
        self.store_id = store_id.or(self.store_id);
        self.store_options = store_options.or(self.store_options.take());
        self.lifetime = lifetime.or(self.lifetime.take());
        self.records.extend(records);
        self.manifest_version = manifest_version.or(self.manifest_version);
    }

    /// Append the encoding of this edit to `buf`.
    pub fn encode(&self, buf: &mut Vec<u8>) {
        let scalars = [
            self.manifest_version,
            self.log_number,
            self.next_file_number,
            self.last_sequence,
            self.store_id,
        ];
        let count = usize::from(self.format_tag.is_some())
            + usize::from(self.store_options.is_some())
            + usize::from(self.lifetime.is_some())
            + scalars.iter().filter(|v| v.is_some()).count()
            + self.compact_pointers.len()
            + self.deleted_files.len()
            + self.new_files.len()
            + self.records.len()
            + self.range_dels.len()
            + self.dropped_range_dels.len();
        put_varint64(buf, count as u64);
        let mut p = Vec::new();
        if let Some(v) = self.manifest_version {
            put_varint64(&mut p, v);
            field(buf, tag::MANIFEST_VERSION, &p);
        }
        if let Some(t) = &self.format_tag {
            field(buf, tag::FORMAT_TAG, t.as_bytes());
        }
        if let Some(o) = &self.store_options {
            field(buf, tag::STORE_OPTIONS, o);
        }
        if let Some(l) = &self.lifetime {
            let mut p = Vec::new();
            l.encode(&mut p);
            field(buf, tag::LIFETIME, &p);
        }
        for (t, v) in [
            (tag::LOG_NUMBER, self.log_number),
            (tag::NEXT_FILE_NUMBER, self.next_file_number),
            (tag::LAST_SEQUENCE, self.last_sequence),
            (tag::STORE_ID, self.store_id),
        ] {
            if let Some(v) = v {
                p.clear();
                put_varint64(&mut p, v);
                field(buf, t, &p);
            }
        }
        for (level, key) in &self.compact_pointers {
            p.clear();
            put_varint32(&mut p, *level);
            p.extend_from_slice(key);
            field(buf, tag::COMPACT_POINTER, &p);
        }
        for (level, number) in &self.deleted_files {
            p.clear();
            put_varint32(&mut p, *level);
            put_varint64(&mut p, *number);
            field(buf, tag::DELETED_FILE, &p);
        }
        for (level, f) in &self.new_files {
            p.clear();
            put_varint32(&mut p, *level);
            put_varint64(&mut p, f.number);
            put_varint64(&mut p, f.size);
            put_length_prefixed(&mut p, &f.smallest);
            put_length_prefixed(&mut p, &f.largest);
            put_varint64(&mut p, f.smallest_seq);
            put_varint64(&mut p, f.largest_seq);
            put_varint64(&mut p, f.entries);
            put_varint64(&mut p, f.tombstones);
            field(buf, tag::NEW_FILE, &p);
        }
        for t in &self.range_dels {
            p.clear();
            put_length_prefixed(&mut p, &t.start);
            put_length_prefixed(&mut p, &t.end);
            put_varint64(&mut p, t.seq);
            field(buf, tag::RANGE_DEL, &p);
        }
        for seq in &self.dropped_range_dels {
            p.clear();
            put_varint64(&mut p, *seq);
            field(buf, tag::RANGE_DEL_DROPPED, &p);
        }
        for r in &self.records {
            p.clear();
            p.push(r.axis.code());
            put_varint32(&mut p, r.kind);
            p.push(r.version);
            p.extend_from_slice(&r.payload);
            field(buf, tag::AXIS_RECORD, &p);
        }
    }

    /// Decode an edit.
    ///
    /// # Errors
    /// A description naming the byte offset within the edit and the tag of the first bad
    /// field: fewer fields than the count, a truncated field, a payload with bytes missing
    /// or left over, an unknown tag, a field that may appear once appearing twice, a format
    /// tag that is not UTF-8, bytes after the last field.
    pub fn decode(bytes: &[u8]) -> Result<VersionEdit, String> {
        let mut e = VersionEdit::default();
        let mut r = Reader::new(bytes);
        let count = r.varint64().map_err(|m| format!("edit field count: {m}"))?;
        // Each field takes at least 2 bytes, so a huge count fails at the first missing
        // field; nothing is allocated by it.
        for i in 0..count {
            let at = r.position();
            if r.is_empty() {
                return Err(format!(
                    "edit declares {count} fields but ends after {i} (byte {at})"
                ));
            }
            let t = r
                .varint64()
                .map_err(|m| format!("edit field at byte {at}: tag: {m}"))?;
            let payload = r
                .length_prefixed()
                .map_err(|m| format!("edit field at byte {at} (tag {t}): length: {m}"))?;
            decode_field(&mut e, t, payload)
                .map_err(|m| format!("edit field at byte {at} (tag {t}): {m}"))?;
        }
        if !r.is_empty() {
            return Err(format!(
                "{} bytes follow the last of the edit's {count} fields",
                r.remaining()
            ));
        }
        Ok(e)
    }
}

/// Append one TLV field.
fn field(buf: &mut Vec<u8>, t: u64, payload: &[u8]) {
    put_varint64(buf, t);
    put_length_prefixed(buf, payload);
}

/// Set a field that may appear once per edit.
fn once<T>(slot: &mut Option<T>, v: T, name: &str) -> Result<(), String> {
    if slot.is_some() {
        return Err(format!("{name} appears twice in one edit"));
    }
    *slot = Some(v);
    Ok(())
}

fn decode_field(e: &mut VersionEdit, t: u64, payload: &[u8]) -> Result<(), String> {
    let mut r = Reader::new(payload);
    match t {
        tag::FORMAT_TAG => {
            let s =
                std::str::from_utf8(payload).map_err(|_| "format tag is not UTF-8".to_string())?;
            r.bytes(payload.len())?;
            once(&mut e.format_tag, s.to_string(), "format tag")?;
        }
        tag::LOG_NUMBER => once(&mut e.log_number, r.varint64()?, "log number")?,
        tag::NEXT_FILE_NUMBER => once(&mut e.next_file_number, r.varint64()?, "next file number")?,
        tag::LAST_SEQUENCE => once(&mut e.last_sequence, r.varint64()?, "last sequence")?,
        tag::STORE_ID => once(&mut e.store_id, r.varint64()?, "store id")?,
        tag::MANIFEST_VERSION => {
            let v = r.varint64()?;
            if v == 0 || v > MANIFEST_FORMAT_VERSION {
                return Err(format!(
                    "the MANIFEST is format version {v}; this release reads versions 1 to \
                     {MANIFEST_FORMAT_VERSION} (a store written by a newer release)"
                ));
            }
            once(&mut e.manifest_version, v, "MANIFEST format version")?;
        }
        tag::LIFETIME => {
            let l = super::Lifetime::decode(r.bytes(payload.len())?)?;
            once(&mut e.lifetime, l, "lifetime counters")?;
        }
        tag::STORE_OPTIONS => {
            let o = r.bytes(payload.len())?.to_vec();
            once(&mut e.store_options, o, "options record")?;
        }
        tag::COMPACT_POINTER => {
            let level = r.varint32()?;
            let key = r.bytes(r.remaining())?;
            e.compact_pointers.push((level, key.to_vec()));
        }
        tag::DELETED_FILE => {
            let level = r.varint32()?;
            let number = r.varint64()?;
            e.deleted_files.push((level, number));
        }
        tag::NEW_FILE => {
            let level = r.varint32()?;
            let f = FileMeta {
                number: r.varint64()?,
                size: r.varint64()?,
                smallest: r.length_prefixed()?.to_vec(),
                largest: r.length_prefixed()?.to_vec(),
                smallest_seq: r.varint64()?,
                largest_seq: r.varint64()?,
                entries: r.varint64()?,
                tombstones: r.varint64()?,
                filter: Default::default(),
            };
            e.new_files.push((level, f));
        }
        tag::RANGE_DEL => {
            let start = r.length_prefixed()?.to_vec();
            let end = r.length_prefixed()?.to_vec();
            let seq = r.varint64()?;
            e.range_dels
                .push(crate::rangedel::RangeTombstone { start, end, seq });
        }
        tag::RANGE_DEL_DROPPED => e.dropped_range_dels.push(r.varint64()?),
        tag::AXIS_RECORD => {
            let code = r.u8()?;
            let axis = Axis::from_code(code).ok_or_else(|| format!("unknown axis {code}"))?;
            let kind = r.varint32()?;
            let version = r.u8()?;
            let payload = r.bytes(r.remaining())?.to_vec();
            e.records.push(AxisRecord {
                axis,
                kind,
                version,
                payload,
            });
        }
        t if (tag::LEGACY_FIRST..=tag::LEGACY_LAST).contains(&t) => {
            let axis = LEGACY_AXIS_TAGS
                .iter()
                .find(|(l, _)| *l == t)
                .map(|&(_, a)| a)
                .ok_or_else(|| format!("unknown field tag {t}"))?;
            e.records.push(AxisRecord {
                axis,
                kind: t as u32,
                version: 1,
                payload: r.bytes(r.remaining())?.to_vec(),
            });
        }
        _ => return Err(format!("unknown field tag {t}")),
    }
    if !r.is_empty() {
        return Err(format!(
            "{} bytes left over after the field's payload",
            r.remaining()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(axis: Axis, kind: u32, payload: &[u8]) -> AxisRecord {
        AxisRecord::new(axis, kind, payload.to_vec())
    }

    /// The value-log records of a flush: head (kind 10), head sequence (15), a sealed
    /// segment (14), as `docs/format/manifest.md` encodes them.
    fn vlog_example() -> VersionEdit {
        VersionEdit {
            records: vec![
                rec(Axis::Values, 10, &[0x09, 0xa2, 0x20]),
                rec(Axis::Values, 15, &[0xad, 0x02]),
                rec(Axis::Values, 14, &[0x07, 0x9e, 0x80, 0x80, 0x40]),
            ],
            ..VersionEdit::default()
        }
    }

    #[test]
    fn axis_record_worked_example_of_the_format_doc() {
        let e = vlog_example();
        let hex: String = enc(&e).iter().map(|b| format!("{b:02x} ")).collect();
        assert_eq!(
            hex.trim_end(),
            "03 10 06 02 0a 01 09 a2 20 10 05 02 0f 01 ad 02 10 08 02 0e 01 07 9e 80 80 40"
        );
        assert_eq!(VersionEdit::decode(&enc(&e)).unwrap(), e);
    }

    #[test]
    fn legacy_per_design_tags_are_read_as_axis_records() {
        // The same edit as written before axis records existed (tags 10, 15, 14).
        let old = [
            0x03, 0x0a, 0x03, 0x09, 0xa2, 0x20, 0x0f, 0x02, 0xad, 0x02, 0x0e, 0x05, 0x07, 0x9e,
            0x80, 0x80, 0x40,
        ];
        assert_eq!(VersionEdit::decode(&old).unwrap(), vlog_example());
        // Guard fields (tags 9 and 8) belong to the layout.
        let old = [0x02, 0x09, 0x02, 0x02, 0x61, 0x08, 0x03, 0x01, 0x6b, 0x37];
        let e = VersionEdit::decode(&old).unwrap();
        assert_eq!(
            e.records,
            [
                rec(Axis::Layout, 9, &[0x02, 0x61]),
                rec(Axis::Layout, 8, &[0x01, 0x6b, 0x37])
            ]
        );
        // Every retired tag has an owner.
        for t in 8..=15u64 {
            assert!(LEGACY_AXIS_TAGS.iter().any(|(l, _)| *l == t));
        }
    }

    #[test]
    fn bad_axis_records_rejected() {
        let err = |b: &[u8]| VersionEdit::decode(b).unwrap_err();
        assert!(err(&[1, 16, 3, 9, 1, 1]).contains("unknown axis 9"));
        assert!(err(&[1, 16, 1, 2]).contains("tag 16"));
        assert!(err(&[1, 16, 2, 2, 1]).contains("tag 16"));
        // An empty payload after the version is a record of the owner's to judge.
        let e = VersionEdit::decode(&[1, 16, 3, 1, 8, 1]).unwrap();
        assert_eq!(e.records, [rec(Axis::Layout, 8, &[])]);
    }

    fn meta(n: u64) -> FileMeta {
        FileMeta {
            number: n,
            size: 4096 * n + 1,
            smallest: crate::key::make_internal_key(b"apple", n, crate::key::ValueKind::Value),
            largest: crate::key::make_internal_key(b"zebra", 1, crate::key::ValueKind::Delete),
            smallest_seq: 1,
            largest_seq: u64::MAX >> 8,
            entries: 1000,
            tombstones: 7,
            filter: Default::default(),
        }
    }

    fn sample_edit() -> VersionEdit {
        VersionEdit {
            log_number: Some(12),
            next_file_number: Some(300),
            last_sequence: Some(1 << 40),
            new_files: vec![(0, meta(5)), (3, meta(200))],
            deleted_files: vec![(1, 4), (6, u64::MAX)],
            compact_pointers: vec![(2, b"kkk".to_vec()), (4, Vec::new())],
            format_tag: Some("leveled".to_string()),
            records: vec![
                rec(Axis::Values, 10, &[9, 24]),
                rec(Axis::Layout, 8, b"\x01g1"),
                AxisRecord {
                    axis: Axis::Table,
                    kind: u32::MAX,
                    version: 255,
                    payload: Vec::new(),
                },
                rec(Axis::Memory, 0, &[0xff; 40]),
            ],
            store_id: Some(0x1234_5678_9abc_def0),
            manifest_version: Some(MANIFEST_FORMAT_VERSION),
            store_options: Some(b"shale-options 1\nlayout=leveled\n".to_vec()),
            lifetime: Some(super::super::Lifetime {
                user_bytes: 100,
                user_ops: 2,
                ..Default::default()
            }),
            range_dels: vec![
                crate::rangedel::RangeTombstone {
                    start: b"a".to_vec(),
                    end: b"m".to_vec(),
                    seq: 77,
                },
                crate::rangedel::RangeTombstone {
                    start: Vec::new(),
                    end: vec![0xff; 3],
                    seq: 1 << 50,
                },
            ],
            dropped_range_dels: vec![5, 1 << 45],
        }
    }

    fn enc(e: &VersionEdit) -> Vec<u8> {
        let mut b = Vec::new();
        e.encode(&mut b);
        b
    }

    #[test]
    fn round_trip() {
        for e in [VersionEdit::default(), sample_edit()] {
            assert_eq!(VersionEdit::decode(&enc(&e)).unwrap(), e);
        }
        let only_seq = VersionEdit {
            last_sequence: Some(0),
            ..VersionEdit::default()
        };
        assert_eq!(enc(&only_seq), [1, 4, 1, 0]);
        assert_eq!(enc(&VersionEdit::default()), [0]);
    }

    #[test]
    fn worked_example_of_the_format_doc() {
        let e = VersionEdit {
            log_number: Some(4),
            next_file_number: Some(6),
            last_sequence: Some(300),
            new_files: vec![(
                0,
                FileMeta {
                    number: 5,
                    size: 1000,
                    smallest: crate::key::make_internal_key(b"a", 1, crate::key::ValueKind::Value),
                    largest: crate::key::make_internal_key(b"b", 2, crate::key::ValueKind::Value),
                    smallest_seq: 1,
                    largest_seq: 2,
                    entries: 2,
                    tombstones: 0,
                    filter: Default::default(),
                },
            )],
            format_tag: Some("leveled".to_string()),
            ..VersionEdit::default()
        };
        let hex: String = enc(&e).iter().map(|b| format!("{b:02x} ")).collect();
        assert_eq!(
            hex.trim_end(),
            "05 01 07 6c 65 76 65 6c 65 64 02 01 04 03 01 06 04 02 ac 02 07 1c 00 05 e8 07 \
             09 61 01 01 00 00 00 00 00 00 09 62 01 02 00 00 00 00 00 00 01 02 02 00"
        );
    }

    #[test]
    fn truncation_at_every_length_is_an_error() {
        let b = enc(&sample_edit());
        for cut in 0..b.len() {
            assert!(VersionEdit::decode(&b[..cut]).is_err(), "cut {cut}");
        }
    }

    #[test]
    fn every_byte_flip_is_handled() {
        // Flipped bytes must give an error or some edit, never a panic.
        let b = enc(&sample_edit());
        for i in 0..b.len() {
            for x in [0x01, 0x80, 0xff] {
                let mut d = b.clone();
                d[i] ^= x;
                let _ = VersionEdit::decode(&d);
            }
        }
    }

    #[test]
    fn bad_fields_rejected() {
        let err = |b: &[u8]| VersionEdit::decode(b).unwrap_err();
        assert!(err(&[1, 99, 0]).contains("unknown field tag 99"));
        assert!(err(&[1, 0, 0]).contains("unknown field tag 0"));
        // log number twice
        assert!(err(&[2, 2, 1, 5, 2, 1, 6]).contains("twice"));
        // payload longer than the varint it holds
        assert!(err(&[1, 2, 2, 5, 0]).contains("left over"));
        // payload length past the end
        assert!(err(&[1, 2, 9, 5]).contains("length"));
        // varint in payload truncated
        assert!(err(&[1, 2, 1, 0x80]).contains("tag 2"));
        // format tag not UTF-8
        assert!(err(&[1, 1, 2, 0xff, 0xfe]).contains("UTF-8"));
        // count and fields disagree
        assert!(err(&[2, 2, 1, 5]).contains("declares 2 fields"));
        assert!(err(&[0, 2, 1, 5]).contains("follow"));
        assert!(err(&[0xff, 0xff, 0xff, 0xff, 0x0f]).contains("declares"));
        // huge length
        let mut b = vec![1, 7];
        put_varint64(&mut b, u64::MAX);
        assert!(VersionEdit::decode(&b).is_err());
        // level past 32 bits
        let mut p = Vec::new();
        put_varint64(&mut p, 1 << 33);
        p.push(1);
        let mut b = vec![1, 6];
        put_length_prefixed(&mut b, &p);
        assert!(err(&b).contains("32 bits"));
    }

    #[test]
    fn the_manifest_format_version_round_trips_and_a_newer_one_is_refused() {
        let e = VersionEdit {
            manifest_version: Some(MANIFEST_FORMAT_VERSION),
            log_number: Some(3),
            ..VersionEdit::default()
        };
        let mut buf = Vec::new();
        e.encode(&mut buf);
        assert_eq!(VersionEdit::decode(&buf).unwrap(), e);
        for v in [0, MANIFEST_FORMAT_VERSION + 1] {
            let mut buf = Vec::new();
            VersionEdit {
                manifest_version: Some(v),
                ..VersionEdit::default()
            }
            .encode(&mut buf);
            let err = VersionEdit::decode(&buf).unwrap_err();
            assert!(err.contains(&format!("format version {v}")), "{err}");
        }
    }
}
