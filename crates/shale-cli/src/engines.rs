//! Which engine a benchmark runs: Shale, or a peer built in with the `peers` feature. The
//! one place that knows both (`engine` defines the trait and Shale's side, `peers` the
//! peers'; neither imports the other's dispatch).

use std::path::Path;

use shale::Db;

use crate::CliError;
use crate::engine::{
    Engine, EngineConfig, EngineKind, EngineResult, ShaleEngine, shale_options, shale_settings,
};

/// Open the engine `kind` on directory `path`.
///
/// # Errors
/// The engine's open error, or a peer engine asked for in a build without it.
pub fn open(kind: EngineKind, path: &Path, config: &EngineConfig) -> EngineResult<Box<dyn Engine>> {
    match kind {
        EngineKind::Shale if config.memory_only => {
            Ok(Box::new(crate::engine::MemoryOnlyEngine::open(config)?))
        }
        _ if config.memory_only => Err(CliError::msg(
            "--memory-only runs Shale's memory components alone; it has no peer engine",
        )),
        EngineKind::Shale => {
            let o = shale_options(config)?;
            let describe = shale_settings(&o);
            let db = Db::open(path, o)?;
            Ok(Box::new(ShaleEngine::new(db, describe)))
        }
        EngineKind::Rocksdb | EngineKind::RocksdbTuned | EngineKind::Fjall => {
            open_peer(kind, path, config)
        }
    }
}

#[cfg(not(feature = "peers"))]
fn open_peer(
    kind: EngineKind,
    _path: &Path,
    _config: &EngineConfig,
) -> EngineResult<Box<dyn Engine>> {
    Err(CliError::msg(format!(
        "engine {} is not built into this binary; rebuild with `cargo build --release -p shale-cli --features peers`",
        kind.name()
    )))
}

#[cfg(feature = "peers")]
fn open_peer(
    kind: EngineKind,
    path: &Path,
    config: &EngineConfig,
) -> EngineResult<Box<dyn Engine>> {
    crate::peers::open(kind, path, config)
}

/// Only the default build has tests here: the peers' own are in `peers.rs`.
#[cfg(all(test, not(feature = "peers")))]
mod tests {
    use super::*;
    use crate::engine::VlogSettings;
    use shale::Compression;

    #[test]
    fn peers_need_the_feature() {
        let c = EngineConfig {
            design: "leveldb".into(),
            settings: shale::PresetSettings::Tuned,
            axes: Default::default(),
            write_buffer_size: Some(1 << 20),
            cache_size: 0,
            compression: Compression::None,
            bloom_bits: 10,
            block_size: None,
            memtable_bloom_ratio: None,
            memtables_to_merge: None,
            max_background_compactions: None,
            level0_compaction_trigger: None,
            max_sstables_per_guard: None,
            flsm_policy: None,
            parallel_seek_min_tables: None,
            vlog: VlogSettings::default(),
            flodb: Default::default(),
            lwc: Default::default(),
            mmap_reads: None,
            mmap_log_writes: None,
            verify_checksums: None,
            memory_only: false,
        };
        for kind in [
            EngineKind::Rocksdb,
            EngineKind::RocksdbTuned,
            EngineKind::Fjall,
        ] {
            let e = open(kind, Path::new("/nonexistent"), &c)
                .err()
                .unwrap()
                .to_string();
            assert!(
                e.contains(&format!("engine {} is not built", kind.name()))
                    && e.contains("--features peers"),
                "{e}"
            );
        }
    }
}
