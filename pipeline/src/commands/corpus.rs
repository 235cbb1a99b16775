//! `coreb corpus <manifest>`: curate text–code training pairs.
//!
//! Sources are streamed once into per-shard spool files (shard = hash of the normalised,
//! lower-cased text, so copies that differ only in case or whitespace meet in one shard).
//! Each shard then runs dedup → language → decontaminate → align → negatives and writes
//! Hive-style partitions that Spark, DuckDB and polars read directly:
//!
//! ```text
//! <out>/train/shard=NNN/part.parquet    query, pos, hard_neg[], easy_neg[] (+ id)
//! <out>/rerank/shard=NNN/part.parquet   query, doc, label
//! <out>/jsonl/{train,rerank}/shard=NNN/part.jsonl
//! <out>/reports/shard=NNN.json          stats, dropped pairs, examples
//! <out>/train/shard=NNN/_SUCCESS        written last; holds the plan hash
//! <out>/report.json, report.md, dropped.jsonl   merged over shards
//! ```
//! A shard whose `_SUCCESS` holds the current plan hash is skipped on a rerun. Similarities
//! come from the `[embed]` endpoint (the shared embeddings client: cache, retries) when the
//! manifest has one, else from the lexical TF-IDF fallback.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use stages::corpus::{self, CorpusStats, Dropped, Pair, ReleaseIndex, SimMatrix};

use crate::cli::CorpusArgs;
use crate::corpus_manifest::{CorpusManifestFile, CorpusPlan, SourceFormat, SourceSpec};
use crate::printer::Printer;

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
        let spool = out.join(".spool");
        if spool.exists() {
            fs_err::remove_dir_all(&spool)?;
        }
        fs_err::create_dir_all(&spool)?;
        let rows = spool_sources(f, &spool)?;
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

/// Write `bytes` to `path` through `<path>.tmp` and a rename.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    fs_err::write(&tmp, bytes)?;
    fs_err::rename(&tmp, path)?;
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

/// Stream every source into `<spool>/shard=NNN.jsonl`; returns the number of pairs.
fn spool_sources(f: &CorpusManifestFile, spool: &Path) -> anyhow::Result<u64> {
    let shards = f.output.shards;
    let mut writers = (0..shards)
        .map(|s| Ok(BufWriter::new(fs_err::File::create(spool.join(format!("{}.jsonl", shard_name(s))))?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut rows = 0u64;
    for source in &f.sources {
        read_source(source, &mut |pair| {
            let s = corpus::shard_of(&pair.text, shards) as usize;
            serde_json::to_writer(&mut writers[s], &pair)?;
            writers[s].write_all(b"\n")?;
            rows += 1;
            Ok(())
        })
        .with_context(|| format!("reading source `{}` (`{}`)", source.name, source.path.display()))?;
    }
    for w in writers {
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    }
    Ok(rows)
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

/// Stream the pairs of one source.
fn read_source(s: &SourceSpec, emit: &mut dyn FnMut(Pair) -> anyhow::Result<()>) -> anyhow::Result<()> {
    match s.format {
        SourceFormat::Jsonl => for_each_json(&s.path, |line, obj| {
            let id = match &s.id_field {
                Some(name) => field(&obj, name, &s.path, line)?,
                None => (line - 1).to_string(),
            };
            emit(Pair { id: format!("{}:{id}", s.name), text: field(&obj, &s.text_field, &s.path, line)?, code: field(&obj, &s.code_field, &s.path, line)? })
        }),
        SourceFormat::Parquet => {
            let mut cols = vec![s.text_field.as_str(), s.code_field.as_str()];
            if let Some(id) = &s.id_field {
                cols.push(id);
            }
            let mut failed = None;
            stages::tables::corpus::for_each_row(&s.path, &cols, |row, mut v| {
                if failed.is_some() {
                    return;
                }
                let id = if v.len() > 2 { v.remove(2) } else { row.to_string() };
                let code = v.remove(1);
                let text = v.remove(0);
                if let Err(e) = emit(Pair { id: format!("{}:{id}", s.name), text, code }) {
                    failed = Some(e);
                }
            })?;
            failed.map_or(Ok(()), Err)
        }
        SourceFormat::Beir => read_beir(s, emit),
    }
}

/// A BEIR folder: one pair per positive qrel (`<name>:<query id>:<doc id>`), in qrels order.
fn read_beir(s: &SourceSpec, emit: &mut dyn FnMut(Pair) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let qrels_path = s.path.join("qrels").join(format!("{}.tsv", s.split));
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
    let qpath = s.path.join("queries.jsonl");
    for_each_json(&qpath, |line, obj| {
        let id = field(&obj, "_id", &qpath, line)?;
        if wanted_q.contains(id.as_str()) {
            queries.insert(id, field(&obj, "text", &qpath, line)?);
        }
        Ok(())
    })?;
    let mut docs: HashMap<String, String> = HashMap::new();
    let cpath = s.path.join("corpus.jsonl");
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
        emit(Pair { id: format!("{}:{q}:{d}", s.name), text: text.clone(), code: code.clone() })?;
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
    /// Every dropped pair (not in the merged report: see `dropped.jsonl`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<Dropped>,
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

#[allow(clippy::too_many_arguments)]
fn process_shard(f: &CorpusManifestFile, index: &ReleaseIndex, embedder: Option<&Embedder>, out: &Path, spool: &Path, s: u32, plan_hash: &str) -> anyhow::Result<()> {
    let name = shard_name(s);
    let mut pairs = Vec::new();
    let path = spool.join(format!("{name}.jsonl"));
    for (i, line) in std::io::BufReader::new(fs_err::File::open(&path)?).lines().enumerate() {
        let pair: Pair = serde_json::from_str(&line?).with_context(|| format!("`{}`:{}", path.display(), i + 1))?;
        pairs.push(pair);
    }
    let texts: HashMap<String, String> = pairs.iter().map(|p| (p.id.clone(), snippet(&p.text))).collect();
    let mut report = CorpusReport { stats: CorpusStats { rows_in: pairs.len() as u64, ..CorpusStats::default() }, ..CorpusReport::default() };
    let take = |step: corpus::StepOutput, report: &mut CorpusReport| {
        for d in step.dropped {
            report.stats.record(&d);
            let ex = report.examples.entry(d.reason.name().to_owned()).or_default();
            if ex.len() < EXAMPLES {
                ex.push(Example { dropped: d.clone(), text: texts.get(&d.id).cloned().unwrap_or_default() });
            }
            report.dropped.push(d);
        }
        step.kept
    };
    let kept = take(corpus::dedup_pairs(&f.dedup, pairs), &mut report);
    let kept = take(corpus::filter_language(&f.language, kept), &mut report);
    let kept = take(corpus::decontaminate(&f.decontaminate, index, kept), &mut report);
    // The similarity matrix is quadratic in the shard: build it only when a step needs it.
    let empty = SimMatrix::from_embeddings(&[], &[]);
    let sim = if f.align.enabled { similarity(embedder, &kept)? } else { empty.clone() };
    let kept = take(corpus::align(&f.align, kept, &sim), &mut report);
    let sim = if f.negatives.hard + f.negatives.easy > 0 { similarity(embedder, &kept)? } else { empty };
    let records = corpus::mine_negatives(&f.negatives, &kept, &sim);
    let rerank = corpus::rerank_records(&records);
    report.stats.rows_out = records.len() as u64;

    let train_dir = out.join("train").join(&name);
    let rerank_dir = out.join("rerank").join(&name);
    fs_err::create_dir_all(&train_dir)?;
    fs_err::create_dir_all(&rerank_dir)?;
    // A stale marker must not survive a rewrite of the shard.
    let marker = train_dir.join("_SUCCESS");
    if marker.exists() {
        fs_err::remove_file(&marker)?;
    }
    stages::tables::corpus::write_training(&train_dir.join("part.parquet"), &records)?;
    stages::tables::corpus::write_rerank(&rerank_dir.join("part.parquet"), &rerank)?;
    write_atomic(&out.join("jsonl/train").join(&name).join("part.jsonl"), &jsonl(&records)?)?;
    write_atomic(&out.join("jsonl/rerank").join(&name).join("part.jsonl"), &jsonl(&rerank)?)?;
    write_atomic(&out.join("reports").join(format!("{name}.json")), &serde_json::to_vec_pretty(&report)?)?;
    write_atomic(&marker, format!("{plan_hash}\n").as_bytes())?;
    Ok(())
}

fn jsonl<T: Serialize>(rows: &[T]) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    for r in rows {
        serde_json::to_writer(&mut buf, r)?;
        buf.push(b'\n');
    }
    Ok(buf)
}

/// Sum the shard reports into `report.json`, `report.md` and `dropped.jsonl`.
fn merge_reports(out: &Path, shards: u32) -> anyhow::Result<CorpusReport> {
    let mut merged = CorpusReport::default();
    let mut dropped = Vec::new();
    for s in 0..shards {
        let path: PathBuf = out.join("reports").join(format!("{}.json", shard_name(s)));
        let r: CorpusReport = serde_json::from_str(&fs_err::read_to_string(&path)?).with_context(|| format!("`{}`", path.display()))?;
        merged.stats += r.stats;
        for (reason, ex) in r.examples {
            let all = merged.examples.entry(reason).or_default();
            all.extend(ex);
            all.truncate(EXAMPLES);
        }
        dropped.extend(r.dropped);
    }
    write_atomic(&out.join("dropped.jsonl"), &jsonl(&dropped)?)?;
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
