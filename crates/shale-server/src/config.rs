//! The server's settings, as the command line gives them.

use std::path::PathBuf;
use std::sync::Arc;

use shale::ttl::{Clock, SystemClock};
use std::time::Duration;

/// When an acknowledged write is on disk. See docs/server.md, "Durability".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// Every write command's log record is synced before its reply is sent (concurrent
    /// clients share one fsync through the engine's group commit). An acknowledged write
    /// survives a machine crash.
    Always,
    /// The commands of one read from a connection (a pipeline) run without syncing, and the
    /// log is synced once before their replies are sent: the same promise as `always`,
    /// one fsync per pipeline instead of per command. Another client may read a write
    /// before it is synced.
    Batch,
    /// The server never syncs: an acknowledged write survives a crash of the server process
    /// (it is in the operating system's page cache), not a machine crash. A clean shutdown
    /// syncs everything.
    None,
}

impl SyncMode {
    /// Parse `always`, `batch` or `none`.
    ///
    /// # Errors
    /// A message naming the accepted values.
    pub fn parse(s: &str) -> Result<SyncMode, String> {
        match s {
            "always" => Ok(SyncMode::Always),
            "batch" => Ok(SyncMode::Batch),
            "none" => Ok(SyncMode::None),
            _ => Err(format!(
                "unknown sync mode {s:?}: expected always, batch or none"
            )),
        }
    }

    /// The name `parse` accepts.
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Always => "always",
            SyncMode::Batch => "batch",
            SyncMode::None => "none",
        }
    }
}

/// Everything the server needs to start.
#[derive(Clone, Debug)]
pub struct Config {
    /// The store's directory (created if missing).
    pub dir: PathBuf,
    /// A design preset (`leveldb`, `wisckey`, `pebblesdb`); `None` for `Options::default()`.
    pub design: Option<String>,
    /// Address to listen on.
    pub bind: String,
    /// TCP port; 0 picks a free one (tests).
    pub port: u16,
    /// The password of the `default` user; `None` lets every client in.
    pub requirepass: Option<Vec<u8>>,
    /// Durability of acknowledged writes.
    pub sync: SyncMode,
    /// Connections served at once; one more is refused with Redis's error.
    pub maxclients: usize,
    /// Close a connection idle this long; `None` never does (Redis's `timeout 0`).
    pub timeout: Option<Duration>,
    /// The largest bulk string a client may send, in bytes.
    pub max_bulk_len: usize,
    /// The largest request (all arguments of one command), in bytes.
    pub max_request_size: usize,
    /// Keys the active expiry sweep examines per second (0 turns it off; expired keys are
    /// then still never returned, and deleted when read).
    pub expire_scan_rate: u64,
    /// The clock every expiry is read against (milliseconds since the Unix epoch). The
    /// system clock; tests give a `shale::ttl::ManualClock` to move time themselves.
    pub clock: Arc<dyn Clock>,
}

impl Config {
    /// Defaults for a store in `dir`: loopback, port 6380, no password, `--sync always`.
    pub fn new(dir: impl Into<PathBuf>) -> Config {
        Config {
            dir: dir.into(),
            design: None,
            bind: "127.0.0.1".to_string(),
            port: 6380,
            requirepass: None,
            sync: SyncMode::Always,
            maxclients: 10_000,
            timeout: None,
            max_bulk_len: 64 << 20,
            max_request_size: 128 << 20,
            expire_scan_rate: 20_000,
            clock: Arc::new(SystemClock),
        }
    }
}

/// Parse a size as Redis's config does: `1048576`, `64mb`, `1gb`, `512kb` (or `k`, `m`,
/// `g` for powers of 1000).
///
/// # Errors
/// A message quoting the input.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let lower = s.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (digits, unit) = lower.split_at(split);
    let n: usize = digits
        .parse()
        .map_err(|_| format!("invalid size {s:?}: expected a number like 1048576 or 64mb"))?;
    let mult: usize = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1 << 10,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return Err(format!("invalid size unit in {s:?}: expected kb, mb or gb")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("64mb"), Ok(64 << 20));
        assert_eq!(parse_size("1GB"), Ok(1 << 30));
        assert_eq!(parse_size("2k"), Ok(2000));
        assert!(parse_size("x").is_err());
        assert!(parse_size("1tb").is_err());
    }
}
