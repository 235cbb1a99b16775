//! `rewrite`: the light counterfactual rewrite of a problem.
//!
//! For each problem: ask for a new title, statement and starter code (JSON), strip markdown
//! artefacts, and check the fields; then carry its tests over:
//!
//! - a test whose every input and output token is context-independent (numbers, CP keywords
//!   such as Yes/No/true/false/inf/nan/impossible/none, grid characters) is kept unchanged;
//! - a test too long for a prompt (`max_test_chars`) is kept unchanged when its output is
//!   context-independent, and otherwise mapped through a letter bijection seeded by the
//!   problem id ([`biject_test`]: a keyword is kept only where the output uses it as a word,
//!   and then in the input too, so `true`/`Yes` verdicts survive and data words map alike);
//! - every other test is rewritten by the model in batches (prompt `rewrite_tests`), which
//!   must return as many tests as it got, each with the same line structure.
//!
//! When a test was rewritten (by the model or the bijection), two more requests go to the
//! model that wrote the rewrite: a Python 3 solution of the ORIGINAL problem (prompt
//! `reference`), then that program adapted to the rewrite (prompt `adapt_reference`: same
//! algorithm, only the names and literal strings the story changed). The problem carries both
//! ([`Reference`]); `execute` runs them to re-check the rewritten tests
//! ([`coreb_judge::recheck`]). A reference that cannot be had leaves the problem without
//! one (its tests are then `unchecked`), it does not reject the problem.
//!
//! A problem with any unusable rewrite answer is rejected whole, with the reason. The stage
//! does no I/O; it does not generate solutions or run anything (`execute` does).

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use coreb_data::problem::{Problem, TestCase};
use coreb_data::rewritten::{Reference, RewrittenProblem, TestOrigin};
use coreb_llm::prompt::Prompt;
use coreb_llm::run::{self, LlmStageError, LlmStageStats, ModelPlan, RejectReason, Rejection};
use coreb_llm::text::extract_code;
use coreb_llm::{LlmGateway, LlmStage};

/// `[stages.rewrite]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RewriteConfig {
    /// Problems in flight at once.
    pub concurrency: usize,
    /// Tests per `rewrite_tests` request.
    pub test_batch_size: usize,
    /// A test longer than this (input + output characters) is never sent to the model.
    pub max_test_chars: usize,
}

impl Default for RewriteConfig {
    fn default() -> Self {
        RewriteConfig { concurrency: 8, test_batch_size: 8, max_test_chars: 2_000 }
    }
}

/// Counts of `rewrite`: its answers' (`L`: the gateway's [`LlmStageStats`] here; the build
/// engine's summary keeps them without where the answers came from) and how each test was
/// carried over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewriteStats<L = LlmStageStats> {
    /// Items, requests, rejections.
    pub llm: L,
    /// Tests kept unchanged.
    pub tests_kept: u64,
    /// Long tests kept unchanged.
    pub tests_kept_long: u64,
    /// Tests rewritten by the model.
    pub tests_model: u64,
    /// Tests mapped by the bijection.
    pub tests_bijection: u64,
    /// Problems with a rewritten test that got a reference (original and adapted).
    pub references: u64,
    /// Problems with a rewritten test whose reference could not be had (see
    /// `reference_failures`).
    pub references_missing: u64,
}

impl<L> RewriteStats<L> {
    /// The same counts with the answers' counted as `f` counts them.
    pub fn map_llm<M>(self, f: impl FnOnce(L) -> M) -> RewriteStats<M> {
        let RewriteStats {
            llm,
            tests_kept,
            tests_kept_long,
            tests_model,
            tests_bijection,
            references,
            references_missing,
        } = self;
        RewriteStats {
            llm: f(llm),
            tests_kept,
            tests_kept_long,
            tests_model,
            tests_bijection,
            references,
            references_missing,
        }
    }
}

coreb_base::add_assign_fields!(RewriteStats {
    llm,
    tests_kept,
    tests_kept_long,
    tests_model,
    tests_bijection,
    references,
    references_missing
});

/// What `rewrite` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RewriteOutput {
    /// Rewritten problems, in input order.
    pub problems: Vec<RewrittenProblem>,
    /// Problems that could not be rewritten, with every reason.
    pub rejected: Vec<Rejection>,
    /// Why a problem kept without a reference has none (its item is `<problem>/reference`).
    pub reference_failures: Vec<Rejection>,
    /// Counts.
    pub stats: RewriteStats,
    /// sha256 of the `rewrite` prompt.
    pub prompt_sha256: String,
    /// sha256 of the `rewrite_tests` prompt.
    pub tests_prompt_sha256: String,
}

/// The model plans of `rewrite` (statement), its test batches and its reference programs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RewritePlans {
    /// For the statement.
    pub rewrite: ModelPlan,
    /// For the test batches.
    pub tests: ModelPlan,
    /// For the reference solution: its sampling; the model is the one that wrote the rewrite.
    pub reference: ModelPlan,
    /// For the adapted reference: likewise.
    pub adapt_reference: ModelPlan,
}

impl RewritePlans {
    /// The plans of the four prompts under `config`.
    pub fn for_config(config: &coreb_llm::LlmConfig) -> Self {
        RewritePlans {
            rewrite: ModelPlan::for_stage(config, LlmStage::Rewrite),
            tests: ModelPlan::for_stage(config, LlmStage::RewriteTests),
            reference: ModelPlan::for_stage(config, LlmStage::Reference),
            adapt_reference: ModelPlan::for_stage(config, LlmStage::AdaptReference),
        }
    }

    /// Every plan the same (tests, benchmarks).
    pub fn all(plan: ModelPlan) -> Self {
        RewritePlans {
            rewrite: plan.clone(),
            tests: plan.clone(),
            reference: plan.clone(),
            adapt_reference: plan,
        }
    }
}

/// The four prompts of `rewrite`.
#[derive(Debug, Clone, Copy)]
pub struct RewritePrompts<'a> {
    /// `rewrite`: title, statement, starter code.
    pub rewrite: &'a Prompt,
    /// `rewrite_tests`: a batch of tests.
    pub tests: &'a Prompt,
    /// `reference`: a solution of the original problem.
    pub reference: &'a Prompt,
    /// `adapt_reference`: that solution adapted to the rewrite.
    pub adapt_reference: &'a Prompt,
}

impl<'a> RewritePrompts<'a> {
    /// The rewrite stage's prompts among a build's.
    pub fn of(prompts: &'a coreb_llm::prompt::Prompts) -> Self {
        RewritePrompts {
            rewrite: &prompts[LlmStage::Rewrite],
            tests: &prompts[LlmStage::RewriteTests],
            reference: &prompts[LlmStage::Reference],
            adapt_reference: &prompts[LlmStage::AdaptReference],
        }
    }
}

/// Rewrite every problem.
pub async fn rewrite(
    config: &RewriteConfig,
    plans: &RewritePlans,
    prompts: &RewritePrompts<'_>,
    problems: Vec<Problem>,
    gateway: &dyn LlmGateway,
) -> Result<RewriteOutput, LlmStageError> {
    let n = problems.len() as u64;
    let results = run::ordered(problems, config.concurrency, |p| {
        rewrite_one(config, plans, prompts, p, gateway)
    })
    .await;
    let mut out = RewriteOutput {
        problems: Vec::new(),
        rejected: Vec::new(),
        reference_failures: Vec::new(),
        stats: RewriteStats::default(),
        prompt_sha256: prompts.rewrite.sha256.clone(),
        tests_prompt_sha256: prompts.tests.sha256.clone(),
    };
    out.stats.llm.items_in = n;
    for (one, stats, failures) in run::settle(results)? {
        out.stats += stats;
        out.reference_failures.extend(failures);
        match one {
            Ok(p) => out.problems.push(p),
            Err(rejections) => {
                out.stats.llm.items_rejected += 1;
                out.rejected.extend(rejections);
            }
        }
    }
    out.stats.llm.items_out = out.problems.len() as u64;
    Ok(out)
}

type One = (Result<RewrittenProblem, Vec<Rejection>>, RewriteStats, Vec<Rejection>);

async fn rewrite_one(
    config: &RewriteConfig,
    plans: &RewritePlans,
    prompts: &RewritePrompts<'_>,
    problem: Problem,
    gateway: &dyn LlmGateway,
) -> Result<One, LlmStageError> {
    let (prompt, tests_prompt) = (prompts.rewrite, prompts.tests);
    let mut stats = RewriteStats::default();
    let stage = LlmStage::Rewrite;
    let starter = if problem.starter_code.trim().is_empty() {
        "(none)"
    } else {
        problem.starter_code.as_str()
    };
    let vars = [
        ("question_title", problem.question_title.as_str()),
        ("question_content", problem.question_content.as_str()),
        ("starter_code", starter),
    ];
    let has_starter = !problem.starter_code.trim().is_empty();
    let parsed = run::ask_models(
        gateway,
        stage,
        problem.id.as_str(),
        &plans.rewrite,
        prompt,
        &vars,
        &mut stats.llm,
        |text| parse_rewrite(text, &problem, has_starter),
    )
    .await?;
    let ((title, statement, starter_code, func_name), model) = match parsed {
        Ok(v) => v,
        Err(rejections) => return Ok((Err(rejections), stats, Vec::new())),
    };

    // Tests: classify, then rewrite the ones that need the model in batches.
    let all: Vec<&TestCase> = problem.public_tests.iter().chain(&problem.private_tests).collect();
    let mut new_tests: Vec<Option<TestCase>> = vec![None; all.len()];
    let mut origins = vec![TestOrigin::Kept; all.len()];
    let mut for_model = Vec::new();
    let perm = letter_bijection(problem.id.as_str());
    for (i, t) in all.iter().enumerate() {
        if is_context_independent(&t.input) && is_context_independent(&t.output) {
            new_tests[i] = Some((*t).clone());
            stats.tests_kept += 1;
        } else if t.input.len() + t.output.len() > config.max_test_chars {
            if is_context_independent(&t.output) {
                new_tests[i] = Some((*t).clone());
                origins[i] = TestOrigin::KeptLong;
                stats.tests_kept_long += 1;
            } else {
                new_tests[i] = Some(biject_test(t, &perm));
                origins[i] = TestOrigin::Bijection;
                stats.tests_bijection += 1;
            }
        } else {
            for_model.push(i);
            origins[i] = TestOrigin::Model;
        }
    }
    let batches: Vec<Vec<usize>> =
        for_model.chunks(config.test_batch_size.max(1)).map(<[usize]>::to_vec).collect();
    let futures = batches.iter().enumerate().map(|(b, idx)| {
        let tests: Vec<&TestCase> = idx.iter().map(|&i| all[i]).collect();
        rewrite_batch(plans, tests_prompt, &problem, &statement, b, idx, tests, gateway)
    });
    let results = futures_util::future::join_all(futures).await;
    for (idx, (result, llm)) in batches.iter().zip(run::settle(results)?) {
        stats.llm += llm;
        match result {
            Ok(tests) => {
                for (&i, t) in idx.iter().zip(tests) {
                    new_tests[i] = Some(t);
                    stats.tests_model += 1;
                }
            }
            Err(rejections) => return Ok((Err(rejections), stats, Vec::new())),
        }
    }
    let mut failures = Vec::new();
    let reference = if origins.iter().any(|o| o.rewritten()) {
        let asked = ask_reference(
            plans,
            prompts,
            &problem,
            &statement,
            &starter_code,
            &model,
            gateway,
            &mut stats.llm,
        )
        .await?;
        match asked {
            Ok(r) => {
                stats.references += 1;
                Some(r)
            }
            Err(rejections) => {
                stats.references_missing += 1;
                failures = rejections;
                None
            }
        }
    } else {
        None
    };
    let mut tests: Vec<TestCase> = new_tests.into_iter().flatten().collect();
    let private_tests = tests.split_off(problem.public_tests.len().min(tests.len()));
    let rewritten = RewrittenProblem {
        id: problem.id.clone(),
        title,
        statement,
        starter_code,
        func_name,
        platform: problem.platform,
        difficulty: problem.difficulty.clone(),
        contest_date: problem.contest_date.clone(),
        public_tests: tests,
        private_tests,
        model,
        test_origins: origins,
        reference,
    };
    Ok((Ok(rewritten), stats, failures))
}

/// Ask `model` (the rewrite's) for a solution of the original problem, then for that
/// solution adapted to the rewrite; each answer must hold code ([`extract_code`], kept as
/// written: the judge runs exactly what the model wrote).
#[allow(clippy::too_many_arguments)]
async fn ask_reference(
    plans: &RewritePlans,
    prompts: &RewritePrompts<'_>,
    problem: &Problem,
    statement: &str,
    starter_code: &str,
    model: &str,
    gateway: &dyn LlmGateway,
    stats: &mut LlmStageStats,
) -> Result<Result<Reference, Vec<Rejection>>, LlmStageError> {
    let item = format!("{}/reference", problem.id);
    let code = |text: &str| {
        let code = extract_code(text);
        if code.trim().is_empty() { Err(RejectReason::NoCode) } else { Ok(code) }
    };
    // Both answers come from `model` alone, with the stage plan's other settings.
    let ask = async |stage,
                     plan: &ModelPlan,
                     prompt: &Prompt,
                     vars: &[(&str, &str)],
                     stats: &mut LlmStageStats| {
        let plan = ModelPlan { models: vec![model.to_owned()], ..plan.clone() };
        run::ask_models(gateway, stage, &item, &plan, prompt, vars, stats, code).await
    };
    let prompt = prompts.reference;
    let fragment = |name: &str| {
        prompt
            .fragment(name)
            .map(str::trim)
            .map_err(|source| LlmStageError::Prompt { stage: LlmStage::Reference, source })
    };
    let functional = problem.func_name.is_some()
        || problem
            .public_tests
            .iter()
            .chain(&problem.private_tests)
            .any(|t| t.testtype == coreb_data::problem::TestType::Functional);
    let task = fragment(if functional { "task_solution" } else { "task_program" })?;
    let none = fragment("starter_none")?;
    let original_starter =
        if problem.starter_code.trim().is_empty() { none } else { problem.starter_code.as_str() };
    let vars = [
        ("title", problem.question_title.as_str()),
        ("statement", problem.question_content.as_str()),
        ("task_instructions", task),
        ("starter_code", original_starter),
    ];
    let original = match ask(LlmStage::Reference, &plans.reference, prompt, &vars, stats).await? {
        Ok((code, _)) => code,
        Err(rejections) => return Ok(Err(rejections)),
    };
    let prompt = prompts.adapt_reference;
    let starter = if starter_code.trim().is_empty() { none } else { starter_code };
    let vars = [
        ("original_statement", problem.question_content.as_str()),
        ("original_starter_code", original_starter),
        ("statement", statement),
        ("starter_code", starter),
        ("reference", original.as_str()),
    ];
    Ok(match ask(LlmStage::AdaptReference, &plans.adapt_reference, prompt, &vars, stats).await? {
        Ok((adapted, _)) => Ok(Reference { model: model.to_owned(), original, adapted }),
        Err(rejections) => Err(rejections),
    })
}

#[allow(clippy::too_many_arguments)]
async fn rewrite_batch(
    plans: &RewritePlans,
    prompt: &Prompt,
    problem: &Problem,
    statement: &str,
    batch: usize,
    indices: &[usize],
    tests: Vec<&TestCase>,
    gateway: &dyn LlmGateway,
) -> Result<(Result<Vec<TestCase>, Vec<Rejection>>, LlmStageStats), LlmStageError> {
    let stage = LlmStage::RewriteTests;
    let mut stats = LlmStageStats::default();
    let wire: Vec<serde_json::Value> =
        tests.iter().map(|t| serde_json::json!({"input": t.input, "output": t.output})).collect();
    let tests_json = serde_json::to_string_pretty(&wire).unwrap_or_default();
    let count = tests.len().to_string();
    let vars = [
        ("original_statement", problem.question_content.as_str()),
        ("statement", statement),
        ("tests_json", tests_json.as_str()),
        ("count", count.as_str()),
    ];
    let item = format!("{}/tests/{batch}", problem.id);
    let parsed =
        run::ask_models(gateway, stage, &item, &plans.tests, prompt, &vars, &mut stats, |text| {
            parse_tests(text, indices, &tests)
        })
        .await?;
    Ok((parsed.map(|(t, _)| t), stats))
}

fn parse_rewrite(
    text: &str,
    problem: &Problem,
    has_starter: bool,
) -> Result<(String, String, String, Option<String>), RejectReason> {
    let v = run::json_answer(text)?;
    let title = run::json_text(&v, "title", false, true)?;
    let statement = run::json_text(&v, "statement", false, true)?;
    let starter_code = run::json_text(&v, "starter_code", !has_starter, false)?;
    if normalise(&statement) == normalise(&problem.question_content) {
        return Err(RejectReason::Unchanged { field: "statement".into() });
    }
    let starter_code =
        if has_starter { format!("{}\n", starter_code.trim_end()) } else { String::new() };
    let func_name = match &problem.func_name {
        Some(_) => Some(method_name(&starter_code).ok_or(RejectReason::NoMethod)?),
        None => None,
    };
    same_signature_types(&problem.starter_code, &starter_code)?;
    Ok((title, statement, starter_code, func_name))
}

fn parse_tests(
    text: &str,
    indices: &[usize],
    sent: &[&TestCase],
) -> Result<Vec<TestCase>, RejectReason> {
    let v = run::json_answer(text)?;
    let list = v
        .get("tests")
        .and_then(|t| t.as_array())
        .or_else(|| v.as_array())
        .ok_or(RejectReason::MissingField { field: "tests".into() })?;
    if list.len() != sent.len() {
        return Err(RejectReason::TestCount { expected: sent.len(), got: list.len() });
    }
    let mut out = Vec::with_capacity(list.len());
    for ((item, original), &index) in list.iter().zip(sent).zip(indices) {
        let field = |name: &str| -> Result<String, RejectReason> {
            match item.get(name) {
                Some(serde_json::Value::String(s)) => Ok(s.clone()),
                // Models sometimes unquote a JSON value; keep its compact text.
                Some(other) if !other.is_null() => Ok(other.to_string()),
                _ => Err(RejectReason::MissingField {
                    field: format!("tests[{}].{name}", out.len()),
                }),
            }
        };
        let test = TestCase {
            input: field("input")?,
            output: field("output")?,
            testtype: original.testtype,
        };
        for (what, new, old) in
            [("input", &test.input, &original.input), ("output", &test.output, &original.output)]
        {
            let (a, b) = (new.trim_end().lines().count(), old.trim_end().lines().count());
            if a != b {
                return Err(RejectReason::TestShape {
                    test: index,
                    detail: format!("{what} has {a} lines, the original {b}"),
                });
            }
        }
        out.push(test);
    }
    Ok(out)
}

fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A renamed starter must keep the types of the original's signature (names may change):
/// the judge's driver converts each argument by them ([`crate::signature`]). An original
/// without a usable signature (a stdin problem, or one `filter` would reject) is not checked.
fn same_signature_types(original: &str, rewritten: &str) -> Result<(), RejectReason> {
    let Ok(before) = coreb_judge::signature::parse(original) else {
        return Ok(());
    };
    let after = coreb_judge::signature::parse(rewritten)
        .map_err(|e| RejectReason::SignatureChanged { detail: e.to_string() })?;
    let types = |s: &coreb_judge::signature::Signature| {
        s.params.iter().map(|p| p.ty.to_string()).collect::<Vec<_>>().join(", ")
    };
    if types(&before) != types(&after) || before.returns != after.returns {
        return Err(RejectReason::SignatureChanged {
            detail: format!(
                "({}) -> {} became ({}) -> {}",
                types(&before),
                before.returns,
                types(&after),
                after.returns
            ),
        });
    }
    Ok(())
}

/// The first method of a starter class (`def name(self, …)`), or the first function.
pub fn method_name(starter_code: &str) -> Option<String> {
    static METHOD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*self\b").expect("method regex")
    });
    static FUNC: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(").expect("function regex")
    });
    METHOD.captures(starter_code).or_else(|| FUNC.captures(starter_code)).map(|c| c[1].to_owned())
}

const KEYWORDS: &[&str] = &[
    "Yes",
    "No",
    "YES",
    "NO",
    "yes",
    "no",
    "true",
    "false",
    "True",
    "False",
    "TRUE",
    "FALSE",
    "inf",
    "Inf",
    "INF",
    "infinity",
    "Infinity",
    "nan",
    "NaN",
    "NAN",
    "impossible",
    "Impossible",
    "IMPOSSIBLE",
    "none",
    "None",
    "NONE",
    "null",
    "Null",
    "NULL",
    "possible",
    "Possible",
    "POSSIBLE",
];

/// Characters of grid drawings (`#.#`, `..*`, `+-|`).
const GRID: &str = ".#*@+-|/\\_=<>^~?!";

/// Is every token of `text` a number, a CP keyword or a run of grid characters?
/// JSON punctuation (`[]{},:"`) separates tokens, so `[1,2,3]` and `true` qualify but
/// `"abc"` does not.
pub fn is_context_independent(text: &str) -> bool {
    static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$").expect("number regex")
    });
    text.split(|c: char| c.is_whitespace() || "[]{},:\"'()".contains(c))
        .filter(|t| !t.is_empty())
        .all(|t| {
            NUMBER.is_match(t)
                || KEYWORDS.contains(&t)
                || t.strip_prefix('-').is_some_and(|k| KEYWORDS.contains(&k))
                || t.chars().all(|c| GRID.contains(c))
        })
}

/// The letter permutation of a problem: a Fisher–Yates shuffle of `a..z` driven by
/// splitmix64 seeded with the first 8 bytes of sha256(problem id).
pub fn letter_bijection(problem_id: &str) -> [u8; 26] {
    let digest = coreb_base::hashing::sha256_hex(problem_id.as_bytes());
    let mut rng =
        coreb_base::seeded::SplitMix64::new(u64::from_str_radix(&digest[..16], 16).unwrap_or(0));
    let mut next = || rng.next_u64();
    let mut perm: [u8; 26] = std::array::from_fn(|i| b'a' + i as u8);
    for i in (1..26).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        perm.swap(i, j);
    }
    perm
}

/// A test through the bijection, one word one image on both sides: a keyword (`Yes`,
/// `none` …) is kept only where the output uses it as a whole word (a verdict), and then in
/// the input too; every other word, keywords among the data included, is mapped in input and
/// output alike. (Keeping keywords everywhere broke a test whose data held `no` while the
/// output, mapped, was derived from it.)
pub fn biject_test(t: &TestCase, perm: &[u8; 26]) -> TestCase {
    let keep: Vec<String> =
        letter_runs(&t.output).into_iter().filter(|r| KEYWORDS.contains(&r.as_str())).collect();
    TestCase {
        input: apply_bijection_keeping(&t.input, perm, &keep),
        output: apply_bijection_keeping(&t.output, perm, &keep),
        testtype: t.testtype,
    }
}

fn letter_runs(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphabetic())
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Map every ASCII letter through `perm` (case kept), except in runs that are keywords.
pub fn apply_bijection(text: &str, perm: &[u8; 26]) -> String {
    let keep: Vec<String> = KEYWORDS.iter().map(|k| (*k).to_owned()).collect();
    apply_bijection_keeping(text, perm, &keep)
}

/// Map every ASCII letter through `perm` (case kept), except in runs listed in `keep`.
pub fn apply_bijection_keeping(text: &str, perm: &[u8; 26], keep: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if keep.iter().any(|k| k == run) {
            out.push_str(run);
        } else {
            out.extend(run.chars().map(|c| {
                let lower = c.to_ascii_lowercase();
                let mapped = perm[(lower as u8 - b'a') as usize] as char;
                if c.is_ascii_uppercase() { mapped.to_ascii_uppercase() } else { mapped }
            }));
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphabetic() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use coreb_data::problem::{Platform, ProblemId};

    #[test]
    fn context_independence() {
        for yes in [
            "3\n1 2 3\n",
            "Yes",
            "-1",
            "[1,2,3]\n[[0,1],[2]]",
            "true",
            "#.#\n..*",
            "1.5e-3 inf",
            "IMPOSSIBLE",
            "-inf",
        ] {
            assert!(is_context_independent(yes), "{yes:?}");
        }
        for no in ["\"abc\"", "Alice", "3\nabc", "apple 3"] {
            assert!(!is_context_independent(no), "{no:?}");
        }
    }

    #[test]
    fn bijection_is_seeded_permutation_sparing_keywords() {
        let p = letter_bijection("lcb_1");
        let mut sorted = p;
        sorted.sort();
        assert_eq!(sorted.to_vec(), (b'a'..=b'z').collect::<Vec<_>>());
        assert_eq!(p, letter_bijection("lcb_1"));
        assert_ne!(p, letter_bijection("lcb_2"));
        let s = apply_bijection("\"Hello\" true 42 abc", &p);
        assert!(s.contains(" true 42 "), "{s}");
        assert_eq!(s.len(), "\"Hello\" true 42 abc".len());
        assert_ne!(&s[1..6], "Hello");
        assert!(s.as_bytes()[1].is_ascii_uppercase());
    }

    #[test]
    fn bijected_tests_map_keywords_consistently() {
        let p = letter_bijection("lcb_1");
        // `no` is data here: mapped in the input as the output's words are.
        let t = TestCase {
            input: "\"no\"\n\"on\"".into(),
            output: "\"on\"".into(),
            testtype: coreb_data::problem::TestType::Functional,
        };
        let b = biject_test(&t, &p);
        let image = |w: &str| apply_bijection_keeping(w, &p, &[]);
        assert_eq!(b.input, format!("\"{}\"\n\"{}\"", image("no"), image("on")));
        assert_eq!(b.output, format!("\"{}\"", image("on")));
        // A verdict keyword in the output stays, in the input too.
        let t = TestCase {
            input: "abc Yes".into(),
            output: "Yes".into(),
            testtype: coreb_data::problem::TestType::Stdin,
        };
        let b = biject_test(&t, &p);
        assert_eq!(b.output, "Yes");
        assert_eq!(b.input, format!("{} Yes", image("abc")));
    }

    /// A gateway that answers from a closure: what tests and replays substitute.
    struct Canned(fn(&coreb_llm::ChatRequest) -> String);

    impl coreb_llm::LlmGateway for Canned {
        fn complete<'a>(
            &'a self,
            request: &'a coreb_llm::ChatRequest,
        ) -> futures_util::future::BoxFuture<'a, Result<coreb_llm::Completion, coreb_llm::LlmError>>
        {
            let text = (self.0)(request);
            Box::pin(async move {
                Ok(coreb_llm::Completion {
                    key: request.key(),
                    text,
                    finish_reason: coreb_llm::FinishReason::Stop,
                    usage: Default::default(),
                    origin: coreb_llm::Origin::Endpoint,
                    provenance: coreb_llm::Provenance::Endpoint,
                })
            })
        }
    }

    #[tokio::test]
    async fn long_tests_use_the_bijection_only_when_the_output_needs_it() {
        let prompts = coreb_llm::prompt::Prompts::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../prompts"),
        )
        .unwrap();
        let long_word = "apple".repeat(500);
        let test = |i: &str, o: &str| TestCase {
            input: i.into(),
            output: o.into(),
            testtype: coreb_data::problem::TestType::Functional,
        };
        let problem = Problem {
            id: ProblemId::from_question_id("9"),
            question_title: "apples".into(),
            question_content: "Reverse the word.".into(),
            platform: Platform::Leetcode,
            question_id: "9".into(),
            contest_id: "w1".into(),
            contest_date: "2025-01-01T00:00:00".into(),
            starter_code: "class Solution:\n    def reverseWord(self, s: str) -> str:\n        "
                .into(),
            difficulty: "easy".into(),
            public_tests: vec![
                test(&format!("\"{long_word}\""), &format!("\"{long_word}\"")),
                test(&format!("\"{long_word}\""), "2500"),
            ],
            private_tests: vec![test("[1,2]", "true")],
            func_name: Some("reverseWord".into()),
            metadata: "{}".into(),
            answer: Default::default(),
        };
        let gateway = Canned(|r| {
            match r.stage {
            LlmStage::Rewrite => {
                r#"{"title": "Crates", "statement": "**Flip** the crate label.", "starter_code": "class Solution:\n    def flipLabel(self, label: str) -> str:\n        "}"#.into()
            }
            // The bijected test asks for a reference of the original, then its adaptation.
            LlmStage::Reference => {
                let user = &r.messages.last().unwrap().content;
                assert!(user.contains("Reverse the word.") && user.contains("def reverseWord") && user.contains("Write the solution only"), "{user}");
                "Here it is.\n<code>print('original')</code>".into()
            }
            LlmStage::AdaptReference => {
                let user = &r.messages.last().unwrap().content;
                assert!(user.contains("Flip the crate label.") && user.contains("def flipLabel") && user.contains("print('original')"), "{user}");
                "```python\nprint('adapted')\n```".into()
            }
            other => panic!("no test may reach the model ({other})"),
        }
        });
        let plan = ModelPlan::single("m", Default::default());
        let out = rewrite(
            &RewriteConfig::default(),
            &RewritePlans::all(plan),
            &RewritePrompts::of(&prompts),
            vec![problem.clone()],
            &gateway,
        )
        .await
        .unwrap();
        let p = &out.problems[0];
        assert_eq!(p.statement, "Flip the crate label.");
        assert_eq!(p.func_name.as_deref(), Some("flipLabel"));
        assert_eq!(p.test_origins, [TestOrigin::Bijection, TestOrigin::KeptLong, TestOrigin::Kept]);
        let perm = letter_bijection("lcb_9");
        assert_eq!(p.public_tests[0], biject_test(&problem.public_tests[0], &perm));
        assert_ne!(p.public_tests[0].input, problem.public_tests[0].input);
        assert_eq!(p.public_tests[1], problem.public_tests[1]);
        assert_eq!(p.private_tests, problem.private_tests);
        assert_eq!(
            (out.stats.tests_bijection, out.stats.tests_kept_long, out.stats.tests_kept),
            (1, 1, 1)
        );
        let reference = p.reference.as_ref().expect("a rewritten test brings a reference");
        assert_eq!(
            (reference.model.as_str(), reference.original.as_str(), reference.adapted.as_str()),
            ("m", "print('original')\n", "print('adapted')\n")
        );
        assert_eq!((out.stats.references, out.stats.references_missing), (1, 0));
    }

    #[test]
    fn a_rewritten_starter_keeps_the_signature_types() {
        let original =
            "class Solution:\n    def countWays(self, nums: List[int], k: int) -> int:\n";
        assert_eq!(
            same_signature_types(
                original,
                "class Solution:\n    def countCrates(self, crates: List[int], limit: int) -> int:\n"
            ),
            Ok(())
        );
        assert_eq!(
            same_signature_types(
                original,
                "class Solution:\n    def countCrates(self, crates: List[str], limit: int) -> int:\n"
            ),
            Err(RejectReason::SignatureChanged {
                detail: "(List[int], int) -> int became (List[str], int) -> int".into()
            })
        );
        assert!(matches!(
            same_signature_types(
                original,
                "class Solution:\n    def countCrates(self, crates, limit):\n"
            ),
            Err(RejectReason::SignatureChanged { .. })
        ));
        // Nothing to keep: a stdin problem.
        assert_eq!(same_signature_types("", ""), Ok(()));
    }

    #[test]
    fn method_names() {
        assert_eq!(
            method_name("class Solution:\n    def countWays(self, n: int) -> int:\n"),
            Some("countWays".into())
        );
        assert_eq!(method_name(""), None);
    }
}
