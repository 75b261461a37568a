//! Connection commands: PING, ECHO, SELECT, QUIT, RESET, AUTH, HELLO and CLIENT, after
//! Redis 7.0's `networking.c` and `acl.c` (CLIENT SETINFO after 7.2).
//!
//! There is one user, `default`, whose password is `--requirepass` (none: every client is
//! authenticated from the start, as with Redis's `nopass`). Passwords are compared in time
//! independent of where they differ.

use super::{CmdResult, Ctx, Flow, NOT_INTEGER};
use crate::number::parse_i64;

/// The Redis version this server answers as (the protocol and command semantics it
/// follows); INFO also gives `shale_version`.
pub const REDIS_VERSION: &str = "7.0.15";

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// PING [message]
pub fn ping(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    match args.len() {
        1 => ctx.out.simple("PONG"),
        2 => ctx.out.bulk(&args[1]),
        _ => {
            return ctx.error("ERR wrong number of arguments for 'ping' command");
        }
    }
    Ok(Flow::Continue)
}

/// ECHO message
pub fn echo(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    ctx.out.bulk(&args[1]);
    Ok(Flow::Continue)
}

/// SELECT index: only database 0 exists.
pub fn select(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    match parse_i64(&args[1]) {
        None => ctx.error(NOT_INTEGER),
        Some(0) => {
            ctx.out.ok();
            Ok(Flow::Continue)
        }
        Some(_) => ctx.error("ERR DB index is out of range"),
    }
}

/// QUIT
pub fn quit(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> CmdResult {
    ctx.out.ok();
    Ok(Flow::Close)
}

/// RESET: back to a new connection's state (RESP2, no name, not authenticated if a
/// password is set).
pub fn reset(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> CmdResult {
    ctx.out.resp3 = false;
    ctx.client.name = None;
    ctx.client.lib_name = None;
    ctx.client.lib_ver = None;
    ctx.client.authenticated = ctx.shared.config.requirepass.is_none();
    ctx.out.simple("RESET");
    Ok(Flow::Continue)
}

/// Check `user`/`password` against the default user.
fn check(ctx: &Ctx<'_>, user: &[u8], password: &[u8]) -> bool {
    if user != b"default" {
        return false;
    }
    match &ctx.shared.config.requirepass {
        None => true, // `nopass`: any password
        Some(p) => constant_time_eq(p, password),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// AUTH [username] password
pub fn auth(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    if args.len() > 3 {
        return ctx.error(super::SYNTAX_ERR);
    }
    let (user, pass): (&[u8], &[u8]) = if args.len() == 2 {
        if ctx.shared.config.requirepass.is_none() {
            return ctx.error(
                "ERR AUTH <password> called without any password configured for the default user. \
                 Are you sure your configuration is correct?",
            );
        }
        (b"default", &args[1])
    } else {
        (&args[1], &args[2])
    };
    if check(ctx, user, pass) {
        ctx.client.authenticated = true;
        ctx.out.ok();
        Ok(Flow::Continue)
    } else {
        ctx.error(WRONGPASS)
    }
}

/// HELLO [protover [AUTH username password] [SETNAME clientname]]
pub fn hello(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let mut ver = None;
    let mut j = 1;
    if let Some(v) = args.get(1) {
        match parse_i64(v) {
            None => {
                return ctx.error("ERR Protocol version is not an integer or out of range");
            }
            Some(v @ 2..=3) => ver = Some(v),
            Some(_) => return ctx.error("NOPROTO unsupported protocol version"),
        }
        j = 2;
    }
    while j < args.len() {
        let opt = &args[j];
        let more = args.len() - 1 - j;
        if opt.eq_ignore_ascii_case(b"auth") && more >= 2 {
            if !check(ctx, &args[j + 1], &args[j + 2]) {
                return ctx.error(WRONGPASS);
            }
            ctx.client.authenticated = true;
            j += 3;
        } else if opt.eq_ignore_ascii_case(b"setname") && more >= 1 {
            if !valid_attr(&args[j + 1]) {
                return ctx.error(
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            }
            ctx.client.name = non_empty(&args[j + 1]);
            j += 2;
        } else {
            return ctx.error(&format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(opt)
            ));
        }
    }
    if !ctx.client.authenticated {
        return ctx.error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO AUTH <user> <pass> option can be used to authenticate the client and select \
             the RESP protocol version at the same time",
        );
    }
    if let Some(v) = ver {
        ctx.out.resp3 = v == 3;
    }
    let out = &mut *ctx.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(if out.resp3 { 3 } else { 2 });
    out.bulk(b"id");
    out.int(ctx.client.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
    Ok(Flow::Continue)
}

/// Redis's `validateClientAttr`: printable ASCII without spaces.
fn valid_attr(v: &[u8]) -> bool {
    v.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

fn non_empty(v: &[u8]) -> Option<Vec<u8>> {
    (!v.is_empty()).then(|| v.to_vec())
}

/// CLIENT ID
pub fn client_id(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> CmdResult {
    ctx.out.int(ctx.client.id as i64);
    Ok(Flow::Continue)
}

/// CLIENT SETNAME name (empty: no name)
pub fn client_setname(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    if !valid_attr(&args[2]) {
        return ctx
            .error("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    ctx.client.name = non_empty(&args[2]);
    ctx.out.ok();
    Ok(Flow::Continue)
}

/// CLIENT GETNAME
pub fn client_getname(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> CmdResult {
    let name = ctx.client.name.clone();
    ctx.out.bulk_or_null(name.as_deref());
    Ok(Flow::Continue)
}

/// CLIENT SETINFO LIB-NAME|LIB-VER value
pub fn client_setinfo(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let (attr, val) = (&args[2], &args[3]);
    let attr_text = String::from_utf8_lossy(attr);
    let lib_name = attr.eq_ignore_ascii_case(b"lib-name");
    if !lib_name && !attr.eq_ignore_ascii_case(b"lib-ver") {
        return ctx.error(&format!("ERR Unrecognized option '{attr_text}'"));
    }
    if !valid_attr(val) {
        return ctx.error(&format!(
            "ERR {attr_text} cannot contain spaces, newlines or special characters."
        ));
    }
    if lib_name {
        ctx.client.lib_name = non_empty(val);
    } else {
        ctx.client.lib_ver = non_empty(val);
    }
    ctx.out.ok();
    Ok(Flow::Continue)
}

/// CLIENT HELP
pub fn client_help(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> CmdResult {
    let lines: &[&str] = &[
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "SETINFO <option> <value>",
        "    Set client meta attr. Options are:",
        "    * LIB-NAME: the client lib name.",
        "    * LIB-VER: the client lib version.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "HELP",
        "    Print this help.",
    ];
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.simple(l);
    }
    Ok(Flow::Continue)
}
