//! Appending to the newest value-log segment.
//!
//! Thread-safety: owned by the placement's writer mutex.

use std::path::Path;
use std::sync::Arc;

use super::format;
use super::seal::Sealed;
use crate::env::{Env, FileSyncer, WriteCause, WriteFile};
use crate::error::Result;
use crate::wal::WriteBatch;

/// A group is encoded into this buffer and handed to the file in one append (the paper's
/// user-space write buffer); a buffer grown past this is dropped after use.
const KEEP_SCRATCH: usize = 4 << 20;

/// The active segment.
pub(crate) struct SegmentWriter {
    file: WriteFile,
    number: u64,
    /// The store's id, which every segment's header checksum covers.
    store_id: u64,
    scratch: Vec<u8>,
    /// Bytes known durable.
    synced: u64,
    /// Syncs the segment from other threads (made once: a second descriptor).
    syncer: Option<Arc<dyn FileSyncer>>,
    /// Small appends are copied into a map of the file (`Options::mmap_log_writes`).
    mapped: bool,
}

impl SegmentWriter {
    /// Create segment `number` with its header, synced, and its directory entry durable: a
    /// new segment is never lost while a later one survives. The segment is a log file
    /// ([`Env::create_log`]): the file system may keep zeros reserved after its records until
    /// it is left ([`SegmentWriter::rotate`], [`SegmentWriter::finish`]), so a crash can
    /// leave it with a zero-filled tail, which recovery reads as a torn tail.
    pub(crate) fn create(
        env: &Env,
        dir: &Path,
        number: u64,
        store_id: u64,
        mapped: bool,
    ) -> Result<SegmentWriter> {
        let path = dir.join(format::segment_file_name(number));
        let mut file = env.create_log_with(&path, WriteCause::Vlog, mapped)?;
        file.append(&format::encode_header(number, store_id))?;
        file.flush()?;
        file.sync()?;
        env.fs().sync_dir(dir)?;
        Ok(SegmentWriter {
            synced: file.len(),
            syncer: file.syncer(),
            file,
            number,
            store_id,
            scratch: Vec::new(),
            mapped,
        })
    }

    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written to the segment (header included).
    pub(crate) fn len(&self) -> u64 {
        self.file.len()
    }

    /// Leave this segment (its bytes handed to the OS and its reserved space cut off, not
    /// synced) and continue in a new segment `next`. Returns the old segment, for the caller
    /// to queue for sealing: the seal's sync makes the cut durable with the bytes.
    pub(crate) fn rotate(&mut self, env: &Env, dir: &Path, next: u64) -> Result<Sealed> {
        self.file.finish()?;
        let mut new = SegmentWriter::create(env, dir, next, self.store_id, self.mapped)?;
        new.scratch = std::mem::take(&mut self.scratch);
        let old = std::mem::replace(self, new);
        let end = old.file.len();
        let syncer = match old.syncer {
            Some(s) => s,
            None => old.file.into_syncer(),
        };
        Ok(Sealed {
            number: old.number,
            end,
            syncer,
        })
    }

    /// A handle that syncs the segment without the writer (`None`: sync through
    /// [`SegmentWriter::sync_through`]).
    pub(crate) fn syncer(&self) -> Option<Arc<dyn FileSyncer>> {
        self.syncer.clone()
    }

    /// Append the records of a sequenced batch, handed to the OS (and synced when `sync`);
    /// `relocation` counts the bytes under [`WriteCause::Gc`].
    /// Returns the offset of the first record and the segment's new length.
    pub(crate) fn append_batch(
        &mut self,
        batch: &WriteBatch,
        sync: bool,
        relocation: bool,
    ) -> Result<(u64, u64)> {
        let base = self.file.len();
        self.scratch.clear();
        let seq = batch.sequence();
        let n = batch.len();
        for (i, e) in batch.iter().enumerate() {
            format::encode_record(
                &mut self.scratch,
                seq + i as u64,
                e.kind,
                i + 1 == n,
                e.key,
                e.value,
            );
        }
        if relocation {
            self.file.set_cause(WriteCause::Gc);
        }
        let appended = self.file.append(&self.scratch);
        if relocation {
            self.file.set_cause(WriteCause::Vlog);
        }
        appended?;
        if self.scratch.capacity() > KEEP_SCRATCH {
            self.scratch = Vec::new();
        }
        self.file.flush()?;
        if sync {
            self.file.sync()?;
            self.synced = self.file.len();
        }
        Ok((base, self.file.len()))
    }

    /// Stop appending (the segment ends at [`SegmentWriter::len`]: reserved space cut off)
    /// and make it durable, its length included.
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.file.finish()?;
        self.file.sync()?;
        self.synced = self.file.len();
        Ok(())
    }

    /// Make the segment durable at least through `offset`.
    pub(crate) fn sync_through(&mut self, offset: u64) -> Result<()> {
        if self.synced >= offset.min(self.file.len()) {
            return Ok(());
        }
        self.file.flush()?;
        self.file.sync()?;
        self.synced = self.file.len();
        Ok(())
    }
}
