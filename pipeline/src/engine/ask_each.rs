//! The stages that ask the models one thing of each rewritten problem, after `rewrite`
//! (`distract`, `abbreviate`, `generate`, `queries`): one [`Stage`] for them all
//! ([`AskEach`]), each of them only its [`Question`] (what it asks, where the answers go),
//! implemented by [`question!`] from the stage's row of facts and its function that asks.
//!
//! [`AskEach`] keys the stage on its configuration, its models, prompt and schema
//! (`llm_key`) and `rewrite`'s fingerprint; reads the rewritten problems; leaves to the
//! question the problems this process handles (its shard's, [`StageContext::handles`]); and
//! ends the run as every LLM stage does (`finish`). Under the batch transport every item is
//! in flight at once (`as_run`).

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::path::Path;

use coreb_data::problem::ProblemId;
use coreb_data::rewritten::RewrittenProblem;
use coreb_llm::prompt::Prompt;
use coreb_llm::run::{Answers, LlmStageError, LlmStageStats, ModelPlan, Rejection};
use coreb_llm::{LlmGateway, LlmStage};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::context::{StageContext, StageOutput};
use super::gateway::LlmContext;
use super::llm::{
    Asked, LlmCounts, LlmLocal, LlmSummary, as_run, finish, llm_key, reusable, rewritten,
};
use super::stage::{Done, Stage, StageReport, Upstream};
use super::stage_name::StageName;
use crate::artifacts::input_key;
use crate::manifest::RunPlan;

/// What a stage asks of each rewritten problem, and where it writes the answers.
pub(crate) trait Question: Sync + 'static {
    /// The stage.
    const NAME: StageName;
    /// The prompt it asks with (its models, sampling, prompt and schema).
    const LLM: LlmStage;
    /// Its output: the name in the record, and the file.
    const OUTPUT: (&'static str, &'static str);
    /// Its prompt's name in the summary.
    const PROMPT: &'static str;
    /// Its configuration (`[stages.<stage>]`).
    type Config: Clone + Serialize + DeserializeOwned + Send + Sync + std::fmt::Debug + 'static;

    /// Its configuration in `plan`.
    fn config(plan: &RunPlan) -> &Self::Config;

    /// The problems in flight at once, in its configuration.
    fn concurrency(config: &mut Self::Config) -> &mut usize;

    /// Ask about the problems `asking` hands it and write the answers to `path`.
    fn ask(asking: &Asking<'_, Self::Config>, path: &Path) -> anyhow::Result<Answered>;
}

/// Declares a stage's question `$q` and implements [`Question`] for it, in the syntax of the
/// impl it makes: its stage (the same variant of [`StageName`] and of [`LlmStage`]); its
/// configuration `$config`, the section `[stages.$name]` (whose `concurrency` bounds the
/// problems in flight); its output (`name: "file"`: the name in the record, and the file);
/// its prompt's name in the summary; and how it asks: `ask mine with f, write w` asks the
/// stage's call `f` about the problems this process handles ([`Asking::ask_mine`]) and
/// writes the rows it got with `w(path, rows)`; `ask with f` leaves it all to `f` (a
/// `fn(&Asking<'_, $config>, &Path) -> anyhow::Result<Answered>`).
macro_rules! question {
    (
        $(#[$doc:meta])*
        impl Question for $q:ident {
            const NAME: StageName = StageName::$stage:ident;
            config $name:ident: $config:ty, output $output:ident: $file:literal;
            prompt $prompt:literal, ask $($ask:tt)*
        }
    ) => {
        $(#[$doc])*
        pub(super) struct $q;

        impl $crate::engine::ask_each::Question for $q {
            const NAME: $crate::engine::stage_name::StageName =
                $crate::engine::stage_name::StageName::$stage;
            const LLM: coreb_llm::LlmStage = coreb_llm::LlmStage::$stage;
            const OUTPUT: (&'static str, &'static str) = (stringify!($output), $file);
            const PROMPT: &'static str = $prompt;
            type Config = $config;

            fn config(plan: &$crate::manifest::RunPlan) -> &$config {
                &plan.stages.$name
            }

            fn concurrency(config: &mut $config) -> &mut usize {
                &mut config.concurrency
            }

            fn ask(
                asking: &$crate::engine::ask_each::Asking<'_, $config>,
                path: &std::path::Path,
            ) -> anyhow::Result<$crate::engine::ask_each::Answered> {
                $crate::engine::ask_each::question!(@ask asking, path, $($ask)*)
            }
        }
    };
    (@ask $asking:ident, $path:ident, mine with $call:path, write $write:path;) => {{
        let got = $asking.ask_mine(Self::LLM, $call)?;
        $write($path, &got.rows)?;
        Ok($crate::engine::ask_each::Answered::of(got))
    }};
    (@ask $asking:ident, $path:ident, with $f:path;) => {
        $f($asking, $path)
    };
}
pub(super) use question;

/// What a [`Question`] asks with.
pub(crate) struct Asking<'a, C> {
    /// The stage asking.
    pub(crate) stage: StageName,
    /// The stage's context (its runtime and printer: [`Asking::run`]).
    pub(crate) cx: &'a StageContext,
    /// The gateway and the prompts.
    pub(crate) llm: &'a LlmContext,
    /// Its configuration as it runs (`as_run`).
    pub(crate) config: C,
    /// The models asked and their sampling.
    pub(crate) models: ModelPlan,
    /// Every rewritten problem of the build (a question may look at them all, as `queries`
    /// does for similar problems).
    pub(crate) problems: Vec<RewrittenProblem>,
}

impl<C> Asking<'_, C> {
    /// Whether this process asks about problem `id` (every problem, or its shard's).
    pub(crate) fn handles(&self, id: &ProblemId) -> bool {
        self.cx.handles(self.stage, id.as_str())
    }

    /// The problems this process asks about.
    pub(crate) fn mine(&self) -> Vec<RewrittenProblem> {
        self.problems.iter().filter(|p| self.handles(&p.id)).cloned().collect()
    }

    /// Run `f` with the gateway, counting its answers on the stage's progress line.
    pub(crate) fn run<T>(&self, f: impl AsyncFnOnce(&dyn LlmGateway) -> T) -> anyhow::Result<T> {
        Ok(self.llm.run(self.cx.runtime()?, self.cx.printer(), self.stage, f))
    }

    /// Ask with `ask` (a stage's call of its configuration, models, prompt, problems and
    /// gateway) about the problems this process handles ([`Asking::mine`]), with the prompt of
    /// `llm`.
    pub(crate) fn ask_mine<T>(
        &self,
        llm: LlmStage,
        ask: impl AsyncFnOnce(
            &C,
            &ModelPlan,
            &Prompt,
            &[RewrittenProblem],
            &dyn LlmGateway,
        ) -> Result<T, LlmStageError>,
    ) -> anyhow::Result<T> {
        let mine = self.mine();
        let prompt = &self.llm.prompts[llm];
        Ok(self.run(async |g| ask(&self.config, &self.models, prompt, &mine, g).await)??)
    }
}

/// What a [`Question`] got: rows written, rejections, counts, its prompt's hash.
pub(crate) struct Answered {
    /// Rows written.
    pub(crate) rows_out: usize,
    /// Its rejections.
    pub(crate) rejected: Vec<Rejection>,
    /// Its counts.
    pub(crate) stats: LlmStageStats,
    /// The sha256 of its prompt.
    pub(crate) prompt_sha256: String,
    /// `queries`: search queries dropped.
    pub(crate) dropped_queries: Option<u64>,
}

impl Answered {
    /// What `answers` (its rows written) amount to.
    pub(crate) fn of<T>(answers: Answers<T>) -> Self {
        Answered {
            rows_out: answers.rows.len(),
            rejected: answers.rejected,
            stats: answers.stats,
            prompt_sha256: answers.prompt_sha256,
            dropped_queries: None,
        }
    }
}

/// The stage of a [`Question`]: a row of the build's table ([`super::STAGES`]).
pub(crate) struct AskEach<Q>(PhantomData<Q>);

impl<Q> AskEach<Q> {
    /// The stage.
    pub(crate) const STAGE: Self = AskEach(PhantomData);
}

impl<Q: Question> Stage for AskEach<Q> {
    const NAME: StageName = Q::NAME;
    type Summary = LlmSummary<LlmCounts, Q::Config>;
    type Local = LlmLocal;
    type Prepared = ();

    fn key(&self, cx: &StageContext, up: &Upstream<'_>) -> anyhow::Result<(String, ())> {
        let key = (Q::config(cx.plan()), llm_key(cx.plan(), cx.llm()?, &[Q::LLM]));
        Ok((input_key(Q::NAME.as_str(), &key, &[up.record(StageName::Rewrite)?])?, ()))
    }

    fn reuse(&self, _cx: &StageContext, hit: &StageReport) -> anyhow::Result<bool> {
        Ok(reusable(hit))
    }

    fn run(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        (): (),
        out: &StageOutput,
    ) -> anyhow::Result<Done<Self::Summary, LlmLocal>> {
        let config = Q::config(cx.plan());
        let asking = Asking {
            stage: Q::NAME,
            cx,
            llm: cx.llm()?,
            config: as_run(cx.plan(), config, Q::concurrency),
            models: ModelPlan::for_stage(&cx.plan().llm, Q::LLM),
            problems: rewritten(cx, up.record(StageName::Rewrite)?)?,
        };
        let answered = Q::ask(&asking, &out.path(Q::OUTPUT.1))?;
        let done = Asked {
            rows_in: answered.stats.items_in,
            rows_out: answered.rows_out,
            rejected: &answered.rejected,
            stats: LlmCounts::of(answered.stats),
            parameters: config.clone(),
            prompts: BTreeMap::from([(Q::PROMPT.to_owned(), answered.prompt_sha256.clone())]),
            dropped_queries: answered.dropped_queries,
        };
        finish(cx, Q::NAME, &[Q::LLM], out, &[Q::OUTPUT], done)
    }
}
