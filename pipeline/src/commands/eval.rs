//! `coreb eval`: evaluate a BEIR folder, or a directory of BEIR folders (a release, one per
//! task), with a built-in retriever (BM25, dense embeddings, optional reranking) or a TREC run
//! file; write JSON, a Markdown report, SVG plots and the runs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use stages::evaluate::beir::{self, Dataset};
use stages::evaluate::bm25::Bm25Config;
use stages::evaluate::report::{self, EvalReport};
use stages::services::evaluator::Run;
use stages::services::evaluator::coreb::{CorebConfig, evaluate};

use crate::cli::EvalArgs;
use crate::printer::Printer;
use crate::store::write_atomic;

/// Which retriever produces the run.
enum Retriever {
    Bm25,
    Embed { model: String },
    RunFile(PathBuf),
}

/// Run `coreb eval`.
pub fn eval(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let EvalArgs {
        dir, retriever, run, keep_self, k, out, json, depth, split, base_url, api_key_env, rerank, rerank_depth, cache, gates,
    } =
        args;
    let printer = Printer::new(json);
    if k.is_empty() || k.contains(&0) {
        bail!("`--k`: cut-offs must be positive integers");
    }
    let retriever = match (&run, retriever.as_str()) {
        (Some(path), _) => Retriever::RunFile(path.clone()),
        (None, "bm25") => Retriever::Bm25,
        (None, r) => match r.strip_prefix("embed:") {
            Some(model) if !model.is_empty() => Retriever::Embed { model: model.to_owned() },
            _ => bail!("`--retriever`: expected `bm25` or `embed:<model>`, got `{r}`"),
        },
    };
    let dirs = dataset_dirs(&dir)?;
    let external = match &retriever {
        Retriever::RunFile(p) => Some(Run::read(p).with_context(|| format!("reading run `{}`", p.display()))?),
        _ => None,
    };
    let dense = match &retriever {
        Retriever::Embed { model } => Some(DenseSetup::new(
            model,
            &base_url,
            &api_key_env,
            cache.clone().unwrap_or_else(|| PathBuf::from(".coreb-cache/embeddings")),
        )?),
        _ => None,
    };
    let mut label = match &retriever {
        Retriever::Bm25 => "bm25".to_owned(),
        Retriever::Embed { model } => format!("embed:{model}"),
        Retriever::RunFile(p) => format!("run:{}", p.display()),
    };
    if let Some(m) = &rerank {
        label.push_str(&format!("+rerank:{m}"));
    }
    let mut tasks = Vec::new();
    let mut runs = Vec::new();
    let mut gate_failures = Vec::new();
    for d in &dirs {
        let mut data = beir::read_dir(d, &split).with_context(|| format!("reading BEIR folder `{}`", d.display()))?;
        // A release's BEIR qrels hold the positives only; its Parquet qrels add the hard
        // negatives (relevance 1) that the intrusion rate and the gates need.
        if split == "test"
            && let Some(graded) = beir::release_qrels(d).with_context(|| format!("reading the graded qrels beside `{}`", d.display()))?
        {
            data.qrels = graded;
        }
        printer.status(format!("{}: {} docs, {} queries", data.name, data.corpus.len(), data.queries.len()));
        let mut run = match (&retriever, &external, &dense) {
            (_, Some(r), _) if keep_self => r.clone(),
            (_, Some(r), _) => {
                let (kept, dropped) = drop_own_documents(&data, r);
                if dropped > 0 {
                    printer.status(format!("{}: dropped {dropped} own document(s) of code queries from the run (--keep-self keeps them)", data.name));
                }
                kept
            }
            (Retriever::Bm25, _, _) => stages::evaluate::bm25_run(&data, Bm25Config::default(), depth),
            (_, _, Some(setup)) => setup.run(&data, depth)?,
            _ => unreachable!("every retriever is handled above"),
        };
        if let Some(model) = &rerank {
            let setup = DenseSetup::new(model, &base_url, &api_key_env, PathBuf::new())?;
            run = setup.rerank(&data, &run, model, rerank_depth)?;
        }
        if gates {
            gate_failures.extend(check_gates(&data, &run, matches!(retriever, Retriever::Bm25) && rerank.is_none()));
        }
        let cfg = CorebConfig::for_qrels(&data.qrels, k.clone());
        let results = evaluate(&data.qrels, &run, &cfg);
        tasks.push(report::task_report(&data, &results, &cfg.ks, cfg.level));
        runs.push((data.name.clone(), run));
    }
    let report = EvalReport { retriever: label, ks: k.clone(), tasks };
    let json_text = serde_json::to_string_pretty(&report)?;
    let markdown = report::to_markdown(&report);
    if let Some(out) = &out {
        fs_err::create_dir_all(out)?;
        write_atomic(&out.join("results.json"), json_text.as_bytes())?;
        write_atomic(&out.join("report.md"), markdown.as_bytes())?;
        write_atomic(&out.join("ndcg.svg"), report::ndcg_svg(&report).as_bytes())?;
        write_atomic(&out.join("queries.svg"), report::query_distribution_svg(&report).as_bytes())?;
        if external.is_none() {
            for (name, run) in &runs {
                write_atomic(&out.join(format!("{name}.run.trec")), run.to_trec(depth).as_bytes())?;
            }
        }
        printer.status(format!("wrote {}", out.display()));
    }
    if json {
        printer.out(json_text);
    } else {
        printer.out(markdown.trim_end());
    }
    if gates {
        if gate_failures.is_empty() {
            printer.status("all release gates passed");
        } else {
            for f in &gate_failures {
                eprintln!("{f}");
            }
            bail!("{} release gate(s) failed", gate_failures.len());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `run` without each query's own document (a code query's `source_doc_id`): CoREB never
/// ranks a query for itself. Returns the run and how many entries were dropped.
fn drop_own_documents(data: &Dataset, run: &Run) -> (Run, usize) {
    let own: std::collections::HashMap<&str, &str> =
        data.queries.iter().filter_map(|q| q.source_doc_id.as_deref().map(|d| (q.id.as_str(), d))).collect();
    let mut kept = Run::new(run.run_id.clone());
    let mut dropped = 0;
    for (qid, entries) in &run.queries {
        for e in entries {
            let doc = run.doc(e);
            if own.get(qid.as_str()) == Some(&doc) {
                dropped += 1;
            } else {
                kept.push(qid, doc, e.score);
            }
        }
    }
    (kept, dropped)
}

/// The release gates of one task with default thresholds; BM25 nDCG@10 comes from `run` when it
/// is the plain BM25 run, else from a fresh BM25 run.
fn check_gates(data: &Dataset, run: &Run, run_is_bm25: bool) -> Vec<stages::evaluate::gates::GateFailure> {
    let ndcg10 = if run_is_bm25 {
        let cfg = CorebConfig::for_qrels(&data.qrels, vec![10]);
        let results = evaluate(&data.qrels, run, &cfg);
        stages::services::evaluator::coreb::summarize(&cfg.ks, &results).at_k.ndcg[0]
    } else {
        stages::evaluate::bm25_ndcg10(data)
    };
    stages::evaluate::gates::check_task(data, ndcg10, &stages::evaluate::gates::GatesConfig::default())
}

/// The BEIR folders to evaluate: `dir` itself, or its BEIR subfolders in name order.
fn dataset_dirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if beir::is_beir_dir(dir) {
        return Ok(vec![dir.to_owned()]);
    }
    let mut subs: Vec<PathBuf> = fs_err::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| beir::is_beir_dir(p))
        .collect();
    subs.sort();
    if subs.is_empty() {
        bail!("`{}`: not a BEIR folder (corpus.jsonl, queries.jsonl, qrels/) and holds none", dir.display());
    }
    Ok(subs)
}

/// The embedding client and a runtime to drive it, for dense retrieval and reranking.
struct DenseSetup {
    client: stages::services::embed::EmbedClient,
    model: String,
    runtime: tokio::runtime::Runtime,
}

impl DenseSetup {
    /// Read the API key from `api_key_env` (if set) and build the client.
    fn new(model: &str, base_url: &str, api_key_env: &str, cache: PathBuf) -> anyhow::Result<DenseSetup> {
        let mut cfg = stages::services::embed::EmbedConfig::new(base_url);
        cfg.api_key = std::env::var(api_key_env).ok().filter(|k| !k.is_empty());
        cfg.cache_dir = (!cache.as_os_str().is_empty()).then_some(cache);
        let client = stages::services::embed::EmbedClient::new(cfg)?;
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        Ok(DenseSetup { client, model: model.to_owned(), runtime })
    }

    fn run(&self, data: &Dataset, depth: usize) -> anyhow::Result<Run> {
        let run = self
            .runtime
            .block_on(stages::evaluate::dense::dense_run(&self.client, &self.model, data, depth))
            .with_context(|| format!("dense retrieval with `{}` on `{}`", self.model, data.name))?;
        let s = &self.client.stats;
        tracing::info!(
            requests = s.requests.load(std::sync::atomic::Ordering::Relaxed),
            retries = s.retries.load(std::sync::atomic::Ordering::Relaxed),
            cache_hits = s.cache_hits.load(std::sync::atomic::Ordering::Relaxed),
            "embeddings"
        );
        Ok(run)
    }

    fn rerank(&self, data: &Dataset, run: &Run, model: &str, depth: usize) -> anyhow::Result<Run> {
        self.runtime
            .block_on(stages::evaluate::dense::rerank_run(&self.client, model, data, run, depth))
            .with_context(|| format!("reranking with `{model}` on `{}`", data.name))
    }
}
