//! The gateway and prompts the LLM stages share ([`LlmContext`]): one gateway and response
//! store per build, made on first use by the stage context ([`super::context`]), and what the
//! gateway did for a stage in a run ([`Requests`], kept in its record's local facts by
//! [`super::llm`]).

use std::sync::Arc;

use anyhow::Context;
use coreb_llm::batch::state_dir_of;
use coreb_llm::gateway::{Gateway, api_key_from_env};
use coreb_llm::prompt::Prompts;
use coreb_llm::store::ResponseStore;
use coreb_llm::{BatchGateway, Counted, LlmGateway, LlmStage, Transport};
use serde::{Deserialize, Serialize};

use super::stage_name::StageName;
use crate::manifest::RunPlan;
use crate::printer::Printer;

/// The gateway and prompts the LLM stages share.
pub(crate) struct LlmContext {
    /// The gateway every request of the LLM stages goes through.
    pub(super) gateway: Arc<dyn LlmGateway>,
    /// The prompts of every LLM stage.
    pub(crate) prompts: Prompts,
}

impl LlmContext {
    /// The context of a plan: its prompts, and `gateway` or else a [`Gateway`] over its store.
    pub(crate) fn new(
        plan: &RunPlan,
        gateway: Option<Arc<dyn LlmGateway>>,
    ) -> anyhow::Result<Self> {
        let prompts = Prompts::load(&plan.prompts_dir)
            .with_context(|| format!("loading prompts from `{}`", plan.prompts_dir.display()))?;
        let gateway: Arc<dyn LlmGateway> = match gateway {
            Some(g) => g,
            None => {
                let key = api_key_from_env(&plan.llm)?;
                let gateway = Gateway::new(
                    &plan.llm,
                    ResponseStore::open(&plan.response_store),
                    key.clone(),
                )?;
                match plan.llm.transport {
                    Transport::Sync => Arc::new(gateway),
                    Transport::Batch => Arc::new(BatchGateway::new(
                        &plan.llm,
                        gateway,
                        key,
                        state_dir_of(&plan.response_store),
                    )?),
                }
            }
        };
        Ok(LlmContext { gateway, prompts })
    }

    /// Run one LLM stage's future on `runtime` (the build's) with a progress bar of `printer`
    /// counting its requests (answers from the store count too; on a terminal a bar, elsewhere
    /// a line now and then).
    pub(crate) fn run<T>(
        &self,
        runtime: &tokio::runtime::Runtime,
        printer: &Printer,
        stage: StageName,
        f: impl AsyncFnOnce(&dyn LlmGateway) -> T,
    ) -> T {
        let bar = printer.progress(None, stage.as_str(), false);
        let tick = || bar.inc(1);
        let counted = Counted { inner: self.gateway.as_ref(), progress: &tick };
        let out = runtime.block_on(f(&counted));
        bar.finish_and_clear();
        out
    }

    /// What the gateway did for `stages` in this run: requests sent, HTTP attempts, answers
    /// from the store, cut or filtered answers, failures, tokens and cost (each LLM stage
    /// runs once per build, so the gateway's totals of its stages are this run's).
    /// `None` for a gateway that keeps no accounts (authoring the sample's store).
    pub(super) fn requests(&self, stages: &[LlmStage]) -> Option<Requests> {
        let usage = self.gateway.usage();
        if usage.is_empty() {
            return None;
        }
        let rows: Vec<_> =
            usage.into_iter().filter(|r| stages.iter().any(|s| s.as_str() == r.stage)).collect();
        let sum = |f: fn(&coreb_llm::UsageRow) -> u64| rows.iter().map(f).sum::<u64>();
        Some(Requests {
            sent: sum(|r| r.sent),
            attempts: sum(|r| r.attempts),
            from_store: sum(|r| r.from_store),
            from_endpoint: sum(|r| r.from_endpoint),
            incomplete: sum(|r| r.incomplete),
            failed: sum(|r| r.failed),
            prompt_tokens: sum(|r| r.prompt_tokens),
            completion_tokens: sum(|r| r.completion_tokens),
            cost: rows.iter().map(|r| r.cost).fold(0.0, |a, b| a + b),
            from_batch: sum(|r| r.from_batch),
            batch_cost: rows.iter().map(|r| r.batch_cost).fold(0.0, |a, b| a + b),
        })
    }
}

/// What the gateway did for a stage in this run (the record's `local.requests`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Requests {
    /// Requests sent to the endpoint.
    pub(crate) sent: u64,
    /// HTTP attempts.
    attempts: u64,
    /// Answers from the response store.
    pub(crate) from_store: u64,
    /// Answers from the endpoint.
    pub(crate) from_endpoint: u64,
    /// Cut or filtered answers.
    pub(crate) incomplete: u64,
    /// Requests that got no answer.
    pub(crate) failed: u64,
    /// Prompt tokens.
    pub(crate) prompt_tokens: u64,
    /// Completion tokens.
    pub(crate) completion_tokens: u64,
    /// Cost at the models' prices.
    pub(crate) cost: f64,
    /// Answers that came by batch.
    pub(crate) from_batch: u64,
    /// Their cost at the batch price.
    pub(crate) batch_cost: f64,
}
