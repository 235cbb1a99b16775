//! What a library has to say while it works, said to a [`Report`] that the caller renders.
//!
//! Library crates never print: a long evaluation, a fetch or an audit tells its `Report` where
//! it stands ([`Report::status`]), hands it the text it was asked for ([`Report::result`]) and
//! asks it for a [`Meter`] to advance. The `coreb` binary renders these on a terminal (its
//! printer: stderr lines, stdout results, progress bars or plain progress lines); the Python
//! module and tests keep them ([`Silent`], [`Recorded`]).

use std::sync::Mutex;

/// Where a library's status lines, results and progress go.
pub trait Report: Sync {
    /// A line for the person running the work: where it stands, a warning, a note.
    fn status(&self, line: &str);
    /// The text the work was asked to produce (a report, a table), whole.
    fn result(&self, text: &str);
    /// A meter for work of `len` units (bytes when `bytes`), named `label`; the work ends when
    /// the meter is dropped.
    fn meter(&self, len: Option<u64>, label: &str, bytes: bool) -> Box<dyn Meter>;
}

/// How far one piece of work has got.
pub trait Meter: Send + Sync {
    /// The work is `len` units long (learnt once it started, a download's size).
    fn set_length(&self, len: u64);
    /// `pos` units are done.
    fn set_position(&self, pos: u64);
    /// `n` more units are done.
    fn inc(&self, n: u64);
}

/// A report that keeps nothing: status lines and meters are dropped, results too.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

/// A meter that counts nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMeter;

impl Meter for NoMeter {
    fn set_length(&self, _: u64) {}
    fn set_position(&self, _: u64) {}
    fn inc(&self, _: u64) {}
}

impl Report for Silent {
    fn status(&self, _: &str) {}
    fn result(&self, _: &str) {}
    fn meter(&self, _: Option<u64>, _: &str, _: bool) -> Box<dyn Meter> {
        Box::new(NoMeter)
    }
}

/// A report that keeps what it is told, in order (for tests and callers that show it later).
#[derive(Debug, Default)]
pub struct Recorded {
    lines: Mutex<Vec<Said>>,
}

/// One thing said to a [`Recorded`] report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// A status line.
    Status(String),
    /// A result.
    Result(String),
}

impl Recorded {
    /// Everything said so far, in order.
    pub fn said(&self) -> Vec<Said> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn push(&self, said: Said) {
        if let Ok(mut l) = self.lines.lock() {
            l.push(said);
        }
    }
}

impl Report for Recorded {
    fn status(&self, line: &str) {
        self.push(Said::Status(line.to_owned()));
    }
    fn result(&self, text: &str) {
        self.push(Said::Result(text.to_owned()));
    }
    fn meter(&self, _: Option<u64>, _: &str, _: bool) -> Box<dyn Meter> {
        Box::new(NoMeter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(report: &dyn Report) {
        let meter = report.meter(Some(3), "work", false);
        meter.inc(2);
        report.status("two of three");
        meter.inc(1);
        report.result("done");
    }

    #[test]
    fn a_recorded_report_keeps_lines_and_results_in_order() {
        let r = Recorded::default();
        work(&r);
        assert_eq!(
            r.said(),
            vec![Said::Status("two of three".into()), Said::Result("done".into())]
        );
        work(&Silent);
    }
}
