//! One connection: read, run every complete command in what was read (a pipeline), send
//! the replies, repeat.
//!
//! A protocol error is answered and the connection closed; no other connection notices.
//! With `--sync batch`, the log is synced before any reply to a write leaves.
//!
//! Replies are sent without waiting; when the socket has no room for them, they are sent
//! while the connection is still read. A client that writes a whole pipeline before it
//! reads a reply (redis-py does) would otherwise block on its write while this thread
//! blocks on its own; Redis, an event loop, never does. What is read meanwhile waits in
//! the input, up to `--max-request-size` of it. Inside a pipeline, replies go out every
//! [`FLUSH_AT`] bytes.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::commands::{self, Ctx, Flow};
use crate::resp::reply::ReplyWriter;
use crate::resp::request::{Limits, RequestParser};
use crate::state::{ClientState, Shared};

/// Size of one read.
const READ_SIZE: usize = 16 << 10;

/// Replies beyond this many bytes are sent while reading, even inside a pipeline.
const FLUSH_AT: usize = 64 << 10;

/// One connection's buffers and state.
struct Conn<'a> {
    shared: &'a Shared,
    stream: &'a TcpStream,
    client: ClientState,
    out: ReplyWriter,
    /// Bytes read and not yet parsed (from `parsed` on).
    input: Vec<u8>,
    /// The peer closed its side while replies were being sent.
    peer_closed: bool,
    /// Input arrived while replies were being sent: parse it before reading again.
    fresh_input: bool,
}

/// Serve `stream` until the client leaves, errs, idles out, or the server stops.
pub fn serve(shared: &Shared, stream: Arc<TcpStream>, client: ClientState) {
    let stream: &TcpStream = &stream;
    let _ = stream.set_nodelay(true);
    if let Some(t) = shared.config.timeout {
        let _ = stream.set_read_timeout(Some(t));
        let _ = stream.set_write_timeout(Some(t));
    }
    let limits = Limits {
        max_bulk_len: shared.config.max_bulk_len,
        max_request_size: shared.config.max_request_size,
    };
    let mut c = Conn {
        shared,
        stream,
        client,
        out: ReplyWriter::new(),
        input: Vec::with_capacity(READ_SIZE),
        peer_closed: false,
        fresh_input: false,
    };
    let mut parser = RequestParser::new();
    let mut chunk = vec![0u8; READ_SIZE];
    loop {
        if c.fresh_input {
            c.fresh_input = false;
        } else {
            if c.peer_closed {
                return;
            }
            let mut reader = c.stream;
            let n = match reader.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // Idle timeout (WouldBlock/TimedOut), reset, or shutdown: close.
                Err(_) => return,
            };
            shared.stats.net_in.fetch_add(n as u64, Ordering::Relaxed);
            c.input.extend_from_slice(&chunk[..n]);
        }
        let mut pos = 0;
        let mut close = false;
        loop {
            match parser.next(&c.input, &mut pos, &limits, c.client.authenticated) {
                Ok(Some(args)) => {
                    let mut ctx = Ctx {
                        shared,
                        client: &mut c.client,
                        out: &mut c.out,
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
                    if c.out.buf.len() >= FLUSH_AT && !c.send(pos) {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    c.out.error(&e.0);
                    close = true;
                    break;
                }
            }
        }
        c.input.drain(..pos);
        if c.input.capacity() > 4 * READ_SIZE && c.input.len() < READ_SIZE && !parser.in_request() {
            c.input.shrink_to(READ_SIZE);
        }
        if !c.send(0) || close || shared.stopping() {
            return;
        }
    }
}

impl Conn<'_> {
    /// Sync if a write is owed one, then send the waiting replies; if the socket does not
    /// take them at once, keep reading into the input while sending (`parsed` bytes of the
    /// input are already consumed). False if the connection is unusable.
    fn send(&mut self, parsed: usize) -> bool {
        if self.client.unsynced {
            self.client.unsynced = false;
            if let Err(e) = self.shared.keyspace.sync_log() {
                // Applied but not known durable: say so instead of acknowledging.
                self.out.buf.clear();
                self.out.error(&format!("ERR {e}"));
                let _ = { self.stream }.write_all(&self.out.buf);
                return false;
            }
        }
        if self.out.buf.is_empty() {
            return true;
        }
        let ok = self.send_while_reading(parsed).is_ok();
        self.shared
            .stats
            .net_out
            .fetch_add(self.out.buf.len() as u64, Ordering::Relaxed);
        self.out.buf.clear();
        if self.out.buf.capacity() > 4 * FLUSH_AT {
            self.out.buf.shrink_to(FLUSH_AT);
        }
        ok
    }

    /// Send every reply. The first attempt does not wait (one system call when the socket
    /// takes it all, the usual case); while the rest waits for room, input is read as it
    /// arrives, up to `--max-request-size` of it.
    #[cfg(unix)]
    fn send_while_reading(&mut self, parsed: usize) -> std::io::Result<()> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        use rustix::net::{RecvFlags, SendFlags, recv, send};
        let would_block = |e: &rustix::io::Errno| {
            *e == rustix::io::Errno::WOULDBLOCK || *e == rustix::io::Errno::INTR
        };
        let stream = self.stream;
        let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
        let mut sent = match send(stream, &self.out.buf, flags) {
            Ok(n) => n,
            Err(e) if would_block(&e) => 0,
            Err(e) => return Err(e.into()),
        };
        let limit = self.shared.config.max_request_size + READ_SIZE;
        let timeout = self.shared.config.timeout.map(|t: Duration| Timespec {
            tv_sec: t.as_secs() as i64,
            tv_nsec: i64::from(t.subsec_nanos()),
        });
        let mut chunk = Vec::new();
        while sent < self.out.buf.len() {
            let read = !self.peer_closed && self.input.len() - parsed < limit;
            let wanted = if read {
                PollFlags::OUT | PollFlags::IN
            } else {
                PollFlags::OUT
            };
            let mut fds = [PollFd::new(&stream, wanted)];
            match poll(&mut fds, timeout.as_ref()) {
                Ok(0) => return Err(ErrorKind::TimedOut.into()),
                Ok(_) => {}
                Err(e) if would_block(&e) => continue,
                Err(e) => return Err(e.into()),
            }
            let ready = fds[0].revents();
            if ready.intersects(PollFlags::OUT | PollFlags::ERR | PollFlags::HUP) {
                match send(stream, &self.out.buf[sent..], flags) {
                    Ok(n) => sent += n,
                    Err(e) if would_block(&e) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            if read && ready.intersects(PollFlags::IN | PollFlags::HUP) {
                chunk.resize(READ_SIZE, 0);
                match recv(stream, &mut chunk[..], RecvFlags::DONTWAIT) {
                    Ok((0, _)) => self.peer_closed = true,
                    Ok((n, _)) => {
                        self.shared
                            .stats
                            .net_in
                            .fetch_add(n as u64, Ordering::Relaxed);
                        self.input.extend_from_slice(&chunk[..n]);
                        self.fresh_input = true;
                    }
                    Err(e) if would_block(&e) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    #[cfg(not(unix))]
    fn send_while_reading(&mut self, _parsed: usize) -> std::io::Result<()> {
        { self.stream }.write_all(&self.out.buf)
    }
}
