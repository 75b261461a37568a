//! Peer engines (RocksDB, fjall) behind the [`Engine`](crate::engine::Engine) trait.
//!
//! Built only with the `peers` feature. The peer crates are not dependencies yet: each
//! engine is added here as a type implementing `Engine`, and `open` dispatches to it.

use std::path::Path;

use crate::CliError;
use crate::engine::{Engine, EngineConfig, EngineKind, EngineResult};

/// Open the peer engine `kind` on `path`.
///
/// # Errors
/// Until the peer crates are wired in, every peer reports that it is missing.
pub fn open(
    kind: EngineKind,
    _path: &Path,
    _config: &EngineConfig,
) -> EngineResult<Box<dyn Engine>> {
    Err(CliError::msg(format!(
        "engine {} is declared but its crate is not wired in yet (crates/shale-cli/src/peers.rs)",
        kind.name()
    )))
}
