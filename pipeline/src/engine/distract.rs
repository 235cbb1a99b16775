//! `distract`: distractor statements of each rewritten problem of this process (all, or
//! its shard's), asked of the models through the gateway ([`super::ask_each`]).

use std::path::Path;

use coreb_llm::LlmStage;
use coreb_stages::distract::{DistractConfig, distract};

use super::ask_each::{Answered, Asking, Question};
use super::stage_name::StageName;
use crate::manifest::RunPlan;

/// The `distract` stage's question.
pub(super) struct Distract;

impl Question for Distract {
    const NAME: StageName = StageName::Distract;
    const LLM: LlmStage = LlmStage::Distract;
    const OUTPUT: (&'static str, &'static str) = ("distractors", "distractors.jsonl");
    const PROMPT: &'static str = "distractors";
    type Config = DistractConfig;

    fn config(plan: &RunPlan) -> &DistractConfig {
        &plan.stages.distract
    }

    fn concurrency(config: &mut DistractConfig) -> &mut usize {
        &mut config.concurrency
    }

    fn ask(a: &Asking<'_, DistractConfig>, path: &Path) -> anyhow::Result<Answered> {
        let mine = a.mine();
        let got = a.run(async |g| {
            distract(&a.config, &a.models, &a.llm.prompts[LlmStage::Distract], &mine, g).await
        })??;
        coreb_base::jsonl::write(path, &got.rows)?;
        Ok(Answered::of(got))
    }
}
