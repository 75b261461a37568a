//! Tests of the fault-injecting file system.

use super::*;
use crate::env::{Env, ReadCause, WriteCause};

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

fn fault_fs() -> (FaultFs, FaultControl) {
    let fs = FaultFs::new(MemFs::new());
    let ctl = fs.control();
    (fs, ctl)
}

fn read(fs: &dyn FileSystem, path: &str) -> Vec<u8> {
    let f = fs.open(&p(path)).unwrap();
    let mut buf = vec![0u8; f.len() as usize];
    f.read_exact_at(&mut buf, 0).unwrap();
    buf
}

fn message(e: &Error) -> String {
    match e {
        Error::Io { source, .. } => source.to_string(),
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

/// create_dir_all, create, append, flush, sync, sync_dir, rename, remove: 8 ops.
fn script(fs: &FaultFs) -> Result<()> {
    fs.create_dir_all(&p("/d"))?;
    let mut f = fs.create(&p("/d/a"))?;
    f.append(b"hello")?;
    f.flush()?;
    f.sync()?;
    fs.sync_dir(&p("/d"))?;
    fs.rename(&p("/d/a"), &p("/d/b"))?;
    fs.remove_file(&p("/d/b"))
}

#[test]
fn counts_mutating_operations_only() {
    let (fs, ctl) = fault_fs();
    script(&fs).unwrap();
    assert_eq!(ctl.ops(), 8);
    // Reads, listings and stats are not counted.
    fs.create(&p("/d/c")).unwrap();
    let n = ctl.ops();
    fs.list_dir(&p("/d")).unwrap();
    fs.exists(&p("/d/c")).unwrap();
    fs.file_size(&p("/d/c")).unwrap();
    fs.open(&p("/d/c")).unwrap();
    assert_eq!(ctl.ops(), n);
    let _l = fs.lock(&p("/d/LOCK")).unwrap();
    assert_eq!(ctl.ops(), n + 1);
}

#[test]
fn fail_once_and_from_then_on() {
    for k in 0..8u64 {
        let (fs, ctl) = fault_fs();
        ctl.fail_at(k, FailMode::Once);
        let e = script(&fs).unwrap_err();
        assert_eq!(message(&e), format!("injected fault at op {k}"));
        assert_eq!(ctl.injected().len(), 1);
        assert_eq!(ctl.injected()[0].index, k);
        // Once: the next operation succeeds.
        fs.create_dir_all(&p("/e")).unwrap();

        let (fs, ctl) = fault_fs();
        ctl.fail_at(k, FailMode::FromThenOn);
        assert!(script(&fs).is_err());
        assert!(fs.create_dir_all(&p("/e")).is_err());
        ctl.clear_faults();
        fs.create_dir_all(&p("/e")).unwrap();
    }
}

#[test]
fn injected_error_names_the_op_and_path() {
    let (fs, ctl) = fault_fs();
    fs.create_dir_all(&p("/d")).unwrap();
    let mut f = fs.create(&p("/d/x")).unwrap();
    ctl.fail_at(ctl.ops() + 1, FailMode::Once);
    f.append(b"a").unwrap();
    let e = f.sync().unwrap_err();
    let s = e.to_string();
    assert!(s.contains("sync") && s.contains("/d/x"), "{s}");
    assert!(matches!(&e, Error::Io { source, .. } if source.kind() == io::ErrorKind::Other));
    // A failed sync made nothing durable.
    assert_eq!(
        fs.mem().snapshot_durable().file_names(),
        Vec::<PathBuf>::new()
    );
}

#[test]
fn crash_at_forks_before_the_op_and_stops_everything() {
    let (fs, ctl) = fault_fs();
    fs.create_dir_all(&p("/d")).unwrap();
    let mut f = fs.create(&p("/d/a")).unwrap(); // op 1
    f.append(b"synced").unwrap(); // 2
    f.sync().unwrap(); // 3
    fs.sync_dir(&p("/d")).unwrap(); // 4
    ctl.crash_at(7);
    f.append(b"-more").unwrap(); // 5
    f.flush().unwrap(); // 6
    assert!(f.sync().is_err()); // 7: the crash
    assert!(fs.create(&p("/d/z")).is_err());
    let crash = ctl.take_crash().unwrap();
    assert_eq!(crash.index(), 7);
    assert_eq!(crash.op().map(|o| o.kind), Some(OpKind::Sync));
    let fs2 = crash.fs();
    assert_eq!(read(fs2, "/d/a"), b"synced-more");
    let drop = crash.image(UnsyncedData::Drop, UnsyncedNames::Forget, 1);
    assert_eq!(read(&drop, "/d/a"), b"synced");
    let keep = crash.image(UnsyncedData::Keep, UnsyncedNames::Forget, 1);
    assert_eq!(read(&keep, "/d/a"), b"synced-more");
    for seed in 0..20 {
        let torn = crash.image(UnsyncedData::TearLastAppend, UnsyncedNames::Forget, seed);
        let got = read(&torn, "/d/a");
        assert!(
            got.len() >= 6 && b"synced-more".starts_with(&got),
            "{got:?}"
        );
        let torn = crash.image(UnsyncedData::TornPrefix, UnsyncedNames::Forget, seed);
        assert!(b"synced-more".starts_with(&read(&torn, "/d/a")));
    }
}

#[test]
fn images_forget_or_keep_unsynced_names() {
    let (fs, ctl) = fault_fs();
    fs.create_dir_all(&p("/d")).unwrap();
    let mut f = fs.create(&p("/d/new")).unwrap();
    f.append(b"data").unwrap();
    f.sync().unwrap();
    let crash = ctl.capture();
    assert_eq!((crash.index(), crash.op()), (ctl.ops(), None));
    let forget = crash.image(UnsyncedData::Drop, UnsyncedNames::Forget, 0);
    assert!(!forget.exists(&p("/d/new")).unwrap());
    let keep = crash.image(UnsyncedData::Drop, UnsyncedNames::Keep, 0);
    assert_eq!(read(&keep, "/d/new"), b"data");
}

#[test]
fn random_pages_leave_zero_holes_and_are_seeded() {
    let (fs, ctl) = fault_fs();
    fs.create_dir_all(&p("/d")).unwrap();
    let mut f = fs.create(&p("/d/log")).unwrap();
    fs.sync_dir(&p("/d")).unwrap();
    let body: Vec<u8> = (0..10 * PAGE_SIZE).map(|i| (i % 251) as u8 + 1).collect();
    f.append(&body).unwrap();
    f.flush().unwrap();
    let crash = ctl.capture();
    let mut saw_hole = false;
    for seed in 0..16 {
        let a = read(
            &crash.image(UnsyncedData::RandomPages, UnsyncedNames::Forget, seed),
            "/d/log",
        );
        let b = read(
            &crash.image(UnsyncedData::RandomPages, UnsyncedNames::Forget, seed),
            "/d/log",
        );
        assert_eq!(a, b, "same seed, same image");
        assert!(a.len() <= body.len());
        for (i, page) in a.chunks(PAGE_SIZE).enumerate() {
            let orig = &body[i * PAGE_SIZE..i * PAGE_SIZE + page.len()];
            if page.iter().all(|&x| x == 0) {
                saw_hole = true;
            } else {
                assert_eq!(
                    page, orig,
                    "a kept page is kept whole or torn, never changed"
                );
            }
        }
    }
    assert!(saw_hole);
}

#[test]
fn hook_sees_every_op_before_it_runs() {
    let (fs, ctl) = fault_fs();
    let seen: Arc<Mutex<Vec<(u64, usize)>>> = Arc::default();
    let s = Arc::clone(&seen);
    ctl.set_hook(Some(Arc::new(move |v: &OpView<'_>| {
        s.lock().push((v.op().index, v.mem().file_names().len()));
        assert_eq!(v.capture().op(), Some(v.op()));
    })));
    script(&fs).unwrap();
    let seen = seen.lock().clone();
    assert_eq!(seen.len(), 8);
    assert!(seen.iter().enumerate().all(|(i, &(k, _))| k == i as u64));
    // Before the create (op 1) there is no file; before the remove (op 7) there is one.
    assert_eq!(seen[1].1, 0);
    assert_eq!(seen[7].1, 1);
}

#[test]
fn read_faults_and_bit_flips() {
    let (fs, ctl) = fault_fs();
    let env = Env::new(Arc::new(fs.clone()));
    fs.create_dir_all(&p("/d")).unwrap();
    let mut w = env.create(&p("/d/t.sst"), WriteCause::Flush).unwrap();
    w.append(&[0u8; 64]).unwrap();
    w.sync().unwrap();
    drop(w);
    let f = env.open(&p("/d/t.sst")).unwrap();
    let mut buf = [0u8; 64];
    let base = ctl.reads();
    ctl.fail_read_at(base + 1, FailMode::Once);
    f.read_exact_at(&mut buf, 0, ReadCause::Get).unwrap();
    let e = f.read_exact_at(&mut buf, 0, ReadCause::Get).unwrap_err();
    assert!(e.to_string().contains("injected fault at read"), "{e}");
    f.read_exact_at(&mut buf, 0, ReadCause::Get).unwrap();
    assert_eq!(ctl.injected_reads(), 1);

    ctl.flip_read_bits(".log", 1, 7);
    f.read_exact_at(&mut buf, 0, ReadCause::Get).unwrap();
    assert_eq!(buf, [0u8; 64], "the pattern does not match");
    ctl.flip_read_bits(".sst", 1, 7);
    f.read_exact_at(&mut buf, 0, ReadCause::Get).unwrap();
    assert_eq!(buf.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
    assert_eq!(ctl.flipped_bits(), 1);
    // The file itself is unchanged.
    ctl.clear_faults();
    f.read_exact_at(&mut buf, 0, ReadCause::Get).unwrap();
    assert_eq!(buf, [0u8; 64]);
}

#[test]
fn engine_runs_on_it() {
    let (fs, ctl) = fault_fs();
    let env = Env::new(Arc::new(fs.clone()));
    let db = crate::Db::open("/db", crate::Options::default().with_env(env.clone())).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    assert!(ctl.ops() > 5);
    let db = crate::Db::open("/db", crate::Options::default().with_env(env)).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn fail_when_picks_an_op_by_what_it_is() {
    let (fs, ctl) = fault_fs();
    let seen = Arc::new(AtomicU64::new(0));
    let s = Arc::clone(&seen);
    // The second sync of any file.
    ctl.fail_when(
        Arc::new(move |op: &Op| op.kind == OpKind::Sync && s.fetch_add(1, Ordering::SeqCst) == 1),
        FailMode::Once,
    );
    fs.create_dir_all(&p("/d")).unwrap();
    let mut f = fs.create(&p("/d/a")).unwrap();
    f.sync().unwrap();
    let e = f.sync().unwrap_err();
    assert!(message(&e).starts_with("injected fault at op"));
    f.sync().unwrap();
    assert_eq!(ctl.injected().len(), 1);
    assert_eq!(ctl.injected()[0].kind, OpKind::Sync);
}
