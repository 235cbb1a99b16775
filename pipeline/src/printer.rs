//! All terminal output: human lines on stderr, `--json` summaries on stdout, progress bars;
//! and what the library crates say ([`Report`]), rendered the same way.
//!
//! A progress bar is drawn only on a terminal; when stderr is a file or a pipe (a cron job's
//! log, CI), a plain line saying where the work stands is written every
//! [`PROGRESS_EVERY`] instead, so a long stage is never silent there.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use coreb_base::report::{Meter, Report};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a progress line is written when stderr is not a terminal.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// Where a command's output goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Printer {
    /// `--json`: machine-readable summaries on stdout, human lines suppressed.
    pub(crate) json: bool,
    /// `-q/--quiet`: no status lines or progress on stderr (errors are still printed).
    pub(crate) quiet: bool,
}

impl Printer {
    /// A printer for a command run with or without `--json`.
    pub(crate) fn new(json: bool) -> Self {
        Printer { json, quiet: false }
    }

    /// The same printer, without status lines and progress when `quiet` (`-q`).
    pub(crate) fn quiet(self, quiet: bool) -> Self {
        Printer { quiet, ..self }
    }

    /// A human-facing status line (stderr), hidden under `--json`.
    pub(crate) fn status(&self, line: impl std::fmt::Display) {
        if !self.json && !self.quiet {
            eprintln!("{line}");
        }
    }

    /// A result line meant for stdout (a report, trec_eval output). A closed pipe
    /// (`coreb … | head`) is not an error worth a panic: the rest is dropped.
    pub(crate) fn out(&self, line: impl std::fmt::Display) {
        use std::io::Write;
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }

    /// One JSON object on stdout (under `--json`).
    pub(crate) fn json_line(&self, value: &serde_json::Value) {
        if self.json {
            self.out(value);
        }
    }

    /// A progress bar over `len` units (bytes when `bytes`); drawn only on a terminal.
    pub(crate) fn progress(&self, len: Option<u64>, message: &str, bytes: bool) -> ProgressBar {
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
        if self.json || self.quiet {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        } else if !std::io::stderr().is_terminal() {
            progress_lines(&bar, bytes, PROGRESS_EVERY, |line| eprintln!("{line}"));
        }
        bar
    }
}

impl Report for Printer {
    fn status(&self, line: &str) {
        Printer::status(self, line);
    }
    fn result(&self, text: &str) {
        self.out(text);
    }
    fn meter(&self, len: Option<u64>, label: &str, bytes: bool) -> Box<dyn Meter> {
        Box::new(Bar(self.progress(len, label, bytes)))
    }
}

/// A progress bar as a library's [`Meter`]; cleared when dropped.
struct Bar(ProgressBar);

impl Meter for Bar {
    fn set_length(&self, len: u64) {
        self.0.set_length(len);
    }
    fn set_position(&self, pos: u64) {
        self.0.set_position(pos);
    }
    fn inc(&self, n: u64) {
        self.0.inc(n);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// While `bar` lives and is unfinished, hand `emit` a line saying where it stands every
/// `every` (from a thread of its own that ends with the bar).
fn progress_lines(
    bar: &ProgressBar,
    bytes: bool,
    every: Duration,
    emit: impl Fn(String) + Send + 'static,
) {
    let weak = bar.downgrade();
    std::thread::spawn(move || {
        let tick = every.min(Duration::from_millis(200));
        let mut last = Instant::now();
        loop {
            std::thread::sleep(tick);
            let Some(bar) = weak.upgrade() else { return };
            if bar.is_finished() {
                return;
            }
            if last.elapsed() >= every {
                last = Instant::now();
                emit(progress_line(
                    &bar.message(),
                    bar.position(),
                    bar.length(),
                    bar.elapsed(),
                    bytes,
                ));
            }
        }
    });
}

/// One progress line: `   generate: 12 of 92 (13%) after 3 min 12 s`.
fn progress_line(
    message: &str,
    position: u64,
    length: Option<u64>,
    elapsed: Duration,
    bytes: bool,
) -> String {
    let amount = |n: u64| {
        if bytes { indicatif::HumanBytes(n).to_string() } else { n.to_string() }
    };
    let after = duration(elapsed);
    match length {
        Some(len) if len > 0 => format!(
            "{message:>10}: {} of {} ({}%) after {after}",
            amount(position),
            amount(len),
            100 * position.min(len) / len
        ),
        _ => format!("{message:>10}: {} done after {after}", amount(position)),
    }
}

/// `45 s`, `3 min 12 s`, `1 h 02 min`.
fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn lines_say_where_the_work_stands() {
        assert_eq!(
            progress_line("generate", 12, Some(92), Duration::from_secs(192), false),
            "  generate: 12 of 92 (13%) after 3 min 12 s"
        );
        assert_eq!(
            progress_line("rewrite", 4, None, Duration::from_secs(9), false),
            "   rewrite: 4 done after 9 s"
        );
        assert_eq!(
            progress_line("test6", 1536, Some(3072), Duration::from_secs(3725), true),
            "     test6: 1.50 KiB of 3.00 KiB (50%) after 1 h 02 min"
        );
    }

    #[test]
    fn lines_come_while_the_bar_runs_and_stop_when_it_ends() {
        let bar = ProgressBar::hidden();
        bar.set_length(10);
        bar.set_message("execute");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        progress_lines(&bar, false, Duration::from_millis(30), move |l| {
            sink.lock().unwrap().push(l)
        });
        bar.inc(3);
        std::thread::sleep(Duration::from_millis(400));
        bar.finish_and_clear();
        std::thread::sleep(Duration::from_millis(200));
        let n = lines.lock().unwrap().len();
        assert!(n >= 2, "{:?}", lines.lock().unwrap());
        assert!(
            lines.lock().unwrap()[0].starts_with("   execute: 3 of 10 (30%) after"),
            "{:?}",
            lines.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(lines.lock().unwrap().len(), n, "no line after the bar finished");
    }
}
