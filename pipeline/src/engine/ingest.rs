//! Runs `ingest`: streams every fetched file, decodes rows in parallel batches, writes the
//! problems table in input order. Memory holds one batch of lines at a time.

use std::io::{BufReader, Write};

use anyhow::{Context, bail};
use rayon::prelude::*;
use stages::ingest::{BadRows, IngestStats, Line, LineReader, RowError, RowOutcome, ingest_row};
use stages::problem::Problem;
use stages::tables::ProblemWriter;

use super::{Engine, StageReport};
use crate::cli::StageName;
use crate::artifacts::{StageRecord, input_key};

/// Lines decoded together; the batch also closes at [`BATCH_BYTES`].
const BATCH_LINES: usize = 512;
const BATCH_BYTES: usize = 16 << 20;

/// A rejected row, as listed in `rejections.jsonl`.
#[derive(serde::Serialize)]
struct Rejection<'a> {
    file: &'a str,
    line: u64,
    field: &'a str,
    reason: &'a str,
}

pub(super) fn run(engine: &Engine, fetch: &StageRecord) -> anyhow::Result<StageReport> {
    let plan = &engine.plan;
    let config = &plan.stages.ingest;
    let key = input_key(StageName::Ingest.as_str(), &(config, &plan.window), &[fetch])?;
    if let Some(hit) = engine.cached(StageName::Ingest, &key)? {
        return Ok(hit);
    }
    let files = super::fetch::files(fetch)?;
    let writer = engine.store.begin(StageName::Ingest.as_str())?;
    let table = ProblemWriter::create(&writer.path("problems.parquet"))?;
    let mut rejections = fs_err::File::create(writer.path("rejections.jsonl"))?;
    let total: u64 = files.iter().map(|f| f.bytes).sum();
    let bar = engine.printer.progress(Some(total), "ingest", true);

    // Decoding (parallel, this thread) and Parquet encoding (the writer thread) overlap; the
    // bounded channel keeps at most two decoded batches in flight.
    let (to_writer, batches) = std::sync::mpsc::sync_channel::<Vec<Problem>>(2);
    let writer_thread = std::thread::spawn(move || -> Result<ProblemWriter, stages::tables::TableError> {
        let mut table = table;
        for batch in batches {
            for problem in batch {
                table.write(problem)?;
            }
        }
        Ok(table)
    });
    let read = read_all(engine, &files, &to_writer, &mut rejections, &bar);
    drop(to_writer);
    let table = writer_thread.join().map_err(|_| anyhow::anyhow!("the ingest writer thread panicked"))?;
    // A decoding error wins over a writer error: it names the bad row.
    let stats = read?;
    table?.finish()?;
    rejections.sync_all()?;
    drop(rejections);
    bar.finish_and_clear();
    let summary = serde_json::to_value(stats)?;
    let record = writer.commit(&key, &[("problems", "problems.parquet"), ("rejections", "rejections.jsonl")], summary)?;
    Ok(StageReport { stage: StageName::Ingest, skipped: false, record })
}

/// Read and decode every file in order, sending kept problems to the writer.
fn read_all(
    engine: &Engine,
    files: &[stages::fetch::Fetched],
    to_writer: &std::sync::mpsc::SyncSender<Vec<Problem>>,
    rejections: &mut fs_err::File,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<IngestStats> {
    let plan = &engine.plan;
    let config = &plan.stages.ingest;
    let mut stats = IngestStats::default();
    let mut done_bytes = 0u64;
    for file in files {
        let label = file.path.display().to_string();
        let reader = fs_err::File::open(&file.path)?;
        let mut lines = LineReader::new(BufReader::with_capacity(1 << 20, reader), config.max_line_bytes);
        loop {
            let mut batch: Vec<(u64, Result<Vec<u8>, RowError>)> = Vec::new();
            let mut batch_bytes = 0usize;
            while batch.len() < BATCH_LINES && batch_bytes < BATCH_BYTES {
                match lines.next_line().with_context(|| format!("reading `{label}`"))? {
                    None => break,
                    Some(Line::Text(_, text)) if text.iter().all(u8::is_ascii_whitespace) => {}
                    Some(Line::Text(n, text)) => {
                        batch_bytes += text.len();
                        batch.push((n, Ok(text)));
                    }
                    Some(Line::TooLong(n, len)) => batch.push((
                        n,
                        Err(RowError {
                            field: "(line)".into(),
                            reason: format!("line of {len} bytes is longer than `max_line_bytes` ({})", config.max_line_bytes),
                        }),
                    )),
                }
            }
            if batch.is_empty() {
                break;
            }
            let decoded: Vec<(u64, Result<RowOutcome, RowError>)> = engine.pool.install(|| {
                batch
                    .into_par_iter()
                    .map(|(n, line)| (n, line.and_then(|l| ingest_row(&l, config, &plan.window))))
                    .collect()
            });
            let mut kept = Vec::with_capacity(decoded.len());
            for (line_no, outcome) in decoded {
                stats.rows_in += 1;
                match outcome {
                    Ok(RowOutcome::Keep(problem)) => {
                        kept.push(*problem);
                        stats.rows_out += 1;
                    }
                    Ok(RowOutcome::OutOfWindow) => stats.out_of_window += 1,
                    Err(e) => match config.on_bad_row {
                        BadRows::Error => bail!("{label}:{line_no}: `{}`: {}", e.field, e.reason),
                        BadRows::Skip => {
                            stats.rejected += 1;
                            let r = Rejection { file: &label, line: line_no, field: &e.field, reason: &e.reason };
                            serde_json::to_writer(&mut *rejections, &r)?;
                            rejections.write_all(b"\n")?;
                        }
                    },
                }
            }
            if to_writer.send(kept).is_err() {
                // The writer stopped: its own error is reported by the caller.
                return Ok(stats);
            }
            bar.set_position(done_bytes + lines.bytes);
        }
        done_bytes += lines.bytes;
        stats.bytes_in += lines.bytes;
    }
    Ok(stats)
}
