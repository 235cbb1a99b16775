//! The stages of a CoREB build, fetch through release.
//!
//! Each stage module is a function from typed inputs to typed outputs; the engine in the
//! `coreb` crate loads input artifacts, calls the stage and writes its outputs. Stages that
//! need the network, a sandbox or a model take it as a parameter.
//!
//! In build order: [`fetch`] (the one stage whose job *is* I/O: downloads), [`ingest`],
//! [`dedup`], [`filter`], the LLM stages [`rewrite`], [`distract`], [`abbreviate`],
//! [`queries`] and [`generate`] (through `coreb_llm`'s gateway), [`execute`] (through the judge
//! of `coreb_judge`, in `coreb_sandbox`), [`qrels`] (which leaves out the problems
//! [`ambiguity`] flags in the verdicts) and [`release`]. Writing releases in the
//! published dataset's layout is not a stage: it is the binary's (`coreb::release::export`, `coreb
//! export`). The comment stripper `generate` applies is `coreb_data::strip`; the typed
//! signature of a LeetCode problem that `filter`, `rewrite`, `generate` and the judge's drivers
//! share is `coreb_judge::signature`.
//!
//! What the stages exchange — problems, solutions, verdicts, qrels and their tables — is
//! `coreb_data`'s; evaluating a release (`coreb check`, the gates, `coreb eval`) is
//! `coreb_eval`'s; training-pair curation is `coreb_curation`'s. Stores: the **artifact store**
//! of stage outputs is the engine's (`coreb::artifacts`), the **response store** of LLM answers
//! is `coreb_llm::store`, the **results store** of recorded evaluations is
//! `coreb_eval::leaderboard`'s.
#![deny(missing_docs)]

pub mod abbreviate;
pub mod ambiguity;
pub mod answer;
pub mod dedup;
pub mod distract;
pub mod errata;
pub mod execute;
pub mod fetch;
pub mod filter;
pub mod generate;
pub mod ingest;
pub mod qrels;
pub mod queries;
pub mod release;
pub mod rewrite;

use coreb_data::rewritten::RewrittenProblem;
use coreb_llm::prompt::Prompt;
use coreb_llm::run::{self, LlmStageError, LlmStageStats, ModelPlan, RejectReason, Rejection};
use coreb_llm::{LlmGateway, LlmStage};

/// One problem's answer, or its rejections, with the problem and the counts of asking.
type Asked<'p, T> = (&'p RewrittenProblem, Result<(T, String), Vec<Rejection>>, LlmStageStats);

/// Ask `plan`'s models about one rewritten problem with `vars` ([`run::ask_models`], the
/// problem's id as the item), counting into counts of its own: one item of `abbreviate`,
/// `distract` and `queries`, which ask once per problem.
async fn ask_problem<'p, T>(
    gateway: &dyn LlmGateway,
    stage: LlmStage,
    plan: &ModelPlan,
    prompt: &Prompt,
    p: &'p RewrittenProblem,
    vars: &[(&str, &str)],
    parse: impl Fn(&str) -> Result<T, RejectReason>,
) -> Result<Asked<'p, T>, LlmStageError> {
    let mut stats = LlmStageStats::default();
    let r = run::ask_models(gateway, stage, p.id.as_str(), plan, prompt, vars, &mut stats, parse)
        .await?;
    Ok((p, r, stats))
}
