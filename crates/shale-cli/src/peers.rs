//! Peer engines (RocksDB, fjall) behind the [`Engine`](crate::engine::Engine) trait.
//!
//! Built only with the `peers` feature. `rocksdb` and `fjall` are configured from Shale's own
//! defaults (`Options::default()`: the `leveldb` design with 64 MiB memtables, where the
//! `leveldb` preset has 4 MiB) plus the flags in [`EngineConfig`], so a comparison differs in
//! the engine and not in the tuning; where a peer has no equivalent setting, its
//! [`describe`](crate::engine::Engine::describe) lines say so. `rocksdb-tuned` is RocksDB as
//! its users configure it instead (its defaults plus its tuning guide's settings), with the
//! run's memtable (the design's unless `--write-buffer-size`), block cache and bloom bits.

mod fjall_db;
mod rocks;

use std::path::Path;

use shale::Options;

use crate::CliError;
use crate::engine::{Engine, EngineConfig, EngineKind, EngineResult};

/// Open the peer engine `kind` on `path`.
///
/// # Errors
/// The peer's open error; `EngineKind::Shale` is not a peer.
pub fn open(kind: EngineKind, path: &Path, config: &EngineConfig) -> EngineResult<Box<dyn Engine>> {
    let tuning = Tuning::new(config);
    match kind {
        EngineKind::Rocksdb => Ok(Box::new(rocks::RocksEngine::open(
            path,
            &tuning,
            rocks::Config::Mirror,
        )?)),
        EngineKind::RocksdbTuned => Ok(Box::new(rocks::RocksEngine::open(
            path,
            &tuning,
            rocks::Config::Tuned,
        )?)),
        EngineKind::Fjall => Ok(Box::new(fjall_db::FjallEngine::open(path, &tuning)?)),
        EngineKind::Shale => Err(CliError::msg("shale is not a peer engine")),
    }
}

/// The settings a peer is given: the flags, and Shale's defaults for everything the flags
/// do not cover.
#[derive(Debug, Clone)]
pub(crate) struct Tuning {
    /// The benchmark flags.
    pub config: EngineConfig,
    /// Shale's defaults, the source of every structural setting (levels, triggers, sizes).
    pub shale: Options,
}

impl Tuning {
    fn new(config: &EngineConfig) -> Tuning {
        let mut shale = Options::default();
        if let Some(n) = config.level0_compaction_trigger {
            shale.level0_compaction_trigger = n;
        }
        if let Some(n) = config.block_size {
            shale.table.block_size = n;
        }
        (shale.min_memtables_to_merge, shale.max_immutable_memtables) =
            config.memtable_merging(EngineKind::Rocksdb);
        Tuning {
            config: config.clone(),
            shale,
        }
    }

    /// The memtable size of the mirroring peers: the flag, else Shale's default (64 MiB).
    pub fn write_buffer_size(&self) -> usize {
        self.config
            .write_buffer_size
            .unwrap_or(self.shale.write_buffer_size)
    }
}

/// `n` bytes as MiB for the settings lines.
pub(crate) fn mib(n: u64) -> String {
    if n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        format!("{:.2} MiB", n as f64 / 1048576.0)
    }
}

/// Wrap a peer's error with what was being done.
pub(crate) fn peer_err(engine: &str, what: &str, e: impl std::fmt::Display) -> CliError {
    CliError::msg(format!("{engine}: {what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Op;
    use crate::engines::open as open_engine;
    use shale::Compression;

    fn config(compression: Compression) -> EngineConfig {
        EngineConfig {
            design: "leveldb".into(),
            settings: shale::PresetSettings::Tuned,
            axes: Default::default(),
            write_buffer_size: Some(1 << 20),
            cache_size: 4 << 20,
            compression,
            bloom_bits: 10,
            block_size: None,
            memtable_bloom_ratio: None,
            memtables_to_merge: None,
            max_background_compactions: None,
            level0_compaction_trigger: None,
            max_sstables_per_guard: None,
            flsm_policy: None,
            parallel_seek_min_tables: None,
            vlog: crate::engine::VlogSettings::default(),
            flodb: Default::default(),
            lwc: Default::default(),
            mmap_reads: None,
            mmap_log_writes: None,
            verify_checksums: None,
            memory_only: false,
        }
    }

    fn key(i: u32) -> Vec<u8> {
        format!("key{i:06}").into_bytes()
    }

    /// Every method, on a store large enough to flush several tables.
    fn exercise(kind: EngineKind, compression: Compression) {
        let dir = std::env::temp_dir().join(format!(
            "shale-peers-test-{}-{}-{compression:?}",
            kind.name(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let value = vec![b'v'; 100];
        {
            let e = open_engine(kind, &dir, &config(compression)).unwrap();
            assert!(!e.describe().is_empty());
            for chunk in (0..20_000u32).collect::<Vec<_>>().chunks(100) {
                let keys: Vec<Vec<u8>> = chunk.iter().map(|&i| key(i)).collect();
                let ops: Vec<Op<'_>> = keys.iter().map(|k| Op::Put(k, &value)).collect();
                e.write(&ops, false).unwrap();
            }
            e.put(&key(5), b"five", true).unwrap();
            e.delete(&key(6), false).unwrap();
            e.flush().unwrap();
            assert_eq!(e.get(&key(5)).unwrap().as_deref(), Some(&b"five"[..]));
            assert_eq!(e.get(&key(6)).unwrap(), None);
            assert_eq!(e.get(&key(7)).unwrap(), Some(value.clone()));
            assert_eq!(e.get(b"nope").unwrap(), None);

            let mut seen = Vec::new();
            let n = e
                .seek(&key(5), 2, &mut |k, _| seen.push(k.to_vec()))
                .unwrap();
            assert_eq!(n, 3);
            assert_eq!(seen, vec![key(5), key(7), key(8)]);
            assert_eq!(e.seek(b"zzz", 10, &mut |_, _| {}).unwrap(), 0);

            e.compact().unwrap();
            let mut last = None;
            let n = e
                .scan_all(true, 3, &mut |k, _| last = Some(k.to_vec()))
                .unwrap();
            assert_eq!(n, 3);
            assert_eq!(last, Some(key(19_997)));
            let mut count = 0;
            let mut prev: Option<Vec<u8>> = None;
            e.scan_all(false, u64::MAX, &mut |k, _| {
                assert!(prev.as_deref().is_none_or(|p| p < k));
                prev = Some(k.to_vec());
                count += 1;
            })
            .unwrap();
            assert_eq!(count, 19_999);
            e.sync_to_os().unwrap();
            assert!(!e.stats_text().is_empty());
            e.close().unwrap();
        }
        // Reopen: the data survived.
        let e = open_engine(kind, &dir, &config(compression)).unwrap();
        assert_eq!(e.get(&key(5)).unwrap().as_deref(), Some(&b"five"[..]));
        assert_eq!(e.get(&key(19_999)).unwrap(), Some(value));
        e.close().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn rocksdb_round_trip() {
        exercise(EngineKind::Rocksdb, Compression::None);
        exercise(EngineKind::Rocksdb, Compression::Lz4);
    }

    #[test]
    fn rocksdb_tuned_round_trip() {
        exercise(EngineKind::RocksdbTuned, Compression::None);
        exercise(EngineKind::RocksdbTuned, Compression::Lz4);
    }

    #[test]
    fn fjall_round_trip() {
        exercise(EngineKind::Fjall, Compression::None);
        exercise(EngineKind::Fjall, Compression::Lz4);
    }

    #[test]
    fn rocksdb_counts_wal_and_flush_bytes() {
        for kind in [EngineKind::Rocksdb, EngineKind::RocksdbTuned] {
            let dir = std::env::temp_dir().join(format!(
                "shale-peers-ctr-{}-{}",
                kind.name(),
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            let e = open_engine(kind, &dir, &config(Compression::None)).unwrap();
            let before = e.counters().unwrap();
            for i in 0..1000 {
                e.put(&key(i), &[b'x'; 100], false).unwrap();
            }
            e.flush().unwrap();
            let d = e.counters().unwrap().since(&before);
            let get = |name: &str| d.written.iter().find(|c| c.0 == name).map(|c| c.1);
            assert!(get("wal").unwrap() >= 100_000, "{kind:?} {d:?}");
            assert!(get("flush").unwrap() >= 100_000, "{kind:?} {d:?}");
            e.close().unwrap();
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// The two RocksDB configurations open with the options they print, read back from the
    /// OPTIONS file RocksDB writes: the mirror with Shale's, the tuned one with the tuning
    /// guide's and the design's memtable.
    #[test]
    fn rocksdb_configurations_run_what_they_print() {
        let keys = [
            "write_buffer_size",
            "level_compaction_dynamic_level_bytes",
            "bytes_per_sync",
            "max_background_jobs",
            "compaction_pri",
            "block_size",
            "cache_index_and_filter_blocks",
            "pin_l0_filter_and_index_blocks_in_cache",
            "target_file_size_base",
            "max_open_files",
        ];
        let opened = |kind: EngineKind, c: &EngineConfig| {
            let dir = std::env::temp_dir().join(format!(
                "shale-peers-cfg-{}-{}",
                kind.name(),
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            let e = open_engine(kind, &dir, c).unwrap();
            let lines = e.describe().join("\n");
            e.close().unwrap();
            let values = rocks::options_file_values(&dir, &keys);
            let _ = std::fs::remove_dir_all(&dir);
            let value = move |k: &str| {
                values
                    .iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_else(|| panic!("{k} missing from OPTIONS"))
            };
            (lines, value)
        };
        let mut c = config(Compression::None);
        c.write_buffer_size = None;
        let shale = Options::default();

        let (lines, mirror) = opened(EngineKind::Rocksdb, &c);
        assert!(lines.contains("config:   mirror"), "{lines}");
        assert_eq!(
            mirror("write_buffer_size"),
            shale.write_buffer_size.to_string()
        );
        assert_eq!(mirror("level_compaction_dynamic_level_bytes"), "false");
        assert_eq!(mirror("block_size"), shale.table.block_size.to_string());
        assert_eq!(mirror("cache_index_and_filter_blocks"), "false");
        assert_eq!(mirror("bytes_per_sync"), "0");
        assert_eq!(
            mirror("target_file_size_base"),
            shale.target_file_size.to_string()
        );

        let (lines, tuned) = opened(EngineKind::RocksdbTuned, &c);
        assert!(
            lines.contains("config:   tuned")
                && lines.contains("level_compaction_dynamic_level_bytes=true")
                && lines.contains("bytes_per_sync=1 MiB")
                && lines.contains("(the leveldb design's)")
                && lines.contains("defaults: RocksDB's, from its OPTIONS file: ")
                && lines.contains("target_file_size_base=")
                && !lines.contains("mirror"),
            "{lines}"
        );
        let design = Options::preset("leveldb").unwrap().write_buffer_size;
        assert_eq!(tuned("write_buffer_size"), design.to_string());
        assert_eq!(tuned("level_compaction_dynamic_level_bytes"), "true");
        assert_eq!(tuned("bytes_per_sync"), "1048576");
        assert_eq!(tuned("compaction_pri"), "kMinOverlappingRatio");
        assert_eq!(tuned("block_size"), "16384");
        assert_eq!(tuned("cache_index_and_filter_blocks"), "true");
        assert_eq!(tuned("pin_l0_filter_and_index_blocks_in_cache"), "true");
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
        assert_eq!(tuned("max_background_jobs"), cores.to_string());
        // RocksDB's own limits where Shale's differ (its level sizes and file sizes are the
        // same numbers: 256 MiB and 64 MiB).
        assert_eq!(mirror("max_open_files"), shale.max_open_files.to_string());
        assert_eq!(tuned("max_open_files"), "-1");

        // The flag sets the tuned memtable; without a cache, index and filter stay with the
        // open tables (RocksDB refuses to cache them in a cache that does not exist).
        c.write_buffer_size = Some(2 << 20);
        c.cache_size = 0;
        let (lines, tuned) = opened(EngineKind::RocksdbTuned, &c);
        assert!(lines.contains("(--write-buffer-size)"), "{lines}");
        assert_eq!(tuned("write_buffer_size"), (2 << 20).to_string());
        assert_eq!(tuned("cache_index_and_filter_blocks"), "false");
    }
}
