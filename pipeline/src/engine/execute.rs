//! Runs `execute`, and the build's toolchain preflight.
//!
//! Before any stage of a build that reaches `execute` runs, [`preflight`] sets up the sandbox
//! and asks every program the manifest's languages (`stages.generate.languages`) need for its
//! version, inside the sandbox. A missing one stops the build at once, naming the Debian
//! package to install and the manifest key that drops the language — instead of failing half
//! way through `execute`. The versions are part of `execute`'s key (a changed compiler or
//! interpreter re-judges everything) and of its summary, which the release copies into its
//! MANIFEST with the per-language time limits.
//!
//! Judged problems are committed as each window finishes to the journal of this run
//! (`artifacts/.journal/execute`, [`stages::execute::journal`]): after SIGINT, SIGTERM or
//! `kill -9` the same command judges only what was not committed, and the record counts
//! what it took (`local.solutions_resumed`) and judged (`local.solutions_judged`).
//!
//! The summary holds only what the inputs determine; what a run measured (CPU time) or where
//! it ran (isolation, memory bound) is kept outside the fingerprint, so that downstream stages
//! are not re-run for a re-measurement.

use std::path::{Path, PathBuf};

use anyhow::Context;
use coreb_data::problem::{Problem, ProblemId};
use coreb_data::solution::{Language, Solution, SolutionId};
use coreb_data::tables::references::{ReferenceRow, read_references};
use coreb_data::tables::solutions::read_solutions;
use coreb_data::tables::test_checks::{read_test_checks, write_test_checks};
use coreb_data::tables::verdicts::{read_verdicts, write_verdicts};
use coreb_data::verdict::TestCheck;
use coreb_judge::driver::Harness;
use coreb_judge::recheck::{ProblemCheck, RecheckProblem, RecheckSource, RecheckStats};
use coreb_judge::{ExecuteConfig, ExecuteError, ExecuteStats, ToolchainVersions, toolchain_versions};
use coreb_sandbox::Sandbox;
use stages::execute::Hooks;
use stages::execute::journal::{DirJournal, Journal};

use super::{Engine, StageOutput, StageReport};
use crate::artifacts::{StageRecord, input_key};
use crate::engine::shard::PartMarker;
use crate::engine::stage::StageName;
use crate::manifest::RunPlan;

/// The sandbox of a build and the toolchains it found.
#[derive(Debug)]
pub struct Judge {
    /// The sandbox every solution runs in.
    pub sandbox: Sandbox,
    /// Per language: program → version.
    pub versions: ToolchainVersions,
}

/// Set up the sandbox and check the toolchains of the plan's languages.
pub fn preflight(plan: &RunPlan) -> anyhow::Result<Judge> {
    let config = &plan.stages.execute;
    config.validate()?;
    let sandbox = Sandbox::new(config.sandbox.clone()).context("setting up the sandbox")?;
    let languages = &plan.stages.generate.languages;
    let versions = toolchain_versions(config, &sandbox, languages).map_err(|e| match e {
        ExecuteError::MissingToolchain { language, .. } => anyhow::anyhow!(
            "preflight: {e} (`scripts/setup` installs every toolchain the judge runs, from \
             scripts/debian-packages.txt); or remove `{language}` from `stages.generate.languages` in `{}`",
            plan.manifest_path.display()
        ),
        e => anyhow::Error::new(e).context("preflight: asking the toolchains for their versions"),
    })?;
    Ok(Judge { sandbox, versions })
}

/// Per language: the time-limit multiplier and the resulting test-run limits (for the
/// MANIFEST).
fn time_limits(plan: &RunPlan) -> serde_json::Value {
    let config = &plan.stages.execute;
    let per: serde_json::Map<String, serde_json::Value> = plan
        .stages
        .generate
        .languages
        .iter()
        .map(|&l| {
            let t = config.toolchain(l);
            let v = serde_json::json!({
                "time_multiplier": t.time_multiplier,
                "cpu_time_ms": t.limits.cpu_time_ms,
                "wall_time_ms": t.limits.wall_time_ms,
            });
            (l.as_str().to_owned(), v)
        })
        .collect();
    serde_json::Value::Object(per)
}

/// The stage key: its configuration, each language's resolved recipe (so that a changed
/// default command or limit re-judges), the toolchain versions, the upstream fingerprints.
fn key(config: &ExecuteConfig, versions: &ToolchainVersions, upstream: &[&StageRecord]) -> anyhow::Result<String> {
    let recipes: Vec<_> = Language::ALL.into_iter().map(|l| config.toolchain(l)).collect();
    input_key(StageName::Execute.as_str(), &(config, &recipes, versions), upstream)
}

/// The re-check's inputs, read from the tables a window at a time: the references of the
/// problems whose tests `rewrite` changed, and where each one's original sits in `filter`'s
/// table. Only a window's original tests are ever in memory (issue #13).
struct TableRecheck {
    /// Each problem with changed tests: its reference row and its row in `originals`.
    wanted: std::collections::HashMap<ProblemId, (ReferenceRow, usize)>,
    /// `filter`'s problems table.
    originals: PathBuf,
}

impl TableRecheck {
    fn open(engine: &Engine, filter: &StageRecord, rewrite: &StageRecord) -> anyhow::Result<TableRecheck> {
        let originals = engine.output(filter, "problems")?;
        let mut refs: std::collections::HashMap<ProblemId, ReferenceRow> = read_references(&engine.output(rewrite, "references")?)?
            .into_iter()
            .filter(|r| r.test_origins.iter().any(|o| o.rewritten()))
            .map(|r| (r.problem_id.clone(), r))
            .collect();
        let mut wanted = std::collections::HashMap::new();
        if !refs.is_empty() {
            for (row, p) in coreb_data::tables::ProblemReader::open_without_test_bodies(&originals)?.enumerate() {
                let id = p?.id;
                if let Some(r) = refs.remove(&id) {
                    wanted.insert(id, (r, row));
                }
            }
        }
        if let Some(id) = refs.keys().min() {
            anyhow::bail!("problem `{id}` of `rewrite` is not among `filter`'s problems");
        }
        Ok(TableRecheck { wanted, originals })
    }
}

impl RecheckSource for TableRecheck {
    fn wants(&self, problem: &ProblemId) -> bool {
        self.wanted.contains_key(problem)
    }

    fn load(&self, problems: &[&ProblemId]) -> Result<Vec<RecheckProblem>, ExecuteError> {
        let at = |id: &ProblemId| self.wanted.get(id).ok_or_else(|| ExecuteError::Recheck(format!("problem `{id}` has nothing to re-check")));
        let mut rows = problems.iter().map(|id| at(id).map(|(_, row)| *row)).collect::<Result<Vec<_>, _>>()?;
        rows.sort_unstable();
        rows.dedup();
        let mut originals: std::collections::HashMap<ProblemId, Problem> =
            coreb_data::tables::problems::read_rows(&self.originals, &rows)?.into_iter().map(|p| (p.id.clone(), p)).collect();
        problems
            .iter()
            .map(|id| {
                let (r, _) = at(id)?;
                let original = originals.remove(*id).ok_or_else(|| ExecuteError::Recheck(format!("problem `{id}` asked for twice in one window")))?;
                let original_harness = Harness::of(&original);
                let original_tests = original.public_tests.into_iter().chain(original.private_tests).collect();
                Ok(RecheckProblem { problem_id: r.problem_id.clone(), test_origins: r.test_origins.clone(), reference: r.reference.clone(), original_tests, original_harness })
            })
            .collect()
    }
}

/// Run `execute`: every solution (a whole run), the solutions of this process's slice (a
/// shard process: `--shard i/N`, by solution id hash), or the verdicts of complete shard
/// parts combined in the solutions' order (a merge: nothing is judged again). Before judging,
/// the tests `rewrite` changed are re-checked against each problem's reference
/// (`test_checks.parquet`, counts under `test_check` in the summary and the MANIFEST).
pub(super) fn run(engine: &Engine, filter: &StageRecord, rewrite: &StageRecord, generate: &StageRecord) -> anyhow::Result<StageReport> {
    let stage = StageName::Execute;
    let config = &engine.plan.stages.execute;
    let judge = engine.judge()?;
    let key = key(config, &judge.versions, &[filter, rewrite, generate])?;
    if let Some(hit) = engine.cached(stage, &key)? {
        announce_check(engine, &hit);
        return Ok(hit);
    }
    let parts = engine.shard_parts(stage, &key)?;
    let writer = engine.begin(stage)?;
    let mut solutions = read_solutions(&engine.output(generate, "solutions")?)?;
    let verdicts = writer.path("verdicts.parquet");
    let checks_path = writer.path("test_checks.parquet");
    // Solutions taken from the journal of an interrupted run, those judged now, and the journal.
    let mut resumed = None;
    let (stats, without_problem, checks) = match parts {
        Some(parts) => merge_parts(&solutions, &parts, &verdicts, &checks_path)?,
        None => {
            solutions.retain(|s| engine.handles(stage, s.id.as_str()));
            // Problems stream from their table: only those being judged are in memory.
            let problems = coreb_data::tables::ProblemReader::open(&engine.output(rewrite, "problems")?)?.map(|p| p.map_err(ExecuteError::from));
            let recheck = TableRecheck::open(engine, filter, rewrite)?;
            let journal = DirJournal::open(&journal_dir(engine), &key)?;
            let bar = engine.printer.progress(Some(solutions.len() as u64), "execute", false);
            let hooks = Hooks { progress: &|| bar.inc(1), journal: &journal };
            let listening = coreb_base::interrupt::listen();
            let judged = stages::execute::execute_resumable(config, problems, &recheck, &solutions, &judge.sandbox, engine.plan.jobs, &hooks);
            drop(listening);
            bar.finish_and_clear();
            let output = match judged {
                Ok(output) => output,
                Err(ExecuteError::Interrupted(signal)) => {
                    let _ = std::fs::remove_dir_all(writer.path(""));
                    let kept: usize = journal.committed()?.iter().map(|p| p.solutions.len()).sum();
                    return Err(anyhow::Error::new(signal).context(format!(
                        "execute stopped by {}: {kept} of {} solutions judged are kept in `{}`; run the same command again (`coreb build {}`) to judge the other {}",
                        signal.name(),
                        solutions.len(),
                        journal.dir().display(),
                        engine.plan.manifest_path.display(),
                        solutions.len() - kept,
                    )));
                }
                Err(e) => return Err(e.into()),
            };
            if output.resumed > 0 {
                engine.printer.status(format!(
                    "{:>10}: {} solutions judged by an interrupted run were kept (`{}`), {} judged now",
                    "execute",
                    output.resumed,
                    journal.dir().display(),
                    output.results.len() - output.resumed
                ));
            }
            write_verdicts(&verdicts, &output.results)?;
            let rows: Vec<TestCheck> = output.checks.iter().flat_map(|c| c.tests.iter().cloned()).collect();
            write_test_checks(&checks_path, &rows)?;
            resumed = Some((output.resumed, output.results.len() - output.resumed, journal));
            (output.stats, output.without_problem, output.checks)
        }
    };
    let test_check = RecheckStats::of(&checks);
    let mut stats_value = serde_json::to_value(&stats)?;
    // Measurements, not outcomes: kept out of the fingerprinted summary.
    let cpu_ms = stats_value.as_object_mut().and_then(|s| s.remove("cpu_ms")).unwrap_or_default();
    let gave_way = stats_value.as_object_mut().and_then(|s| s.remove("gave_way")).unwrap_or(serde_json::json!(0));
    let summary = serde_json::json!({
        "rows_in": solutions.len(),
        "rows_out": stats.solutions,
        "rejected": without_problem.len(),
        "passed": stats.solutions_passed,
        "stats": stats_value,
        "test_check": test_check,
        "parameters": config,
        "toolchains": judge.versions,
        "time_limits": time_limits(&engine.plan),
    });
    let mut local = serde_json::json!({
        "isolation": judge.sandbox.isolation().to_string(),
        "memory_bound": judge.sandbox.memory_bound(),
        "cpu_ms": cpu_ms,
        "tests_gave_way": gave_way,
    });
    if let (Some((kept, now, _)), Some(obj)) = (&resumed, local.as_object_mut()) {
        // What this run judged, and what it took from an interrupted one's journal.
        obj.insert("solutions_judged".into(), serde_json::json!(now));
        obj.insert("solutions_resumed".into(), serde_json::json!(kept));
    }
    if let (StageOutput::Part(..), Some(obj)) = (&writer, local.as_object_mut()) {
        // What the merge adds up.
        obj.insert("part".into(), serde_json::json!({"stats": stats, "without_problem": without_problem}));
    }
    let report = writer.commit(engine, stage, &key, &[("verdicts", "verdicts.parquet"), ("test_checks", "test_checks.parquet")], summary, local)?;
    if let Some((_, _, journal)) = resumed {
        // Committed: the journal's work is in the stage's output now.
        journal.remove()?;
    }
    announce_check(engine, &report);
    Ok(report)
}

/// Where this process's run of `execute` commits judged problems as it goes
/// ([`stages::execute::journal`]): `artifacts/.journal/execute`, or one directory per shard.
fn journal_dir(engine: &Engine) -> PathBuf {
    let name = match engine.slice_of(StageName::Execute) {
        Some(slice) => format!("execute-{}", crate::engine::shard::part_name(slice)),
        None => "execute".to_owned(),
    };
    engine.store().stage_dir(".journal").join(name)
}

/// The build's line about the re-check of changed tests (from the stage's summary).
fn announce_check(engine: &Engine, report: &StageReport) {
    let Some(check) = report.record.summary.get("test_check").and_then(|c| serde_json::from_value::<RecheckStats>(c.clone()).ok()) else { return };
    if check.problems == 0 {
        return;
    }
    let path = engine.output(&report.record, "test_checks").map(|p| p.display().to_string()).unwrap_or_default();
    engine.printer.status(format!(
        "{:>10}: changed tests re-checked against a reference for {} problems: {} passed, {} rejected, {} unchecked; {} problems unchecked, {} rejected whole  ({path})",
        "execute", check.problems, check.tests_passed, check.tests_rejected, check.tests_unchecked, check.problems_unchecked, check.problems_rejected,
    ));
}

/// What a part of `execute` adds to the merge.
#[derive(serde::Deserialize)]
struct PartFacts {
    stats: ExecuteStats,
    without_problem: Vec<SolutionId>,
}

/// Combine the verdicts of complete parts into `out`, in the order of `solutions` (the order
/// one process writes), and their re-check rows into `checks_out` (a problem several parts
/// checked once: the check is deterministic); add up their counts.
fn merge_parts(solutions: &[Solution], parts: &[(PathBuf, PartMarker)], out: &Path, checks_out: &Path) -> anyhow::Result<(ExecuteStats, Vec<SolutionId>, Vec<ProblemCheck>)> {
    let mut stats = ExecuteStats::default();
    let mut by_id = std::collections::HashMap::new();
    let mut without = std::collections::HashSet::new();
    let mut check_rows = Vec::new();
    for (dir, marker) in parts {
        let facts = marker.facts.get("local").and_then(|l| l.get("part")).cloned().with_context(|| format!("`{}`: the part's marker has no counts", dir.display()))?;
        let facts: PartFacts = serde_json::from_value(facts).with_context(|| format!("`{}`: the part's counts", dir.join("_SUCCESS").display()))?;
        stats += facts.stats;
        without.extend(facts.without_problem);
        for r in read_verdicts(&dir.join("verdicts.parquet"))? {
            by_id.insert(r.solution_id.clone(), r);
        }
        check_rows.extend(read_test_checks(&dir.join("test_checks.parquet"))?);
    }
    let mut results = Vec::with_capacity(by_id.len());
    let mut without_problem = Vec::new();
    for s in solutions {
        if let Some(r) = by_id.remove(&s.id) {
            results.push(r);
        } else if without.remove(&s.id) {
            without_problem.push(s.id.clone());
        } else {
            anyhow::bail!("no shard part judged solution `{}`: the parts do not cover the solutions of `generate` (rerun the shards)", s.id.as_str());
        }
    }
    anyhow::ensure!(by_id.is_empty() && without.is_empty(), "the shard parts judged solutions that `generate` did not write (rerun the shards)");
    write_verdicts(out, &results)?;
    let checks = coreb_judge::recheck::group(check_rows);
    let rows: Vec<TestCheck> = checks.iter().flat_map(|c| c.tests.iter().cloned()).collect();
    write_test_checks(checks_out, &rows)?;
    Ok((stats, without_problem, checks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toolchain_change_changes_the_key() {
        let config = ExecuteConfig::default();
        let versions = |gpp: &str| -> ToolchainVersions { [(Language::Cpp, [("g++".to_owned(), gpp.to_owned())].into_iter().collect())].into_iter().collect() };
        let before = key(&config, &versions("g++ (Debian 12.2.0-14) 12.2.0"), &[]).unwrap();
        assert_eq!(before, key(&config, &versions("g++ (Debian 12.2.0-14) 12.2.0"), &[]).unwrap());
        assert_ne!(before, key(&config, &versions("g++ (Debian 12.2.0-14+deb12u1) 12.2.0"), &[]).unwrap());
        let mut slower = config.clone();
        slower.python.time_multiplier = Some(5.0);
        assert_ne!(before, key(&slower, &versions("g++ (Debian 12.2.0-14) 12.2.0"), &[]).unwrap());
        // Issue #34: the faster starts re-judge (their switch is part of the key).
        let mut reused = config.clone();
        reused.reuse.insert(Language::Ruby);
        assert_ne!(before, key(&reused, &versions("g++ (Debian 12.2.0-14) 12.2.0"), &[]).unwrap());
    }
}
