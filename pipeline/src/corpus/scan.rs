//! The scan step's runner: fetch the sources, read them into blocks, run
//! [`coreb_curation::scan`] over batches of blocks in parallel and write each output shard's
//! spool file.

use std::collections::{HashMap, HashSet};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use coreb_base::report::Report as _;
use coreb_curation::Sketches;
use coreb_curation::scan::{Block, BlockOut, Scan, SourceFields, field, is_blank};
use coreb_stages::fetch::{FetchConfig, Location, Source, fetch_source};
use rayon::prelude::*;

use super::output::spool_path;
use crate::corpus_manifest::{CorpusManifestFile, SourceFormat, SourceSpec};
use crate::printer::Printer;
use crate::shard::ShardSpec;

/// The local file (or BEIR folder) of every source, in manifest order: `url` sources are
/// downloaded into `cache` with the fetch stage (on `runtime`), and a `sha256` pin is checked
/// either way.
pub(super) fn fetch_sources(
    f: &CorpusManifestFile,
    cache: &Path,
    printer: &Printer,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::with_capacity(f.sources.len());
    for s in &f.sources {
        let location = match (&s.url, &s.path) {
            (Some(url), _) => Location::Http(url.clone()),
            (None, Some(path)) if s.sha256.is_some() => Location::Local(path.clone()),
            (None, Some(path)) => {
                files.push(path.clone());
                continue;
            }
            (None, None) => bail!("source `{}` has neither `path` nor `url`", s.name),
        };
        let what = match &location {
            Location::Http(url) => url.clone(),
            Location::Local(path) => path.display().to_string(),
        };
        // The download's file name: the source name made safe plus a hash of it (two names
        // may make the same safe name), and the URL's `.gz` kept so that the reader knows to
        // decompress. It never ends in `.url` or `.part`, the fetch stage's own files.
        let safe: String = s
            .name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || "_-".contains(c) { c } else { '_' })
            .collect();
        let tag = &coreb_base::hashing::sha256_hex(s.name.as_bytes())[..8];
        let name = format!("{safe}-{tag}{}", if what.ends_with(".gz") { ".gz" } else { "" });
        let source = Source { name, location, sha256: s.sha256.clone() };
        let bar = printer.meter(None, &s.name, true);
        let fetched = runtime
            .block_on(fetch_source(&FetchConfig::default(), &source, cache, bar.as_ref()))
            .with_context(|| format!("fetching source `{}` (`{what}`)", s.name))?;
        drop(bar);
        if fetched.downloaded > 0 {
            printer.status(format!("downloaded source `{}`: {} bytes", s.name, fetched.downloaded));
        }
        files.push(fetched.path);
    }
    Ok(files)
}

/// Blocks waiting to be processed together, the scan they feed and the spool files it fills
/// (one per output shard; `None` for a shard not wanted).
struct Batch<'a> {
    scan: Scan,
    sources: Vec<SourceFields<'a>>,
    blocks: Vec<(Block, u64, u64)>,
    size: usize,
    writers: Vec<Option<(PathBuf, BufWriter<fs_err::File>)>>,
    bar: indicatif::ProgressBar,
}

impl Batch<'_> {
    /// Queue a block of `rows` input rows; process the batch when it is full.
    fn push(&mut self, block: Block, rows: u64) -> anyhow::Result<()> {
        let seq = self.scan.rows() + self.blocks.iter().map(|b| b.2).sum::<u64>();
        self.blocks.push((block, seq, rows));
        if self.blocks.len() >= self.size { self.flush() } else { Ok(()) }
    }

    /// Process the queued blocks in parallel, then take their results in input order.
    fn flush(&mut self) -> anyhow::Result<()> {
        let blocks = std::mem::take(&mut self.blocks);
        let scan = &self.scan;
        let sources = &self.sources;
        let outs: Vec<Result<BlockOut, _>> =
            blocks.par_iter().map(|(b, seq, _)| scan.process(sources, b, *seq)).collect();
        for ((block, _, rows), out) in blocks.into_iter().zip(outs) {
            let out = out?;
            self.scan.append(&out, rows);
            for (w, bytes) in self.writers.iter_mut().zip(&out.spool) {
                if let Some((path, w)) = w {
                    w.write_all(bytes).with_context(|| format!("writing `{}`", path.display()))?;
                }
            }
            if let Block::Jsonl { bytes, .. } = block {
                self.bar.inc(bytes.len() as u64);
            }
        }
        Ok(())
    }
}

/// Rows per [`Block::Rows`].
const ROWS_PER_BLOCK: usize = 8192;

/// Stream every source: the rows of `slice` are sketched and spooled into `spool_dir` (one
/// file per output shard; only those of `todo` when given). Returns the sketches.
pub(super) fn scan(
    f: &CorpusManifestFile,
    files: &[PathBuf],
    slice: ShardSpec,
    spool_dir: &Path,
    todo: Option<&[u32]>,
    printer: &Printer,
) -> anyhow::Result<Sketches> {
    fs_err::create_dir_all(spool_dir)?;
    let writers = (0..f.output.shards)
        .map(|s| {
            if todo.is_some_and(|t| !t.contains(&s)) {
                return Ok(None);
            }
            let path = spool_path(spool_dir, s);
            let mut w = BufWriter::with_capacity(1 << 16, fs_err::File::create(&path)?);
            w.write_all(coreb_curation::spool::MAGIC)?;
            Ok(Some((path, w)))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let total: u64 = f
        .sources
        .iter()
        .zip(files)
        .filter(|(s, _)| s.format == SourceFormat::Jsonl)
        .filter_map(|(_, p)| fs_err::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let wanted = writers.iter().map(Option::is_some).collect();
    let ranges = byte_ranges(f, files, slice)?;
    let sources = f
        .sources
        .iter()
        .zip(files)
        .zip(&ranges)
        .map(|((s, p), r)| SourceFields {
            name: &s.name,
            path: p,
            text: &s.text_field,
            code: &s.code_field,
            id: s.id_field.as_deref(),
            by_range: r.is_some(),
        })
        .collect();
    let mut batch = Batch {
        scan: Scan::new(&f.dedup, (slice.index, slice.count), wanted),
        sources,
        blocks: Vec::new(),
        size: 2 * rayon::current_num_threads(),
        writers,
        bar: printer.progress(Some(total), "reading", true),
    };
    // Where a process may stop reading a source: the end of its range, when no source after
    // it is read whole (the rows after the range then give no row of the slice its position;
    // the input's row count is the last process's, which reads to the end).
    let stops: Vec<Option<u64>> = (0..ranges.len())
        .map(|i| {
            if ranges[i + 1..].iter().all(Option::is_some) { ranges[i].map(|r| r.1) } else { None }
        })
        .collect();
    for (i, ((source, path), (range, stop))) in
        f.sources.iter().zip(files).zip(ranges.into_iter().zip(stops)).enumerate()
    {
        read_source(i, source, path, range, stop, &mut batch)
            .with_context(|| format!("reading source `{}` (`{}`)", source.name, path.display()))?;
    }
    batch.flush()?;
    let Batch { scan, writers, bar, .. } = batch;
    bar.finish_and_clear();
    for (path, w) in writers.into_iter().flatten() {
        w.into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("writing `{}`", path.display()))?;
    }
    Ok(scan.finish())
}

/// Whether a JSONL source is gzipped (read whole by every shard process).
fn gzipped(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gz")
}

/// The byte range of each source that shard process `slice` reads (`None`: all of it, and
/// its rows are kept by id hash). With several processes, the plain JSONL sources, taken
/// together in manifest order, are cut into `slice.count` equal byte ranges; a process
/// parses the lines that start in its range and only counts those before it (for the rows'
/// positions; those after it too when a source it reads whole comes later). Gzipped JSONL,
/// Parquet and BEIR sources are read whole by every process.
fn byte_ranges(
    f: &CorpusManifestFile,
    files: &[PathBuf],
    slice: ShardSpec,
) -> anyhow::Result<Vec<Option<(u64, u64)>>> {
    let splits = |s: &SourceSpec, p: &Path| {
        slice.count > 1 && s.format == SourceFormat::Jsonl && !gzipped(p)
    };
    let sizes = f
        .sources
        .iter()
        .zip(files)
        .map(|(s, p)| Ok(if splits(s, p) { Some(fs_err::metadata(p)?.len()) } else { None }))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let total: u64 = sizes.iter().flatten().sum();
    let at = |i: u32| (u128::from(total) * u128::from(i) / u128::from(slice.count.max(1))) as u64;
    let (lo, hi) = (at(slice.index), at(slice.index + 1));
    let mut start = 0u64;
    Ok(sizes
        .into_iter()
        .map(|size| {
            size.map(|size| {
                let range =
                    (lo.saturating_sub(start).min(size), hi.saturating_sub(start).min(size));
                start += size;
                range
            })
        })
        .collect())
}

/// Queue the rows of one source (`source`-th of the manifest, read from `path`, its local
/// file or folder); of a JSONL file with a `range`, only the lines that start in it, reading
/// no further than needed past byte `stop` when given.
fn read_source(
    source: usize,
    s: &SourceSpec,
    path: &Path,
    range: Option<(u64, u64)>,
    stop: Option<u64>,
    batch: &mut Batch<'_>,
) -> anyhow::Result<()> {
    match s.format {
        SourceFormat::Jsonl => {
            let file = fs_err::File::open(path)?;
            let reader: Box<dyn Read> = if gzipped(path) {
                Box::new(flate2::read::MultiGzDecoder::new(file))
            } else {
                Box::new(file)
            };
            read_jsonl(source, path, reader, range, stop, batch)
        }
        SourceFormat::Parquet => {
            let mut cols = vec![s.text_field.as_str(), s.code_field.as_str()];
            if let Some(id) = &s.id_field {
                cols.push(id);
            }
            let mut rows = Vec::with_capacity(ROWS_PER_BLOCK);
            let mut failed = None;
            coreb_data::tables::columns::for_each_row(path, &cols, |row, mut v| {
                if failed.is_some() {
                    return;
                }
                let id = if v.len() > 2 { v.pop().unwrap_or_default() } else { row.to_string() };
                let code = v.pop().unwrap_or_default();
                let text = v.pop().unwrap_or_default();
                rows.push((format!("{}:{id}", s.name), text, code));
                if rows.len() == ROWS_PER_BLOCK {
                    let n = rows.len() as u64;
                    if let Err(e) = batch.push(
                        Block::Rows {
                            rows: std::mem::replace(&mut rows, Vec::with_capacity(ROWS_PER_BLOCK)),
                        },
                        n,
                    ) {
                        failed = Some(e);
                    }
                }
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
            let n = rows.len() as u64;
            batch.push(Block::Rows { rows }, n)
        }
        SourceFormat::Beir => {
            let rows = read_beir(s, path)?;
            for chunk in rows.chunks(ROWS_PER_BLOCK) {
                batch.push(Block::Rows { rows: chunk.to_vec() }, chunk.len() as u64)?;
            }
            Ok(())
        }
    }
}

/// Bytes of JSONL per block; a batch of blocks is parsed in parallel.
const BLOCK: usize = 4 << 20;

/// Read JSONL in blocks of whole lines, queued for parallel parsing with the number of rows
/// (non-blank lines) each holds, so that every row knows its position in the input. With a
/// byte `range`, only the lines that start in it are queued; the rows of the others are only
/// counted (queued as empty blocks), so that positions stay those of the whole file. With
/// `stop`, reading ends with the block that holds every line starting before that byte: the
/// rows counted are then those of the file up to there.
fn read_jsonl(
    source: usize,
    path: &Path,
    mut reader: Box<dyn Read>,
    range: Option<(u64, u64)>,
    stop: Option<u64>,
    batch: &mut Batch<'_>,
) -> anyhow::Result<()> {
    let mut carry: Vec<u8> = Vec::new();
    // A block that was only counted: its buffer is reused.
    let mut spare: Vec<u8> = Vec::new();
    let (mut lines_before, mut offset, mut skipped) = (0usize, 0u64, 0u64);
    loop {
        // Every line that starts before `stop` is read (`offset` ends a whole line).
        if stop.is_some_and(|end| offset >= end) {
            break;
        }
        let mut buf = std::mem::take(&mut spare);
        buf.clear();
        buf.append(&mut carry);
        let mut eof = false;
        // Read until the block holds a whole line past BLOCK bytes, or the file ends.
        loop {
            let want = BLOCK.max(buf.len() + 1) - buf.len();
            let n = (&mut reader)
                .take(want as u64)
                .read_to_end(&mut buf)
                .with_context(|| format!("reading `{}`", path.display()))?;
            if n == 0 {
                eof = true;
                break;
            }
            if let Some(last) = memchr::memrchr(b'\n', &buf) {
                carry.extend_from_slice(&buf[last + 1..]);
                buf.truncate(last + 1);
                break;
            }
        }
        if !buf.is_empty() {
            // The lines of the block that start in the range: [mine.0, mine.1) of `buf`.
            let mine = match range {
                None => (0, buf.len()),
                Some((a, b)) => {
                    (line_start_from(&buf, offset, a), line_start_from(&buf, offset, b))
                }
            };
            let (before_lines, before_rows) = count_rows(&buf[..mine.0]);
            let (mine_lines, mine_rows) = count_rows(&buf[mine.0..mine.1]);
            let (after_lines, after_rows) = count_rows(&buf[mine.1..]);
            let first_line = lines_before + before_lines;
            lines_before += before_lines + mine_lines + after_lines;
            offset += buf.len() as u64;
            skipped += before_rows;
            if mine.0 < mine.1 {
                if skipped > 0 {
                    batch.push(Block::Rows { rows: Vec::new() }, std::mem::take(&mut skipped))?;
                }
                let bytes = if mine == (0, buf.len()) {
                    buf
                } else {
                    let part = buf[mine.0..mine.1].to_vec();
                    spare = buf;
                    part
                };
                batch.push(Block::Jsonl { source, first_line, bytes }, mine_rows)?;
            } else {
                spare = buf;
            }
            skipped += after_rows;
        }
        if eof {
            break;
        }
    }
    if skipped > 0 {
        batch.push(Block::Rows { rows: Vec::new() }, skipped)?;
    }
    Ok(())
}

/// The position in `buf` (whole lines, starting at byte `offset` of the file) of the first
/// line that starts at or after byte `x` of the file (`buf.len()` when none does).
fn line_start_from(buf: &[u8], offset: u64, x: u64) -> usize {
    if x <= offset {
        return 0;
    }
    let p = x - offset;
    if p >= buf.len() as u64 {
        return buf.len();
    }
    let p = p as usize;
    if buf[p - 1] == b'\n' {
        return p;
    }
    memchr::memchr(b'\n', &buf[p..]).map_or(buf.len(), |i| p + i + 1)
}

/// The lines of `bytes` (whole lines; the last may lack its newline at the end of the file)
/// and how many of them are rows (not blank).
fn count_rows(bytes: &[u8]) -> (usize, u64) {
    let (mut lines, mut rows, mut start) = (0usize, 0u64, 0usize);
    for end in memchr::memchr_iter(b'\n', bytes)
        .chain((!bytes.is_empty() && bytes.last() != Some(&b'\n')).then_some(bytes.len()))
    {
        lines += 1;
        rows += u64::from(!is_blank(&bytes[start..end]));
        start = end + 1;
    }
    (lines, rows)
}

/// A BEIR folder: one pair per positive qrel (`<name>:<query id>:<doc id>`, text, code), in
/// qrels order.
fn read_beir(s: &SourceSpec, dir: &Path) -> anyhow::Result<Vec<(String, String, String)>> {
    let qrels_path = dir.join("qrels").join(format!("{}.tsv", s.split));
    let mut qrels = Vec::new();
    for (i, line) in fs_err::read_to_string(&qrels_path)?.lines().enumerate() {
        let cols: Vec<&str> = line.split('\t').collect();
        if i == 0 && cols.first() == Some(&"query-id") {
            continue;
        }
        let [q, d, score] = cols[..] else {
            bail!("`{}`:{}: expected 3 tab-separated columns", qrels_path.display(), i + 1)
        };
        let score: i64 = score
            .trim()
            .parse()
            .with_context(|| format!("`{}`:{}: score `{score}`", qrels_path.display(), i + 1))?;
        if score > 0 {
            qrels.push((q.to_owned(), d.to_owned()));
        }
    }
    let wanted_q: HashSet<&str> = qrels.iter().map(|(q, _)| q.as_str()).collect();
    let wanted_d: HashSet<&str> = qrels.iter().map(|(_, d)| d.as_str()).collect();
    let queries = read_beir_texts(&dir.join("queries.jsonl"), &wanted_q)?;
    let docs = read_beir_texts(&dir.join("corpus.jsonl"), &wanted_d)?;
    let mut rows = Vec::with_capacity(qrels.len());
    for (q, d) in &qrels {
        let (Some(text), Some(code)) = (queries.get(q), docs.get(d)) else {
            bail!(
                "`{}`: qrel `{q}` → `{d}` names a query or document that does not exist",
                qrels_path.display()
            );
        };
        rows.push((format!("{}:{q}:{d}", s.name), text.clone(), code.clone()));
    }
    Ok(rows)
}

/// The `text` of the rows of a BEIR JSONL file (`queries.jsonl`, `corpus.jsonl`) whose `_id`
/// is `wanted`.
fn read_beir_texts(path: &Path, wanted: &HashSet<&str>) -> anyhow::Result<HashMap<String, String>> {
    let mut texts = HashMap::new();
    for line in coreb_base::jsonl::lines(path)? {
        let line = line?;
        let line_no = line.number as usize;
        let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&line.text)
            .with_context(|| format!("{}: not a JSON object", line.at(path)))?;
        let id = field(&obj, "_id", path, line_no)?;
        if wanted.contains(id.as_str()) {
            texts.insert(id, field(&obj, "text", path, line_no)?);
        }
    }
    Ok(texts)
}
