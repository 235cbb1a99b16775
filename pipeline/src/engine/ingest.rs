//! `ingest`: streams every fetched file through a pipeline — this thread reads lines,
//! `jobs` workers decode them, one writer thread puts the problems in input order and encodes
//! the table — so decoding never waits for a batch's slowest row. At most
//! [`in_flight`] lines are between reader and writer, so memory does not grow with the input.
//! On a first build of local files the reader also hashes them, and `fetch` is recorded from
//! those hashes ([`decode_with_hashes`]): each file is read once.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use anyhow::{Context, bail};
use coreb_base::hashing::HashingReader;
use coreb_data::problem::DateWindow;
use coreb_data::tables::ProblemWriter;
use coreb_stages::fetch::{Fetched, Location};
use coreb_stages::ingest::{
    BadRows, IngestConfig, IngestStats, Line, LineReader, RowError, RowOutcome, ingest_row,
};

use super::context::{StageContext, StageOutput};
use super::fused::FusedIngest;
use super::stage::{Done, Stage, Upstream};
use super::stage_name::StageName;
use super::summary::{Counts, Reasons, Summary};
use crate::artifacts::input_key;

/// Lines read but not yet written: enough to keep every worker busy while the writer waits
/// for the next row in input order.
fn in_flight(workers: usize) -> usize {
    2 * workers + 2
}

/// A rejected row, as listed in `rejections.jsonl`.
#[derive(serde::Serialize)]
struct Rejection<'a> {
    file: &'a str,
    line: u64,
    field: &'a str,
    reason: &'a str,
}

/// One line on its way through the pipeline: its place in the input, its file and line
/// number, and the line or what the reader found wrong with it.
struct Job<T> {
    seq: u64,
    file: usize,
    line: u64,
    item: Result<T, RowError>,
}

/// The `ingest` stage.
pub(super) struct Ingest;

impl Summary for IngestStats {
    fn counts(&self) -> Counts {
        Counts { rows_in: self.rows_in, rows_out: self.rows_out, rejected: self.rejected }
    }

    fn reasons(&self) -> Reasons {
        Reasons::Counts(vec![("out_of_window", self.out_of_window), ("rejected", self.rejected)])
    }
}

impl Stage for Ingest {
    const NAME: StageName = StageName::Ingest;
    type Summary = IngestStats;
    type Local = ();
    type Prepared = Option<FusedIngest>;

    fn key(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
    ) -> anyhow::Result<(String, Option<FusedIngest>)> {
        let fused = cx.take_fused_ingest().transpose()?;
        let plan = cx.plan();
        let key = input_key(
            StageName::Ingest.as_str(),
            &(&plan.stages.ingest, &plan.window),
            &[up.record(StageName::Fetch)?],
        )?;
        Ok((key, fused))
    }

    fn output(
        &self,
        cx: &StageContext,
        fused: &mut Option<FusedIngest>,
    ) -> anyhow::Result<StageOutput> {
        match fused.as_mut().and_then(|f| f.writer.take()) {
            Some(writer) => Ok(StageOutput::Whole(writer)),
            None => cx.begin(StageName::Ingest),
        }
    }

    fn run(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        fused: Option<FusedIngest>,
        out: &StageOutput,
    ) -> anyhow::Result<Done<IngestStats, ()>> {
        if let Some(FusedIngest { stats, started, .. }) = fused {
            let mut done = done(stats);
            // Both ran from the start of `fetch`: `ingest` until its table was written.
            done.wall = Some(started.elapsed());
            return Ok(done);
        }
        let fetched = up
            .report(StageName::Fetch)?
            .local_as::<FetchLocal>()
            .context("the fetch record lists no sources")?;
        let inputs: Vec<Input> = fetched
            .sources
            .iter()
            .map(|f| Input { bytes: f.bytes, path: f.path.clone() })
            .collect();
        Ok(done(decode(cx, &inputs, false, out)?.stats))
    }
}

/// May this build fetch and ingest in one pass ([`decode_with_hashes`])? Only when every
/// source is a local file (a download is hashed as it arrives) and no stored `ingest` could be
/// reused: a rerun hashes first, so that an unchanged input skips decoding.
pub(super) fn reads_sources_once(cx: &StageContext) -> anyhow::Result<bool> {
    let local = cx.plan().sources.iter().all(|s| matches!(s.location, Location::Local(_)));
    Ok(local && !cx.store().holds_reusable(StageName::Ingest.as_str())?)
}

/// Decode every input into a new `ingest` output, hashing each as it is read (for `fetch`),
/// and keep it in the context for `ingest`'s turn ([`FusedIngest`]); returns what was read
/// ([`Hashed`]).
pub(super) fn decode_with_hashes(
    cx: &StageContext,
    inputs: &[Input],
    started: std::time::Instant,
) -> anyhow::Result<Hashed> {
    let out = cx.begin(StageName::Ingest)?;
    let decoded = decode(cx, inputs, true, &out)?;
    let found =
        Hashed { hashes: decoded.hashes.clone(), read: decoded.read, kept: decoded.stats.rows_out };
    let StageOutput::Whole(writer) = out else {
        bail!("`ingest` decoded ahead as a shard process (a bug in coreb)");
    };
    let fused = FusedIngest { writer: Some(writer), stats: decoded.stats, started };
    cx.put_fused_ingest(Ok(fused));
    Ok(found)
}

/// What [`decode_with_hashes`] read.
pub(super) struct Hashed {
    /// Each input's sha256 and length.
    pub(super) hashes: Vec<(String, u64)>,
    /// How long reading took.
    pub(super) read: std::time::Duration,
    /// The problems kept (inside the window).
    pub(super) kept: u64,
}

/// Where the fetched files are on this machine: `fetch`'s local facts, as `ingest` reads them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct FetchLocal {
    /// The fetched files, in manifest order.
    pub(crate) sources: Vec<Fetched>,
}

/// A file to ingest.
pub(super) struct Input {
    pub(super) path: std::path::PathBuf,
    /// Its size, for progress.
    pub(super) bytes: u64,
}

/// A decoded input, its table written but not yet committed.
pub(super) struct Decoded {
    stats: IngestStats,
    /// The sha256 and length of each input, when asked for.
    hashes: Vec<(String, u64)>,
    /// How long reading the input took.
    read: std::time::Duration,
}

/// The record of a decoded input: its table and rejections, and what it counted.
fn done(stats: IngestStats) -> Done<IngestStats, ()> {
    Done::new(&[("problems", "problems.parquet"), ("rejections", "rejections.jsonl")], stats, ())
}

/// Decode every input into `out`; hash the inputs too when `hash`.
fn decode(
    cx: &StageContext,
    inputs: &[Input],
    hash: bool,
    out: &StageOutput,
) -> anyhow::Result<Decoded> {
    let plan = cx.plan();
    let config = &plan.stages.ingest;
    let labels: Vec<String> = inputs.iter().map(|f| f.path.display().to_string()).collect();
    let output = Output {
        table: ProblemWriter::create(&out.path("problems.parquet"))?,
        rejections: fs_err::File::create(out.path("rejections.jsonl"))?,
        stats: IngestStats::default(),
    };
    let total: u64 = inputs.iter().map(|f| f.bytes).sum();
    let bar = cx.printer().progress(Some(total), "ingest", true);

    let workers = plan.jobs.max(1);
    let (to_workers, lines) = sync_channel::<Job<Vec<u8>>>(workers);
    let lines = Mutex::new(lines);
    let (to_writer, decoded) = sync_channel::<Job<RowOutcome>>(workers);
    let (free, slots) = sync_channel::<()>(in_flight(workers));
    for _ in 0..in_flight(workers) {
        free.send(()).expect("the slot channel holds every slot");
    }
    let started = std::time::Instant::now();
    let (read, written) = std::thread::scope(|scope| {
        for _ in 0..workers {
            let to_writer = to_writer.clone();
            let lines = &lines;
            scope.spawn(move || decode_lines(lines, &to_writer, config, &plan.window));
        }
        drop(to_writer);
        let labels = &labels;
        let writer_thread =
            scope.spawn(move || write_in_order(decoded, free, output, config, labels));
        let read = read_lines(inputs, labels, hash, config, to_workers, &slots, &bar)
            .map(|r| (r, started.elapsed()));
        let written =
            writer_thread.join().map_err(|_| anyhow::anyhow!("the ingest writer thread panicked"));
        (read, written)
    });
    // The writer's error wins: it names the first bad row in input order; a reader that
    // stopped because the writer did has nothing to add.
    let Output { table, rejections, mut stats } = written??;
    let (Reading { bytes, hashes }, read) = read?;
    stats.bytes_in = bytes;
    table.finish()?;
    rejections.sync_all()?;
    drop(rejections);
    bar.finish_and_clear();
    Ok(Decoded { stats, hashes, read })
}

/// What the writer thread owns.
struct Output {
    table: ProblemWriter,
    rejections: fs_err::File,
    stats: IngestStats,
}

/// What the reader read: bytes in all, and with hashing, the sha256 and length of each file
/// it read to the end.
struct Reading {
    bytes: u64,
    hashes: Vec<(String, u64)>,
}

/// Read every file in order and hand its lines to the workers, taking a slot for each; with
/// `hash`, hash each file as it is read. Stops early, without error, when the writer has
/// stopped (the files not read to their end have no hash).
fn read_lines(
    inputs: &[Input],
    labels: &[String],
    hash: bool,
    config: &IngestConfig,
    to_workers: SyncSender<Job<Vec<u8>>>,
    slots: &Receiver<()>,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<Reading> {
    let mut sender = Sender { seq: 0, done_bytes: 0, to_workers, slots, bar, config };
    let mut hashes = Vec::new();
    for (file, input) in inputs.iter().enumerate() {
        let reader = fs_err::File::open(&input.path)?;
        let label = &labels[file];
        let finished = if hash {
            let (lines, finished) = sender.send_file(file, label, HashingReader::new(reader))?;
            if finished {
                hashes.push(lines.into_inner().finish());
            }
            finished
        } else {
            sender.send_file(file, label, reader)?.1
        };
        if !finished {
            break;
        }
    }
    Ok(Reading { bytes: sender.done_bytes, hashes })
}

/// The reader's side of the pipeline.
struct Sender<'a> {
    seq: u64,
    /// Bytes of the files read before this one.
    done_bytes: u64,
    to_workers: SyncSender<Job<Vec<u8>>>,
    slots: &'a Receiver<()>,
    bar: &'a indicatif::ProgressBar,
    config: &'a IngestConfig,
}

impl Sender<'_> {
    /// Hand every line read from one file to the workers; returns the line reader, and false
    /// when the writer stopped first.
    fn send_file<R: std::io::Read>(
        &mut self,
        file: usize,
        label: &str,
        reader: R,
    ) -> anyhow::Result<(LineReader<R>, bool)> {
        let mut lines = LineReader::new(reader, self.config.max_line_bytes);
        let finished = self.send_lines(file, label, &mut lines)?;
        self.done_bytes += lines.bytes;
        Ok((lines, finished))
    }

    /// Hand every line of one file to the workers; false when the writer stopped first.
    fn send_lines<R: std::io::Read>(
        &mut self,
        file: usize,
        label: &str,
        lines: &mut LineReader<R>,
    ) -> anyhow::Result<bool> {
        let max_line_bytes = self.config.max_line_bytes;
        loop {
            let item = match lines.next_line().with_context(|| format!("reading `{label}`"))? {
                None => return Ok(true),
                Some(Line::Text(_, text)) if text.iter().all(u8::is_ascii_whitespace) => continue,
                Some(Line::Text(n, text)) => (n, Ok(text)),
                Some(Line::TooLong(n, len)) => (
                    n,
                    Err(RowError {
                        field: "(line)".into(),
                        reason: format!(
                            "line of {len} bytes is longer than `max_line_bytes` ({max_line_bytes})"
                        ),
                    }),
                ),
            };
            if self.slots.recv().is_err()
                || self
                    .to_workers
                    .send(Job { seq: self.seq, file, line: item.0, item: item.1 })
                    .is_err()
            {
                return Ok(false);
            }
            self.seq += 1;
            self.bar.set_position(self.done_bytes + lines.bytes);
        }
    }
}

/// A worker: decode lines until the reader is done. Once the writer has stopped, results
/// are dropped but lines are still taken, so the reader never blocks on a full channel.
fn decode_lines(
    lines: &Mutex<Receiver<Job<Vec<u8>>>>,
    to_writer: &SyncSender<Job<RowOutcome>>,
    config: &IngestConfig,
    window: &DateWindow,
) {
    loop {
        let next = lines.lock().map_err(|_| ()).and_then(|rx| rx.recv().map_err(|_| ()));
        let Ok(Job { seq, file, line, item }) = next else {
            return;
        };
        // A decoder panic would leave a hole the writer waits on forever: make it the row's error.
        let item = item.and_then(|text| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                ingest_row(&text, config, window)
            }))
            .unwrap_or_else(|_| {
                Err(RowError {
                    field: "(line)".into(),
                    reason: "the decoder panicked on this row (a bug in coreb)".into(),
                })
            })
        });
        let _ = to_writer.send(Job { seq, file, line, item });
    }
}

/// The writer: take decoded rows as they come, put them back in input order, count them,
/// write kept problems and list rejected rows; frees a slot for every row written.
fn write_in_order(
    decoded: Receiver<Job<RowOutcome>>,
    free: SyncSender<()>,
    mut out: Output,
    config: &IngestConfig,
    labels: &[String],
) -> anyhow::Result<Output> {
    let mut waiting = BTreeMap::new();
    let mut next = 0u64;
    for job in decoded {
        waiting.insert(job.seq, job);
        while let Some(Job { file, line, item, .. }) = waiting.remove(&next) {
            next += 1;
            out.stats.rows_in += 1;
            match item {
                Ok(RowOutcome::Keep(problem)) => {
                    out.table.write(*problem)?;
                    out.stats.rows_out += 1;
                }
                Ok(RowOutcome::OutOfWindow) => out.stats.out_of_window += 1,
                Err(e) => match config.on_bad_row {
                    BadRows::Error => bail!("{}:{line}: `{}`: {}", labels[file], e.field, e.reason),
                    BadRows::Skip => {
                        out.stats.rejected += 1;
                        let r = Rejection {
                            file: &labels[file],
                            line,
                            field: &e.field,
                            reason: &e.reason,
                        };
                        serde_json::to_writer(&mut out.rejections, &r)?;
                        out.rejections.write_all(b"\n")?;
                    }
                },
            }
            // The reader may have stopped already; a slot nobody takes is harmless.
            let _ = free.send(());
        }
    }
    Ok(out)
}
