//! `queries`: search queries of each rewritten problem of this process (all, or its
//! shard's), asked of the models through the gateway ([`super::llm`]). It sees every problem
//! of the build (a problem's similar problems are looked for among all of them) and asks for
//! those of its shard only.

use std::collections::BTreeMap;

use coreb_data::problem::ProblemId;
use coreb_llm::LlmStage;
use coreb_llm::run::ModelPlan;
use coreb_stages::queries::QueriesConfig;

use super::context::{StageContext, StageOutput};
use super::llm::{Asked, LlmCounts, LlmLocal, LlmSummary, finish, key_after_rewrite, reusable, rewritten};
use super::stage::{Done, Stage, StageReport, Upstream};
use super::stage_name::StageName;

/// The `queries` stage.
pub struct Queries;

impl Stage for Queries {
    const NAME: StageName = StageName::Queries;
    const UPSTREAM: &'static [StageName] = &[StageName::Rewrite];
    const SHARDABLE: bool = true;
    const ASKS_MODELS: bool = true;
    type Summary = LlmSummary<LlmCounts, QueriesConfig>;
    type Local = LlmLocal;
    type Prepared = ();

    fn key(&self, cx: &StageContext, up: &Upstream<'_>) -> anyhow::Result<(String, ())> {
        key_after_rewrite(cx, up, Self::NAME, &cx.plan().stages.queries, LlmStage::Queries)
    }

    fn reuse(&self, _cx: &StageContext, hit: &StageReport) -> anyhow::Result<bool> {
        Ok(reusable(hit))
    }

    fn run(&self, cx: &StageContext, up: &Upstream<'_>, (): (), out: &StageOutput) -> anyhow::Result<Done<Self::Summary, LlmLocal>> {
        let ctx = cx.llm()?;
        let config = &cx.plan().stages.queries;
        let problems = rewritten(cx, up.record(StageName::Rewrite)?)?;
        let handled = |id: &ProblemId| cx.handles(Self::NAME, id.as_str());
        let plan = ModelPlan::for_stage(&cx.plan().llm, LlmStage::Queries);
        let asked =
            ctx.run(cx.runtime()?, cx.printer(), Self::NAME, async |g| coreb_stages::queries::queries(config, &plan, &ctx.prompts.queries, &problems, Some(&handled), g).await)?;
        coreb_base::jsonl::write(&out.path("queries.jsonl"), &asked.queries)?;
        let done = Asked {
            rows_in: asked.stats.items_in,
            rows_out: asked.queries.len(),
            rejected: &asked.rejected,
            stats: LlmCounts::of(asked.stats),
            parameters: config.clone(),
            prompts: BTreeMap::from([("queries".to_owned(), asked.prompt_sha256.clone())]),
            dropped_queries: Some(asked.dropped_queries),
        };
        finish(cx, Self::NAME, &[LlmStage::Queries], out, &[("queries", "queries.jsonl")], done)
    }
}
