//! `execute`: every solution judged in the sandbox, with the toolchains the build's preflight
//! found ([`super::judge`]). The toolchain versions are part of `execute`'s key (a changed
//! compiler or interpreter re-judges everything) and of its summary, which the release copies
//! into its MANIFEST with the per-language time limits.
//!
//! Judged problems are committed as each window finishes to the journal of this run
//! (`artifacts/.journal/execute`, [`coreb_stages::execute::journal`]): after SIGINT, SIGTERM or
//! `kill -9` the same command judges only what was not committed, and the record counts
//! what it took (`local.solutions_resumed`) and judged (`local.solutions_judged`).
//!
//! The summary holds only what the inputs determine; what a run measured (CPU time) or where
//! it ran (isolation, memory bound) is kept outside the fingerprint, so that downstream stages
//! are not re-run for a re-measurement.

use std::collections::BTreeMap;
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
use coreb_judge::{ExecuteConfig, ExecuteError, ExecuteStats, ToolchainVersions};
use coreb_stages::execute::Hooks;
use coreb_stages::execute::journal::{DirJournal, Journal};

use coreb_judge::Verdict;
use serde::{Deserialize, Serialize};

use super::context::{PartFacts, StageContext, StageOutput};
use super::judge::Judge;
use super::stage::{Done, Stage, StageReport, Upstream};
use super::stage_name::StageName;
use super::summary::{Counts, Reasons, StageFacts, Summary, TimeLimits};
use crate::artifacts::{StageRecord, input_key};
use crate::manifest::RunPlan;
use crate::shard::PartMarker;

/// Per language: the time-limit multiplier and the resulting test-run limits (for the
/// MANIFEST).
fn time_limits(plan: &RunPlan) -> BTreeMap<String, TimeLimits> {
    let config = &plan.stages.execute;
    plan.stages
        .generate
        .languages
        .iter()
        .map(|&l| {
            let t = config.toolchain(l);
            (
                l.as_str().to_owned(),
                TimeLimits {
                    time_multiplier: t.time_multiplier,
                    cpu_time_ms: t.limits.cpu_time_ms,
                    wall_time_ms: t.limits.wall_time_ms,
                },
            )
        })
        .collect()
}

/// The stage key: its configuration, each language's resolved recipe (so that a changed
/// default command or limit re-judges), the toolchain versions, the upstream fingerprints.
fn key(
    config: &ExecuteConfig,
    versions: &ToolchainVersions,
    upstream: &[&StageRecord],
) -> anyhow::Result<String> {
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
    fn open(
        cx: &StageContext,
        filter: &StageRecord,
        rewrite: &StageRecord,
    ) -> anyhow::Result<TableRecheck> {
        let originals = cx.output(filter, "problems")?;
        let mut refs: std::collections::HashMap<ProblemId, ReferenceRow> =
            read_references(&cx.output(rewrite, "references")?)?
                .into_iter()
                .filter(|r| r.test_origins.iter().any(|o| o.rewritten()))
                .map(|r| (r.problem_id.clone(), r))
                .collect();
        let mut wanted = std::collections::HashMap::new();
        if !refs.is_empty() {
            for (row, p) in
                coreb_data::tables::ProblemReader::open_without_test_bodies(&originals)?.enumerate()
            {
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
        let at = |id: &ProblemId| {
            self.wanted.get(id).ok_or_else(|| {
                ExecuteError::Recheck(format!("problem `{id}` has nothing to re-check"))
            })
        };
        let mut rows =
            problems.iter().map(|id| at(id).map(|(_, row)| *row)).collect::<Result<Vec<_>, _>>()?;
        rows.sort_unstable();
        rows.dedup();
        let mut originals: std::collections::HashMap<ProblemId, Problem> =
            coreb_data::tables::problems::read_rows(&self.originals, &rows)?
                .into_iter()
                .map(|p| (p.id.clone(), p))
                .collect();
        problems
            .iter()
            .map(|id| {
                let (r, _) = at(id)?;
                let original = originals.remove(*id).ok_or_else(|| {
                    ExecuteError::Recheck(format!("problem `{id}` asked for twice in one window"))
                })?;
                let original_harness = Harness::of(&original);
                let original_tests =
                    original.public_tests.into_iter().chain(original.private_tests).collect();
                Ok(RecheckProblem {
                    problem_id: r.problem_id.clone(),
                    test_origins: r.test_origins.clone(),
                    reference: r.reference.clone(),
                    original_tests,
                    original_harness,
                })
            })
            .collect()
    }
}

/// The `execute` stage: every solution (a whole run), the solutions of this process's slice (a
/// shard process: `--shard i/N`, by solution id hash), or the verdicts of complete shard
/// parts combined in the solutions' order (a merge: nothing is judged again). Before judging,
/// the tests `rewrite` changed are re-checked against each problem's reference
/// (`test_checks.parquet`, counts under `test_check` in the summary and the MANIFEST).
pub(crate) struct Execute;

/// What `execute`'s summary records of its counts: outcomes only ([`ExecuteStats`] less the CPU
/// time and the runs that gave way, measurements kept in [`ExecuteLocal`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ExecuteCounts {
    /// Solutions judged.
    pub(crate) solutions: usize,
    /// Solutions that passed every test.
    pub(crate) solutions_passed: usize,
    /// Solutions whose problem was not among the problems given (not judged).
    solutions_without_problem: usize,
    /// Tests run (or marked compile_error).
    pub(crate) tests: usize,
    /// Tests per verdict.
    pub(crate) verdicts: BTreeMap<Verdict, usize>,
    /// Solutions whose tests ran with their language's faster start; omitted while none did.
    #[serde(default, skip_serializing_if = "is_zero")]
    fast_starts: usize,
    /// Solutions compiled with their language's faster compile; omitted while none were.
    #[serde(default, skip_serializing_if = "is_zero")]
    fast_compiles: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl ExecuteCounts {
    /// The outcomes of `stats`.
    fn of(stats: &ExecuteStats) -> ExecuteCounts {
        let ExecuteStats {
            solutions,
            solutions_passed,
            solutions_without_problem,
            tests,
            verdicts,
            cpu_ms: _,
            fast_starts,
            fast_compiles,
            gave_way: _,
            time: _,
        } = stats;
        ExecuteCounts {
            solutions: *solutions,
            solutions_passed: *solutions_passed,
            solutions_without_problem: *solutions_without_problem,
            tests: *tests,
            verdicts: verdicts.clone(),
            fast_starts: *fast_starts,
            fast_compiles: *fast_compiles,
        }
    }
}

/// `execute`'s summary: what was judged and passed, the re-check of changed tests, and what the
/// verdicts depend on (configuration, toolchain versions, time limits).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ExecuteSummary {
    /// Solutions given, judged, and without their problem (not judged).
    #[serde(flatten)]
    pub(crate) rows: Counts,
    /// Solutions that passed every test.
    pub(crate) passed: u64,
    /// Its counts.
    pub(crate) stats: ExecuteCounts,
    /// The re-check of the tests `rewrite` changed.
    pub(crate) test_check: RecheckStats,
    /// `[stages.execute]`.
    pub(crate) parameters: ExecuteConfig,
    /// Each language's programs and their versions.
    pub(crate) toolchains: ToolchainVersions,
    /// Each language's time limits.
    pub(crate) time_limits: BTreeMap<String, TimeLimits>,
}

impl Summary for ExecuteSummary {
    fn counts(&self) -> Counts {
        self.rows
    }

    fn passed(&self) -> Option<u64> {
        Some(self.passed)
    }

    fn reasons(&self) -> Reasons {
        Reasons::Counts(vec![("passed", self.passed), ("rejected", self.rows.rejected)])
    }

    fn facts(&self) -> Option<StageFacts> {
        Some(StageFacts {
            toolchains: Some(self.toolchains.clone()),
            time_limits: Some(self.time_limits.clone()),
            test_check: Some(self.test_check.clone()),
            ..StageFacts::of(&self.parameters)
        })
    }
}

/// What `execute`'s record keeps outside its fingerprint: where it ran and what it measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ExecuteLocal {
    /// The sandbox's isolation, in words.
    pub(crate) isolation: String,
    /// What held the memory of a run.
    pub(crate) memory_bound: coreb_sandbox::MemoryBound,
    /// CPU time of every sandboxed program, ms.
    pub(crate) cpu_ms: u64,
    /// Test runs that gave their core to the next run while they waited.
    tests_gave_way: usize,
    /// Where judging's time went (compiles, test runs, time limits waited out).
    #[serde(default)]
    pub(crate) judging: coreb_judge::JudgingTime,
    /// Solutions this run judged (absent in a merge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    solutions_judged: Option<usize>,
    /// Solutions taken from an interrupted run's journal (absent in a merge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    solutions_resumed: Option<usize>,
    /// A shard process's part: what the merge adds up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) part: Option<PartCounts>,
}

/// What a part of `execute` adds to the merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PartCounts {
    /// Its counts.
    pub(crate) stats: ExecuteStats,
    /// Its solutions without their problem.
    without_problem: Vec<SolutionId>,
}

impl Stage for Execute {
    const NAME: StageName = StageName::Execute;
    type Summary = ExecuteSummary;
    type Local = ExecuteLocal;
    /// The key, for the journal.
    type Prepared = String;

    fn key(&self, cx: &StageContext, up: &Upstream<'_>) -> anyhow::Result<(String, String)> {
        let judge = cx.judge()?;
        let upstream = [
            up.record(StageName::Filter)?,
            up.record(StageName::Rewrite)?,
            up.record(StageName::Generate)?,
        ];
        let key = key(&cx.plan().stages.execute, &judge.versions, &upstream)?;
        Ok((key.clone(), key))
    }

    fn run(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        key: String,
        out: &StageOutput,
    ) -> anyhow::Result<Done<ExecuteSummary, ExecuteLocal>> {
        let stage = StageName::Execute;
        let config = &cx.plan().stages.execute;
        let judge = cx.judge()?;
        let (filter, rewrite) = (up.record(StageName::Filter)?, up.record(StageName::Rewrite)?);
        let mut solutions =
            read_solutions(&cx.output(up.record(StageName::Generate)?, "solutions")?)?;
        solutions.retain(|s| cx.handles(stage, s.id.as_str()));
        // Problems stream from their table: only those being judged are in memory. Each is
        // compared by the kind of answer `filter` decided from its original statement.
        let answers = answers_of(cx, filter)?;
        let problems = coreb_data::tables::ProblemReader::open(&cx.output(rewrite, "problems")?)?
            .map(move |p| {
                p.map(|mut p| {
                    if let Some(answer) = answers.get(&p.id) {
                        p.answer = *answer;
                    }
                    p
                })
                .map_err(ExecuteError::from)
            });
        let recheck = TableRecheck::open(cx, filter, rewrite)?;
        let journal = DirJournal::open(&journal_dir(cx), &key)?;
        let bar = cx.printer().progress(Some(solutions.len() as u64), "execute", false);
        let hooks = Hooks { progress: &|| bar.inc(1), journal: &journal };
        let listening = coreb_base::interrupt::listen();
        let judged = coreb_stages::execute::execute_resumable(
            config,
            problems,
            &recheck,
            &solutions,
            &judge.sandbox,
            cx.plan().jobs,
            &hooks,
        );
        drop(listening);
        bar.finish_and_clear();
        let output = match judged {
            Ok(output) => output,
            Err(ExecuteError::Interrupted(signal)) => {
                let _ = std::fs::remove_dir_all(out.path(""));
                let kept: usize = journal.committed()?.iter().map(|p| p.solutions.len()).sum();
                return Err(anyhow::Error::new(signal).context(format!(
                    "execute stopped by {}: {kept} of {} solutions judged are kept in `{}`; run the same command again (`{}`) to judge the other {}",
                    signal.name(),
                    solutions.len(),
                    journal.dir().display(),
                    cx.plan().rerun(),
                    solutions.len() - kept,
                )));
            }
            Err(e) => return Err(e.into()),
        };
        if output.resumed > 0 {
            cx.printer().status(format!(
                "{:>10}: {} solutions judged by an interrupted run were kept (`{}`), {} judged now",
                "execute",
                output.resumed,
                journal.dir().display(),
                output.results.len() - output.resumed
            ));
        }
        write_verdicts(&out.path("verdicts.parquet"), &output.results)?;
        let rows: Vec<TestCheck> =
            output.checks.iter().flat_map(|c| c.tests.iter().cloned()).collect();
        write_test_checks(&out.path("test_checks.parquet"), &rows)?;
        let judged_now = output.results.len() - output.resumed;
        let mut done = done(
            cx,
            judge,
            solutions.len(),
            output.stats,
            output.without_problem,
            &output.checks,
            out,
        );
        // What this run judged, and what it took from an interrupted one's journal.
        done.local.solutions_judged = Some(judged_now);
        done.local.solutions_resumed = Some(output.resumed);
        // Once committed, the journal's work is in the stage's output.
        done.on_commit = Some(Box::new(move || Ok(journal.remove()?)));
        Ok(done)
    }

    fn merge(
        &self,
        cx: &StageContext,
        up: &Upstream<'_>,
        _key: String,
        parts: Vec<(PathBuf, PartMarker)>,
        out: &StageOutput,
    ) -> anyhow::Result<Done<ExecuteSummary, ExecuteLocal>> {
        let solutions = read_solutions(&cx.output(up.record(StageName::Generate)?, "solutions")?)?;
        let (stats, without_problem, checks) = merge_parts(
            &solutions,
            &parts,
            &out.path("verdicts.parquet"),
            &out.path("test_checks.parquet"),
        )?;
        Ok(done(cx, cx.judge()?, solutions.len(), stats, without_problem, &checks, out))
    }

    fn announce(&self, cx: &StageContext, report: &StageReport) {
        announce_check(cx, report);
    }
}

/// `execute`'s summary and local facts, from its counts over `solutions` solutions.
fn done(
    cx: &StageContext,
    judge: &Judge,
    solutions: usize,
    stats: ExecuteStats,
    without_problem: Vec<SolutionId>,
    checks: &[ProblemCheck],
    out: &StageOutput,
) -> Done<ExecuteSummary, ExecuteLocal> {
    let plan = cx.plan();
    let summary = ExecuteSummary {
        rows: Counts {
            rows_in: solutions as u64,
            rows_out: stats.solutions as u64,
            rejected: without_problem.len() as u64,
        },
        passed: stats.solutions_passed as u64,
        stats: ExecuteCounts::of(&stats),
        test_check: RecheckStats::of(checks),
        parameters: plan.stages.execute.clone(),
        toolchains: judge.versions.clone(),
        time_limits: time_limits(plan),
    };
    // Measurements, not outcomes: kept out of the fingerprinted summary.
    let local = ExecuteLocal {
        isolation: judge.sandbox.isolation().to_string(),
        memory_bound: judge.sandbox.memory_bound(),
        cpu_ms: stats.cpu_ms,
        tests_gave_way: stats.gave_way,
        judging: stats.time,
        solutions_judged: None,
        solutions_resumed: None,
        part: out.is_part().then(|| PartCounts { stats: stats.clone(), without_problem }),
    };
    Done::new(
        &[("verdicts", "verdicts.parquet"), ("test_checks", "test_checks.parquet")],
        summary,
        local,
    )
}

/// The kind of answer of each problem that is not exact, as `filter` decided it from the
/// original statement (its `answers.jsonl`; none in a record from before it existed).
fn answers_of(
    cx: &StageContext,
    filter: &StageRecord,
) -> anyhow::Result<std::collections::HashMap<ProblemId, coreb_data::problem::AnswerKind>> {
    #[derive(serde::Deserialize)]
    struct Row {
        id: ProblemId,
        answer: coreb_data::problem::AnswerKind,
    }
    if !filter.outputs.contains_key("answers") {
        return Ok(Default::default());
    }
    Ok(coreb_base::jsonl::read::<Row>(&cx.output(filter, "answers")?)?
        .into_iter()
        .map(|r| (r.id, r.answer))
        .collect())
}

/// Where this process's run of `execute` commits judged problems as it goes
/// ([`coreb_stages::execute::journal`]): `artifacts/.journal/execute`, or one directory per shard.
fn journal_dir(cx: &StageContext) -> PathBuf {
    let name = match cx.slice_of(StageName::Execute) {
        Some(slice) => format!("execute-{}", crate::shard::part_name(slice)),
        None => "execute".to_owned(),
    };
    cx.store().stage_dir(".journal").join(name)
}

/// The build's line about the re-check of changed tests (from the stage's summary).
fn announce_check(cx: &StageContext, report: &StageReport) {
    let Ok(summary) = report.summary_as::<ExecuteSummary>() else {
        return;
    };
    let check = &summary.test_check;
    if check.problems == 0 {
        return;
    }
    let path = cx
        .output(&report.record, "test_checks")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    cx.printer().status(format!(
        "{:>10}: changed tests re-checked against a reference for {} problems: {} passed, {} rejected, {} unchecked; {} problems unchecked, {} rejected whole  ({path})",
        "execute", check.problems, check.tests_passed, check.tests_rejected, check.tests_unchecked, check.problems_unchecked, check.problems_rejected,
    ));
}

/// Combine the verdicts of complete parts into `out`, in the order of `solutions` (the order
/// one process writes), and their re-check rows into `checks_out` (a problem several parts
/// checked once: the check is deterministic); add up their counts.
fn merge_parts(
    solutions: &[Solution],
    parts: &[(PathBuf, PartMarker)],
    out: &Path,
    checks_out: &Path,
) -> anyhow::Result<(ExecuteStats, Vec<SolutionId>, Vec<ProblemCheck>)> {
    let mut stats = ExecuteStats::default();
    let mut by_id = std::collections::HashMap::new();
    let mut without = std::collections::HashSet::new();
    let mut check_rows = Vec::new();
    for (dir, marker) in parts {
        let local: ExecuteLocal = serde_json::from_value(PartFacts::of(marker)?.local)
            .with_context(|| format!("`{}`: the part's counts", dir.join("_SUCCESS").display()))?;
        let facts = local
            .part
            .with_context(|| format!("`{}`: the part's marker has no counts", dir.display()))?;
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
            anyhow::bail!(
                "no shard part judged solution `{}`: the parts do not cover the solutions of `generate` (rerun the shards)",
                s.id.as_str()
            );
        }
    }
    anyhow::ensure!(
        by_id.is_empty() && without.is_empty(),
        "the shard parts judged solutions that `generate` did not write (rerun the shards)"
    );
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
        let versions = |gpp: &str| -> ToolchainVersions {
            [(Language::Cpp, [("g++".to_owned(), gpp.to_owned())].into_iter().collect())]
                .into_iter()
                .collect()
        };
        let before = key(&config, &versions("g++ (Debian 12.2.0-14) 12.2.0"), &[]).unwrap();
        assert_eq!(before, key(&config, &versions("g++ (Debian 12.2.0-14) 12.2.0"), &[]).unwrap());
        assert_ne!(
            before,
            key(&config, &versions("g++ (Debian 12.2.0-14+deb12u1) 12.2.0"), &[]).unwrap()
        );
        let mut slower = config.clone();
        slower.python.time_multiplier = Some(5.0);
        assert_ne!(before, key(&slower, &versions("g++ (Debian 12.2.0-14) 12.2.0"), &[]).unwrap());
        // Issue #34: the faster starts re-judge (their switch is part of the key).
        let mut reused = config.clone();
        reused.reuse.insert(Language::Ruby);
        assert_ne!(before, key(&reused, &versions("g++ (Debian 12.2.0-14) 12.2.0"), &[]).unwrap());
    }
}
