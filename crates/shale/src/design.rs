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
}

/// Check every checksum of every file of the store at `path`: CURRENT, the live MANIFEST
/// (every edit replayed as recovery would, each design's records by their owner), every
/// log and every table (each block, and key order); and the value placement's own files
/// (for a value log, every live segment's header and records, and every value pointer of a
/// live table: it must name a record in a live segment holding its key). The store is
/// checked as the design that wrote it (its MANIFEST's format tag), whatever design
/// `options` name; their other settings (the file system) are used. Does not take the
/// store's lock and writes nothing.
///
/// # Errors
/// The first problem found: [`crate::Error::Corruption`] naming the file and offset, or
/// [`crate::Error::Io`]; [`crate::Error::InvalidArgument`] for a store written by a design
/// this build does not have.
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
