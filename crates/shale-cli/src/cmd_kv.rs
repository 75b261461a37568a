//! The store commands: get, put, delete, scan, load, dump, stats, verify, compact.

use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use indicatif::ProgressBar;
use shale::{Db, IterOptions, Options, WriteBatch, WriteOptions};

use crate::escape::{escape, unescape, unescape_arg};
use crate::{CliError, CliResult};

/// The store to open.
#[derive(Args, Debug, Clone)]
pub struct StoreArgs {
    /// Directory of the store.
    #[arg(long, alias = "dir")]
    pub db: PathBuf,
    /// Design preset (see `shale bench --list-designs`). Needed only to create a store:
    /// an existing store opens with the options it records (default for a new store:
    /// leveldb).
    #[arg(long)]
    pub design: Option<String>,
    /// Each axis chosen on its own, over the preset.
    #[command(flatten)]
    pub axes: crate::axes::AxisFlags,
    /// What opening does with a damaged write-ahead log: tolerate-corrupted-tail-records
    /// (drop a torn tail, refuse other damage), absolute-consistency (refuse any),
    /// point-in-time (keep the writes before the first damage), skip-any-corrupted-records
    /// (salvage everything readable).
    #[arg(long, default_value = "tolerate-corrupted-tail-records")]
    pub wal_recovery_mode: String,
    /// Separated values: threads that read a scan's values ahead of it (0 disables
    /// prefetching); not recorded in the store (default 4).
    #[arg(long = "prefetch-threads")]
    pub prefetch_threads: Option<usize>,
    /// Separated values: entries a sequential scan reads ahead (0 disables prefetching, at
    /// most 4096); not recorded (default 16).
    #[arg(long = "prefetch-depth")]
    pub prefetch_depth: Option<usize>,
    /// Separated values: steps of a scan after which it reads ahead (1 to 1000000); not
    /// recorded (default 2).
    #[arg(long = "prefetch-after", alias = "prefetch-threshold")]
    pub prefetch_after: Option<usize>,
}

impl StoreArgs {
    /// The options to open with: the `--design` preset when one is given, else the
    /// store's own (its options record) when a store exists, else `leveldb`'s; then each
    /// axis flag over them.
    fn options(&self, create: bool) -> CliResult<Options> {
        let mut o = match &self.design {
            Some(d) => Options::preset(d)?,
            None if self.db.join("CURRENT").exists() => {
                shale::load_options(&self.db, Options::default())?
            }
            None => Options::preset("leveldb")?,
        };
        self.axes.apply(&mut o)?;
        o.create_if_missing = create;
        o.wal_recovery_mode = shale::WalRecoveryMode::from_name(&self.wal_recovery_mode)?;
        if let Some(n) = self.prefetch_threads {
            o.scan_prefetch_threads = n;
        }
        if let Some(n) = self.prefetch_depth {
            o.scan_prefetch_depth = n;
        }
        if let Some(n) = self.prefetch_after {
            o.scan_prefetch_after = n;
        }
        // Bad values are refused here, with the option's name, before anything is opened.
        o.validate()?;
        Ok(o)
    }

    /// The options `repair` starts from: the `--design` preset (default leveldb) and the
    /// axis flags. Repair itself takes the store's options record from its newest MANIFEST
    /// that reads, so these matter only when none does.
    pub fn options_for_repair(&self) -> CliResult<Options> {
        let mut o = Options::preset(self.design.as_deref().unwrap_or("leveldb"))?;
        self.axes.apply(&mut o)?;
        o.create_if_missing = false;
        o.wal_recovery_mode = shale::WalRecoveryMode::from_name(&self.wal_recovery_mode)?;
        Ok(o)
    }

    /// Open for commands that write (creating the store if needed).
    fn open_rw(&self) -> CliResult<Db> {
        Ok(Db::open(&self.db, self.options(true)?)?)
    }

    /// Open for commands that reorganise: a missing store is an error rather than silently
    /// created.
    pub fn open_existing(&self) -> CliResult<Db> {
        Ok(Db::open(&self.db, self.options(false)?)?)
    }

    /// Open for commands that only read (`Db::open_read_only`): nothing in the store is
    /// written, and it works while another process has the store open.
    pub fn open_read_only(&self) -> CliResult<Db> {
        Ok(Db::open_read_only(&self.db, self.options(false)?)?)
    }
}

/// `shale get`.
#[derive(Args, Debug)]
pub struct GetArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The key (escaped text).
    pub key: String,
}

/// `shale put`.
#[derive(Args, Debug)]
pub struct PutArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The key (escaped text).
    pub key: String,
    /// The value (escaped text).
    pub value: String,
    /// Return only once the write is durable.
    #[arg(long)]
    pub sync: bool,
}

/// `shale delete`.
#[derive(Args, Debug)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The key (escaped text).
    pub key: String,
    /// Return only once the delete is durable.
    #[arg(long)]
    pub sync: bool,
}

/// `shale delete-range`.
#[derive(Args, Debug)]
pub struct DeleteRangeArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// First key deleted (escaped text, inclusive).
    pub start: String,
    /// Keys from this one on are kept (escaped text, exclusive).
    pub end: String,
    /// Return only once the range tombstone is durable.
    #[arg(long)]
    pub sync: bool,
}

/// `shale scan`.
#[derive(Args, Debug)]
pub struct ScanArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Only keys starting with P.
    #[arg(long, value_name = "P", conflicts_with_all = ["from", "to"])]
    pub prefix: Option<String>,
    /// Only keys >= A (inclusive).
    #[arg(long, value_name = "A")]
    pub from: Option<String>,
    /// Only keys < B: the end is exclusive (as `ldb scan --to`; `compact --to` is
    /// inclusive, as RocksDB's `CompactRange`).
    #[arg(long, value_name = "B")]
    pub to: Option<String>,
    /// Print at most N pairs.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Print keys only.
    #[arg(long)]
    pub keys_only: bool,
    /// Reverse key order: the largest key first (with --limit, the N largest keys of the
    /// range). Not time order: the store keeps one value per key.
    #[arg(long)]
    pub reverse: bool,
}

/// `shale load`.
#[derive(Args, Debug)]
pub struct LoadArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Make each write durable before the next.
    #[arg(long)]
    pub sync: bool,
    /// Write each line on its own and print `ok <key>` once the write returned (durable with
    /// --sync): a crash test can trust every acknowledged line.
    #[arg(long)]
    pub ack: bool,
    /// Lines per write batch (without --ack).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
}

/// `shale compact`.
#[derive(Args, Debug)]
pub struct CompactArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// First key of the range, inclusive (default: the first key).
    #[arg(long, value_name = "A")]
    pub from: Option<String>,
    /// Last key of the range, inclusive (default: the last key): B itself is compacted,
    /// as by RocksDB's `CompactRange` and `ldb compact --to` (`scan --to` is exclusive,
    /// as `ldb scan --to`).
    #[arg(long, value_name = "B")]
    pub to: Option<String>,
}

/// `one` for 1, else `many`.
pub fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

fn opt_arg(name: &str, v: Option<&String>) -> CliResult<Option<Vec<u8>>> {
    Ok(v.map(|s| unescape_arg(name, s)).transpose()?)
}

/// Print the value of a key; exit 1 when it is absent.
pub fn get(a: &GetArgs) -> CliResult {
    let key = unescape_arg("KEY", &a.key)?;
    let db = a.store.open_read_only()?;
    let value = db.get(&key)?;
    db.close()?;
    match value {
        Some(v) => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", escape(&v))?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        None => Ok(ExitCode::from(1)),
    }
}

/// Set one key.
pub fn put(a: &PutArgs) -> CliResult {
    let key = unescape_arg("KEY", &a.key)?;
    let value = unescape_arg("VALUE", &a.value)?;
    let db = a.store.open_rw()?;
    db.put_opt(&key, &value, WriteOptions { sync: a.sync })?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// Delete one key.
pub fn delete(a: &DeleteArgs) -> CliResult {
    let key = unescape_arg("KEY", &a.key)?;
    let db = a.store.open_rw()?;
    db.delete_opt(&key, WriteOptions { sync: a.sync })?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// Delete every key in `[START, END)` with one range tombstone (`Db::delete_range`).
pub fn delete_range(a: &DeleteRangeArgs) -> CliResult {
    let start = unescape_arg("START", &a.start)?;
    let end = unescape_arg("END", &a.end)?;
    let db = a.store.open_rw()?;
    db.delete_range_opt(&start, &end, WriteOptions { sync: a.sync })?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// Key-value pairs in either direction.
type Pairs = Box<dyn Iterator<Item = shale::Result<(Vec<u8>, Vec<u8>)>>>;

fn print_pairs(
    db: &Db,
    opts: IterOptions,
    limit: Option<u64>,
    keys_only: bool,
    reverse: bool,
) -> CliResult<()> {
    let mut out = BufWriter::new(std::io::stdout().lock());
    let iter = db.iter(opts)?;
    let iter: Pairs = if reverse {
        Box::new(iter.rev())
    } else {
        Box::new(iter)
    };
    let limit = limit.unwrap_or(u64::MAX);
    for (n, item) in iter.enumerate() {
        if n as u64 >= limit {
            break;
        }
        let (k, v) = item?;
        if keys_only {
            writeln!(out, "{}", escape(&k))?;
        } else {
            writeln!(out, "{}\t{}", escape(&k), escape(&v))?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Print the pairs of a key range.
pub fn scan(a: &ScanArgs) -> CliResult {
    let opts = IterOptions {
        prefix: opt_arg("--prefix", a.prefix.as_ref())?,
        lower_bound: opt_arg("--from", a.from.as_ref())?,
        upper_bound: opt_arg("--to", a.to.as_ref())?,
        ..Default::default()
    };
    let db = a.store.open_read_only()?;
    print_pairs(&db, opts, a.limit, a.keys_only, a.reverse)?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// Print every pair.
pub fn dump(a: &StoreArgs) -> CliResult {
    let db = a.open_read_only()?;
    print_pairs(&db, IterOptions::default(), None, false, false)?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// One `key<TAB>value` line of load input, unescaped. `line` excludes the newline.
pub fn parse_load_line(line: &[u8], number: u64) -> Result<(Vec<u8>, Vec<u8>), String> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let tab = line
        .iter()
        .position(|&b| b == b'\t')
        .ok_or_else(|| format!("line {number}: expected key<TAB>value, found no tab"))?;
    let (k, v) = line.split_at(tab);
    let v = v.get(1..).unwrap_or_default();
    let key = unescape(k).map_err(|e| format!("line {number}: key: {e}"))?;
    let value = unescape(v).map_err(|e| format!("line {number}: value: {e}"))?;
    Ok((key, value))
}

/// Write `key<TAB>value` lines from stdin.
pub fn load(a: &LoadArgs) -> CliResult {
    let db = a.store.open_rw()?;
    let stdin = std::io::stdin();
    let bar = crate::progress::bar("load", None);
    let result = load_from(
        &db,
        a,
        &mut stdin.lock(),
        &mut std::io::stdout().lock(),
        &bar,
    );
    bar.finish_and_clear();
    let closed = db.close();
    result?;
    closed?;
    Ok(ExitCode::SUCCESS)
}

fn load_from(
    db: &Db,
    a: &LoadArgs,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    progress: &ProgressBar,
) -> CliResult<u64> {
    let wo = WriteOptions { sync: a.sync };
    let mut batch = WriteBatch::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        number += 1;
        progress.inc(1);
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let (key, value) = match parse_load_line(text, number) {
            Ok(kv) => kv,
            Err(e) => {
                // Lines before the bad one are written: the store holds a prefix of the input.
                if !batch.is_empty() {
                    db.write_opt(std::mem::take(&mut batch), wo)?;
                }
                return Err(CliError::Msg(format!(
                    "{e}; {} (nothing from this line on)",
                    match number - 1 {
                        0 => "nothing was written".to_string(),
                        1 => "the 1 line before it was written".to_string(),
                        n => format!("the {n} lines before it were written"),
                    }
                )));
            }
        };
        if a.ack {
            let mut b = WriteBatch::new();
            b.put(&key, &value);
            db.write_opt(b, wo)?;
            writeln!(out, "ok {}", escape(&key))?;
            out.flush()?;
        } else {
            batch.put(&key, &value);
            if batch.len() as u64 >= a.batch {
                db.write_opt(std::mem::take(&mut batch), wo)?;
            }
        }
    }
    if !batch.is_empty() {
        db.write_opt(batch, wo)?;
    }
    Ok(number)
}

/// Print the store's statistics.
pub fn stats(a: &StoreArgs) -> CliResult {
    let db = a.open_read_only()?;
    let mut out = std::io::stdout().lock();
    write!(out, "{}", db.stats())?;
    if let Some(p) = db.property("shale.design") {
        writeln!(out, "design: {p}")?;
    }
    out.flush()?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

/// Would open succeed and return exactly the committed data? Exit 0 yes,
/// [`crate::EXIT_DAMAGED`] no (the damage on stderr), [`crate::EXIT_TORN_TAIL`] yes but a
/// torn tail of the log would be dropped; 2 when the check itself could not run.
pub fn verify(a: &StoreArgs) -> CliResult {
    let spinner = crate::progress::spinner("verify");
    let r = shale::verify(&a.db, a.options(false)?);
    spinner.finish_and_clear();
    let r = match r {
        Ok(r) => r,
        Err(e @ shale::Error::Corruption { .. }) => {
            eprintln!("damaged: {e}");
            return Ok(ExitCode::from(crate::EXIT_DAMAGED));
        }
        Err(e) => return Err(e.into()),
    };
    let mut out = std::io::stdout().lock();
    // A value log is the store's log: its segments are counted on their own line.
    let wal = if r.logs > 0 || r.placement.segments == 0 {
        format!(
            "{} {}, ",
            r.logs,
            plural(r.logs, "write-ahead log", "write-ahead logs")
        )
    } else {
        String::new()
    };
    writeln!(
        out,
        "ok: {} {}, {wal}{} {}, {} {}, {} {} checked in {}",
        r.tables,
        plural(r.tables, "table", "tables"),
        r.manifests,
        plural(r.manifests, "MANIFEST", "MANIFESTs"),
        r.bytes,
        plural(r.bytes as usize, "byte", "bytes"),
        r.entries,
        plural(r.entries as usize, "entry", "entries"),
        a.db.display()
    )?;
    if r.placement.segments > 0 {
        writeln!(
            out,
            "value log: {} {}, {} {}, {} value {} checked",
            r.placement.segments,
            plural(r.placement.segments, "segment", "segments"),
            r.placement.records,
            plural(r.placement.records as usize, "record", "records"),
            r.placement.pointers,
            plural(r.placement.pointers as usize, "pointer", "pointers")
        )?;
    }
    // Files of another store are not the store's: open leaves them alone, so they do not
    // make it damaged, but a person should know they are there.
    for t in &r.foreign_tables {
        writeln!(out, "foreign table {t}")?;
    }
    out.flush()?;
    if r.placement.log_bytes_dropped > 0 {
        eprintln!(
            "torn tail: open would drop {} bytes of the log (a write a crash cut, or what \
             --wal-recovery-mode cuts or skips)",
            r.placement.log_bytes_dropped
        );
        return Ok(ExitCode::from(crate::EXIT_TORN_TAIL));
    }
    Ok(ExitCode::SUCCESS)
}

/// Compact a key range.
pub fn compact(a: &CompactArgs) -> CliResult {
    let from = opt_arg("--from", a.from.as_ref())?;
    let to = opt_arg("--to", a.to.as_ref())?;
    let db = a.store.open_existing()?;
    let spinner = crate::progress::spinner("compact");
    let r = db.compact_range(from.as_deref(), to.as_deref());
    spinner.finish_and_clear();
    r?;
    db.close()?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_lines_parse_and_unescape() {
        assert_eq!(
            parse_load_line(b"k1\tv1", 1).unwrap(),
            (b"k1".to_vec(), b"v1".to_vec())
        );
        assert_eq!(
            parse_load_line(b"\\x00\\x09\t\\\\", 1).unwrap(),
            (vec![0, 9], b"\\".to_vec())
        );
        assert_eq!(
            parse_load_line(b"k\t", 1).unwrap(),
            (b"k".to_vec(), Vec::new())
        );
        assert_eq!(
            parse_load_line(b"k\tv\r", 1).unwrap(),
            (b"k".to_vec(), b"v".to_vec())
        );
        // The first tab separates; a later raw tab is part of the value.
        assert_eq!(parse_load_line(b"k\ta\tb", 1).unwrap().1, b"a\tb".to_vec());
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let e = parse_load_line(b"no tab here", 7).unwrap_err();
        assert!(e.starts_with("line 7:"), "{e}");
        let e = parse_load_line(b"k\\q\tv", 12).unwrap_err();
        assert!(e.starts_with("line 12: key:"), "{e}");
        let e = parse_load_line(b"k\tv\\x1", 3).unwrap_err();
        assert!(e.starts_with("line 3: value:"), "{e}");
        assert!(parse_load_line(b"", 1).is_err());
    }

    #[test]
    fn scan_output_round_trips_through_load_parsing() {
        let key: Vec<u8> = (0..=255u8).collect();
        let value = b"v\t\\\n".to_vec();
        let line = format!("{}\t{}", escape(&key), escape(&value));
        assert!(!line.contains('\n'));
        assert_eq!(parse_load_line(line.as_bytes(), 1).unwrap(), (key, value));
    }
}
