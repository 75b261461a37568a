//! Progress of long commands on stderr: an indicatif bar (or a spinner where the amount of
//! work is unknown) when stderr is a terminal, and nothing at all otherwise, so piped,
//! redirected and tested output is exactly what it would be without it.
//!
//! indicatif (console-rs) is the common choice for this in Rust CLIs (cargo-binstall, uv,
//! rustup's installer); it rate-limits its redraws, so counting every operation is cheap.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

/// A bar of `total` steps, or a counting spinner when `total` is `None`, labelled `label`;
/// hidden when stderr is not a terminal.
pub fn bar(label: &str, total: Option<u64>) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let (pb, template) = match total {
        Some(n) => (
            ProgressBar::new(n),
            "{prefix}: [{bar:30}] {pos}/{len} ops, {rate}, {elapsed} (eta {eta})",
        ),
        None => (
            ProgressBar::new_spinner(),
            "{spinner} {prefix}: {pos} ops, {rate}, {elapsed}",
        ),
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        let style = style.progress_chars("=> ").with_key(
            "rate",
            |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} ops/s", s.per_sec());
            },
        );
        pb.set_style(style);
    }
    pb.set_prefix(label.to_string());
    pb
}

/// A spinner with the elapsed time for work that reports no steps (a compaction, a verify
/// pass); it redraws on its own. Hidden when stderr is not a terminal.
pub fn spinner(label: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix}: {elapsed}") {
        pb.set_style(style);
    }
    pb.set_prefix(label.to_string());
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_without_a_terminal() {
        // cargo test captures stderr into a pipe: no terminal, so nothing may be drawn.
        if std::io::stderr().is_terminal() {
            return;
        }
        assert!(bar("fill", Some(10)).is_hidden());
        assert!(bar("load", None).is_hidden());
        assert!(spinner("compact").is_hidden());
    }
}
