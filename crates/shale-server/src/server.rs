//! The server: a listener, one thread per connection, and a clean shutdown.
//!
//! Thread per connection rather than an event loop: every engine call blocks (a read may
//! go to disk, a synced write waits for fsync), and blocked threads are what lets the
//! engine's group commit share one fsync among many clients. docs/server.md gives the
//! measurements behind the choice.
//!
//! Shutdown (SIGTERM, SIGINT, SHUTDOWN, or [`ShutdownHandle::shutdown`]): stop accepting,
//! close each connection's read side so that a command being run finishes and its reply is
//! sent, wait for the connection threads, stop the expiry sweep, close the store (which
//! syncs its log). Every acknowledged write is then on disk, whatever `--sync` was.

use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::conn;
use crate::keyspace::{self, Keyspace};
pub use crate::state::{ClientState, Shared, Stats};

/// Stops a running server from another thread. It does not keep the server alive.
#[derive(Clone)]
pub struct ShutdownHandle {
    shared: Weak<Shared>,
}

impl ShutdownHandle {
    /// Begin a clean shutdown; [`Server::run`] returns when it is done.
    pub fn shutdown(&self) {
        if let Some(s) = self.shared.upgrade() {
            s.request_shutdown();
        }
    }
}

/// A bound server, not yet accepting.
pub struct Server {
    shared: Arc<Shared>,
    listener: TcpListener,
}

/// A failure to start or to stop cleanly, for a person.
#[derive(Debug)]
pub struct ServerError(pub String);

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServerError {}

impl From<keyspace::Error> for ServerError {
    fn from(e: keyspace::Error) -> Self {
        ServerError(e.to_string())
    }
}

impl Server {
    /// Open the store and bind the listener.
    ///
    /// # Errors
    /// The store cannot be opened, or the address cannot be bound.
    pub fn bind(config: Config) -> Result<Server, ServerError> {
        if config.max_bulk_len > keyspace::MAX_USER_VALUE {
            return Err(ServerError(format!(
                "--max-bulk-len {} is above the largest value Shale stores ({} bytes)",
                config.max_bulk_len,
                keyspace::MAX_USER_VALUE
            )));
        }
        let keyspace = Keyspace::open_with_clock(
            &config.dir,
            config.design.as_deref(),
            config.sync,
            Arc::clone(&config.clock),
        )?;
        let addr = format!("{}:{}", config.bind, config.port);
        let listener = TcpListener::bind(&addr)
            .or_else(|_| {
                // An IPv6 literal needs brackets.
                TcpListener::bind(format!("[{}]:{}", config.bind, config.port))
            })
            .map_err(|e| ServerError(format!("cannot listen on {addr}: {e}")))?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| ServerError(format!("listener address: {e}")))?;
        Ok(Server {
            shared: Arc::new(Shared::new(Arc::new(keyspace), config, local_addr)),
            listener,
        })
    }

    /// The bound address (with the port chosen when the config said 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.local_addr
    }

    /// The keyspace the server serves, for a caller that embeds the server (tests compact
    /// the store and read it raw through it). Weak: the server closes the store at shutdown
    /// and needs the last reference; upgrade it only for as long as it is used.
    pub fn keyspace(&self) -> std::sync::Weak<Keyspace> {
        Arc::downgrade(&self.shared.keyspace)
    }

    /// A handle that stops the server.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// Accept and serve connections until shutdown, then close the store.
    ///
    /// # Errors
    /// The store failed to close (its final log sync).
    pub fn run(self) -> Result<(), ServerError> {
        let shared = self.shared;
        let stop_sweep = Arc::new(AtomicBool::new(false));
        let sweep = {
            let ks = Arc::clone(&shared.keyspace);
            let rate = shared.config.expire_scan_rate;
            let stop = Arc::clone(&stop_sweep);
            std::thread::Builder::new()
                .name("expire-sweep".into())
                .spawn(move || keyspace::sweep::run(ks, rate, stop))
                .map_err(|e| ServerError(format!("cannot start the expiry sweep: {e}")))?
        };
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        for stream in self.listener.incoming() {
            if shared.stopping() {
                break;
            }
            threads.retain(|t| !t.is_finished());
            match stream {
                Ok(s) => {
                    if let Some(t) = accept(&shared, s) {
                        threads.push(t);
                    }
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    eprintln!("shale-server: accept: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        drop(self.listener);
        // Close the read side: idle connections see end of input, busy ones finish their
        // command and send its reply.
        for s in shared.clients.lock().values() {
            let _ = s.shutdown(Shutdown::Read);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        // A client that does not read its replies keeps its thread in a write: cut it.
        for s in shared.clients.lock().values() {
            let _ = s.shutdown(Shutdown::Both);
        }
        for t in threads {
            let _ = t.join();
        }
        stop_sweep.store(true, Ordering::Relaxed);
        let _ = sweep.join();
        // A shutdown handle may hold the state for the instant of its call.
        let mut shared = shared;
        let deadline = Instant::now() + Duration::from_secs(5);
        let shared = loop {
            match Arc::try_unwrap(shared) {
                Ok(s) => break s,
                Err(s) if Instant::now() < deadline => {
                    shared = s;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return Err(ServerError("a connection outlived shutdown".into())),
            }
        };
        let keyspace = Arc::try_unwrap(shared.keyspace)
            .map_err(|_| ServerError("the keyspace outlived shutdown".into()))?;
        keyspace.close()?;
        Ok(())
    }
}

/// Register and start a connection, or refuse it (maxclients).
fn accept(shared: &Arc<Shared>, stream: TcpStream) -> Option<JoinHandle<()>> {
    let addr = stream.peer_addr().ok()?;
    // Shared with the registry (not duplicated: one descriptor per client).
    let stream = Arc::new(stream);
    let id = shared.next_client_id();
    {
        let mut clients = shared.clients.lock();
        if clients.len() >= shared.config.maxclients {
            drop(clients);
            shared.stats.rejected.fetch_add(1, Ordering::Relaxed);
            let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
            let _ = (&*stream).write_all(b"-ERR max number of clients reached\r\n");
            return None;
        }
        clients.insert(id, Arc::clone(&stream));
    }
    shared.stats.connections.fetch_add(1, Ordering::Relaxed);
    let client = ClientState {
        id,
        addr,
        authenticated: shared.config.requirepass.is_none(),
        name: None,
        lib_name: None,
        lib_ver: None,
        unsynced: false,
    };
    let sh = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name(format!("client-{id}"))
        .stack_size(512 << 10)
        .spawn(move || {
            conn::serve(&sh, stream, client);
            sh.deregister(id);
        });
    match spawned {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("shale-server: cannot start a thread for client {id}: {e}");
            shared.deregister(id);
            None
        }
    }
}
