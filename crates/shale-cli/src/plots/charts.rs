//! The charts of a report, each one SVG document drawn with plotters; the data each shows
//! is computed by a function of its own, so the scales shared between groups use the same
//! numbers the charts draw.

use plotters::coord::Shift;
use plotters::coord::ranged1d::AsRangedCoord;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::Group;
use crate::json::BenchJson;
use crate::{CliError, CliResult};

/// Width and height of one chart in pixels.
const SIZE: (u32, u32) = (500, 320);
const MIB: f64 = 1048576.0;
/// Percentiles of the latency chart: label and the line's field.
const PERCENTILES: [&str; 5] = ["p50", "p75", "p99", "p99.9", "max"];

/// A named series of points.
type Series = Vec<(String, Vec<(f64, f64)>)>;
/// Bars by category: the categories, then each series' name and one value per category.
type Bars = (Vec<String>, Vec<(&'static str, Vec<Option<f64>>)>);

/// Axis ranges shared by every group's chart of a kind, so columns compare by eye.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scales {
    run_seconds: f64,
    max_rate: f64,
    latency: (f64, f64),
    max_amp: f64,
    max_level_mib: f64,
    max_cause_mib: f64,
}

impl Scales {
    /// The ranges that hold every group's data.
    pub fn of(groups: &[Group]) -> Scales {
        let mut s = Scales {
            run_seconds: 1e-3,
            max_rate: 1.0,
            latency: (f64::MAX, f64::MIN),
            max_amp: 1.0,
            max_level_mib: 1.0,
            max_cause_mib: 1.0,
        };
        for g in groups {
            s.run_seconds = s.run_seconds.max(g.lines.iter().map(|l| l.seconds).sum());
            for (_, pts) in throughput(g) {
                for (_, r) in pts {
                    s.max_rate = s.max_rate.max(r);
                }
            }
            for (_, pts) in latency(g) {
                for (_, v) in pts {
                    s.latency = (s.latency.0.min(v), s.latency.1.max(v));
                }
            }
            for (_, vals) in amplification(g).1 {
                s.max_amp = vals.into_iter().flatten().fold(s.max_amp, f64::max);
            }
            for (_, vals) in levels(g).1 {
                s.max_level_mib = vals.into_iter().flatten().fold(s.max_level_mib, f64::max);
            }
            for (_, vals) in causes(g).1 {
                s.max_cause_mib = vals.into_iter().flatten().fold(s.max_cause_mib, f64::max);
            }
        }
        if s.latency.0 > s.latency.1 {
            s.latency = (1.0, 10.0);
        }
        s
    }
}

/// Chart number `kind` (an index of [`super::CHARTS`]) of group `g`, as an SVG document.
pub fn draw(kind: usize, g: &Group, sc: &Scales) -> CliResult<String> {
    let title = super::CHARTS.get(kind).copied().unwrap_or("chart");
    match kind {
        0 => draw_lines(
            title,
            &throughput(g),
            (0.0, sc.run_seconds),
            "seconds since the run started",
            "ops/s",
            sc.max_rate,
        ),
        1 => draw_latency(title, &latency(g), sc.latency),
        2 => draw_bars(title, &amplification(g), "amplification (x)", sc.max_amp),
        3 => draw_bars(title, &levels(g), "MiB", sc.max_level_mib),
        _ => draw_bars(title, &causes(g), "MiB", sc.max_cause_mib),
    }
}

/// The engine's write amplification of a line, or the device's when the engine keeps none.
pub fn write_amp(l: &BenchJson) -> Option<f64> {
    l.engine_counters
        .as_ref()
        .and_then(|c| c.engine_write_amp)
        .or(l.write_amp)
}

/// Bytes read from storage per byte a read benchmark asked for: the engine's bytes read
/// (page-cache hits included) per operation, over the key and value size; the device's
/// bytes when the engine keeps no counters. `None` for benchmarks that do not read.
pub fn read_amp(l: &BenchJson) -> Option<f64> {
    l.found?;
    let entry = (l.key_size.unwrap_or(0) + l.value_size) as f64;
    if entry == 0.0 || l.ops == 0 {
        return None;
    }
    let per_op = match &l.engine_counters {
        Some(c) => c.engine_bytes_read.iter().map(|(_, n)| *n).sum::<u64>() as f64 / l.ops as f64,
        None => l.read_bytes_per_op?,
    };
    Some(per_op / entry)
}

/// The benchmarks' names in `g`, a repeated one numbered (`readrandom`, `readrandom #2`).
pub fn names(g: &Group) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(g.lines.len());
    for l in &g.lines {
        let seen = out
            .iter()
            .filter(|n| **n == l.benchmark || n.starts_with(&format!("{} #", l.benchmark)))
            .count();
        out.push(if seen == 0 {
            l.benchmark.clone()
        } else {
            format!("{} #{}", l.benchmark, seen + 1)
        });
    }
    out
}

/// Throughput over time: per benchmark, `(seconds since the run started, ops/s)` as steps,
/// one per interval of its timeline. Benchmarks run one after another, so each starts where
/// the one before ended; a single-operation benchmark (`compact`, `flush`) draws no line
/// but takes its time. A final interval shorter than a quarter second is folded away, as
/// its rate is mostly noise. A line without a timeline draws its mean rate.
pub fn throughput(g: &Group) -> Series {
    let mut offset = 0.0;
    let mut out = Vec::new();
    for (l, name) in g.lines.iter().zip(names(g)) {
        if l.ops > 1 {
            let mut pts = Vec::new();
            let mut prev = (0.0, 0u64);
            for (i, &(t, ops)) in l.timeline.iter().enumerate() {
                let dt = t - prev.0;
                let short_tail = i + 1 == l.timeline.len() && dt < 0.25 && !pts.is_empty();
                if dt <= 0.0 || short_tail {
                    continue;
                }
                let rate = ops.saturating_sub(prev.1) as f64 / dt;
                pts.push((offset + prev.0, rate));
                pts.push((offset + t, rate));
                prev = (t, ops);
            }
            if pts.is_empty() {
                pts = vec![(offset, l.ops_per_sec), (offset + l.seconds, l.ops_per_sec)];
            }
            out.push((name, pts));
        }
        offset += l.seconds;
    }
    out
}

/// Latency percentiles: per benchmark of more than one operation, `(index into
/// PERCENTILES, microseconds)` for each percentile it has.
pub fn latency(g: &Group) -> Series {
    g.lines
        .iter()
        .zip(names(g))
        .filter(|(l, _)| l.ops > 1)
        .map(|(l, name)| {
            let vals = [l.p50_us, l.p75_us, l.p99_us, l.p999_us, l.max_us];
            let pts = vals
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.filter(|v| *v > 0.0).map(|v| (i as f64, v)))
                .collect();
            (name, pts)
        })
        .filter(|(_, pts): &(String, Vec<(f64, f64)>)| !pts.is_empty())
        .collect()
}

/// Write, read and space amplification per benchmark (those with any of the three).
pub fn amplification(g: &Group) -> Bars {
    let (lines, names): (Vec<&BenchJson>, Vec<String>) = g
        .lines
        .iter()
        .zip(names(g))
        .filter(|(l, _)| write_amp(l).is_some() || read_amp(l).is_some() || l.space_amp.is_some())
        .unzip();
    let series = vec![
        ("write amp", lines.iter().map(|l| write_amp(l)).collect()),
        ("read amp", lines.iter().map(|l| read_amp(l)).collect()),
        ("space amp", lines.iter().map(|l| l.space_amp).collect()),
    ];
    (names, series)
}

/// Per level: MiB flushes and compactions wrote into it over the whole run, and its size
/// at the end (the last line that has levels). Empty for an engine without levels.
pub fn levels(g: &Group) -> Bars {
    let per_line: Vec<&[crate::json::LevelJson]> = g
        .lines
        .iter()
        .filter_map(|l| l.engine_counters.as_ref())
        .map(|c| c.engine_levels.as_slice())
        .filter(|l| !l.is_empty())
        .collect();
    let last = per_line.last().copied().unwrap_or_default();
    let depth = per_line
        .iter()
        .flat_map(|ls| ls.iter())
        .filter(|l| l.bytes > 0 || l.bytes_written > 0)
        .map(|l| l.level as usize + 1)
        .max()
        .unwrap_or(0);
    let written = (0..depth)
        .map(|i| {
            let sum: u64 = per_line
                .iter()
                .filter_map(|ls| ls.get(i))
                .map(|l| l.bytes_written)
                .sum();
            Some(sum as f64 / MIB)
        })
        .collect();
    let size = (0..depth)
        .map(|i| last.get(i).map(|l| l.bytes as f64 / MIB))
        .collect();
    let names = (0..depth).map(|i| format!("L{i}")).collect();
    (
        names,
        vec![
            ("written during the run", written),
            ("size at the end", size),
        ],
    )
}

/// MiB the engine wrote over the whole run, by cause (causes that wrote nothing left out).
pub fn causes(g: &Group) -> Bars {
    let mut totals: Vec<(String, u64)> = Vec::new();
    for c in g.lines.iter().filter_map(|l| l.engine_counters.as_ref()) {
        for (cause, n) in &c.engine_bytes_written {
            match totals.iter_mut().find(|(name, _)| name == cause) {
                Some(t) => t.1 += n,
                None => totals.push((cause.clone(), *n)),
            }
        }
    }
    totals.retain(|&(_, n)| n > 0);
    let mib = totals.iter().map(|&(_, n)| Some(n as f64 / MIB)).collect();
    let names = totals.into_iter().map(|(name, _)| name).collect();
    (names, vec![("written during the run", mib)])
}

fn err(e: impl std::fmt::Display) -> CliError {
    CliError::msg(format!("cannot draw a chart: {e}"))
}

/// An SVG document of [`SIZE`] drawn by `f` on a white area.
fn svg(f: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> CliResult<()>) -> CliResult<String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        f(&root)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// Numbers on an axis: 1.2k, 3.4M.
fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The label of category `x` of `names` (empty between categories).
fn category(names: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    names.get(i as usize).cloned().unwrap_or_default()
}

fn color(i: usize) -> RGBAColor {
    Palette99::pick(i).to_rgba()
}

/// A chart's frame on `x` by `y`: its title, margins and label areas.
type Frame<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

fn frame<'a, 'b, X: AsRangedCoord, Y: AsRangedCoord>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    x: X,
    y: Y,
) -> CliResult<Frame<'a, 'b, X::CoordDescType, Y::CoordDescType>> {
    ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x, y)
        .map_err(err)
}

/// Each series as a line in its colour (with a dot per point when `dots`), then the legend.
fn lines<'a, 'b: 'a, Y: Ranged<ValueType = f64>>(
    chart: &mut Frame<'a, 'b, RangedCoordf64, Y>,
    series: &Series,
    dots: bool,
    legend_at: SeriesLabelPosition,
) -> CliResult<()> {
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = color(i);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
        if dots {
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(err)?;
        }
    }
    if series.is_empty() {
        return Ok(());
    }
    legend(chart, legend_at)
}

fn legend<'a, 'b: 'a, X: Ranged, Y: Ranged>(
    chart: &mut Frame<'a, 'b, X, Y>,
    at: SeriesLabelPosition,
) -> CliResult<()> {
    chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

fn draw_lines(
    title: &str,
    series: &Series,
    x: (f64, f64),
    x_desc: &str,
    y_desc: &str,
    y_max: f64,
) -> CliResult<String> {
    svg(|root| {
        // Headroom above the highest line for the legend.
        let mut chart = frame(root, title, x.0..x.1, 0.0..y_max * 1.35)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .y_label_formatter(&|v| short(*v))
            .draw()
            .map_err(err)?;
        lines(&mut chart, series, false, SeriesLabelPosition::UpperRight)
    })
}

fn draw_latency(title: &str, series: &Series, range: (f64, f64)) -> CliResult<String> {
    let names: Vec<String> = PERCENTILES.iter().map(|s| s.to_string()).collect();
    svg(|root| {
        let x = -0.3..(PERCENTILES.len() as f64 - 0.7);
        let mut chart = frame(root, title, x, (range.0 * 0.8..range.1 * 1.25).log_scale())?;
        chart
            .configure_mesh()
            .x_labels(PERCENTILES.len())
            .x_label_formatter(&|x| category(&names, *x))
            .y_desc("microseconds (log)")
            .y_label_formatter(&|v| short(*v))
            .draw()
            .map_err(err)?;
        lines(&mut chart, series, true, SeriesLabelPosition::UpperLeft)
    })
}

fn draw_bars(title: &str, bars: &Bars, y_desc: &str, y_max: f64) -> CliResult<String> {
    let (names, series) = bars;
    let n = names.len().max(1);
    let width = 0.8 / series.len().max(1) as f64;
    svg(|root| {
        let mut chart = frame(root, title, -0.5..(n as f64 - 0.5), 0.0..y_max * 1.3)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n + 1)
            .x_label_formatter(&|x| category(names, *x))
            .y_desc(y_desc)
            .y_label_formatter(&|v| short(*v))
            .draw()
            .map_err(err)?;
        if names.is_empty() {
            chart
                .draw_series(std::iter::once(Text::new(
                    "no data for this engine",
                    (-0.2, y_max * 0.6),
                    ("sans-serif", 14),
                )))
                .map_err(err)?;
            return Ok(());
        }
        for (j, (name, vals)) in series.iter().enumerate() {
            let c = color(j);
            let x0 = |i: usize| i as f64 - 0.4 + j as f64 * width;
            chart
                .draw_series(vals.iter().enumerate().filter_map(|(i, v)| {
                    v.map(|v| Rectangle::new([(x0(i), 0.0), (x0(i) + width * 0.9, v)], c.filled()))
                }))
                .map_err(err)?
                .label(*name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
}
