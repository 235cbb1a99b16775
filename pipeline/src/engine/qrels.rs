//! `qrels`: gathers the rewritten problems, summaries, distractors, queries, solutions
//! and verdicts into [`coreb_stages::qrels::qrels`] and stores its output (`qrels.json`). A problem
//! whose every test `execute`'s re-check rejected is left out (`problems_without_tests`), and
//! so is one whose verdicts show answers that can differ though its statement did not say so
//! ([`coreb_stages::ambiguity`]: `ambiguous_answers`, each with the test and its witnesses,
//! recorded in the MANIFEST as `stages.qrels.ambiguous_answers` and listed by the card).

use std::collections::{BTreeMap, BTreeSet};

use coreb_data::composition::{CodeDocument, Composition, QrelsConfig, Roles};
use coreb_data::problem::ProblemId;
use coreb_data::qrels::QrelsStats;
use coreb_data::rewritten::RewrittenProblem;
use coreb_data::tables::ProblemReader;
use coreb_data::tables::solutions::read_solutions;
use coreb_data::tables::verdicts::read_verdicts;
use coreb_data::texts::Distractor;
use coreb_data::texts::Summary as CanonicalSummary;
use coreb_data::verdict::SolutionResult;
use coreb_judge::Harness;
use coreb_judge::driver::assemble;
use coreb_judge::signature::Signature;
use coreb_llm::LlmStage;
use coreb_stages::ambiguity::{Ambiguity, ambiguous};
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
pub(super) struct Qrels;

/// What `qrels` composed: problems in and out, queries, its counts, and what decides the
/// composition (parameters, composition, roles).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct QrelsSummary {
    /// Problems in, composed, and left out.
    #[serde(flatten)]
    pub(crate) rows: Counts,
    /// Problems left out for lack of a summary or distractors.
    incomplete_problems: Vec<ProblemId>,
    /// Problems left out because the re-check rejected every test.
    problems_without_tests: Vec<ProblemId>,
    /// Problems left out because their verdicts show answers that can differ though the
    /// statement did not say so ([`coreb_stages::ambiguity`]), each with the reason's facts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) ambiguous_answers: Vec<Ambiguity>,
    /// Queries composed.
    pub(crate) queries: u64,
    /// Its counts.
    pub(crate) stats: QrelsStats,
    /// `[stages.qrels]`.
    pub(crate) parameters: QrelsConfig,
    /// The composition of the series, resolved.
    pub(crate) composition: Composition,
    /// The two model roles.
    pub(crate) roles: Roles,
}

impl Summary for QrelsSummary {
    fn counts(&self) -> Counts {
        self.rows
    }

    fn reasons(&self) -> Reasons {
        Reasons::Counts(vec![
            ("queries", self.queries),
            ("rejected", self.rows.rejected),
            ("ambiguous_answers", self.ambiguous_answers.len() as u64),
        ])
    }

    fn facts(&self) -> Option<StageFacts> {
        Some(StageFacts {
            composition: Some(self.composition),
            roles: Some(self.roles.clone()),
            ambiguous_answers: (!self.ambiguous_answers.is_empty())
                .then(|| self.ambiguous_answers.clone()),
            ..StageFacts::of(&self.parameters)
        })
    }
}

/// What `qrels`'s key was made of that its run reads again.
pub(super) struct Prepared {
    passed: BTreeMap<String, bool>,
    roles: Roles,
    composition: Composition,
    tests_rejected: BTreeSet<ProblemId>,
    problems: Vec<RewrittenProblem>,
    ambiguous: BTreeMap<ProblemId, Ambiguity>,
}

/// The problems whose verdicts show answers that can differ ([`ambiguous`]), among `problems`.
fn flag_ambiguous(
    problems: &[RewrittenProblem],
    verdicts: &[SolutionResult],
) -> BTreeMap<ProblemId, Ambiguity> {
    let mut by_problem: BTreeMap<&ProblemId, Vec<&SolutionResult>> = BTreeMap::new();
    for v in verdicts {
        by_problem.entry(&v.problem_id).or_default().push(v);
    }
    problems
        .iter()
        .filter_map(|p| {
            let results = by_problem.get(&p.id)?;
            ambiguous(&p.id, p.public_tests.len(), results).map(|a| (p.id.clone(), a))
        })
        .collect()
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
        let passed: BTreeMap<String, bool> =
            verdicts.iter().map(|v| (v.solution_id.as_str().to_owned(), v.passed)).collect();
        let roles = roles(plan)?;
        let composition = config.composition();
        let rewritten_problems = rewritten(cx, up.record(StageName::Rewrite)?)?;
        let ambiguous = flag_ambiguous(&rewritten_problems, &verdicts);
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
            &(config, &composition, &plan.version, &roles, &passed, &tests_rejected, &ambiguous),
            &upstream,
        )?;
        Ok((
            key,
            Prepared {
                passed,
                roles,
                composition,
                tests_rejected,
                problems: rewritten_problems,
                ambiguous,
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
            problems: rewritten_problems,
            mut ambiguous,
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
            distractors.entry(d.problem_id).or_default().push(d.statement);
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
        let mut ambiguous_answers = Vec::new();
        for p in rewritten_problems {
            if tests_rejected.contains(&p.id) {
                without_tests.push(p.id);
                continue;
            }
            if let Some(a) = ambiguous.remove(&p.id) {
                ambiguous_answers.push(a);
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
        durable::write(&out.path("qrels.json"), serde_json::to_string(&composed)?.as_bytes())?;
        let left_out = (incomplete.len() + without_tests.len() + ambiguous_answers.len()) as u64;
        let composed_problems = problems.len() as u64;
        let summary = QrelsSummary {
            rows: Counts {
                rows_in: composed_problems + left_out,
                rows_out: composed_problems,
                rejected: left_out,
            },
            incomplete_problems: incomplete,
            problems_without_tests: without_tests,
            ambiguous_answers,
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
        None => models.iter().find(|m| **m != anchor).cloned().unwrap_or_else(|| anchor.clone()),
    };
    // A role no generating model plays would leave code2code empty without a word.
    for (key, model) in [("anchor_model", &anchor), ("target_model", &target)] {
        if !models.contains(model) {
            anyhow::bail!(
                "`stages.qrels.{key}`: `{model}` is not a model of `[llm.stages.generate]` ({})",
                models.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok(Roles { anchor, target })
}

#[cfg(test)]
mod tests {
    use super::*;
    use coreb_data::problem::{Platform, TestCase, TestType};
    use coreb_data::solution::{Language, SolutionId};
    use coreb_data::verdict::{MemoryBound, TestResult, Verdict, WrongOutput};

    fn problem(id: &str, public: usize) -> RewrittenProblem {
        let test =
            TestCase { input: String::new(), output: String::new(), testtype: TestType::Stdin };
        RewrittenProblem {
            id: ProblemId::from_question_id(id),
            title: "T".into(),
            statement: "S".into(),
            starter_code: String::new(),
            func_name: None,
            platform: Platform::Atcoder,
            difficulty: "easy".into(),
            contest_date: "2025-01-01T00:00:00".into(),
            public_tests: vec![test.clone(); public],
            private_tests: vec![test; 2],
            model: "m".into(),
            test_origins: Vec::new(),
            reference: None,
        }
    }

    /// A solution of problem `id` passing tests 0 and 1 and printing `output` on test 2.
    fn judged(id: &str, model: &str, language: Language, output: &str) -> SolutionResult {
        let p = ProblemId::from_question_id(id);
        let tests = (0..3)
            .map(|index| TestResult {
                index,
                verdict: if index == 2 { Verdict::WrongAnswer } else { Verdict::Passed },
                wall_ms: 1,
                cpu_ms: 1,
                peak_memory_kb: 1,
                wrong_output: (index == 2)
                    .then(|| WrongOutput { sha256: output.into(), alternative: true }),
            })
            .collect();
        SolutionResult {
            solution_id: SolutionId::new(&p, model, language, 0),
            problem_id: p,
            model: model.into(),
            language,
            passed: false,
            pass_rate: 2.0 / 3.0,
            tests,
            message: String::new(),
            memory_bound: MemoryBound::Rlimit,
            comparison: Default::default(),
            stopped: None,
        }
    }

    /// Each problem is judged with its own public tests and its own solutions: the same
    /// verdicts flag a problem whose tests 0 and 1 are public, not one whose test 2 is public
    /// too (the witnesses then fail a public test), nor a problem `rewrite` did not keep.
    #[test]
    fn each_problem_is_judged_by_its_own_public_tests_and_solutions() {
        let verdicts: Vec<SolutionResult> = ["a", "b", "gone"]
            .into_iter()
            .flat_map(|id| {
                [judged(id, "m1", Language::Cpp, "x"), judged(id, "m2", Language::Java, "y")]
            })
            .collect();
        let flagged = flag_ambiguous(&[problem("a", 2), problem("b", 3)], &verdicts);
        assert_eq!(flagged.keys().collect::<Vec<_>>(), [&ProblemId::from_question_id("a")]);
        let a = &flagged[&ProblemId::from_question_id("a")];
        assert_eq!((a.test, a.solutions, a.outputs), (2, 2, 2));
    }
}
