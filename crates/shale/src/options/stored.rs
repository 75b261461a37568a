//! The options record a store keeps of how it was made (`docs/format/options.md`): the
//! choice on each axis and every option that shapes its files, written into the MANIFEST
//! at creation and again whenever one of them changes, so that a store opens with what it
//! was created with ([`crate::load_options`]) and is never opened by a design that cannot
//! read it.
//!
//! Each option is either *fixed* (it decides how existing files are read: the layout, the
//! value placement, the table format, the number of levels, the FLSM guard hash) or *free*
//! (it shapes files written from now on, or nothing on disk: block size, bloom bits,
//! compression, sizes, the memory component). An open asking for a fixed option other than
//! the record's is refused with an error naming the option, the stored value and the flag
//! to pass; a free option may change, and the record follows it.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Compression, FlsmPolicy, LayoutKind, MemoryKind, Options, TableKind, ValuesKind};
use crate::error::{Error, Result};

/// The record's format version: the first line is `shale-options 1`.
pub const OPTIONS_RECORD_VERSION: u32 = 1;

/// When an option must equal the record's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// It may change between opens.
    Free,
    /// It must match the record.
    Fixed,
    /// It must match the record when the store's layout is FLSM (it chooses the guards).
    FixedForFlsm,
}

/// One recorded option: its key in the record, when it must match, the command-line flag
/// that sets it (empty if none), how to read it from options and how to set it.
struct Field {
    key: &'static str,
    rule: Rule,
    flag: &'static str,
    get: fn(&Options) -> String,
    set: fn(&mut Options, &str) -> std::result::Result<(), String>,
}

fn parse<T: std::str::FromStr>(s: &str) -> std::result::Result<T, String> {
    s.parse().map_err(|_| format!("{s:?} is not a valid value"))
}

/// A [`Field`] for a plain value field (`$($path).+` of [`Options`]).
macro_rules! plain {
    ($key:literal, $rule:expr, $flag:literal, $($path:ident).+) => {
        Field {
            key: $key,
            rule: $rule,
            flag: $flag,
            get: |o| o.$($path).+.to_string(),
            set: |o, s| {
                o.$($path).+ = parse(s)?;
                Ok(())
            },
        }
    };
}

/// A [`Field`] for an axis kind (`name()` / `parse()`).
macro_rules! named {
    ($key:literal, $rule:expr, $flag:literal, $kind:ident, $($path:ident).+) => {
        Field {
            key: $key,
            rule: $rule,
            flag: $flag,
            get: |o| o.$($path).+.name().to_string(),
            set: |o, s| {
                o.$($path).+ = $kind::parse(s).map_err(|e| e.to_string())?;
                Ok(())
            },
        }
    };
}

/// Every recorded option, in the order of the record. Never rename a key: stores on disk
/// hold them; a key this build does not know is ignored when read.
const FIELDS: &[Field] = &[
    named!("layout", Rule::Fixed, "--layout", LayoutKind, layout),
    named!("values", Rule::Fixed, "--values", ValuesKind, values),
    named!("table", Rule::Fixed, "--table", TableKind, table_format),
    named!("memory", Rule::Free, "--memory", MemoryKind, memory),
    plain!("num_levels", Rule::Fixed, "", num_levels),
    plain!("expiring_values", Rule::Fixed, "", expiring_values),
    plain!("write_buffer_size", Rule::Free, "", write_buffer_size),
    // How tables are read, not how they are written: free. Recorded so that a store made
    // with a preset reopens (`load_options`) reading as the preset does.
    plain!("mmap_reads", Rule::Free, "", mmap_reads),
    // How logs are appended to, not what they hold: free.
    plain!("mmap_log_writes", Rule::Free, "", mmap_log_writes),
    plain!("memtable_bloom_ratio", Rule::Free, "", memtable_bloom_ratio),
    plain!(
        "max_immutable_memtables",
        Rule::Free,
        "",
        max_immutable_memtables
    ),
    plain!(
        "min_memtables_to_merge",
        Rule::Free,
        "",
        min_memtables_to_merge
    ),
    plain!("target_file_size", Rule::Free, "", target_file_size),
    plain!(
        "max_bytes_for_level_base",
        Rule::Free,
        "",
        max_bytes_for_level_base
    ),
    plain!(
        "level_size_multiplier",
        Rule::Free,
        "",
        level_size_multiplier
    ),
    plain!(
        "level0_compaction_trigger",
        Rule::Free,
        "",
        level0_compaction_trigger
    ),
    plain!(
        "level0_slowdown_trigger",
        Rule::Free,
        "",
        level0_slowdown_trigger
    ),
    plain!("level0_stop_trigger", Rule::Free, "", level0_stop_trigger),
    plain!("table.block_size", Rule::Free, "", table.block_size),
    plain!(
        "table.block_restart_interval",
        Rule::Free,
        "",
        table.block_restart_interval
    ),
    plain!(
        "table.bloom_bits_per_key",
        Rule::Free,
        "",
        table.bloom_bits_per_key
    ),
    named!(
        "table.compression",
        Rule::Free,
        "",
        Compression,
        table.compression
    ),
    plain!(
        "min_separated_value_size",
        Rule::Free,
        "",
        min_separated_value_size
    ),
    plain!("vlog_segment_size", Rule::Free, "", vlog_segment_size),
    plain!(
        "vlog_memtable_value_max",
        Rule::Free,
        "",
        vlog_memtable_value_max
    ),
    plain!("vlog_gc", Rule::Free, "", vlog_gc),
    plain!("vlog_gc_ratio", Rule::Free, "", vlog_gc_ratio),
    plain!(
        "leveled.max_grandparent_overlap_factor",
        Rule::Free,
        "",
        leveled.max_grandparent_overlap_factor
    ),
    plain!("leveled.round_robin", Rule::Free, "", leveled.round_robin),
    plain!(
        "leveled.seek_compaction",
        Rule::Free,
        "",
        leveled.seek_compaction
    ),
    plain!(
        "leveled.seek_compaction_min_seeks",
        Rule::Free,
        "",
        leveled.seek_compaction_min_seeks
    ),
    plain!(
        "leveled.seek_compaction_bytes_per_seek",
        Rule::Free,
        "",
        leveled.seek_compaction_bytes_per_seek
    ),
    named!("flsm.policy", Rule::Free, "", FlsmPolicy, flsm.policy),
    plain!(
        "flsm.top_level_bits",
        Rule::FixedForFlsm,
        "",
        flsm.top_level_bits
    ),
    plain!(
        "flsm.bit_decrement",
        Rule::FixedForFlsm,
        "",
        flsm.bit_decrement
    ),
    plain!(
        "flsm.max_sstables_per_guard",
        Rule::Free,
        "",
        flsm.max_sstables_per_guard
    ),
    plain!("flsm.rewrite_ratio", Rule::Free, "", flsm.rewrite_ratio),
    plain!(
        "flsm.seek_compaction_trigger",
        Rule::Free,
        "",
        flsm.seek_compaction_trigger
    ),
    plain!("flsm.get_compaction", Rule::Free, "", flsm.get_compaction),
    plain!(
        "flsm.aggressive_ratio_percent",
        Rule::Free,
        "",
        flsm.aggressive_ratio_percent
    ),
    plain!(
        "flsm.parallel_seek_min_tables",
        Rule::Free,
        "",
        flsm.parallel_seek_min_tables
    ),
    plain!("lwc.division", Rule::Free, "", lwc.division),
    plain!("lwc.max_segments", Rule::Free, "", lwc.max_segments),
    plain!("lwc.seek_compaction", Rule::Free, "", lwc.seek_compaction),
    plain!(
        "lwc.seek_compaction_min_seeks",
        Rule::Free,
        "",
        lwc.seek_compaction_min_seeks
    ),
    plain!(
        "lwc.seek_compaction_bytes_per_seek",
        Rule::Free,
        "",
        lwc.seek_compaction_bytes_per_seek
    ),
    plain!(
        "lwc.seek_compaction_merges",
        Rule::Free,
        "",
        lwc.seek_compaction_merges
    ),
    // The trie's options steer which compactions run (when a pile is pushed down, when a
    // last-level container is collected, how many tables one filter cluster holds); none
    // decides how existing files are read (a table's container is its level's hash prefix,
    // the depth is `num_levels`, fixed; readers take clusters of any size), so all may
    // change. `trie.pinned_filter_levels` only sizes what is kept in memory: not recorded.
    plain!("trie.max_sub_levels", Rule::Free, "", trie.max_sub_levels),
    plain!(
        "trie.gc_garbage_ratio",
        Rule::Free,
        "",
        trie.gc_garbage_ratio
    ),
    plain!("trie.gc_sample_bits", Rule::Free, "", trie.gc_sample_bits),
];

/// A store's options record: recorded option keys and their values as text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredOptions {
    entries: BTreeMap<String, String>,
}

impl StoredOptions {
    /// The record of `options`.
    pub fn of(options: &Options) -> StoredOptions {
        StoredOptions {
            entries: FIELDS
                .iter()
                .map(|f| (f.key.to_string(), (f.get)(options)))
                .collect(),
        }
    }

    /// The value recorded for `key`, if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    /// The record's bytes: `shale-options 1\n`, then one `key=value\n` line per option in
    /// key order.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = format!("shale-options {OPTIONS_RECORD_VERSION}\n");
        for (k, v) in &self.entries {
            out.push_str(k);
            out.push('=');
            out.push_str(v);
            out.push('\n');
        }
        out.into_bytes()
    }

    /// Read a record written by [`StoredOptions::encode`]. Keys this build does not know
    /// are kept (and ignored by [`StoredOptions::apply`]).
    ///
    /// # Errors
    /// A description of what is wrong: not UTF-8, no version line, a newer version, a line
    /// without `=`, a key given twice.
    pub fn decode(bytes: &[u8]) -> std::result::Result<StoredOptions, String> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| "the options record is not UTF-8".to_string())?;
        let mut lines = text.lines();
        let version = lines
            .next()
            .and_then(|l| l.strip_prefix("shale-options "))
            .ok_or_else(|| {
                "the options record does not start with `shale-options N`".to_string()
            })?;
        let version: u32 = version
            .parse()
            .map_err(|_| format!("the options record's version {version:?} is not a number"))?;
        if version > OPTIONS_RECORD_VERSION {
            return Err(format!(
                "the options record is version {version}, written by a newer Shale; this build \
                 reads up to version {OPTIONS_RECORD_VERSION}"
            ));
        }
        let mut entries = BTreeMap::new();
        for (i, line) in lines.enumerate() {
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| format!("line {} of the options record has no `=`", i + 2))?;
            if entries.insert(k.to_string(), v.to_string()).is_some() {
                return Err(format!("the options record gives {k} twice"));
            }
        }
        Ok(StoredOptions { entries })
    }

    /// `base` with every recorded option set from the record (the others, such as the file
    /// system, caches and threads, kept from `base`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming an option whose recorded value this build cannot
    /// use (for example a layout it does not have).
    pub fn apply(&self, mut base: Options) -> Result<Options> {
        for f in FIELDS {
            if let Some(v) = self.entries.get(f.key) {
                (f.set)(&mut base, v).map_err(|e| {
                    Error::InvalidArgument(format!(
                        "the store records {}={v}, which this build cannot use: {e}",
                        f.key
                    ))
                })?;
            }
        }
        Ok(base)
    }

    /// Check that a store whose record this is may be opened with the options whose record
    /// is `asked` (the store is in `dir`): every fixed option must equal the recorded one.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first option that differs, the stored value,
    /// and how to open the store instead.
    pub fn check(&self, asked: &StoredOptions, dir: &Path) -> Result<()> {
        let flsm = self.get("layout") == Some(LayoutKind::Flsm.name());
        for f in FIELDS {
            let fixed = match f.rule {
                Rule::Free => false,
                Rule::Fixed => true,
                Rule::FixedForFlsm => flsm,
            };
            // A fixed option added after the store's record was written is the default
            // there (a store made before `expiring_values` existed holds plain values).
            let default;
            let stored = match self.get(f.key) {
                Some(s) => Some(s),
                None if fixed && !self.entries.is_empty() => {
                    default = (f.get)(&Options::default());
                    Some(default.as_str())
                }
                None => None,
            };
            let (Some(stored), Some(asked)) = (stored, asked.get(f.key)) else {
                continue;
            };
            if !fixed || stored == asked {
                continue;
            }
            let mut how = format!("set {} = {stored}", f.key);
            if f.key == "expiring_values" {
                how.push_str(if stored == "true" {
                    " (open it with shale::ttl::TtlDb)"
                } else {
                    " (a store of plain values cannot become one of expiring values)"
                });
            }
            if !f.flag.is_empty() {
                how.push_str(&format!(" (`{} {stored}`", f.flag));
                if let Some(p) = self.preset() {
                    how.push_str(&format!(" or `--design {p}`"));
                }
                how.push_str(" on the command line)");
            }
            return Err(Error::InvalidArgument(format!(
                "the store in {} was created with {}={stored}, but the options ask for {asked}: \
                 {how}, or leave the design out to use the store's own options \
                 (shale::load_options; the command line does this when no --design is given)",
                dir.display(),
                f.key,
            )));
        }
        Ok(())
    }

    /// The preset whose axes the record names, if one does.
    pub fn preset(&self) -> Option<&'static str> {
        const AXES: [&str; 4] = ["layout", "values", "table", "memory"];
        Options::available_presets().into_iter().find(|p| {
            Options::preset(p).is_ok_and(|o| {
                let theirs = StoredOptions::of(&o);
                AXES.iter().all(|k| theirs.get(k) == self.get(k))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_round_trips_through_the_record() {
        let mut o = Options::preset("pebblesdb").unwrap();
        o.table.compression = Compression::Lz4;
        o.table.bloom_bits_per_key = 16;
        o.flsm.top_level_bits = 9;
        o.flsm.policy = FlsmPolicy::Tiered;
        o.vlog_gc_ratio = 0.375;
        o.vlog_gc = false;
        let bytes = StoredOptions::of(&o).encode();
        assert!(bytes.starts_with(
            b"shale-options 1\nexpiring_values=false\nflsm.aggressive_ratio_percent=25\n"
        ));
        let back = StoredOptions::decode(&bytes).unwrap();
        assert_eq!(back, StoredOptions::of(&o));
        let applied = back.apply(Options::default()).unwrap();
        assert_eq!(StoredOptions::of(&applied), StoredOptions::of(&o));
        assert_eq!(applied.layout, LayoutKind::Flsm);
        assert_eq!(applied.write_buffer_size, o.write_buffer_size);
        assert_eq!(applied.table.compression, Compression::Lz4);
        assert_eq!(applied.vlog_gc_ratio, 0.375);
        assert_eq!(applied.flsm.policy, FlsmPolicy::Tiered);
        assert!(applied.mmap_reads, "the preset's, over the base's");
        assert_eq!(back.preset(), Some("pebblesdb"));
        // The trie's options, recorded like every layout's.
        let mut t = Options::preset("lsm-trie").unwrap();
        t.trie.max_sub_levels = 5;
        t.trie.gc_garbage_ratio = 0.3;
        t.trie.gc_sample_bits = 2;
        t.trie.pinned_filter_levels = 1;
        let rec = StoredOptions::of(&t);
        assert_eq!(rec.get("trie.max_sub_levels"), Some("5"));
        assert_eq!(rec.get("trie.gc_garbage_ratio"), Some("0.3"));
        assert_eq!(rec.get("trie.gc_sample_bits"), Some("2"));
        assert_eq!(
            rec.get("trie.pinned_filter_levels"),
            None,
            "memory only: not recorded"
        );
        let applied = StoredOptions::decode(&rec.encode())
            .unwrap()
            .apply(Options::default())
            .unwrap();
        assert_eq!(applied.layout, LayoutKind::Trie);
        assert_eq!(applied.trie.max_sub_levels, 5);
        assert_eq!(applied.trie.gc_garbage_ratio, 0.3);
        assert_eq!(applied.trie.gc_sample_bits, 2);
        assert_eq!(applied.trie.pinned_filter_levels, 64, "the base's");
        // Free: another value at reopen is accepted (and recorded from then on).
        let mut asked = t.clone();
        asked.trie.max_sub_levels = 12;
        asked.trie.gc_garbage_ratio = 0.9;
        rec.check(&StoredOptions::of(&asked), Path::new("/s"))
            .unwrap();
    }

    /// The example of `docs/format/options.md` is what the code writes.
    #[test]
    fn the_format_docs_example_is_the_wisckey_paper_presets_record() {
        let doc = include_str!("../../../../docs/format/options.md");
        let example = doc
            .split("## Example")
            .nth(1)
            .and_then(|s| s.split("```\n").nth(1))
            .unwrap();
        let record = StoredOptions::of(&Options::paper_preset("wisckey").unwrap()).encode();
        assert_eq!(example, String::from_utf8(record).unwrap());
    }

    #[test]
    fn a_fixed_option_that_differs_is_refused_with_the_way_out() {
        let stored = StoredOptions::of(&Options::preset("wisckey").unwrap());
        let dir = Path::new("/s");
        let check =
            |stored: &StoredOptions, asked: &Options| stored.check(&StoredOptions::of(asked), dir);
        let mut asked = Options::preset("wisckey").unwrap();
        asked.table.bloom_bits_per_key = 3;
        asked.memory = MemoryKind::SkipList;
        check(&stored, &asked).unwrap();
        let e = check(&stored, &Options::preset("leveldb").unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("created with values=vlog, but the options ask for inline")
                && e.contains("`--values vlog` or `--design wisckey`"),
            "{e}"
        );
        // Guard bits only bind an FLSM store.
        let mut asked = Options::preset("wisckey").unwrap();
        asked.flsm.top_level_bits = 5;
        check(&stored, &asked).unwrap();
        let flsm = StoredOptions::of(&Options::preset("pebblesdb").unwrap());
        let mut asked = Options::preset("pebblesdb").unwrap();
        asked.flsm.top_level_bits = 5;
        let e = check(&flsm, &asked).unwrap_err().to_string();
        assert!(
            e.contains("flsm.top_level_bits=18, but the options ask for 5"),
            "{e}"
        );
    }

    /// A record written before `expiring_values` existed holds plain values: a TtlDb open
    /// of it is refused, a plain one is not.
    #[test]
    fn a_fixed_key_missing_from_an_older_record_is_its_default() {
        let mut old = StoredOptions::of(&Options::default());
        old.entries.remove("expiring_values");
        let old = StoredOptions::decode(&old.encode()).unwrap();
        let dir = Path::new("/s");
        old.check(&StoredOptions::of(&Options::default()), dir)
            .unwrap();
        let ttl = Options {
            expiring_values: true,
            ..Options::default()
        };
        let e = old
            .check(&StoredOptions::of(&ttl), dir)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("created with expiring_values=false, but the options ask for true"),
            "{e}"
        );
    }

    #[test]
    fn bad_records_are_described() {
        for (bytes, want) in [
            (&b"\xff"[..], "not UTF-8"),
            (b"layout=leveled\n", "does not start with"),
            (b"shale-options 2\n", "version 2, written by a newer Shale"),
            (b"shale-options x\n", "is not a number"),
            (
                b"shale-options 1\nlayout\n",
                "line 2 of the options record has no `=`",
            ),
            (b"shale-options 1\na=1\na=2\n", "gives a twice"),
        ] {
            let e = StoredOptions::decode(bytes).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        let unknown =
            StoredOptions::decode(b"shale-options 1\nlayout=hashtree\nfuture=1\n").unwrap();
        let e = unknown.apply(Options::default()).unwrap_err().to_string();
        assert!(
            e.contains("records layout=hashtree") && e.contains("unknown layout"),
            "{e}"
        );
        let e = StoredOptions::decode(b"shale-options 1\nnum_levels=many\n")
            .unwrap()
            .apply(Options::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("num_levels=many"), "{e}");
    }
}
