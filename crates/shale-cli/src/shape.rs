//! `shale shape DIR [--svg FILE]`: the store's tree as a picture, from the engine's public
//! calls only: each level's files drawn to scale by their sizes and the level's key range
//! (`Db::live_files`), the guards a layout reports per level (`shale.guards-at-level<N>`,
//! answered by the FLSM layout and by no other), each drawn where its key falls among the
//! level's files, and the value placement's segments with their garbage. Each part comes
//! from the axis that owns it (layout property, placement stats), so a design with none of
//! a part simply draws none; the CLI has no case per design.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use plotters::prelude::*;

use crate::cmd_kv::StoreArgs;
use crate::escape::escape;
use crate::{CliError, CliResult};

/// `shale shape` flags.
#[derive(Args, Debug)]
pub struct ShapeArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Also draw the shape as an SVG picture into FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// One level of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelShape {
    /// Table files.
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// Each file's size, in the level's order.
    pub file_sizes: Vec<u64>,
    /// The smallest and largest user key of the level's files (`None` when empty).
    pub range: Option<(Vec<u8>, Vec<u8>)>,
    /// Where each guard the layout keeps in this level sits, as a fraction of the level's
    /// bytes before it (the files whose keys all lie below the guard); `None`: the layout
    /// has no guards.
    pub guards: Option<Vec<f64>>,
}

/// The shape of a store.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// `shale.design`: the axes the store runs with.
    pub design: String,
    /// Levels, 0 first, down to the deepest that holds a file.
    pub levels: Vec<LevelShape>,
    /// Value-log segments: (number, bytes, garbage bytes), oldest first.
    pub segments: Vec<(u64, u64, u64)>,
}

impl Shape {
    /// The shape of an open store.
    pub fn of(db: &shale::Db) -> Shape {
        let stats = db.stats();
        let files = db.live_files();
        let mut levels: Vec<LevelShape> = stats
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| LevelShape {
                files: l.files,
                bytes: l.bytes,
                file_sizes: files
                    .iter()
                    .filter(|f| f.level == i)
                    .map(|f| f.size)
                    .collect(),
                range: level_range(&files, i),
                guards: db.property(&format!("shale.guards-at-level{i}")).map(|g| {
                    let at: Vec<(&[u8], u64)> = files
                        .iter()
                        .filter(|f| f.level == i)
                        .map(|f| (f.largest_key.as_slice(), f.size))
                        .collect();
                    guard_positions(&g, &at)
                }),
            })
            .collect();
        let deepest = levels
            .iter()
            .rposition(|l| l.files > 0)
            .map_or(1, |i| i + 1);
        levels.truncate(deepest);
        Shape {
            design: db.property("shale.design").unwrap_or_default(),
            levels,
            segments: stats.placement.segments.clone(),
        }
    }

    /// Bytes of the largest level (at least 1): the full width of a bar.
    fn widest_level(&self) -> u64 {
        self.levels
            .iter()
            .map(|l| l.bytes)
            .max()
            .unwrap_or(0)
            .max(1)
    }

    /// The text form: a row per level with a bar to scale, then the segments.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "design: {}", self.design);
        let widest = self.widest_level();
        for (i, l) in self.levels.iter().enumerate() {
            let bar = "#".repeat(scaled(l.bytes, widest, 40));
            let guards = l
                .guards
                .as_ref()
                .map_or_else(String::new, |g| format!("  {} guards", g.len()));
            let range = l.range.as_ref().map_or_else(String::new, |(lo, hi)| {
                format!("  [{} .. {}]", escape(lo), escape(hi))
            });
            let _ = writeln!(
                s,
                "L{i:<2} {:>5} files {:>10} |{bar:<40}|{guards}{range}",
                l.files,
                mib(l.bytes)
            );
        }
        if !self.segments.is_empty() {
            let total: u64 = self.segments.iter().map(|s| s.1).sum();
            let garbage: u64 = self.segments.iter().map(|s| s.2).sum();
            let _ = writeln!(
                s,
                "value log: {} segments, {}, {:.0}% garbage",
                self.segments.len(),
                mib(total),
                percent(garbage, total)
            );
            for &(n, bytes, garbage) in &self.segments {
                let dead = scaled(garbage, bytes.max(1), 20);
                let _ = writeln!(
                    s,
                    "  segment {n:06} {:>10} |{}{}| {:.0}% garbage",
                    mib(bytes),
                    "x".repeat(dead),
                    "#".repeat(20 - dead),
                    percent(garbage, bytes)
                );
            }
        }
        s
    }

    /// The picture: a bar per level to scale, its guards as ticks, and the value-log
    /// segments with their garbage in a second colour.
    pub fn svg(&self) -> CliResult<String> {
        let err = |e: &dyn std::fmt::Display| CliError::msg(format!("cannot draw the shape: {e}"));
        let rows = self.levels.len() + usize::from(!self.segments.is_empty());
        let height = 60 + 44 * rows as u32;
        let widest = self.widest_level();
        let seg_total: u64 = self.segments.iter().map(|s| s.1).sum();
        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, (800, height)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(&e))?;
            let text = |t: &str, at: (i32, i32)| Text::new(t.to_string(), at, ("sans-serif", 13));
            root.draw(&Text::new(
                format!("design: {}", self.design),
                (10, 12),
                ("sans-serif", 15),
            ))
            .map_err(|e| err(&e))?;
            let (x0, full) = (60, 480);
            for (i, l) in self.levels.iter().enumerate() {
                let y = 50 + 44 * i as i32;
                let w = scaled(l.bytes, widest, full) as i32;
                root.draw(&text(&format!("L{i}"), (10, y + 8)))
                    .map_err(|e| err(&e))?;
                root.draw(&Rectangle::new(
                    [(x0, y), (x0 + w.max(1), y + 26)],
                    BLUE.mix(0.6).filled(),
                ))
                .map_err(|e| err(&e))?;
                // Each file a slice of the bar as wide as its share of the level's bytes.
                let mut at = 0u64;
                for size in l.file_sizes.iter().take(500) {
                    at += size;
                    if at >= l.bytes {
                        break;
                    }
                    let fx = x0 + scaled(at, l.bytes, w.max(0) as usize) as i32;
                    root.draw(&PathElement::new(vec![(fx, y), (fx, y + 26)], WHITE))
                        .map_err(|e| err(&e))?;
                }
                // Each guard a tick where its key falls among the level's files (at most
                // 200 drawn).
                if let Some(g) = &l.guards {
                    for at in g.iter().take(200) {
                        let gx = x0 + (f64::from(w.max(0)) * at.clamp(0.0, 1.0)) as i32;
                        root.draw(&PathElement::new(
                            vec![(gx, y - 4), (gx, y)],
                            RED.stroke_width(2),
                        ))
                        .map_err(|e| err(&e))?;
                    }
                }
                let guards = l
                    .guards
                    .as_ref()
                    .map_or_else(String::new, |g| format!(", {} guards", g.len()));
                let label = format!("{} files, {}{guards}", l.files, mib(l.bytes));
                root.draw(&text(&label, (x0 + full as i32 + 10, y + 8)))
                    .map_err(|e| err(&e))?;
            }
            if !self.segments.is_empty() {
                let y = 50 + 44 * self.levels.len() as i32;
                root.draw(&text("vlog", (10, y + 8))).map_err(|e| err(&e))?;
                let mut x = x0;
                for &(_, bytes, garbage) in &self.segments {
                    let w = scaled(bytes, seg_total.max(1), full) as i32;
                    let dead = scaled(garbage, bytes.max(1), w.max(0) as usize) as i32;
                    root.draw(&Rectangle::new(
                        [(x, y), (x + w, y + 26)],
                        GREEN.mix(0.6).filled(),
                    ))
                    .map_err(|e| err(&e))?;
                    root.draw(&Rectangle::new(
                        [(x, y), (x + dead, y + 26)],
                        RED.mix(0.5).filled(),
                    ))
                    .map_err(|e| err(&e))?;
                    root.draw(&Rectangle::new([(x, y), (x + w, y + 26)], BLACK))
                        .map_err(|e| err(&e))?;
                    x += w;
                }
                let garbage: u64 = self.segments.iter().map(|s| s.2).sum();
                let label = format!(
                    "{} segments, {}, {:.0}% garbage",
                    self.segments.len(),
                    mib(seg_total),
                    percent(garbage, seg_total)
                );
                root.draw(&text(&label, (x0 + full as i32 + 10, y + 8)))
                    .map_err(|e| err(&e))?;
            }
            root.present().map_err(|e| err(&e))?;
        }
        Ok(buf)
    }
}

/// Where each guard of `level` sits (see [`LevelShape::guards`]), from the layout's
/// `shale.guards-at-level<N>` answer (a hex key per line) and the level's files as (largest
/// key, size). A level without files spreads them evenly.
fn guard_positions(answer: &str, files: &[(&[u8], u64)]) -> Vec<f64> {
    let keys: Vec<Vec<u8>> = answer
        .lines()
        .map(|l| {
            (0..l.len() / 2)
                .filter_map(|i| u8::from_str_radix(l.get(2 * i..2 * i + 2)?, 16).ok())
                .collect()
        })
        .collect();
    let total: u64 = files.iter().map(|f| f.1).sum();
    keys.iter()
        .enumerate()
        .map(|(i, g)| {
            if total == 0 {
                return (i + 1) as f64 / (keys.len() + 1) as f64;
            }
            let below: u64 = files
                .iter()
                .filter(|f| f.0 < g.as_slice())
                .map(|f| f.1)
                .sum();
            below as f64 / total as f64
        })
        .collect()
}

/// The smallest and largest user key over the files of `level`.
fn level_range(files: &[shale::LiveFile], level: usize) -> Option<(Vec<u8>, Vec<u8>)> {
    let at = files.iter().filter(|f| f.level == level);
    let lo = at.clone().map(|f| &f.smallest_key).min()?;
    let hi = at.map(|f| &f.largest_key).max()?;
    Some((lo.clone(), hi.clone()))
}

fn scaled(n: u64, of: u64, width: usize) -> usize {
    ((n as f64 / of.max(1) as f64) * width as f64)
        .round()
        .min(width as f64) as usize
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn mib(n: u64) -> String {
    format!("{:.1} MiB", n as f64 / 1048576.0)
}

/// Run `shale shape`.
pub fn run(a: &ShapeArgs) -> CliResult {
    let db = a.store.open_read_only()?;
    let shape = Shape::of(&db);
    db.close()?;
    print!("{}", shape.text());
    if let Some(path) = &a.svg {
        std::fs::write(path, shape.svg()?)
            .map_err(|e| CliError::msg(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Shape {
        Shape {
            design: "layout=flsm values=vlog".into(),
            levels: vec![
                LevelShape {
                    files: 2,
                    bytes: 2 << 20,
                    file_sizes: vec![1 << 20, 1 << 20],
                    range: Some((b"a".to_vec(), b"z".to_vec())),
                    guards: Some(Vec::new()),
                },
                LevelShape {
                    files: 6,
                    bytes: 8 << 20,
                    file_sizes: vec![3 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20],
                    range: Some((b"b".to_vec(), b"y\x00".to_vec())),
                    guards: Some(vec![0.375, 0.5, 0.75]),
                },
            ],
            segments: vec![(7, 4 << 20, 1 << 20), (9, 4 << 20, 0)],
        }
    }

    #[test]
    fn text_draws_levels_to_scale_guards_and_garbage() {
        let t = sample().text();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "design: layout=flsm values=vlog");
        assert_eq!(lines[1].matches('#').count(), 10, "{t}");
        assert_eq!(lines[2].matches('#').count(), 40, "{t}");
        assert!(lines[1].ends_with("[a .. z]"), "{t}");
        assert!(lines[2].ends_with("3 guards  [b .. y\\x00]"), "{t}");
        assert!(
            lines[3].starts_with("value log: 2 segments, 8.0 MiB, 12% garbage"),
            "{t}"
        );
        assert!(
            lines[4].contains("|xxxxx###############| 25% garbage"),
            "{t}"
        );
        let mut leveled = sample();
        leveled.segments.clear();
        for l in &mut leveled.levels {
            l.guards = None;
        }
        let t = leveled.text();
        assert!(!t.contains("guards") && !t.contains("value log"), "{t}");
    }

    #[test]
    fn guards_sit_where_their_keys_fall_among_the_files() {
        // Files ending at "c", "f" and "i", of 10, 10 and 20 bytes.
        let files: [(&[u8], u64); 3] = [(b"c", 10), (b"f", 10), (b"i", 20)];
        // "d" and "g", hex per line, as the FLSM layout answers.
        assert_eq!(guard_positions("64\n67\n", &files), [0.25, 0.5]);
        assert_eq!(guard_positions("", &files), Vec::<f64>::new());
        // No files at the level: spread evenly.
        assert_eq!(guard_positions("61\n62\n63\n", &[]), [0.25, 0.5, 0.75]);
    }

    #[test]
    fn svg_has_a_row_per_level_and_the_log() {
        let svg = sample().svg().unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        for label in [
            "L0",
            "L1",
            "vlog",
            "6 files, 8.0 MiB, 3 guards",
            "2 segments",
        ] {
            assert!(svg.contains(label), "{label}");
        }
    }
}
