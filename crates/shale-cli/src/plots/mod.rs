//! `shale report` and `bench --report DIR`: one HTML page of SVG charts drawn from JSON lines.
//!
//! The page (`DIR/report.html`) holds, for each engine and design (a "group": one column),
//! throughput over time, latency percentiles, amplification, and bytes written per level
//! and per cause;
//! several groups sit side by side on shared axes, so designs compare at a glance. Every
//! chart is inline SVG and the style sheet is inline too: the page needs no network and no
//! script.
//!
//! Charts are drawn with the `plotters` crate's SVG backend (the most used Rust plotting
//! crate), built without its `ttf` feature so nothing loads system fonts: text goes into the
//! SVG as `<text>` and the browser lays it out. See docs/benchmarks.md ("Reports").

mod charts;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::json::BenchJson;
use crate::{CliError, CliResult};

/// `shale report` flags.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Files of JSON lines written by `shale bench --json` or `shale ycsb --json`.
    #[arg(required = true, value_name = "JSON")]
    pub json: Vec<PathBuf>,
    /// Directory to write report.html into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// The benchmark lines of one engine and design from one source: one column of the report.
#[derive(Debug, Clone)]
pub struct Group {
    /// Column heading: the design (a peer engine's name for a peer).
    pub label: String,
    /// Where the lines came from (a file name), to tell apart groups of the same design.
    pub source: String,
    /// The lines, in the order they ran.
    pub lines: Vec<BenchJson>,
}

/// Run `shale report`.
pub fn run(a: &ReportArgs) -> CliResult {
    let mut groups = Vec::new();
    for path in &a.json {
        let source = path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        groups.extend(group_lines(&source, read_lines(path)?));
    }
    let out = write_report(&a.out, groups)?;
    println!("report: {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// The JSON lines of `path` (blank lines skipped; fields a line lacks take their defaults).
pub fn read_lines(path: &Path) -> CliResult<Vec<BenchJson>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::msg(format!("cannot read {}: {e}", path.display())))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                CliError::msg(format!(
                    "{}:{}: not a benchmark JSON line: {e}",
                    path.display(),
                    i + 1
                ))
            })
        })
        .collect()
}

/// Split `lines` by engine and design, in order of first appearance.
pub fn group_lines(source: &str, lines: Vec<BenchJson>) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for l in lines {
        let label = if l.engine == "shale" || l.design != "-" {
            l.design.clone()
        } else {
            l.engine.clone()
        };
        match groups.iter_mut().find(|g| g.label == label) {
            Some(g) => g.lines.push(l),
            None => groups.push(Group {
                label,
                source: source.to_string(),
                lines: vec![l],
            }),
        }
    }
    groups
}

/// Write `dir/report.html` for `groups`; returns its path.
pub fn write_report(dir: &Path, mut groups: Vec<Group>) -> CliResult<PathBuf> {
    // The same design from two files (before and after a change) gets the file in its name.
    let labels: Vec<String> = groups.iter().map(|g| g.label.clone()).collect();
    for g in &mut groups {
        if labels.iter().filter(|l| **l == g.label).count() > 1 {
            g.label = format!("{} ({})", g.label, g.source);
        }
    }
    let html = render_html(&groups)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::msg(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join("report.html");
    std::fs::write(&path, html)
        .map_err(|e| CliError::msg(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// The chart kinds, one row of the page each.
pub const CHARTS: [&str; 5] = [
    "Throughput over time",
    "Latency percentiles",
    "Amplification",
    "Bytes written per level",
    "Bytes written per cause",
];

/// The whole page.
pub fn render_html(groups: &[Group]) -> CliResult<String> {
    if groups.is_empty() {
        return Err(CliError::msg("no benchmark lines to draw"));
    }
    let scales = charts::Scales::of(groups);
    let mut h = String::new();
    h.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>Shale benchmark report</title>\n<style>\n\
         body { font-family: sans-serif; margin: 1.5em; color: #222; }\n\
         .row { display: flex; gap: 1em; overflow-x: auto; }\n\
         figure { margin: 0; border: 1px solid #ddd; padding: 0.5em; flex: none; }\n\
         figcaption { font-weight: bold; margin-bottom: 0.3em; }\n\
         table { border-collapse: collapse; margin-bottom: 1em; }\n\
         td, th { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }\n\
         th:first-child, td:first-child { text-align: left; }\n\
         </style>\n</head>\n<body>\n<h1>Shale benchmark report</h1>\n",
    );
    let names: Vec<String> = groups.iter().map(|g| esc(&g.label)).collect();
    let _ = writeln!(h, "<p>Designs: {}</p>", names.join(", "));
    h.push_str("<h2>Summary</h2>\n<div class=\"row\">\n");
    for g in groups {
        summary_table(&mut h, g);
    }
    h.push_str("</div>\n");
    for (kind, title) in CHARTS.iter().enumerate() {
        let _ = writeln!(h, "<h2>{title}</h2>\n<div class=\"row\">");
        for g in groups {
            let svg = charts::draw(kind, g, &scales)?;
            let _ = writeln!(
                h,
                "<figure data-chart=\"{kind}\"><figcaption>{}</figcaption>\n{svg}\n</figure>",
                esc(&g.label)
            );
        }
        h.push_str("</div>\n");
    }
    h.push_str("</body>\n</html>\n");
    Ok(h)
}

fn summary_table(h: &mut String, g: &Group) {
    let _ = writeln!(
        h,
        "<table><caption>{}</caption>\n<tr><th>benchmark</th><th>ops/s</th><th>p99 µs</th>\
         <th>write amp</th><th>space amp</th><th>stall ms</th></tr>",
        esc(&g.label)
    );
    let num =
        |v: Option<f64>, digits: usize| v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"));
    for l in &g.lines {
        let c = l.engine_counters.as_ref();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&l.benchmark),
            l.ops_per_sec,
            num(l.p99_us, 1),
            num(charts::write_amp(l), 2),
            num(l.space_amp, 2),
            num(c.map(|c| c.engine_stall_micros as f64 / 1000.0), 0),
        );
    }
    h.push_str("</table>\n");
}

/// `s` with HTML's special characters escaped.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{EngineJson, LevelJson};

    fn line(design: &str, benchmark: &str, timeline: Vec<(f64, u64)>) -> BenchJson {
        let ops = timeline.last().map_or(1, |t| t.1);
        let seconds = timeline.last().map_or(0.5, |t| t.0);
        BenchJson {
            benchmark: benchmark.into(),
            engine: "shale".into(),
            design: design.into(),
            key_size: Some(16),
            value_size: 100,
            ops,
            seconds,
            ops_per_sec: ops as f64 / seconds,
            found: benchmark.starts_with("read").then_some(ops),
            p50_us: Some(2.0),
            p75_us: Some(3.0),
            p99_us: Some(10.0),
            p999_us: Some(50.0),
            max_us: Some(900.0),
            space_amp: Some(1.5),
            engine_counters: Some(EngineJson {
                engine_bytes_written: vec![("wal".into(), 1 << 20), ("flush".into(), 3 << 20)],
                engine_bytes_read: vec![("get".into(), 116 * ops)],
                engine_write_amp: Some(2.5),
                engine_stall_micros: 0,
                engine_levels: vec![
                    LevelJson {
                        level: 0,
                        files: 2,
                        bytes: 1 << 20,
                        bytes_written: 3 << 20,
                    },
                    LevelJson {
                        level: 1,
                        files: 1,
                        bytes: 2 << 20,
                        bytes_written: 2 << 20,
                    },
                ],
                engine_memory: Vec::new(),
                ..Default::default()
            }),
            timeline,
            ..Default::default()
        }
    }

    fn run_of(design: &str) -> Vec<BenchJson> {
        vec![
            // A stall in the second second: no operation completes.
            line(
                design,
                "fillrandom",
                vec![(1.0, 1000), (2.0, 1000), (3.0, 2500)],
            ),
            line(design, "compact", vec![]),
            line(design, "readrandom", vec![(1.0, 4000), (1.6, 6000)]),
            line(design, "readrandom", vec![(1.0, 5000)]),
        ]
    }

    #[test]
    fn throughput_shows_a_stall_as_zero_and_runs_follow_each_other() {
        let g = &group_lines("f", run_of("leveldb"))[0];
        let series = charts::throughput(g);
        let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["fillrandom", "readrandom", "readrandom #2"]);
        let fill = &series[0].1;
        assert_eq!(
            fill,
            &vec![
                (0.0, 1000.0),
                (1.0, 1000.0),
                (1.0, 0.0),
                (2.0, 0.0),
                (2.0, 1500.0),
                (3.0, 1500.0)
            ]
        );
        // readrandom starts after fillrandom (3 s) and compact (0.5 s).
        let read = &series[1].1;
        assert_eq!(read.first(), Some(&(3.5, 4000.0)));
        let (t, rate) = read.last().copied().unwrap();
        assert!(
            (t - 5.1).abs() < 1e-9 && (rate - 2000.0 / 0.6).abs() < 1e-6,
            "{t} {rate}"
        );
    }

    #[test]
    fn amplification_and_levels_come_from_the_lines() {
        let g = &group_lines("f", run_of("leveldb"))[0];
        let (names, series) = charts::amplification(g);
        assert_eq!(names.len(), 4);
        assert_eq!(series[0].1[0], Some(2.5), "engine write amp");
        // 116 engine bytes read per op over a 116-byte entry.
        assert_eq!(series[1].1[2], Some(1.0));
        assert_eq!(series[1].1[0], None, "a fill reads nothing");
        let (levels, series) = charts::levels(g);
        assert_eq!(levels, ["L0", "L1"]);
        assert_eq!(
            series[0].1,
            vec![Some(12.0), Some(8.0)],
            "written, summed over lines"
        );
        assert_eq!(
            series[1].1,
            vec![Some(1.0), Some(2.0)],
            "size after the last line"
        );
        let (causes, series) = charts::causes(g);
        assert_eq!(causes, ["wal", "flush"]);
        assert_eq!(series[0].1, vec![Some(4.0), Some(12.0)]);
    }

    #[test]
    fn page_has_one_svg_per_chart_and_design_and_needs_no_network() {
        let mut lines = run_of("leveldb");
        lines.extend(run_of("wisckey"));
        let mut peer = line("-", "fillrandom", vec![(1.0, 10)]);
        peer.engine = "fjall".into();
        peer.engine_counters = None;
        lines.push(peer);
        let groups = group_lines("f", lines);
        let labels: Vec<&str> = groups.iter().map(|g| g.label.as_str()).collect();
        assert_eq!(labels, ["leveldb", "wisckey", "fjall"]);
        let html = render_html(&groups).unwrap();
        assert_eq!(html.matches("<svg").count(), CHARTS.len() * 3);
        for (kind, title) in CHARTS.iter().enumerate() {
            assert!(html.contains(&format!("<h2>{title}</h2>")), "{title}");
            for d in &labels {
                let fig = format!("<figure data-chart=\"{kind}\"><figcaption>{d}</figcaption>");
                assert!(html.contains(&fig), "{fig}");
            }
        }
        assert!(
            html.contains("no data for this engine"),
            "fjall keeps no levels"
        );
        for outside in ["<script", "<link", "src=", "@import", "url("] {
            assert!(!html.contains(outside), "{outside}");
        }
    }

    #[test]
    fn the_same_design_from_two_files_is_told_apart() {
        let dir = std::env::temp_dir().join(format!("shale-cli-report-{}", std::process::id()));
        let mut groups = group_lines("before", run_of("leveldb"));
        groups.extend(group_lines("after", run_of("leveldb")));
        let path = write_report(&dir, groups).unwrap();
        let html = std::fs::read_to_string(&path).unwrap();
        assert!(html.contains("<figcaption>leveldb (before)</figcaption>"));
        assert!(html.contains("<figcaption>leveldb (after)</figcaption>"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(render_html(&[]).is_err());
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let dir = std::env::temp_dir().join(format!("shale-cli-badjson-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("x.json");
        let good = crate::json::to_line(&run_of("leveldb")[0]).unwrap();
        std::fs::write(&f, format!("{good}\n\n{{\"benchmark\": 3}}\n")).unwrap();
        let e = read_lines(&f).unwrap_err().to_string();
        assert!(e.contains("x.json:3:"), "{e}");
        std::fs::write(&f, format!("{good}\n")).unwrap();
        assert_eq!(read_lines(&f).unwrap().len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
