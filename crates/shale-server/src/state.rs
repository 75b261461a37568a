//! What the server's parts share: the state every connection sees ([`Shared`]: the
//! keyspace, the settings, the counters, the open connections) and the state of one
//! connection ([`ClientState`]). Commands read and change it; the server and the
//! connections own it. It imports neither, so the dependencies run one way:
//! `server` -> `conn` -> `commands` -> `state`.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::config::Config;
use crate::keyspace::Keyspace;

/// Server-wide counters for INFO.
#[derive(Default)]
pub struct Stats {
    /// Connections accepted.
    pub connections: AtomicU64,
    /// Connections refused (maxclients).
    pub rejected: AtomicU64,
    /// Commands run.
    pub commands: AtomicU64,
    /// Bytes read from clients.
    pub net_in: AtomicU64,
    /// Bytes written to clients.
    pub net_out: AtomicU64,
}

/// What every connection shares. Thread-safe.
pub struct Shared {
    /// The data.
    pub keyspace: Arc<Keyspace>,
    /// The settings.
    pub config: Config,
    /// Counters.
    pub stats: Stats,
    /// The address the listener is bound to.
    pub local_addr: SocketAddr,
    /// When the server started.
    pub started: Instant,
    /// Open connections by client id: a handle on each socket, to close it at shutdown.
    pub(crate) clients: Mutex<HashMap<u64, Arc<TcpStream>>>,
    next_id: AtomicU64,
    stopping: AtomicBool,
}

impl Shared {
    /// The state of a server listening on `local_addr` (for another front end than
    /// [`Server`], such as the event-loop variant measured in docs/benchmarks.md).
    pub fn new(keyspace: Arc<Keyspace>, config: Config, local_addr: SocketAddr) -> Shared {
        Shared {
            keyspace,
            config,
            stats: Stats::default(),
            local_addr,
            started: Instant::now(),
            clients: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            stopping: AtomicBool::new(false),
        }
    }

    /// A new client id.
    pub fn next_client_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Open connections.
    pub fn connected(&self) -> usize {
        self.clients.lock().len()
    }

    /// True once shutdown has begun.
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Begin shutdown: the accept loop wakes and stops.
    pub fn request_shutdown(&self) {
        if self.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        // Wake the blocking accept with a connection of our own.
        let ip = match self.local_addr.ip() {
            IpAddr::V4(a) if a.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(a) if a.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        let _ = TcpStream::connect_timeout(
            &SocketAddr::new(ip, self.local_addr.port()),
            Duration::from_secs(1),
        );
    }

    pub(crate) fn deregister(&self, id: u64) {
        self.clients.lock().remove(&id);
    }
}

/// The state of one connection.
#[derive(Debug)]
pub struct ClientState {
    /// CLIENT ID.
    pub id: u64,
    /// The peer.
    pub addr: SocketAddr,
    /// AUTH (or HELLO AUTH) succeeded, or no password is set.
    pub authenticated: bool,
    /// CLIENT SETNAME.
    pub name: Option<Vec<u8>>,
    /// CLIENT SETINFO LIB-NAME.
    pub lib_name: Option<Vec<u8>>,
    /// CLIENT SETINFO LIB-VER.
    pub lib_ver: Option<Vec<u8>>,
    /// A write was committed without a sync (mode `batch`): sync before replying.
    pub unsynced: bool,
}
