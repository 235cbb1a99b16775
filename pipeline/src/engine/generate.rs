//! `generate`: solutions of each rewritten problem of this process (all, or its shard's), in
//! every language of `stages.generate.languages`, asked of the models through the gateway
//! ([`super::ask_each`]).

use std::path::Path;

use coreb_data::tables::solutions::write_solutions;
use coreb_llm::LlmStage;
use coreb_stages::generate::{GenerateConfig, generate};

use super::ask_each::{Answered, Asking, Question};
use super::stage_name::StageName;
use crate::manifest::RunPlan;

/// The `generate` stage's question.
pub(super) struct Generate;

impl Question for Generate {
    const NAME: StageName = StageName::Generate;
    const LLM: LlmStage = LlmStage::Generate;
    const OUTPUT: (&'static str, &'static str) = ("solutions", "solutions.parquet");
    const PROMPT: &'static str = "generate";
    type Config = GenerateConfig;

    fn config(plan: &RunPlan) -> &GenerateConfig {
        &plan.stages.generate
    }

    fn concurrency(config: &mut GenerateConfig) -> &mut usize {
        &mut config.concurrency
    }

    fn ask(a: &Asking<'_, GenerateConfig>, path: &Path) -> anyhow::Result<Answered> {
        let mine = a.mine();
        let got = a.run(async |g| {
            generate(&a.config, &a.models, &a.llm.prompts[LlmStage::Generate], &mine, g).await
        })??;
        write_solutions(path, &got.rows)?;
        Ok(Answered::of(got))
    }
}
