//! Text descriptions of trees, for tests of pickers and versions.
//!
//! One line per level: `L<n>: <file> <file> ...`, where a file is
//! `<number>:<smallest>-<largest>[/<size>][@<smallest seq>-<largest seq>]`. Keys are user
//! keys (no `-` or spaces); sizes take a `K`, `M` or `G` suffix and default to 1M; sequence
//! numbers default to `number*100 .. number*100+99`, so a higher file number is newer.
//! `#` starts a comment. A line `G<n>: <key> <key> ...` sets the guard keys of level `n`
//! (for guarded layouts).

use std::sync::Arc;

use super::{FileMeta, LayoutState, Version};
use crate::key::{ValueKind, make_internal_key};
use crate::manifest::AxisRecord;

const DEFAULT_LEVELS: usize = 7;

/// A file for tests.
pub(crate) fn file(number: u64, lo: &str, hi: &str, size: u64) -> FileMeta {
    file_with_seqs(number, lo, hi, size, number * 100, number * 100 + 99)
}

fn file_with_seqs(number: u64, lo: &str, hi: &str, size: u64, s0: u64, s1: u64) -> FileMeta {
    FileMeta {
        number,
        size,
        smallest: make_internal_key(lo.as_bytes(), s1, ValueKind::Value),
        largest: make_internal_key(hi.as_bytes(), s0, ValueKind::Value),
        smallest_seq: s0,
        largest_seq: s1,
        entries: 1,
        tombstones: 0,
        filter: Default::default(),
    }
}

fn size(s: &str) -> Result<u64, String> {
    let (num, mult) = match s.chars().last() {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let n: f64 = num.parse().map_err(|_| format!("bad size {s:?}"))?;
    Ok((n * mult as f64) as u64)
}

/// Parse a tree description into a version of a layout without state (`G` lines are an
/// error).
pub(crate) fn parse(desc: &str) -> Result<Version, String> {
    parse_with(desc, Arc::new(super::NoLayoutState), &|_, _| {
        panic!("guard lines need a guarded layout's state: use parse_with")
    })
}

/// Parse a tree description into a version of a layout whose empty state is `state`; a
/// guard line's keys become the records `guard(level, key)` makes.
pub(crate) fn parse_with(
    desc: &str,
    state: Arc<dyn LayoutState>,
    guard: &dyn Fn(u32, &[u8]) -> AxisRecord,
) -> Result<Version, String> {
    let mut edit = crate::manifest::VersionEdit::default();
    for line in desc.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (lvl, files) = line
            .split_once(':')
            .ok_or_else(|| format!("line {line:?} lacks 'L<n>:'"))?;
        if let Some(n) = lvl.trim().strip_prefix('G') {
            let level: u32 = n.parse().map_err(|_| format!("bad guard level {lvl:?}"))?;
            for k in files.split_whitespace() {
                edit.records.push(guard(level, k.as_bytes()));
            }
            continue;
        }
        let level: u32 = lvl
            .trim()
            .strip_prefix('L')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("bad level {lvl:?}"))?;
        for f in files.split_whitespace() {
            let (num, rest) = f.split_once(':').ok_or_else(|| format!("bad file {f:?}"))?;
            let number: u64 = num.parse().map_err(|_| format!("bad number in {f:?}"))?;
            let (rest, seqs) = match rest.split_once('@') {
                Some((r, s)) => (r, Some(s)),
                None => (rest, None),
            };
            let (range, sz) = match rest.split_once('/') {
                Some((r, s)) => (r, size(s)?),
                None => (rest, 1 << 20),
            };
            let (lo, hi) = range
                .split_once('-')
                .ok_or_else(|| format!("bad range in {f:?}"))?;
            let meta = match seqs {
                Some(s) => {
                    let (a, b) = s.split_once('-').ok_or_else(|| format!("bad seqs {s:?}"))?;
                    let a = a.parse().map_err(|_| format!("bad seq {a:?}"))?;
                    let b = b.parse().map_err(|_| format!("bad seq {b:?}"))?;
                    file_with_seqs(number, lo, hi, sz, a, b)
                }
                None => file(number, lo, hi, sz),
            };
            edit.new_files.push((level, meta));
        }
    }
    Version::with_layout(DEFAULT_LEVELS, state).apply(&edit)
}
