//! The version set: the current version, the MANIFEST that records how it came to be, and
//! the counters that must survive a restart (next file number, last sequence, log number).
//!
//! Thread-safety: not internally synchronized; the engine keeps it behind one mutex (the
//! "manifest lock"), taken by whoever commits an edit. Only `next_file` is shared lock-free.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use super::{LayoutState, Version};
use crate::env::Env;
use crate::error::{Error, Result};
use crate::key::SeqNo;
use crate::manifest::{self, AxisStates, Lifetime, ManifestWriter, VersionEdit};
use crate::options::stored::StoredOptions;

pub use crate::options::MAX_MANIFEST_BYTES;

/// See the module documentation.
pub struct VersionSet {
    env: Env,
    dir: PathBuf,
    current: Arc<Version>,
    live: Vec<Weak<Version>>,
    /// The live MANIFEST's writer; `None` after recovery until the first commit starts a
    /// new MANIFEST (snapshot, then CURRENT), so an open refused after the MANIFEST was
    /// read (damaged logs) leaves the store's files as they were.
    manifest: Option<ManifestWriter>,
    manifest_number: u64,
    log_number: u64,
    next_file: Arc<AtomicU64>,
    last_sequence: SeqNo,
    identity: Identity,
    /// The store's counters since creation as recovered, written with every commit until
    /// the engine installs its running count ([`VersionSet::set_lifetime_source`]).
    lifetime_base: Option<Lifetime>,
    lifetime_source: Option<LifetimeSource>,
    max_manifest_bytes: u64,
    /// What the edits recorded for the axes other than the layout (whose state is in each
    /// version).
    axes: AxisStates,
}

impl std::fmt::Debug for VersionSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionSet")
            .field("dir", &self.dir)
            .field("manifest_number", &self.manifest_number)
            .field("log_number", &self.log_number)
            .field("last_sequence", &self.last_sequence)
            .finish()
    }
}

/// What a version set is made with: the design (its format tag and its options record)
/// and the axes' empty states, which the edits' axis records are replayed into.
pub struct Makeup {
    /// Levels of a version.
    pub num_levels: usize,
    /// The design's format tag: a store written by another design is refused.
    pub format_tag: String,
    /// The options record of this open: checked against the store's (its fixed options
    /// must match) and written in every new MANIFEST.
    pub options: StoredOptions,
    /// The store's file-number counter, holding one more than the largest file number
    /// found in the directory.
    pub file_numbers: Arc<AtomicU64>,
    /// The layout's empty state.
    pub layout: Arc<dyn LayoutState>,
    /// The other axes' empty states.
    pub axes: AxisStates,
}

/// The engine's running count of the store's counters since creation (`None` once the
/// engine is gone).
pub type LifetimeSource = Box<dyn Fn() -> Option<Lifetime> + Send + Sync>;

/// What every snapshot edit records about the store itself.
struct Identity {
    format_tag: String,
    /// The store's identity (MANIFEST tag 17).
    store_id: u64,
    /// The options record, encoded (MANIFEST tag 18).
    options: Vec<u8>,
}

/// What recovery found in the MANIFEST.
#[derive(Debug)]
pub struct Recovered {
    /// The version set; its first commit starts a fresh MANIFEST.
    pub set: VersionSet,
    /// WAL files with a number `>= log_number` still hold unflushed writes.
    pub log_number: u64,
    /// The last sequence number the MANIFEST knows of.
    pub last_sequence: SeqNo,
    /// What the MANIFEST recorded for the axes other than the layout.
    pub axes: AxisStates,
    /// The store's identity: the MANIFEST's, or a fresh one for a store written before
    /// store ids existed (recorded in the new MANIFEST from now on).
    pub store_id: u64,
    /// The options record the MANIFEST held (`None` for a store written before records
    /// existed); the new MANIFEST records the open's own.
    pub stored_options: Option<StoredOptions>,
    /// The counters since creation the MANIFEST held (zero for a store written before they
    /// were kept).
    pub lifetime: Lifetime,
}

impl VersionSet {
    /// Open the version set of the store in `dir`: read CURRENT and the MANIFEST it names and
    /// replay the edits. Nothing is written: the first commit writes a fresh MANIFEST
    /// holding one snapshot edit and points CURRENT at it (so MANIFESTs never grow across
    /// restarts, and a refused open changes nothing).
    ///
    /// A store whose options record differs from `makeup.options` in a fixed option, or
    /// (for a store without a record) whose format tag differs from `makeup.format_tag`, is
    /// refused. `makeup.file_numbers` holds one more than the largest file number in the
    /// directory: logs created after the last edit are not in the MANIFEST, and their
    /// numbers must not be handed out again (a new log would truncate an old one before it
    /// is retired). Recovery moves it past every number the MANIFEST knows.
    pub fn recover(env: &Env, dir: &Path, makeup: Makeup) -> Result<Recovered> {
        let Makeup {
            num_levels,
            format_tag,
            options,
            file_numbers,
            layout,
            axes,
        } = makeup;
        let min_next_file = file_numbers.load(Ordering::Relaxed);
        let number = manifest::read_current(env, dir)?;
        let path = dir.join(manifest::manifest_file_name(number));
        let (edits, dropped_tail) = manifest::read_manifest_and_tail(env, dir, number)?;
        let mut version = Version::with_layout(num_levels, layout);
        let mut log_number = 0;
        let mut next_file = 2;
        let mut last_sequence = 0;
        let mut store_id = None;
        let lifetime = edits.iter().rev().find_map(|e| e.lifetime.clone());
        // The design first: another design's records would not fit this one's states.
        let stored_options = match edits.iter().rev().find_map(|e| e.store_options.as_ref()) {
            Some(bytes) => {
                let stored = StoredOptions::decode(bytes)
                    .map_err(|detail| Error::corruption(&path, 0, detail))?;
                stored.check(&options, dir)?;
                Some(stored)
            }
            None => None,
        };
        if let Some(t) = edits.iter().find_map(|e| e.format_tag.as_ref())
            && *t != format_tag
        {
            return Err(Error::InvalidArgument(format!(
                "the store in {} was created with the {t} design, but the options ask for {format_tag}",
                dir.display()
            )));
        }
        let mut axes = axes;
        for (i, edit) in edits.iter().enumerate() {
            axes.absorb(&edit.records).map_err(|detail| {
                Error::corruption(&path, 0, format!("edit {i} does not apply: {detail}"))
            })?;
            version = version.apply(edit).map_err(|detail| {
                Error::corruption(&path, 0, format!("edit {i} does not apply: {detail}"))
            })?;
            if let Some(n) = edit.log_number {
                log_number = n;
            }
            if let Some(n) = edit.next_file_number {
                next_file = n;
            }
            store_id = edit.store_id.or(store_id);
            if let Some(n) = edit.last_sequence {
                if n > crate::key::MAX_SEQNO {
                    return Err(Error::corruption(
                        &path,
                        0,
                        format!("edit {i} records last sequence {n}, beyond the largest possible"),
                    ));
                }
                last_sequence = n;
            }
        }
        if edits.is_empty() {
            return Err(Error::corruption(&path, 0, "MANIFEST holds no edit"));
        }
        let limit = crate::filename::MAX_FILE_NUMBER;
        let max_file = version.files().map(|(_, f)| f.number).max().unwrap_or(0);
        if [next_file, log_number, max_file, number]
            .iter()
            .any(|&n| n > limit)
        {
            return Err(Error::corruption(
                &path,
                0,
                format!(
                    "a file number beyond {limit} (next {next_file}, log {log_number}, largest table {max_file})"
                ),
            ));
        }
        // Every file the MANIFEST mentions must be below next_file, or numbers would repeat.
        let next_file = next_file
            .max(min_next_file)
            .max(max_file + 1)
            .max(log_number + 1)
            .max(number + 1);
        // Before anything is written: a store with missing tables is refused unchanged.
        super::check_tables_present(env, dir, &version, &path)
            .map_err(|e| super::blame_dropped_tail(e, &path, dropped_tail))?;
        file_numbers.store(next_file, Ordering::Relaxed);
        let next = file_numbers;
        let current = Arc::new(version);
        let store_id = store_id.unwrap_or_else(manifest::new_store_id);
        Ok(Recovered {
            set: VersionSet {
                env: env.clone(),
                dir: dir.to_path_buf(),
                live: vec![Arc::downgrade(&current)],
                current,
                manifest: None,
                manifest_number: number,
                log_number,
                next_file: next,
                last_sequence,
                identity: Identity {
                    format_tag,
                    store_id,
                    options: options.encode(),
                },
                lifetime_base: lifetime.clone(),
                lifetime_source: None,
                max_manifest_bytes: MAX_MANIFEST_BYTES,
                axes: axes.clone(),
            },
            log_number,
            last_sequence,
            axes,
            store_id,
            stored_options,
            lifetime: lifetime.unwrap_or_default(),
        })
    }

    /// Create the version set of a new, empty store in `dir` (`makeup` as for
    /// [`VersionSet::recover`]).
    pub fn create(env: &Env, dir: &Path, makeup: Makeup) -> Result<VersionSet> {
        let Makeup {
            num_levels,
            format_tag,
            options,
            file_numbers,
            layout,
            axes,
        } = makeup;
        file_numbers.fetch_max(1, Ordering::Relaxed);
        let next = file_numbers;
        let manifest_number = next.fetch_add(1, Ordering::Relaxed);
        let current = Arc::new(Version::with_layout(num_levels, layout));
        let identity = Identity {
            format_tag,
            store_id: manifest::new_store_id(),
            options: options.encode(),
        };
        let manifest = Self::write_new_manifest(
            env,
            dir,
            manifest_number,
            &current,
            0,
            &next,
            0,
            &identity,
            Some(&Lifetime::default()),
            &axes,
        )?;
        Ok(VersionSet {
            env: env.clone(),
            dir: dir.to_path_buf(),
            live: vec![Arc::downgrade(&current)],
            current,
            manifest: Some(manifest),
            manifest_number,
            log_number: 0,
            next_file: next,
            last_sequence: 0,
            identity,
            lifetime_base: Some(Lifetime::default()),
            lifetime_source: None,
            max_manifest_bytes: MAX_MANIFEST_BYTES,
            axes,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn write_new_manifest(
        env: &Env,
        dir: &Path,
        number: u64,
        version: &Version,
        log_number: u64,
        next_file: &AtomicU64,
        last_sequence: SeqNo,
        identity: &Identity,
        lifetime: Option<&Lifetime>,
        axes: &AxisStates,
    ) -> Result<ManifestWriter> {
        let mut writer = ManifestWriter::create(env, dir, number)?;
        let mut edit = version.snapshot_edit();
        edit.manifest_version = Some(manifest::MANIFEST_FORMAT_VERSION);
        axes.snapshot(&mut edit.records);
        edit.log_number = Some(log_number);
        edit.next_file_number = Some(next_file.load(Ordering::Relaxed));
        edit.last_sequence = Some(last_sequence);
        edit.format_tag = Some(identity.format_tag.clone());
        edit.store_id = Some(identity.store_id);
        edit.store_options = Some(identity.options.clone());
        edit.lifetime = lifetime.cloned();
        writer.append(&edit)?;
        // The new MANIFEST's directory entry must be durable before CURRENT names it;
        // write_current syncs the directory after its rename, which covers both.
        manifest::write_current(env, dir, number)?;
        Ok(writer)
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        Arc::clone(&self.current)
    }

    /// The shared file-number counter (WAL and table numbers are drawn from it).
    pub fn file_numbers(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.next_file)
    }

    /// Draw a new file number.
    pub fn new_file_number(&self) -> u64 {
        self.next_file.fetch_add(1, Ordering::Relaxed)
    }

    /// Count the store's lifetime counters with `source` from now on (the engine's running
    /// count: the recovered counters plus this process's).
    pub fn set_lifetime_source(&mut self, source: LifetimeSource) {
        self.lifetime_source = Some(source);
    }

    /// The counters every commit records: the engine's running count, else the recovered
    /// ones.
    fn lifetime_now(&self) -> Option<Lifetime> {
        self.lifetime_source
            .as_ref()
            .and_then(|f| f())
            .or_else(|| self.lifetime_base.clone())
    }

    /// The store's identity (see [`Recovered::store_id`]).
    pub fn store_id(&self) -> u64 {
        self.identity.store_id
    }

    /// WAL files below this number are obsolete.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// What the committed edits recorded for the axes other than the layout.
    pub fn axes(&self) -> &AxisStates {
        &self.axes
    }

    /// What the committed edits recorded for the value placement.
    pub fn placement(&self) -> crate::manifest::PersistedState {
        crate::manifest::PersistedState {
            log_number: self.log_number,
            state: self.axes.values.clone(),
        }
    }

    /// The number of the live MANIFEST.
    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    /// The length of the live MANIFEST: every committed edit ends at or before it (`None`
    /// before the first commit of an open).
    pub fn manifest_len(&self) -> Option<u64> {
        self.manifest.as_ref().map(ManifestWriter::len)
    }

    /// Limit the MANIFEST size before it is rewritten (tests use small limits).
    pub fn set_max_manifest_bytes(&mut self, n: u64) {
        self.max_manifest_bytes = n;
    }

    /// Commit `edit`: record it durably in the MANIFEST (the commit point), then install the
    /// version it produces. `last_sequence` must be at least every sequence number in the
    /// files the edit adds.
    ///
    /// On error nothing is installed; the caller must treat the store as read-only, since the
    /// MANIFEST may hold a partial record.
    pub fn log_and_apply(
        &mut self,
        mut edit: VersionEdit,
        last_sequence: SeqNo,
    ) -> Result<Arc<Version>> {
        let manifest_path = self
            .dir
            .join(manifest::manifest_file_name(self.manifest_number));
        let manifest_len = self.manifest.as_ref().map_or(0, ManifestWriter::len);
        let next = self.current.apply(&edit).map_err(|detail| {
            Error::corruption(
                &manifest_path,
                manifest_len,
                format!("refusing to commit an edit that does not apply: {detail}"),
            )
        })?;
        let mut axes = self.axes.clone();
        axes.absorb(&edit.records).map_err(|detail| {
            Error::corruption(
                &manifest_path,
                manifest_len,
                format!("refusing to commit an edit whose axis records do not fit: {detail}"),
            )
        })?;
        self.last_sequence = self.last_sequence.max(last_sequence);
        edit.last_sequence = Some(self.last_sequence);
        let lifetime = self.lifetime_now();
        if edit.lifetime.is_none() {
            edit.lifetime.clone_from(&lifetime);
        }
        edit.next_file_number = Some(self.next_file.load(Ordering::Relaxed));
        if let Some(n) = edit.log_number {
            debug_assert!(n >= self.log_number);
        }
        let next = Arc::new(next);
        let appendable = self
            .manifest
            .as_mut()
            .filter(|m| m.len() < self.max_manifest_bytes);
        if let Some(m) = appendable {
            m.append(&edit)?;
        } else {
            let number = self.new_file_number();
            let log_number = edit.log_number.unwrap_or(self.log_number);
            let writer = Self::write_new_manifest(
                &self.env,
                &self.dir,
                number,
                &next,
                log_number,
                &self.next_file,
                self.last_sequence,
                &self.identity,
                lifetime.as_ref(),
                &axes,
            )?;
            self.manifest = Some(writer);
            self.manifest_number = number;
        }
        if let Some(n) = edit.log_number {
            self.log_number = self.log_number.max(n);
        }
        self.axes = axes;
        self.live.retain(|w| w.strong_count() > 0);
        self.live.push(Arc::downgrade(&next));
        self.current = Arc::clone(&next);
        Ok(next)
    }

    /// Every version still held by someone (the current one included).
    pub fn live_versions(&mut self) -> Vec<Weak<Version>> {
        self.live.retain(|w| w.strong_count() > 0);
        self.live.clone()
    }

    /// Numbers of every table file some live version (current, or held by a reader) lists.
    pub fn live_files(&mut self) -> HashSet<u64> {
        self.live.retain(|w| w.strong_count() > 0);
        let mut set = HashSet::new();
        for v in self.live.iter().filter_map(Weak::upgrade) {
            set.extend(v.files().map(|(_, f)| f.number));
        }
        set
    }
}
