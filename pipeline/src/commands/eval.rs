//! `coreb eval`: the flags as [`EvalOptions`], the evaluation loop of [`coreb_eval::run`],
//! the `[eval]` and `[gates]` of `--manifest` read with the build manifest's loader.

use std::path::Path;
use std::process::ExitCode;

use coreb_base::printer::Printer;
use coreb_eval::run::{ClientOptions, EvalOptions, ManifestSettings, RerankApi};

use crate::cli::{self, EvalArgs};
use crate::manifest::RunPlan;

/// Run `coreb eval`.
pub fn eval(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let printer = Printer::new(args.json);
    coreb_eval::run::evaluate(&options(args), &load_manifest, &printer)?;
    Ok(ExitCode::SUCCESS)
}

/// What `coreb eval` reads of a build manifest.
fn load_manifest(path: &Path) -> anyhow::Result<ManifestSettings> {
    let plan = RunPlan::load(path, None)?;
    Ok(ManifestSettings { gates: plan.gates, prompts_file: plan.eval.prompts_file, prompts: plan.eval.prompts })
}

/// The flags as the library's options.
fn options(a: EvalArgs) -> EvalOptions {
    let rerank_api = match a.rerank_api {
        cli::RerankApi::Rerank => RerankApi::Rerank,
        cli::RerankApi::Score => RerankApi::Score,
        cli::RerankApi::Listwise => RerankApi::Listwise,
    };
    let client = ClientOptions {
        api_key_env: a.client.api_key_env,
        concurrency: a.client.concurrency,
        max_attempts: a.client.max_attempts,
        timeout_secs: a.client.timeout_secs,
        store: a.client.store,
        replay: a.client.replay,
    };
    EvalOptions {
        dir: a.dir,
        retriever: a.retriever,
        run: a.run,
        keep_self: a.keep_self,
        k: a.k,
        out: a.out,
        json: a.json,
        depth: a.depth,
        split: a.split,
        base_url: a.base_url,
        rerank: a.rerank,
        rerank_api,
        rerank_depth: a.rerank_depth,
        rerank_base_url: a.rerank_base_url,
        rerank_api_key_env: a.rerank_api_key_env,
        window: a.window,
        step: a.step,
        max_words: a.max_words,
        query_prompt: a.query_prompt,
        doc_prompt: a.doc_prompt,
        prompt_preset: a.prompt_preset,
        prompts: a.prompts,
        manifest: a.manifest,
        cache: a.cache,
        no_cache: a.no_cache,
        batch_size: a.batch_size,
        dimensions: a.dimensions,
        no_normalize: a.no_normalize,
        resamples: a.resamples,
        seed: a.seed,
        gates: a.gates,
        record: a.record,
        results: a.results,
        model_name: a.model_name,
        cutoff: a.cutoff,
        client,
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
    }
}
