//! Test harness: an in-process server on a free port over a temporary directory, and a
//! small client whose replies are decoded by `redis-protocol` (not by the server's code).

#![allow(dead_code, reason = "each test file uses part of the harness")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "the harness fails the test on setup errors"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::Duration;

use redis_protocol::resp2::types::OwnedFrame as F2;
use redis_protocol::resp3::types::OwnedFrame as F3;
use shale_server::{Config, Server, ShutdownHandle};

/// A fresh directory under the temp dir, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("shale-server-it-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running in-process server; shut down (cleanly) when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    /// The server's keyspace (upgrade it only while it is used: shutdown closes the store).
    pub keyspace: std::sync::Weak<shale_server::keyspace::Keyspace>,
    handle: ShutdownHandle,
    thread: Option<JoinHandle<Result<(), shale_server::ServerError>>>,
}

impl TestServer {
    /// A server on `dir` with `tweak` applied to a test config (port 0, small memtables).
    pub fn start_with(dir: &Path, tweak: impl FnOnce(&mut Config)) -> TestServer {
        let mut c = Config::new(dir);
        c.port = 0;
        c.sync = shale_server::SyncMode::None;
        tweak(&mut c);
        let server = Server::bind(c).expect("server starts");
        let addr = server.local_addr();
        let keyspace = server.keyspace();
        let handle = server.shutdown_handle();
        let thread = std::thread::spawn(move || server.run());
        TestServer {
            addr,
            keyspace,
            handle,
            thread: Some(thread),
        }
    }

    pub fn start(dir: &Path) -> TestServer {
        TestServer::start_with(dir, |_| {})
    }

    pub fn client(&self) -> Client {
        Client::connect(self.addr)
    }

    /// Shut down and wait; panics if the store did not close cleanly.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        if let Some(t) = self.thread.take() {
            self.handle.shutdown();
            t.join().expect("server thread").expect("clean shutdown");
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.stop_inner();
        }
    }
}

/// A reply, the same shape whichever protocol carried it.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Simple(String),
    Err(String),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    Array(Vec<Val>),
    /// RESP3 map (pairs in the decoder's order).
    Map(Vec<(Val, Val)>),
    Set(Vec<Val>),
    Verbatim(Vec<u8>),
    Double(f64),
}

impl Val {
    pub fn bulk(s: &str) -> Val {
        Val::Bulk(s.as_bytes().to_vec())
    }
    pub fn ok() -> Val {
        Val::Simple("OK".into())
    }
    pub fn err(s: &str) -> Val {
        Val::Err(s.into())
    }
    /// The text of a bulk, simple or verbatim string.
    pub fn text(&self) -> String {
        match self {
            Val::Bulk(b) | Val::Verbatim(b) => String::from_utf8_lossy(b).into_owned(),
            Val::Simple(s) => s.clone(),
            other => panic!("not a string: {other:?}"),
        }
    }
    pub fn array(&self) -> &[Val] {
        match self {
            Val::Array(a) | Val::Set(a) => a,
            other => panic!("not an array: {other:?}"),
        }
    }
}

fn from2(f: F2) -> Val {
    match f {
        F2::SimpleString(s) => Val::Simple(String::from_utf8_lossy(&s).into_owned()),
        F2::Error(e) => Val::Err(e),
        F2::Integer(i) => Val::Int(i),
        F2::BulkString(b) => Val::Bulk(b),
        F2::Array(a) => Val::Array(a.into_iter().map(from2).collect()),
        F2::Null => Val::Null,
    }
}

fn from3(f: F3) -> Val {
    match f {
        F3::SimpleString { data, .. } => Val::Simple(String::from_utf8_lossy(&data).into_owned()),
        F3::SimpleError { data, .. } => Val::Err(data),
        F3::BlobError { data, .. } => Val::Err(String::from_utf8_lossy(&data).into_owned()),
        F3::Number { data, .. } => Val::Int(data),
        F3::BlobString { data, .. } => Val::Bulk(data),
        F3::Null => Val::Null,
        F3::Array { data, .. } => Val::Array(data.into_iter().map(from3).collect()),
        F3::Set { data, .. } => Val::Set(data.into_iter().map(from3).collect()),
        F3::Map { data, .. } => Val::Map(
            data.into_iter()
                .map(|(k, v)| (from3(k), from3(v)))
                .collect(),
        ),
        F3::VerbatimString { data, .. } => Val::Verbatim(data),
        F3::Double { data, .. } => Val::Double(data),
        other => panic!("unexpected RESP3 frame {other:?}"),
    }
}

/// A blocking client. `resp3` after `HELLO 3`.
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
    pub resp3: bool,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Client {
            stream,
            buf: Vec::new(),
            resp3: false,
        }
    }

    /// Encode `args` as a RESP array.
    pub fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Read one reply; `None` when the server closed the connection.
    pub fn try_read(&mut self) -> Option<Val> {
        loop {
            if !self.buf.is_empty() {
                let decoded = if self.resp3 {
                    redis_protocol::resp3::decode::complete::decode(&self.buf)
                        .expect("valid RESP3")
                        .map(|(f, n)| (from3(f), n))
                } else {
                    redis_protocol::resp2::decode::decode(&self.buf)
                        .expect("valid RESP2")
                        .map(|(f, n)| (from2(f), n))
                };
                if let Some((v, n)) = decoded {
                    self.buf.drain(..n);
                    return Some(v);
                }
            }
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    pub fn read(&mut self) -> Val {
        self.try_read()
            .expect("a reply before the connection closed")
    }

    /// Send one command (byte arguments) and read its reply.
    pub fn cmdb(&mut self, args: &[&[u8]]) -> Val {
        self.send_raw(&Self::encode(args));
        self.read()
    }

    /// Send one command and read its reply.
    pub fn cmd(&mut self, args: &[&str]) -> Val {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        self.cmdb(&a)
    }

    /// True once the server has closed the connection (reads nothing more).
    pub fn closed(&mut self) -> bool {
        self.try_read().is_none()
    }
}
