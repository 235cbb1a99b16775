//! `coreb corpus <manifest>`: curate text–code training pairs.
//!
//! `http(s)` sources are first downloaded into `<out>/.sources/` by the fetch stage (resumed,
//! retried, checked against their `sha256` pin). Sources are then streamed once into
//! per-shard spool files (shard = hash of the normalised, lower-cased text, so copies that
//! differ only in case or whitespace meet in one shard); JSONL is read in blocks parsed in
//! parallel, each keeping only the three wanted fields, and the spool holds length-prefixed
//! records, not JSON. Each shard then streams its spool row by row through dedup → language →
//! decontaminate (the steps are per-row after the greedy dedup, so this equals running them one
//! after the other) and writes its records batch by batch: memory per shard is the dedup state
//! of the kept rows, not the shard. Only alignment and negatives, whose similarity matrix is
//! quadratic, hold the shard's kept pairs. Shards run in parallel (rayon); the outputs are
//! the same whatever the thread count. The output is Hive-style partitions that Spark, DuckDB
//! and polars read directly:
//!
//! ```text
//! <out>/train/shard=NNN/part.parquet    query, pos, hard_neg[], easy_neg[] (+ id)
//! <out>/rerank/shard=NNN/part.parquet   query, doc, label
//! <out>/jsonl/{train,rerank}/shard=NNN/part.jsonl
//! <out>/reports/shard=NNN.json          stats, examples
//! <out>/reports/shard=NNN.dropped.jsonl every dropped pair, in row order
//! <out>/train/shard=NNN/_SUCCESS        written last; holds the plan hash
//! <out>/report.json, report.md, dropped.jsonl   merged over shards
//! ```
//! A shard whose `_SUCCESS` holds the current plan hash is skipped on a rerun. Similarities
//! come from the `[embed]` endpoint (the shared embeddings client: cache, retries) when the
//! manifest has one, else from the lexical TF-IDF fallback.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use stages::corpus::{self, CorpusStats, Dropped, Pair, ReleaseIndex, SimMatrix};
use stages::fetch::{FetchConfig, Location, Source, fetch_source};
use stages::tables::corpus::TrainingRecordRef;

use crate::cli::CorpusArgs;
use crate::corpus_manifest::{CorpusManifestFile, CorpusPlan, SourceFormat, SourceSpec};
use crate::printer::Printer;
use crate::store::write_atomic;

/// Up to this many examples per drop reason in the report.
const EXAMPLES: usize = 3;

/// Run `coreb corpus`.
pub fn corpus(args: CorpusArgs) -> anyhow::Result<ExitCode> {
    let CorpusArgs { manifest, json } = args;
    let printer = Printer::new(json);
    let plan = CorpusPlan::load(&manifest).with_context(|| format!("loading corpus manifest `{}`", manifest.display()))?;
    let f = &plan.file;
    let out = f.output.dir.clone();
    let plan_hash = stages::hashing::sha256_hex(serde_json::to_string(f)?.as_bytes());
    fs_err::create_dir_all(&out)?;
    let todo: Vec<u32> = (0..f.output.shards).filter(|&s| !shard_done(&out, s, &plan_hash)).collect();
    if todo.is_empty() {
        printer.status(format!("all {} shards complete; nothing to do", f.output.shards));
    } else {
        let index = release_index(f)?;
        printer.status(format!("indexed {} release documents", index.docs().len()));
        let files = fetch_sources(f, &out.join(".sources"), &printer)?;
        let spool = out.join(".spool");
        if spool.exists() {
            fs_err::remove_dir_all(&spool)?;
        }
        fs_err::create_dir_all(&spool)?;
        let rows = spool_sources(f, &files, &spool, &todo)?;
        let embedder = Embedder::new(f)?;
        printer.status(format!("spooled {rows} pairs into {} shards; curating {} shards", f.output.shards, todo.len()));
        todo.par_iter().map(|&s| process_shard(f, &index, embedder.as_ref(), &out, &spool, s, &plan_hash)).collect::<anyhow::Result<Vec<()>>>()?;
        fs_err::remove_dir_all(&spool)?;
    }
    let report = merge_reports(&out, f.output.shards)?;
    if json {
        printer.json_line(&serde_json::to_value(report.stats)?);
    }
    printer.status(format!(
        "{} pairs in, {} records out (exact {}, near {}, language {}, contaminated {}, misaligned {})",
        report.stats.rows_in,
        report.stats.rows_out,
        report.stats.exact_duplicate + report.stats.duplicate_id,
        report.stats.near_duplicate,
        report.stats.too_short + report.stats.url + report.stats.html + report.stats.language,
        report.stats.contaminated,
        report.stats.misaligned
    ));
    Ok(ExitCode::SUCCESS)
}

fn shard_name(s: u32) -> String {
    format!("shard={s:03}")
}

fn shard_done(out: &Path, s: u32, plan_hash: &str) -> bool {
    fs_err::read_to_string(out.join("train").join(shard_name(s)).join("_SUCCESS")).is_ok_and(|h| h.trim() == plan_hash)
}

/// A file written through `<path>.tmp` and renamed into place by [`AtomicFile::finish`].
struct AtomicFile {
    path: PathBuf,
    tmp: PathBuf,
    writer: BufWriter<fs_err::File>,
}

impl AtomicFile {
    fn create(path: &Path) -> anyhow::Result<AtomicFile> {
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir)?;
        }
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let writer = BufWriter::with_capacity(1 << 16, fs_err::File::create(&tmp)?);
        Ok(AtomicFile { path: path.to_owned(), tmp, writer })
    }

    /// Append one JSON line.
    fn json_line<T: Serialize>(&mut self, value: &T) -> anyhow::Result<()> {
        serde_json::to_writer(&mut self.writer, value)?;
        self.writer.write_all(b"\n")?;
        Ok(())
    }

    fn finish(self) -> anyhow::Result<()> {
        self.writer.into_inner().map_err(|e| e.into_error())?;
        fs_err::rename(&self.tmp, &self.path)?;
        Ok(())
    }
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

/// Per-shard spool files of length-prefixed records (`id`, `text`, `code`, each a u32 length
/// and UTF-8 bytes); only the shards still to do get one.
struct Spool {
    shards: u32,
    writers: Vec<Option<(PathBuf, BufWriter<fs_err::File>)>>,
    rows: u64,
}

fn spool_path(spool: &Path, s: u32) -> PathBuf {
    spool.join(format!("{}.bin", shard_name(s)))
}

/// Append one record (the id given in parts, concatenated) to `buf`.
fn encode(buf: &mut Vec<u8>, id: &[&str], text: &str, code: &str) {
    let id_len: usize = id.iter().map(|p| p.len()).sum();
    buf.extend_from_slice(&(id_len as u32).to_le_bytes());
    for p in id {
        buf.extend_from_slice(p.as_bytes());
    }
    for field in [text, code] {
        buf.extend_from_slice(&(field.len() as u32).to_le_bytes());
        buf.extend_from_slice(field.as_bytes());
    }
}

impl Spool {
    fn create(dir: &Path, shards: u32, todo: &[u32]) -> anyhow::Result<Spool> {
        let writers = (0..shards)
            .map(|s| {
                if !todo.contains(&s) {
                    return Ok(None);
                }
                let path = spool_path(dir, s);
                let file = fs_err::File::create(&path)?;
                Ok(Some((path, BufWriter::with_capacity(1 << 16, file))))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Spool { shards, writers, rows: 0 })
    }

    /// Spool one pair.
    fn push(&mut self, id: &[&str], text: &str, code: &str) -> anyhow::Result<()> {
        let s = corpus::shard_of(text, self.shards) as usize;
        self.rows += 1;
        if let Some((_, w)) = &mut self.writers[s] {
            let mut buf = Vec::with_capacity(12 + text.len() + code.len() + 32);
            encode(&mut buf, id, text, code);
            w.write_all(&buf)?;
        }
        Ok(())
    }

    /// Append a block encoded in parallel ([`encode_block`]).
    fn append(&mut self, block: Encoded) -> anyhow::Result<()> {
        self.rows += block.rows;
        for (w, bytes) in self.writers.iter_mut().zip(&block.shards) {
            if let Some((_, w)) = w {
                w.write_all(bytes)?;
            }
        }
        Ok(())
    }

    fn finish(self) -> anyhow::Result<u64> {
        for (path, w) in self.writers.into_iter().flatten() {
            w.into_inner().map_err(|e| e.into_error()).with_context(|| format!("writing `{}`", path.display()))?;
        }
        Ok(self.rows)
    }
}

/// Stream every source into the spool of its shard; returns the number of pairs.
fn spool_sources(f: &CorpusManifestFile, files: &[PathBuf], spool: &Path, todo: &[u32]) -> anyhow::Result<u64> {
    let mut out = Spool::create(spool, f.output.shards, todo)?;
    for (source, path) in f.sources.iter().zip(files) {
        read_source(source, path, &mut out).with_context(|| format!("reading source `{}` (`{}`)", source.name, path.display()))?;
    }
    out.finish()
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

/// Call `emit` with each row of a JSONL file as a JSON object.
pub(crate) fn for_each_json(path: &Path, mut emit: impl FnMut(usize, serde_json::Map<String, serde_json::Value>) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let reader = std::io::BufReader::new(fs_err::File::open(path)?);
    for (i, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("`{}`:{}", path.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&line).with_context(|| format!("`{}`:{}: not a JSON object", path.display(), i + 1))?;
        emit(i + 1, obj)?;
    }
    Ok(())
}

/// Bytes of JSONL per block; a batch of blocks is parsed in parallel.
const BLOCK: usize = 4 << 20;

/// Stream the pairs of one source (read from `path`, its local file or folder) into the spool.
fn read_source(s: &SourceSpec, path: &Path, out: &mut Spool) -> anyhow::Result<()> {
    match s.format {
        SourceFormat::Jsonl => {
            let file = fs_err::File::open(path)?;
            let reader: Box<dyn Read> =
                if path.extension().is_some_and(|e| e == "gz") { Box::new(flate2::read::MultiGzDecoder::new(file)) } else { Box::new(file) };
            read_jsonl(s, path, reader, out)
        }
        SourceFormat::Parquet => {
            let mut cols = vec![s.text_field.as_str(), s.code_field.as_str()];
            if let Some(id) = &s.id_field {
                cols.push(id);
            }
            let mut failed = None;
            stages::tables::corpus::for_each_row(path, &cols, |row, v| {
                if failed.is_some() {
                    return;
                }
                let row = row.to_string();
                let id = v.get(2).unwrap_or(&row);
                if let Err(e) = out.push(&[&s.name, ":", id], &v[0], &v[1]) {
                    failed = Some(e);
                }
            })?;
            failed.map_or(Ok(()), Err)
        }
        SourceFormat::Beir => read_beir(s, path, out),
    }
}

/// Read JSONL in blocks of whole lines; each batch of blocks is parsed and encoded in
/// parallel, then appended in block order, so the spool is the same whatever the threads.
fn read_jsonl(s: &SourceSpec, path: &Path, mut reader: Box<dyn Read>, out: &mut Spool) -> anyhow::Result<()> {
    let batch = 2 * rayon::current_num_threads();
    let mut carry: Vec<u8> = Vec::new();
    let mut lines_before = 0usize;
    let mut eof = false;
    while !eof {
        let mut blocks: Vec<(usize, Vec<u8>)> = Vec::with_capacity(batch);
        while blocks.len() < batch && !eof {
            let mut buf = std::mem::take(&mut carry);
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
            if buf.is_empty() {
                continue;
            }
            let lines = memchr::memchr_iter(b'\n', &buf).count() + usize::from(buf.last() != Some(&b'\n'));
            blocks.push((lines_before, buf));
            lines_before += lines;
        }
        let encoded: Vec<anyhow::Result<Encoded>> = blocks.par_iter().map(|(first, buf)| encode_block(s, path, *first, buf, out.shards)).collect();
        for e in encoded {
            out.append(e?)?;
        }
    }
    Ok(())
}

/// The records of one block, per shard.
struct Encoded {
    shards: Vec<Vec<u8>>,
    rows: u64,
}

/// Parse the lines of a block (the first is line `lines_before + 1` of the file) and encode
/// each pair into the buffer of its shard.
fn encode_block(s: &SourceSpec, path: &Path, lines_before: usize, block: &[u8], shards: u32) -> anyhow::Result<Encoded> {
    let mut out = Encoded { shards: vec![Vec::new(); shards as usize], rows: 0 };
    let names = Wanted { text: &s.text_field, code: &s.code_field, id: s.id_field.as_deref() };
    for (i, line) in block.split(|&b| b == b'\n').enumerate() {
        let number = lines_before + i + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let mut de = serde_json::Deserializer::from_slice(line);
        let row = match serde::de::DeserializeSeed::deserialize(names, &mut de).and_then(|r| de.end().map(|()| r)) {
            Ok(WantedRow { text: Some(text), code: Some(code), id }) if id.is_some() || names.id.is_none() => (text, code, id),
            // Anything unusual: the generic path reports it with the file, line and field.
            _ => slow_row(s, path, number, line)?,
        };
        let (text, code, id) = row;
        let number_id;
        let id = match &id {
            Some(id) => id.as_str(),
            None => {
                number_id = (number - 1).to_string();
                &number_id
            }
        };
        let shard = corpus::shard_of(&text, shards) as usize;
        encode(&mut out.shards[shard], &[&s.name, ":", id], &text, &code);
        out.rows += 1;
    }
    Ok(out)
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

/// A BEIR folder: one pair per positive qrel (`<name>:<query id>:<doc id>`), in qrels order.
fn read_beir(s: &SourceSpec, dir: &Path, out: &mut Spool) -> anyhow::Result<()> {
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
    for (q, d) in &qrels {
        let (Some(text), Some(code)) = (queries.get(q), docs.get(d)) else {
            bail!("`{}`: qrel `{q}` → `{d}` names a query or document that does not exist", qrels_path.display());
        };
        out.push(&[&s.name, ":", q, ":", d], text, code)?;
    }
    Ok(())
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

/// Reads a shard's spool back, one record at a time, into a reused [`Pair`].
struct SpoolReader {
    path: PathBuf,
    reader: BufReader<fs_err::File>,
}

impl SpoolReader {
    fn open(path: &Path) -> anyhow::Result<SpoolReader> {
        Ok(SpoolReader { path: path.to_owned(), reader: BufReader::with_capacity(1 << 16, fs_err::File::open(path)?) })
    }

    /// The next record into `pair`; `false` at the end.
    fn next_into(&mut self, pair: &mut Pair) -> anyhow::Result<bool> {
        let mut len = [0u8; 4];
        match self.reader.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(e).with_context(|| format!("reading `{}`", self.path.display())),
        }
        for (i, field) in [&mut pair.id, &mut pair.text, &mut pair.code].into_iter().enumerate() {
            if i > 0 {
                self.reader.read_exact(&mut len).with_context(|| format!("reading `{}`", self.path.display()))?;
            }
            let mut bytes = std::mem::take(field).into_bytes();
            bytes.clear();
            bytes.resize(u32::from_le_bytes(len) as usize, 0);
            self.reader.read_exact(&mut bytes).with_context(|| format!("reading `{}`", self.path.display()))?;
            *field = String::from_utf8(bytes).with_context(|| format!("`{}`: a record is not UTF-8", self.path.display()))?;
        }
        Ok(true)
    }
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
        self.train_jsonl.json_line(r)?;
        for (doc, label) in std::iter::once((r.pos, 1u8)).chain(r.hard_neg.iter().chain(r.easy_neg).map(|d| (d.as_str(), 0))) {
            self.rerank.push(r.query, doc, label)?;
            self.rerank_jsonl.json_line(&RerankRef { query: r.query, doc, label })?;
        }
        self.records += 1;
        Ok(())
    }

    fn finish(self) -> anyhow::Result<u64> {
        self.train.finish()?;
        self.rerank.finish()?;
        self.train_jsonl.finish()?;
        self.rerank_jsonl.finish()?;
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
        self.file.json_line(&d)?;
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

#[allow(clippy::too_many_arguments)]
fn process_shard(f: &CorpusManifestFile, index: &ReleaseIndex, embedder: Option<&Embedder>, out: &Path, spool: &Path, s: u32, plan_hash: &str) -> anyhow::Result<()> {
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
    let mut dedup = corpus::Deduper::new(&f.dedup);
    let mut reader = SpoolReader::open(&spool_path(spool, s))?;
    let mut pair = Pair { id: String::new(), text: String::new(), code: String::new() };
    while reader.next_into(&mut pair)? {
        log.report.stats.rows_in += 1;
        let reason = dedup
            .check(&pair.id, &pair.text, &pair.code)
            .or_else(|| corpus::check_text(&f.language, &pair.text).err())
            .or_else(|| index.check(&f.decontaminate, &pair));
        match reason {
            Some(reason) => log.record(Dropped { id: pair.id.clone(), reason }, &pair.text)?,
            None if hold => held.push(pair.clone()),
            None => writer.push(&TrainingRecordRef { id: &pair.id, query: &pair.text, pos: &pair.code, hard_neg: &[], easy_neg: &[] })?,
        }
    }
    drop(dedup);
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
    log.file.finish()?;
    write_atomic(&out.join("reports").join(format!("{name}.json")), &serde_json::to_vec_pretty(&log.report)?)?;
    write_atomic(&marker, format!("{plan_hash}\n").as_bytes())?;
    Ok(())
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
        std::io::copy(&mut part, &mut dropped.writer)?;
    }
    dropped.finish()?;
    write_atomic(&out.join("report.json"), &serde_json::to_vec_pretty(&merged)?)?;
    write_atomic(&out.join("report.md"), markdown(&merged).as_bytes())?;
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
