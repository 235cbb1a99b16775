//! Turning the sample's authored content (`tests/fixtures/sample/authored/*.json`, written
//! offline for the sample, not recorded from an API) into ordinary response-store entries.
//!
//! Each authored file holds, for one problem, the rewrite (title, statement, starter code,
//! rewritten tests), for a problem whose tests were rewritten its reference solution
//! (original and adapted, the answers of the `reference` and `adapt_reference` prompts), four
//! distractors, a summary, queries and the solutions of two models.
//! This module renders them as the answers the stages' prompts ask for (JSON objects, raw
//! solution responses), keyed by (stage, item), and runs the LLM stages through an
//! [`AuthoredGateway`], which stores each answer under the real request key. Afterwards a
//! `replay` build serves them like any recorded run.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use coreb_data::problem::{Problem, ProblemId, TestCase};
use coreb_data::solution::{Language, SolutionId};
use coreb_llm::LlmStage;
use coreb_llm::authored::AuthoredGateway;
use coreb_llm::store::ResponseStore;
use coreb_stages::rewrite::is_context_independent;
use serde::Deserialize;

use crate::engine::Engine;
use crate::engine::stage_name::StageName;
use crate::manifest::RunPlan;
use crate::printer::Printer;

#[derive(Deserialize)]
struct Authored {
    question_id: String,
    /// Absent in the answers of a control build (`[control]`), which rewrites nothing.
    #[serde(default)]
    rewrite: Option<AuthoredRewrite>,
    /// A Python solution of the original problem and the same program adapted to the rewrite
    /// (only for a problem with a rewritten test).
    #[serde(default)]
    reference: Option<AuthoredReference>,
    distractors: Vec<AuthoredDistractor>,
    summary: String,
    /// `{"type", "query", "variants": {language: text}}` objects, as the queries prompt asks.
    queries: Vec<serde_json::Value>,
    solutions: Vec<AuthoredSolution>,
}

#[derive(Deserialize)]
struct AuthoredRewrite {
    title: String,
    statement: String,
    starter_code: String,
    tests: Vec<AuthoredTest>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthoredReference {
    original: String,
    adapted: String,
}

#[derive(Deserialize)]
struct AuthoredTest {
    input: String,
    output: String,
}

#[derive(Deserialize)]
struct AuthoredDistractor {
    kind: String,
    statement: String,
}

#[derive(Deserialize)]
struct AuthoredSolution {
    model: String,
    language: String,
    response: String,
}

/// The answers of one authored problem, keyed by (stage, item).
fn answers_for(
    a: &Authored,
    problem: &Problem,
    plan: &RunPlan,
    out: &mut BTreeMap<(LlmStage, String), String>,
) -> anyhow::Result<()> {
    let pid = ProblemId::from_question_id(&a.question_id);
    let id = pid.as_str().to_owned();
    match (&a.rewrite, plan.control.is_some()) {
        (Some(rw), false) => rewrite_answers(a, rw, problem, plan, &id, out)?,
        (None, true) => {}
        (Some(_), true) => anyhow::bail!(
            "`{}`: a `rewrite` is authored, but the manifest builds a control (`[control]`), which rewrites nothing",
            a.question_id
        ),
        (None, false) => anyhow::bail!("`{}`: no `rewrite` authored", a.question_id),
    }
    let mut kinds = serde_json::Map::new();
    for d in &a.distractors {
        kinds.insert(d.kind.clone(), serde_json::Value::String(d.statement.clone()));
    }
    out.insert((LlmStage::Distract, id.clone()), serde_json::Value::Object(kinds).to_string());
    out.insert((LlmStage::Abbreviate, id.clone()), a.summary.clone());
    out.insert(
        (LlmStage::Queries, id.clone()),
        serde_json::json!({ "queries": a.queries }).to_string(),
    );
    for s in &a.solutions {
        let language = Language::parse(&s.language)
            .with_context(|| format!("`{}`: unknown language `{}`", a.question_id, s.language))?;
        let item = SolutionId::new(&pid, &s.model, language, 0);
        out.insert((LlmStage::Generate, item.as_str().to_owned()), s.response.clone());
    }
    Ok(())
}

/// The answers of the rewrite stage's prompts: the rewrite, its test batches and, when a test
/// is rewritten, the reference solution.
fn rewrite_answers(
    a: &Authored,
    rw: &AuthoredRewrite,
    problem: &Problem,
    plan: &RunPlan,
    id: &str,
    out: &mut BTreeMap<(LlmStage, String), String>,
) -> anyhow::Result<()> {
    let rewrite = serde_json::json!({"title": rw.title, "statement": rw.statement, "starter_code": rw.starter_code});
    out.insert((LlmStage::Rewrite, id.to_owned()), rewrite.to_string());

    // The tests the rewrite stage sends to the model, batched as it batches them.
    let config = &plan.stages.rewrite;
    let all: Vec<&TestCase> = problem.public_tests.iter().chain(&problem.private_tests).collect();
    if all.len() != rw.tests.len() {
        anyhow::bail!(
            "`{}`: {} authored tests for {} tests",
            a.question_id,
            rw.tests.len(),
            all.len()
        );
    }
    let for_model: Vec<usize> = (0..all.len())
        .filter(|&i| {
            let t = all[i];
            !(is_context_independent(&t.input) && is_context_independent(&t.output))
                && t.input.len() + t.output.len() <= config.max_test_chars
        })
        .collect();
    for (b, batch) in for_model.chunks(config.test_batch_size.max(1)).enumerate() {
        let tests: Vec<serde_json::Value> = batch
            .iter()
            .map(|&i| serde_json::json!({"input": rw.tests[i].input, "output": rw.tests[i].output}))
            .collect();
        out.insert(
            (LlmStage::RewriteTests, format!("{id}/tests/{b}")),
            serde_json::json!({ "tests": tests }).to_string(),
        );
    }
    // The reference the rewrite stage asks for when a test was rewritten (a long one by the
    // bijection counts too), as a model answers: the program between code tags.
    let rewritten_test = all
        .iter()
        .any(|t| !(is_context_independent(&t.input) && is_context_independent(&t.output)));
    match (&a.reference, rewritten_test) {
        (Some(r), true) => {
            let item = format!("{id}/reference");
            out.insert(
                (LlmStage::Reference, item.clone()),
                format!("<code>\n{}</code>", r.original),
            );
            out.insert((LlmStage::AdaptReference, item), format!("<code>\n{}</code>", r.adapted));
        }
        (Some(_), false) => anyhow::bail!(
            "`{}`: a `reference` is authored but no test of the problem is rewritten (the rewrite stage never asks for it)",
            a.question_id
        ),
        (None, _) => {}
    }
    Ok(())
}

/// Author the response store of `manifest` from the files in `authored`; returns the number
/// of answers and the build reports (which list anything not authored as a rejection).
pub(crate) fn author(manifest: &Path, authored: &Path, printer: Printer) -> anyhow::Result<usize> {
    let plan = RunPlan::load(manifest, None)?;
    let engine = Engine::new(plan.clone(), printer, false)?;
    engine.run_until(StageName::Filter)?;
    let filtered = engine.store().stage_dir("filter").join("problems.parquet");
    let problems: BTreeMap<ProblemId, Problem> =
        coreb_data::tables::ProblemReader::read_all(&filtered)?
            .into_iter()
            .map(|p| (p.id.clone(), p))
            .collect();

    let mut answers = BTreeMap::new();
    let mut files: Vec<_> = fs_err::read_dir(authored)?.collect::<Result<Vec<_>, _>>()?;
    files.sort_by_key(|e| e.file_name());
    for entry in files {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let a: Authored = serde_json::from_str(&fs_err::read_to_string(&path)?)
            .with_context(|| format!("reading `{}`", path.display()))?;
        let Some(problem) = problems.get(&ProblemId::from_question_id(&a.question_id)) else {
            anyhow::bail!(
                "`{}`: problem `{}` is not among the manifest's filtered problems",
                path.display(),
                a.question_id
            );
        };
        answers_for(&a, problem, &plan, &mut answers)?;
    }
    let n = answers.len();
    let gateway = AuthoredGateway::new(answers, ResponseStore::open(&plan.response_store));
    let engine = Engine::new(plan, printer, false)?.with_gateway(Arc::new(gateway));
    engine.run_until(StageName::Queries)?;
    Ok(n)
}
