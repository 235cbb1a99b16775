//! All terminal output: human lines on stderr, `--json` summaries on stdout, progress bars.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Where a command's output goes.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    /// `--json`: machine-readable summaries on stdout, human lines suppressed.
    pub json: bool,
}

impl Printer {
    /// A printer for a command run with or without `--json`.
    pub fn new(json: bool) -> Self {
        Printer { json }
    }

    /// A human-facing status line (stderr), hidden under `--json`.
    pub fn status(&self, line: impl std::fmt::Display) {
        if !self.json {
            eprintln!("{line}");
        }
    }

    /// A result line meant for stdout (a report, trec_eval output). A closed pipe
    /// (`coreb … | head`) is not an error worth a panic: the rest is dropped.
    pub fn out(&self, line: impl std::fmt::Display) {
        use std::io::Write;
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }

    /// One JSON object on stdout (under `--json`).
    pub fn json_line(&self, value: &serde_json::Value) {
        if self.json {
            self.out(value);
        }
    }

    /// A progress bar over `len` units (bytes when `bytes`); drawn only on a terminal.
    pub fn progress(&self, len: Option<u64>, message: &str, bytes: bool) -> ProgressBar {
        let bar = match len {
            Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
        };
        let template = match (len.is_some(), bytes) {
            (true, true) => "{msg:>10} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
            (true, false) => "{msg:>10} [{bar:30}] {pos}/{len} {per_sec} eta {eta}",
            (false, true) => "{msg:>10} {spinner} {bytes} {bytes_per_sec}",
            (false, false) => "{msg:>10} {spinner} {pos} {per_sec}",
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(message.to_owned());
        if self.json {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        bar
    }
}
