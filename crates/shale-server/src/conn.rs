//! One connection: read, run every complete command in what was read (a pipeline), send
//! the replies in one write, repeat.
//!
//! A protocol error is answered and the connection closed; no other connection notices.
//! Memory per connection is bounded by `--max-request-size` for the request being read
//! and by [`FLUSH_AT`] for replies waiting to be sent (a longer pipeline's replies are sent
//! in pieces). With `--sync batch`, the log is synced before any reply to a write leaves.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::commands::{self, Ctx, Flow};
use crate::resp::reply::ReplyWriter;
use crate::resp::request::{Limits, RequestParser};
use crate::server::{ClientState, Shared};

/// Size of one read.
const READ_SIZE: usize = 16 << 10;

/// Replies are sent once this many bytes wait, even inside a pipeline.
const FLUSH_AT: usize = 64 << 10;

/// Serve `stream` until the client leaves, errs, idles out, or the server stops.
pub fn serve(shared: &Shared, stream: Arc<TcpStream>, mut client: ClientState) {
    let mut stream: &TcpStream = &stream;
    let _ = stream.set_nodelay(true);
    if let Some(t) = shared.config.timeout {
        let _ = stream.set_read_timeout(Some(t));
        let _ = stream.set_write_timeout(Some(t));
    }
    let limits = Limits {
        max_bulk_len: shared.config.max_bulk_len,
        max_request_size: shared.config.max_request_size,
    };
    let mut parser = RequestParser::new();
    let mut input: Vec<u8> = Vec::with_capacity(READ_SIZE);
    let mut chunk = vec![0u8; READ_SIZE];
    let mut out = ReplyWriter::new();
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // Idle timeout (WouldBlock/TimedOut), reset, or shutdown: close.
            Err(_) => return,
        };
        shared.stats.net_in.fetch_add(n as u64, Ordering::Relaxed);
        input.extend_from_slice(&chunk[..n]);
        let mut pos = 0;
        let mut close = false;
        loop {
            match parser.next(&input, &mut pos, &limits, client.authenticated) {
                Ok(Some(args)) => {
                    let mut ctx = Ctx {
                        shared,
                        client: &mut client,
                        out: &mut out,
                    };
                    match commands::dispatch(&mut ctx, &args) {
                        Flow::Continue => {}
                        Flow::Close => close = true,
                        Flow::Shutdown => {
                            shared.request_shutdown();
                            close = true;
                        }
                    }
                    if close {
                        break;
                    }
                    if out.buf.len() >= FLUSH_AT && !send(shared, stream, &mut client, &mut out) {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    out.error(&e.0);
                    close = true;
                    break;
                }
            }
        }
        input.drain(..pos);
        if input.capacity() > 4 * READ_SIZE && input.len() < READ_SIZE && !parser.in_request() {
            input.shrink_to(READ_SIZE);
        }
        if !send(shared, stream, &mut client, &mut out) || close || shared.stopping() {
            return;
        }
    }
}

/// Sync if a write is owed one, then send the waiting replies. False if the connection is
/// unusable.
fn send(
    shared: &Shared,
    mut stream: &TcpStream,
    client: &mut ClientState,
    out: &mut ReplyWriter,
) -> bool {
    if client.unsynced {
        client.unsynced = false;
        if let Err(e) = shared.keyspace.sync_log() {
            // The writes are applied but not known durable: say so instead of acknowledging.
            out.buf.clear();
            out.error(&format!("ERR {e}"));
            let _ = stream.write_all(&out.buf);
            return false;
        }
    }
    if out.buf.is_empty() {
        return true;
    }
    let ok = stream.write_all(&out.buf).is_ok();
    shared
        .stats
        .net_out
        .fetch_add(out.buf.len() as u64, Ordering::Relaxed);
    out.buf.clear();
    if out.buf.capacity() > 4 * FLUSH_AT {
        out.buf.shrink_to(FLUSH_AT);
    }
    ok
}
