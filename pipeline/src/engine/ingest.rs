//! Runs `ingest`: streams every fetched file through a pipeline — this thread reads lines,
//! `jobs` workers decode them, one writer thread puts the problems in input order and encodes
//! the table — so decoding never waits for a batch's slowest row. At most
//! [`in_flight`] lines are between reader and writer, so memory does not grow with the input.

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use anyhow::{Context, bail};
use stages::ingest::{BadRows, IngestConfig, IngestStats, Line, LineReader, RowError, RowOutcome, ingest_row};
use stages::problem::DateWindow;
use stages::tables::ProblemWriter;

use super::{Engine, StageReport};
use crate::cli::StageName;
use crate::artifacts::{StageRecord, input_key};

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

pub(super) fn run(engine: &Engine, fetch: &StageRecord) -> anyhow::Result<StageReport> {
    let plan = &engine.plan;
    let config = &plan.stages.ingest;
    let key = input_key(StageName::Ingest.as_str(), &(config, &plan.window), &[fetch])?;
    if let Some(hit) = engine.cached(StageName::Ingest, &key)? {
        return Ok(hit);
    }
    let files = super::fetch::files(fetch)?;
    let labels: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    let writer = engine.store.begin(StageName::Ingest.as_str())?;
    let output = Output {
        table: ProblemWriter::create(&writer.path("problems.parquet"))?,
        rejections: fs_err::File::create(writer.path("rejections.jsonl"))?,
        stats: IngestStats::default(),
    };
    let total: u64 = files.iter().map(|f| f.bytes).sum();
    let bar = engine.printer.progress(Some(total), "ingest", true);

    let workers = plan.jobs.max(1);
    let (to_workers, lines) = sync_channel::<Job<Vec<u8>>>(workers);
    let lines = Mutex::new(lines);
    let (to_writer, decoded) = sync_channel::<Job<RowOutcome>>(workers);
    let (free, slots) = sync_channel::<()>(in_flight(workers));
    for _ in 0..in_flight(workers) {
        free.send(()).expect("the slot channel holds every slot");
    }
    let (read, written) = std::thread::scope(|scope| {
        for _ in 0..workers {
            let to_writer = to_writer.clone();
            let lines = &lines;
            scope.spawn(move || decode_lines(lines, &to_writer, config, &plan.window));
        }
        drop(to_writer);
        let labels = &labels;
        let writer_thread = scope.spawn(move || write_in_order(decoded, free, output, config, labels));
        let read = read_lines(&files, labels, config, to_workers, &slots, &bar);
        let written = writer_thread.join().map_err(|_| anyhow::anyhow!("the ingest writer thread panicked"));
        (read, written)
    });
    // The writer's error wins: it names the first bad row in input order; a reader that
    // stopped because the writer did has nothing to add.
    let Output { table, rejections, mut stats } = written??;
    stats.bytes_in = read?;
    table.finish()?;
    rejections.sync_all()?;
    drop(rejections);
    bar.finish_and_clear();
    let summary = serde_json::to_value(stats)?;
    let record = writer.commit(&key, &[("problems", "problems.parquet"), ("rejections", "rejections.jsonl")], summary)?;
    Ok(StageReport { stage: StageName::Ingest, skipped: false, record })
}

/// What the writer thread owns.
struct Output {
    table: ProblemWriter,
    rejections: fs_err::File,
    stats: IngestStats,
}

/// Read every file in order and hand its lines to the workers, taking a slot for each;
/// returns the bytes read. Stops early, without error, when the writer has stopped.
fn read_lines(
    files: &[stages::fetch::Fetched],
    labels: &[String],
    config: &IngestConfig,
    to_workers: SyncSender<Job<Vec<u8>>>,
    slots: &Receiver<()>,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<u64> {
    let mut seq = 0u64;
    let mut done_bytes = 0u64;
    for (file, path) in files.iter().enumerate() {
        let label = &labels[file];
        let reader = fs_err::File::open(&path.path)?;
        let mut lines = LineReader::new(BufReader::with_capacity(1 << 20, reader), config.max_line_bytes);
        loop {
            let item = match lines.next_line().with_context(|| format!("reading `{label}`"))? {
                None => break,
                Some(Line::Text(_, text)) if text.iter().all(u8::is_ascii_whitespace) => continue,
                Some(Line::Text(n, text)) => (n, Ok(text)),
                Some(Line::TooLong(n, len)) => (
                    n,
                    Err(RowError {
                        field: "(line)".into(),
                        reason: format!("line of {len} bytes is longer than `max_line_bytes` ({})", config.max_line_bytes),
                    }),
                ),
            };
            if slots.recv().is_err() || to_workers.send(Job { seq, file, line: item.0, item: item.1 }).is_err() {
                return Ok(done_bytes + lines.bytes);
            }
            seq += 1;
            bar.set_position(done_bytes + lines.bytes);
        }
        done_bytes += lines.bytes;
    }
    Ok(done_bytes)
}

/// A worker: decode lines until the reader is done. Once the writer has stopped, results
/// are dropped but lines are still taken, so the reader never blocks on a full channel.
fn decode_lines(lines: &Mutex<Receiver<Job<Vec<u8>>>>, to_writer: &SyncSender<Job<RowOutcome>>, config: &IngestConfig, window: &DateWindow) {
    loop {
        let next = lines.lock().map_err(|_| ()).and_then(|rx| rx.recv().map_err(|_| ()));
        let Ok(Job { seq, file, line, item }) = next else { return };
        // A decoder panic would leave a hole the writer waits on forever: make it the row's error.
        let item = item.and_then(|text| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ingest_row(&text, config, window)))
                .unwrap_or_else(|_| Err(RowError { field: "(line)".into(), reason: "the decoder panicked on this row (a bug in coreb)".into() }))
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
                        let r = Rejection { file: &labels[file], line, field: &e.field, reason: &e.reason };
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
