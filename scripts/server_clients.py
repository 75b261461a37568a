#!/usr/bin/env python3
"""Real-client checks of shale-server, run by scripts/server-ci.sh.

    server_clients.py redis-py PORT PROTOCOL     redis-py (RESP2 or RESP3) against the server
    server_clients.py bad-input PORT PID         garbage, huge lengths, half-sent commands,
                                                 1000 connections; the server must survive
    server_clients.py writer PORT SECONDS        SET w:0, w:1, ... until the server dies or the
                                                 time is up; prints how many were acknowledged
    server_clients.py check-writer PORT N        every acknowledged w:i must be there
    server_clients.py cluster PROXY PORT...      through twemproxy: every key lands on exactly
                                                 one server

Exits non-zero with a message on the first failure.
"""

import socket
import sys
import time

import redis


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def redis_py(port, protocol):
    r = redis.Redis(port=port, protocol=protocol, decode_responses=True)
    check(r.ping() is True, "PING")
    r.flushdb()
    check(r.set("k", "v") is True, "SET")
    check(r.get("k") == "v", "GET")
    check(r.get("missing") is None, "GET missing is None")
    check(r.set("k", "w", nx=True) is None, "SET NX on an existing key")
    check(r.set("k", "w", xx=True, get=True) == "v", "SET XX GET")
    check(r.set("t", "1", ex=100) is True and r.ttl("t") == 100, "SET EX / TTL")
    check(r.incr("n") == 1 and r.incrby("n", 9) == 10 and r.decr("n") == 9, "INCR family")
    check(abs(r.incrbyfloat("f", 1.5) - 1.5) < 1e-9, "INCRBYFLOAT")
    check(r.append("s", "ab") == 2 and r.append("s", "cd") == 4, "APPEND")
    check(r.getrange("s", 1, 2) == "bc" and r.strlen("s") == 4, "GETRANGE/STRLEN")
    check(r.mset({"a": "1", "b": "2"}) is True, "MSET")
    check(r.mget("a", "b", "zz") == ["1", "2", None], "MGET")
    check(r.exists("a", "b", "zz") == 2, "EXISTS")
    check(r.delete("a", "zz") == 1, "DEL")
    check(r.type("b") == "string" and r.type("a") == "none", "TYPE")
    check(r.expire("b", 50) and 0 < r.pttl("b") <= 50000, "EXPIRE/PTTL")
    check(r.persist("b") and r.ttl("b") == -1, "PERSIST")
    check(r.getdel("b") == "2" and r.get("b") is None, "GETDEL")
    r.set("short", "x", px=50)
    time.sleep(0.1)
    check(r.get("short") is None, "an expired key is not returned")
    try:
        r.incr("s")
        fail("INCR on a non-integer succeeded")
    except redis.ResponseError as e:
        check(str(e) == "value is not an integer or out of range", f"INCR error text: {e}")
    try:
        r.execute_command("NOSUCHCOMMAND", "x")
        fail("an unknown command succeeded")
    except redis.ResponseError as e:
        check(str(e).startswith("unknown command 'NOSUCHCOMMAND'"), f"unknown command text: {e}")
    # Pipelines, with and without MULTI-less batching.
    with r.pipeline(transaction=False) as p:
        for i in range(1000):
            p.set(f"p:{i}", i)
        for i in range(1000):
            p.get(f"p:{i}")
        out = p.execute()
    check(out[:1000] == [True] * 1000, "pipelined SETs")
    check(out[1000:] == [str(i) for i in range(1000)], "pipelined GETs")
    keys = set(r.scan_iter(match="p:*", count=100))
    check(keys == {f"p:{i}" for i in range(1000)}, f"SCAN found {len(keys)} of 1000 keys")
    check(len(r.keys("p:1??")) == 100, "KEYS pattern")
    check(r.dbsize() == len(r.keys("*")), "DBSIZE")
    info = r.info()
    check(info["redis_version"] and "connected_clients" in info, "INFO parses")
    check(r.config_get("maxclients")["maxclients"].isdigit(), "CONFIG GET")
    check(r.client_setname("py") is True and r.client_getname() == "py", "CLIENT SETNAME/GETNAME")
    check(isinstance(r.client_id(), int), "CLIENT ID")
    check(len(r.time()) == 2, "TIME")
    check(r.echo("hi") == "hi", "ECHO")
    # Binary-safe values.
    rb = redis.Redis(port=port, protocol=protocol)
    blob = bytes(range(256)) * 100
    rb.set(b"\x00bin\xff", blob)
    check(rb.get(b"\x00bin\xff") == blob, "binary value")
    check(r.flushdb() is True and r.dbsize() == 0, "FLUSHDB")
    print(f"redis-py {redis.__version__} protocol {protocol}: ok")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def raw(port, data, read=True, timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    out = b""
    if read:
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except socket.timeout:
            pass
    s.close()
    return out


def alive(port):
    r = redis.Redis(port=port, socket_timeout=10)
    return r.ping() is True


def bad_input(port, pid):
    start_rss = rss_kib(pid)
    cases = [
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)) + b"\r\n", b"-ERR unknown command"),
        (b"*1\r\n$-9\r\n", b"-ERR Protocol error: invalid bulk length"),
        (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$9223372036854775807\r\n", b"-ERR Protocol error: invalid bulk length"),
        (b"*2147483648\r\n", b"-ERR Protocol error: invalid multibulk length"),
        (b"*1\r\n+PING\r\n", b"-ERR Protocol error: expected '$', got '+'"),
        (b"GET \"unbalanced\r\n", b"-ERR Protocol error: unbalanced quotes in request"),
        (b"x" * (70 * 1024), b"-ERR Protocol error: too big inline request"),
    ]
    for data, want in cases:
        got = raw(port, data, timeout=3)
        check(got.startswith(want), f"{data[:40]!r}: got {got[:100]!r}, want {want!r}")
    # Declared-but-unsent bulks of 60 MB on 100 connections: nothing is allocated for them.
    socks = []
    for _ in range(100):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$60000000\r\nonly a few bytes")
        socks.append(s)
    time.sleep(0.5)
    grown = rss_kib(pid) - start_rss
    check(grown < 200 * 1024, f"RSS grew by {grown} KiB for 100 declared 60 MB bulks")
    check(alive(port), "server answers while bulks are half-sent")
    for s in socks:
        s.close()
    # Half-sent commands, then the rest: they complete.
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    for piece in [b"*3\r\n$3\r\nS", b"ET\r\n$4\r\nhalf", b"\r\n$4\r\nsent\r", b"\n"]:
        s.sendall(piece)
        time.sleep(0.05)
    check(s.recv(100) == b"+OK\r\n", "a command sent in pieces")
    s.close()
    # 1000 connections at once, each doing a command.
    conns = []
    for i in range(1000):
        c = socket.create_connection(("127.0.0.1", port), timeout=10)
        conns.append(c)
    for i, c in enumerate(conns):
        c.sendall(f"*3\r\n$3\r\nSET\r\n$6\r\nc{i:05d}\r\n$1\r\nv\r\n".encode())
    ok = sum(1 for c in conns if c.recv(100) == b"+OK\r\n")
    check(ok == 1000, f"{ok} of 1000 concurrent connections got +OK")
    r = redis.Redis(port=port)
    clients = r.info("clients")["connected_clients"]
    check(clients >= 1000, f"connected_clients {clients} with 1000 open")
    for c in conns:
        c.close()
    check(alive(port), "server alive after the bad input")
    print(f"bad input: ok (RSS {rss_kib(pid)} KiB, started at {start_rss} KiB)")


def writer(port, seconds):
    r = redis.Redis(port=port, socket_timeout=10)
    acked = 0
    deadline = time.time() + seconds
    try:
        while time.time() < deadline:
            r.set(f"w:{acked}", acked)
            acked += 1
    except (redis.ConnectionError, redis.TimeoutError, ConnectionError):
        pass
    print(acked)


def check_writer(port, n):
    r = redis.Redis(port=port, decode_responses=True)
    with r.pipeline(transaction=False) as p:
        for i in range(n):
            p.get(f"w:{i}")
        got = p.execute()
    lost = [i for i, v in enumerate(got) if v != str(i)]
    check(not lost, f"{len(lost)} of {n} acknowledged writes lost, first w:{lost[:5]}")
    print(f"kill -9: all {n} acknowledged writes present")


def cluster(proxy_port, ports):
    # twemproxy speaks RESP2 and closes a connection that sends a command it does not
    # forward (HELLO, CLIENT SETINFO): no handshake beyond RESP2.
    try:
        proxy = redis.Redis(port=proxy_port, decode_responses=True, protocol=2, driver_info=None)
    except TypeError:  # redis-py before 7
        proxy = redis.Redis(port=proxy_port, decode_responses=True, protocol=2,
                            lib_name=None, lib_version=None)
    n = 2000
    with proxy.pipeline(transaction=False) as p:
        for i in range(n):
            p.set(f"key:{i}", f"v{i}")
        check(all(x is True for x in p.execute()), "SET through the proxy")
    check(proxy.get("key:7") == "v7", "GET through the proxy")
    check(proxy.mget("key:1", "key:2", "nope") == ["v1", "v2", None], "MGET through the proxy")
    servers = [redis.Redis(port=p, decode_responses=True) for p in ports]
    counts = [0] * len(servers)
    for i in range(n):
        holders = [j for j, s in enumerate(servers) if s.get(f"key:{i}") == f"v{i}"]
        check(len(holders) == 1, f"key:{i} is on servers {holders}, not exactly one")
        counts[holders[0]] += 1
    check(all(c > n // (4 * len(servers)) for c in counts), f"uneven spread {counts}")
    check(proxy.delete("key:1") == 1 and proxy.get("key:1") is None, "DEL through the proxy")
    print(f"cluster: {n} keys, each on exactly one server; spread {counts}")


def main():
    if len(sys.argv) < 3:
        fail(__doc__)
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "redis-py":
        redis_py(port, int(sys.argv[3]))
    elif cmd == "bad-input":
        bad_input(port, int(sys.argv[3]))
    elif cmd == "writer":
        writer(port, float(sys.argv[3]))
    elif cmd == "check-writer":
        check_writer(port, int(sys.argv[3]))
    elif cmd == "cluster":
        cluster(port, [int(p) for p in sys.argv[3:]])
    else:
        fail(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
