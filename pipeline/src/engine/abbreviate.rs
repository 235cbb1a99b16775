//! `abbreviate`: a canonical summary of each rewritten problem of this process (all, or
//! its shard's), asked of the models through the gateway ([`super::llm`]).

use std::collections::BTreeMap;

use coreb_llm::LlmStage;
use coreb_llm::run::ModelPlan;
use coreb_stages::abbreviate::AbbreviateConfig;

use super::context::{StageContext, StageOutput};
use super::llm::{Asked, LlmCounts, LlmLocal, LlmSummary, as_run, finish, key_after_rewrite, reusable, rewritten};
use super::stage::{Done, Stage, StageReport, Upstream};
use super::stage_name::StageName;

/// The `abbreviate` stage.
pub struct Abbreviate;

impl Stage for Abbreviate {
    const NAME: StageName = StageName::Abbreviate;
    const UPSTREAM: &'static [StageName] = &[StageName::Rewrite];
    const SHARDABLE: bool = true;
    const ASKS_MODELS: bool = true;
    type Summary = LlmSummary<LlmCounts, AbbreviateConfig>;
    type Local = LlmLocal;
    type Prepared = ();

    fn key(&self, cx: &StageContext, up: &Upstream<'_>) -> anyhow::Result<(String, ())> {
        key_after_rewrite(cx, up, Self::NAME, &cx.plan().stages.abbreviate, LlmStage::Abbreviate)
    }

    fn reuse(&self, _cx: &StageContext, hit: &StageReport) -> anyhow::Result<bool> {
        Ok(reusable(hit))
    }

    fn run(&self, cx: &StageContext, up: &Upstream<'_>, (): (), out: &StageOutput) -> anyhow::Result<Done<Self::Summary, LlmLocal>> {
        let ctx = cx.llm()?;
        let config = &cx.plan().stages.abbreviate;
        let mut problems = rewritten(cx, up.record(StageName::Rewrite)?)?;
        problems.retain(|p| cx.handles(Self::NAME, p.id.as_str()));
        let plan = ModelPlan::for_stage(&cx.plan().llm, LlmStage::Abbreviate);
        let run_config = as_run(cx.plan(), config, |c| &mut c.concurrency);
        let asked =
            ctx.run(cx.runtime()?, cx.printer(), Self::NAME, async |g| coreb_stages::abbreviate::abbreviate(&run_config, &plan, &ctx.prompts.abbreviate, &problems, g).await)?;
        coreb_base::jsonl::write(&out.path("summaries.jsonl"), &asked.summaries)?;
        let done = Asked {
            rows_in: asked.stats.items_in,
            rows_out: asked.summaries.len(),
            rejected: &asked.rejected,
            stats: LlmCounts::of(asked.stats),
            parameters: config.clone(),
            prompts: BTreeMap::from([("summaries".to_owned(), asked.prompt_sha256.clone())]),
            dropped_queries: None,
        };
        finish(cx, Self::NAME, &[LlmStage::Abbreviate], out, &[("summaries", "summaries.jsonl")], done)
    }
}
