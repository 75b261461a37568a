//! The command table: what COMMAND and COMMAND DOCS report, and what the dispatcher checks.
//! Arity, flags and key positions are Redis 7.0's.

use super::{CmdResult, Ctx, connection, keys, server, strings};

/// A handler.
pub type Handler = fn(&mut Ctx<'_>, &[Vec<u8>]) -> CmdResult;

/// One command or subcommand.
pub struct Command {
    /// Lowercase; a subcommand is `container|sub` (`client|setname`), as Redis names it.
    pub name: &'static str,
    /// Redis's arity: `n` exactly n arguments (the name counts), `-n` at least n.
    pub arity: i32,
    /// Redis's flag names (`write`, `readonly`, `fast`, `no_auth`, ...).
    pub flags: &'static [&'static str],
    /// First key, last key (-1: the last argument), step; 0, 0, 0 without keys.
    pub keys: (i32, i32, i32),
    /// Redis's command group (`string`, `generic`, `connection`, `server`).
    pub group: &'static str,
    /// The Redis version that introduced it.
    pub since: &'static str,
    /// One line for `COMMAND DOCS` and redis-cli's `HELP`.
    pub summary: &'static str,
    /// The argument line redis-cli shows as a hint.
    pub args: &'static str,
    /// The implementation; unused for a container called without a subcommand.
    pub handler: Handler,
    /// Subcommands of a container (CLIENT, COMMAND, CONFIG).
    pub subcommands: &'static [Command],
}

impl Command {
    /// The subcommand's own name (`setname` of `client|setname`), or the name.
    pub fn sub_name(&self) -> &'static str {
        self.name.split_once('|').map_or(self.name, |(_, s)| s)
    }

    /// ACL categories as Redis reports them, derived from the group and flags.
    pub fn categories(&self) -> Vec<&'static str> {
        let mut c = vec![match self.group {
            "string" => "@string",
            "generic" => "@keyspace",
            "connection" => "@connection",
            _ => "@admin",
        }];
        if self.flags.contains(&"write") {
            c.push("@write");
        }
        if self.flags.contains(&"readonly") {
            c.push("@read");
        }
        c.push(if self.flags.contains(&"fast") {
            "@fast"
        } else {
            "@slow"
        });
        c
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "a table row: every field is a column"
)]
const fn c(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    keys: (i32, i32, i32),
    group: &'static str,
    since: &'static str,
    summary: &'static str,
    args: &'static str,
    handler: Handler,
) -> Command {
    Command {
        name,
        arity,
        flags,
        keys,
        group,
        since,
        summary,
        args,
        handler,
        subcommands: &[],
    }
}

const NO_KEYS: (i32, i32, i32) = (0, 0, 0);
const KEY1: (i32, i32, i32) = (1, 1, 1);
const KEYS_ALL: (i32, i32, i32) = (1, -1, 1);
const KEYS_PAIRS: (i32, i32, i32) = (1, -1, 2);

const W: &[&str] = &["write", "denyoom"];
const WF: &[&str] = &["write", "denyoom", "fast"];
const WDEL: &[&str] = &["write", "fast"];
const R: &[&str] = &["readonly"];
const RF: &[&str] = &["readonly", "fast"];
const CONN: &[&str] = &["fast", "loading", "stale"];
const CONN_NOAUTH: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth"];

const EXPIRE_ARGS: &str = "key seconds [NX|XX|GT|LT]";

/// CLIENT's subcommands.
static CLIENT_SUBS: [Command; 5] = [
    c(
        "client|id",
        2,
        CONN,
        NO_KEYS,
        "connection",
        "5.0.0",
        "Returns the unique client ID of the connection.",
        "",
        connection::client_id,
    ),
    c(
        "client|setname",
        3,
        CONN,
        NO_KEYS,
        "connection",
        "2.6.9",
        "Sets the connection name.",
        "connection-name",
        connection::client_setname,
    ),
    c(
        "client|getname",
        2,
        CONN,
        NO_KEYS,
        "connection",
        "2.6.9",
        "Returns the name of the connection.",
        "",
        connection::client_getname,
    ),
    c(
        "client|setinfo",
        4,
        CONN,
        NO_KEYS,
        "connection",
        "7.2.0",
        "Sets information specific to the client or connection.",
        "LIB-NAME libname|LIB-VER libver",
        connection::client_setinfo,
    ),
    c(
        "client|help",
        2,
        CONN,
        NO_KEYS,
        "connection",
        "5.0.0",
        "Returns helpful text about the different subcommands.",
        "",
        connection::client_help,
    ),
];

/// COMMAND's subcommands.
static COMMAND_SUBS: [Command; 4] = [
    c(
        "command|count",
        2,
        CONN,
        NO_KEYS,
        "server",
        "2.8.13",
        "Returns a count of commands.",
        "",
        server::command_count,
    ),
    c(
        "command|docs",
        -2,
        CONN,
        NO_KEYS,
        "server",
        "7.0.0",
        "Returns documentary information about one, multiple or all commands.",
        "[command-name [command-name ...]]",
        server::command_docs,
    ),
    c(
        "command|info",
        -2,
        CONN,
        NO_KEYS,
        "server",
        "2.8.13",
        "Returns information about one, multiple or all commands.",
        "[command-name [command-name ...]]",
        server::command_info,
    ),
    c(
        "command|list",
        -2,
        CONN,
        NO_KEYS,
        "server",
        "7.0.0",
        "Returns a list of command names.",
        "",
        server::command_list,
    ),
];

/// CONFIG's subcommands.
static CONFIG_SUBS: [Command; 1] = [c(
    "config|get",
    -3,
    &["admin", "noscript", "loading", "stale"],
    NO_KEYS,
    "server",
    "2.0.0",
    "Returns the effective values of configuration parameters.",
    "parameter [parameter ...]",
    server::config_get,
)];

/// Every command, sorted by name.
pub static COMMANDS: &[Command] = &[
    c(
        "append",
        3,
        W,
        KEY1,
        "string",
        "2.0.0",
        "Appends a string to the value of a key. Creates the key if it doesn't exist.",
        "key value",
        strings::append,
    ),
    c(
        "auth",
        -2,
        CONN_NOAUTH,
        NO_KEYS,
        "connection",
        "1.0.0",
        "Authenticates the connection.",
        "[username] password",
        connection::auth,
    ),
    Command {
        subcommands: &CLIENT_SUBS,
        ..c(
            "client",
            -2,
            &[],
            NO_KEYS,
            "connection",
            "2.4.0",
            "A container for client connection commands.",
            "",
            connection::client_help,
        )
    },
    Command {
        subcommands: &COMMAND_SUBS,
        ..c(
            "command",
            -1,
            &["loading", "stale"],
            NO_KEYS,
            "server",
            "2.8.13",
            "Returns detailed information about all commands.",
            "",
            server::command,
        )
    },
    Command {
        subcommands: &CONFIG_SUBS,
        ..c(
            "config",
            -2,
            &[],
            NO_KEYS,
            "server",
            "2.0.0",
            "A container for server configuration commands.",
            "",
            server::config_help,
        )
    },
    c(
        "dbsize",
        1,
        R,
        NO_KEYS,
        "server",
        "1.0.0",
        "Returns the number of keys in the database (walks every key).",
        "",
        keys::dbsize,
    ),
    c(
        "decr",
        2,
        WF,
        KEY1,
        "string",
        "1.0.0",
        "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        "key",
        strings::decr,
    ),
    c(
        "decrby",
        3,
        WF,
        KEY1,
        "string",
        "1.0.0",
        "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.",
        "key decrement",
        strings::decrby,
    ),
    c(
        "del",
        -2,
        &["write"],
        KEYS_ALL,
        "generic",
        "1.0.0",
        "Deletes one or more keys.",
        "key [key ...]",
        keys::del,
    ),
    c(
        "echo",
        2,
        &["fast"],
        NO_KEYS,
        "connection",
        "1.0.0",
        "Returns the given string.",
        "message",
        connection::echo,
    ),
    c(
        "exists",
        -2,
        RF,
        KEYS_ALL,
        "generic",
        "1.0.0",
        "Determines whether one or more keys exist.",
        "key [key ...]",
        keys::exists,
    ),
    c(
        "expire",
        -3,
        WDEL,
        KEY1,
        "generic",
        "1.0.0",
        "Sets the expiration time of a key in seconds.",
        EXPIRE_ARGS,
        keys::expire,
    ),
    c(
        "expireat",
        -3,
        WDEL,
        KEY1,
        "generic",
        "1.2.0",
        "Sets the expiration time of a key to a Unix timestamp.",
        "key unix-time-seconds [NX|XX|GT|LT]",
        keys::expireat,
    ),
    c(
        "expiretime",
        2,
        RF,
        KEY1,
        "generic",
        "7.0.0",
        "Returns the expiration time of a key as a Unix timestamp.",
        "key",
        keys::expiretime,
    ),
    c(
        "flushall",
        -1,
        &["write"],
        NO_KEYS,
        "server",
        "1.0.0",
        "Removes all keys from all databases.",
        "[ASYNC|SYNC]",
        keys::flushall,
    ),
    c(
        "flushdb",
        -1,
        &["write"],
        NO_KEYS,
        "server",
        "1.0.0",
        "Remove all keys from the current database.",
        "[ASYNC|SYNC]",
        keys::flushdb,
    ),
    c(
        "get",
        2,
        RF,
        KEY1,
        "string",
        "1.0.0",
        "Returns the string value of a key.",
        "key",
        strings::get,
    ),
    c(
        "getdel",
        2,
        WDEL,
        KEY1,
        "string",
        "6.2.0",
        "Returns the string value of a key after deleting the key.",
        "key",
        strings::getdel,
    ),
    c(
        "getex",
        -2,
        WF,
        KEY1,
        "string",
        "6.2.0",
        "Returns the string value of a key after setting its expiration time.",
        "key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]",
        strings::getex,
    ),
    c(
        "getrange",
        4,
        R,
        KEY1,
        "string",
        "2.4.0",
        "Returns a substring of the string stored at a key.",
        "key start end",
        strings::getrange,
    ),
    c(
        "getset",
        3,
        WF,
        KEY1,
        "string",
        "1.0.0",
        "Returns the previous string value of a key after setting it to a new value.",
        "key value",
        strings::getset,
    ),
    c(
        "hello",
        -1,
        CONN_NOAUTH,
        NO_KEYS,
        "connection",
        "6.0.0",
        "Handshakes with the Redis server.",
        "[protover [AUTH username password] [SETNAME clientname]]",
        connection::hello,
    ),
    c(
        "incr",
        2,
        WF,
        KEY1,
        "string",
        "1.0.0",
        "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        "key",
        strings::incr,
    ),
    c(
        "incrby",
        3,
        WF,
        KEY1,
        "string",
        "1.0.0",
        "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        "key increment",
        strings::incrby,
    ),
    c(
        "incrbyfloat",
        3,
        WF,
        KEY1,
        "string",
        "2.6.0",
        "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        "key increment",
        strings::incrbyfloat,
    ),
    c(
        "info",
        -1,
        &["loading", "stale"],
        NO_KEYS,
        "server",
        "1.0.0",
        "Returns information and statistics about the server.",
        "[section [section ...]]",
        server::info,
    ),
    c(
        "keys",
        2,
        R,
        NO_KEYS,
        "generic",
        "1.0.0",
        "Returns all key names that match a pattern.",
        "pattern",
        keys::keys,
    ),
    c(
        "mget",
        -2,
        RF,
        KEYS_ALL,
        "string",
        "1.0.0",
        "Atomically returns the string values of one or more keys.",
        "key [key ...]",
        strings::mget,
    ),
    c(
        "mset",
        -3,
        W,
        KEYS_PAIRS,
        "string",
        "1.0.1",
        "Atomically creates or modifies the string values of one or more keys.",
        "key value [key value ...]",
        strings::mset,
    ),
    c(
        "msetnx",
        -3,
        W,
        KEYS_PAIRS,
        "string",
        "1.0.1",
        "Atomically modifies the string values of one or more keys only when all keys don't exist.",
        "key value [key value ...]",
        strings::msetnx,
    ),
    c(
        "persist",
        2,
        WDEL,
        KEY1,
        "generic",
        "2.2.0",
        "Removes the expiration time of a key.",
        "key",
        keys::persist,
    ),
    c(
        "pexpire",
        -3,
        WDEL,
        KEY1,
        "generic",
        "2.6.0",
        "Sets the expiration time of a key in milliseconds.",
        "key milliseconds [NX|XX|GT|LT]",
        keys::pexpire,
    ),
    c(
        "pexpireat",
        -3,
        WDEL,
        KEY1,
        "generic",
        "2.6.0",
        "Sets the expiration time of a key to a Unix milliseconds timestamp.",
        "key unix-time-milliseconds [NX|XX|GT|LT]",
        keys::pexpireat,
    ),
    c(
        "pexpiretime",
        2,
        RF,
        KEY1,
        "generic",
        "7.0.0",
        "Returns the expiration time of a key as a Unix milliseconds timestamp.",
        "key",
        keys::pexpiretime,
    ),
    c(
        "ping",
        -1,
        &["fast", "stale"],
        NO_KEYS,
        "connection",
        "1.0.0",
        "Returns the server's liveliness response.",
        "[message]",
        connection::ping,
    ),
    c(
        "psetex",
        4,
        W,
        KEY1,
        "string",
        "2.6.0",
        "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.",
        "key milliseconds value",
        strings::psetex,
    ),
    c(
        "pttl",
        2,
        RF,
        KEY1,
        "generic",
        "2.6.0",
        "Returns the expiration time in milliseconds of a key.",
        "key",
        keys::pttl,
    ),
    c(
        "quit",
        -1,
        CONN_NOAUTH,
        NO_KEYS,
        "connection",
        "1.0.0",
        "Closes the connection.",
        "",
        connection::quit,
    ),
    c(
        "reset",
        1,
        CONN_NOAUTH,
        NO_KEYS,
        "connection",
        "6.2.0",
        "Resets the connection.",
        "",
        connection::reset,
    ),
    c(
        "scan",
        -2,
        R,
        NO_KEYS,
        "generic",
        "2.8.0",
        "Iterates over the key names in the database.",
        "cursor [MATCH pattern] [COUNT count] [TYPE type]",
        keys::scan,
    ),
    c(
        "select",
        2,
        CONN,
        NO_KEYS,
        "connection",
        "1.0.0",
        "Changes the selected database (only 0 exists).",
        "index",
        connection::select,
    ),
    c(
        "set",
        -3,
        W,
        KEY1,
        "string",
        "1.0.0",
        "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
        "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]",
        strings::set,
    ),
    c(
        "setex",
        4,
        W,
        KEY1,
        "string",
        "2.0.0",
        "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.",
        "key seconds value",
        strings::setex,
    ),
    c(
        "setnx",
        3,
        WF,
        KEY1,
        "string",
        "1.0.0",
        "Set the string value of a key only when the key doesn't exist.",
        "key value",
        strings::setnx,
    ),
    c(
        "setrange",
        4,
        W,
        KEY1,
        "string",
        "2.2.0",
        "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.",
        "key offset value",
        strings::setrange,
    ),
    c(
        "shutdown",
        -1,
        &["admin", "noscript", "loading", "stale", "no_multi"],
        NO_KEYS,
        "server",
        "1.0.0",
        "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        "[NOSAVE|SAVE] [NOW] [FORCE] [ABORT]",
        server::shutdown,
    ),
    c(
        "strlen",
        2,
        RF,
        KEY1,
        "string",
        "2.2.0",
        "Returns the length of a string value.",
        "key",
        strings::strlen,
    ),
    c(
        "time",
        1,
        &["loading", "stale", "fast"],
        NO_KEYS,
        "server",
        "2.6.0",
        "Returns the server time.",
        "",
        server::time,
    ),
    c(
        "ttl",
        2,
        RF,
        KEY1,
        "generic",
        "1.0.0",
        "Returns the expiration time in seconds of a key.",
        "key",
        keys::ttl,
    ),
    c(
        "type",
        2,
        RF,
        KEY1,
        "generic",
        "1.0.0",
        "Determines the type of value stored at a key.",
        "key",
        keys::type_,
    ),
    c(
        "unlink",
        -2,
        WDEL,
        KEYS_ALL,
        "generic",
        "4.0.0",
        "Asynchronously deletes one or more keys.",
        "key [key ...]",
        keys::del,
    ),
];

/// The command named `name` (any case).
pub fn lookup(name: &[u8]) -> Option<&'static Command> {
    if name.len() > 16 {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    COMMANDS
        .binary_search_by(|c| c.name.as_bytes().cmp(&lower))
        .ok()
        .and_then(|i| COMMANDS.get(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_found() {
        assert!(COMMANDS.windows(2).all(|w| w[0].name < w[1].name));
        assert_eq!(lookup(b"GeT").map(|c| c.name), Some("get"));
        assert!(lookup(b"nope").is_none());
        for c in COMMANDS {
            for s in c.subcommands {
                assert!(s.name.starts_with(c.name) && s.name.contains('|'));
            }
        }
    }
}
