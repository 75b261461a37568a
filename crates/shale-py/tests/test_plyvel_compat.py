"""The same random operations on plyvel and on shale must give the same answers.

Skipped when plyvel is not installed. plyvel 1.5.1 has four bugs at the ends of a range
that Shale does not copy (see docs/python.md; tested at the end of this file). Two happen
only when the start key is in the store: the start bounds and prefixes drawn here never
are. The others (a step back after a seek leaves the range; a seek past an included stop
key lands before it) end a case: plyvel's iterator is then where Shale's cannot be.
"""

import random

import pytest

import shale

plyvel = pytest.importorskip("plyvel")

ALPHABET = b"abc"


def rand_key(rng):
    # Keys end in a digit; bounds and prefixes below never do.
    n = rng.randint(1, 2)
    return bytes(rng.choice(ALPHABET) for _ in range(n)) + rng.choice([b"0", b"1"])


def rand_bound(rng):
    n = rng.randint(0, 2)
    return bytes(rng.choice(ALPHABET) for _ in range(n))


def outcome(f):
    try:
        return ("ok", f())
    except StopIteration:
        return ("stop", None)
    except Exception as e:  # noqa: BLE001 - compared by class name
        return ("error", type(e).__name__)


def make_pair(tmp_path, design, rng):
    p = plyvel.DB(str(tmp_path / "plyvel"), create_if_missing=True)
    s = shale.DB(str(tmp_path / "shale"), create_if_missing=True, design=design,
                 write_buffer_size=16 * 1024)
    for _ in range(300):
        k = rand_key(rng)
        if rng.random() < 0.75:
            v = b"%d" % rng.randint(0, 10**6)
            p.put(k, v)
            s.put(k, v)
        else:
            p.delete(k)
            s.delete(k)
    return p, s


@pytest.mark.parametrize("seed", range(6))
def test_iterators_match_plyvel(tmp_path, design, seed):
    rng = random.Random(seed)
    p, s = make_pair(tmp_path, design, rng)
    if seed % 2:
        s.flush()
    for case in range(60):
        kwargs = {"reverse": rng.random() < 0.5,
                  "include_key": rng.random() < 0.8, "include_value": rng.random() < 0.8}
        r = rng.random()
        if r < 0.3:
            kwargs["prefix"] = rand_bound(rng)
        elif r < 0.9:
            if rng.random() < 0.7:
                kwargs["start"] = rand_bound(rng)
                kwargs["include_start"] = rng.random() < 0.5
            if rng.random() < 0.7:
                kwargs["stop"] = rand_key(rng) if rng.random() < 0.5 else rand_bound(rng)
                kwargs["include_stop"] = rng.random() < 0.5
        pv, sv, pre = p, s, b""
        if rng.random() < 0.3:
            pre = rand_bound(rng)[:1]
            pv, sv = p.prefixed_db(pre), s.prefixed_db(pre)
            if pre and "prefix" in kwargs:
                # pre + prefix could be a key: keep the start-key bugs out.
                kwargs["prefix"] += b"a"
        assert outcome(lambda: list(pv.iterator(**kwargs))) == outcome(
            lambda: list(sv.iterator(**kwargs))), kwargs
        kwargs.update(include_key=True, include_value=False)
        pi, si = pv.iterator(**kwargs), sv.iterator(**kwargs)
        last = None
        for step in range(25):
            op = rng.choice(["next", "next", "prev", "seek", "start", "stop"])
            if op == "next":
                a, b = outcome(lambda: next(pi)), outcome(lambda: next(si))
            elif op == "prev":
                a, b = outcome(pi.prev), outcome(si.prev)
            elif op == "seek":
                t = rand_key(rng) if rng.random() < 0.5 else rand_bound(rng)
                clamped = max(t, kwargs.get("start") or b"")
                if kwargs.get("include_stop") and kwargs.get("stop") is not None \
                        and clamped > kwargs["stop"]:
                    break  # plyvel lands before an included stop key; Shale after it
                a, b = outcome(lambda: pi.seek(t)), outcome(lambda: si.seek(t))
            elif op == "start":
                a, b = outcome(pi.seek_to_start), outcome(si.seek_to_start)
            else:
                a, b = outcome(pi.seek_to_stop), outcome(si.seek_to_stop)
            backward = (op == "prev") != kwargs["reverse"]
            if a != b and backward and last == "seek":
                break  # plyvel steps out of the range after a seek; Shale stops
            last = op
            assert a == b, (seed, case, step, op, kwargs)
    p.close()
    s.close()


@pytest.mark.parametrize("seed", range(3))
def test_raw_iterators_match_plyvel(tmp_path, design, seed):
    rng = random.Random(100 + seed)
    p, s = make_pair(tmp_path, design, rng)
    pi, si = p.raw_iterator(), s.raw_iterator()
    for _ in range(300):
        op = rng.choice(["first", "last", "seek", "next", "prev", "valid", "key", "value",
                         "item"])
        if op == "first":
            a, b = outcome(pi.seek_to_first), outcome(si.seek_to_first)
        elif op == "last":
            a, b = outcome(pi.seek_to_last), outcome(si.seek_to_last)
        elif op == "seek":
            t = rand_key(rng)
            a, b = outcome(lambda: pi.seek(t)), outcome(lambda: si.seek(t))
        else:
            a, b = outcome(getattr(pi, op)), outcome(getattr(si, op))
        assert a == b, op
    p.close()
    s.close()


def test_get_batch_snapshot_match_plyvel(tmp_path):
    p = plyvel.DB(str(tmp_path / "p"), create_if_missing=True)
    s = shale.DB(str(tmp_path / "s"), create_if_missing=True)
    for db in (p, s):
        with db.write_batch(transaction=True) as wb:
            wb.put(b"a", b"1")
            wb.put(b"b", b"2")
        snap = db.snapshot()
        db.delete(b"a")
        pdb = db.prefixed_db(b"b")
        pdb.put(b"x", b"3")
    for key in (b"a", b"b", b"bx", b"c"):
        assert p.get(key, b"d") == s.get(key, b"d")
    assert list(p) == list(s)
    assert list(p.prefixed_db(b"b")) == list(s.prefixed_db(b"b"))
    p.close()
    s.close()


def test_plyvel_range_end_bugs_are_not_copied(db):
    # plyvel 1.5.1 yields nothing here (stepping back from the end onto the start key), and
    # returns an excluded start key after a seek below it. Shale does neither.
    for k in (b"a", b"b", b"c"):
        db.put(k, k)
    assert list(db.iterator(prefix=b"b", reverse=True, include_value=False)) == [b"b"]
    assert list(db.iterator(start=b"b", stop=b"c", reverse=True, include_value=False)) == [b"b"]
    it = db.iterator(start=b"b", include_start=False, include_value=False)
    it.seek(b"a")
    assert next(it) == b"c"
    # plyvel: a1 (out of the range) after a seek and a step back; a seek past an included
    # stop key then next() yields the stop key, which is below the target.
    it = db.iterator(start=b"b", include_value=False)
    it.seek(b"")
    with pytest.raises(StopIteration):
        it.prev()
    it = db.iterator(stop=b"b", include_stop=True, include_value=False)
    it.seek(b"bb")
    with pytest.raises(StopIteration):
        next(it)
    assert it.prev() == b"b"
