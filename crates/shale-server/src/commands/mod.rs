//! The commands: a table ([`table`]) and the dispatcher that checks a request the way
//! Redis's `processCommand` does, in the same order and with the same texts: unknown
//! command or subcommand, then arity, then authentication.
//!
//! Handlers write their reply into the connection's [`ReplyWriter`] and return a [`Flow`].
//! Errors a client caused are replies; a `keyspace::Error` (the store failed) becomes
//! `-ERR <what happened>`. A handler writes exactly one reply, after any write it makes has
//! been committed, so a failed commit is never half-acknowledged.

pub mod connection;
pub mod keys;
pub mod server;
pub mod strings;
pub mod table;

use std::sync::atomic::Ordering;

use crate::keyspace::{self, Keyspace, Writes};
use crate::resp::reply::ReplyWriter;
use crate::state::{ClientState, Shared};
use table::Command;

/// What the connection does after a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next command.
    Continue,
    /// Send the replies so far, then close (QUIT).
    Close,
    /// Close, and shut the server down (SHUTDOWN).
    Shutdown,
}

/// What a handler returns.
pub type CmdResult = Result<Flow, keyspace::Error>;

/// What a handler sees.
pub struct Ctx<'a> {
    /// The server's shared state.
    pub shared: &'a Shared,
    /// This connection's state.
    pub client: &'a mut ClientState,
    /// This connection's replies.
    pub out: &'a mut ReplyWriter,
}

impl Ctx<'_> {
    /// The keyspace.
    pub fn ks(&self) -> &Keyspace {
        &self.shared.keyspace
    }

    /// Commit `writes`, remembering that the connection owes a sync before its replies
    /// (mode `batch`).
    ///
    /// # Errors
    /// The engine's.
    pub fn commit(&mut self, writes: Writes) -> Result<(), keyspace::Error> {
        if self.shared.keyspace.commit(writes)? {
            self.client.unsynced = true;
        }
        Ok(())
    }

    /// Reply with an error and continue.
    pub fn error(&mut self, msg: &str) -> CmdResult {
        self.out.error(msg);
        Ok(Flow::Continue)
    }
}

/// Redis's `shared.syntaxerr`.
pub const SYNTAX_ERR: &str = "ERR syntax error";
/// Redis's error for a bad integer argument.
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
/// Redis's error for a bad float argument.
pub const NOT_FLOAT: &str = "ERR value is not a valid float";

/// Run one request.
pub fn dispatch(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> Flow {
    let Some(name) = args.first() else {
        return Flow::Continue;
    };
    let Some(base) = table::lookup(name) else {
        ctx.out.error(&unknown_command(args));
        return Flow::Continue;
    };
    let cmd: &Command = if base.subcommands.is_empty() || args.len() == 1 {
        base
    } else {
        match base
            .subcommands
            .iter()
            .find(|s| s.sub_name().as_bytes().eq_ignore_ascii_case(&args[1]))
        {
            Some(s) => s,
            None => {
                ctx.out.error(&format!(
                    "ERR unknown subcommand '{}'. Try {} HELP.",
                    clip(&args[1], 128),
                    base.name.to_ascii_uppercase()
                ));
                return Flow::Continue;
            }
        }
    };
    let argc = args.len() as i32;
    if (cmd.arity > 0 && cmd.arity != argc) || argc < -cmd.arity {
        ctx.out.error(&format!(
            "ERR wrong number of arguments for '{}' command",
            cmd.name
        ));
        return Flow::Continue;
    }
    if !ctx.client.authenticated && !cmd.flags.contains(&"no_auth") {
        ctx.out.error("NOAUTH Authentication required.");
        return Flow::Continue;
    }
    ctx.shared.stats.commands.fetch_add(1, Ordering::Relaxed);
    match (cmd.handler)(ctx, args) {
        Ok(flow) => flow,
        Err(e) => {
            ctx.out.error(&format!("ERR {e}"));
            Flow::Continue
        }
    }
}

/// Redis's text for an unknown command: the name and the first arguments, quoted.
fn unknown_command(args: &[Vec<u8>]) -> String {
    let mut quoted = String::new();
    for a in args.iter().skip(1) {
        if quoted.len() >= 128 {
            break;
        }
        let room = 128 - quoted.len();
        quoted.push('\'');
        quoted.push_str(&clip(a, room));
        quoted.push_str("' ");
    }
    format!(
        "ERR unknown command '{}', with args beginning with: {quoted}",
        clip(&args[0], 128)
    )
}

/// At most `n` bytes of `b`, as text.
fn clip(b: &[u8], n: usize) -> String {
    String::from_utf8_lossy(&b[..b.len().min(n)]).into_owned()
}
