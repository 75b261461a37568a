//! String commands, after Redis 7.0's `t_string.c`: the same option parsing, the same
//! checks in the same order, the same replies. Every read-modify-write holds the key's lock
//! from its read to its write.

use super::{CmdResult, Ctx, Flow, NOT_FLOAT, NOT_INTEGER, SYNTAX_ERR};
use crate::keyspace::{Entry, MAX_USER_VALUE, Writes};
use crate::number::{format_f64, parse_f64, parse_i64};

/// Redis's error for a string that would grow past the bulk limit.
const TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// How an expiry argument is given.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ttl {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// SET and GETEX options (`parseExtendedStringArgumentsOrReply`).
#[derive(Default)]
struct Opts<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    expire: Option<(Ttl, &'a [u8])>,
}

fn parse_opts(rest: &[Vec<u8>], for_set: bool) -> Result<Opts<'_>, &'static str> {
    let mut o = Opts::default();
    let mut j = 0;
    while let Some(opt) = rest.get(j) {
        let next = rest.get(j + 1);
        let is = |s: &str| opt.eq_ignore_ascii_case(s.as_bytes());
        let has_ttl = |o: &Opts<'_>, except: Ttl| o.expire.is_some_and(|(t, _)| t != except);
        if is("nx") && !o.xx && for_set {
            o.nx = true;
        } else if is("xx") && !o.nx && for_set {
            o.xx = true;
        } else if is("get") && for_set {
            o.get = true;
        } else if is("keepttl") && !o.persist && o.expire.is_none() && for_set {
            o.keepttl = true;
        } else if is("persist") && !for_set && o.expire.is_none() && !o.keepttl {
            o.persist = true;
        } else if let (Some(kind), Some(n)) = (ttl_kind(opt), next)
            && !o.keepttl
            && !o.persist
            && !has_ttl(&o, kind)
        {
            o.expire = Some((kind, n.as_slice()));
            j += 1;
        } else {
            return Err(SYNTAX_ERR);
        }
        j += 1;
    }
    Ok(o)
}

fn ttl_kind(opt: &[u8]) -> Option<Ttl> {
    let is = |s: &str| opt.eq_ignore_ascii_case(s.as_bytes());
    if is("ex") {
        Some(Ttl::Ex)
    } else if is("px") {
        Some(Ttl::Px)
    } else if is("exat") {
        Some(Ttl::ExAt)
    } else if is("pxat") {
        Some(Ttl::PxAt)
    } else {
        None
    }
}

/// The absolute expiry (Unix ms) of an expiry argument, or the error reply
/// (`getExpireMillisecondsOrReply`).
fn expire_at(kind: Ttl, arg: &[u8], command: &str, now: u64) -> Result<u64, String> {
    let invalid = || format!("ERR invalid expire time in '{command}' command");
    let mut ms = parse_i64(arg).ok_or_else(|| NOT_INTEGER.to_string())?;
    let seconds = matches!(kind, Ttl::Ex | Ttl::ExAt);
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        return Err(invalid());
    }
    if seconds {
        ms *= 1000;
    }
    if matches!(kind, Ttl::Ex | Ttl::Px) {
        ms = ms.checked_add(now as i64).ok_or_else(invalid)?;
    }
    Ok(ms as u64)
}

/// What SET-like commands reply.
#[derive(Clone, Copy)]
enum SetReply {
    /// `+OK`, or a null when NX/XX stops it.
    Ok,
    /// `:1`, or `:0` when NX stops it (SETNX).
    Int,
}

#[expect(
    clippy::too_many_arguments,
    reason = "setGenericCommand's parameters, one per option"
)]
fn set_generic(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    value: &[u8],
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    expire: Option<u64>,
    reply: SetReply,
) -> CmdResult {
    if value.len() > MAX_USER_VALUE {
        return ctx.error(TOO_BIG);
    }
    let ks = &ctx.shared.keyspace;
    let guard = ks.lock(key);
    let old = if nx || xx || get || keepttl {
        ks.get_locked(&guard, key)?
    } else {
        None
    };
    let found = old.is_some();
    if (nx && found) || (xx && !found) {
        drop(guard);
        if get {
            ctx.out.bulk_or_null(old.as_ref().map(Entry::value));
        } else {
            match reply {
                SetReply::Ok => ctx.out.null(),
                SetReply::Int => ctx.out.int(0),
            }
        }
        return Ok(Flow::Continue);
    }
    let expire = if keepttl {
        old.as_ref().and_then(Entry::expire_at)
    } else {
        expire
    };
    let mut w = Writes::new();
    if expire.is_some_and(|t| t <= ctx.ks().now_ms()) {
        // An absolute time in the past: the key is set and expires at once.
        w.delete(key);
    } else {
        w.put(key, value, expire)?;
    }
    ctx.commit(w)?;
    drop(guard);
    if get {
        ctx.out.bulk_or_null(old.as_ref().map(Entry::value));
    } else {
        match reply {
            SetReply::Ok => ctx.out.ok(),
            SetReply::Int => ctx.out.int(1),
        }
    }
    Ok(Flow::Continue)
}

/// SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT t|KEEPTTL]
pub fn set(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let o = match parse_opts(&args[3..], true) {
        Ok(o) => o,
        Err(e) => return ctx.error(e),
    };
    let expire = match o.expire {
        Some((kind, arg)) => match expire_at(kind, arg, "set", ctx.ks().now_ms()) {
            Ok(t) => Some(t),
            Err(e) => return ctx.error(&e),
        },
        None => None,
    };
    set_generic(
        ctx,
        &args[1],
        &args[2],
        o.nx,
        o.xx,
        o.get,
        o.keepttl,
        expire,
        SetReply::Ok,
    )
}

/// SETNX key value
pub fn setnx(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    set_generic(
        ctx,
        &args[1],
        &args[2],
        true,
        false,
        false,
        false,
        None,
        SetReply::Int,
    )
}

fn setex_generic(ctx: &mut Ctx<'_>, args: &[Vec<u8>], kind: Ttl, name: &str) -> CmdResult {
    let expire = match expire_at(kind, &args[2], name, ctx.ks().now_ms()) {
        Ok(t) => t,
        Err(e) => return ctx.error(&e),
    };
    set_generic(
        ctx,
        &args[1],
        &args[3],
        false,
        false,
        false,
        false,
        Some(expire),
        SetReply::Ok,
    )
}

/// SETEX key seconds value
pub fn setex(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    setex_generic(ctx, args, Ttl::Ex, "setex")
}

/// PSETEX key milliseconds value
pub fn psetex(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    setex_generic(ctx, args, Ttl::Px, "psetex")
}

/// GET key
pub fn get(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let e = ctx.ks().get(&args[1])?;
    ctx.out.bulk_or_null(e.as_ref().map(Entry::value));
    Ok(Flow::Continue)
}

/// GETEX key [EX|PX|EXAT|PXAT t|PERSIST]
pub fn getex(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let o = match parse_opts(&args[2..], false) {
        Ok(o) => o,
        Err(e) => return ctx.error(e),
    };
    let key = &args[1];
    if o.expire.is_none() && !o.persist {
        return get(ctx, args);
    }
    let ks = &ctx.shared.keyspace;
    let guard = ks.lock(key);
    let Some(old) = ks.get_locked(&guard, key)? else {
        drop(guard);
        ctx.out.null();
        return Ok(Flow::Continue);
    };
    let mut w = Writes::new();
    match o.expire {
        Some((kind, arg)) => {
            let t = match expire_at(kind, arg, "getex", ctx.ks().now_ms()) {
                Ok(t) => t,
                Err(e) => {
                    drop(guard);
                    return ctx.error(&e);
                }
            };
            if matches!(kind, Ttl::ExAt | Ttl::PxAt) && t <= ctx.ks().now_ms() {
                w.delete(key);
            } else {
                w.put(key, old.value(), Some(t))?;
            }
        }
        None if old.expire_at().is_some() => w.put(key, old.value(), None)?,
        None => {}
    }
    ctx.commit(w)?;
    drop(guard);
    ctx.out.bulk(old.value());
    Ok(Flow::Continue)
}

/// GETDEL key
pub fn getdel(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let key = &args[1];
    let ks = &ctx.shared.keyspace;
    let guard = ks.lock(key);
    let old = ks.get_locked(&guard, key)?;
    if old.is_some() {
        let mut w = Writes::new();
        w.delete(key);
        ctx.commit(w)?;
    }
    drop(guard);
    ctx.out.bulk_or_null(old.as_ref().map(Entry::value));
    Ok(Flow::Continue)
}

/// GETSET key value
pub fn getset(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    set_generic(
        ctx,
        &args[1],
        &args[2],
        false,
        false,
        true,
        false,
        None,
        SetReply::Ok,
    )
}

/// MGET key [key ...]: one point in time for all keys.
pub fn mget(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let keys: Vec<&[u8]> = args[1..].iter().map(Vec::as_slice).collect();
    let found = ctx.ks().get_many(&keys)?;
    ctx.out.array(found.len());
    for e in &found {
        ctx.out.bulk_or_null(e.as_ref().map(Entry::value));
    }
    Ok(Flow::Continue)
}

fn mset_generic(ctx: &mut Ctx<'_>, args: &[Vec<u8>], nx: bool) -> CmdResult {
    if args.len().is_multiple_of(2) {
        let name = if nx { "msetnx" } else { "mset" };
        return ctx.error(&format!(
            "ERR wrong number of arguments for '{name}' command"
        ));
    }
    let pairs: Vec<(&[u8], &[u8])> = args[1..]
        .chunks_exact(2)
        .map(|p| (p[0].as_slice(), p[1].as_slice()))
        .collect();
    if pairs.iter().any(|(_, v)| v.len() > MAX_USER_VALUE) {
        return ctx.error(TOO_BIG);
    }
    let ks = &ctx.shared.keyspace;
    let guard = ks.lock_many(pairs.iter().map(|(k, _)| *k));
    if nx {
        for (k, _) in &pairs {
            if ks.get_locked(&guard, k)?.is_some() {
                drop(guard);
                ctx.out.int(0);
                return Ok(Flow::Continue);
            }
        }
    }
    let mut w = Writes::new();
    for (k, v) in &pairs {
        w.put(k, v, None)?;
    }
    ctx.commit(w)?;
    drop(guard);
    if nx {
        ctx.out.int(1);
    } else {
        ctx.out.ok();
    }
    Ok(Flow::Continue)
}

/// MSET key value [key value ...]
pub fn mset(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    mset_generic(ctx, args, false)
}

/// MSETNX key value [key value ...]
pub fn msetnx(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    mset_generic(ctx, args, true)
}

/// Add `delta` to the integer at `key` (0 if absent); the expiry is kept.
fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> CmdResult {
    let ks = &ctx.shared.keyspace;
    let guard = ks.lock(key);
    let old = ks.get_locked(&guard, key)?;
    let current = match &old {
        None => 0,
        Some(e) => match parse_i64(e.value()) {
            Some(n) => n,
            None => {
                drop(guard);
                return ctx.error(NOT_INTEGER);
            }
        },
    };
    let Some(new) = current.checked_add(delta) else {
        drop(guard);
        return ctx.error("ERR increment or decrement would overflow");
    };
    let mut w = Writes::new();
    w.put(
        key,
        new.to_string().as_bytes(),
        old.as_ref().and_then(Entry::expire_at),
    )?;
    ctx.commit(w)?;
    drop(guard);
    ctx.out.int(new);
    Ok(Flow::Continue)
}

/// INCR key
pub fn incr(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    incr_by(ctx, &args[1], 1)
}

/// DECR key
pub fn decr(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    incr_by(ctx, &args[1], -1)
}

/// INCRBY key increment
pub fn incrby(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    match parse_i64(&args[2]) {
        Some(d) => incr_by(ctx, &args[1], d),
        None => ctx.error(NOT_INTEGER),
    }
}

/// DECRBY key decrement
pub fn decrby(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    match parse_i64(&args[2]) {
        Some(i64::MIN) => ctx.error("ERR decrement would overflow"),
        Some(d) => incr_by(ctx, &args[1], -d),
        None => ctx.error(NOT_INTEGER),
    }
}

/// INCRBYFLOAT key increment
pub fn incrbyfloat(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let key = &args[1];
    let ks = &ctx.shared.keyspace;
    let guard = ks.lock(key);
    let old = ks.get_locked(&guard, key)?;
    let current = match &old {
        None => Some(0.0),
        Some(e) => parse_f64(e.value()),
    };
    let (Some(current), Some(incr)) = (current, parse_f64(&args[2])) else {
        drop(guard);
        return ctx.error(NOT_FLOAT);
    };
    let new = current + incr;
    if !new.is_finite() {
        drop(guard);
        return ctx.error("ERR increment would produce NaN or Infinity");
    }
    let text = format_f64(new);
    let mut w = Writes::new();
    w.put(
        key,
        text.as_bytes(),
        old.as_ref().and_then(Entry::expire_at),
    )?;
    ctx.commit(w)?;
    drop(guard);
    ctx.out.bulk(text.as_bytes());
    Ok(Flow::Continue)
}

/// The largest string a command may build: the bulk limit, within the engine's.
fn max_string(ctx: &Ctx<'_>) -> usize {
    ctx.shared.config.max_bulk_len.min(MAX_USER_VALUE)
}

/// APPEND key value
pub fn append(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let (key, add) = (&args[1], &args[2]);
    let limit = max_string(ctx);
    let ks = &ctx.shared.keyspace;
    let guard = ks.lock(key);
    let old = ks.get_locked(&guard, key)?;
    let expire = old.as_ref().and_then(Entry::expire_at);
    let mut value = old.map(Entry::into_value).unwrap_or_default();
    if value.len() + add.len() > limit {
        drop(guard);
        return ctx.error(TOO_BIG);
    }
    value.extend_from_slice(add);
    let mut w = Writes::new();
    w.put(key, &value, expire)?;
    ctx.commit(w)?;
    drop(guard);
    ctx.out.int(value.len() as i64);
    Ok(Flow::Continue)
}

/// STRLEN key
pub fn strlen(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let n = ctx.ks().get(&args[1])?.map_or(0, |e| e.value().len());
    ctx.out.int(n as i64);
    Ok(Flow::Continue)
}

/// GETRANGE key start end
pub fn getrange(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let (Some(mut start), Some(mut end)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
        return ctx.error(NOT_INTEGER);
    };
    let Some(e) = ctx.ks().get(&args[1])? else {
        ctx.out.bulk(b"");
        return Ok(Flow::Continue);
    };
    let s = e.value();
    let len = s.len() as i64;
    if start < 0 && end < 0 && start > end {
        ctx.out.bulk(b"");
        return Ok(Flow::Continue);
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        ctx.out.bulk(b"");
    } else {
        ctx.out.bulk(&s[start as usize..=end as usize]);
    }
    Ok(Flow::Continue)
}

/// SETRANGE key offset value
pub fn setrange(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let (key, patch) = (&args[1], &args[3]);
    let Some(offset) = parse_i64(&args[2]) else {
        return ctx.error(NOT_INTEGER);
    };
    if offset < 0 {
        return ctx.error("ERR offset is out of range");
    }
    let limit = max_string(ctx);
    let ks = &ctx.shared.keyspace;
    let guard = ks.lock(key);
    let old = ks.get_locked(&guard, key)?;
    if patch.is_empty() {
        drop(guard);
        ctx.out.int(old.map_or(0, |e| e.value().len() as i64));
        return Ok(Flow::Continue);
    }
    let end = (offset as u64).saturating_add(patch.len() as u64);
    if end > limit as u64 {
        drop(guard);
        return ctx.error(TOO_BIG);
    }
    let (offset, end) = (offset as usize, end as usize);
    let expire = old.as_ref().and_then(Entry::expire_at);
    let mut value = old.map(Entry::into_value).unwrap_or_default();
    if value.len() < end {
        value.resize(end, 0);
    }
    value[offset..end].copy_from_slice(patch);
    let mut w = Writes::new();
    w.put(key, &value, expire)?;
    ctx.commit(w)?;
    drop(guard);
    ctx.out.int(value.len() as i64);
    Ok(Flow::Continue)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn set_options_like_redis() {
        assert!(parse_opts(&v(&["NX", "XX"]), true).is_err());
        assert!(parse_opts(&v(&["EX", "1", "PX", "1"]), true).is_err());
        assert!(parse_opts(&v(&["EX", "1", "KEEPTTL"]), true).is_err());
        assert!(parse_opts(&v(&["EX"]), true).is_err());
        assert!(parse_opts(&v(&["GET"]), false).is_err());
        assert!(parse_opts(&v(&["PERSIST"]), true).is_err());
        let args = v(&["nx", "get", "ex", "10", "ex", "20"]);
        let o = parse_opts(&args, true).unwrap();
        assert!(o.nx && o.get);
        assert_eq!(o.expire.map(|(_, a)| a), Some(&b"20"[..]));
    }

    #[test]
    fn expire_arguments() {
        assert_eq!(expire_at(Ttl::ExAt, b"10", "set", 0), Ok(10_000));
        assert_eq!(
            expire_at(Ttl::Ex, b"0", "set", 0).unwrap_err(),
            "ERR invalid expire time in 'set' command"
        );
        assert_eq!(
            expire_at(Ttl::Ex, b"9223372036854775807", "setex", 0).unwrap_err(),
            "ERR invalid expire time in 'setex' command"
        );
        assert_eq!(expire_at(Ttl::Px, b"x", "set", 0).unwrap_err(), NOT_INTEGER);
    }
}
