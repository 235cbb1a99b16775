//! `coreb corpus <manifest>`: curate text–code training pairs, in one process or as shard
//! processes (`--shard i/N`) followed by `coreb merge corpus <manifest>`.
//!
//! `http(s)` sources are first downloaded into `<out>/.sources/` by the fetch stage (resumed,
//! retried, checked against their `sha256` pin). Then:
//! 1. **scan**: the sources are streamed once; every row gets its position in the input
//!    (`seq`); JSONL is read in blocks parsed in parallel, each keeping only the three wanted
//!    fields. A process keeps the rows of its slice (all of them, or those whose id hash falls
//!    in shard `i` of `N`), sketches them for deduplication (`stages::corpus::Sketcher`) and
//!    spools them, length-prefixed, into one file per output shard (by id hash).
//! 2. **duplicates**: `find_duplicates` decides over the sketches of all rows at once (duplicate
//!    ids, exact copies, near-duplicate components), so the kept rows do not depend on the
//!    shard count, the thread count or the number of processes.
//! 3. **curate**: each output shard streams its spool (merged across shard processes by
//!    `seq`) through the dedup verdicts → language → decontaminate, in parallel batches, and
//!    writes its records batch by batch. Only alignment and negatives, whose similarity
//!    matrix is quadratic, hold the shard's kept pairs (and so work within an output shard).
//!
//! Output shards run in parallel (rayon); every output is byte-identical whatever the thread
//! count, the `[output] shards` (up to the partitioning of the files) and the `--shard` split.
//! The output is Hive-style partitions that Spark, DuckDB and polars read directly:
//!
//! ```text
//! <out>/train/shard=NNN/part.parquet    query, pos, hard_neg[], easy_neg[] (+ id)
//! <out>/rerank/shard=NNN/part.parquet   query, doc, label
//! <out>/jsonl/{train,rerank}/shard=NNN/part.jsonl
//! <out>/reports/shard=NNN.json          stats, examples
//! <out>/reports/shard=NNN.dropped.jsonl every dropped pair, in row order
//! <out>/train/shard=NNN/_SUCCESS        written last; holds the plan hash
//! <out>/report.json, report.md, dropped.jsonl   merged over shards
//! <out>/parts/part=III-of-NNN/          a shard process's sketches.bin, spool/ and _SUCCESS
//! ```
//! An output shard whose `_SUCCESS` holds the current plan hash is skipped on a rerun, and a
//! shard process whose part is complete does nothing. Similarities come from the `[embed]`
//! endpoint (the shared embeddings client: cache, retries) when the manifest has one, else
//! from the lexical TF-IDF fallback.

use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use stages::corpus::{self, CorpusStats, Dropped, Duplicates, Pair, Prehashed, ReleaseIndex, SimMatrix, Sketcher, Sketches};
use stages::durable::{self, AtomicFile};
use stages::fetch::{FetchConfig, Location, Source, fetch_source};
use stages::tables::corpus::TrainingRecordRef;

use crate::cli::{CorpusArgs, MergeArgs, ShardSpec};
use crate::corpus_manifest::{CorpusManifestFile, CorpusPlan, SourceFormat, SourceSpec};
use crate::engine::FileEntry;
use crate::jsonl::for_each_json;
use crate::printer::Printer;
use crate::shard::{self, PartMarker, PartWriter, part_done, part_name};

/// Up to this many examples per drop reason in the report.
const EXAMPLES: usize = 3;

/// Run `coreb corpus`: everything in this process, or (`--shard i/N`) one shard process.
pub fn corpus(args: CorpusArgs) -> anyhow::Result<ExitCode> {
    let CorpusArgs { manifest, json, shard } = args;
    let printer = Printer::new(json);
    let run = Run::load(&manifest)?;
    match shard {
        Some(slice) => run.part(slice, &printer),
        None => run.whole(&printer),
    }
}

/// Run `coreb merge corpus`: combine the parts of `coreb corpus --shard i/N` into the output.
pub fn merge(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let MergeArgs { stage: _, manifest, json, output_dir, jobs } = args;
    if output_dir.is_some() || jobs.is_some() {
        anyhow::bail!("`--output-dir` and `--jobs` are for the build stages; the corpus manifest sets `[output] dir`");
    }
    let printer = Printer::new(json);
    Run::load(&manifest)?.merge(&printer)
}

/// A loaded corpus manifest and what derives from it.
struct Run {
    manifest: PathBuf,
    plan: CorpusPlan,
    /// sha256 of the resolved manifest: outputs and parts made from another plan are redone
    /// or refused.
    plan_hash: String,
}

impl Run {
    fn load(manifest: &Path) -> anyhow::Result<Run> {
        let plan = CorpusPlan::load(manifest).with_context(|| format!("loading corpus manifest `{}`", manifest.display()))?;
        let plan_hash = stages::hashing::sha256_hex(serde_json::to_string(&plan.file)?.as_bytes());
        Ok(Run { manifest: manifest.to_owned(), plan, plan_hash })
    }

    fn file(&self) -> &CorpusManifestFile {
        &self.plan.file
    }

    fn out(&self) -> &Path {
        &self.plan.file.output.dir
    }

    /// Output shards not yet complete for this plan.
    fn todo(&self) -> anyhow::Result<Vec<u32>> {
        fs_err::create_dir_all(self.out())?;
        Ok((0..self.file().output.shards).filter(|&s| !shard_done(self.out(), s, &self.plan_hash)).collect())
    }

    /// All of it in one process: scan every row, find the duplicates, curate.
    fn whole(&self, printer: &Printer) -> anyhow::Result<ExitCode> {
        let f = self.file();
        let todo = self.todo()?;
        if todo.is_empty() {
            printer.status(format!("all {} shards complete; nothing to do", f.output.shards));
            return self.finish(printer);
        }
        let index = release_index(f)?;
        printer.status(format!("indexed {} release documents", index.docs().len()));
        let files = fetch_sources(f, &self.out().join(".sources"), printer)?;
        let spool = self.out().join(".spool");
        if spool.exists() {
            fs_err::remove_dir_all(&spool)?;
        }
        let scan = scan_sources(f, &files, ShardSpec { index: 0, count: 1 }, &spool, Some(&todo), printer)?;
        printer.status(format!("read {} pairs; finding duplicates over all of them", scan.input_rows()));
        let dups = corpus::find_duplicates(&f.dedup, &[&scan])?;
        drop(scan);
        printer.status(format!("curating {} shards", todo.len()));
        self.curate(&index, &dups, &todo, |s| vec![spool_path(&spool, s)])?;
        fs_err::remove_dir_all(&spool)?;
        self.finish(printer)
    }

    /// One shard process: scan the rows of slice `slice` into `<out>/parts/part=III-of-NNN/`.
    fn part(&self, slice: ShardSpec, printer: &Printer) -> anyhow::Result<ExitCode> {
        let f = self.file();
        let name = part_name(slice);
        let parts = self.out().join("parts");
        if part_done(&parts, slice, &self.plan_hash) {
            printer.status(format!("shard {}/{} is complete (`{}`); nothing to do", slice.index, slice.count, parts.join(&name).display()));
            printer.json_line(&serde_json::json!({"shard": slice.index, "shards": slice.count, "done": true}));
            return Ok(ExitCode::SUCCESS);
        }
        let part = PartWriter::begin(&parts, slice)?;
        // Each shard process downloads into its own cache: processes running at once on a
        // shared file system never write the same download.
        let files = fetch_sources(f, &self.out().join(".sources").join(&name), printer)?;
        let scan = scan_sources(f, &files, slice, &part.path("spool"), None, printer)?;
        {
            let path = part.path("sketches.bin");
            let mut w = BufWriter::with_capacity(1 << 20, fs_err::File::create(&path)?);
            scan.write_to(&mut w).with_context(|| format!("writing `{}`", path.display()))?;
            w.into_inner().map_err(|e| e.into_error())?;
        }
        let (input_rows, rows) = (scan.input_rows(), scan.len() as u64);
        let facts = serde_json::json!({"input_rows": input_rows, "rows": rows});
        let marker = PartMarker { plan: self.plan_hash.clone(), shard: slice.index, shards: slice.count, files: Default::default(), facts: facts.as_object().cloned().unwrap_or_default() };
        let dir = part.finish(&marker)?;
        printer.status(format!(
            "shard {}/{}: {rows} of the {input_rows} pairs read into `{}`; run `coreb merge corpus {}` once every shard is done",
            slice.index,
            slice.count,
            dir.display(),
            self.manifest.display()
        ));
        printer.json_line(&serde_json::json!({"shard": slice.index, "shards": slice.count, "rows_in": input_rows, "rows": rows}));
        Ok(ExitCode::SUCCESS)
    }

    /// Combine the complete parts of every shard process: refuse while one is missing,
    /// incomplete or made from another plan.
    fn merge(&self, printer: &Printer) -> anyhow::Result<ExitCode> {
        let f = self.file();
        let todo = self.todo()?;
        if todo.is_empty() {
            printer.status(format!("all {} shards complete; nothing to do", f.output.shards));
            return self.finish(printer);
        }
        let parts_dir = self.out().join("parts");
        let parts = self.complete_parts(&parts_dir)?;
        let index = release_index(f)?;
        printer.status(format!("indexed {} release documents", index.docs().len()));
        let sketches: Vec<Sketches> = parts
            .par_iter()
            .map(|dir| {
                let path = dir.join("sketches.bin");
                let mut r = BufReader::with_capacity(1 << 20, fs_err::File::open(&path)?);
                Sketches::read_from(&mut r).with_context(|| format!("reading `{}`", path.display()))
            })
            .collect::<anyhow::Result<_>>()?;
        let refs: Vec<&Sketches> = sketches.iter().collect();
        printer.status(format!("merging {} shard parts: finding duplicates over {} pairs", parts.len(), refs.first().map_or(0, |s| s.input_rows())));
        let dups = corpus::find_duplicates(&f.dedup, &refs).with_context(|| format!("merging the parts in `{}`", parts_dir.display()))?;
        drop(sketches);
        printer.status(format!("curating {} shards", todo.len()));
        self.curate(&index, &dups, &todo, |s| parts.iter().map(|p| spool_path(&p.join("spool"), s)).collect())?;
        fs_err::remove_dir_all(&parts_dir)?;
        self.finish(printer)
    }

    /// The directories of parts `0..N` of one shard count, each complete and made from this
    /// plan; otherwise an error naming every part that is not.
    fn complete_parts(&self, parts_dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
        let rerun = |i: u32, n: u32| format!("run `coreb corpus {} --shard {i}/{n}`", self.manifest.display());
        Ok(shard::complete_parts(parts_dir, &self.plan_hash, "corpus", rerun)?.into_iter().map(|(dir, _)| dir).collect())
    }

    /// Curate the output shards `todo` (in parallel), reading each one's rows from the spool
    /// files `spools(shard)`.
    fn curate(&self, index: &ReleaseIndex, dups: &Duplicates, todo: &[u32], spools: impl Fn(u32) -> Vec<PathBuf> + Sync) -> anyhow::Result<()> {
        let f = self.file();
        let embedder = Embedder::new(f)?;
        todo.par_iter().try_for_each(|&s| process_shard(f, index, embedder.as_ref(), dups, self.out(), &spools(s), s, &self.plan_hash))
    }

    /// Merge the shard reports and print the summary.
    fn finish(&self, printer: &Printer) -> anyhow::Result<ExitCode> {
        let report = merge_reports(self.out(), self.file().output.shards)?;
        let s = &report.stats;
        printer.json_line(&serde_json::to_value(s)?);
        printer.status(format!(
            "{} pairs in, {} records out (exact {}, near {}, language {}, contaminated {}, misaligned {})",
            s.rows_in,
            s.rows_out,
            s.exact_duplicate + s.duplicate_id,
            s.near_duplicate,
            s.too_short + s.url + s.html + s.language,
            s.contaminated,
            s.misaligned
        ));
        Ok(ExitCode::SUCCESS)
    }
}

fn shard_name(s: u32) -> String {
    format!("shard={s:03}")
}

/// The files an output shard writes, relative to the output directory.
fn shard_files(s: u32) -> Vec<String> {
    let name = shard_name(s);
    vec![
        format!("train/{name}/part.parquet"),
        format!("rerank/{name}/part.parquet"),
        format!("jsonl/train/{name}/part.jsonl"),
        format!("jsonl/rerank/{name}/part.jsonl"),
        format!("reports/{name}.json"),
        format!("reports/{name}.dropped.jsonl"),
    ]
}

/// Is output shard `s` complete for this plan: a `_SUCCESS` of this plan, and every file it
/// lists still the one it describes (a torn or edited file redoes the shard).
fn shard_done(out: &Path, s: u32, plan_hash: &str) -> bool {
    let path = out.join("train").join(shard_name(s)).join("_SUCCESS");
    let Some(marker) = fs_err::read_to_string(&path).ok().and_then(|t| serde_json::from_str::<ShardMarker>(&t).ok()) else { return false };
    if marker.plan != plan_hash {
        return false;
    }
    let listed = shard_files(s).iter().all(|f| marker.files.contains_key(f));
    let intact = listed && files_intact(out, &marker.files);
    if !intact {
        tracing::warn!("output shard {s}: a file no longer matches its `_SUCCESS`; redoing the shard");
    }
    intact
}

/// The `_SUCCESS` of an output shard: the plan it was made from and the sha256 and size of
/// each of its files, written (fsynced) after them.
#[derive(Debug, Serialize, Deserialize)]
struct ShardMarker {
    plan: String,
    files: BTreeMap<String, FileEntry>,
}

/// The sha256 and size of each file `rels` (relative to `base`), hashed in parallel.
fn hash_files(base: &Path, rels: &[String]) -> anyhow::Result<BTreeMap<String, FileEntry>> {
    rels.par_iter()
        .map(|rel| {
            let path = base.join(rel);
            let sha256 = stages::hashing::sha256_file(&path)?;
            Ok((rel.clone(), FileEntry { sha256, bytes: fs_err::metadata(&path)?.len() }))
        })
        .collect()
}

/// Does every file of `files` (relative to `base`) still have its recorded size and sha256?
fn files_intact(base: &Path, files: &BTreeMap<String, FileEntry>) -> bool {
    files.par_iter().all(|(rel, e)| crate::artifacts::file_intact(&base.join(rel), &e.sha256, e.bytes))
}

/// Append one JSON line to `w`.
fn json_line<T: Serialize>(w: &mut impl Write, value: &T) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *w, value)?;
    w.write_all(b"\n")?;
    Ok(())
}

fn release_index(f: &CorpusManifestFile) -> anyhow::Result<ReleaseIndex> {
    let mut docs = Vec::new();
    if let Some(dir) = &f.releases_dir {
        for release in super::audit::find_releases(dir)? {
            docs.extend(super::audit::release_docs(&release)?);
        }
    }
    Ok(ReleaseIndex::build(f.decontaminate.ngram, docs))
}

/// The local file (or BEIR folder) of every source, in manifest order: `url` sources are
/// downloaded into `cache` with the fetch stage, and a `sha256` pin is checked either way.
fn fetch_sources(f: &CorpusManifestFile, cache: &Path, printer: &Printer) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::with_capacity(f.sources.len());
    let mut runtime = None;
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
        let safe: String = s.name.chars().map(|c| if c.is_ascii_alphanumeric() || "_-".contains(c) { c } else { '_' }).collect();
        let tag = &stages::hashing::sha256_hex(s.name.as_bytes())[..8];
        let name = format!("{safe}-{tag}{}", if what.ends_with(".gz") { ".gz" } else { "" });
        let source = Source { name, location, sha256: s.sha256.clone() };
        let runtime = match &mut runtime {
            Some(r) => r,
            None => runtime.insert(tokio::runtime::Builder::new_current_thread().enable_all().build()?),
        };
        let bar = printer.progress(None, &s.name, true);
        let fetched = runtime
            .block_on(fetch_source(&FetchConfig::default(), &source, cache, &bar))
            .with_context(|| format!("fetching source `{}` (`{what}`)", s.name))?;
        bar.finish_and_clear();
        if fetched.downloaded > 0 {
            printer.status(format!("downloaded source `{}`: {} bytes", s.name, fetched.downloaded));
        }
        files.push(fetched.path);
    }
    Ok(files)
}

/// Spool files hold length-prefixed records (`seq` as a u64, then `id`, `text`, `code`, each a
/// u32 length and UTF-8 bytes) after this magic.
const SPOOL_MAGIC: &[u8; 8] = b"CRBSPL01";

fn spool_path(dir: &Path, s: u32) -> PathBuf {
    dir.join(format!("{}.bin", shard_name(s)))
}

/// Append one record to `buf`.
fn encode(buf: &mut Vec<u8>, seq: u64, id: &str, text: &str, code: &str) {
    buf.extend_from_slice(&seq.to_le_bytes());
    for field in [id, text, code] {
        buf.extend_from_slice(&(field.len() as u32).to_le_bytes());
        buf.extend_from_slice(field.as_bytes());
    }
}

/// What a scan keeps of the rows of its slice: their sketches, and their records in the spool
/// file of their output shard (only the shards in `todo` when given).
struct Scan {
    slice: ShardSpec,
    out_shards: u32,
    dedup: corpus::CorpusDedupConfig,
    sketches: Sketches,
    /// Input rows seen so far: the `seq` of the next one.
    rows: u64,
    /// Local duplicate ids and exact keys, to skip storing near sketches of rows that are
    /// duplicates anyway (an id falls in one slice, so a duplicate here is one globally).
    ids: HashMap<u64, u32, Prehashed>,
    collided_ids: HashSet<String>,
    exact: HashSet<u128, Prehashed>,
    writers: Vec<Option<(PathBuf, BufWriter<fs_err::File>)>>,
    bar: indicatif::ProgressBar,
}

/// A block of input rows, processed in parallel with the other blocks of a batch.
enum Block {
    /// Whole JSONL lines; the first is line `first_line + 1` of `path`.
    Jsonl { source: usize, first_line: usize, bytes: Vec<u8> },
    /// Rows already read (Parquet, BEIR): `(id, text, code)`.
    Rows { rows: Vec<(String, String, String)> },
}

/// The rows of one block that fall in the slice.
struct BlockOut {
    sketches: Sketches,
    spool: Vec<Vec<u8>>,
}

impl Scan {
    /// Sketch and spool every row of one block whose first row is input row `seq`.
    fn process(&self, sources: &[(&SourceSpec, &Path)], block: &Block, seq: u64) -> anyhow::Result<BlockOut> {
        // Each shard's buffer sized for its share of the block (plus slack), so that it rarely grows.
        let bytes = match block {
            Block::Jsonl { bytes, .. } => bytes.len(),
            Block::Rows { rows } => rows.iter().map(|(i, t, c)| i.len() + t.len() + c.len() + 20).sum(),
        };
        let share = (bytes / self.slice.count as usize / self.out_shards as usize) * 9 / 8 + 1024;
        let spool = (0..self.out_shards).map(|s| if self.writers[s as usize].is_some() { Vec::with_capacity(share) } else { Vec::new() }).collect();
        let mut out = BlockOut { sketches: Sketches::new(&self.dedup), spool };
        let mut sketcher = Sketcher::new(&self.dedup);
        let mut id_buf = String::new();
        let mut take = |seq: u64, id: &str, text: &str, code: &str| {
            let h = corpus::id_hash(id);
            if corpus::shard_of_id(h, self.slice.count) == self.slice.index {
                sketcher.sketch(seq, id, text, code, &mut out.sketches);
                let shard = corpus::shard_of_id(h, self.out_shards) as usize;
                if self.writers[shard].is_some() {
                    encode(&mut out.spool[shard], seq, id, text, code);
                }
            }
        };
        match block {
            Block::Rows { rows } => {
                for (i, (id, text, code)) in rows.iter().enumerate() {
                    take(seq + i as u64, id, text, code);
                }
            }
            Block::Jsonl { source, first_line, bytes } => {
                let (s, path) = sources[*source];
                let names = Wanted { text: &s.text_field, code: &s.code_field, id: s.id_field.as_deref() };
                let mut row = 0u64;
                for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
                    let number = first_line + i + 1;
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    if is_blank(line) {
                        continue;
                    }
                    let mut de = serde_json::Deserializer::from_slice(line);
                    let (text, code, id) = match serde::de::DeserializeSeed::deserialize(names, &mut de).and_then(|r| de.end().map(|()| r)) {
                        Ok(WantedRow { text: Some(text), code: Some(code), id }) if id.is_some() || names.id.is_none() => (text, code, id),
                        // Anything unusual: the generic path reports it with the file, line and field.
                        _ => slow_row(s, path, number, line)?,
                    };
                    id_buf.clear();
                    id_buf.push_str(&s.name);
                    id_buf.push(':');
                    match &id {
                        Some(id) => id_buf.push_str(id),
                        None => id_buf.push_str(&(number - 1).to_string()),
                    }
                    take(seq + row, &id_buf, &text, &code);
                    row += 1;
                }
            }
        }
        Ok(out)
    }

    /// Take a processed block (in input order): keep its sketches, spool its records.
    fn append(&mut self, out: BlockOut, rows: u64) -> anyhow::Result<()> {
        for r in 0..out.sketches.len() {
            let duplicate = self.local_duplicate(&out.sketches, r);
            self.sketches.push_from(&out.sketches, r, !duplicate);
        }
        for (w, bytes) in self.writers.iter_mut().zip(&out.spool) {
            if let Some((path, w)) = w {
                w.write_all(bytes).with_context(|| format!("writing `{}`", path.display()))?;
            }
        }
        self.rows += rows;
        Ok(())
    }

    /// Whether row `r` of `s` repeats the id or the exact key of an earlier row of this slice.
    fn local_duplicate(&mut self, s: &Sketches, r: usize) -> bool {
        let (hash, id) = (s.id_hash(r), s.id(r));
        match self.ids.entry(hash) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(self.sketches.len() as u32);
            }
            std::collections::hash_map::Entry::Occupied(e) => {
                if self.sketches.id(*e.get() as usize) == id || !self.collided_ids.insert(id.to_owned()) {
                    return true;
                }
            }
        }
        !self.exact.insert(s.exact(r))
    }
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// Blocks waiting to be processed together, and the scan they feed.
struct Batch<'a> {
    scan: Scan,
    sources: Vec<(&'a SourceSpec, &'a Path)>,
    blocks: Vec<(Block, u64, u64)>,
    size: usize,
}

impl Batch<'_> {
    /// Queue a block of `rows` input rows; process the batch when it is full.
    fn push(&mut self, block: Block, rows: u64) -> anyhow::Result<()> {
        let seq = self.scan.rows + self.blocks.iter().map(|b| b.2).sum::<u64>();
        self.blocks.push((block, seq, rows));
        if self.blocks.len() >= self.size { self.flush() } else { Ok(()) }
    }

    /// Process the queued blocks in parallel, then take their results in input order.
    fn flush(&mut self) -> anyhow::Result<()> {
        let blocks = std::mem::take(&mut self.blocks);
        let scan = &self.scan;
        let sources = &self.sources;
        let outs: Vec<anyhow::Result<BlockOut>> = blocks.par_iter().map(|(b, seq, _)| scan.process(sources, b, *seq)).collect();
        for ((block, _, rows), out) in blocks.into_iter().zip(outs) {
            self.scan.append(out?, rows)?;
            if let Block::Jsonl { bytes, .. } = block {
                self.scan.bar.inc(bytes.len() as u64);
            }
        }
        Ok(())
    }
}

/// Rows per [`Block::Rows`].
const ROWS_PER_BLOCK: usize = 8192;

/// Stream every source: the rows of `slice` are sketched and spooled into `spool_dir` (one
/// file per output shard; only those of `todo` when given). Returns the sketches.
fn scan_sources(f: &CorpusManifestFile, files: &[PathBuf], slice: ShardSpec, spool_dir: &Path, todo: Option<&[u32]>, printer: &Printer) -> anyhow::Result<Sketches> {
    fs_err::create_dir_all(spool_dir)?;
    let writers = (0..f.output.shards)
        .map(|s| {
            if todo.is_some_and(|t| !t.contains(&s)) {
                return Ok(None);
            }
            let path = spool_path(spool_dir, s);
            let mut w = BufWriter::with_capacity(1 << 16, fs_err::File::create(&path)?);
            w.write_all(SPOOL_MAGIC)?;
            Ok(Some((path, w)))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let total: u64 = f.sources.iter().zip(files).filter(|(s, _)| s.format == SourceFormat::Jsonl).filter_map(|(_, p)| fs_err::metadata(p).ok()).map(|m| m.len()).sum();
    let scan = Scan {
        slice,
        out_shards: f.output.shards,
        dedup: f.dedup.clone(),
        sketches: Sketches::new(&f.dedup),
        rows: 0,
        ids: HashMap::default(),
        collided_ids: HashSet::new(),
        exact: HashSet::default(),
        writers,
        bar: printer.progress(Some(total), "reading", true),
    };
    let mut batch = Batch { scan, sources: f.sources.iter().zip(files).map(|(s, p)| (s, p.as_path())).collect(), blocks: Vec::new(), size: 2 * rayon::current_num_threads() };
    for (i, (source, path)) in f.sources.iter().zip(files).enumerate() {
        read_source(i, source, path, &mut batch).with_context(|| format!("reading source `{}` (`{}`)", source.name, path.display()))?;
    }
    batch.flush()?;
    let Batch { mut scan, .. } = batch;
    scan.bar.finish_and_clear();
    for (path, w) in scan.writers.drain(..).flatten() {
        w.into_inner().map_err(|e| e.into_error()).with_context(|| format!("writing `{}`", path.display()))?;
    }
    scan.sketches.set_input_rows(scan.rows);
    Ok(scan.sketches)
}

/// Queue the rows of one source (`source`-th of the manifest, read from `path`, its local
/// file or folder).
fn read_source(source: usize, s: &SourceSpec, path: &Path, batch: &mut Batch<'_>) -> anyhow::Result<()> {
    match s.format {
        SourceFormat::Jsonl => {
            let file = fs_err::File::open(path)?;
            let reader: Box<dyn Read> =
                if path.extension().is_some_and(|e| e == "gz") { Box::new(flate2::read::MultiGzDecoder::new(file)) } else { Box::new(file) };
            read_jsonl(source, path, reader, batch)
        }
        SourceFormat::Parquet => {
            let mut cols = vec![s.text_field.as_str(), s.code_field.as_str()];
            if let Some(id) = &s.id_field {
                cols.push(id);
            }
            let mut rows = Vec::with_capacity(ROWS_PER_BLOCK);
            let mut failed = None;
            stages::tables::corpus::for_each_row(path, &cols, |row, mut v| {
                if failed.is_some() {
                    return;
                }
                let id = if v.len() > 2 { v.pop().unwrap_or_default() } else { row.to_string() };
                let code = v.pop().unwrap_or_default();
                let text = v.pop().unwrap_or_default();
                rows.push((format!("{}:{id}", s.name), text, code));
                if rows.len() == ROWS_PER_BLOCK {
                    let n = rows.len() as u64;
                    if let Err(e) = batch.push(Block::Rows { rows: std::mem::replace(&mut rows, Vec::with_capacity(ROWS_PER_BLOCK)) }, n) {
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
/// (non-blank lines) each holds, so that every row knows its position in the input.
fn read_jsonl(source: usize, path: &Path, mut reader: Box<dyn Read>, batch: &mut Batch<'_>) -> anyhow::Result<()> {
    let mut carry: Vec<u8> = Vec::new();
    let mut lines_before = 0usize;
    loop {
        let mut buf = std::mem::take(&mut carry);
        let mut eof = false;
        // Read until the block holds a whole line past BLOCK bytes, or the file ends.
        loop {
            let want = BLOCK.max(buf.len() + 1) - buf.len();
            let n = (&mut reader).take(want as u64).read_to_end(&mut buf).with_context(|| format!("reading `{}`", path.display()))?;
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
            let (mut lines, mut rows, mut start) = (0usize, 0u64, 0usize);
            for end in memchr::memchr_iter(b'\n', &buf).chain((buf.last() != Some(&b'\n')).then_some(buf.len())) {
                lines += 1;
                rows += u64::from(!is_blank(&buf[start..end]));
                start = end + 1;
            }
            batch.push(Block::Jsonl { source, first_line: lines_before, bytes: buf }, rows)?;
            lines_before += lines;
        }
        if eof {
            return Ok(());
        }
    }
}

/// A string field of a JSON object (numbers are turned into text, for ids).
fn field(obj: &serde_json::Map<String, serde_json::Value>, name: &str, path: &Path, line: usize) -> anyhow::Result<String> {
    match obj.get(name) {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(serde_json::Value::Number(n)) => Ok(n.to_string()),
        Some(other) => bail!("`{}`:{line}: field `{name}`: expected a string, found `{other}`", path.display()),
        None => bail!("`{}`:{line}: field `{name}` is missing", path.display()),
    }
}

/// A row that the fast parser did not take: parse it as a JSON object and read its fields
/// with the messages of [`field`].
fn slow_row(s: &SourceSpec, path: &Path, line: usize, bytes: &[u8]) -> anyhow::Result<(String, String, Option<String>)> {
    let obj: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(bytes).with_context(|| format!("`{}`:{line}: not a JSON object", path.display()))?;
    let id = s.id_field.as_ref().map(|name| field(&obj, name, path, line)).transpose()?;
    Ok((field(&obj, &s.text_field, path, line)?, field(&obj, &s.code_field, path, line)?, id))
}

/// The names of the fields to keep from a JSONL row; every other field is skipped unparsed.
#[derive(Clone, Copy)]
struct Wanted<'n> {
    text: &'n str,
    code: &'n str,
    id: Option<&'n str>,
}

/// The wanted fields of one row (strings, or integers turned into text).
#[derive(Default)]
struct WantedRow {
    text: Option<String>,
    code: Option<String>,
    id: Option<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Wanted<'_> {
    type Value = WantedRow;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<WantedRow, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Wanted<'_> {
    type Value = WantedRow;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<WantedRow, A::Error> {
        let mut row = WantedRow::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let slots = [(self.text == key, &mut row.text), (self.code == key, &mut row.code), (self.id == Some(&*key), &mut row.id)];
            if !slots.iter().any(|s| s.0) {
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            }
            let Text(value) = map.next_value::<Text>()?;
            for (hit, slot) in slots {
                if hit {
                    *slot = Some(value.clone());
                }
            }
        }
        Ok(row)
    }
}

/// An object key, borrowed from the line when it has no escapes.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A string value, or an integer as text (ids); anything else is left to [`slow_row`].
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Text;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_str<E>(self, v: &str) -> Result<Text, E> {
                Ok(Text(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Text, E> {
                Ok(Text(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
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
        let [q, d, score] = cols[..] else { bail!("`{}`:{}: expected 3 tab-separated columns", qrels_path.display(), i + 1) };
        let score: i64 = score.trim().parse().with_context(|| format!("`{}`:{}: score `{score}`", qrels_path.display(), i + 1))?;
        if score > 0 {
            qrels.push((q.to_owned(), d.to_owned()));
        }
    }
    let wanted_q: HashSet<&str> = qrels.iter().map(|(q, _)| q.as_str()).collect();
    let wanted_d: HashSet<&str> = qrels.iter().map(|(_, d)| d.as_str()).collect();
    let mut queries: HashMap<String, String> = HashMap::new();
    let qpath = dir.join("queries.jsonl");
    for_each_json(&qpath, |line, obj| {
        let id = field(&obj, "_id", &qpath, line)?;
        if wanted_q.contains(id.as_str()) {
            queries.insert(id, field(&obj, "text", &qpath, line)?);
        }
        Ok(())
    })?;
    let mut docs: HashMap<String, String> = HashMap::new();
    let cpath = dir.join("corpus.jsonl");
    for_each_json(&cpath, |line, obj| {
        let id = field(&obj, "_id", &cpath, line)?;
        if wanted_d.contains(id.as_str()) {
            docs.insert(id, field(&obj, "text", &cpath, line)?);
        }
        Ok(())
    })?;
    let mut rows = Vec::with_capacity(qrels.len());
    for (q, d) in &qrels {
        let (Some(text), Some(code)) = (queries.get(q), docs.get(d)) else {
            bail!("`{}`: qrel `{q}` → `{d}` names a query or document that does not exist", qrels_path.display());
        };
        rows.push((format!("{}:{q}:{d}", s.name), text.clone(), code.clone()));
    }
    Ok(rows)
}

/// An example of a dropped pair, for the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Example {
    /// The pair.
    #[serde(flatten)]
    pub dropped: Dropped,
    /// The start of its text.
    pub text: String,
}

/// What a shard (or the whole run) did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CorpusReport {
    /// Counts.
    pub stats: CorpusStats,
    /// Examples per drop reason.
    pub examples: BTreeMap<String, Vec<Example>>,
}

fn snippet(text: &str) -> String {
    let s: String = text.chars().take(120).collect();
    if s.len() < text.len() { format!("{s}…") } else { s }
}

/// The embeddings endpoint of `[embed]` and a runtime to call it from the shard threads.
struct Embedder {
    client: stages::services::embed::EmbedClient,
    model: String,
    runtime: tokio::runtime::Runtime,
}

impl Embedder {
    fn new(f: &CorpusManifestFile) -> anyhow::Result<Option<Embedder>> {
        let Some(e) = &f.embed else { return Ok(None) };
        let mut cfg = stages::services::embed::EmbedConfig::new(e.base_url.clone());
        cfg.api_key = std::env::var(&e.api_key_env).ok().filter(|k| !k.is_empty());
        cfg.cache_dir = e.cache_dir.clone();
        let client = stages::services::embed::EmbedClient::new(cfg).context("embeddings client")?;
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        Ok(Some(Embedder { client, model: e.model.clone(), runtime }))
    }

    /// Cosine similarities of the pairs' texts to their codes.
    fn similarity(&self, pairs: &[Pair]) -> anyhow::Result<SimMatrix> {
        let texts: Vec<String> = pairs.iter().map(|p| p.text.clone()).collect();
        let codes: Vec<String> = pairs.iter().map(|p| p.code.clone()).collect();
        let t = self.runtime.block_on(self.client.embed(&self.model, &texts)).with_context(|| format!("embedding {} texts with `{}`", texts.len(), self.model))?;
        let c = self.runtime.block_on(self.client.embed(&self.model, &codes)).with_context(|| format!("embedding {} codes with `{}`", codes.len(), self.model))?;
        Ok(SimMatrix::from_embeddings(&t, &c))
    }
}

fn similarity(embedder: Option<&Embedder>, pairs: &[Pair]) -> anyhow::Result<SimMatrix> {
    match embedder {
        Some(e) if !pairs.is_empty() => e.similarity(pairs),
        _ => Ok(SimMatrix::lexical(pairs)),
    }
}

/// Reads a spool file back, one record at a time, into a reused [`Pair`].
struct SpoolReader {
    path: PathBuf,
    reader: BufReader<fs_err::File>,
}

impl SpoolReader {
    fn open(path: &Path) -> anyhow::Result<SpoolReader> {
        let mut reader = BufReader::with_capacity(1 << 16, fs_err::File::open(path)?);
        let mut magic = [0u8; 8];
        reader.read_exact(&mut magic).with_context(|| format!("reading `{}`", path.display()))?;
        if &magic != SPOOL_MAGIC {
            bail!("`{}` is not a coreb spool file (or of another version)", path.display());
        }
        Ok(SpoolReader { path: path.to_owned(), reader })
    }

    /// The next record into `seq` and `pair`; `false` at the end.
    fn next_into(&mut self, seq: &mut u64, pair: &mut Pair) -> anyhow::Result<bool> {
        let mut head = [0u8; 8];
        match self.reader.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(e).with_context(|| format!("reading `{}`", self.path.display())),
        }
        *seq = u64::from_le_bytes(head);
        let mut len = [0u8; 4];
        for field in [&mut pair.id, &mut pair.text, &mut pair.code] {
            self.reader.read_exact(&mut len).with_context(|| format!("reading `{}`", self.path.display()))?;
            let mut bytes = std::mem::take(field).into_bytes();
            bytes.clear();
            bytes.resize(u32::from_le_bytes(len) as usize, 0);
            self.reader.read_exact(&mut bytes).with_context(|| format!("reading `{}`", self.path.display()))?;
            *field = String::from_utf8(bytes).with_context(|| format!("`{}`: a record is not UTF-8", self.path.display()))?;
        }
        Ok(true)
    }
}

/// The records of several spool files (one per shard process) in input order.
struct MergedSpool {
    readers: Vec<SpoolReader>,
    heads: Vec<(u64, Pair)>,
    /// `(seq, reader)` of each reader's next record, smallest first.
    heap: BinaryHeap<std::cmp::Reverse<(u64, usize)>>,
}

impl MergedSpool {
    fn open(paths: &[PathBuf]) -> anyhow::Result<MergedSpool> {
        let mut m = MergedSpool { readers: Vec::new(), heads: Vec::new(), heap: BinaryHeap::new() };
        for p in paths {
            let mut r = SpoolReader::open(p)?;
            let mut head = (0, Pair { id: String::new(), text: String::new(), code: String::new() });
            if r.next_into(&mut head.0, &mut head.1)? {
                m.heap.push(std::cmp::Reverse((head.0, m.readers.len())));
            }
            m.readers.push(r);
            m.heads.push(head);
        }
        Ok(m)
    }

    /// The next record in input order into `seq` and `pair`; `false` at the end.
    fn next_into(&mut self, seq: &mut u64, pair: &mut Pair) -> anyhow::Result<bool> {
        let Some(std::cmp::Reverse((s, i))) = self.heap.pop() else { return Ok(false) };
        *seq = s;
        std::mem::swap(pair, &mut self.heads[i].1);
        let (next, head) = &mut self.heads[i];
        if self.readers[i].next_into(next, head)? {
            if *next <= s {
                bail!("`{}`: records out of order", self.readers[i].path.display());
            }
            self.heap.push(std::cmp::Reverse((*next, i)));
        }
        Ok(true)
    }
}

/// Records checked together (in parallel) within a shard.
const CURATE_BATCH: usize = 2048;

#[allow(clippy::too_many_arguments)]
fn process_shard(f: &CorpusManifestFile, index: &ReleaseIndex, embedder: Option<&Embedder>, dups: &Duplicates, out: &Path, spools: &[PathBuf], s: u32, plan_hash: &str) -> anyhow::Result<()> {
    let name = shard_name(s);
    // A stale marker must not survive a rewrite of the shard.
    let marker = out.join("train").join(&name).join("_SUCCESS");
    if marker.exists() {
        fs_err::remove_file(&marker)?;
    }
    let mut log = DropLog { report: CorpusReport::default(), file: AtomicFile::create(&out.join("reports").join(format!("{name}.dropped.jsonl")))? };
    let mut writer = ShardWriter::create(out, &name)?;
    // Alignment and negatives compare every kept pair with every other: only they hold the
    // shard's kept pairs; otherwise each pair is written as soon as it passes.
    let hold = f.align.enabled || f.negatives.hard + f.negatives.easy > 0;
    let mut held = Vec::new();
    let mut reader = MergedSpool::open(spools)?;
    let mut batch: Vec<(u64, Pair)> = Vec::with_capacity(CURATE_BATCH);
    loop {
        // Fill the batch, reusing its strings.
        let mut n = 0;
        while n < CURATE_BATCH {
            if n == batch.len() {
                batch.push((0, Pair { id: String::new(), text: String::new(), code: String::new() }));
            }
            let (seq, pair) = &mut batch[n];
            if !reader.next_into(seq, pair)? {
                break;
            }
            n += 1;
        }
        if n == 0 {
            break;
        }
        // Dedup verdicts, then the language filter and decontamination (per row: in parallel).
        let reasons: Vec<Option<corpus::DropReason>> = batch[..n]
            .par_iter()
            .map(|(seq, pair)| {
                dups.reason(*seq, &pair.id).or_else(|| corpus::check_text(&f.language, &pair.text).err()).or_else(|| index.check(&f.decontaminate, pair))
            })
            .collect();
        for ((_, pair), reason) in batch[..n].iter().zip(reasons) {
            log.report.stats.rows_in += 1;
            match reason {
                Some(reason) => log.record(Dropped { id: pair.id.clone(), reason }, &pair.text)?,
                None if hold => held.push(pair.clone()),
                None => writer.push(&TrainingRecordRef { id: &pair.id, query: &pair.text, pos: &pair.code, hard_neg: &[], easy_neg: &[] })?,
            }
        }
        if n < CURATE_BATCH {
            break;
        }
    }
    if hold {
        let texts: HashMap<String, String> = held.iter().map(|p| (p.id.clone(), p.text.clone())).collect();
        // The similarity matrix is quadratic in the shard: build it only when a step needs it.
        let empty = SimMatrix::from_embeddings(&[], &[]);
        let sim = if f.align.enabled { similarity(embedder, &held)? } else { empty.clone() };
        let kept = log.record_all(corpus::align(&f.align, held, &sim), &texts)?;
        let sim = if f.negatives.hard + f.negatives.easy > 0 { similarity(embedder, &kept)? } else { empty };
        for r in corpus::mine_negatives(&f.negatives, &kept, &sim) {
            writer.push(&TrainingRecordRef::from(&r))?;
        }
    }
    log.report.stats.rows_out = writer.finish()?;
    log.file.commit()?;
    durable::write(&out.join("reports").join(format!("{name}.json")), &serde_json::to_vec_pretty(&log.report)?)?;
    // Every file is fsynced by now (durable writers); the marker that vouches for them last.
    let files = hash_files(out, &shard_files(s))?;
    durable::write(&marker, &serde_json::to_vec_pretty(&ShardMarker { plan: plan_hash.to_owned(), files })?)?;
    Ok(())
}

/// The outputs of one shard, written as records come.
struct ShardWriter {
    train: stages::tables::corpus::TrainingWriter,
    rerank: stages::tables::corpus::RerankWriter,
    train_jsonl: AtomicFile,
    rerank_jsonl: AtomicFile,
    records: u64,
}

impl ShardWriter {
    fn create(out: &Path, name: &str) -> anyhow::Result<ShardWriter> {
        let train_dir = out.join("train").join(name);
        let rerank_dir = out.join("rerank").join(name);
        fs_err::create_dir_all(&train_dir)?;
        fs_err::create_dir_all(&rerank_dir)?;
        Ok(ShardWriter {
            train: stages::tables::corpus::TrainingWriter::create(&train_dir.join("part.parquet"))?,
            rerank: stages::tables::corpus::RerankWriter::create(&rerank_dir.join("part.parquet"))?,
            train_jsonl: AtomicFile::create(&out.join("jsonl/train").join(name).join("part.jsonl"))?,
            rerank_jsonl: AtomicFile::create(&out.join("jsonl/rerank").join(name).join("part.jsonl"))?,
            records: 0,
        })
    }

    /// One training record and its reranker records (the positive, then each negative).
    fn push(&mut self, r: &TrainingRecordRef<'_>) -> anyhow::Result<()> {
        self.train.push(r)?;
        json_line(&mut self.train_jsonl, r)?;
        for (doc, label) in std::iter::once((r.pos, 1u8)).chain(r.hard_neg.iter().chain(r.easy_neg).map(|d| (d.as_str(), 0))) {
            self.rerank.push(r.query, doc, label)?;
            json_line(&mut self.rerank_jsonl, &RerankRef { query: r.query, doc, label })?;
        }
        self.records += 1;
        Ok(())
    }

    fn finish(self) -> anyhow::Result<u64> {
        self.train.finish()?;
        self.rerank.finish()?;
        self.train_jsonl.commit()?;
        self.rerank_jsonl.commit()?;
        Ok(self.records)
    }
}

/// A reranker record by reference; serialises like [`corpus::RerankRecord`].
#[derive(Serialize)]
struct RerankRef<'a> {
    query: &'a str,
    doc: &'a str,
    label: u8,
}

/// Counts, examples and the `dropped.jsonl` of one shard.
struct DropLog {
    report: CorpusReport,
    file: AtomicFile,
}

impl DropLog {
    fn record(&mut self, d: Dropped, text: &str) -> anyhow::Result<()> {
        self.report.stats.record(&d);
        json_line(&mut self.file, &d)?;
        let ex = self.report.examples.entry(d.reason.name().to_owned()).or_default();
        if ex.len() < EXAMPLES {
            ex.push(Example { dropped: d, text: snippet(text) });
        }
        Ok(())
    }

    fn record_all(&mut self, step: corpus::StepOutput, texts: &HashMap<String, String>) -> anyhow::Result<Vec<Pair>> {
        for d in step.dropped {
            let text = texts.get(&d.id).cloned().unwrap_or_default();
            self.record(d, &text)?;
        }
        Ok(step.kept)
    }
}

/// Sum the shard reports into `report.json`, `report.md` and `dropped.jsonl` (the shards'
/// dropped pairs, concatenated in shard order without being held in memory).
fn merge_reports(out: &Path, shards: u32) -> anyhow::Result<CorpusReport> {
    let mut merged = CorpusReport::default();
    let mut dropped = AtomicFile::create(&out.join("dropped.jsonl"))?;
    for s in 0..shards {
        let path: PathBuf = out.join("reports").join(format!("{}.json", shard_name(s)));
        let r: CorpusReport = serde_json::from_str(&fs_err::read_to_string(&path)?).with_context(|| format!("`{}`", path.display()))?;
        merged.stats += r.stats;
        for (reason, ex) in r.examples {
            let all = merged.examples.entry(reason).or_default();
            all.extend(ex);
            all.truncate(EXAMPLES);
        }
        let mut part = fs_err::File::open(out.join("reports").join(format!("{}.dropped.jsonl", shard_name(s))))?;
        std::io::copy(&mut part, &mut dropped)?;
    }
    dropped.commit()?;
    durable::write(&out.join("report.json"), &serde_json::to_vec_pretty(&merged)?)?;
    durable::write(&out.join("report.md"), markdown(&merged).as_bytes())?;
    Ok(merged)
}

fn markdown(r: &CorpusReport) -> String {
    let s = &r.stats;
    let mut md = String::from("# Corpus curation report\n\n| step | reason | dropped |\n|---|---|---:|\n");
    for (step, reason, n) in [
        ("dedup", "duplicate_id", s.duplicate_id),
        ("dedup", "exact_duplicate", s.exact_duplicate),
        ("dedup", "near_duplicate", s.near_duplicate),
        ("language", "too_short", s.too_short),
        ("language", "url", s.url),
        ("language", "html", s.html),
        ("language", "language", s.language),
        ("decontaminate", "contaminated", s.contaminated),
        ("align", "misaligned", s.misaligned),
    ] {
        md.push_str(&format!("| {step} | {reason} | {n} |\n"));
    }
    md.push_str(&format!("\nPairs in: {}. Training records out: {}.\n\n## Examples\n", s.rows_in, s.rows_out));
    for (reason, ex) in &r.examples {
        md.push_str(&format!("\n### {reason}\n\n"));
        for e in ex {
            let detail = serde_json::to_string(&e.dropped.reason).unwrap_or_default();
            md.push_str(&format!("- `{}` {}: {}\n", e.dropped.id, detail, e.text.replace('\n', " ")));
        }
    }
    md
}
