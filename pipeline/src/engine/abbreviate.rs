//! `abbreviate`: a canonical summary of each rewritten problem of this process (all, or
//! its shard's), asked of the models through the gateway ([`super::ask_each`]).

use std::path::Path;

use coreb_llm::LlmStage;
use coreb_stages::abbreviate::{AbbreviateConfig, abbreviate};

use super::ask_each::{Answered, Asking, Question};
use super::stage_name::StageName;
use crate::manifest::RunPlan;

/// The `abbreviate` stage's question.
pub(super) struct Abbreviate;

impl Question for Abbreviate {
    const NAME: StageName = StageName::Abbreviate;
    const LLM: LlmStage = LlmStage::Abbreviate;
    const OUTPUT: (&'static str, &'static str) = ("summaries", "summaries.jsonl");
    const PROMPT: &'static str = "summaries";
    type Config = AbbreviateConfig;

    fn config(plan: &RunPlan) -> &AbbreviateConfig {
        &plan.stages.abbreviate
    }

    fn concurrency(config: &mut AbbreviateConfig) -> &mut usize {
        &mut config.concurrency
    }

    fn ask(a: &Asking<'_, AbbreviateConfig>, path: &Path) -> anyhow::Result<Answered> {
        let mine = a.mine();
        let got = a.run(async |g| {
            abbreviate(&a.config, &a.models, &a.llm.prompts[LlmStage::Abbreviate], &mine, g).await
        })??;
        coreb_base::jsonl::write(path, &got.rows)?;
        Ok(Answered::of(got))
    }
}
