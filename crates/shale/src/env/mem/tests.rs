//! Tests of the in-memory file system and its crash model.

use super::*;
use crate::env::{Env, ReadCause, WriteCause};

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

/// A file system with the directory `/db`, made durable.
fn fs_with_db() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(&p("/db")).unwrap();
    fs
}

fn write(fs: &MemFs, path: &str, body: &[u8], sync: bool) {
    let mut w = fs.create(&p(path)).unwrap();
    w.append(body).unwrap();
    if sync {
        w.sync().unwrap();
    }
}

fn read(fs: &MemFs, path: &str) -> Vec<u8> {
    let f = fs.open(&p(path)).unwrap();
    let mut buf = vec![0u8; f.len() as usize];
    f.read_exact_at(&mut buf, 0).unwrap();
    buf
}

fn kind(err: &Error) -> Option<io::ErrorKind> {
    match err {
        Error::Io { source, .. } => Some(source.kind()),
        _ => None,
    }
}

#[test]
fn write_flush_read_back() {
    let fs = fs_with_db();
    let mut w = fs.create(&p("/db/a")).unwrap();
    w.append(b"hello ").unwrap();
    w.append(b"world").unwrap();
    assert_eq!(w.len(), 11);
    // Not flushed: the "OS" has not seen the bytes yet.
    assert_eq!(fs.file_size(&p("/db/a")).unwrap(), 0);
    w.flush().unwrap();
    assert_eq!(fs.file_size(&p("/db/a")).unwrap(), 11);
    assert_eq!(read(&fs, "/db/a"), b"hello world");
    let f = fs.open(&p("/db/a")).unwrap();
    let mut mid = [0u8; 3];
    f.read_exact_at(&mut mid, 2).unwrap();
    assert_eq!(&mid, b"llo");
    // Dropping the writer flushes what is left.
    w.append(b"!").unwrap();
    drop(w);
    assert_eq!(read(&fs, "/db/a"), b"hello world!");
}

#[test]
fn large_appends_overflow_the_buffer_to_the_inode() {
    let fs = fs_with_db();
    let mut w = fs.create(&p("/db/big")).unwrap();
    let big = vec![7u8; WRITE_BUFFER + 1];
    w.append(&big).unwrap();
    assert_eq!(fs.file_size(&p("/db/big")).unwrap(), big.len() as u64);
}

#[test]
fn reading_past_end_is_an_error() {
    let fs = fs_with_db();
    write(&fs, "/db/f", b"0123456789", true);
    let f = fs.open(&p("/db/f")).unwrap();
    let mut buf = [0u8; 4];
    let err = f.read_exact_at(&mut buf, 8).unwrap_err();
    assert_eq!(kind(&err), Some(io::ErrorKind::UnexpectedEof));
    assert!(err.to_string().contains("/db/f"), "{err}");
    assert!(f.read_exact_at(&mut buf, u64::MAX).is_err());
    assert!(f.read_exact_at(&mut buf, 6).is_ok());
}

#[test]
fn missing_files_and_parents_are_not_found() {
    let fs = fs_with_db();
    let missing = p("/db/missing");
    assert!(!fs.exists(&missing).unwrap());
    for err in [
        fs.open(&missing).map(|_| ()).unwrap_err(),
        fs.remove_file(&missing).unwrap_err(),
        fs.rename(&missing, &p("/db/x")).unwrap_err(),
        fs.file_size(&missing).unwrap_err(),
        fs.list_dir(&p("/nodir")).map(|_| ()).unwrap_err(),
        fs.sync_dir(&p("/nodir")).unwrap_err(),
        fs.create(&p("/nodir/f")).map(|_| ()).unwrap_err(),
        fs.lock(&p("/nodir/LOCK")).map(|_| ()).unwrap_err(),
    ] {
        assert_eq!(kind(&err), Some(io::ErrorKind::NotFound), "{err}");
    }
    write(&fs, "/db/a", b"x", false);
    let err = fs.rename(&p("/db/a"), &p("/nodir/a")).unwrap_err();
    assert_eq!(kind(&err), Some(io::ErrorKind::NotFound), "{err}");
    assert!(
        fs.exists(&p("/db/a")).unwrap(),
        "a failed rename changes nothing"
    );
}

#[test]
fn directories() {
    let fs = MemFs::new();
    fs.create_dir_all(&p("/a/b/c")).unwrap();
    fs.create_dir_all(&p("/a/b")).unwrap();
    assert!(fs.exists(&p("/a/b")).unwrap());
    write(&fs, "/a/b/f", b"", false);
    let mut names = fs.list_dir(&p("/a/b")).unwrap();
    names.sort();
    assert_eq!(names, vec!["c", "f"]);
    assert_eq!(fs.list_dir(&p("/")).unwrap(), vec!["a"]);
    assert!(fs.open(&p("/a/b")).is_err());
    assert!(fs.create(&p("/a/b")).is_err());
    let err = fs.create_dir_all(&p("/a/b/f/g")).unwrap_err();
    assert_eq!(kind(&err), Some(io::ErrorKind::AlreadyExists), "{err}");
    // Relative paths work too; their parent is the always-present current directory.
    write(&fs, "rel", b"r", false);
    assert_eq!(read(&fs, "rel"), b"r");
    fs.create_dir_all(&p("reldir")).unwrap();
    write(&fs, "reldir/x", b"x", false);
    assert_eq!(fs.list_dir(&p("reldir")).unwrap(), vec!["x"]);
}

#[test]
fn directories_survive_a_crash() {
    let fs = fs_with_db();
    fs.crash();
    assert!(fs.exists(&p("/db")).unwrap());
    write(&fs, "/db/after", b"ok", true);
}

#[test]
fn unsynced_data_is_lost_synced_data_kept() {
    let fs = fs_with_db();
    let mut w = fs.create(&p("/db/log")).unwrap();
    fs.sync_dir(&p("/db")).unwrap();
    w.append(b"durable").unwrap();
    w.sync().unwrap();
    w.append(b"+flushed").unwrap();
    w.flush().unwrap();
    w.append(b"+buffered").unwrap();
    assert_eq!(read(&fs, "/db/log"), b"durable+flushed");
    drop(w);
    assert_eq!(read(&fs, "/db/log"), b"durable+flushed+buffered");
    fs.crash();
    assert_eq!(read(&fs, "/db/log"), b"durable");
    assert_eq!(fs.file_size(&p("/db/log")).unwrap(), 7);
}

#[test]
fn file_never_synced_is_empty_after_crash_if_its_entry_is_durable() {
    let fs = fs_with_db();
    write(&fs, "/db/f", b"data", false);
    fs.sync_dir(&p("/db")).unwrap();
    fs.crash();
    assert_eq!(read(&fs, "/db/f"), b"");
}

#[test]
fn created_file_without_dir_sync_disappears() {
    let fs = fs_with_db();
    write(&fs, "/db/000005.sst", b"table", true);
    assert_eq!(fs.durable_file_names(), Vec::<PathBuf>::new());
    fs.crash();
    assert!(!fs.exists(&p("/db/000005.sst")).unwrap());
    assert!(fs.file_names().is_empty());
    assert!(fs.list_dir(&p("/db")).unwrap().is_empty());
}

#[test]
fn created_file_with_dir_sync_survives() {
    let fs = fs_with_db();
    write(&fs, "/db/000005.sst", b"table", true);
    fs.sync_dir(&p("/db")).unwrap();
    fs.crash();
    assert_eq!(read(&fs, "/db/000005.sst"), b"table");
}

#[test]
fn sync_dir_covers_only_that_directory() {
    let fs = fs_with_db();
    fs.create_dir_all(&p("/db/sub")).unwrap();
    write(&fs, "/db/a", b"a", true);
    write(&fs, "/db/sub/b", b"b", true);
    fs.sync_dir(&p("/db")).unwrap();
    assert_eq!(fs.durable_file_names(), vec![p("/db/a")]);
    fs.crash();
    assert_eq!(fs.file_names(), vec![p("/db/a")]);
}

/// The CURRENT-file pattern: write a temporary file, sync it, rename over CURRENT.
fn current_pattern(fs: &MemFs) {
    write(fs, "/db/CURRENT", b"MANIFEST-1\n", true);
    fs.sync_dir(&p("/db")).unwrap();
    write(fs, "/db/CURRENT.tmp", b"MANIFEST-2\n", true);
    fs.rename(&p("/db/CURRENT.tmp"), &p("/db/CURRENT")).unwrap();
    assert_eq!(read(fs, "/db/CURRENT"), b"MANIFEST-2\n");
    assert!(!fs.exists(&p("/db/CURRENT.tmp")).unwrap());
}

#[test]
fn rename_without_dir_sync_is_undone() {
    let fs = fs_with_db();
    current_pattern(&fs);
    fs.crash();
    assert_eq!(read(&fs, "/db/CURRENT"), b"MANIFEST-1\n");
    assert!(!fs.exists(&p("/db/CURRENT.tmp")).unwrap());
}

#[test]
fn rename_of_durable_file_without_dir_sync_restores_old_name() {
    let fs = fs_with_db();
    write(&fs, "/db/a", b"A", true);
    fs.sync_dir(&p("/db")).unwrap();
    fs.rename(&p("/db/a"), &p("/db/b")).unwrap();
    fs.crash();
    assert_eq!(fs.file_names(), vec![p("/db/a")]);
    assert_eq!(read(&fs, "/db/a"), b"A");
}

#[test]
fn rename_with_dir_sync_survives() {
    let fs = fs_with_db();
    current_pattern(&fs);
    fs.sync_dir(&p("/db")).unwrap();
    fs.crash();
    assert_eq!(read(&fs, "/db/CURRENT"), b"MANIFEST-2\n");
    assert_eq!(fs.file_names(), vec![p("/db/CURRENT")]);
}

#[test]
fn remove_without_dir_sync_comes_back() {
    let fs = fs_with_db();
    write(&fs, "/db/old.sst", b"old", true);
    fs.sync_dir(&p("/db")).unwrap();
    fs.remove_file(&p("/db/old.sst")).unwrap();
    assert!(!fs.exists(&p("/db/old.sst")).unwrap());
    let snap = fs.snapshot_durable();
    assert_eq!(read(&snap, "/db/old.sst"), b"old");
    fs.crash();
    assert_eq!(read(&fs, "/db/old.sst"), b"old");
    // Removed and synced: gone for good.
    fs.remove_file(&p("/db/old.sst")).unwrap();
    fs.sync_dir(&p("/db")).unwrap();
    fs.crash();
    assert!(!fs.exists(&p("/db/old.sst")).unwrap());
}

#[test]
fn create_over_existing_name_is_a_new_inode() {
    let fs = fs_with_db();
    write(&fs, "/db/f", b"old", true);
    fs.sync_dir(&p("/db")).unwrap();
    let before = fs.open(&p("/db/f")).unwrap();
    write(&fs, "/db/f", b"new", true);
    assert_eq!(read(&fs, "/db/f"), b"new");
    // A handle opened before keeps reading the old inode.
    let mut buf = [0u8; 3];
    before.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"old");
    drop(before);
    fs.crash();
    assert_eq!(
        read(&fs, "/db/f"),
        b"old",
        "the truncation was not dir-synced"
    );
    write(&fs, "/db/f", b"new", true);
    fs.sync_dir(&p("/db")).unwrap();
    fs.crash();
    assert_eq!(read(&fs, "/db/f"), b"new");
}

#[test]
fn read_handles_survive_rename_and_remove() {
    let fs = fs_with_db();
    write(&fs, "/db/a", b"abc", false);
    let r = fs.open(&p("/db/a")).unwrap();
    fs.rename(&p("/db/a"), &p("/db/b")).unwrap();
    fs.remove_file(&p("/db/b")).unwrap();
    let mut buf = [0u8; 3];
    r.read_exact_at(&mut buf, 0).unwrap();
    assert_eq!(&buf, b"abc");
    assert_eq!(r.len(), 3);
}

#[test]
fn writable_handle_follows_its_inode_through_rename() {
    let fs = fs_with_db();
    let mut w = fs.create(&p("/db/tmp")).unwrap();
    w.append(b"one").unwrap();
    w.flush().unwrap();
    fs.rename(&p("/db/tmp"), &p("/db/final")).unwrap();
    w.append(b"two").unwrap();
    w.sync().unwrap();
    fs.sync_dir(&p("/db")).unwrap();
    drop(w);
    fs.crash();
    assert_eq!(read(&fs, "/db/final"), b"onetwo");
}

#[test]
fn handles_opened_before_a_crash_fail() {
    let fs = fs_with_db();
    let mut w = fs.create(&p("/db/log")).unwrap();
    w.append(b"a").unwrap();
    w.sync().unwrap();
    fs.sync_dir(&p("/db")).unwrap();
    let r = fs.open(&p("/db/log")).unwrap();
    fs.crash();
    assert!(w.append(b"b").is_err());
    assert!(w.flush().is_err());
    assert!(w.sync().is_err());
    let mut buf = [0u8; 1];
    assert!(r.read_exact_at(&mut buf, 0).is_err());
    drop(w);
    // Nothing the stale writer did reached the rebooted file system.
    assert_eq!(read(&fs, "/db/log"), b"a");
}

#[test]
fn locks() {
    let fs = fs_with_db();
    let lock = p("/db/LOCK");
    let first = fs.lock(&lock).unwrap();
    assert!(fs.exists(&lock).unwrap(), "locking creates the file");
    match fs.lock(&lock) {
        Err(Error::Locked { path }) => assert_eq!(path, lock),
        other => panic!("expected Locked, got {other:?}"),
    }
    // A clone is the same file system, so it sees the lock.
    assert!(matches!(fs.clone().lock(&lock), Err(Error::Locked { .. })));
    // A crash releases nothing; dropping the guard does.
    fs.crash();
    assert!(matches!(fs.lock(&lock), Err(Error::Locked { .. })));
    // A crash image is a fresh machine: no locks.
    drop(fs.snapshot_durable().lock(&lock).unwrap());
    drop(first);
    let again = fs.lock(&lock).unwrap();
    assert!(format!("{again:?}").contains("LOCK"));
}

#[test]
fn snapshot_is_the_crash_image_and_independent() {
    let fs = fs_with_db();
    let mut w = fs.create(&p("/db/log")).unwrap();
    w.append(b"synced").unwrap();
    w.sync().unwrap();
    fs.sync_dir(&p("/db")).unwrap();
    w.append(b"+more").unwrap();
    w.flush().unwrap();
    write(&fs, "/db/undurable", b"x", true);

    let snap = fs.snapshot_durable();
    assert_eq!(snap.file_names(), vec![p("/db/log")]);
    assert_eq!(snap.durable_file_names(), vec![p("/db/log")]);
    assert_eq!(read(&snap, "/db/log"), b"synced");
    // The original is untouched.
    assert_eq!(read(&fs, "/db/log"), b"synced+more");
    assert!(fs.exists(&p("/db/undurable")).unwrap());
    // And the two evolve separately.
    w.append(b"!").unwrap();
    w.sync().unwrap();
    write(&snap, "/db/log", b"replaced", true);
    assert_eq!(read(&fs, "/db/log"), b"synced+more!");
    assert_eq!(read(&snap, "/db/log"), b"replaced");
    // The snapshot crashes like any MemFs: its unsynced directory change is undone.
    snap.crash();
    assert_eq!(read(&snap, "/db/log"), b"synced");
}

#[test]
fn drop_unsynced_data_is_a_crash() {
    let fs = fs_with_db();
    write(&fs, "/db/a", b"a", true);
    fs.drop_unsynced_data();
    assert!(fs.file_names().is_empty());
}

#[test]
fn clones_share_state_and_debug_lists_files() {
    let fs = fs_with_db();
    let other = fs.clone();
    write(&other, "/db/x", b"12345", false);
    assert_eq!(read(&fs, "/db/x"), b"12345");
    let dbg = format!("{fs:?}");
    assert!(dbg.contains("/db/x") && dbg.contains('5'), "{dbg}");
}

#[test]
fn works_through_env() {
    let fs = fs_with_db();
    let env = Env::new(Arc::new(fs.clone()));
    let mut w = env.create(&p("/db/w"), WriteCause::Wal).unwrap();
    w.append(b"abc").unwrap();
    w.sync().unwrap();
    assert_eq!(
        env.read_all(&p("/db/w"), ReadCause::Recovery).unwrap(),
        b"abc"
    );
    assert_eq!(env.io().written(WriteCause::Wal), 3);
    assert_eq!(env.io().read(ReadCause::Recovery), 3);
}

#[test]
fn concurrent_readers_and_writer() {
    let fs = fs_with_db();
    write(&fs, "/db/r", &[1u8; 4096], true);
    let r = fs.open(&p("/db/r")).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let r = Arc::clone(&r);
            s.spawn(move || {
                let mut buf = [0u8; 64];
                for i in 0..64u64 {
                    r.read_exact_at(&mut buf, i * 64).unwrap();
                    assert!(buf.iter().all(|&b| b == 1));
                }
            });
        }
        let fs = fs.clone();
        s.spawn(move || {
            let mut w = fs.create(&p("/db/w")).unwrap();
            for _ in 0..100 {
                w.append(b"xy").unwrap();
                w.flush().unwrap();
            }
        });
    });
    assert_eq!(fs.file_size(&p("/db/w")).unwrap(), 200);
}

#[test]
fn fork_is_independent_and_keeps_unsynced_state() {
    let fs = fs_with_db();
    write(&fs, "/db/a", b"synced", true);
    fs.sync_dir(&p("/db")).unwrap();
    {
        let mut w = fs.create(&p("/db/b")).unwrap();
        w.append(b"flushed").unwrap();
        w.flush().unwrap();
    }
    let fork = fs.fork();
    write(&fs, "/db/c", b"later", true);
    assert_eq!(read(&fork, "/db/b"), b"flushed");
    assert!(!fork.exists(&p("/db/c")).unwrap());
    // The fork keeps the crash model: b was never dir-synced, and is lost by a crash.
    fork.crash();
    assert_eq!(fork.file_names(), vec![p("/db/a")]);
    assert_eq!(read(&fs, "/db/b"), b"flushed");
}

#[test]
fn crash_image_with_chooses_what_survives() {
    let fs = fs_with_db();
    {
        let mut w = fs.create(&p("/db/log")).unwrap();
        w.append(b"0123").unwrap();
        w.sync().unwrap();
        w.append(b"4567").unwrap();
        w.flush().unwrap();
        fs.sync_dir(&p("/db")).unwrap();
        // Created but its directory entry never synced.
        write(&fs, "/db/new", b"n", true);
        let mut seen = Vec::new();
        let image = fs.crash_image_with(false, false, &mut |path, synced, unsynced| {
            seen.push((path.to_path_buf(), synced, unsynced.to_vec()));
            unsynced.get(..2).unwrap_or_default().to_vec()
        });
        assert_eq!(seen, vec![(p("/db/log"), 4, b"4567".to_vec())]);
        assert_eq!(read(&image, "/db/log"), b"012345");
        assert!(!image.exists(&p("/db/new")).unwrap());
        // What survived is durable in the image.
        image.crash();
        assert_eq!(read(&image, "/db/log"), b"012345");
        let live = fs.crash_image_with(true, true, &mut |_, _, u| vec![0xff; u.len() + 10]);
        assert_eq!(read(&live, "/db/log"), b"0123\xff\xff\xff\xff");
        assert_eq!(read(&live, "/db/new"), b"n");
        // The original is untouched.
        assert_eq!(read(&fs, "/db/log"), b"01234567");
    }
}

#[test]
fn a_log_keeps_zeros_reserved_after_its_flushed_bytes() {
    let fs = fs_with_db();
    let path = p("/db/000001.vlog");
    let mut w = fs.create_log(&path).unwrap();
    // Reserved from the start; buffered bytes are not in the inode yet.
    w.append(b"head").unwrap();
    assert_eq!(read(&fs, "/db/000001.vlog"), vec![0u8; LOG_RESERVE]);
    w.flush().unwrap();
    assert_eq!(fs.file_size(&path).unwrap(), LOG_RESERVE as u64);
    let mut want = b"head".to_vec();
    want.resize(LOG_RESERVE, 0);
    assert_eq!(read(&fs, "/db/000001.vlog"), want);
    // A flush writes over the zeros; a flush that ends on a boundary reserves a whole step.
    w.append(&vec![7u8; LOG_RESERVE - 4]).unwrap();
    w.flush().unwrap();
    assert_eq!(fs.file_size(&path).unwrap(), 2 * LOG_RESERVE as u64);
    assert_eq!(w.len(), LOG_RESERVE as u64);
    // A sync makes the written bytes durable, and the size: a crash keeps the bytes, and
    // zeros where later unsynced bytes were lost.
    w.sync().unwrap();
    fs.sync_dir(&p("/db")).unwrap();
    w.append(b"unsynced").unwrap();
    w.flush().unwrap();
    let image = read(&fs.snapshot_durable(), "/db/000001.vlog");
    assert_eq!(image.len(), 2 * LOG_RESERVE);
    assert!(image[..LOG_RESERVE - 4].ends_with(&[7u8; 16]));
    assert!(image[LOG_RESERVE..].iter().all(|&b| b == 0));
    // What a process crash leaves (the OS kept everything): the reservation is there.
    let fork = fs.fork();
    let got = read(&fork, "/db/000001.vlog");
    assert_eq!(got.len(), 2 * LOG_RESERVE);
    assert_eq!(&got[LOG_RESERVE..LOG_RESERVE + 8], b"unsynced");
    assert!(got[LOG_RESERVE + 8..].iter().all(|&b| b == 0));
    // Crash images see the reservation as unsynced bytes.
    let mut tails = Vec::new();
    fs.crash_image_with(false, false, &mut |_, synced, unsynced| {
        tails.push((synced, unsynced.len()));
        Vec::new()
    });
    assert_eq!(tails, vec![(LOG_RESERVE as u64, LOG_RESERVE)]);
    // finish cuts the zeros off, and the file ends at what was appended; the cut is durable
    // with the next sync only.
    w.finish().unwrap();
    assert_eq!(fs.file_size(&path).unwrap(), w.len());
    assert!(w.append(b"more").is_err());
    let image = fs.snapshot_durable();
    assert_eq!(image.file_size(&path).unwrap(), 2 * LOG_RESERVE as u64);
    w.sync().unwrap();
    let image = fs.snapshot_durable();
    assert_eq!(image.file_size(&path).unwrap(), w.len());
    drop(w);
    assert_eq!(read(&fs, "/db/000001.vlog").len(), LOG_RESERVE + 8);
    // A crash of the live file system keeps the synced size too.
    let mut w = fs.create_log(&p("/db/000002.vlog")).unwrap();
    w.append(b"x").unwrap();
    w.sync().unwrap();
    fs.sync_dir(&p("/db")).unwrap();
    fs.crash();
    let got = read(&fs, "/db/000002.vlog");
    assert_eq!((got.len(), got[0]), (LOG_RESERVE, b'x'));
}

#[test]
fn a_dropped_log_handle_gives_its_reservation_back() {
    let fs = fs_with_db();
    let mut w = fs.create_log(&p("/db/l")).unwrap();
    w.append(b"abc").unwrap();
    w.flush().unwrap();
    w.append(b"de").unwrap();
    assert_eq!(fs.file_size(&p("/db/l")).unwrap(), LOG_RESERVE as u64);
    drop(w);
    assert_eq!(read(&fs, "/db/l"), b"abcde");
    // A plain file reserves nothing.
    let mut w = fs.create(&p("/db/t")).unwrap();
    w.append(b"abc").unwrap();
    w.flush().unwrap();
    assert_eq!(fs.file_size(&p("/db/t")).unwrap(), 3);
}

#[test]
fn reopen_appends_after_a_committed_prefix_and_cuts_the_rest() {
    let fs = fs_with_db();
    write(&fs, "/db/t", b"gen1+uncommitted", true);
    fs.sync_dir(&p("/db")).unwrap();
    // A reopen at the end of generation 1 drops the uncommitted bytes and appends.
    let mut w = fs.reopen(&p("/db/t"), 4).unwrap();
    assert_eq!(w.len(), 4);
    w.append(b"+gen2").unwrap();
    assert_eq!(w.len(), 9);
    w.flush().unwrap();
    assert_eq!(read(&fs, "/db/t"), b"gen1+gen2");
    // Unsynced: a crash keeps the synced prefix up to the cut, and at least the size of the
    // last sync (zeros where nothing survived).
    fs.crash();
    let after = read(&fs, "/db/t");
    assert_eq!(&after[..4], b"gen1");
    assert!(after[4..].iter().all(|&b| b == 0), "{after:?}");
    // Synced: the new generation survives a crash.
    let mut w = fs.reopen(&p("/db/t"), 4).unwrap();
    w.append(b"+gen2").unwrap();
    w.sync().unwrap();
    drop(w);
    fs.crash();
    assert_eq!(read(&fs, "/db/t"), b"gen1+gen2");
}

#[test]
fn reopen_refuses_missing_or_short_files() {
    let fs = fs_with_db();
    let err = fs.reopen(&p("/db/none"), 0).err().unwrap();
    assert_eq!(kind(&err), Some(io::ErrorKind::NotFound));
    write(&fs, "/db/t", b"abc", true);
    let err = fs.reopen(&p("/db/t"), 4).err().unwrap();
    assert_eq!(kind(&err), Some(io::ErrorKind::UnexpectedEof), "{err}");
    assert_eq!(read(&fs, "/db/t"), b"abc");
}

#[test]
fn a_hard_link_shares_the_inode_and_is_durable_with_its_directory() {
    let fs = fs_with_db();
    fs.create_dir_all(&p("/copy")).unwrap();
    write(&fs, "/db/t", b"table", true);
    fs.sync_dir(&p("/db")).unwrap();
    fs.hard_link(&p("/db/t"), &p("/copy/t")).unwrap();
    assert_eq!(read(&fs, "/copy/t"), b"table");
    let err = fs.hard_link(&p("/db/t"), &p("/copy/t")).unwrap_err();
    assert_eq!(kind(&err), Some(io::ErrorKind::AlreadyExists), "{err}");
    // Removing one name keeps the other.
    fs.remove_file(&p("/db/t")).unwrap();
    assert_eq!(read(&fs, "/copy/t"), b"table");
    // Not synced: a crash loses the new name (and the removal of the old one).
    fs.crash();
    assert!(!fs.exists(&p("/copy/t")).unwrap());
    assert_eq!(read(&fs, "/db/t"), b"table");
    fs.hard_link(&p("/db/t"), &p("/copy/t")).unwrap();
    fs.sync_dir(&p("/copy")).unwrap();
    fs.crash();
    assert_eq!(read(&fs, "/copy/t"), b"table");
}

#[test]
fn a_directory_renames_with_its_files_to_a_free_or_empty_name() {
    let fs = fs_with_db();
    fs.create_dir_all(&p("/tmp/sub")).unwrap();
    write(&fs, "/tmp/a", b"a", true);
    write(&fs, "/tmp/sub/b", b"b", true);
    fs.sync_dir(&p("/tmp")).unwrap();
    fs.create_dir_all(&p("/full")).unwrap();
    write(&fs, "/full/x", b"", false);
    let err = fs.rename(&p("/tmp"), &p("/full")).unwrap_err();
    assert_eq!(kind(&err), Some(io::ErrorKind::DirectoryNotEmpty), "{err}");
    assert!(fs.rename(&p("/tmp"), &p("/tmp/sub/inside")).is_err());
    fs.rename(&p("/tmp"), &p("/done")).unwrap();
    assert!(!fs.exists(&p("/tmp")).unwrap());
    assert_eq!(read(&fs, "/done/a"), b"a");
    assert_eq!(read(&fs, "/done/sub/b"), b"b");
    assert_eq!(fs.list_dir(&p("/done")).unwrap().len(), 2);
    fs.crash();
    assert_eq!(read(&fs, "/done/a"), b"a");
}
