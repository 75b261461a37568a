use std::path::Path;

use super::*;
use crate::env::ReadCause;
use crate::values::{CacheFill, RecoverContext};
use state::VlogState;

/// A placement's persisted state holding `v`.
fn ps(v: VlogState) -> PersistedState {
    PersistedState {
        log_number: 0,
        state: Box::new(v),
    }
}

/// What `edit`'s value-log records say, folded into an empty state.
fn view(edit: &VersionEdit) -> VlogState {
    let mut v = VlogState::default();
    v.absorb_edit(edit).unwrap();
    v
}

fn placement(env: &Env, min_separated: usize) -> VlogPlacement {
    placement_in(env, min_separated, None)
}

/// A placement for `/v` (4 KiB segments), recovered empty, keeping the records it reads in
/// `cache` when given (as a store's placement does).
fn placement_in(
    env: &Env,
    min_separated: usize,
    cache: Option<&Arc<crate::cache::block_cache::BlockCache>>,
) -> VlogPlacement {
    let mut o = Options::preset("wisckey").unwrap().with_env(env.clone());
    o.min_separated_value_size = min_separated;
    o.vlog_segment_size = 4096;
    // These tests read what the log holds: the memtable entries are bare pointers
    // (`carried_values_*` below keep values beside them).
    o.vlog_memtable_value_max = 0;
    env.fs().create_dir_all(Path::new("/v")).unwrap();
    let p = VlogPlacement::new(&o, Path::new("/v"), Arc::new(AtomicU64::new(1)));
    let state = ps(VlogState::default());
    let ctx = RecoverContext {
        env,
        dir: Path::new("/v"),
        state: &state,
        names: &[],
        last_sequence: 0,
        store_id: 1,
        block_cache: cache,
        wal_recovery_mode: Default::default(),
    };
    let mut edit = VersionEdit::default();
    p.recover(&ctx, &mut |_, _, _, _| {}, &mut edit).unwrap();
    assert_eq!(view(&edit).head, Some((1, format::HEADER_LEN)));
    p
}

/// Append a batch and return what the memtable would receive.
fn append(
    p: &VlogPlacement,
    seq: u64,
    entries: &[(&[u8], &[u8])],
) -> Vec<(Vec<u8>, ValueKind, Vec<u8>)> {
    let mut b = WriteBatch::new();
    for (k, v) in entries {
        b.put(k, v);
    }
    b.set_sequence(seq);
    let stored = p
        .append(&b, false)
        .unwrap()
        .expect("the value log stores its own entries");
    assert_eq!(stored.sequence(), seq);
    stored
        .iter()
        .map(|e| (e.key.to_vec(), e.kind, e.value.to_vec()))
        .collect()
}

#[test]
fn small_values_stay_inline_and_large_ones_are_pointers() {
    let env = Env::memory();
    let p = placement(&env, 8);
    let got = append(&p, 1, &[(b"a", b"short"), (b"b", b"a longer value")]);
    assert_eq!(got[0].1, ValueKind::Value);
    assert_eq!(got[1].1, ValueKind::ValuePointer);
    assert_eq!(
        p.resolve(
            b"b",
            ValueKind::ValuePointer,
            &got[1].2,
            ReadCause::Get,
            CacheFill::Keep
        )
        .unwrap()
        .as_ref(),
        b"a longer value"
    );
}

/// Pointers into `q`'s segment that name no whole record: into the middle of one, past the
/// valid end, too long, too short, over the header.
fn misplaced(q: Pointer) -> [Pointer; 5] {
    [
        Pointer {
            offset: q.offset + 1,
            ..q
        },
        Pointer {
            offset: 1 << 20,
            ..q
        },
        Pointer {
            length: q.length + 1,
            ..q
        },
        Pointer {
            length: q.length - 1,
            ..q
        },
        Pointer { offset: 0, ..q },
    ]
}

#[test]
fn a_pointer_never_yields_another_keys_value() {
    let env = Env::memory();
    let p = placement(&env, 0);
    let got = append(&p, 1, &[(b"k1", b"value one"), (b"k2", b"value two")]);
    let (ptr1, ptr2) = (&got[0].2, &got[1].2);
    // Right key, right pointer.
    assert_eq!(
        p.resolve(
            b"k1",
            ValueKind::ValuePointer,
            ptr1,
            ReadCause::Get,
            CacheFill::Keep
        )
        .unwrap()
        .as_ref(),
        b"value one"
    );
    // k1's lookup handed k2's pointer: the record's key does not match.
    let e = p
        .resolve(
            b"k1",
            ValueKind::ValuePointer,
            ptr2,
            ReadCause::Get,
            CacheFill::Keep,
        )
        .unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
    // A pointer past the valid end, into a missing segment, or into the middle of a record.
    let mut q = Pointer::decode(ptr1).unwrap();
    for bad in misplaced(q)
        .into_iter()
        .chain([Pointer { segment: 99, ..q }])
    {
        let e = p
            .resolve(
                b"k1",
                ValueKind::ValuePointer,
                &bad.to_vec(),
                ReadCause::Get,
                CacheFill::Keep,
            )
            .unwrap_err();
        assert!(matches!(e, Error::Corruption { .. }), "{bad:?}: {e}");
    }
    q.length = 3;
    assert!(
        p.resolve(
            b"k1",
            ValueKind::ValuePointer,
            &q.to_vec(),
            ReadCause::Get,
            CacheFill::Keep
        )
        .is_err()
    );
    assert!(
        p.resolve(
            b"k1",
            ValueKind::ValuePointer,
            b"\xff\xff",
            ReadCause::Get,
            CacheFill::Keep
        )
        .is_err()
    );
}

#[test]
fn segments_rotate_by_size_and_replay_from_the_head() {
    let env = Env::memory();
    let p = placement(&env, 0);
    let value = vec![7u8; 1000];
    let mut pointers = Vec::new();
    for i in 0..12u64 {
        let key = format!("key{i}");
        let got = append(&p, i + 1, &[(key.as_bytes(), &value)]);
        pointers.push(got[0].2.clone());
    }
    let segs: Vec<u64> = pointers
        .iter()
        .map(|x| Pointer::decode(x).unwrap().segment)
        .collect();
    assert!(segs.windows(2).all(|w| w[0] <= w[1]));
    assert!(segs.last() > segs.first(), "rotated: {segs:?}");
    p.sync().unwrap();
    // Replay from the head in the middle of the log: only later writes come back.
    let head = Pointer::decode(&pointers[5]).unwrap();
    let v = VlogState {
        head: Some((head.segment, head.offset)),
        ..VlogState::default()
    };
    let state = ps(v);
    let mut seqs = Vec::new();
    let last = recover_at(
        &env,
        &state,
        &mut |_, seq, _, _| seqs.push(seq),
        &mut VersionEdit::default(),
    )
    .unwrap();
    assert_eq!(seqs, (6..=12).collect::<Vec<_>>());
    assert_eq!(last, 12);
}

/// Recover a new placement over `env` from `state` (an open of the store's directory).
fn recover_at(
    env: &Env,
    state: &PersistedState,
    apply: &mut Apply<'_>,
    edit: &mut VersionEdit,
) -> Result<SeqNo> {
    let names = env.fs().list_dir(Path::new("/v")).unwrap();
    let q = VlogPlacement::new(
        &Options::preset("wisckey").unwrap().with_env(env.clone()),
        Path::new("/v"),
        Arc::new(AtomicU64::new(100)),
    );
    let ctx = RecoverContext {
        env,
        dir: Path::new("/v"),
        state,
        names: &names,
        last_sequence: 0,
        store_id: 1,
        block_cache: None,
        wal_recovery_mode: Default::default(),
    };
    q.recover(&ctx, apply, edit)
}

/// A placement over `mem` with 4 KiB segments whose sealer thread is stopped: segments
/// rotated out stay unsynced until someone who needs them durable syncs them.
fn placement_without_sealer(mem: &crate::env::mem::MemFs) -> (Env, VlogPlacement) {
    let env = Env::new(Arc::new(mem.clone()));
    let p = placement(&env, 0);
    p.sealer.stop();
    (env, p)
}

/// The durable length of every segment file's bytes, by number: up to its last nonzero
/// byte (a synced segment's reserved space is durable too, as zeros; `fill`'s records end
/// in nonzero bytes).
fn durable_lengths(mem: &crate::env::mem::MemFs) -> BTreeMap<u64, u64> {
    let image = mem.snapshot_durable();
    let env = Env::new(Arc::new(image));
    env.fs()
        .list_dir(Path::new("/v"))
        .unwrap()
        .iter()
        .filter_map(|n| {
            let number = parse_segment_name(n)?;
            let bytes = env
                .read_all(&Path::new("/v").join(n), crate::env::ReadCause::Other)
                .unwrap();
            let len = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            Some((number, len as u64))
        })
        .collect()
}

/// Append `n` 1000-byte values with sequence numbers from 1 (a rotation every four); returns
/// the segment of each.
fn fill(p: &VlogPlacement, n: u64) -> Vec<u64> {
    let value = vec![7u8; 1000];
    (1..=n)
        .map(|i| {
            let got = append(p, i, &[(format!("key{i}").as_bytes(), &value)]);
            Pointer::decode(&got[0].2).unwrap().segment
        })
        .collect()
}

#[test]
fn rotation_does_not_sync_but_a_flush_syncs_every_segment_it_points_into() {
    let mem = crate::env::mem::MemFs::new();
    let (_env, p) = placement_without_sealer(&mem);
    let segs = fill(&p, 14);
    let first = segs[0];
    assert!(segs.last() > Some(&first), "rotated: {segs:?}");
    // The writer never synced what it left: sealed segments hold only their header durably.
    let durable = durable_lengths(&mem);
    assert_eq!(durable[&first], format::HEADER_LEN, "{durable:?}");
    let lengths: BTreeMap<u64, u64> = p.stats().segments.iter().map(|s| (s.0, s.1)).collect();
    // A flush whose memtable ends in the active segment: every older segment is synced in
    // full and recorded sealed, and the active one up to the end.
    let end = p.freeze().unwrap();
    let mut edit = VersionEdit::default();
    p.flushed(end, &mut edit).unwrap();
    p.note_edit(&mut edit);
    let durable = durable_lengths(&mem);
    for (&n, &len) in &lengths {
        if n < end.file {
            assert_eq!(
                durable[&n], len,
                "segment {n} not synced before the flush edit"
            );
            assert_eq!(view(&edit).sealed.get(&n), Some(&len), "{edit:?}");
        } else {
            assert!(durable[&n] >= end.offset, "segment {n}: {durable:?}");
        }
    }
    assert_eq!(view(&edit).head, Some((end.file, end.offset)));
    assert_eq!(view(&edit).head_seq, Some(15));
}

#[test]
fn a_synced_write_first_syncs_every_older_segment() {
    let mem = crate::env::mem::MemFs::new();
    let (_env, p) = placement_without_sealer(&mem);
    fill(&p, 10);
    let lengths: BTreeMap<u64, u64> = p.stats().segments.iter().map(|s| (s.0, s.1)).collect();
    let mut b = WriteBatch::new();
    b.put(b"synced", b"x");
    b.set_sequence(11);
    p.append(&b, true).unwrap();
    let durable = durable_lengths(&mem);
    let active = *lengths.keys().last().unwrap();
    for (&n, &len) in &lengths {
        if n < active {
            assert_eq!(
                durable[&n], len,
                "segment {n} left unsynced behind a synced write"
            );
        }
    }
}

#[test]
fn a_segment_that_lost_its_tail_whole_ends_the_log() {
    // A machine crash: the sealed segments' unsynced tails are lost, while writeback happened
    // to persist the active segment. Recovery must not apply the later writes over the hole.
    let mem = crate::env::mem::MemFs::new();
    let (_env, p) = placement_without_sealer(&mem);
    let segs = fill(&p, 14);
    let newest = *segs.last().unwrap();
    let image = mem.crash_image_with(false, false, &mut |path, _, unsynced| {
        let keep = path
            .file_name()
            .and_then(|n| parse_segment_name(&n.to_string_lossy()));
        if keep == Some(newest) {
            unsynced.to_vec()
        } else {
            Vec::new()
        }
    });
    let env = Env::new(Arc::new(image));
    let v = VlogState {
        head: Some((segs[0], format::HEADER_LEN)),
        head_seq: Some(1),
        ..VlogState::default()
    };
    let state = ps(v);
    let mut seqs = Vec::new();
    let mut edit = VersionEdit::default();
    recover_at(&env, &state, &mut |_, seq, _, _| seqs.push(seq), &mut edit).unwrap();
    assert!(seqs.is_empty(), "replayed {seqs:?} after a hole");
    // The newest segment's records are cut off for good.
    assert_eq!(
        view(&edit).segment_ends.get(&newest),
        Some(&format::HEADER_LEN)
    );
}

#[test]
fn a_sealed_segment_is_held_to_its_recorded_end() {
    let mem = crate::env::mem::MemFs::new();
    let (env, p) = placement_without_sealer(&mem);
    let segs = fill(&p, 6);
    p.sync().unwrap();
    let mut edit = VersionEdit::default();
    p.note_edit(&mut edit);
    let (first, first_end) = view(&edit).sealed.pop_first().unwrap();
    assert_eq!(first, segs[0]);
    // Cut the sealed segment short by one byte.
    let path = Path::new("/v").join(format::segment_file_name(first));
    let mut bytes = env.read_all(&path, crate::env::ReadCause::Other).unwrap();
    bytes.truncate(first_end as usize - 1);
    let mut f = env.create(&path, crate::env::WriteCause::Other).unwrap();
    f.append(&bytes).unwrap();
    f.sync().unwrap();
    drop(f);
    let mut v = VlogState {
        head: Some((segs[0], format::HEADER_LEN)),
        ..VlogState::default()
    };
    v.absorb_edit(&edit).unwrap();
    let state = ps(v);
    let e = recover_at(
        &env,
        &state,
        &mut |_, _, _, _| {},
        &mut VersionEdit::default(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
}

#[test]
fn an_unsealed_segment_that_lost_every_record_after_a_sealed_one_ends_the_log() {
    // Segment A is sealed (recorded), B was rotated out unsynced and lost every record in a
    // machine crash (its file holds only its header), while writeback persisted C and D. The
    // gap at C's start follows an unsynced segment: it ends the log, it is not corruption.
    let mem = crate::env::mem::MemFs::new();
    let (_env, p) = placement_without_sealer(&mem);
    let segs = fill(&p, 14);
    let (a, b) = (segs[0], segs[4]);
    assert!(a < b && b < segs[8], "{segs:?}");
    p.sealer.sync_through(a).unwrap();
    let mut edit = VersionEdit::default();
    p.note_edit(&mut edit);
    assert_eq!(view(&edit).sealed.len(), 1);
    let image = mem.crash_image_with(false, false, &mut |path, _, unsynced| {
        let n = path
            .file_name()
            .and_then(|n| parse_segment_name(&n.to_string_lossy()));
        if n == Some(b) {
            Vec::new()
        } else {
            unsynced.to_vec()
        }
    });
    let env = Env::new(Arc::new(image));
    let mut v = VlogState {
        head: Some((a, format::HEADER_LEN)),
        head_seq: Some(1),
        ..VlogState::default()
    };
    v.absorb_edit(&edit).unwrap();
    let state = ps(v);
    let mut seqs = Vec::new();
    recover_at(
        &env,
        &state,
        &mut |_, seq, _, _| seqs.push(seq),
        &mut VersionEdit::default(),
    )
    .unwrap();
    assert_eq!(seqs, (1..=4).collect::<Vec<_>>());
}

#[test]
fn the_sealer_thread_syncs_rotated_segments_on_its_own() {
    // Elsewhere the tests stop the thread, or callers (flush, synced writes) sync first.
    let mem = crate::env::mem::MemFs::new();
    let env = Env::new(Arc::new(mem.clone()));
    let p = placement(&env, 0);
    let segs = fill(&p, 14);
    let lengths: BTreeMap<u64, u64> = p.stats().segments.iter().map(|s| (s.0, s.1)).collect();
    let rotated: Vec<(u64, u64)> = lengths
        .iter()
        .filter(|&(&n, _)| n != *segs.last().unwrap())
        .map(|(&n, &l)| (n, l))
        .collect();
    assert_eq!(rotated.len(), 3, "{lengths:?}");
    // No caller syncs anything: only the thread can make these durable. (If it never runs,
    // this loop does not end and the test fails by its timeout.)
    let mut sealed = Vec::new();
    while sealed.len() < rotated.len() {
        sealed.extend(p.sealer.take_unrecorded());
        std::thread::yield_now();
    }
    assert_eq!(sealed, rotated, "synced oldest first, with their ends");
    let durable = durable_lengths(&mem);
    for &(n, len) in &rotated {
        assert_eq!(durable[&n], len, "segment {n}");
    }
}

#[test]
fn close_seals_the_active_segment_so_the_next_open_replays_pointers() {
    let mem = crate::env::mem::MemFs::new();
    let (_env, p) = placement_without_sealer(&mem);
    let segs = fill(&p, 6);
    let active = *segs.last().unwrap();
    p.close().unwrap();
    let sealed: BTreeMap<u64, u64> = p.sealer.take_unrecorded().into_iter().collect();
    // Every segment, the active one included, is durable to the end recorded for it.
    assert_eq!(sealed, durable_lengths(&mem));
    assert!(sealed.contains_key(&active));
    // Closed: no more writes.
    let mut b = WriteBatch::new();
    b.put(b"late", &[1u8; 100]);
    b.set_sequence(7);
    assert!(matches!(p.append(&b, false), Err(Error::Closed)));
    // The next open trusts the sealed log: the writes come back as pointers, not values.
    let env = Env::new(Arc::new(mem.snapshot_durable()));
    let v = VlogState {
        head: Some((segs[0], format::HEADER_LEN)),
        head_seq: Some(1),
        sealed,
        ..VlogState::default()
    };
    let state = ps(v);
    let mut kinds = Vec::new();
    recover_at(
        &env,
        &state,
        &mut |_, seq, kind, _| kinds.push((seq, kind)),
        &mut VersionEdit::default(),
    )
    .unwrap();
    let expected: Vec<_> = (1..=6).map(|s| (s, ValueKind::ValuePointer)).collect();
    assert_eq!(kinds, expected);
}

#[test]
fn a_dangling_pointer_is_corruption_naming_its_segment_and_offset() {
    // WiscKey returns not-found for a pointer whose record is gone (its key was deleted);
    // here the tree never keeps a pointer to a record collection removed, so one is damage
    // (`docs/designs/wisckey.md`, "Dangling pointers").
    let env = Env::memory();
    let p = placement(&env, 0);
    let got = append(&p, 1, &[(b"k1", b"value one"), (b"k2", b"value two")]);
    let ptr = Pointer::decode(&got[1].2).unwrap();
    assert!(ptr.offset > format::HEADER_LEN);
    // The segment is removed (as collection removes a dropped one) while a pointer remains.
    p.remove_segment(ptr.segment);
    let e = p
        .resolve(
            b"k2",
            ValueKind::ValuePointer,
            &got[1].2,
            ReadCause::Get,
            CacheFill::Keep,
        )
        .unwrap_err();
    match e {
        Error::Corruption {
            file,
            offset,
            detail,
        } => {
            assert_eq!(
                file,
                Path::new("/v").join(format::segment_file_name(ptr.segment))
            );
            assert_eq!(offset, ptr.offset);
            assert!(detail.contains("not live"), "{detail}");
        }
        e => panic!("expected corruption, got {e}"),
    }
}

/// [`placement`] with a block cache, as a store opens it (value records are kept there).
fn placement_with_cache(env: &Env) -> (VlogPlacement, Arc<crate::cache::block_cache::BlockCache>) {
    let cache = Arc::new(crate::cache::block_cache::BlockCache::new(1 << 20));
    (placement_in(env, 0, Some(&cache)), cache)
}

/// What a scan's resolve of `key` through `memo` gives: the value, or the corruption's file,
/// offset and detail.
fn resolve_in(
    p: &VlogPlacement,
    memo: &mut crate::values::ResolveMemo,
    key: &[u8],
    stored: &[u8],
) -> std::result::Result<Vec<u8>, (std::path::PathBuf, u64, String)> {
    match p.resolve_in(
        memo,
        key,
        ValueKind::ValuePointer,
        stored,
        ReadCause::ScanValue,
        CacheFill::Scan,
    ) {
        Ok(v) => Ok(v.to_vec()),
        Err(Error::Corruption {
            file,
            offset,
            detail,
        }) => Err((file, offset, detail)),
        Err(e) => panic!("expected a value or corruption, got {e}"),
    }
}

#[test]
fn a_scans_resolves_check_what_a_lookup_checks() {
    // A scan resolves through its memo (the segment kept between values, the cached
    // record's key and kind checked without the general decoder): every wrong pointer is
    // still corruption naming the segment file and the pointer's offset, cached or not.
    let env = Env::memory();
    let (p, _cache) = placement_with_cache(&env);
    let got = append(&p, 1, &[(b"k1", b"value one"), (b"k2", b"value two")]);
    let (ptr1, ptr2) = (&got[0].2, &got[1].2);
    let q = Pointer::decode(ptr1).unwrap();
    let file = Path::new("/v").join(format::segment_file_name(q.segment));
    let mut memo = crate::values::ResolveMemo::default();
    // A miss, then a hit (the record kept in the cache), through the same memo.
    for _ in 0..2 {
        assert_eq!(
            resolve_in(&p, &mut memo, b"k1", ptr1).unwrap(),
            b"value one"
        );
        assert_eq!(
            resolve_in(&p, &mut memo, b"k2", ptr2).unwrap(),
            b"value two"
        );
    }
    // k1 handed k2's (cached) record: the fast check refuses it, the general one says why.
    let (f, at, d) = resolve_in(&p, &mut memo, b"k1", ptr2).unwrap_err();
    assert_eq!(
        (f, at),
        (file.clone(), Pointer::decode(ptr2).unwrap().offset)
    );
    assert!(d.contains("holds key"), "{d}");
    // A key of the same length: the bytes are compared, not only the lengths.
    let (_, _, d) = resolve_in(&p, &mut memo, b"k3", ptr1).unwrap_err();
    assert!(d.contains("holds key"), "{d}");
    for bad in misplaced(q) {
        let (f, at, _) = resolve_in(&p, &mut memo, b"k1", &bad.to_vec()).unwrap_err();
        assert_eq!((f, at), (file.clone(), bad.offset), "{bad:?}");
    }
    // The memo holds segment 1; a pointer into a segment that is not live is still refused.
    let missing = Pointer { segment: 99, ..q };
    let (f, at, d) = resolve_in(&p, &mut memo, b"k1", &missing.to_vec()).unwrap_err();
    assert_eq!(
        (f, at),
        (
            Path::new("/v").join(format::segment_file_name(99)),
            q.offset
        )
    );
    assert!(d.contains("not live"), "{d}");
    // And the scan goes on after it.
    assert_eq!(
        resolve_in(&p, &mut memo, b"k1", ptr1).unwrap(),
        b"value one"
    );
}

#[test]
fn a_scan_refuses_a_punched_prefix_and_a_removed_segment_and_reports_a_damaged_record() {
    let env = Env::memory();
    let (p, _cache) = placement_with_cache(&env);
    let got = append(
        &p,
        1,
        &[
            (b"k1", b"value one"),
            (b"k2", b"value two"),
            (b"k3", b"value three"),
        ],
    );
    let [p1, p2, p3] = [0, 1, 2].map(|i| Pointer::decode(&got[i].2).unwrap());
    let file = Path::new("/v").join(format::segment_file_name(p1.segment));
    let mut memo = crate::values::ResolveMemo::default();
    assert_eq!(
        resolve_in(&p, &mut memo, b"k1", &got[0].2).unwrap(),
        b"value one"
    );
    // k3's record is damaged on disk before anything read it: the read that misses the
    // cache checks the checksum and names the file and the record.
    env.fs()
        .punch_hole(&file, p3.offset + 4, u64::from(p3.length) - 4)
        .unwrap();
    let (f, at, d) = resolve_in(&p, &mut memo, b"k3", &got[2].2).unwrap_err();
    assert_eq!((f, at), (file.clone(), p3.offset), "{d}");
    // Collection committed a prefix past k1's record (the memo already holds the segment,
    // and k1's record is in the cache): the pointer is dangling all the same.
    p.punch_collected(p1.segment, p2.offset);
    let (f, at, d) = resolve_in(&p, &mut memo, b"k1", &got[0].2).unwrap_err();
    assert_eq!((f, at), (file.clone(), p1.offset));
    assert!(d.contains("prefix"), "{d}");
    assert_eq!(
        resolve_in(&p, &mut memo, b"k2", &got[1].2).unwrap(),
        b"value two"
    );
    // The segment removed: a new scan (a new memo) finds it gone.
    drop(memo);
    p.remove_segment(p1.segment);
    let mut memo = crate::values::ResolveMemo::default();
    let (f, at, d) = resolve_in(&p, &mut memo, b"k2", &got[1].2).unwrap_err();
    assert_eq!((f, at), (file, p2.offset));
    assert!(d.contains("not live"), "{d}");
}

#[test]
fn a_scans_cache_hits_are_counted_by_the_time_it_ends() {
    let env = Env::memory();
    let (p, cache) = placement_with_cache(&env);
    let got = append(&p, 1, &[(b"k1", b"value one"), (b"k2", b"value two")]);
    let mut memo = crate::values::ResolveMemo::default();
    // Two misses (each counted at once), then hits counted by the memo.
    let rounds = 3 * reader::HITS_PER_COUNT + 5;
    for _ in 0..rounds {
        resolve_in(&p, &mut memo, b"k1", &got[0].2).unwrap();
        resolve_in(&p, &mut memo, b"k2", &got[1].2).unwrap();
    }
    assert_eq!(cache.misses(), 2);
    // Added in steps while the scan runs, the rest when it ends.
    assert!(
        cache.hits() >= 3 * reader::HITS_PER_COUNT,
        "{}",
        cache.hits()
    );
    drop(memo);
    assert_eq!(cache.hits(), 2 * rounds - 2);
}

#[test]
fn a_scan_over_more_segments_than_its_memo_holds_reads_every_value() {
    // Values spread over more segments than a scan's memo keeps, read in an order that
    // moves between them (as a scan of hashed keys does): every value is the right one,
    // from each segment's records, and a pointer naming another segment's offset is not.
    let env = Env::memory();
    let (p, cache) = placement_with_cache(&env);
    let value = |i: usize| vec![b'a' + (i % 26) as u8; 600 + i];
    let keys: Vec<Vec<u8>> = (0..150)
        .map(|i| format!("key{i:03}").into_bytes())
        .collect();
    let mut stored = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let v = value(i);
        let got = append(&p, 1 + i as u64, &[(k, &v)]);
        stored.push(got[0].2.clone());
    }
    let segments: std::collections::BTreeSet<u64> = stored
        .iter()
        .map(|s| Pointer::decode(s).unwrap().segment)
        .collect();
    assert!(
        segments.len() > 2 * reader::MEMO_SEGMENTS,
        "{}",
        segments.len()
    );
    let mut memo = crate::values::ResolveMemo::default();
    for round in 0..3 {
        for j in 0..keys.len() {
            let i = (j * 37 + round) % keys.len();
            assert_eq!(
                resolve_in(&p, &mut memo, &keys[i], &stored[i]).unwrap(),
                value(i)
            );
        }
    }
    // Key 0's offset in key 1's segment: corruption naming key 1's segment.
    let (p0, p1) = (
        Pointer::decode(&stored[0]).unwrap(),
        Pointer::decode(stored.last().unwrap()).unwrap(),
    );
    assert_ne!(p0.segment, p1.segment);
    let wrong = Pointer {
        segment: p1.segment,
        ..p0
    };
    let (f, at, _) = resolve_in(&p, &mut memo, &keys[0], &wrong.to_vec()).unwrap_err();
    assert_eq!(
        (f, at),
        (
            Path::new("/v").join(format::segment_file_name(p1.segment)),
            p0.offset
        )
    );
    drop(memo);
    assert_eq!(cache.hits() + cache.misses(), 3 * keys.len() as u64 + 1);
}

#[test]
fn a_scans_records_not_kept_are_read_into_the_buffer_its_cursor_gave_back() {
    // A record the cache does not keep comes back in the buffer it was read into, and the
    // next one is read into the buffer the cursor gave back (no allocation per value).
    let env = Env::memory();
    let (p, cache) = placement_with_cache(&env);
    let got = append(
        &p,
        1,
        &[
            (b"k1", &[1u8; 1500]),
            (b"k2", &[2u8; 1200]),
            (b"k3", &[3u8; 900]),
        ],
    );
    let resolve = |memo: &mut crate::values::ResolveMemo, i: usize, fill| {
        p.resolve_in(
            memo,
            &got[i].0,
            ValueKind::ValuePointer,
            &got[i].2,
            ReadCause::ScanValue,
            fill,
        )
        .unwrap()
        .into_static()
    };
    let mut memo = crate::values::ResolveMemo::default();
    let v1 = resolve(&mut memo, 0, CacheFill::Skip);
    assert_eq!(&*v1, &[1u8; 1500][..]);
    let ValueBytes::Tail(buf, _) = &v1 else {
        panic!("a record not kept is a buffer of its own: {v1:?}")
    };
    let at = buf.as_ptr();
    memo.give_back(v1);
    let v2 = resolve(&mut memo, 1, CacheFill::Skip);
    assert_eq!(&*v2, &[2u8; 1200][..]);
    match &v2 {
        ValueBytes::Tail(buf, _) => assert_eq!(buf.as_ptr(), at, "read into the buffer given back"),
        other => panic!("{other:?}"),
    }
    assert_eq!(cache.usage(), 0, "`Skip` keeps nothing");
    // Not given back: a new buffer, the same value.
    assert_eq!(&*resolve(&mut memo, 0, CacheFill::Skip), &[1u8; 1500][..]);
    // A scan's record read without a map (this file system has none) is kept as a
    // lookup's is, and shared with the cache.
    let v3 = resolve(&mut memo, 2, CacheFill::Scan);
    assert!(matches!(v3, ValueBytes::Shared(..)), "{v3:?}");
    assert!(cache.usage() > 900);
    assert_eq!(cache.hits(), 0);
    assert_eq!(&*resolve(&mut memo, 2, CacheFill::Skip), &[3u8; 900][..]);
    drop(memo);
    assert_eq!(cache.hits(), 1, "a cached record is used whatever the fill");
}

/// The value `stored` carries after its pointer, as a scan's cursor finds it.
fn carried_in(p: &VlogPlacement, key: &[u8], kind: ValueKind, stored: &[u8]) -> Option<usize> {
    p.carried_at().and_then(|f| f(key, kind, stored))
}

/// A placement for `/v` like [`placement`]'s, keeping values of up to `carry_max` bytes
/// beside their pointers in the entries it hands the memtable.
fn carrying_placement(env: &Env, carry_max: usize) -> VlogPlacement {
    let mut p = placement(env, 0);
    p.carry_max = carry_max;
    p
}

#[test]
fn carried_values_are_read_from_the_entry_and_flushed_as_bare_pointers() {
    use crate::values::ValueGc;
    let env = Env::memory();
    let p = carrying_placement(&env, 100);
    let small = b"a value kept beside its pointer".to_vec();
    let large = vec![9u8; 101];
    let got = append(&p, 1, &[(b"k1", &small), (b"k2", &large), (b"k3", b"")]);
    assert!(got.iter().all(|g| g.1 == ValueKind::ValuePointer));
    // k1 carries its value after the pointer; k2's value is over the limit, and k3's is
    // empty: bare pointers.
    let bare1 = p.table_value(ValueKind::ValuePointer, &got[0].2).to_vec();
    let q1 = Pointer::decode(&bare1).unwrap();
    assert_eq!(got[0].2, [bare1.as_slice(), small.as_slice()].concat());
    assert_eq!(
        carried_in(&p, b"k1", ValueKind::ValuePointer, &got[0].2),
        Some(bare1.len())
    );
    for g in &got[1..] {
        assert!(Pointer::decode(&g.2).is_ok());
        assert_eq!(p.table_value(ValueKind::ValuePointer, &g.2), g.2.as_slice());
        assert_eq!(carried_in(&p, &g.0, ValueKind::ValuePointer, &g.2), None);
    }
    // Inline values and other kinds carry nothing.
    assert_eq!(carried_in(&p, b"k1", ValueKind::Value, &got[0].2), None);
    assert_eq!(
        p.table_value(ValueKind::Value, &got[0].2),
        got[0].2.as_slice()
    );
    // Both forms read the same value; the carried one never touches the log.
    let before = env.io().total_read();
    let carried = p
        .resolve(
            b"k1",
            ValueKind::ValuePointer,
            &got[0].2,
            ReadCause::Get,
            CacheFill::Keep,
        )
        .unwrap();
    assert!(matches!(carried, ValueBytes::Borrowed(_)));
    assert_eq!(carried.as_ref(), small.as_slice());
    assert_eq!(env.io().total_read(), before);
    let mut memo = crate::values::ResolveMemo::default();
    for (key, stored, value) in [
        (&b"k1"[..], &got[0].2, &small[..]),
        (b"k1", &bare1, &small[..]),
        (b"k2", &got[1].2, &large[..]),
    ] {
        let v = p
            .resolve_in(
                &mut memo,
                key,
                ValueKind::ValuePointer,
                stored,
                ReadCause::ScanValue,
                CacheFill::Scan,
            )
            .unwrap();
        assert_eq!(v.as_ref(), value);
    }
    // Another key's lookup, or bytes after the pointer that are not its value's length, are
    // corruption, never a value.
    let mut cut = got[0].2.clone();
    cut.pop();
    let mut grown = got[0].2.clone();
    grown.push(0);
    for (key, stored) in [(&b"k1"[..], &cut), (b"k1", &grown), (b"k22", &got[0].2)] {
        let e = p
            .resolve(
                key,
                ValueKind::ValuePointer,
                stored,
                ReadCause::Get,
                CacheFill::Keep,
            )
            .unwrap_err();
        assert!(matches!(e, Error::Corruption { .. }), "{e}");
        assert_eq!(carried_in(&p, key, ValueKind::ValuePointer, stored), None);
    }
    // Superseding or filtering a carried entry counts its record as a bare pointer does.
    let mut carried_edit = VersionEdit::default();
    p.superseded(ValueKind::ValuePointer, &got[0].2, &mut carried_edit);
    let q = carrying_placement(&Env::memory(), 100);
    let bare = append(&q, 1, &[(b"k1", &small)]);
    let mut bare_edit = VersionEdit::default();
    q.superseded(
        ValueKind::ValuePointer,
        q.table_value(ValueKind::ValuePointer, &bare[0].2),
        &mut bare_edit,
    );
    assert_eq!(view(&carried_edit).garbage, view(&bare_edit).garbage);
    assert_eq!(
        view(&carried_edit).garbage.get(&q1.segment),
        Some(&u64::from(q1.length))
    );
}

#[test]
fn relocations_and_a_limit_of_zero_carry_no_values() {
    let env = Env::memory();
    let p = carrying_placement(&env, 1 << 20);
    let mut b = WriteBatch::new();
    b.put(b"k", b"relocated value");
    b.set_sequence(1);
    let stored = p.append_relocation(&b).unwrap().unwrap();
    let e = stored.iter().next().unwrap();
    assert_eq!(e.kind, ValueKind::ValuePointer);
    assert!(Pointer::decode(e.value).is_ok(), "a bare pointer");
    let q = placement(&env, 0);
    let got = append(&q, 2, &[(b"k", b"value")]);
    assert!(Pointer::decode(&got[0].2).is_ok(), "a bare pointer");
}
