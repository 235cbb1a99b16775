//! `queries`: search queries of each rewritten problem of this process (all, or its
//! shard's), asked of the models through the gateway ([`super::ask_each`]). It sees every
//! problem of the build (a problem's similar problems are looked for among all of them) and
//! asks for those of its shard only.

use std::path::Path;

use coreb_data::problem::ProblemId;
use coreb_llm::LlmStage;
use coreb_stages::queries::{QueriesConfig, queries};

use super::ask_each::{Answered, Asking, question};

question! {
    /// The `queries` stage's question.
    impl Question for Queries {
        const NAME: StageName = StageName::Queries;
        config queries: QueriesConfig, output queries: "queries.jsonl";
        prompt "queries", ask with ask;
    }
}

/// Ask for the queries of this process's problems (among every problem of the build) and
/// write them to `path`.
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
