//! Runs `qrels`: gathers the rewritten problems, summaries, distractors, queries, solutions
//! and verdicts into [`stages::qrels::qrels`] and stores its output (`qrels.json`). A problem
//! whose every test `execute`'s re-check rejected is left out (`problems_without_tests`).

use std::collections::{BTreeMap, BTreeSet};

use coreb_data::composition::{CodeDocument, Roles};
use coreb_data::problem::ProblemId;
use coreb_data::tables::ProblemReader;
use coreb_data::tables::solutions::read_solutions;
use coreb_data::tables::verdicts::read_verdicts;
use coreb_data::texts::Distractor;
use coreb_data::texts::Summary;
use coreb_judge::Harness;
use coreb_judge::driver::assemble;
use coreb_judge::signature::Signature;
use coreb_llm::LlmStage;
use stages::qrels::{JudgedSolution, ProblemTexts, SearchQuery, qrels};
use stages::queries::Query;

use super::llm::{read_jsonl, rewritten};
use super::{Engine, StageReport};
use crate::artifacts::{StageRecord, input_key};
use crate::engine::stage::StageName;
use coreb_base::durable;

/// The upstream records `qrels` reads.
pub(super) struct Inputs<'a> {
    pub rewrite: &'a StageRecord,
    pub distract: &'a StageRecord,
    pub abbreviate: &'a StageRecord,
    pub generate: &'a StageRecord,
    pub execute: &'a StageRecord,
    pub queries: &'a StageRecord,
}

pub(super) fn run(engine: &Engine, inputs: Inputs<'_>) -> anyhow::Result<StageReport> {
    let stage = StageName::Qrels;
    let config = &engine.plan.stages.qrels;
    // Execute's verdict table holds timings that differ run to run: key on its pass/fail
    // facts instead of its bytes.
    let verdicts = read_verdicts(&engine.output(inputs.execute, "verdicts")?)?;
    let passed: BTreeMap<String, bool> = verdicts.iter().map(|v| (v.solution_id.as_str().to_owned(), v.passed)).collect();
    let roles = roles(engine)?;
    let composition = config.composition();
    // Problems whose every test the re-check against their reference rejected: left out.
    let tests_rejected: BTreeSet<ProblemId> =
        inputs.execute.summary.get("test_check").and_then(|c| c.get("rejected_problems")).map(|v| serde_json::from_value(v.clone())).transpose()?.unwrap_or_default();
    let key = input_key(
        stage.as_str(),
        &(config, &composition, &engine.plan.version, &roles, &passed, &tests_rejected),
        &[inputs.rewrite, inputs.distract, inputs.abbreviate, inputs.generate, inputs.queries],
    )?;
    if let Some(hit) = engine.cached(stage, &key)? {
        return Ok(hit);
    }
    let summaries: BTreeMap<ProblemId, String> = read_jsonl::<Summary>(&engine.output(inputs.abbreviate, "summaries")?)?.into_iter().map(|s| (s.problem_id, s.text)).collect();
    let mut distractors: BTreeMap<ProblemId, Vec<String>> = BTreeMap::new();
    for d in read_jsonl::<Distractor>(&engine.output(inputs.distract, "distractors")?)? {
        distractors.entry(d.problem_id).or_default().push(d.statement);
    }
    let mut queries: BTreeMap<ProblemId, Vec<SearchQuery>> = BTreeMap::new();
    for q in read_jsonl::<Query>(&engine.output(inputs.queries, "queries")?)? {
        queries.entry(q.problem_id).or_default().push(SearchQuery { index: q.index, text: q.text, language: q.language });
    }
    let mut problems = Vec::new();
    let mut incomplete = Vec::new();
    let mut without_tests = Vec::new();
    for p in rewritten(engine, inputs.rewrite)? {
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
        for p in ProblemReader::open_without_test_bodies(&engine.output(inputs.rewrite, "problems")?)? {
            let p = p?;
            if let Harness::Driver(signature) = Harness::of(&p) {
                drivers.insert(p.id, signature);
            }
        }
    }
    let solutions: Vec<JudgedSolution> = read_solutions(&engine.output(inputs.generate, "solutions")?)?
        .into_iter()
        .filter(|s| problems.iter().any(|p| p.problem_id == s.problem_id))
        .map(|mut s| {
            if let Some(signature) = drivers.get(&s.problem_id) {
                s.code = assemble(&s.code, s.language, signature);
            }
            JudgedSolution { passed: passed.get(s.id.as_str()).copied().unwrap_or(false), solution: s }
        })
        .collect();
    let out = qrels(config, &engine.plan.version, &roles, &problems, &solutions);
    let writer = engine.store.begin(stage.as_str())?;
    durable::write(&writer.path("qrels.json"), serde_json::to_string(&out)?.as_bytes())?;
    let queries_total: u64 = out.stats.queries.values().sum();
    let summary = serde_json::json!({
        "rows_in": problems.len() + incomplete.len() + without_tests.len(),
        "rows_out": problems.len(),
        "rejected": incomplete.len() + without_tests.len(),
        "incomplete_problems": incomplete,
        "problems_without_tests": without_tests,
        "queries": queries_total,
        "stats": out.stats,
        "parameters": config,
        "composition": composition,
        "roles": roles,
    });
    let record = writer.commit(&key, &[("qrels", "qrels.json")], summary)?;
    Ok(StageReport { stage, skipped: false, record })
}

/// The two model roles: `[stages.qrels] anchor_model` (else the first model of
/// `[llm.stages.generate]`) and `target_model` (else the second, or the first when there is
/// one).
fn roles(engine: &Engine) -> anyhow::Result<Roles> {
    let config = &engine.plan.stages.qrels;
    let models = engine.plan.llm.models(LlmStage::Generate);
    let anchor = match &config.anchor_model {
        Some(m) => m.clone(),
        None => models.first().cloned().ok_or_else(|| anyhow::anyhow!("`stages.qrels.anchor_model`: no generating model to anchor code2code queries on"))?,
    };
    let target = match &config.target_model {
        Some(m) => m.clone(),
        None => models.iter().find(|m| **m != anchor).cloned().unwrap_or_else(|| anchor.clone()),
    };
    // A role no generating model plays would leave code2code empty without a word.
    for (key, model) in [("anchor_model", &anchor), ("target_model", &target)] {
        if !models.contains(model) {
            anyhow::bail!("`stages.qrels.{key}`: `{model}` is not a model of `[llm.stages.generate]` ({})", models.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "));
        }
    }
    Ok(Roles { anchor, target })
}
