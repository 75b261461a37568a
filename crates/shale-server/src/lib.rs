//! shale-server: the Redis protocol over a Shale store.
//!
//! One store per server, one thread per connection. Clients speak RESP2 or RESP3 (after
//! `HELLO 3`), pipelined or not, or inline commands; the commands are Redis's string and
//! key commands with Redis's replies and error texts (docs/server.md lists them and where
//! they differ).
//!
//! ```text
//! conn ──> resp::request ──> commands::dispatch ──> commands::{strings,keys,...}
//!   ^                                                     │
//!   └──── resp::reply <───────────────────────────────────┤
//!                                    keyspace (locks, expiry, layout) ──> shale::Db
//! ```
//!
//! [`server::Server`] is the whole server; `main.rs` only parses flags and handles signals,
//! so tests run it in-process.

pub mod commands;
pub mod config;
pub mod conn;
pub mod glob;
pub mod keyspace;
pub mod number;
pub mod resp;
pub mod server;
pub mod state;

pub use config::{Config, SyncMode};
pub use server::{Server, ServerError, ShutdownHandle};
