//! The model audit: pass@1 of a model endpoint on each problem of a release as it was
//! published by its platform (original statement, original tests) and as CoREB rewrote it
//! (rewritten statement, rewritten tests), per contest month and overall. A model that has
//! seen the originals in training tends to solve them more often than their counterfactual
//! rewrites; the drop is the contamination signal CoREB reports per window.
//!
//! This module is the audit's own part: its options ([`ModelOptions`], checked into the LLM
//! settings by [`llm_config`]), the release's problems paired with their rewrites
//! ([`pair`], [`as_original`]), the count of each version's samples ([`tally`]), pass@1 per
//! problem, per window and overall ([`rows`]) and the report ([`ModelReport`],
//! [`markdown`]). Running it, which asks the endpoint through the `generate` stage and judges
//! the answers with `coreb_judge`, is the binary's (`coreb::ops::model_audit`): this crate
//! sits below the build's stages. pass@1 per problem is the unbiased estimator over the N
//! samples, `c / n` (1 − C(n−c, 1) / C(n, 1)); a window's pass@1 is the mean over its problems.
//!
//! Samples the endpoint gave no answer for (retries exhausted, request rejected) are
//! `unanswered`: left out of `n` and reported, and the command exits 1 so that a rerun fills
//! them in. An answer without code, or one cut by `length`/`content_filter`, is the model's
//! failure and counts as a failed sample. Does NOT compare models or languages in one run,
//! nor judge whether the rewritten tests are right (the rewrite audit and the build do).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::bail;
#[cfg(feature = "clap")]
use clap::Args;
use coreb_data::problem::Problem;
use coreb_data::rewritten::{RewrittenProblem, TestOrigin};
use coreb_data::solution::{Language, SolutionId};
use coreb_data::verdict::SolutionResult;
use coreb_eval::run::ClientOptions;
use coreb_http::RetryConfig;
use coreb_llm::run::{RejectReason, Rejection};
use coreb_llm::{LlmConfig, LlmFailureKind, SamplingParams, StoreMode};
use serde::Serialize;

use super::month;

/// What the model audit asks, of which endpoint, and how (the flags of `coreb audit … model`).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(Args))]
pub struct ModelOptions {
    /// Base URL of the OpenAI-compatible chat-completions endpoint, with `/v1`
    /// (`http://127.0.0.1:8000/v1`).
    #[cfg_attr(feature = "clap", arg(long))]
    pub endpoint: String,
    /// The model to audit, as the endpoint names it.
    #[cfg_attr(feature = "clap", arg(long))]
    pub model: String,
    /// The language solutions are written in.
    #[cfg_attr(feature = "clap", arg(long, default_value = "python", value_parser = parse_language))]
    pub language: Language,
    /// Samples per problem and version (pass@1 is the unbiased estimate over them).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1))]
    pub samples: u32,
    /// Sampling temperature.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0.2))]
    pub temperature: f64,
    /// Most tokens per answer.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 4096))]
    pub max_tokens: u32,
    /// Seed sent with sample 0 (sample `s` gets `seed + s`).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0))]
    pub seed: u64,
    /// Prompt templates (default: the build manifest's `prompts_dir`).
    #[cfg_attr(feature = "clap", arg(long))]
    pub prompts_dir: Option<PathBuf>,
    /// Worker threads for execution (default: all cores). Results do not depend on it.
    #[cfg_attr(feature = "clap", arg(long))]
    pub jobs: Option<usize>,
    /// How requests reach the endpoint.
    #[cfg_attr(feature = "clap", command(flatten))]
    pub client: ClientOptions,
}

/// `--language`: a language CoREB generates solutions in.
#[cfg(feature = "clap")]
fn parse_language(s: &str) -> Result<Language, String> {
    Language::parse(s)
        .ok_or_else(|| format!("`{s}`: one of {}", Language::ALL.map(|l| l.as_str()).join(", ")))
}

/// pass@1 of one problem in one version.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SidePass {
    /// Samples asked for.
    pub samples: u32,
    /// Samples the endpoint answered (`n`).
    pub answered: u32,
    /// Samples whose program passed every test (`c`).
    pub passed: u32,
    /// `c / n`; `None` when nothing was answered.
    pub pass_at_1: Option<f64>,
}

/// One problem: original against rewritten.
#[derive(Debug, Clone, Serialize)]
pub struct ProblemPass {
    /// The problem.
    pub problem_id: String,
    /// Its contest month (`YYYY-MM`).
    pub window: String,
    /// The original statement with the original tests.
    pub original: SidePass,
    /// The rewritten statement with the rewritten tests.
    pub rewritten: SidePass,
    /// pass@1 original − pass@1 rewritten (`None` when either side has no answer).
    pub drop: Option<f64>,
}

/// pass@1 of a window (or of the whole release).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowPass {
    /// `YYYY-MM`, or `all`.
    pub window: String,
    /// Problems counted (answered on both sides).
    pub problems: usize,
    /// Problems left out because a side got no answer.
    pub excluded: usize,
    /// Mean pass@1 on the originals.
    pub pass_at_1_original: f64,
    /// Mean pass@1 on the rewrites.
    pub pass_at_1_rewritten: f64,
    /// Original − rewritten.
    pub drop: f64,
    /// Drop / original (`None` when the original pass@1 is 0).
    pub relative_drop: Option<f64>,
}

/// The model audit.
#[derive(Debug, Clone, Serialize)]
pub struct ModelReport {
    /// The release.
    pub release: String,
    /// The model audited.
    pub model: String,
    /// The endpoint asked.
    pub endpoint: String,
    /// The language of the solutions.
    pub language: Language,
    /// Samples per problem and version.
    pub samples: u32,
    /// Sampling parameters.
    pub sampling: SamplingParams,
    /// sha256 of the `generate` prompt.
    pub prompt_sha256: String,
    /// Per contest month, in order.
    pub windows: Vec<WindowPass>,
    /// Over every problem.
    pub overall: WindowPass,
    /// Per problem, in id order.
    pub problems: Vec<ProblemPass>,
    /// Samples without an answer (left out of pass@1; the command exits 1).
    pub unanswered: u32,
}

/// The unbiased pass@1 estimate over `n` samples of which `c` passed: 1 − C(n−c, 1)/C(n, 1)
/// = `c / n` (Chen et al., 2021); `None` without samples.
pub fn pass_at_1(n: u32, c: u32) -> Option<f64> {
    (n > 0).then(|| f64::from(c.min(n)) / f64::from(n))
}

/// Means of the problems of one window.
fn window(name: String, rows: &[&ProblemPass]) -> WindowPass {
    let both: Vec<(f64, f64)> =
        rows.iter().filter_map(|r| Some((r.original.pass_at_1?, r.rewritten.pass_at_1?))).collect();
    let n = both.len();
    let mean = |f: fn(&(f64, f64)) -> f64| {
        if n == 0 { 0.0 } else { both.iter().map(f).sum::<f64>() / n as f64 }
    };
    let (o, r) = (mean(|p| p.0), mean(|p| p.1));
    WindowPass {
        window: name,
        problems: n,
        excluded: rows.len() - n,
        pass_at_1_original: o,
        pass_at_1_rewritten: r,
        drop: o - r,
        relative_drop: (o > 0.0).then(|| (o - r) / o),
    }
}

/// An original problem in the shape `generate` takes: its own statement and tests.
pub fn as_original(p: &Problem) -> RewrittenProblem {
    RewrittenProblem {
        id: p.id.clone(),
        title: p.question_title.clone(),
        statement: p.question_content.clone(),
        starter_code: p.starter_code.clone(),
        func_name: p.func_name.clone(),
        platform: p.platform,
        difficulty: p.difficulty.clone(),
        contest_date: p.contest_date.clone(),
        public_tests: p.public_tests.clone(),
        private_tests: p.private_tests.clone(),
        model: String::new(),
        test_origins: vec![TestOrigin::Kept; p.test_count()],
        reference: None,
    }
}

/// Every release problem with its rewrite, in id order; a problem without one is an error
/// (the artifact belongs to another build).
pub fn pair(
    originals: Vec<Problem>,
    rewritten: Vec<RewrittenProblem>,
    build_dir: &Path,
) -> anyhow::Result<Vec<(Problem, RewrittenProblem)>> {
    let mut by_id: BTreeMap<String, RewrittenProblem> =
        rewritten.into_iter().map(|r| (r.id.as_str().to_owned(), r)).collect();
    let mut pairs = Vec::new();
    let mut missing = Vec::new();
    for p in originals {
        match by_id.remove(p.id.as_str()) {
            Some(r) => pairs.push((p, r)),
            None => missing.push(p.id.as_str().to_owned()),
        }
    }
    if !missing.is_empty() {
        bail!(
            "the rewrite artifact in `{}` lacks {} problems of the release ({}): it was not built from this release's manifest",
            build_dir.join("artifacts/rewrite").display(),
            missing.len(),
            missing.join(", ")
        );
    }
    pairs.sort_by(|a, b| a.0.id.as_str().cmp(b.0.id.as_str()));
    Ok(pairs)
}

/// Count answered and passing samples per problem of one version: `rejected`, the samples
/// `generate` could not make (only those the endpoint did not answer are left out of `n`; an
/// answer without code, or one cut by length or the content filter, is the model's failure),
/// and `results`, the judge's verdicts on the others.
pub fn tally(
    problems: &[(Problem, RewrittenProblem)],
    model: &str,
    language: Language,
    samples: u32,
    rejected: &[Rejection],
    results: &[SolutionResult],
) -> BTreeMap<String, SidePass> {
    let mut owner: HashMap<String, String> = HashMap::new();
    let mut sides: BTreeMap<String, SidePass> = BTreeMap::new();
    for (p, _) in problems {
        for s in 0..samples {
            owner.insert(
                SolutionId::new(&p.id, model, language, s).as_str().to_owned(),
                p.id.as_str().to_owned(),
            );
        }
        sides.insert(
            p.id.as_str().to_owned(),
            SidePass { samples, answered: samples, ..Default::default() },
        );
    }
    for r in rejected {
        // No code, or an answer cut by length or the content filter: the model failed.
        let models_fault = match &r.reason {
            RejectReason::Llm { failure } => {
                matches!(failure.kind, LlmFailureKind::Truncated | LlmFailureKind::ContentFilter)
            }
            _ => true,
        };
        if let (false, Some(side)) =
            (models_fault, owner.get(&r.item).and_then(|id| sides.get_mut(id)))
        {
            side.answered -= 1;
        }
    }
    for result in results {
        if let (true, Some(side)) = (result.passed, sides.get_mut(result.problem_id.as_str())) {
            side.passed += 1;
        }
    }
    for side in sides.values_mut() {
        side.pass_at_1 = pass_at_1(side.answered, side.passed);
    }
    sides
}

/// The LLM settings of the audit, validated, from the options.
pub fn llm_config(args: &ModelOptions) -> anyhow::Result<LlmConfig> {
    let endpoint = args.endpoint.trim_end_matches('/');
    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
        bail!("`--endpoint`: not an http(s) URL: `{}`", args.endpoint);
    }
    if args.client.concurrency == 0 || args.client.max_attempts == 0 || args.samples == 0 {
        bail!("`--concurrency`, `--max-attempts` and `--samples` must be at least 1");
    }
    if !(0.0..=2.0).contains(&args.temperature) {
        bail!("`--temperature`: `{}` is outside 0–2", args.temperature);
    }
    let config = LlmConfig {
        base_url: endpoint.to_owned(),
        api_key_env: args.client.api_key_env.clone(),
        mode: if args.client.replay { StoreMode::Replay } else { StoreMode::Live },
        model: args.model.clone(),
        sampling: SamplingParams {
            temperature: args.temperature,
            top_p: 1.0,
            max_tokens: args.max_tokens,
            seed: Some(args.seed),
        },
        concurrency: args.client.concurrency,
        timeout_secs: args.client.timeout_secs,
        retry: RetryConfig { max_attempts: args.client.max_attempts, ..RetryConfig::default() },
        ..LlmConfig::default()
    };
    config.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(config)
}

/// The rows of a [`ModelReport`] from the tallies of both versions ([`tally`]).
#[derive(Debug, Clone)]
pub struct Rows {
    /// Per problem, in the order of the pairs.
    pub problems: Vec<ProblemPass>,
    /// Per contest month, in order.
    pub windows: Vec<WindowPass>,
    /// Over every problem.
    pub overall: WindowPass,
    /// Samples without an answer.
    pub unanswered: u32,
}

/// Per problem, per contest month and overall, from each version's tally ([`tally`]) of the
/// release's `pairs` ([`pair`]).
pub fn rows(
    pairs: &[(Problem, RewrittenProblem)],
    mut original: BTreeMap<String, SidePass>,
    mut rewritten: BTreeMap<String, SidePass>,
) -> Rows {
    let problems: Vec<ProblemPass> = pairs
        .iter()
        .map(|(p, _)| {
            let id = p.id.as_str();
            let (o, r) =
                (original.remove(id).unwrap_or_default(), rewritten.remove(id).unwrap_or_default());
            let drop = o.pass_at_1.zip(r.pass_at_1).map(|(o, r)| o - r);
            ProblemPass {
                problem_id: id.to_owned(),
                window: month(&p.contest_date),
                original: o,
                rewritten: r,
                drop,
            }
        })
        .collect();
    let mut by_window: BTreeMap<&str, Vec<&ProblemPass>> = BTreeMap::new();
    for p in &problems {
        by_window.entry(p.window.as_str()).or_default().push(p);
    }
    let windows = by_window.iter().map(|(w, rows)| window((*w).to_owned(), rows)).collect();
    let overall = window("all".into(), &problems.iter().collect::<Vec<_>>());
    let unanswered = problems
        .iter()
        .map(|p| {
            (p.original.samples - p.original.answered)
                + (p.rewritten.samples - p.rewritten.answered)
        })
        .sum();
    Rows { problems, windows, overall, unanswered }
}

fn rate(x: Option<f64>) -> String {
    x.map_or_else(|| "–".to_owned(), |x| format!("{x:.3}"))
}

/// The report in Markdown.
pub fn markdown(r: &ModelReport) -> String {
    let mut md = format!(
        "# Model audit: `{}` on `{}`\n\n{} solutions, {} samples per problem and version, temperature {}; endpoint `{}`.\n\
         pass@1 on the original problems (original tests) against their counterfactual rewrites (rewritten tests). \
         A model that solves the originals markedly more often than the rewrites has likely seen them.\n\n\
         | window | problems | pass@1 original | pass@1 rewritten | drop | relative drop |\n|---|---:|---:|---:|---:|---:|\n",
        r.model,
        r.release,
        r.language.versioned_name(),
        r.samples,
        r.sampling.temperature,
        r.endpoint
    );
    for w in r.windows.iter().chain(std::iter::once(&r.overall)) {
        let name = if w.window == "all" { "**all**".to_owned() } else { w.window.clone() };
        let excluded =
            if w.excluded > 0 { format!(" (+{} unanswered)", w.excluded) } else { String::new() };
        md.push_str(&format!(
            "| {name} | {}{excluded} | {:.3} | {:.3} | {:+.3} | {} |\n",
            w.problems,
            w.pass_at_1_original,
            w.pass_at_1_rewritten,
            w.drop,
            w.relative_drop.map_or_else(|| "–".to_owned(), |d| format!("{:+.1}%", d * 100.0))
        ));
    }
    md.push_str("\n## Per problem\n\n| problem | window | original passed/answered | rewritten passed/answered | pass@1 original | pass@1 rewritten | drop |\n|---|---|---:|---:|---:|---:|---:|\n");
    for p in &r.problems {
        md.push_str(&format!(
            "| `{}` | {} | {}/{} | {}/{} | {} | {} | {} |\n",
            p.problem_id,
            p.window,
            p.original.passed,
            p.original.answered,
            p.rewritten.passed,
            p.rewritten.answered,
            rate(p.original.pass_at_1),
            rate(p.rewritten.pass_at_1),
            p.drop.map_or_else(|| "–".to_owned(), |d| format!("{d:+.3}"))
        ));
    }
    if r.unanswered > 0 {
        md.push_str(&format!(
            "\n{} samples got no answer from the endpoint and are left out of pass@1.\n",
            r.unanswered
        ));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(window: &str, o: Option<f64>, r: Option<f64>) -> ProblemPass {
        let side = |p: Option<f64>| SidePass {
            samples: 2,
            answered: if p.is_some() { 2 } else { 0 },
            passed: 0,
            pass_at_1: p,
        };
        ProblemPass {
            problem_id: "x".into(),
            window: window.into(),
            original: side(o),
            rewritten: side(r),
            drop: None,
        }
    }

    #[test]
    fn pass_at_1_is_the_share_of_passing_samples() {
        assert_eq!(pass_at_1(0, 0), None);
        assert_eq!(pass_at_1(4, 0), Some(0.0));
        assert_eq!(pass_at_1(4, 1), Some(0.25));
        assert_eq!(pass_at_1(3, 3), Some(1.0));
        // 1 - C(n-c,1)/C(n,1) for n = 5, c = 2.
        assert!((pass_at_1(5, 2).unwrap() - (1.0 - 3.0 / 5.0)).abs() < 1e-15);
    }

    #[test]
    fn windows_average_problems_answered_on_both_sides() {
        let rows = [
            row("2025-01", Some(1.0), Some(0.5)),
            row("2025-01", Some(0.5), Some(0.5)),
            row("2025-01", Some(1.0), None),
        ];
        let w = window("2025-01".into(), &rows.iter().collect::<Vec<_>>());
        assert_eq!((w.problems, w.excluded), (2, 1));
        assert_eq!((w.pass_at_1_original, w.pass_at_1_rewritten, w.drop), (0.75, 0.5, 0.25));
        assert_eq!(w.relative_drop, Some(0.25 / 0.75));
        let zero = window("z".into(), &[&row("z", Some(0.0), Some(0.5))]);
        assert_eq!((zero.drop, zero.relative_drop), (-0.5, None));
    }
}
