//! Statistics and named properties.

use std::sync::atomic::Ordering;

use super::{DbInner, LevelStats, Stats};
use crate::env::{BlockKind, ReadCause, WriteCause};
use crate::manifest::Lifetime;

pub(crate) fn live_files(inner: &DbInner) -> Vec<super::LiveFile> {
    let sv = inner.super_version();
    sv.version
        .files()
        .map(|(level, f)| super::LiveFile {
            level,
            number: f.number,
            size: f.size,
            smallest_key: f.smallest_user_key().to_vec(),
            largest_key: f.largest_user_key().to_vec(),
            seq_range: (f.smallest_seq, f.largest_seq),
            entries: f.entries,
            tombstones: f.tombstones,
        })
        .collect()
}

/// The store's counters since creation: those recovered at open plus this process's.
/// Reads atomics only (the version set calls it with its lock held).
pub(crate) fn lifetime(inner: &DbInner) -> Lifetime {
    let io = inner.env.io();
    let c = &inner.counters;
    let mut written = [0; WriteCause::ALL.len()];
    for ((w, &cause), &base) in written
        .iter_mut()
        .zip(WriteCause::ALL.iter())
        .zip(inner.io_at_open.iter())
    {
        *w = io.written(cause).saturating_sub(base);
    }
    inner.lifetime_base.plus(&Lifetime {
        user_bytes: c.user_bytes.load(Ordering::Relaxed),
        user_ops: c.user_ops.load(Ordering::Relaxed),
        flushes: c.flushes.load(Ordering::Relaxed),
        compactions: c.compactions.load(Ordering::Relaxed),
        written,
    })
}

pub(crate) fn stats(inner: &DbInner) -> Stats {
    let io = inner.env.io();
    let sv = inner.super_version();
    let per = inner.counters.per_level.lock().clone();
    let user_bytes = inner.counters.user_bytes.load(Ordering::Relaxed);
    let levels = (0..sv.version.num_levels())
        .map(|l| {
            let c = per.get(l).copied().unwrap_or_default();
            LevelStats {
                files: sv.version.level(l).len(),
                bytes: sv.version.level_bytes(l),
                compaction_read: c.read,
                compaction_moved_in: if l == 0 {
                    // What enters level 0 is user data, through the memtable.
                    user_bytes
                } else {
                    c.moved_in
                },
                compaction_written: c.written,
                compactions: c.count,
            }
        })
        .collect();
    let memtable_bytes = std::iter::once(&sv.mem)
        .chain(sv.imms.iter())
        .map(|m| m.approximate_bytes() as u64)
        .sum();
    let c = &inner.counters;
    Stats {
        user_bytes_written: user_bytes,
        user_ops_written: c.user_ops.load(Ordering::Relaxed),
        written: WriteCause::ALL
            .iter()
            .map(|&w| (w, io.written(w)))
            .collect(),
        read: ReadCause::ALL.iter().map(|&r| (r, io.read(r))).collect(),
        blocks_read: ReadCause::ALL
            .iter()
            .flat_map(|&r| {
                BlockKind::ALL
                    .iter()
                    .map(move |&k| (r, k, io.block_reads(r, k)))
            })
            .collect(),
        levels,
        flushes: c.flushes.load(Ordering::Relaxed),
        compactions: c.compactions.load(Ordering::Relaxed),
        stall_micros: c.stall_micros.load(Ordering::Relaxed),
        memtable_bytes,
        block_cache_bytes: inner.block_cache.as_ref().map_or(0, |b| b.usage() as u64),
        block_cache_hits: inner.block_cache.as_ref().map_or(0, |b| b.hits()),
        block_cache_misses: inner.block_cache.as_ref().map_or(0, |b| b.misses()),
        last_sequence: inner.last_seq.load(Ordering::Acquire),
        placement: inner.values.stats(),
        memory: inner.memory.stats(),
        foreign_tables: inner.foreign_tables.lock().clone(),
        scan_prefetch: Default::default(),
        lifetime: {
            let l = lifetime(inner);
            super::LifetimeStats {
                user_bytes_written: l.user_bytes,
                user_ops_written: l.user_ops,
                written: WriteCause::ALL.iter().copied().zip(l.written).collect(),
                flushes: l.flushes,
                compactions: l.compactions,
            }
        },
    }
}

pub(crate) fn property(inner: &DbInner, name: &str) -> Option<String> {
    let sv = inner.super_version();
    if let Some(l) = name.strip_prefix("shale.num-files-at-level") {
        let l: usize = l.parse().ok()?;
        return (l < sv.version.num_levels()).then(|| sv.version.level(l).len().to_string());
    }
    if let Some(p) = inner.layout.property(&sv.version, name) {
        return Some(p);
    }
    match name {
        "shale.stats" => Some(stats(inner).to_string()),
        "shale.levels" => Some(
            (0..sv.version.num_levels())
                .map(|l| sv.version.level(l).len().to_string())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        "shale.last-sequence" => Some(inner.last_seq.load(Ordering::Acquire).to_string()),
        // Range tombstones (`Db::delete_range`): those of the memtables, not yet flushed,
        // and the flushed ones the version keeps (until nothing older in their range is
        // left in the files).
        "shale.range-tombstones-mem" => Some(sv.range_dels.tombstones().len().to_string()),
        "shale.range-tombstones" => Some(sv.version.range_dels().tombstones().len().to_string()),
        // Frozen memtables not yet flushed (RocksDB's `num-immutable-mem-table`).
        "shale.num-immutable-mem-table" => Some(inner.bg.lock().imms.len().to_string()),
        // RocksDB's names. A compaction is pending from every change to the tree (and from
        // open) until a worker's pick finds nothing to start; never after a failure (the
        // store is read-only and starts nothing), nor on a read-only handle. With the three
        // at 0 the store is settled: nothing runs and nothing will start before the next
        // write, flush or compaction.
        "shale.mem-table-flush-pending" => {
            let bg = inner.bg.lock();
            // Frozen memtables waiting for others to merge with for ever are not pending
            // (RocksDB's `min_write_buffer_number_to_merge` alike); with a timeout they are.
            let due = super::background::flush_due(&bg, &inner.options);
            Some(u8::from(due || bg.flushing).to_string())
        }
        "shale.compaction-pending" => {
            let bg = inner.bg.lock();
            let pending = (bg.compaction_wanted || bg.manual) && bg.error.is_none();
            Some(u8::from(pending && !inner.read_only).to_string())
        }
        // Committed ones still deleting their inputs count as running.
        "shale.num-running-compactions" => {
            let bg = inner.bg.lock();
            Some((bg.running.len() + bg.sweeping).to_string())
        }
        // RocksDB's GetDbIdentity: the id every table and log of the store records.
        // The options this handle runs with, as the options record (`docs/format/options.md`)
        // writes them: every axis and every option that shapes the store's files.
        "shale.options" => Some(
            String::from_utf8_lossy(
                &crate::options::stored::StoredOptions::of(&inner.options).encode(),
            )
            .into_owned(),
        ),
        "shale.store-id" => Some(format!("{:016x}", inner.versions.lock().store_id())),
        "shale.total-sst-bytes" => Some(
            (0..sv.version.num_levels())
                .map(|l| sv.version.level_bytes(l))
                .sum::<u64>()
                .to_string(),
        ),
        "shale.memtable-bytes" => Some(stats(inner).memtable_bytes.to_string()),
        "shale.block-cache-usage" => Some(
            inner
                .block_cache
                .as_ref()
                .map_or(0, |b| b.usage())
                .to_string(),
        ),
        "shale.design" => Some(format!(
            "layout={} values={} memory={}",
            inner.layout.name(),
            inner.values.name(),
            inner.options.memory.name()
        )),
        _ => None,
    }
}
