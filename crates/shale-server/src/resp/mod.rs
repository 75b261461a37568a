//! RESP, the Redis serialization protocol: requests in ([`request`]), replies out
//! ([`reply`]).
//!
//! Written here rather than taken from a crate: a server parses only arrays of bulk strings
//! and inline commands, must answer malformed input with Redis's exact error texts, must
//! check declared sizes before it waits for (or allocates) a body, and must keep the state
//! of a half-read request between reads. The general-purpose decoders (`redis-protocol`,
//! `resp-rs`) decode any frame a server might send, re-parse a partial frame from its start
//! on every read, and have no inline commands; the tests use `redis-protocol` as an
//! independent decoder of this server's replies.

pub mod reply;
pub mod request;
