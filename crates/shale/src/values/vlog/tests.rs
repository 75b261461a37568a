use std::path::Path;

use super::*;
use crate::values::RecoverContext;

fn placement(env: &Env, min_separated: usize) -> VlogPlacement {
    let mut o = Options::preset("wisckey").unwrap().with_env(env.clone());
    o.min_separated_value_size = min_separated;
    o.vlog_segment_size = 4096;
    env.fs().create_dir_all(Path::new("/v")).unwrap();
    let p = VlogPlacement::new(&o, Path::new("/v"), Arc::new(AtomicU64::new(1)));
    let state = PersistedState::default();
    let ctx = RecoverContext {
        env,
        dir: Path::new("/v"),
        state: &state,
        names: &[],
        last_sequence: 0,
    };
    let mut edit = VersionEdit::default();
    p.recover(&ctx, &mut |_, _, _, _| {}, &mut edit).unwrap();
    assert_eq!(edit.vlog_head, Some((1, format::HEADER_LEN)));
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
    let mut out = Vec::new();
    p.append(&b, false, &mut |k, _, kind, v| {
        out.push((k.to_vec(), kind, v.to_vec()))
    })
    .unwrap();
    out
}

#[test]
fn small_values_stay_inline_and_large_ones_are_pointers() {
    let env = Env::memory();
    let p = placement(&env, 8);
    let got = append(&p, 1, &[(b"a", b"short"), (b"b", b"a longer value")]);
    assert_eq!(got[0].1, ValueKind::Value);
    assert_eq!(got[1].1, ValueKind::ValuePointer);
    assert_eq!(
        p.resolve(b"b", ValueKind::ValuePointer, &got[1].2)
            .unwrap()
            .as_ref(),
        b"a longer value"
    );
}

#[test]
fn a_pointer_never_yields_another_keys_value() {
    let env = Env::memory();
    let p = placement(&env, 0);
    let got = append(&p, 1, &[(b"k1", b"value one"), (b"k2", b"value two")]);
    let (ptr1, ptr2) = (&got[0].2, &got[1].2);
    // Right key, right pointer.
    assert_eq!(
        p.resolve(b"k1", ValueKind::ValuePointer, ptr1)
            .unwrap()
            .as_ref(),
        b"value one"
    );
    // k1's lookup handed k2's pointer: the record's key does not match.
    let e = p.resolve(b"k1", ValueKind::ValuePointer, ptr2).unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
    // A pointer past the valid end, into a missing segment, or into the middle of a record.
    let mut q = Pointer::decode(ptr1).unwrap();
    for bad in [
        Pointer {
            offset: q.offset + 1,
            ..q
        },
        Pointer { segment: 99, ..q },
        Pointer {
            offset: 1 << 20,
            ..q
        },
        Pointer {
            length: q.length + 1,
            ..q
        },
        Pointer { offset: 0, ..q },
    ] {
        let e = p
            .resolve(b"k1", ValueKind::ValuePointer, &bad.to_vec())
            .unwrap_err();
        assert!(matches!(e, Error::Corruption { .. }), "{bad:?}: {e}");
    }
    q.length = 3;
    assert!(
        p.resolve(b"k1", ValueKind::ValuePointer, &q.to_vec())
            .is_err()
    );
    assert!(
        p.resolve(b"k1", ValueKind::ValuePointer, b"\xff\xff")
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
    let state = PersistedState {
        vlog_head: Some((head.segment, head.offset)),
        ..PersistedState::default()
    };
    let names = env.fs().list_dir(Path::new("/v")).unwrap();
    let q = VlogPlacement::new(
        &Options::preset("wisckey").unwrap().with_env(env.clone()),
        Path::new("/v"),
        Arc::new(AtomicU64::new(100)),
    );
    let ctx = RecoverContext {
        env: &env,
        dir: Path::new("/v"),
        state: &state,
        names: &names,
        last_sequence: 0,
    };
    let mut seqs = Vec::new();
    let last = q
        .recover(
            &ctx,
            &mut |_, seq, _, _| seqs.push(seq),
            &mut VersionEdit::default(),
        )
        .unwrap();
    assert_eq!(seqs, (6..=12).collect::<Vec<_>>());
    assert_eq!(last, 12);
}
