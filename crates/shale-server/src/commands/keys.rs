//! Generic key commands, after Redis 7.0's `db.c` and `expire.c`.
//!
//! KEYS, SCAN and DBSIZE walk the store in key order and read every value (the expiry is
//! in it), so DBSIZE costs O(keys) here where Redis keeps a count.

use super::{CmdResult, Ctx, Flow, NOT_INTEGER, SYNTAX_ERR};
use crate::glob;
use crate::keyspace::{Entry, Writes};
use crate::number::parse_i64;

/// DEL key [key ...] and UNLINK: the number of keys that existed.
pub fn del(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let keys = &args[1..];
    let ks = &ctx.shared.keyspace;
    let guard = ks.lock_many(keys.iter().map(Vec::as_slice));
    let mut w = Writes::new();
    let mut deleted: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
    for k in keys {
        if !deleted.contains(k.as_slice()) && ks.get_locked(&guard, k)?.is_some() {
            w.delete(k);
            deleted.insert(k);
        }
    }
    ctx.commit(w)?;
    drop(guard);
    ctx.out.int(deleted.len() as i64);
    Ok(Flow::Continue)
}

/// EXISTS key [key ...]: a key named twice counts twice.
pub fn exists(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let mut n = 0;
    for k in &args[1..] {
        if ctx.ks().get(k)?.is_some() {
            n += 1;
        }
    }
    ctx.out.int(n);
    Ok(Flow::Continue)
}

/// TTL, PTTL, EXPIRETIME and PEXPIRETIME (`ttlGenericCommand`).
fn ttl_generic(ctx: &mut Ctx<'_>, key: &[u8], ms: bool, absolute: bool) -> CmdResult {
    let reply = match ctx.ks().get(key)? {
        None => -2,
        Some(e) => match e.expire_at() {
            None => -1,
            Some(t) => {
                let t = t.min(i64::MAX as u64) as i64;
                let v = if absolute {
                    t
                } else {
                    (t - ctx.ks().now_ms() as i64).max(0)
                };
                match (ms, absolute) {
                    (true, _) => v,
                    (false, true) => v / 1000,
                    (false, false) => (v + 500) / 1000,
                }
            }
        },
    };
    ctx.out.int(reply);
    Ok(Flow::Continue)
}

/// TTL key
pub fn ttl(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    ttl_generic(ctx, &args[1], false, false)
}

/// PTTL key
pub fn pttl(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    ttl_generic(ctx, &args[1], true, false)
}

/// EXPIRETIME key
pub fn expiretime(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    ttl_generic(ctx, &args[1], false, true)
}

/// PEXPIRETIME key
pub fn pexpiretime(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    ttl_generic(ctx, &args[1], true, true)
}

/// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (`expireGenericCommand`). `relative`: the time
/// counts from now; `seconds`: its unit.
fn expire_generic(
    ctx: &mut Ctx<'_>,
    args: &[Vec<u8>],
    relative: bool,
    seconds: bool,
    name: &str,
) -> CmdResult {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &args[3..] {
        let is = |s: &str| opt.eq_ignore_ascii_case(s.as_bytes());
        if is("nx") {
            nx = true;
        } else if is("xx") {
            xx = true;
        } else if is("gt") {
            gt = true;
        } else if is("lt") {
            lt = true;
        } else {
            return ctx.error(&format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(opt)
            ));
        }
    }
    if nx && (xx || gt || lt) {
        return ctx.error("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return ctx.error("ERR GT and LT options at the same time are not compatible");
    }
    let Some(mut when) = parse_i64(&args[2]) else {
        return ctx.error(NOT_INTEGER);
    };
    let invalid = format!("ERR invalid expire time in '{name}' command");
    if seconds {
        match when.checked_mul(1000) {
            Some(ms) => when = ms,
            None => return ctx.error(&invalid),
        }
    }
    if relative {
        match when.checked_add(ctx.ks().now_ms() as i64) {
            Some(t) => when = t,
            None => return ctx.error(&invalid),
        }
    }
    let key = &args[1];
    let ks = &ctx.shared.keyspace;
    let guard = ks.lock(key);
    let Some(e) = ks.get_locked(&guard, key)? else {
        drop(guard);
        ctx.out.int(0);
        return Ok(Flow::Continue);
    };
    let current = e.expire_at().map(|t| t.min(i64::MAX as u64) as i64);
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| when <= c))
        || (lt && current.is_some_and(|c| when >= c));
    if refused {
        drop(guard);
        ctx.out.int(0);
        return Ok(Flow::Continue);
    }
    let mut w = Writes::new();
    if when <= ctx.ks().now_ms() as i64 {
        w.delete(key);
    } else {
        w.put(key, e.value(), Some(when as u64))?;
    }
    ctx.commit(w)?;
    drop(guard);
    ctx.out.int(1);
    Ok(Flow::Continue)
}

/// EXPIRE key seconds [NX|XX|GT|LT]
pub fn expire(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(ctx, args, true, true, "expire")
}

/// PEXPIRE key milliseconds [NX|XX|GT|LT]
pub fn pexpire(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(ctx, args, true, false, "pexpire")
}

/// EXPIREAT key unix-time-seconds [NX|XX|GT|LT]
pub fn expireat(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(ctx, args, false, true, "expireat")
}

/// PEXPIREAT key unix-time-milliseconds [NX|XX|GT|LT]
pub fn pexpireat(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    expire_generic(ctx, args, false, false, "pexpireat")
}

/// PERSIST key
pub fn persist(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let key = &args[1];
    let ks = &ctx.shared.keyspace;
    let guard = ks.lock(key);
    let removed = match ks.get_locked(&guard, key)? {
        Some(e) if e.expire_at().is_some() => {
            let mut w = Writes::new();
            w.put(key, e.value(), None)?;
            ctx.commit(w)?;
            true
        }
        _ => false,
    };
    drop(guard);
    ctx.out.int(i64::from(removed));
    Ok(Flow::Continue)
}

/// TYPE key: every value is a string.
pub fn type_(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let t = if ctx.ks().get(&args[1])?.is_some() {
        "string"
    } else {
        "none"
    };
    ctx.out.simple(t);
    Ok(Flow::Continue)
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. COUNT keys are examined per
/// call (expired and unmatched ones included), as in Redis.
pub fn scan(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let cursor = match std::str::from_utf8(&args[1])
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(c) => c,
        None => return ctx.error("ERR invalid cursor"),
    };
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut only_strings = true;
    let mut i = 2;
    while i < args.len() {
        let opt = &args[i];
        let Some(val) = args.get(i + 1) else {
            return ctx.error(SYNTAX_ERR);
        };
        if opt.eq_ignore_ascii_case(b"count") {
            match parse_i64(val) {
                Some(n) if n >= 1 => count = n.min(1 << 20) as usize,
                Some(_) => return ctx.error(SYNTAX_ERR),
                None => return ctx.error(NOT_INTEGER),
            }
        } else if opt.eq_ignore_ascii_case(b"match") {
            pattern = Some(val);
        } else if opt.eq_ignore_ascii_case(b"type") {
            only_strings = val.eq_ignore_ascii_case(b"string");
        } else {
            return ctx.error(SYNTAX_ERR);
        }
        i += 2;
    }
    let ks = ctx.ks();
    let from = ks.cursors.resume(cursor);
    let prefix = pattern.map(glob::literal_prefix).unwrap_or_default();
    let now = ctx.ks().now_ms();
    let mut it = ks.entries(&from, &prefix)?;
    let mut keys = Vec::new();
    for _ in 0..count {
        let Some(item) = it.next() else { break };
        let (k, e) = item?;
        if only_strings && !e.expired(now) && pattern.is_none_or(|p| glob::matches(p, &k)) {
            keys.push(k);
        }
    }
    let next = match it.next().transpose()? {
        Some((k, _)) => ks.cursors.save(&k),
        None => 0,
    };
    drop(it);
    ctx.out.array(2);
    ctx.out.bulk(next.to_string().as_bytes());
    ctx.out.array(keys.len());
    for k in &keys {
        ctx.out.bulk(k);
    }
    Ok(Flow::Continue)
}

/// KEYS pattern
pub fn keys(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let pattern = &args[1];
    let prefix = glob::literal_prefix(pattern);
    let now = ctx.ks().now_ms();
    let mut keys = Vec::new();
    for item in ctx.ks().entries(&prefix, &prefix)? {
        let (k, e) = item?;
        if !e.expired(now) && glob::matches(pattern, &k) {
            keys.push(k);
        }
    }
    ctx.out.array(keys.len());
    for k in &keys {
        ctx.out.bulk(k);
    }
    Ok(Flow::Continue)
}

/// Live keys and live keys with an expiry, walking the store.
pub fn count_keys(ctx: &Ctx<'_>) -> Result<(u64, u64), crate::keyspace::Error> {
    let now = ctx.ks().now_ms();
    let (mut keys, mut expires) = (0, 0);
    for item in ctx.ks().entries(b"", b"")? {
        let (_, e): (Vec<u8>, Entry) = item?;
        if !e.expired(now) {
            keys += 1;
            if e.expire_at().is_some() {
                expires += 1;
            }
        }
    }
    Ok((keys, expires))
}

/// DBSIZE
pub fn dbsize(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> CmdResult {
    let (n, _) = count_keys(ctx)?;
    ctx.out.int(n as i64);
    Ok(Flow::Continue)
}

/// FLUSHDB [ASYNC|SYNC]
pub fn flushdb(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    if args.len() > 2
        || args
            .get(1)
            .is_some_and(|a| !a.eq_ignore_ascii_case(b"async") && !a.eq_ignore_ascii_case(b"sync"))
    {
        return ctx.error(SYNTAX_ERR);
    }
    ctx.ks().clear()?;
    ctx.out.ok();
    Ok(Flow::Continue)
}

/// FLUSHALL [ASYNC|SYNC]: there is one database.
pub fn flushall(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    flushdb(ctx, args)
}
