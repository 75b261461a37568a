//! The `shale-server` binary: SIGTERM shuts it down cleanly, and a `kill -9` under load
//! loses no acknowledged write.

#![expect(clippy::unwrap_used, reason = "helpers fail the test on setup errors")]

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{Client, TempDir, Val};

/// Start the binary on a free port; returns it and its address (from its "ready" line).
fn spawn(dir: &std::path::Path, extra: &[&str]) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shale-server"))
        .arg("--dir")
        .arg(dir)
        .args(["--port", "0"])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let ready = lines.next().unwrap().unwrap();
    let addr = ready
        .split("ready on ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("no ready line: {ready}"))
        .parse()
        .unwrap();
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

#[test]
fn sigterm_shuts_down_cleanly() {
    let dir = TempDir::new("sigterm");
    let (mut child, addr) = spawn(dir.path(), &["--sync", "none"]);
    let mut c = Client::connect(addr);
    for i in 0..100 {
        assert_eq!(c.cmd(&["SET", &format!("k{i}"), "v"]), Val::ok());
    }
    let idle = Client::connect(addr);
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    assert!(c.closed());
    drop(idle);
    let (mut child, addr) = spawn(dir.path(), &[]);
    let mut c = Client::connect(addr);
    assert_eq!(c.cmd(&["DBSIZE"]), Val::Int(100));
    // SHUTDOWN does the same, without a reply.
    c.send_raw(&Client::encode(&[b"SHUTDOWN"]));
    assert!(c.closed());
    assert!(child.wait().unwrap().success());
}

/// Writers SET and INCR until the server dies, recording what was acknowledged; after a
/// restart every acknowledged write must be there.
fn kill_under_load(sync: &str, pipeline: usize) {
    let dir = TempDir::new(&format!("kill9-{sync}"));
    let (mut child, addr) = spawn(dir.path(), &["--sync", sync]);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let mut acked = 0u64;
                let mut counter = 0i64;
                'outer: while !stop.load(Ordering::Relaxed) {
                    let mut req = Vec::new();
                    for j in 0..pipeline as u64 {
                        let i = acked + j;
                        req.extend(Client::encode(&[
                            b"SET",
                            format!("w{w}:{i}").as_bytes(),
                            format!("{i}").as_bytes(),
                        ]));
                        req.extend(Client::encode(&[b"INCR", format!("count{w}").as_bytes()]));
                    }
                    c.send_raw(&req);
                    for _ in 0..pipeline {
                        match (c.try_read(), c.try_read()) {
                            (Some(Val::Simple(_)), Some(Val::Int(n))) => {
                                acked += 1;
                                counter = n;
                            }
                            _ => break 'outer,
                        }
                    }
                }
                (acked, counter)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<(u64, i64)> = writers.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(
        acked.iter().all(|&(n, _)| n > 0),
        "no write was acknowledged: {acked:?}"
    );
    let (mut child, addr) = spawn(dir.path(), &["--sync", sync]);
    let mut c = Client::connect(addr);
    for (w, &(n, counter)) in acked.iter().enumerate() {
        for i in 0..n {
            assert_eq!(
                c.cmd(&["GET", &format!("w{w}:{i}")]),
                Val::bulk(&i.to_string()),
                "--sync {sync}: acknowledged write w{w}:{i} of {n} lost"
            );
        }
        let now: i64 = c
            .cmd(&["GET", &format!("count{w}")])
            .text()
            .parse()
            .unwrap();
        assert!(
            now >= counter,
            "--sync {sync}: counter {w} went back from {counter} to {now}"
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn kill_9_loses_nothing_acknowledged_with_sync_always() {
    kill_under_load("always", 1);
}

#[test]
fn kill_9_loses_nothing_acknowledged_with_sync_batch_pipelined() {
    kill_under_load("batch", 16);
}
