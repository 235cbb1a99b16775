//! What the LLM stages (`rewrite`, `distract`, `abbreviate`, `generate`, `queries`) share
//! besides their gateway and prompts ([`LlmContext`], of [`super::gateway`]): their key, their
//! summary ([`LlmSummary`]) and local facts ([`LlmLocal`]), and the end of their run
//! (`finish`).
//!
//! Each LLM stage's key holds its configuration, the models and sampling of its stage, the
//! hashes of its prompts and schemas, the structured-output mode of its JSON answers and the
//! upstream fingerprints; the store mode and endpoint are not part of it (a stored response
//! is the same whoever serves it). A stage whose previous run rejected items is run again, so
//! that answers that arrived since are used (what was answered before comes from the store,
//! cut and rejected answers included).
//!
//! A stage's summary (its fingerprint) holds what it produced and why items were rejected
//! (`rejections_by_reason`), never where the answers came from: its counts ([`LlmCounts`])
//! leave out the store/endpoint counts, which go with the gateway's requests, tokens and cost
//! of the run to the record's local facts ([`LlmLocal`]), so a rerun served from the store
//! leaves downstream stages untouched.

use std::collections::BTreeMap;

use coreb_data::rewritten::RewrittenProblem;
use coreb_llm::run::{LlmStageStats, Rejection, WrittenBy, count_by_reason};
use coreb_llm::{LlmStage, StructuredOutput, Transport};
use serde::{Deserialize, Serialize};

use super::context::{StageContext, StageOutput};
use super::gateway::{LlmContext, Requests};
use super::stage::{Done, StageReport};
use super::stage_name::StageName;
use super::summary::{Counts, Reasons, StageFacts, Summary};
use crate::artifacts::StageRecord;
use crate::manifest::RunPlan;

/// What an LLM stage's record keeps outside its fingerprint: where its answers came from, and
/// what the gateway did (absent where there is none: the control build's `rewrite`, a gateway
/// that keeps no accounts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct LlmLocal {
    /// Answers served from the response store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) from_store: Option<u64>,
    /// Answers received from the endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) from_endpoint: Option<u64>,
    /// The gateway's requests, tokens and cost for the stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) requests: Option<Requests>,
}

/// An LLM stage's counts as its summary records them: what it produced, not where the answers
/// came from ([`LlmStageStats`] less `from_store` and `from_endpoint`, which go to
/// [`LlmLocal`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LlmCounts {
    /// Items given to the stage.
    pub(crate) items_in: u64,
    /// Outputs produced.
    items_out: u64,
    /// Items that produced nothing.
    items_rejected: u64,
    /// Items that succeeded only with a fallback model.
    fallbacks: u64,
    /// Who wrote the answers the stage used or rejected.
    pub(crate) written_by: WrittenBy,
}

impl LlmCounts {
    /// The counts of `stats`, and where its answers came from: (store, endpoint).
    pub(crate) fn of(stats: LlmStageStats) -> (LlmCounts, (u64, u64)) {
        let LlmStageStats {
            items_in,
            items_out,
            items_rejected,
            from_store,
            from_endpoint,
            fallbacks,
            written_by,
        } = stats;
        (
            LlmCounts { items_in, items_out, items_rejected, fallbacks, written_by },
            (from_store, from_endpoint),
        )
    }
}

/// Counts of an LLM stage that say who wrote its answers.
pub(crate) trait LlmStats:
    Serialize + serde::de::DeserializeOwned + Send + Sync + std::fmt::Debug + 'static
{
    /// Who wrote the answers the stage used or rejected.
    fn written_by(&self) -> WrittenBy;
}

impl LlmStats for LlmCounts {
    fn written_by(&self) -> WrittenBy {
        self.written_by
    }
}

/// An LLM stage's summary: its counts and rejections, its parameters, prompts, schemas and
/// models (what the release MANIFEST records of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LlmSummary<S, C> {
    /// Items given to the stage, rows written, items rejected.
    #[serde(flatten)]
    pub(crate) rows: Counts,
    /// Rejections by reason.
    pub(crate) rejections_by_reason: BTreeMap<String, u64>,
    /// The stage's counts.
    pub(crate) stats: S,
    /// Its configuration (`[stages.<stage>]`).
    pub(crate) parameters: C,
    /// The sha256 of each prompt, by name.
    pub(crate) prompts: BTreeMap<String, String>,
    /// The models asked.
    pub(crate) models: Vec<String>,
    /// The sha256 of each JSON answer's schema, by LLM stage (absent: no JSON answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) schemas: Option<BTreeMap<String, String>>,
    /// How JSON answers were asked for (absent: no JSON answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) structured_output: Option<StructuredOutput>,
    /// `queries`: search queries dropped (absent for the other stages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dropped_queries: Option<u64>,
}

impl<
    S: LlmStats,
    C: Serialize + serde::de::DeserializeOwned + Send + Sync + std::fmt::Debug + 'static,
> Summary for LlmSummary<S, C>
{
    fn counts(&self) -> Counts {
        self.rows
    }

    fn reasons(&self) -> Reasons {
        Reasons::ByReason(self.rejections_by_reason.clone())
    }

    fn facts(&self) -> Option<StageFacts> {
        Some(StageFacts {
            prompts: Some(self.prompts.clone()),
            schemas: self.schemas.clone(),
            structured_output: self.structured_output,
            models: Some(self.models.clone()),
            ..StageFacts::of(&self.parameters)
        })
    }

    fn written_by(&self) -> WrittenBy {
        self.stats.written_by()
    }
}

/// A stage's config as it runs: under the batch transport every item is in flight at once,
/// so that a stage's missing requests make one batch (its concurrency setting bounds
/// synchronous calls only, and is still the one keyed and recorded).
pub(super) fn as_run<C: Clone>(
    plan: &RunPlan,
    config: &C,
    concurrency: impl FnOnce(&mut C) -> &mut usize,
) -> C {
    let mut run = config.clone();
    if plan.llm.transport == Transport::Batch {
        *concurrency(&mut run) = usize::MAX;
    }
    run
}

/// The output of an LLM stage listing the store keys of the answers it used, one a line.
pub(crate) const ANSWER_KEYS: &str = "answer_keys.txt";

/// A stored LLM stage is reused only when it rejected nothing (and recorded the answers it
/// used: one stored before they were recorded runs again, from the store).
pub(super) fn reusable(hit: &StageReport) -> bool {
    hit.summary().counts().rejected == 0 && hit.record.outputs.contains_key("answer_keys")
}

/// What of `[llm]` and the prompts decides a stage's answers: per LLM stage its models,
/// sampling, prompt and, for JSON answers, the schema and structured-output mode.
pub(super) fn llm_key(plan: &RunPlan, ctx: &LlmContext, stages: &[LlmStage]) -> impl Serialize {
    let llm = &plan.llm;
    let keyed = |s: LlmStage| {
        let prompt = ctx.prompts.of(s);
        let schema = prompt
            .and_then(|p| p.schema.as_ref())
            .map(|schema| (llm.structured_output, schema.sha256.clone()));
        (s.as_str(), llm.models(s), llm.sampling(s), prompt.map(|p| p.sha256.clone()), schema)
    };
    stages.iter().map(|s| keyed(*s)).collect::<Vec<_>>()
}

/// What an LLM stage's run made, for [`finish`].
pub(super) struct Asked<'a, S, C> {
    /// Items given to the stage.
    pub(crate) rows_in: u64,
    /// Rows written.
    pub(crate) rows_out: usize,
    /// Its rejections.
    pub(crate) rejected: &'a [Rejection],
    /// Its counts, and where its answers came from: (store, endpoint).
    pub(crate) stats: (S, (u64, u64)),
    /// Its configuration.
    pub(crate) parameters: C,
    /// The sha256 of each prompt, by name.
    pub(crate) prompts: BTreeMap<String, String>,
    /// `queries`: search queries dropped.
    pub(crate) dropped_queries: Option<u64>,
}

/// The end of an LLM stage's run (`llm` its LLM stages, the first naming its models): its
/// rejections and the store keys of every answer it was given written beside `outputs`, its
/// first rejections shown, its summary and local facts.
pub(super) fn finish<S, C>(
    cx: &StageContext,
    stage: StageName,
    llm: &[LlmStage],
    out: &StageOutput,
    outputs: &[(&'static str, &'static str)],
    asked: Asked<'_, S, C>,
) -> anyhow::Result<Done<LlmSummary<S, C>, LlmLocal>> {
    let ctx = cx.llm()?;
    let Asked {
        rows_in,
        rows_out,
        rejected,
        stats: (stats, (from_store, from_endpoint)),
        parameters,
        prompts,
        dropped_queries,
    } = asked;
    coreb_base::jsonl::write(&out.path("rejections.jsonl"), rejected)?;
    // The store keys of every answer this stage was given: what a release's regeneration kit
    // carries of the response store.
    let keys: std::collections::BTreeSet<String> =
        llm.iter().flat_map(|s| ctx.gateway.answers_used(*s)).collect();
    fs_err::write(
        out.path(ANSWER_KEYS),
        keys.iter().map(|k| format!("{k}\n")).collect::<String>(),
    )?;
    let mut outputs = outputs.to_vec();
    outputs.push(("rejections", "rejections.jsonl"));
    outputs.push(("answer_keys", ANSWER_KEYS));
    let schemas: BTreeMap<String, String> = llm
        .iter()
        .filter_map(|s| {
            ctx.prompts
                .of(*s)?
                .schema
                .as_ref()
                .map(|schema| (s.as_str().to_owned(), schema.sha256.clone()))
        })
        .collect();
    let json_answers = !schemas.is_empty();
    let summary = LlmSummary {
        rows: Counts { rows_in, rows_out: rows_out as u64, rejected: rejected.len() as u64 },
        rejections_by_reason: count_by_reason(rejected)
            .into_iter()
            .map(|(k, n)| (k.to_owned(), n))
            .collect(),
        stats,
        parameters,
        prompts,
        models: cx.plan().llm.models(llm[0]),
        schemas: json_answers.then_some(schemas),
        structured_output: json_answers.then_some(cx.plan().llm.structured_output),
        dropped_queries,
    };
    let local = LlmLocal {
        from_store: Some(from_store),
        from_endpoint: Some(from_endpoint),
        requests: ctx.requests(llm),
    };
    announce_rejections(cx, stage, rejected);
    Ok(Done { outputs, summary, local, wall: None, on_commit: None })
}

/// Show the first five of `rejections` on status lines, each as `said` words it, after the
/// stage's name.
pub(super) fn show_first(
    cx: &StageContext,
    stage: StageName,
    rejections: &[Rejection],
    said: impl Fn(&Rejection) -> String,
) {
    for r in rejections.iter().take(5) {
        cx.printer().status(format!("{:>10}: {}", stage.as_str(), said(r)));
    }
}

/// Show the first rejections (all are in the stage's `rejections.jsonl`).
fn announce_rejections(cx: &StageContext, stage: StageName, rejected: &[Rejection]) {
    show_first(cx, stage, rejected, |r| {
        format!("rejected `{}` ({}): {}", r.item, r.model, r.reason)
    });
    if rejected.len() > 5 {
        cx.printer().status(format!(
            "{:>10}: … and {} more (see rejections.jsonl)",
            stage.as_str(),
            rejected.len() - 5
        ));
    }
}

/// The rewritten problems of a rewrite record, without their test bodies: every test keeps
/// its type, with an empty input and output. The stages after `rewrite` read statements,
/// starters and test types; the tests themselves are in the record's `problems` table, for
/// `execute`. Read a line at a time, so a month's tests (GBs of JSON at N = 200) are never
/// in memory at once (issue #13).
pub(crate) fn rewritten(
    cx: &StageContext,
    rewrite: &StageRecord,
) -> anyhow::Result<Vec<RewrittenProblem>> {
    let mut problems = Vec::new();
    for p in coreb_base::jsonl::rows::<RewrittenProblem>(&cx.output(rewrite, "rewritten")?)? {
        let mut p = p?;
        for t in p.public_tests.iter_mut().chain(p.private_tests.iter_mut()) {
            (t.input, t.output) = (String::new(), String::new());
        }
        problems.push(p);
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifacts::{input_key, temporary_store};

    /// Issue #22: a stage re-run that got its answers from the store instead of the endpoint
    /// produced the same files, but its record's fingerprint changed with the counts, so
    /// `execute` (keyed by it) and everything after ran again on every build.
    #[test]
    fn where_answers_came_from_is_not_part_of_the_fingerprint() {
        let (_dir, store) = temporary_store();
        let commit = |from_store: u64, from_endpoint: u64| {
            let writer = store.begin("generate").unwrap();
            fs_err::write(writer.path("solutions.parquet"), "same solutions").unwrap();
            let stats = LlmStageStats {
                items_in: 4,
                items_out: 4,
                from_store,
                from_endpoint,
                ..LlmStageStats::default()
            };
            let (counts, (from_store, from_endpoint)) = LlmCounts::of(stats);
            let summary = LlmSummary {
                rows: Counts { rows_in: 4, rows_out: 4, rejected: 0 },
                rejections_by_reason: BTreeMap::new(),
                stats: counts,
                parameters: BTreeMap::from([("samples", 1)]),
                prompts: BTreeMap::new(),
                models: Vec::new(),
                schemas: None,
                structured_output: None,
                dropped_queries: None,
            };
            let local = LlmLocal {
                from_store: Some(from_store),
                from_endpoint: Some(from_endpoint),
                requests: None,
            };
            writer
                .commit_with_local("k", &[("solutions", "solutions.parquet")], &summary, &local)
                .unwrap()
        };
        let live = commit(0, 4);
        let replayed = commit(4, 0);
        assert_eq!(live.fingerprint(), replayed.fingerprint());
        assert_eq!(
            input_key("execute", &(), &[&live]).unwrap(),
            input_key("execute", &(), &[&replayed]).unwrap()
        );
        assert_eq!(replayed.local, serde_json::json!({"from_store": 4, "from_endpoint": 0}));
        assert!(replayed.summary["stats"].get("from_store").is_none());
        assert_eq!(replayed.summary["stats"]["items_out"], 4);
    }
}
