//! The commands against Redis 7.0's replies, expiry, atomic read-modify-write, and data
//! that outlives a restart.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{Client, TempDir, TestServer, Val};

#[test]
fn set_and_get_family() {
    let dir = TempDir::new("set");
    let srv = TestServer::start(dir.path());
    let mut c = srv.client();
    assert_eq!(c.cmd(&["SET", "k", "v1"]), Val::ok());
    assert_eq!(c.cmd(&["SET", "k", "v2", "GET"]), Val::bulk("v1"));
    assert_eq!(c.cmd(&["SET", "k", "v3", "NX"]), Val::Null);
    assert_eq!(c.cmd(&["SET", "k", "v3", "NX", "GET"]), Val::bulk("v2"));
    assert_eq!(c.cmd(&["SET", "new", "x", "XX"]), Val::Null);
    assert_eq!(c.cmd(&["SET", "k", "v3", "XX"]), Val::ok());
    assert_eq!(c.cmd(&["GET", "k"]), Val::bulk("v3"));
    assert_eq!(
        c.cmd(&["SET", "k", "v", "NX", "XX"]),
        Val::err("ERR syntax error")
    );
    assert_eq!(
        c.cmd(&["SET", "k", "v", "EX", "1", "PX", "1"]),
        Val::err("ERR syntax error")
    );
    assert_eq!(
        c.cmd(&["SET", "k", "v", "EX", "x"]),
        Val::err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        c.cmd(&["SET", "k", "v", "EX", "-1"]),
        Val::err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(
        c.cmd(&["SETEX", "k", "0", "v"]),
        Val::err("ERR invalid expire time in 'setex' command")
    );
    assert_eq!(c.cmd(&["SETNX", "k", "v"]), Val::Int(0));
    assert_eq!(c.cmd(&["SETNX", "k2", "v"]), Val::Int(1));
    assert_eq!(c.cmd(&["GETSET", "k2", "w"]), Val::bulk("v"));
    assert_eq!(c.cmd(&["GETDEL", "k2"]), Val::bulk("w"));
    assert_eq!(c.cmd(&["GETDEL", "k2"]), Val::Null);
    assert_eq!(c.cmd(&["MSET", "a", "1", "b", "2"]), Val::ok());
    assert_eq!(
        c.cmd(&["MSET", "a", "1", "b"]),
        Val::err("ERR wrong number of arguments for 'mset' command")
    );
    assert_eq!(c.cmd(&["MSETNX", "b", "9", "c", "3"]), Val::Int(0));
    assert_eq!(c.cmd(&["MSETNX", "c", "3", "d", "4"]), Val::Int(1));
    assert_eq!(
        c.cmd(&["MGET", "a", "x", "d"]),
        Val::Array(vec![Val::bulk("1"), Val::Null, Val::bulk("4")])
    );
    assert_eq!(c.cmd(&["APPEND", "s", "Hello"]), Val::Int(5));
    assert_eq!(c.cmd(&["APPEND", "s", " World"]), Val::Int(11));
    assert_eq!(c.cmd(&["STRLEN", "s"]), Val::Int(11));
    assert_eq!(c.cmd(&["STRLEN", "none"]), Val::Int(0));
    assert_eq!(c.cmd(&["GETRANGE", "s", "0", "4"]), Val::bulk("Hello"));
    assert_eq!(c.cmd(&["GETRANGE", "s", "-5", "-1"]), Val::bulk("World"));
    assert_eq!(c.cmd(&["GETRANGE", "s", "5", "2"]), Val::bulk(""));
    assert_eq!(
        c.cmd(&["GETRANGE", "s", "0", "100"]),
        Val::bulk("Hello World")
    );
    assert_eq!(c.cmd(&["GETRANGE", "none", "0", "1"]), Val::bulk(""));
    assert_eq!(c.cmd(&["SETRANGE", "s", "6", "Redis"]), Val::Int(11));
    assert_eq!(c.cmd(&["GET", "s"]), Val::bulk("Hello Redis"));
    assert_eq!(c.cmd(&["SETRANGE", "pad", "3", "x"]), Val::Int(4));
    assert_eq!(c.cmd(&["GET", "pad"]), Val::Bulk(b"\0\0\0x".to_vec()));
    assert_eq!(c.cmd(&["SETRANGE", "none", "3", ""]), Val::Int(0));
    assert_eq!(
        c.cmd(&["SETRANGE", "s", "-1", "x"]),
        Val::err("ERR offset is out of range")
    );
    assert_eq!(
        c.cmd(&["SETRANGE", "s", "536870912", "x"]),
        Val::err("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    );
    // Binary keys and values, the empty key included.
    let bin = [0u8, 255, 13, 10, 0];
    assert_eq!(c.cmdb(&[b"SET", &bin, &bin]), Val::ok());
    assert_eq!(c.cmdb(&[b"GET", &bin]), Val::Bulk(bin.to_vec()));
    assert_eq!(c.cmd(&["SET", "", "empty"]), Val::ok());
    assert_eq!(c.cmd(&["GET", ""]), Val::bulk("empty"));
    // A key over the engine's limit is refused with a message, and reads as absent.
    let long = vec![b'k'; 70_000];
    match c.cmdb(&[b"SET", &long, b"v"]) {
        Val::Err(e) => assert!(
            e.contains("longer than Shale's limit of 65535 bytes"),
            "{e}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.cmdb(&[b"GET", &long]), Val::Null);
}

#[test]
fn counters() {
    let dir = TempDir::new("incr");
    let srv = TestServer::start(dir.path());
    let mut c = srv.client();
    assert_eq!(c.cmd(&["INCR", "n"]), Val::Int(1));
    assert_eq!(c.cmd(&["INCRBY", "n", "10"]), Val::Int(11));
    assert_eq!(c.cmd(&["DECR", "n"]), Val::Int(10));
    assert_eq!(c.cmd(&["DECRBY", "n", "20"]), Val::Int(-10));
    assert_eq!(
        c.cmd(&["INCRBY", "n", "x"]),
        Val::err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        c.cmd(&["DECRBY", "n", "-9223372036854775808"]),
        Val::err("ERR decrement would overflow")
    );
    assert_eq!(c.cmd(&["SET", "n", "9223372036854775807"]), Val::ok());
    assert_eq!(
        c.cmd(&["INCR", "n"]),
        Val::err("ERR increment or decrement would overflow")
    );
    for bad in ["01", " 1", "1.0", "abc", ""] {
        c.cmd(&["SET", "bad", bad]);
        assert_eq!(
            c.cmd(&["INCR", "bad"]),
            Val::err("ERR value is not an integer or out of range"),
            "{bad:?}"
        );
    }
    assert_eq!(c.cmd(&["SET", "f", "10.50"]), Val::ok());
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "0.1"]), Val::bulk("10.6"));
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "-5"]), Val::bulk("5.6"));
    assert_eq!(c.cmd(&["SET", "f", "5.0e3"]), Val::ok());
    assert_eq!(c.cmd(&["INCRBYFLOAT", "f", "2.0e2"]), Val::bulk("5200"));
    assert_eq!(
        c.cmd(&["INCRBYFLOAT", "f", "x"]),
        Val::err("ERR value is not a valid float")
    );
    assert_eq!(
        c.cmd(&["INCRBYFLOAT", "f", "inf"]),
        Val::err("ERR increment would produce NaN or Infinity")
    );
    // INCR keeps the expiry; SET drops it unless KEEPTTL.
    assert_eq!(c.cmd(&["SET", "t", "1", "EX", "100"]), Val::ok());
    assert_eq!(c.cmd(&["INCR", "t"]), Val::Int(2));
    assert_eq!(c.cmd(&["TTL", "t"]), Val::Int(100));
    assert_eq!(c.cmd(&["SET", "t", "5", "KEEPTTL"]), Val::ok());
    assert_eq!(c.cmd(&["TTL", "t"]), Val::Int(100));
    assert_eq!(c.cmd(&["SET", "t", "5"]), Val::ok());
    assert_eq!(c.cmd(&["TTL", "t"]), Val::Int(-1));
}

#[test]
fn read_modify_write_is_atomic_per_key() {
    let dir = TempDir::new("atomic");
    let srv = TestServer::start(dir.path());
    let addr = srv.addr;
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..300 {
                    assert!(matches!(c.cmd(&["INCR", "counter"]), Val::Int(_)));
                    c.cmd(&["APPEND", "log", "x"]);
                    if i % 50 == 0 {
                        // Plain SETs of other keys in the same stripes interleave freely.
                        c.cmd(&["SET", &format!("other{t}-{i}"), "v"]);
                    }
                    if c.cmd(&["SETNX", "winner", &t.to_string()]) == Val::Int(1) {
                        c.cmd(&["INCR", "winners"]);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = srv.client();
    assert_eq!(c.cmd(&["GET", "counter"]), Val::bulk("2400"));
    assert_eq!(c.cmd(&["STRLEN", "log"]), Val::Int(2400));
    assert_eq!(c.cmd(&["GET", "winners"]), Val::bulk("1"));
}

#[test]
fn expiry() {
    let dir = TempDir::new("expiry");
    let srv = TestServer::start(dir.path());
    let mut c = srv.client();
    assert_eq!(c.cmd(&["SET", "a", "1", "PX", "100"]), Val::ok());
    assert_eq!(c.cmd(&["PSETEX", "b", "100", "2"]), Val::ok());
    assert_eq!(c.cmd(&["SETEX", "c", "100", "3"]), Val::ok());
    assert!(matches!(c.cmd(&["PTTL", "a"]), Val::Int(n) if n > 0 && n <= 100));
    assert_eq!(c.cmd(&["TTL", "c"]), Val::Int(100));
    assert_eq!(c.cmd(&["TTL", "none"]), Val::Int(-2));
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(c.cmd(&["GET", "a"]), Val::Null);
    assert_eq!(c.cmd(&["EXISTS", "a", "b", "c", "c"]), Val::Int(2));
    assert_eq!(c.cmd(&["TTL", "b"]), Val::Int(-2));
    assert_eq!(c.cmd(&["TYPE", "b"]), Val::Simple("none".into()));
    assert_eq!(c.cmd(&["TYPE", "c"]), Val::Simple("string".into()));
    // An absolute time in the past: set and gone at once.
    assert_eq!(c.cmd(&["SET", "past", "x", "EXAT", "1"]), Val::ok());
    assert_eq!(c.cmd(&["GET", "past"]), Val::Null);
    // EXPIRE and its options.
    c.cmd(&["SET", "e", "v"]);
    assert_eq!(c.cmd(&["EXPIRE", "e", "100", "XX"]), Val::Int(0));
    assert_eq!(c.cmd(&["EXPIRE", "e", "100", "NX"]), Val::Int(1));
    assert_eq!(c.cmd(&["EXPIRE", "e", "50", "GT"]), Val::Int(0));
    assert_eq!(c.cmd(&["EXPIRE", "e", "200", "GT"]), Val::Int(1));
    assert_eq!(c.cmd(&["EXPIRE", "e", "300", "LT"]), Val::Int(0));
    assert_eq!(c.cmd(&["TTL", "e"]), Val::Int(200));
    assert_eq!(
        c.cmd(&["EXPIRE", "e", "1", "NX", "XX"]),
        Val::err("ERR NX and XX, GT or LT options at the same time are not compatible")
    );
    assert_eq!(
        c.cmd(&["EXPIRE", "e", "1", "GT", "LT"]),
        Val::err("ERR GT and LT options at the same time are not compatible")
    );
    assert_eq!(
        c.cmd(&["EXPIRE", "e", "1", "YY"]),
        Val::err("ERR Unsupported option YY")
    );
    assert_eq!(
        c.cmd(&["EXPIRE", "e", "9223372036854775807"]),
        Val::err("ERR invalid expire time in 'expire' command")
    );
    assert_eq!(c.cmd(&["EXPIRE", "none", "10"]), Val::Int(0));
    assert_eq!(c.cmd(&["PERSIST", "e"]), Val::Int(1));
    assert_eq!(c.cmd(&["PERSIST", "e"]), Val::Int(0));
    assert_eq!(c.cmd(&["TTL", "e"]), Val::Int(-1));
    assert_eq!(c.cmd(&["PEXPIRE", "e", "100000"]), Val::Int(1));
    assert!(matches!(c.cmd(&["PTTL", "e"]), Val::Int(n) if n > 99_000));
    let at = c.cmd(&["TIME"]).array()[0].text().parse::<i64>().unwrap() + 1000;
    assert_eq!(c.cmd(&["EXPIREAT", "e", &at.to_string()]), Val::Int(1));
    assert_eq!(c.cmd(&["EXPIRETIME", "e"]), Val::Int(at));
    assert_eq!(c.cmd(&["EXPIRE", "e", "-1"]), Val::Int(1));
    assert_eq!(c.cmd(&["EXISTS", "e"]), Val::Int(0));
    // GETEX.
    c.cmd(&["SET", "g", "v"]);
    assert_eq!(c.cmd(&["GETEX", "g", "EX", "100"]), Val::bulk("v"));
    assert_eq!(c.cmd(&["TTL", "g"]), Val::Int(100));
    assert_eq!(c.cmd(&["GETEX", "g", "PERSIST"]), Val::bulk("v"));
    assert_eq!(c.cmd(&["TTL", "g"]), Val::Int(-1));
    assert_eq!(
        c.cmd(&["GETEX", "g", "EX", "0"]),
        Val::err("ERR invalid expire time in 'getex' command")
    );
    assert_eq!(
        c.cmd(&["GETEX", "g", "KEEPTTL"]),
        Val::err("ERR syntax error")
    );
    assert_eq!(c.cmd(&["GETEX", "none", "EX", "0"]), Val::Null);
    assert_eq!(c.cmd(&["GETEX", "g", "PXAT", "1"]), Val::bulk("v"));
    assert_eq!(c.cmd(&["GET", "g"]), Val::Null);
}

#[test]
fn the_sweep_deletes_expired_keys_nobody_reads() {
    let dir = TempDir::new("sweep");
    let srv = TestServer::start_with(dir.path(), |c| c.expire_scan_rate = 100_000);
    let mut c = srv.client();
    for i in 0..200 {
        c.cmd(&["SET", &format!("t{i}"), "v", "PX", "50"]);
        c.cmd(&["SET", &format!("p{i}"), "v"]);
    }
    let expired = |c: &mut Client| -> u64 {
        let info = c.cmd(&["INFO", "stats"]).text();
        info.lines()
            .find_map(|l| l.strip_prefix("expired_keys:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while expired(&mut c) < 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "the sweep did not delete the expired keys"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(c.cmd(&["DBSIZE"]), Val::Int(200));
}

#[test]
fn keys_scan_dbsize_flush() {
    let dir = TempDir::new("scan");
    let srv = TestServer::start(dir.path());
    let mut c = srv.client();
    let mut want = BTreeSet::new();
    for i in 0..500 {
        let k = format!("user:{i}");
        c.cmd(&["SET", &k, "v"]);
        want.insert(k);
    }
    for i in 0..50 {
        c.cmd(&["SET", &format!("other:{i}"), "v"]);
    }
    c.cmd(&["SET", "gone", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(c.cmd(&["DBSIZE"]), Val::Int(550));
    let keys = c.cmd(&["KEYS", "user:*"]);
    let got: BTreeSet<String> = keys.array().iter().map(Val::text).collect();
    assert_eq!(got, want);
    assert_eq!(c.cmd(&["KEYS", "user:1?"]).array().len(), 10);
    assert_eq!(c.cmd(&["KEYS", "*"]).array().len(), 550);
    // A full SCAN returns every key at least once, with and without MATCH.
    for (pattern, expect) in [(None, 550), (Some("user:*"), 500), (Some("*:4[0-9]"), 20)] {
        let mut cursor = "0".to_string();
        let mut seen = BTreeSet::new();
        let mut rounds = 0;
        loop {
            let mut args = vec!["SCAN", cursor.as_str(), "COUNT", "37"];
            if let Some(p) = pattern {
                args.extend(["MATCH", p]);
            }
            let r = c.cmd(&args);
            let r = r.array();
            for k in r[1].array() {
                seen.insert(k.text());
            }
            cursor = r[0].text();
            rounds += 1;
            if cursor == "0" {
                break;
            }
            assert!(rounds < 100);
        }
        assert_eq!(seen.len(), expect, "{pattern:?}");
    }
    assert_eq!(c.cmd(&["SCAN", "x"]), Val::err("ERR invalid cursor"));
    assert_eq!(
        c.cmd(&["SCAN", "0", "COUNT", "0"]),
        Val::err("ERR syntax error")
    );
    assert_eq!(
        c.cmd(&["DEL", "user:1", "user:2", "nope", "user:1"]),
        Val::Int(2)
    );
    assert_eq!(c.cmd(&["UNLINK", "user:3"]), Val::Int(1));
    assert_eq!(c.cmd(&["DBSIZE"]), Val::Int(547));
    assert_eq!(c.cmd(&["FLUSHDB", "BAD"]), Val::err("ERR syntax error"));
    assert_eq!(c.cmd(&["FLUSHALL"]), Val::ok());
    assert_eq!(c.cmd(&["DBSIZE"]), Val::Int(0));
    assert_eq!(
        c.cmd(&["SCAN", "0"]),
        Val::Array(vec![Val::bulk("0"), Val::Array(vec![])])
    );
    let info = c.cmd(&["INFO"]).text();
    for section in [
        "# Server",
        "# Clients",
        "# Stats",
        "# Keyspace",
        "# Shale",
        "design:",
    ] {
        assert!(info.contains(section), "INFO lacks {section}");
    }
    assert_eq!(c.cmd(&["CONFIG", "GET", "maxclients"]).array().len(), 2);
    assert!(c.cmd(&["CONFIG", "GET", "*"]).array().len() > 10);
}

#[test]
fn data_and_expiry_outlive_a_restart() {
    let dir = TempDir::new("restart");
    for design in [None, Some("wisckey")] {
        let _ = std::fs::remove_dir_all(dir.path());
        let srv = TestServer::start_with(dir.path(), |c| c.design = design.map(String::from));
        let mut c = srv.client();
        for i in 0..1000 {
            c.cmd(&["SET", &format!("k{i}"), &format!("value-{i}")]);
        }
        c.cmd(&["SET", "ttl", "v", "EX", "1000"]);
        c.cmd(&["SET", "short", "v", "PX", "200"]);
        drop(c);
        srv.stop();
        std::thread::sleep(Duration::from_millis(250));
        let srv = TestServer::start_with(dir.path(), |c| c.design = design.map(String::from));
        let mut c = srv.client();
        for i in (0..1000).step_by(97) {
            assert_eq!(
                c.cmd(&["GET", &format!("k{i}")]),
                Val::bulk(&format!("value-{i}"))
            );
        }
        assert!(matches!(c.cmd(&["TTL", "ttl"]), Val::Int(n) if n > 990));
        assert_eq!(c.cmd(&["GET", "short"]), Val::Null);
        assert_eq!(c.cmd(&["DBSIZE"]), Val::Int(1001));
    }
}

#[test]
fn refuses_a_store_it_did_not_create() {
    let dir = TempDir::new("foreign");
    let db = shale::Db::open(dir.path(), shale::Options::default()).unwrap();
    db.put(b"plain", b"value").unwrap();
    db.close().unwrap();
    let mut c = shale_server::Config::new(dir.path());
    c.port = 0;
    let err = shale_server::Server::bind(c).err().unwrap();
    assert!(err.to_string().contains("did not create"), "{err}");
}
