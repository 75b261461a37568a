//! The one place that wires axis choices together: from [`Options`] to the parts a store is
//! built from. The engine (`db/`) takes the wiring as an argument and never names a design;
//! each design lives in its axis folder behind its trait. A new design plugs in here: one
//! arm per axis it adds.
//!
//! | axis | option | implementations |
//! |---|---|---|
//! | memory component | [`Options::memory`] | `skiplist` ([`crate::memory::skiplist`]) |
//! | value placement | [`Options::values`] | `inline` ([`crate::values::inline`]), `vlog` ([`crate::values::vlog`]) |
//! | layout | [`Options::layout`] | `leveled` ([`crate::layout::leveled`]), `flsm` ([`crate::layout::flsm`]) |
//! | table format | [`Options::table_format`] (must be the layout's) | `sst` ([`crate::table::sst`]) |

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::db::{Db, Parts, VerifyReport};
use crate::error::Result;
use crate::layout::{Layout, flsm::Flsm, leveled::Leveled};
use crate::memory::{MemTable, MemTableFactory, skiplist::SkipListMemTable};
use crate::options::{Axes, LayoutKind, MemoryKind, Options, TableKind, ValuesKind};
use crate::table::{SstFormat, TableFormat};
use crate::values::{InlinePlacement, ValueStore, VlogPlacement};

/// The parts of the store in `dir` as `options` choose them; `file_numbers` is the store's
/// file-number counter (logs draw from it).
pub(crate) fn parts(options: &Options, dir: &Path, file_numbers: Arc<AtomicU64>) -> Parts {
    let layout: Arc<dyn Layout> = match options.layout {
        LayoutKind::Leveled => Arc::new(Leveled::new(options)),
        LayoutKind::Flsm => Arc::new(Flsm::new(options)),
    };
    let values: Arc<dyn ValueStore> = match options.values {
        ValuesKind::Inline => {
            Arc::new(InlinePlacement::new(options.env.clone(), dir, file_numbers))
        }
        ValuesKind::Vlog => Arc::new(VlogPlacement::new(options, dir, file_numbers)),
    };
    let memtables: MemTableFactory = match options.memory {
        MemoryKind::SkipList => Arc::new(|| Arc::new(SkipListMemTable::new()) as Arc<dyn MemTable>),
    };
    let table: Arc<dyn TableFormat> = match options.table_format {
        TableKind::Sst => Arc::new(SstFormat),
    };
    Parts {
        layout,
        values,
        memtables,
        table,
    }
}

impl Db {
    /// Open (or create) the store in directory `path`.
    ///
    /// # Errors
    /// [`crate::Error::Locked`] if another handle holds the store,
    /// [`crate::Error::Corruption`] if its files are damaged,
    /// [`crate::Error::InvalidArgument`] for bad options (or a store of another design),
    /// [`crate::Error::Io`].
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::open_with(path.as_ref(), options, &parts)
    }

    /// Open the existing store in directory `path` for reading only: a consistent view of
    /// it as it is now, which never changes and changes nothing.
    ///
    /// The store is recovered as [`Db::open`] recovers it, with the same checks (a store
    /// `open` refuses is refused here too), but nothing is written: no `LOCK` is created or
    /// taken, no MANIFEST, log or value-log segment is written or removed, and the
    /// write-ahead log (for the value-log design, the value log after its head) is replayed
    /// into memory only. It works on a directory the process cannot write, and beside a
    /// handle that has the store open for writing, in this process or another: when that
    /// writer commits a flush or compaction while this open reads the store, the open
    /// starts again. The handle then keeps the files of its version open (every table when
    /// there are at most [`Options::max_open_files`], and every live value-log segment), so
    /// a writer deleting them later does not take them away; beyond that limit a table is
    /// opened on first use, and one deleted since fails that read with an error that says
    /// so, never with other data. See `docs/architecture.md` (read-only open).
    ///
    /// Writes, [`Db::flush`], [`Db::compact_range`] and [`Db::run_value_gc`] return
    /// [`crate::Error::ReadOnlyOpen`]. `create_if_missing` and `error_if_exists` are
    /// ignored. A torn tail dropped from the log is counted in
    /// [`crate::Stats::placement`] (`wal_bytes_dropped`), as for `open`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] when there is no store at `path` or for bad options
    /// (or a store of another design), [`crate::Error::Corruption`] if its files are
    /// damaged, [`crate::Error::Io`] (also when the store kept changing under a writer's
    /// commits through every attempt).
    ///
    /// # Examples
    /// ```
    /// use shale::{Db, Options, env::Env};
    /// let options = Options::default().with_env(Env::memory());
    /// let db = Db::open("/db", options.clone())?;
    /// db.put(b"hello", b"world")?;
    /// let reader = Db::open_read_only("/db", options)?; // beside the writer
    /// assert_eq!(reader.get(b"hello")?.as_deref(), Some(&b"world"[..]));
    /// assert!(matches!(reader.put(b"x", b"y"), Err(shale::Error::ReadOnlyOpen { .. })));
    /// # Ok::<(), shale::Error>(())
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Db::open_read_only_with(path.as_ref(), options, &parts)
    }
}

/// Answer "would [`Db::open`] succeed, and return exactly the committed data?" for the
/// store at `path`, without changing it: recover it as [`Db::open_read_only`] does (the
/// recovery of `open`: CURRENT, the MANIFEST replayed, every table it lists present, the
/// write-ahead log replayed with the same checks), then read every table of the recovered
/// version in full (each block's checksum, key order) and the value placement's own files
/// (for a value log, every live segment's records, and every value pointer of a live
/// table: it must name a record in a live segment holding its key). Files the MANIFEST
/// does not name (a table a crash left half-written, a user's `notes.vlog`) are not the
/// store's and are not read. The store is checked as the design that wrote it (its
/// MANIFEST's format tag), whatever design `options` name; their other settings (the file
/// system, the WAL recovery mode) are used. Takes no lock and writes nothing; beside a
/// writer in another process it checks one consistent version.
///
/// A store that opens but whose log ends in a torn tail open would drop is `Ok`, with the
/// bytes in [`VerifyReport::placement`] (`log_bytes_dropped`).
///
/// # Errors
/// As `open` would fail, and the first problem the reads find: [`crate::Error::Corruption`]
/// naming the file and offset, or [`crate::Error::Io`]; [`crate::Error::InvalidArgument`]
/// for a directory without a store or a store written by a design this build does not
/// have.
pub fn verify(path: impl AsRef<Path>, options: Options) -> Result<VerifyReport> {
    let dir = path.as_ref();
    let options = match crate::db::store_format_tag(dir, &options.env)? {
        Some(tag) => options_for_tag(&tag, options)?,
        None => options,
    };
    crate::db::verify_with(dir, options, &parts)
}

/// `options` with the axes of the design whose format tag is `tag`: the caller's own first
/// (its tuning kept), else the first valid combination that writes that tag.
fn options_for_tag(tag: &str, options: Options) -> Result<Options> {
    let candidates = std::iter::once(options.axes()).chain(Axes::all());
    for axes in candidates {
        let o = options.clone().with_axes(axes);
        let p = parts(&o, Path::new(""), Arc::new(AtomicU64::new(0)));
        if crate::db::format_tag(p.layout.as_ref(), p.values.as_ref()) == tag {
            return Ok(o);
        }
    }
    Err(crate::Error::InvalidArgument(format!(
        "the store was written by a design this build does not have (format tag {tag:?})"
    )))
}
