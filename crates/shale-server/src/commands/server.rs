//! Server commands: COMMAND (and COUNT, DOCS, INFO, LIST), INFO, CONFIG GET, TIME and
//! SHUTDOWN.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use super::table::{COMMANDS, Command, lookup};
use super::{CmdResult, Ctx, Flow, SYNTAX_ERR, keys};
use crate::config::SyncMode;
use crate::glob;

fn command_info_entry(ctx: &mut Ctx<'_>, c: &Command) {
    let out = &mut *ctx.out;
    out.array(10);
    out.bulk(c.name.as_bytes());
    out.int(i64::from(c.arity));
    out.set(c.flags.len());
    for f in c.flags {
        out.simple(f);
    }
    out.int(i64::from(c.keys.0));
    out.int(i64::from(c.keys.1));
    out.int(i64::from(c.keys.2));
    let cats = c.categories();
    out.set(cats.len());
    for cat in cats {
        out.simple(cat);
    }
    out.set(0); // tips
    out.array(0); // key specs
    out.array(c.subcommands.len());
    for s in c.subcommands {
        command_info_entry(ctx, s);
    }
}

/// COMMAND
pub fn command(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> CmdResult {
    ctx.out.array(COMMANDS.len());
    for c in COMMANDS {
        command_info_entry(ctx, c);
    }
    Ok(Flow::Continue)
}

/// COMMAND COUNT
pub fn command_count(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> CmdResult {
    ctx.out.int(COMMANDS.len() as i64);
    Ok(Flow::Continue)
}

/// COMMAND INFO [name ...]: a null for an unknown name.
pub fn command_info(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    if args.len() == 2 {
        return command(ctx, args);
    }
    ctx.out.array(args.len() - 2);
    for name in &args[2..] {
        match lookup(name) {
            Some(c) => command_info_entry(ctx, c),
            None => ctx.out.null(),
        }
    }
    Ok(Flow::Continue)
}

/// COMMAND LIST
pub fn command_list(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> CmdResult {
    ctx.out.array(COMMANDS.len());
    for c in COMMANDS {
        ctx.out.bulk(c.name.as_bytes());
    }
    Ok(Flow::Continue)
}

/// One command's docs. The argument line is given as a single argument, so redis-cli's
/// hints show it whole.
fn docs_entry(ctx: &mut Ctx<'_>, c: &Command) {
    let has_args = !c.args.is_empty();
    let has_subs = !c.subcommands.is_empty();
    ctx.out
        .map(3 + usize::from(has_args) + usize::from(has_subs));
    ctx.out.bulk(b"summary");
    ctx.out.bulk(c.summary.as_bytes());
    ctx.out.bulk(b"since");
    ctx.out.bulk(c.since.as_bytes());
    ctx.out.bulk(b"group");
    ctx.out.bulk(c.group.as_bytes());
    if has_args {
        ctx.out.bulk(b"arguments");
        ctx.out.array(1);
        ctx.out.map(2);
        ctx.out.bulk(b"name");
        ctx.out.bulk(c.args.as_bytes());
        ctx.out.bulk(b"type");
        ctx.out.bulk(b"string");
    }
    if has_subs {
        ctx.out.bulk(b"subcommands");
        ctx.out.map(c.subcommands.len());
        for s in c.subcommands {
            ctx.out.bulk(s.name.as_bytes());
            docs_entry(ctx, s);
        }
    }
}

/// COMMAND DOCS [name ...]: a map of name to docs; unknown names are left out.
pub fn command_docs(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let chosen: Vec<&Command> = if args.len() == 2 {
        COMMANDS.iter().collect()
    } else {
        args[2..].iter().filter_map(|n| lookup(n)).collect()
    };
    ctx.out.map(chosen.len());
    for c in chosen {
        ctx.out.bulk(c.name.as_bytes());
        docs_entry(ctx, c);
    }
    Ok(Flow::Continue)
}

/// CONFIG alone or with HELP.
pub fn config_help(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> CmdResult {
    ctx.out.array(2);
    ctx.out
        .simple("CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    ctx.out.simple(
        "GET <pattern>: return parameters matching the glob-like <pattern> and their values.",
    );
    Ok(Flow::Continue)
}

/// The parameters CONFIG GET knows, with their values.
fn parameters(ctx: &Ctx<'_>) -> Vec<(&'static str, String)> {
    let c = &ctx.shared.config;
    vec![
        // Everything acknowledged is in the engine's log: there are no snapshots to save.
        ("appendonly", "yes".to_string()),
        (
            "appendfsync",
            match c.sync {
                SyncMode::Always | SyncMode::Batch => "always",
                SyncMode::None => "no",
            }
            .to_string(),
        ),
        ("bind", c.bind.clone()),
        ("client-query-buffer-limit", c.max_request_size.to_string()),
        ("databases", "1".to_string()),
        ("dir", c.dir.display().to_string()),
        ("maxclients", c.maxclients.to_string()),
        ("maxmemory", "0".to_string()),
        ("maxmemory-policy", "noeviction".to_string()),
        ("port", ctx.shared.local_addr.port().to_string()),
        ("proto-max-bulk-len", c.max_bulk_len.to_string()),
        ("save", String::new()),
        (
            "shale-design",
            c.design.clone().unwrap_or_else(|| "default".to_string()),
        ),
        ("shale-expire-scan-rate", c.expire_scan_rate.to_string()),
        ("shale-sync", c.sync.name().to_string()),
        ("timeout", c.timeout.map_or(0, |t| t.as_secs()).to_string()),
    ]
}

/// CONFIG GET parameter [parameter ...]: glob patterns; a map in RESP3.
pub fn config_get(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let params = parameters(ctx);
    let mut chosen: Vec<&(&str, String)> = Vec::new();
    for pattern in &args[2..] {
        let lower = pattern.to_ascii_lowercase();
        for p in &params {
            if glob::matches(&lower, p.0.as_bytes()) && !chosen.iter().any(|c| c.0 == p.0) {
                chosen.push(p);
            }
        }
    }
    ctx.out.map(chosen.len());
    for (name, value) in chosen {
        ctx.out.bulk(name.as_bytes());
        ctx.out.bulk(value.as_bytes());
    }
    Ok(Flow::Continue)
}

/// TIME
pub fn time(ctx: &mut Ctx<'_>, _args: &[Vec<u8>]) -> CmdResult {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    ctx.out.array(2);
    ctx.out.bulk(now.as_secs().to_string().as_bytes());
    ctx.out.bulk(now.subsec_micros().to_string().as_bytes());
    Ok(Flow::Continue)
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: no reply; the server stops after the
/// store is closed (its log synced).
pub fn shutdown(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let mut abort = false;
    for a in &args[1..] {
        let known = ["nosave", "save", "now", "force", "abort"];
        if !known.iter().any(|k| a.eq_ignore_ascii_case(k.as_bytes())) {
            return ctx.error(SYNTAX_ERR);
        }
        abort |= a.eq_ignore_ascii_case(b"abort");
    }
    if abort {
        if args.len() > 2 {
            return ctx.error(SYNTAX_ERR);
        }
        return ctx.error("ERR No shutdown in progress.");
    }
    Ok(Flow::Shutdown)
}

const SECTIONS: [&str; 6] = [
    "server",
    "clients",
    "persistence",
    "stats",
    "keyspace",
    "shale",
];

/// INFO [section ...]: `default`, `all` and `everything` give every section.
pub fn info(ctx: &mut Ctx<'_>, args: &[Vec<u8>]) -> CmdResult {
    let wanted: Vec<&str> = if args.len() == 1 {
        SECTIONS.to_vec()
    } else {
        let asked: Vec<String> = args[1..]
            .iter()
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
            .collect();
        if asked
            .iter()
            .any(|a| a == "all" || a == "everything" || a == "default")
        {
            SECTIONS.to_vec()
        } else {
            SECTIONS
                .into_iter()
                .filter(|s| asked.iter().any(|a| a == s))
                .collect()
        }
    };
    let mut text = String::new();
    for (i, section) in wanted.iter().enumerate() {
        if i > 0 {
            text.push_str("\r\n");
        }
        info_section(ctx, section, &mut text)?;
    }
    ctx.out.verbatim(text.as_bytes());
    Ok(Flow::Continue)
}

fn info_section(
    ctx: &Ctx<'_>,
    section: &str,
    t: &mut String,
) -> Result<(), crate::keyspace::Error> {
    let s = ctx.shared;
    let c = &s.config;
    let title = match section {
        "server" => "Server",
        "clients" => "Clients",
        "persistence" => "Persistence",
        "stats" => "Stats",
        "keyspace" => "Keyspace",
        _ => "Shale",
    };
    // Writing to a String cannot fail.
    let _ = write!(t, "# {title}\r\n");
    let mut line = |k: &str, v: &dyn std::fmt::Display| {
        let _ = write!(t, "{k}:{v}\r\n");
    };
    match section {
        "server" => {
            let up = s.started.elapsed().as_secs();
            line("redis_version", &super::connection::REDIS_VERSION);
            line("redis_mode", &"standalone");
            line("shale_version", &env!("CARGO_PKG_VERSION"));
            line("os", &std::env::consts::OS);
            line("arch_bits", &(usize::BITS));
            line("process_id", &std::process::id());
            line("tcp_port", &s.local_addr.port());
            line("uptime_in_seconds", &up);
            line("uptime_in_days", &(up / 86400));
            line(
                "executable",
                &std::env::current_exe()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            );
            line("config_file", &"");
        }
        "clients" => {
            line("connected_clients", &s.connected());
            line("maxclients", &c.maxclients);
            line("blocked_clients", &0);
        }
        "persistence" => {
            line("loading", &0);
            line("aof_enabled", &1);
            line("shale_sync", &c.sync.name());
        }
        "stats" => {
            let st = &s.stats;
            let kc = &s.keyspace.counters;
            line(
                "total_connections_received",
                &st.connections.load(Ordering::Relaxed),
            );
            line(
                "total_commands_processed",
                &st.commands.load(Ordering::Relaxed),
            );
            line("total_net_input_bytes", &st.net_in.load(Ordering::Relaxed));
            line(
                "total_net_output_bytes",
                &st.net_out.load(Ordering::Relaxed),
            );
            line("rejected_connections", &st.rejected.load(Ordering::Relaxed));
            line("expired_keys", &kc.expired.load(Ordering::Relaxed));
            line("keyspace_hits", &kc.hits.load(Ordering::Relaxed));
            line("keyspace_misses", &kc.misses.load(Ordering::Relaxed));
        }
        "keyspace" => {
            let (keys, expires) = keys::count_keys(ctx)?;
            if keys > 0 {
                line("db0", &format!("keys={keys},expires={expires},avg_ttl=0"));
            }
        }
        "shale" => {
            let db = s.keyspace.db();
            let st = db.stats();
            line("design", &db.property("shale.design").unwrap_or_default());
            line("sync", &c.sync.name());
            line("user_ops_written", &st.user_ops_written);
            line("user_bytes_written", &st.user_bytes_written);
            line("storage_bytes_written", &st.total_written());
            line("storage_bytes_read", &st.total_read());
            line(
                "write_amplification",
                &format!("{:.2}", st.write_amplification()),
            );
            line("table_bytes", &st.table_bytes());
            line("memtable_bytes", &st.memtable_bytes);
            line("block_cache_bytes", &st.block_cache_bytes);
            line("block_cache_hits", &st.block_cache_hits);
            line("block_cache_misses", &st.block_cache_misses);
            line("flushes", &st.flushes);
            line("compactions", &st.compactions);
            line("stall_micros", &st.stall_micros);
            line("last_sequence", &st.last_sequence);
            for (i, l) in st.levels.iter().enumerate() {
                if l.files > 0 {
                    line(
                        &format!("level{i}"),
                        &format!(
                            "files={},bytes={},write_amp={:.2}",
                            l.files,
                            l.bytes,
                            l.write_amplification()
                        ),
                    );
                }
            }
            if !st.placement.segments.is_empty() {
                let bytes: u64 = st.placement.segments.iter().map(|v| v.1).sum();
                let garbage: u64 = st.placement.segments.iter().map(|v| v.2).sum();
                line("vlog_segments", &st.placement.segments.len());
                line("vlog_bytes", &bytes);
                line("vlog_garbage_bytes", &garbage);
                line("vlog_gc_runs", &st.placement.gc_runs);
                line("vlog_gc_steps", &st.placement.gc_steps);
                line(
                    "vlog_gc_segments_deleted",
                    &st.placement.gc_segments_deleted,
                );
            }
        }
        _ => {}
    }
    Ok(())
}
