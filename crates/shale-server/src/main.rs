//! `shale-server`: serve a Shale store over the Redis protocol.
//!
//! Exit status: 0 after a clean shutdown (SIGTERM, SIGINT or SHUTDOWN), 1 when the server
//! cannot start or the store fails to close (the message goes to stderr).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use shale_server::config::parse_size;
use shale_server::{Config, Server, SyncMode};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Serve a Shale store over the Redis protocol (RESP2 and RESP3).
#[derive(Parser, Debug)]
#[command(name = "shale-server", version)]
struct Args {
    /// The store's directory (created if missing).
    #[arg(long)]
    dir: PathBuf,
    /// Design preset: leveldb, pebblesdb or wisckey. Default: an existing store opens with
    /// the options it records; a new one gets the engine's defaults (the leveldb design
    /// with 64 MiB memtables).
    #[arg(long)]
    design: Option<String>,
    /// TCP port.
    #[arg(long, default_value_t = 6380)]
    port: u16,
    /// Address to listen on. The default accepts local clients only.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// Password of the `default` user; clients must AUTH (or HELLO AUTH) first.
    #[arg(long, conflicts_with = "requirepass_file")]
    requirepass: Option<String>,
    /// Read the password from the first line of this file (keeps it out of `ps`).
    #[arg(long)]
    requirepass_file: Option<PathBuf>,
    /// When an acknowledged write is on disk: always (before its reply), batch (before the
    /// replies of each pipeline), none (left to the OS; survives a server crash only).
    #[arg(long, default_value = "always", value_parser = SyncMode::parse)]
    sync: SyncMode,
    /// Connections served at once.
    #[arg(long, default_value_t = 10_000)]
    maxclients: usize,
    /// Close a connection idle this many seconds (0: never).
    #[arg(long, default_value_t = 0)]
    timeout: u64,
    /// Largest bulk string (argument) a client may send, e.g. 64mb.
    #[arg(long, default_value = "64mb", value_parser = parse_size)]
    max_bulk_len: usize,
    /// Largest request (all arguments of one command), e.g. 128mb.
    #[arg(long, default_value = "128mb", value_parser = parse_size)]
    max_request_size: usize,
    /// Keys per second the active expiry sweep examines (0: only lazy expiry).
    #[arg(long, default_value_t = 20_000)]
    expire_scan_rate: u64,
}

fn config(a: Args) -> Result<Config, String> {
    let requirepass = match (a.requirepass, a.requirepass_file) {
        (Some(p), _) => Some(p.into_bytes()),
        (None, Some(f)) => {
            let text = std::fs::read_to_string(&f)
                .map_err(|e| format!("cannot read --requirepass-file {}: {e}", f.display()))?;
            let line = text.lines().next().unwrap_or("").to_string();
            if line.is_empty() {
                return Err(format!("--requirepass-file {} is empty", f.display()));
            }
            Some(line.into_bytes())
        }
        (None, None) => None,
    };
    Ok(Config {
        dir: a.dir,
        design: a.design,
        bind: a.bind,
        port: a.port,
        requirepass,
        sync: a.sync,
        maxclients: a.maxclients.max(1),
        timeout: (a.timeout > 0).then(|| Duration::from_secs(a.timeout)),
        max_bulk_len: a.max_bulk_len,
        max_request_size: a.max_request_size,
        expire_scan_rate: a.expire_scan_rate,
        clock: std::sync::Arc::new(shale::ttl::SystemClock),
    })
}

/// Descriptors besides clients: the store's files, the listener, stdio.
const RESERVED_FDS: u64 = 1024;

/// Raise the soft open-file limit towards `maxclients` plus the store's files, as Redis
/// does; say so when the hard limit is lower.
#[cfg(target_os = "linux")]
fn raise_fd_limit(maxclients: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let want = maxclients + RESERVED_FDS;
    let cur = getrlimit(Resource::Nofile);
    let hard = cur.maximum.unwrap_or(u64::MAX);
    let soft = cur.current.unwrap_or(u64::MAX);
    let target = want.min(hard);
    if soft < target {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(target),
                maximum: cur.maximum,
            },
        );
    }
    if target < want {
        eprintln!(
            "shale-server: the open-file limit is {hard}: fewer than --maxclients {maxclients} \
             clients may connect (raise it with ulimit -n)"
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn raise_fd_limit(_maxclients: u64) {}

fn main() -> ExitCode {
    let config = match config(Args::parse()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("shale-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (dir, sync) = (config.dir.clone(), config.sync);
    raise_fd_limit(config.maxclients as u64);
    let server = match Server::bind(config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("shale-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let handle = server.shutdown_handle();
    let mut signals = match Signals::new([SIGTERM, SIGINT]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("shale-server: cannot handle signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    let signal_thread = std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            eprintln!("shale-server: signal {sig}, shutting down");
            handle.shutdown();
        }
    });
    eprintln!(
        "shale-server: ready on {} (store {}, --sync {})",
        server.local_addr(),
        dir.display(),
        sync.name()
    );
    let result = server.run();
    drop(signal_thread); // it ends with the process
    match result {
        Ok(()) => {
            eprintln!("shale-server: store closed, bye");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("shale-server: {e}");
            ExitCode::FAILURE
        }
    }
}
