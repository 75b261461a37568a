//! The protocol end to end: RESP2 and RESP3, inline commands, pipelining, errors that
//! close only their connection, limits, authentication.

mod common;

use std::time::Duration;

use common::{Client, TempDir, TestServer, Val};

#[test]
fn inline_and_pipelined_requests() {
    let dir = TempDir::new("pipeline");
    let srv = TestServer::start(dir.path());
    let mut c = srv.client();
    c.send_raw(b"PING\r\nset \"a key\" 'v 1'\r\n\r\nget \"a key\"\n");
    assert_eq!(c.read(), Val::Simple("PONG".into()));
    assert_eq!(c.read(), Val::ok());
    assert_eq!(c.read(), Val::bulk("v 1"));
    // A thousand commands in one write: replies in order.
    let mut batch = Vec::new();
    for i in 0..1000 {
        batch.extend(Client::encode(&[
            b"SET",
            format!("k{i}").as_bytes(),
            format!("{i}").as_bytes(),
        ]));
        batch.extend(Client::encode(&[b"INCR", format!("k{i}").as_bytes()]));
    }
    c.send_raw(&batch);
    for i in 0..1000 {
        assert_eq!(c.read(), Val::ok());
        assert_eq!(c.read(), Val::Int(i + 1));
    }
    // A command split at every byte.
    let req = Client::encode(&[b"GET", b"k7"]);
    for b in req {
        c.send_raw(&[b]);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(c.read(), Val::bulk("8"));
}

#[test]
fn resp3_after_hello() {
    let dir = TempDir::new("resp3");
    let srv = TestServer::start(dir.path());
    let mut c = srv.client();
    assert_eq!(c.cmd(&["GET", "nope"]), Val::Null);
    let hello = c.cmd(&["HELLO", "2"]);
    assert_eq!(hello.array().len(), 14);
    c.send_raw(&Client::encode(&[b"HELLO", b"3"]));
    c.resp3 = true;
    match c.read() {
        Val::Map(pairs) => {
            let get = |k: &str| {
                pairs
                    .iter()
                    .find(|(a, _)| a.text() == k)
                    .map(|(_, v)| v.clone())
            };
            assert_eq!(get("proto"), Some(Val::Int(3)));
            assert_eq!(get("server"), Some(Val::bulk("redis")));
            assert_eq!(get("mode"), Some(Val::bulk("standalone")));
        }
        other => panic!("HELLO 3 replied {other:?}"),
    }
    assert_eq!(c.cmd(&["GET", "nope"]), Val::Null);
    assert_eq!(c.cmd(&["SET", "k", "v", "NX"]), Val::ok());
    assert_eq!(c.cmd(&["SET", "k", "v", "NX"]), Val::Null);
    assert_eq!(
        c.cmd(&["MGET", "k", "nope"]),
        Val::Array(vec![Val::bulk("v"), Val::Null])
    );
    match c.cmd(&["CONFIG", "GET", "save"]) {
        Val::Map(p) => assert_eq!(p, vec![(Val::bulk("save"), Val::bulk(""))]),
        other => panic!("CONFIG GET replied {other:?}"),
    }
    match c.cmd(&["INFO", "server"]) {
        Val::Verbatim(t) => assert!(String::from_utf8_lossy(&t).contains("redis_version:")),
        other => panic!("INFO replied {other:?}"),
    }
    match c.cmd(&["COMMAND", "DOCS", "get"]) {
        Val::Map(p) => assert_eq!(p.len(), 1),
        other => panic!("COMMAND DOCS replied {other:?}"),
    }
    assert_eq!(
        c.cmd(&["HELLO", "4"]),
        Val::err("NOPROTO unsupported protocol version")
    );
    assert_eq!(c.cmd(&["RESET"]), Val::Simple("RESET".into()));
    c.resp3 = false;
    assert_eq!(c.cmd(&["GET", "nope"]), Val::Null);
}

#[test]
fn redis_error_texts() {
    let dir = TempDir::new("errors");
    let srv = TestServer::start(dir.path());
    let mut c = srv.client();
    assert_eq!(
        c.cmd(&["GET"]),
        Val::err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        c.cmd(&["NOPE", "a", "b"]),
        Val::err("ERR unknown command 'NOPE', with args beginning with: 'a' 'b' ")
    );
    assert_eq!(
        c.cmd(&["CLIENT", "NOPE"]),
        Val::err("ERR unknown subcommand 'NOPE'. Try CLIENT HELP.")
    );
    assert_eq!(
        c.cmd(&["CLIENT"]),
        Val::err("ERR wrong number of arguments for 'client' command")
    );
    assert_eq!(
        c.cmd(&["CLIENT", "SETNAME"]),
        Val::err("ERR wrong number of arguments for 'client|setname' command")
    );
    assert_eq!(
        c.cmd(&["SELECT", "1"]),
        Val::err("ERR DB index is out of range")
    );
    assert_eq!(c.cmd(&["SELECT", "0"]), Val::ok());
    assert_eq!(
        c.cmd(&["SET", "k", "v", "BOGUS"]),
        Val::err("ERR syntax error")
    );
    assert_eq!(
        c.cmd(&["AUTH", "x"]),
        Val::err(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?"
        )
    );
    assert_eq!(
        c.cmd(&["CLIENT", "SETNAME", "my name"]),
        Val::err("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(c.cmd(&["CLIENT", "SETNAME", "me"]), Val::ok());
    assert_eq!(c.cmd(&["CLIENT", "GETNAME"]), Val::bulk("me"));
    assert_eq!(c.cmd(&["CLIENT", "SETINFO", "LIB-NAME", "x"]), Val::ok());
    assert!(matches!(c.cmd(&["CLIENT", "ID"]), Val::Int(_)));
    assert_eq!(c.cmd(&["ECHO", "hi"]), Val::bulk("hi"));
    assert_eq!(c.cmd(&["PING", "hi"]), Val::bulk("hi"));
    assert!(matches!(c.cmd(&["COMMAND", "COUNT"]), Val::Int(n) if n > 40));
    assert_eq!(c.cmd(&["TIME"]).array().len(), 2);
    assert_eq!(c.cmd(&["QUIT"]), Val::ok());
    assert!(c.closed());
}

#[test]
fn a_malformed_request_closes_only_its_connection() {
    let dir = TempDir::new("malformed");
    let srv = TestServer::start(dir.path());
    let mut good = srv.client();
    assert_eq!(good.cmd(&["SET", "k", "v"]), Val::ok());
    let cases: &[(&[u8], &str)] = &[
        (b"*1\r\n$x\r\n", "ERR Protocol error: invalid bulk length"),
        (b"*zz\r\n", "ERR Protocol error: invalid multibulk length"),
        (b"*1\r\n:1\r\n", "ERR Protocol error: expected '$', got ':'"),
        (
            b"*1\r\n$99999999999\r\n",
            "ERR Protocol error: invalid bulk length",
        ),
        (
            b"set \"a\r\n",
            "ERR Protocol error: unbalanced quotes in request",
        ),
        (b"\x01\x02garbage\xff\r\n", "ERR unknown command"),
    ];
    for (input, want) in cases {
        let mut bad = srv.client();
        bad.send_raw(input);
        match bad.read() {
            Val::Err(e) => assert!(e.starts_with(want), "{e:?} for {input:?}"),
            other => panic!("{other:?} for {input:?}"),
        }
        if want.contains("Protocol error") {
            assert!(bad.closed(), "still open after {input:?}");
        }
    }
    // An inline line past 64 KiB without a newline.
    let mut bad = srv.client();
    bad.send_raw(&vec![b'a'; 70 * 1024]);
    assert_eq!(
        bad.read(),
        Val::err("ERR Protocol error: too big inline request")
    );
    assert!(bad.closed());
    assert_eq!(good.cmd(&["GET", "k"]), Val::bulk("v"));
}

#[test]
fn limits_on_bulks_requests_clients_and_idle_time() {
    let dir = TempDir::new("limits");
    let srv = TestServer::start_with(dir.path(), |c| {
        c.max_bulk_len = 1 << 20;
        c.max_request_size = 2 << 20;
        c.maxclients = 4;
        c.timeout = Some(Duration::from_millis(500));
    });
    let mut c = srv.client();
    // A declared bulk over the limit is refused before any of it is sent.
    c.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n");
    assert_eq!(
        c.read(),
        Val::err("ERR Protocol error: invalid bulk length")
    );
    assert!(c.closed());
    // A request over the limit in several bulks each under it.
    let mut c = srv.client();
    let big = vec![b'x'; 900 * 1024];
    c.send_raw(&Client::encode(&[
        b"MSET", b"a", &big, b"b", &big, b"c", &big,
    ]));
    match c.read() {
        Val::Err(e) => assert!(e.contains("--max-request-size"), "{e}"),
        other => panic!("{other:?}"),
    }
    // A bulk at the limit works.
    let mut c = srv.client();
    let one_mb = vec![b'y'; 1 << 20];
    assert_eq!(c.cmdb(&[b"SET", b"big", &one_mb]), Val::ok());
    assert_eq!(c.cmd(&["STRLEN", "big"]), Val::Int(1 << 20));
    // maxclients: the fifth connection is refused.
    let held: Vec<Client> = (0..3).map(|_| srv.client()).collect();
    let mut fifth = srv.client();
    assert_eq!(fifth.read(), Val::err("ERR max number of clients reached"));
    drop(held);
    // Idle timeout: a half-sent command is dropped with its connection.
    std::thread::sleep(Duration::from_millis(100));
    let mut idle = srv.client();
    idle.send_raw(b"*2\r\n$3\r\nGET");
    std::thread::sleep(Duration::from_millis(900));
    assert!(idle.closed());
    drop(c);
    let mut after = srv.client();
    assert_eq!(after.cmd(&["PING"]), Val::Simple("PONG".into()));
}

#[test]
fn requirepass_and_auth() {
    let dir = TempDir::new("auth");
    let srv = TestServer::start_with(dir.path(), |c| c.requirepass = Some(b"s3cret".to_vec()));
    let mut c = srv.client();
    assert_eq!(
        c.cmd(&["GET", "k"]),
        Val::err("NOAUTH Authentication required.")
    );
    // Arity is checked before authentication, as in Redis.
    assert_eq!(
        c.cmd(&["GET"]),
        Val::err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        c.cmd(&["AUTH", "wrong"]),
        Val::err("WRONGPASS invalid username-password pair or user is disabled.")
    );
    assert!(
        matches!(c.cmd(&["HELLO", "3"]), Val::Err(e) if e.starts_with("NOAUTH HELLO must be called"))
    );
    assert_eq!(c.cmd(&["AUTH", "s3cret"]), Val::ok());
    assert_eq!(c.cmd(&["SET", "k", "v"]), Val::ok());
    // HELLO with AUTH inside it, as clients send it.
    let mut c2 = srv.client();
    c2.send_raw(&Client::encode(&[
        b"HELLO", b"3", b"AUTH", b"default", b"s3cret", b"SETNAME", b"x",
    ]));
    c2.resp3 = true;
    assert!(matches!(c2.read(), Val::Map(_)));
    assert_eq!(c2.cmd(&["GET", "k"]), Val::bulk("v"));
    assert_eq!(c2.cmd(&["RESET"]), Val::Simple("RESET".into()));
    c2.resp3 = false;
    assert_eq!(
        c2.cmd(&["GET", "k"]),
        Val::err("NOAUTH Authentication required.")
    );
    // Before authentication, requests are small (Redis's limits).
    let mut c3 = srv.client();
    c3.send_raw(b"*11\r\n");
    assert_eq!(
        c3.read(),
        Val::err("ERR Protocol error: unauthenticated multibulk length")
    );
    assert!(c3.closed());
    let mut c4 = srv.client();
    c4.send_raw(b"*2\r\n$4\r\nAUTH\r\n$20000\r\n");
    assert_eq!(
        c4.read(),
        Val::err("ERR Protocol error: unauthenticated bulk length")
    );
}

#[test]
fn a_client_that_sends_a_whole_pipeline_before_reading_is_served() {
    // 3000 GETSETs of 4 KiB: 12 MB each way, more than the socket buffers hold, written
    // in full before any reply is read (as redis-py's pipelines do).
    let dir = TempDir::new("bigpipe");
    let srv = TestServer::start(dir.path());
    let mut c = srv.client();
    let value = vec![b'v'; 4096];
    assert_eq!(c.cmdb(&[b"SET", b"k", &value]), Val::ok());
    let mut req = Vec::new();
    for _ in 0..3000 {
        req.extend(Client::encode(&[b"GETSET", b"k", &value]));
    }
    let mut writer = c.stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        use std::io::Write;
        writer.write_all(&req).unwrap();
    });
    // Read only once everything is sent (or the server stopped reading).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !sender.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "the pipeline deadlocked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    sender.join().unwrap();
    for _ in 0..3000 {
        assert_eq!(c.read(), Val::Bulk(value.clone()));
    }
    assert_eq!(c.cmd(&["PING"]), Val::Simple("PONG".into()));
}
