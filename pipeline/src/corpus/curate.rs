//! The curate step's runner: one output shard's spool files in, [`coreb_curation::curate`]
//! over them, its Parquet, JSONL, dropped pairs, report and `_SUCCESS` out. Similarities come
//! from the `[embed]` endpoint when the manifest has one ([`Embedder`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use coreb_base::durable::{self, AtomicFile};
use coreb_curation::curate::{Curate, Sink};
use coreb_curation::duplicates::steps::SplitDecisions;
use coreb_curation::spool::MergedSpool;
use coreb_curation::table::{RerankWriter, TrainingRecordRef, TrainingWriter};
use coreb_curation::{Dropped, Pair, ReleaseIndex, SimMatrix};
use coreb_data::releases::FileEntry;
use serde::Serialize;

use super::Dups;
use super::output::{marker_path, shard_name, write_marker};
use crate::corpus_manifest::CorpusManifestFile;

/// The embeddings endpoint of `[embed]` and the runtime the shard threads call it on.
pub(super) struct Embedder {
    client: coreb_eval::embed::EmbedClient,
    model: String,
    runtime: tokio::runtime::Handle,
}

impl Embedder {
    /// The manifest's endpoint, if it has one, asked on `runtime`.
    pub(super) fn new(
        f: &CorpusManifestFile,
        runtime: &tokio::runtime::Handle,
    ) -> anyhow::Result<Option<Embedder>> {
        let Some(e) = &f.embed else { return Ok(None) };
        let mut cfg = coreb_eval::embed::EmbedConfig::new(e.base_url.clone());
        cfg.api_key = std::env::var(&e.api_key_env).ok().filter(|k| !k.is_empty());
        cfg.cache_dir = e.cache_dir.clone();
        let client = coreb_eval::embed::EmbedClient::new(cfg).context("embeddings client")?;
        Ok(Some(Embedder { client, model: e.model.clone(), runtime: runtime.clone() }))
    }

    /// Cosine similarities of the pairs' texts to their codes.
    fn similarity(&self, pairs: &[Pair]) -> anyhow::Result<SimMatrix> {
        let texts: Vec<String> = pairs.iter().map(|p| p.text.clone()).collect();
        let codes: Vec<String> = pairs.iter().map(|p| p.code.clone()).collect();
        let t = self
            .runtime
            .block_on(self.client.embed(&self.model, &texts))
            .with_context(|| format!("embedding {} texts with `{}`", texts.len(), self.model))?;
        let c = self
            .runtime
            .block_on(self.client.embed(&self.model, &codes))
            .with_context(|| format!("embedding {} codes with `{}`", codes.len(), self.model))?;
        Ok(SimMatrix::from_embeddings(&t, &c))
    }
}

/// The similarities of `pairs`: the endpoint's, else the lexical fallback.
fn similarity(embedder: Option<&Embedder>, pairs: &[Pair]) -> anyhow::Result<SimMatrix> {
    match embedder {
        Some(e) if !pairs.is_empty() => e.similarity(pairs),
        _ => Ok(SimMatrix::lexical(pairs)),
    }
}

/// A spool file an output shard reads, and what it must be: a shard part's file, whose
/// marker's size and sha256 were not checked yet, is hashed as it is read and checked before
/// anything made from it is committed.
pub(super) struct SpoolFile {
    pub(crate) path: PathBuf,
    /// The file its part's marker describes, and the error that refuses the part when the file
    /// is not that one.
    pub(crate) check: Option<(FileEntry, String)>,
}

/// The first of `spools` that is not the file its marker describes, as its error; `digests`
/// (the hash and size of each whole file as it was read) when given, else each file hashed
/// now.
fn damaged_spool(
    spools: &[SpoolFile],
    digests: Option<&[Option<(String, u64)>]>,
) -> Option<anyhow::Error> {
    spools.iter().enumerate().find_map(|(i, s)| {
        let (entry, error) = s.check.as_ref()?;
        let intact = match digests.and_then(|d| d.get(i)).cloned().flatten() {
            Some((sha, bytes)) => sha == entry.sha256 && bytes == entry.bytes,
            None => crate::shard::file_verified(&s.path, entry),
        };
        (!intact).then(|| anyhow::anyhow!("{error}"))
    })
}

/// Curate output shard `s` from the spool files `spools` into `out`.
#[allow(clippy::too_many_arguments)]
pub(super) fn shard(
    f: &CorpusManifestFile,
    index: &ReleaseIndex,
    embedder: Option<&Embedder>,
    dups: &Dups,
    out: &Path,
    spools: &[SpoolFile],
    s: u32,
    plan_hash: &str,
) -> anyhow::Result<()> {
    // A spool file that is not its marker's refuses its part, whatever else went wrong
    // reading it.
    let curate = || -> anyhow::Result<()> {
        let name = shard_name(s);
        // A stale marker must not survive a rewrite of the shard.
        let marker = marker_path(out, s);
        if marker.exists() {
            fs_err::remove_file(&marker)?;
        }
        let mut writer = ShardWriter::create(out, &name)?;
        let step = Curate {
            language: &f.language,
            decontaminate: &f.decontaminate,
            align: &f.align,
            negatives: &f.negatives,
            index,
        };
        let paths: Vec<PathBuf> = spools.iter().map(|f| f.path.clone()).collect();
        let hash = spools.iter().any(|f| f.check.is_some());
        let mut spool =
            if hash { MergedSpool::open_hashing(&paths)? } else { MergedSpool::open(&paths)? };
        let report = match dups {
            Dups::Whole(d) => {
                step.run(&mut spool, &mut &*d, |pairs| similarity(embedder, pairs), &mut writer)?
            }
            Dups::Split { exact, near, names } => {
                let open = |p: &Path| {
                    fs_err::File::open(p).map(|f| std::io::BufReader::with_capacity(1 << 16, f))
                };
                let mut decisions = SplitDecisions::open(open(exact)?, open(near)?, names)
                    .with_context(|| {
                        format!("reading `{}` and `{}`", exact.display(), near.display())
                    })?;
                step.run(
                    &mut spool,
                    &mut decisions,
                    |pairs| similarity(embedder, pairs),
                    &mut writer,
                )
                .with_context(|| {
                    format!(
                        "curating output shard {s} with the decisions of `{}` and `{}`",
                        exact.display(),
                        near.display()
                    )
                })?
            }
        };
        // Every spool file read through to its end; checked before anything is committed.
        if let Some(e) = damaged_spool(spools, Some(&spool.finish()?)) {
            return Err(e);
        }
        writer.finish()?;
        durable::write(
            &out.join("reports").join(format!("{name}.json")),
            &serde_json::to_vec_pretty(&report)?,
        )?;
        // Every file is fsynced by now (durable writers); the marker that vouches for them last.
        write_marker(out, s, plan_hash)
    };
    curate().map_err(|e| damaged_spool(spools, None).unwrap_or(e))
}

/// The outputs of one shard, written as records come: the training and reranker tables and
/// their JSONL twins, and the dropped pairs.
struct ShardWriter {
    train: TrainingWriter,
    rerank: RerankWriter,
    train_jsonl: AtomicFile,
    rerank_jsonl: AtomicFile,
    dropped: AtomicFile,
}

impl ShardWriter {
    fn create(out: &Path, name: &str) -> anyhow::Result<ShardWriter> {
        let dropped =
            AtomicFile::create(&out.join("reports").join(format!("{name}.dropped.jsonl")))?;
        let train_dir = out.join("train").join(name);
        let rerank_dir = out.join("rerank").join(name);
        fs_err::create_dir_all(&train_dir)?;
        fs_err::create_dir_all(&rerank_dir)?;
        Ok(ShardWriter {
            train: TrainingWriter::create(&train_dir.join("part.parquet"))?,
            rerank: RerankWriter::create(&rerank_dir.join("part.parquet"))?,
            train_jsonl: AtomicFile::create(
                &out.join("jsonl/train").join(name).join("part.jsonl"),
            )?,
            rerank_jsonl: AtomicFile::create(
                &out.join("jsonl/rerank").join(name).join("part.jsonl"),
            )?,
            dropped,
        })
    }

    fn finish(self) -> anyhow::Result<()> {
        self.train.finish()?;
        self.rerank.finish()?;
        self.train_jsonl.commit()?;
        self.rerank_jsonl.commit()?;
        self.dropped.commit()?;
        Ok(())
    }
}

impl Sink for ShardWriter {
    type Error = anyhow::Error;

    fn dropped(&mut self, d: &Dropped) -> anyhow::Result<()> {
        json_line(&mut self.dropped, d)
    }

    /// One training record and its reranker records (the positive, then each negative).
    fn record(&mut self, r: &TrainingRecordRef<'_>) -> anyhow::Result<()> {
        self.train.push(r)?;
        json_line(&mut self.train_jsonl, r)?;
        for (doc, label) in std::iter::once((r.pos, 1u8))
            .chain(r.hard_neg.iter().chain(r.easy_neg).map(|d| (d.as_str(), 0)))
        {
            self.rerank.push(r.query, doc, label)?;
            json_line(&mut self.rerank_jsonl, &RerankRef { query: r.query, doc, label })?;
        }
        Ok(())
    }
}

/// A reranker record by reference; serialises like [`coreb_curation::RerankRecord`].
#[derive(Serialize)]
struct RerankRef<'a> {
    query: &'a str,
    doc: &'a str,
    label: u8,
}

/// Append one JSON line to `w`.
fn json_line<T: Serialize>(w: &mut impl Write, value: &T) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *w, value)?;
    w.write_all(b"\n")?;
    Ok(())
}
