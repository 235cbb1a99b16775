//! The corpus runner, beside the build engine: curate text–code training pairs from a corpus
//! manifest, in one process or as shard processes (`--shard i/N`) followed by a merge.
//! `coreb corpus` and `coreb merge corpus` ([`crate::commands::corpus`]) only parse arguments
//! and print.
//!
//! `http(s)` sources are first downloaded into `<out>/.sources/` by the fetch stage (resumed,
//! retried, checked against their `sha256` pin). Then three steps, each a function of
//! `coreb_curation` with typed inputs and outputs, driven here:
//! 1. **scan** ([`coreb_curation::scan`], run by `scan`): the sources are streamed once;
//!    every row gets its position in the input (`seq`); JSONL is read in blocks parsed in
//!    parallel, each keeping only the three wanted fields. A process keeps the rows of its slice
//!    (all of them; or, for shard `i` of `N`, the lines that start in the `i`-th of `N` byte
//!    ranges of the plain JSONL sources, those before it only counted (and those after it
//!    too when a source read whole follows), and the rows of gzipped,
//!    Parquet and BEIR sources whose id hash falls in shard `i`), sketches them for
//!    deduplication and spools them ([`coreb_curation::spool`]) into one file per output shard
//!    (by id hash). Output: the slice's [`Sketches`] and the spool files.
//! 2. **duplicates** ([`coreb_curation::find_duplicates`]): decides over the sketches of all
//!    rows at once (duplicate ids, exact copies, near-duplicate components), so the kept rows
//!    do not depend on the shard count, the thread count or the number of processes. Output:
//!    the [`Duplicates`] decisions. With `--dedup-tasks T` (or the `--dedup-step` processes a
//!    scheduler runs) the same decisions come from an exact step, `T` band-range tasks and a
//!    clustering step in separate processes, none holding every sketch ([`dedup`]).
//! 3. **curate** ([`coreb_curation::curate`], run by `curate`): each output shard streams its
//!    spool (merged across shard processes by `seq`) through the dedup decisions → language →
//!    decontaminate, in parallel batches, and writes its records batch by batch. Only
//!    alignment and negatives, whose similarity matrix is quadratic, hold the shard's kept
//!    pairs (and so work within an output shard). Output: the shard's files and report.
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
//! <out>/dedup/{exact,bands,clusters}/   the split near-duplicate steps' parts (see [`dedup`])
//! ```
//! An output shard whose `_SUCCESS` holds the current plan hash is skipped on a rerun, and a
//! shard process whose part is complete does nothing. Similarities come from the `[embed]`
//! endpoint (the shared embeddings client: cache, retries) when the manifest has one, else
//! from the lexical TF-IDF fallback.
//!
//! **What it shares with the build, and why it is not a stage of it.** Shard processes, their
//! parts, part markers, merge and locks are [`crate::shard`]'s, which the build engine uses
//! too ([`PartWriter`], [`crate::shard::PartMarker`], [`crate::shard::complete_parts`]), and an
//! output shard's `_SUCCESS` checks its files the way the artifact store checks a stage's
//! ([`crate::artifacts::file_intact`], [`coreb_data::releases::FileEntry`]). Nothing else of
//! the build engine ([`crate::engine`]) is used here, and the engine uses nothing of this
//! module. Its steps are not stages of the engine's table, because:
//! - the corpus has its own manifest and plan ([`CorpusPlan`]), not a release `RunPlan`
//!   ([`crate::manifest::RunPlan`]): none of the build's stages runs before or after it, and
//!   the engine's table is the release chain `fetch` … `release` over one plan;
//! - its output is a Hive-partitioned dataset at `[output] dir` that other tools read, not
//!   stage directories of the artifact store with a `record.json`, and it must stay
//!   byte-identical;
//! - the unit a rerun skips is the output shard (its `_SUCCESS` holds the plan hash and its
//!   files' hashes), finer than a stage: a whole run keeps no scan or duplicates output (the
//!   spool is as large as the input and is deleted after the curation), so a per-step record
//!   would skip nothing that the shard markers do not already skip.
//!
//! Downloads and embeddings run on the runtime the caller gives ([`CorpusRun::load`]).

mod curate;
pub(crate) mod dedup;
mod output;
mod scan;

pub(crate) use dedup::peak_rss_mib;

use std::path::{Path, PathBuf};

use anyhow::Context;
use coreb_curation::{CorpusReport, Duplicates, ReleaseIndex, Sketches};
use rayon::prelude::*;

use crate::corpus_manifest::{CorpusManifestFile, CorpusPlan};
use crate::printer::Printer;
use crate::shard::ShardSpec;
use crate::shard::{PartMarker, PartWriter, part_done, part_name};
use coreb_data::releases::FileEntry;

/// The dedup decisions the curation reads: decided in this process, or by the split steps
/// (their files, streamed by each output shard, and the ids their drop reasons name).
pub(super) enum Dups {
    Whole(Duplicates),
    Split { exact: PathBuf, near: PathBuf, names: coreb_curation::duplicates::steps::DropNames },
}

/// What a shard process did.
#[derive(Debug, Clone)]
pub(crate) struct PartOutcome {
    /// The part was already complete for this plan: nothing was done.
    pub(crate) already_done: bool,
    /// Its directory.
    pub(crate) dir: PathBuf,
    /// Input rows counted (those up to where it stopped reading: the end of its range, or
    /// of the last source it reads whole; all of them for the last shard; 0 when already done).
    pub(crate) input_rows: u64,
    /// Rows of its slice (0 when already done).
    pub(crate) rows: u64,
}

/// A loaded corpus manifest and what derives from it.
pub(crate) struct CorpusRun {
    manifest: PathBuf,
    plan: CorpusPlan,
    /// sha256 of the resolved manifest: outputs and parts made from another plan are redone
    /// or refused.
    plan_hash: String,
    printer: Printer,
    /// Where downloads and embedding requests run.
    runtime: tokio::runtime::Handle,
}

impl CorpusRun {
    /// Load and check the corpus manifest at `manifest`; downloads and embeddings will run on
    /// `runtime`.
    pub(crate) fn load(
        manifest: &Path,
        printer: Printer,
        runtime: tokio::runtime::Handle,
    ) -> anyhow::Result<CorpusRun> {
        let plan = CorpusPlan::load(manifest)
            .with_context(|| format!("loading corpus manifest `{}`", manifest.display()))?;
        let plan_hash =
            coreb_base::hashing::sha256_hex(serde_json::to_string(&plan.file)?.as_bytes());
        Ok(CorpusRun { manifest: manifest.to_owned(), plan, plan_hash, printer, runtime })
    }

    fn file(&self) -> &CorpusManifestFile {
        &self.plan.file
    }

    /// The output directory.
    pub(crate) fn out(&self) -> &Path {
        &self.plan.file.output.dir
    }

    /// Output shards not yet complete for this plan.
    fn todo(&self) -> anyhow::Result<Vec<u32>> {
        fs_err::create_dir_all(self.out())?;
        Ok((0..self.file().output.shards)
            .filter(|&s| !output::shard_done(self.out(), s, &self.plan_hash))
            .collect())
    }

    /// All of it in one process: scan every row, find the duplicates, curate. With
    /// `dedup_tasks`, the duplicates are decided by that many band tasks in other processes:
    /// the rows are scanned into one shard part first, and merged as parts are. Returns the
    /// merged report.
    pub(crate) fn whole(&self, dedup_tasks: Option<u32>) -> anyhow::Result<CorpusReport> {
        let f = self.file();
        let todo = self.todo()?;
        if todo.is_empty() {
            return self.nothing_to_do();
        }
        if dedup_tasks.is_some() {
            self.part(ShardSpec { index: 0, count: 1 })?;
            return self.merge(dedup_tasks);
        }
        let index = self.release_index()?;
        let files =
            scan::fetch_sources(f, &self.out().join(".sources"), &self.printer, &self.runtime)?;
        let spool = self.out().join(".spool");
        if spool.exists() {
            fs_err::remove_dir_all(&spool)?;
        }
        let sketches = scan::scan(
            f,
            &files,
            ShardSpec { index: 0, count: 1 },
            &spool,
            Some(&todo),
            &self.printer,
        )?;
        self.printer.status(format!(
            "read {} pairs; finding duplicates over all of them",
            sketches.input_rows()
        ));
        let dups = Dups::Whole(coreb_curation::find_duplicates(&f.dedup, &[&sketches])?);
        drop(sketches);
        self.curate(&index, &dups, &todo, |s| {
            vec![curate::SpoolFile { path: output::spool_path(&spool, s), check: None }]
        })?;
        fs_err::remove_dir_all(&spool)?;
        output::merge_reports(self.out(), f.output.shards)
    }

    /// One shard process: scan the rows of slice `slice` into `<out>/parts/part=III-of-NNN/`.
    pub(crate) fn part(&self, slice: ShardSpec) -> anyhow::Result<PartOutcome> {
        let f = self.file();
        let name = part_name(slice);
        let parts = self.out().join("parts");
        if part_done(&parts, slice, &self.plan_hash) {
            return Ok(PartOutcome {
                already_done: true,
                dir: parts.join(&name),
                input_rows: 0,
                rows: 0,
            });
        }
        let part = PartWriter::begin(&parts, slice)?;
        // Each shard process downloads into its own cache: processes running at once on a
        // shared file system never write the same download.
        let files = scan::fetch_sources(
            f,
            &self.out().join(".sources").join(&name),
            &self.printer,
            &self.runtime,
        )?;
        let sketches = scan::scan(f, &files, slice, &part.path("spool"), None, &self.printer)?;
        {
            // Hashed as it is written: the part's marker takes that hash, not a second read.
            let path = part.path("sketches.bin");
            let mut w = std::io::BufWriter::with_capacity(
                1 << 20,
                coreb_base::durable::AtomicFile::create(&path)?,
            );
            sketches
                .write_to(&mut w)
                .and_then(|()| w.into_inner().map_err(|e| e.into_error())?.commit())
                .with_context(|| format!("writing `{}`", path.display()))?;
        }
        let (input_rows, rows) = (sketches.input_rows(), sketches.len() as u64);
        let facts = serde_json::json!({"input_rows": input_rows, "rows": rows});
        let marker = PartMarker {
            plan: self.plan_hash.clone(),
            shard: slice.index,
            shards: slice.count,
            files: Default::default(),
            facts: facts.as_object().cloned().unwrap_or_default(),
        };
        let dir = part.finish(&marker)?;
        Ok(PartOutcome { already_done: false, dir, input_rows, rows })
    }

    /// Combine the complete parts of every shard process: refuse while one is missing,
    /// incomplete or made from another plan. The duplicates are those of the split steps
    /// (`<out>/dedup/`) when they are complete for these parts, after running the missing
    /// ones as `dedup_tasks` band tasks when given; otherwise they are decided here. Returns
    /// the merged report.
    pub(crate) fn merge(&self, dedup_tasks: Option<u32>) -> anyhow::Result<CorpusReport> {
        let f = self.file();
        let todo = self.todo()?;
        if todo.is_empty() {
            return self.nothing_to_do();
        }
        let parts_dir = self.out().join("parts");
        // Every part's marker read and its files' sizes checked; the sketch files hashed now,
        // the spool files as the curation streams them.
        let chain = self.chain(true)?;
        self.check_sketches(&chain, true)?;
        let parts = chain.parts();
        let index = self.release_index()?;
        if let Some(tasks) = dedup_tasks {
            self.run_dedup_tasks(&chain, tasks)?;
        }
        let dups =
            match self.split_duplicates(&chain)? {
                Some(dups) => {
                    self.printer.status(format!(
                        "merging {} shard parts with the duplicates of the split steps in `{}`",
                        parts.len(),
                        self.out().join("dedup").display()
                    ));
                    dups
                }
                None if dedup_tasks.is_some() => anyhow::bail!(
                    "the split near-duplicate steps left no complete result in `{}`",
                    self.out().join("dedup").display()
                ),
                None => {
                    let sketches = dedup::read_sketches(&chain, &coreb_curation::Selection::ALL)?;
                    let refs: Vec<&Sketches> = sketches.iter().collect();
                    self.printer.status(format!(
                        "merging {} shard parts: finding duplicates over {} pairs",
                        parts.len(),
                        refs.first().map_or(0, |s| s.input_rows())
                    ));
                    Dups::Whole(coreb_curation::find_duplicates(&f.dedup, &refs).with_context(
                        || format!("merging the parts in `{}`", parts_dir.display()),
                    )?)
                }
            };
        self.curate(&index, &dups, &todo, |s| {
            parts
                .iter()
                .enumerate()
                .map(|(p, dir)| {
                    let path = output::spool_path(&dir.join("spool"), s);
                    let rel = format!(
                        "spool/{}",
                        path.file_name().and_then(|n| n.to_str()).unwrap_or_default()
                    );
                    // A marker that does not list the file: checked as a file of another hash.
                    let entry = chain
                        .file(p, &rel)
                        .cloned()
                        .unwrap_or(FileEntry { sha256: String::new(), bytes: u64::MAX });
                    let refusal = format!("{:#}", self.damaged_part(dir, &path));
                    curate::SpoolFile { path, check: Some((entry, refusal)) }
                })
                .collect()
        })?;
        fs_err::remove_dir_all(&parts_dir)?;
        let dedup_dir = self.out().join("dedup");
        if dedup_dir.exists() {
            fs_err::remove_dir_all(&dedup_dir)?;
        }
        output::merge_reports(self.out(), f.output.shards)
    }

    /// Every output shard is complete: only the merged report is (re)written.
    fn nothing_to_do(&self) -> anyhow::Result<CorpusReport> {
        let shards = self.file().output.shards;
        self.printer.status(format!("all {shards} shards complete; nothing to do"));
        output::merge_reports(self.out(), shards)
    }

    /// The index of the documents of every release below `releases_dir`.
    fn release_index(&self) -> anyhow::Result<ReleaseIndex> {
        let f = self.file();
        let mut docs = Vec::new();
        if let Some(dir) = &f.releases_dir {
            for release in coreb_data::releases::find_releases(dir, 0..=3)? {
                docs.extend(coreb_data::releases::release_docs(&release)?);
            }
        }
        let index = ReleaseIndex::build(f.decontaminate.ngram, docs);
        self.printer.status(format!("indexed {} release documents", index.docs().len()));
        Ok(index)
    }

    /// Curate the output shards `todo` (in parallel), reading each one's rows from the spool
    /// files `spools(shard)`.
    fn curate(
        &self,
        index: &ReleaseIndex,
        dups: &Dups,
        todo: &[u32],
        spools: impl Fn(u32) -> Vec<curate::SpoolFile> + Sync,
    ) -> anyhow::Result<()> {
        self.printer.status(format!("curating {} shards", todo.len()));
        let f = self.file();
        let embedder = curate::Embedder::new(f, &self.runtime)?;
        todo.par_iter().try_for_each(|&s| {
            curate::shard(
                f,
                index,
                embedder.as_ref(),
                dups,
                self.out(),
                &spools(s),
                s,
                &self.plan_hash,
            )
        })
    }
}
