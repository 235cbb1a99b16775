//! `execute`: the stage that judges every generated solution against its problem's tests, by
//! the judge of [`coreb_judge`] (toolchains, drivers, comparison, the re-check of changed
//! tests, and the judging itself live there).
//!
//! What the stage adds ([`execute_resumable`]): problems streamed from their table (only the
//! problems being judged are in memory, never the whole month's tests, so memory does not
//! grow with the number of problems or solutions, issue #13), and resuming: each window of
//! judged problems is committed to a [`journal`] as it finishes, and the problems a journal
//! holds from an earlier, interrupted run of the same inputs are not judged again. [`execute_tables`]`(problems.parquet, solutions.parquet,
//! verdicts.parquet, &config, &sandbox, jobs)` is the one-call form over tables (benches,
//! tests), returning the stats for the `--json` summary (`rows_in` = solutions, `rows_out` =
//! judged, `rejected` = `without_problem`).
//!
//! What it does NOT do: judge anything itself ([`coreb_judge::Judging`] does), or find the
//! build's inputs (the engine reads the artifact store and writes the verdicts and checks).

pub mod journal;

use std::collections::HashSet;
use std::path::Path;

use coreb_data::problem::{Problem, ProblemId};
use coreb_data::solution::{Solution, SolutionId};
use coreb_judge::recheck::{RecheckProblem, RecheckSource};
use coreb_judge::{
    ExecuteConfig, ExecuteError, ExecuteOutput, ExecuteStats, JudgedProblem, Judging,
};
use coreb_sandbox::Sandbox;

/// What a resumable run reports to, and commits to.
pub struct Hooks<'a> {
    /// Called once per judged solution (from the worker threads).
    pub progress: &'a (dyn Fn() + Sync),
    /// Where each window's judged problems are committed, and where an earlier run's are
    /// found ([`journal`]).
    pub journal: &'a dyn journal::Journal,
}

/// [`coreb_judge::execute_checked`] over problems read one at a time (a table reader), with
/// the re-check's inputs from `recheck` (read a window at a time), resuming: the problems
/// `hooks.journal` holds from an earlier run of the same inputs are not judged again (their
/// results and checks are taken as committed), and each window's problems are committed to it
/// as the window finishes ([`journal::NoJournal`]: nothing is kept).
///
/// Between units the judge reads [`coreb_base::interrupt::requested`]: once a signal has
/// asked to stop, no solution or test starts, the window running is not committed (a test
/// that a signal reached could have a verdict the signal made), and the run returns
/// [`ExecuteError::Interrupted`]; every window finished before stays committed.
pub fn execute_resumable(
    config: &ExecuteConfig,
    problems: impl Iterator<Item = Result<Problem, ExecuteError>>,
    recheck: &(impl RecheckSource + ?Sized),
    solutions: &[Solution],
    sandbox: &Sandbox,
    jobs: usize,
    hooks: &Hooks<'_>,
) -> Result<ExecuteOutput, ExecuteError> {
    let judging = Judging::new(config, sandbox, solutions, jobs)?;
    // What an earlier run committed: taken as judged, and its problems skipped.
    let mut judged = resume(hooks.journal.committed()?, &judging);
    let resumed: usize = judged.iter().map(|p| p.solutions.len()).sum();
    (0..resumed).for_each(|_| (hooks.progress)());
    let done: HashSet<ProblemId> = judged.iter().map(|p| p.problem_id.clone()).collect();
    judging.run(problems, recheck, &done, hooks.progress, &mut |window| {
        hooks.journal.commit(&window)?;
        judged.extend(window);
        Ok(())
    })?;
    judging.output(judged, resumed)
}

/// The committed problems that still hold for the run's solutions ([`Judging::holds`]), each
/// once. Anything else (a journal of other solutions) is judged again.
fn resume(committed: Vec<JudgedProblem>, judging: &Judging<'_>) -> Vec<JudgedProblem> {
    let mut taken = HashSet::new();
    committed
        .into_iter()
        .filter(|p| judging.holds(p) && taken.insert(p.problem_id.clone()))
        .collect()
}

/// What [`execute_tables`] did.
#[derive(Debug, Clone)]
pub struct ExecuteTablesReport {
    /// Counts.
    pub stats: ExecuteStats,
    /// Solutions whose problem was missing.
    pub without_problem: Vec<SolutionId>,
    /// The isolation the sandbox achieved.
    pub isolation: String,
}

/// The one-call form over tables (benches, tests): read the problems and solutions tables,
/// judge (calling `progress` once per judged solution), write the verdicts table atomically.
pub fn execute_tables(
    problems: &Path,
    solutions: &Path,
    out: &Path,
    config: &ExecuteConfig,
    sandbox: &Sandbox,
    jobs: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<ExecuteTablesReport, ExecuteError> {
    let solutions = coreb_data::tables::solutions::read_solutions(solutions)?;
    let problems =
        coreb_data::tables::ProblemReader::open(problems)?.map(|p| p.map_err(ExecuteError::from));
    let hooks = Hooks { progress, journal: &journal::NoJournal };
    let output = execute_resumable(
        config,
        problems,
        &[] as &[RecheckProblem],
        &solutions,
        sandbox,
        jobs,
        &hooks,
    )?;
    coreb_data::tables::verdicts::write_verdicts(out, &output.results)?;
    Ok(ExecuteTablesReport {
        stats: output.stats,
        without_problem: output.without_problem,
        isolation: sandbox.isolation().to_string(),
    })
}
