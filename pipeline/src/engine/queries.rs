//! `queries`: search queries of each rewritten problem of this process (all, or its
//! shard's), asked of the models through the gateway ([`super::ask_each`]). It sees every
//! problem of the build (a problem's similar problems are looked for among all of them) and
//! asks for those of its shard only.

use std::path::Path;

use coreb_data::problem::ProblemId;
use coreb_llm::LlmStage;
use coreb_stages::queries::{QueriesConfig, queries};

use super::ask_each::{Answered, Asking, Question};
use super::stage_name::StageName;
use crate::manifest::RunPlan;

/// The `queries` stage's question.
pub(super) struct Queries;

impl Question for Queries {
    const NAME: StageName = StageName::Queries;
    const LLM: LlmStage = LlmStage::Queries;
    const OUTPUT: (&'static str, &'static str) = ("queries", "queries.jsonl");
    const PROMPT: &'static str = "queries";
    type Config = QueriesConfig;

    fn config(plan: &RunPlan) -> &QueriesConfig {
        &plan.stages.queries
    }

    fn concurrency(config: &mut QueriesConfig) -> &mut usize {
        &mut config.concurrency
    }

    fn ask(a: &Asking<'_, QueriesConfig>, path: &Path) -> anyhow::Result<Answered> {
        let handled = |id: &ProblemId| a.handles(id);
        let got = a.run(async |g| {
            queries(
                &a.config,
                &a.models,
                &a.llm.prompts[LlmStage::Queries],
                &a.problems,
                Some(&handled),
                g,
            )
            .await
        })??;
        coreb_base::jsonl::write(path, &got.queries)?;
        Ok(Answered {
            rows_out: got.queries.len(),
            rejected: got.rejected,
            stats: got.stats,
            prompt_sha256: got.prompt_sha256,
            dropped_queries: Some(got.dropped_queries),
        })
    }
}
