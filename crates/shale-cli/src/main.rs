//! `shale`: inspect, load, benchmark and stress a Shale store.
//!
//! Exit status: 0 on success; 1 when `get` finds no value; 2 on any error (the message goes
//! to stderr as `error: ...`); 3 when a benchmark finds a wrong answer (a key that should be
//! there is missing, or one that should not is found); for `verify`, 4 when the store is
//! damaged (open would fail) and 5 when it is healthy but open would drop a torn tail of
//! its log.

mod axes;
mod bench;
mod cmd_admin;
mod cmd_kv;
mod engine;
mod engines;
mod escape;
mod json;
#[cfg(feature = "peers")]
mod peers;
mod plots;
mod progress;
mod shape;
mod stress;
mod ycsb;

use std::fmt;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The error of a command: a message for a person, or an I/O error of the output itself.
#[derive(Debug)]
pub enum CliError {
    /// Something went wrong; the text says what.
    Msg(String),
    /// Writing to stdout or a result file failed.
    Io(std::io::Error),
}

impl CliError {
    /// An error with message `m`.
    pub fn msg(m: impl Into<String>) -> Self {
        CliError::Msg(m.into())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Msg(m) => f.write_str(m),
            CliError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<shale::Error> for CliError {
    fn from(e: shale::Error) -> Self {
        CliError::Msg(e.to_string())
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::Io(e)
    }
}

impl From<String> for CliError {
    fn from(m: String) -> Self {
        CliError::Msg(m)
    }
}

/// Result of a command: the exit status to use, or an error (status 2).
pub type CliResult<T = ExitCode> = Result<T, CliError>;

/// Exit status when a benchmark's reads disagree with what was written.
pub const EXIT_WRONG_ANSWER: u8 = 3;

/// Exit status of `verify` for a damaged store: open would fail (or not return the
/// committed data).
pub const EXIT_DAMAGED: u8 = 4;

/// Exit status of `verify` for a store that opens with all its committed data, but whose
/// log ends in a torn tail that open would drop (a write a crash cut).
pub const EXIT_TORN_TAIL: u8 = 5;

#[derive(Parser, Debug)]
#[command(
    name = "shale",
    version,
    about = "Inspect, load and benchmark a Shale store",
    long_about = "Inspect, load and benchmark a Shale store.\n\n\
        Keys and values on the command line and in scan/dump/load lines are escaped text: \
        printable ASCII is literal, a backslash is \\\\, any other byte is \\xNN.\n\n\
        Read commands (get, scan, dump, stats, properties, shape, verify) open the store \
        read-only: they \
        write nothing and work while another process has the store open.\n\n\
        Exit status: 0 ok, 1 get found nothing, 2 error, 3 a benchmark read a wrong answer, \
        4 verify found the store damaged, 5 verify found it healthy but open would drop a \
        torn log tail."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the value of KEY (exit 1 if absent).
    Get(cmd_kv::GetArgs),
    /// Set KEY to VALUE.
    Put(cmd_kv::PutArgs),
    /// Delete KEY.
    Delete(cmd_kv::DeleteArgs),
    /// Delete every key in [START, END) with one range tombstone (not on the trie layout).
    DeleteRange(cmd_kv::DeleteRangeArgs),
    /// Print `key<TAB>value` lines of a key range.
    Scan(cmd_kv::ScanArgs),
    /// Write `key<TAB>value` lines read from stdin.
    Load(cmd_kv::LoadArgs),
    /// Print every `key<TAB>value` pair.
    Dump(cmd_kv::StoreArgs),
    /// Print the store's statistics.
    Stats(cmd_kv::StoreArgs),
    /// Would open succeed with exactly the committed data? Recovers the store read-only and
    /// checks every checksum. Exit 0 healthy, 4 damaged, 5 healthy but a torn log tail
    /// would be dropped.
    Verify(cmd_kv::StoreArgs),
    /// Compact a key range (default: everything).
    Compact(cmd_kv::CompactArgs),
    /// Rebuild a damaged store's MANIFEST and CURRENT from its files (LevelDB's RepairDB):
    /// every table read whole, the logs converted to tables; what cannot be used is moved
    /// to DB/lost/, never deleted. Prints what was recovered and what was set aside.
    /// --design is needed only when no MANIFEST of the store reads.
    Repair(cmd_kv::StoreArgs),
    /// Copy the store into the new directory DEST (a checkpoint, taken while the store
    /// stays usable): tables and sealed value-log segments hard-linked, the rest copied.
    Checkpoint(cmd_admin::CheckpointArgs),
    /// Write the memtable to table files.
    Flush(cmd_kv::StoreArgs),
    /// Collect value-log garbage (stores with a value log: wisckey and other vlog designs).
    Gc(cmd_kv::StoreArgs),
    /// Print the store's properties (`Db::property`), or the one named.
    Properties(cmd_admin::PropertiesArgs),
    /// db_bench-compatible micro-benchmarks.
    Bench(Box<bench::BenchArgs>),
    /// YCSB core workloads A-F.
    Ycsb(Box<ycsb::YcsbArgs>),
    /// Mixed concurrent workload with an expected-state file, verifiable after a kill -9.
    Stress(Box<stress::StressArgs>),
    /// Draw report.html (SVG charts) from saved `--json` lines of bench or ycsb runs.
    Report(plots::ReportArgs),
    /// Print the tree's shape (levels to scale, guards, value-log garbage); --svg draws it.
    Shape(shape::ShapeArgs),
}

fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Get(a) => cmd_kv::get(&a),
        Command::Put(a) => cmd_kv::put(&a),
        Command::Delete(a) => cmd_kv::delete(&a),
        Command::DeleteRange(a) => cmd_kv::delete_range(&a),
        Command::Scan(a) => cmd_kv::scan(&a),
        Command::Load(a) => cmd_kv::load(&a),
        Command::Dump(a) => cmd_kv::dump(&a),
        Command::Stats(a) => cmd_kv::stats(&a),
        Command::Verify(a) => cmd_kv::verify(&a),
        Command::Compact(a) => cmd_kv::compact(&a),
        Command::Repair(a) => cmd_admin::repair(&a),
        Command::Checkpoint(a) => cmd_admin::checkpoint(&a),
        Command::Flush(a) => cmd_admin::flush(&a),
        Command::Gc(a) => cmd_admin::gc(&a),
        Command::Properties(a) => cmd_admin::properties(&a),
        Command::Bench(a) => bench::run(&a),
        Command::Ycsb(a) => ycsb::run(&a),
        Command::Stress(a) => stress::run(&a),
        Command::Report(a) => plots::run(&a),
        Command::Shape(a) => shape::run(&a),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        // The reader of our output went away (`shale dump | head`): not an error of ours.
        Err(CliError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("shale").chain(args.iter().copied()))
    }

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn db_is_required_on_store_commands() {
        for cmd in [
            "get",
            "put",
            "delete",
            "delete-range",
            "scan",
            "load",
            "dump",
            "stats",
            "verify",
            "compact",
            "repair",
            "shape",
            "checkpoint",
            "flush",
            "gc",
            "properties",
        ] {
            let e = parse(&[cmd]).unwrap_err();
            assert!(e.to_string().contains("--db"), "{cmd}: {e}");
        }
    }

    #[test]
    fn parses_kv_commands() {
        let c = parse(&["get", "--db", "/d", "k\\x00"]).unwrap();
        match c.command {
            Command::Get(a) => {
                assert_eq!(a.store.db.to_str(), Some("/d"));
                assert_eq!(a.store.design, None);
                assert_eq!(a.key, "k\\x00");
            }
            other => panic!("{other:?}"),
        }
        let c = parse(&[
            "put", "--db", "/d", "--sync", "k", "v", "--design", "leveldb",
        ])
        .unwrap();
        assert!(matches!(c.command, Command::Put(ref a) if a.sync && a.value == "v"));
        let c = parse(&["load", "--db", "/d", "--sync", "--ack"]).unwrap();
        assert!(matches!(c.command, Command::Load(ref a) if a.sync && a.ack && a.batch == 1000));
        let c = parse(&[
            "scan", "--db", "/d", "--from", "a", "--to", "b", "--limit", "3",
        ])
        .unwrap();
        assert!(
            matches!(c.command, Command::Scan(ref a) if a.limit == Some(3) && a.from.as_deref() == Some("a"))
        );
        assert!(parse(&["scan", "--db", "/d", "--prefix", "p", "--from", "a"]).is_err());
        let c = parse(&["compact", "--db", "/d", "--to", "z"]).unwrap();
        assert!(matches!(c.command, Command::Compact(ref a) if a.from.is_none()));
    }

    #[test]
    fn bench_accepts_db_bench_spellings() {
        let c = parse(&[
            "bench",
            "--benchmarks=fillseq,readrandom",
            "--num=1000",
            "--key_size=20",
            "--value-size",
            "64",
            "--histogram=1",
            "--use_existing_db=0",
            "--sync",
            "--compression_type=lz4",
            "--seek_nexts=5",
            "--cache_size=1048576",
        ])
        .unwrap();
        match c.command {
            Command::Bench(a) => {
                assert_eq!(a.benchmarks, "fillseq,readrandom");
                assert_eq!(a.num, 1000);
                assert_eq!(a.key_size, 20);
                assert_eq!(a.value_size, 64);
                assert!(a.histogram);
                assert!(!a.use_existing_db);
                assert!(a.sync);
                assert_eq!(a.store.compression, "lz4");
                assert_eq!(a.seek_nexts, 5);
                assert_eq!(a.store.cache_size, 1 << 20);
                assert_eq!(a.reads, None);
                assert_eq!(a.seed, 42);
                assert_eq!(a.threads, 1);
            }
            other => panic!("{other:?}"),
        }
        let c = parse(&["bench"]).unwrap();
        match c.command {
            Command::Bench(a) => {
                assert_eq!(a.num, 1_000_000);
                assert_eq!(a.key_size, 16);
                assert_eq!(a.value_size, 100);
                assert_eq!(a.store.write_buffer_size, None);
                assert!(!a.histogram && !a.sync && !a.use_existing_db);
                assert_eq!(a.store.engine, engine::EngineKind::Shale);
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(&["bench", "--engine", "leveldb"]).is_err());
        // Both RocksDB configurations are engines of their own, named apart in reports.
        for (flag, kind) in [
            ("rocksdb", engine::EngineKind::Rocksdb),
            ("rocksdb-tuned", engine::EngineKind::RocksdbTuned),
        ] {
            match parse(&["bench", "--engine", flag]).unwrap().command {
                Command::Bench(a) => {
                    assert_eq!(a.store.engine, kind);
                    assert_eq!(a.store.engine.name(), flag);
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(parse(&["bench", "--histogram=maybe"]).is_err());
    }

    #[test]
    fn parses_ycsb() {
        let c = parse(&[
            "ycsb",
            "--workload",
            "e",
            "--records",
            "10",
            "--phase",
            "run",
        ])
        .unwrap();
        match c.command {
            Command::Ycsb(a) => {
                assert_eq!(a.workload, ycsb::Workload::E);
                assert_eq!(a.records, 10);
                assert_eq!(a.operations, 100_000);
                assert_eq!(a.phase, ycsb::Phase::Run);
                assert_eq!(a.field_count, 10);
                assert_eq!(a.field_length, 100);
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(&["ycsb", "--workload", "g"]).is_err());
    }
}
