//! `qrels`: gathers the rewritten problems, summaries, distractors, queries, solutions
//! and verdicts into [`coreb_stages::qrels::qrels`] and stores its output (`qrels.json`). A problem
//! whose every test `execute`'s re-check rejected is left out (`problems_without_tests`).

use std::collections::{BTreeMap, BTreeSet};

use coreb_data::composition::{CodeDocument, Composition, QrelsConfig, Roles};
use coreb_data::problem::ProblemId;
use coreb_data::qrels::QrelsStats;
use coreb_data::tables::ProblemReader;
use coreb_data::tables::solutions::read_solutions;
use coreb_data::tables::verdicts::read_verdicts;
use coreb_data::texts::Distractor;
use coreb_data::texts::Summary as CanonicalSummary;
use coreb_judge::Harness;
use coreb_judge::driver::assemble;
use coreb_judge::signature::Signature;
use coreb_llm::LlmStage;
use coreb_stages::qrels::{JudgedSolution, ProblemTexts, SearchQuery, qrels};
use coreb_stages::queries::Query;
use serde::{Deserialize, Serialize};

use super::context::{StageContext, StageOutput};
use super::execute::ExecuteSummary;
use super::llm::rewritten;
use super::stage::{Done, Stage, Upstream};
use super::stage_name::StageName;
use super::summary::{Counts, Reasons, StageFacts, Summary};
use crate::artifacts::input_key;
use crate::manifest::RunPlan;
use coreb_base::durable;
use coreb_base::jsonl;

/// The `qrels` stage.
pub struct Qrels;

/// What `qrels` composed: problems in and out, queries, its counts, and what decides the
/// composition (parameters, composition, roles).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QrelsSummary {
    /// Problems in.
    pub rows_in: u64,
    /// Problems composed.
    pub rows_out: u64,
    /// Problems left out.
    pub rejected: u64,
    /// Problems left out for lack of a summary or distractors.
    pub incomplete_problems: Vec<ProblemId>,
    /// Problems left out because the re-check rejected every test.
    pub problems_without_tests: Vec<ProblemId>,
    /// Queries composed.
    pub queries: u64,
    /// Its counts.
    pub stats: QrelsStats,
    /// `[stages.qrels]`.
    pub parameters: QrelsConfig,
    /// The composition of the series, resolved.
    pub composition: Composition,
    /// The two model roles.
    pub roles: Roles,
}

impl Summary for QrelsSummary {
    fn counts(&self) -> Counts {
        Counts {
            rows_in: self.rows_in,
            rows_out: self.rows_out,
            rejected: self.rejected,
        }
    }

    fn reasons(&self) -> Reasons {
        Reasons::Counts(vec![("queries", self.queries), ("rejected", self.rejected)])
    }

    fn facts(&self) -> Option<StageFacts> {
        Some(StageFacts {
            parameters: serde_json::to_value(&self.parameters).ok(),
            composition: Some(self.composition),
            roles: Some(self.roles.clone()),
            ..StageFacts::default()
        })
    }
}

/// What `qrels`'s key was made of that its run reads again.
pub struct Prepared {
    passed: BTreeMap<String, bool>,
    roles: Roles,
    composition: Composition,
    tests_rejected: BTreeSet<ProblemId>,
}

impl Stage for Qrels {
    const NAME: StageName = StageName::Qrels;
    type Summary = QrelsSummary;
    type Local = ();
    type Prepared = Prepared;

    fn key(&self, cx: &StageContext, up: &Upstream<'_>) -> anyhow::Result<(String, Prepared)> {
        let plan = cx.plan();
        let config = &plan.stages.qrels;
        // Execute's verdict table holds timings that differ run to run: key on its pass/fail
        // facts instead of its bytes.
        let verdicts = read_verdicts(&cx.output(up.record(StageName::Execute)?, "verdicts")?)?;
        let passed: BTreeMap<String, bool> = verdicts
            .iter()
            .map(|v| (v.solution_id.as_str().to_owned(), v.passed))
            .collect();
        let roles = roles(plan)?;
        let composition = config.composition();
        // Problems whose every test the re-check against their reference rejected: left out.
        let tests_rejected: BTreeSet<ProblemId> = up
            .summary::<ExecuteSummary>(StageName::Execute)?
            .test_check
            .rejected_problems
            .iter()
            .cloned()
            .collect();
        // The records of the stages it reads that ask models (in the order of its row).
        let upstream = StageName::Qrels
            .reads()
            .iter()
            .filter(|s| s.asks_models())
            .map(|s| up.record(*s))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let key = input_key(
            StageName::Qrels.as_str(),
            &(
                config,
                &composition,
                &plan.version,
                &roles,
                &passed,
                &tests_rejected,
            ),
            &upstream,
        )?;
        Ok((
            key,
            Prepared {
                passed,
                roles,
                composition,
                tests_rejected,
            },
        ))
    }

    fn run(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        prepared: Prepared,
        out: &StageOutput,
    ) -> anyhow::Result<Done<QrelsSummary, ()>> {
        let Prepared {
            passed,
            roles,
            composition,
            tests_rejected,
        } = prepared;
        let plan = cx.plan();
        let config = &plan.stages.qrels;
        let output = |stage: StageName, role: &str| cx.output(up.record(stage)?, role);
        let summaries: BTreeMap<ProblemId, String> =
            jsonl::read::<CanonicalSummary>(&output(StageName::Abbreviate, "summaries")?)?
                .into_iter()
                .map(|s| (s.problem_id, s.text))
                .collect();
        let mut distractors: BTreeMap<ProblemId, Vec<String>> = BTreeMap::new();
        for d in jsonl::rows::<Distractor>(&output(StageName::Distract, "distractors")?)? {
            let d = d?;
            distractors
                .entry(d.problem_id)
                .or_default()
                .push(d.statement);
        }
        let mut queries: BTreeMap<ProblemId, Vec<SearchQuery>> = BTreeMap::new();
        for q in jsonl::rows::<Query>(&output(StageName::Queries, "queries")?)? {
            let q = q?;
            queries.entry(q.problem_id).or_default().push(SearchQuery {
                index: q.index,
                text: q.text,
                language: q.language,
            });
        }
        let mut problems = Vec::new();
        let mut incomplete = Vec::new();
        let mut without_tests = Vec::new();
        for p in rewritten(cx, up.record(StageName::Rewrite)?)? {
            if tests_rejected.contains(&p.id) {
                without_tests.push(p.id);
                continue;
            }
            match (summaries.get(&p.id), distractors.get(&p.id)) {
                (Some(canonical), Some(ds)) => problems.push(ProblemTexts {
                    problem_id: p.id.clone(),
                    title: p.title,
                    statement: p.statement,
                    canonical: canonical.clone(),
                    distractors: ds.clone(),
                    search_queries: queries.get(&p.id).cloned().unwrap_or_default(),
                }),
                _ => incomplete.push(p.id),
            }
        }
        // A whole program for a functional problem's document, where the composition says so:
        // the solution inside the judge's driver for the problem's signature.
        let mut drivers: BTreeMap<ProblemId, Signature> = BTreeMap::new();
        if composition.code_document == CodeDocument::Program {
            for p in
                ProblemReader::open_without_test_bodies(&output(StageName::Rewrite, "problems")?)?
            {
                let p = p?;
                if let Harness::Driver(signature) = Harness::of(&p) {
                    drivers.insert(p.id, signature);
                }
            }
        }
        let solutions: Vec<JudgedSolution> =
            read_solutions(&output(StageName::Generate, "solutions")?)?
                .into_iter()
                .filter(|s| problems.iter().any(|p| p.problem_id == s.problem_id))
                .map(|mut s| {
                    if let Some(signature) = drivers.get(&s.problem_id) {
                        s.code = assemble(&s.code, s.language, signature);
                    }
                    JudgedSolution {
                        passed: passed.get(s.id.as_str()).copied().unwrap_or(false),
                        solution: s,
                    }
                })
                .collect();
        let composed = qrels(config, &plan.version, &roles, &problems, &solutions);
        durable::write(
            &out.path("qrels.json"),
            serde_json::to_string(&composed)?.as_bytes(),
        )?;
        let summary = QrelsSummary {
            rows_in: (problems.len() + incomplete.len() + without_tests.len()) as u64,
            rows_out: problems.len() as u64,
            rejected: (incomplete.len() + without_tests.len()) as u64,
            incomplete_problems: incomplete,
            problems_without_tests: without_tests,
            queries: composed.stats.queries.values().sum(),
            stats: composed.stats,
            parameters: config.clone(),
            composition,
            roles,
        };
        Ok(Done::new(&[("qrels", "qrels.json")], summary, ()))
    }
}

/// The two model roles: `[stages.qrels] anchor_model` (else the first model of
/// `[llm.stages.generate]`) and `target_model` (else the second, or the first when there is
/// one).
fn roles(plan: &RunPlan) -> anyhow::Result<Roles> {
    let config = &plan.stages.qrels;
    let models = plan.llm.models(LlmStage::Generate);
    let anchor = match &config.anchor_model {
        Some(m) => m.clone(),
        None => models.first().cloned().ok_or_else(|| {
            anyhow::anyhow!(
                "`stages.qrels.anchor_model`: no generating model to anchor code2code queries on"
            )
        })?,
    };
    let target = match &config.target_model {
        Some(m) => m.clone(),
        None => models
            .iter()
            .find(|m| **m != anchor)
            .cloned()
            .unwrap_or_else(|| anchor.clone()),
    };
    // A role no generating model plays would leave code2code empty without a word.
    for (key, model) in [("anchor_model", &anchor), ("target_model", &target)] {
        if !models.contains(model) {
            anyhow::bail!(
                "`stages.qrels.{key}`: `{model}` is not a model of `[llm.stages.generate]` ({})",
                models
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(Roles { anchor, target })
}
