//! Run the model audit (`coreb audit <release> model`): ask the endpoint for solutions to
//! each problem of the release in both versions, the original and the rewrite, through the
//! `generate` stage ([`coreb_stages::generate::generate`], the `generate` prompt, the LLM
//! [`Gateway`] and a response store: a rerun sends nothing it already has, `--replay` never
//! sends), then judge them with [`coreb_judge::execute_with_progress`] in the sandbox, with
//! the release's `[stages.execute]` configuration, and count pass@1 as
//! [`coreb_curation::audit::model`] says.
//!
//! It lives here, beside the build's stages it runs, and not in `coreb-curation`, which sits
//! below `coreb-stages` and keeps the audit's own part: the options, the pairing of problems,
//! the tallies and the report.

use std::path::Path;

use anyhow::Context;
use coreb_curation::audit::ReleaseBuild;
use coreb_curation::audit::model::{
    ModelOptions, ModelReport, Rows, as_original, llm_config, pair, rows, tally,
};
use coreb_data::problem::Problem;
use coreb_data::releases::release_name;
use coreb_data::rewritten::{RewrittenProblem, as_problem};
use coreb_eval::run::ClientOptions;
use coreb_llm::gateway::api_key_from_env;
use coreb_llm::prompt::Prompts;
use coreb_llm::run::ModelPlan;
use coreb_llm::{Counted, Gateway, LlmStage, ResponseStore};
use coreb_sandbox::Sandbox;
use coreb_stages::generate::{GenerateConfig, generate};

use crate::printer::Printer;

/// Audit `release` with the model `options` names (asked on `runtime`): the options are
/// checked first, then the build `open_build` finds gives the rewritten problems, the prompts
/// and the judge's settings.
pub(crate) fn model_audit<B: ReleaseBuild>(
    release: &Path,
    options: ModelOptions,
    open_build: impl FnOnce() -> anyhow::Result<B>,
    printer: &Printer,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<ModelReport> {
    let config = llm_config(&options)?;
    let ModelOptions {
        model,
        language,
        samples,
        prompts_dir,
        jobs,
        client: ClientOptions { store, concurrency, .. },
        ..
    } = options;
    let lookup = open_build()?;
    let originals = coreb_data::tables::ProblemReader::read_all(&release.join("problems.parquet"))?;
    let pairs = pair(originals, lookup.rewritten()?, lookup.build_dir())?;
    let prompts_dir = prompts_dir.unwrap_or_else(|| lookup.prompts_dir());
    let prompts = Prompts::load(&prompts_dir).with_context(|| {
        format!("loading prompts from `{}` (or pass `--prompts-dir`)", prompts_dir.display())
    })?;

    let built_with = lookup.generate_prompt_sha256();
    if built_with.is_some_and(|sha| sha != prompts[LlmStage::Generate].sha256) {
        printer.status(format!(
            "note: the `generate` prompt in `{}` differs from the one the release was built with",
            prompts_dir.display()
        ));
    }
    let key = api_key_from_env(&config).with_context(|| "`--api-key-env` names the variable holding the key; `--api-key-env ''` for an endpoint without one")?;
    let gateway = Gateway::new(&config, ResponseStore::open(&store), key)?;
    let plan = ModelPlan::single(&model, config.sampling.clone());
    let gen_config = GenerateConfig { concurrency, languages: vec![language], samples };
    let originals: Vec<RewrittenProblem> = pairs.iter().map(|(p, _)| as_original(p)).collect();
    let rewrites: Vec<RewrittenProblem> = pairs.iter().map(|(_, r)| r.clone()).collect();
    let per_side = pairs.len() as u64 * u64::from(samples);
    printer.status(format!(
        "asking `{model}` at `{}` for {} {language} solutions ({} problems × 2 versions × {samples} samples; store `{}`)",
        config.base_url,
        2 * per_side,
        pairs.len(),
        store.display()
    ));
    let bar = printer.progress(Some(2 * per_side), "generate", false);
    let tick = || bar.inc(1);
    let observed = Counted { inner: &gateway, progress: &tick };
    let generated = runtime.block_on(async {
        let o = generate(&gen_config, &plan, &prompts[LlmStage::Generate], &originals, &observed)
            .await
            .context("generating solutions to the original problems")?;
        let r = generate(&gen_config, &plan, &prompts[LlmStage::Generate], &rewrites, &observed)
            .await
            .context("generating solutions to the rewritten problems")?;
        anyhow::Ok((o, r))
    });
    let (gen_original, gen_rewritten) =
        generated.with_context(|| format!("asking `{model}` at `{}`", config.base_url))?;
    bar.finish_and_clear();
    let (store_hits, sent) = (
        gen_original.stats.from_store + gen_rewritten.stats.from_store,
        gen_original.stats.from_endpoint + gen_rewritten.stats.from_endpoint,
    );
    printer.status(format!(
        "generate: {store_hits} answers from the store, {sent} from the endpoint, {} without code or answer",
        gen_original.rejected.len() + gen_rewritten.rejected.len()
    ));

    let execute = lookup.execute();
    let sandbox = Sandbox::new(execute.sandbox.clone()).context("setting up the sandbox")?;
    coreb_judge::toolchain_versions(execute, &sandbox, &[language])
        .context("checking the toolchain")?;
    let jobs =
        jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let bar = printer.progress(
        Some((gen_original.rows.len() + gen_rewritten.rows.len()) as u64),
        "execute",
        false,
    );
    let tick = || bar.inc(1);
    let original_problems: Vec<Problem> = pairs.iter().map(|(p, _)| p.clone()).collect();
    let exec_original = coreb_judge::execute_with_progress(
        execute,
        &original_problems,
        &gen_original.rows,
        &sandbox,
        jobs,
        &tick,
    )
    .context("judging the solutions to the original problems")?;
    let rewritten_problems: Vec<Problem> = rewrites.iter().map(as_problem).collect();
    let exec_rewritten = coreb_judge::execute_with_progress(
        execute,
        &rewritten_problems,
        &gen_rewritten.rows,
        &sandbox,
        jobs,
        &tick,
    )
    .context("judging the solutions to the rewritten problems")?;
    bar.finish_and_clear();
    let judged = exec_original.stats.solutions + exec_rewritten.stats.solutions;
    let passed = exec_original.stats.solutions_passed + exec_rewritten.stats.solutions_passed;
    printer.status(format!(
        "execute: {judged} solutions judged, {passed} passed ({})",
        sandbox.isolation()
    ));

    let original =
        tally(&pairs, &model, language, samples, &gen_original.rejected, &exec_original.results);
    let rewritten =
        tally(&pairs, &model, language, samples, &gen_rewritten.rejected, &exec_rewritten.results);
    let Rows { problems, windows, overall, unanswered } = rows(&pairs, original, rewritten);
    Ok(ModelReport {
        release: release_name(release),
        model,
        endpoint: config.base_url.clone(),
        language,
        samples,
        sampling: config.sampling.clone(),
        prompt_sha256: prompts[LlmStage::Generate].sha256.clone(),
        windows,
        overall,
        problems,
        unanswered,
    })
}
