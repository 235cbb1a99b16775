//! `coreb judge`: run one solution file against the tests of one LiveCodeBench problem in the
//! sandbox, print a verdict per test and a summary. Exit 0 when every test passes, 1 when
//! not (2 on errors), so scripts can use it as a check.

use std::process::ExitCode;

use anyhow::{Context, bail};
use coreb_data::problem::Problem;
use coreb_data::solution::{Language, Solution, SolutionId};
use coreb_judge::{ExecuteConfig, execute};
use coreb_sandbox::Sandbox;
use coreb_stages::ingest::{IngestConfig, decode_row};

use crate::cli::{JudgeArgs, LangArg};
use crate::printer::Printer;

pub(crate) fn language(arg: LangArg) -> Language {
    match arg {
        LangArg::Python => Language::Python,
        LangArg::Cpp => Language::Cpp,
        LangArg::Java => Language::Java,
        LangArg::Go => Language::Go,
        LangArg::Ruby => Language::Ruby,
    }
}

/// The first row of `path`, or the row whose `question_id` (or `lcb_` id) is `wanted`.
fn find_problem(path: &std::path::Path, wanted: Option<&str>) -> anyhow::Result<Problem> {
    let config = IngestConfig::default();
    for line in coreb_base::jsonl::lines(path)? {
        let line = line?;
        let problem = decode_row(line.text.as_bytes(), &config).with_context(|| line.at(path))?;
        match wanted {
            None => return Ok(problem),
            Some(w) if problem.question_id == w || problem.id.as_str() == w => return Ok(problem),
            Some(_) => {}
        }
    }
    match wanted {
        Some(w) => Err(coreb_base::errors::Usage(format!(
            "`{}`: no problem with question_id `{w}` (`--problem-id`)",
            path.display()
        ))
        .into()),
        None => bail!("`{}`: no problems", path.display()),
    }
}

/// Run `coreb judge`.
pub(crate) fn judge(args: JudgeArgs) -> anyhow::Result<ExitCode> {
    let JudgeArgs { problem, solution, lang, problem_id, json } = args;
    let printer = Printer::new(json);
    let mut problem = find_problem(&problem, problem_id.as_deref())?;
    // Compared as the statement asks: an answer it says may be in any order, as a multiset.
    problem.answer = coreb_stages::answer::decide(&problem.question_content).answer;
    let code = fs_err::read_to_string(&solution)?;
    let language = language(lang);
    let solution = Solution {
        id: SolutionId::new(&problem.id, "local", language, 0),
        problem_id: problem.id.clone(),
        model: "local".into(),
        language,
        sample: 0,
        code,
    };
    let config = ExecuteConfig::default();
    let sandbox = Sandbox::new(config.sandbox.clone()).context("setting up the sandbox")?;
    coreb_judge::toolchain_versions(&config, &sandbox, &[language])
        .context("checking the toolchain")?;
    let output = execute(
        &config,
        std::slice::from_ref(&problem),
        std::slice::from_ref(&solution),
        &sandbox,
        0,
    )
    .context("judging")?;
    let Some(result) = output.results.into_iter().next() else {
        bail!("problem `{}` was not judged", problem.id);
    };
    let passed_n =
        result.tests.iter().filter(|t| t.verdict == coreb_judge::Verdict::Passed).count();
    for t in &result.tests {
        printer.status(format_args!(
            "test {:>3}: {:<13} {:>6} ms wall {:>6} ms cpu {:>8} KiB",
            t.index,
            t.verdict.as_str(),
            t.wall_ms,
            t.cpu_ms,
            t.peak_memory_kb
        ));
    }
    if !result.message.is_empty() {
        printer.status(format_args!("{}", result.message.trim_end()));
    }
    printer.status(format_args!(
        "{}: {} {}/{} tests passed ({}; outputs compared: {})",
        problem.id,
        if result.passed { "PASSED" } else { "FAILED" },
        passed_n,
        result.tests.len(),
        sandbox.isolation(),
        result.comparison.as_str()
    ));
    printer.json_line(&serde_json::json!({
        "problem_id": problem.id.as_str(),
        "language": language.as_str(),
        "passed": result.passed,
        "pass_rate": result.pass_rate,
        "tests": result.tests,
        "message": result.message,
        "comparison": result.comparison,
        "isolation": sandbox.isolation().to_string(),
    }));
    Ok(if result.passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
