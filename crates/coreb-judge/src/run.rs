//! Judging a set of solutions: a [`Judging`] run, and the calls over problems in memory
//! ([`execute`], [`execute_with_progress`], [`execute_checked`]).
//!
//! A run takes the problems in the order they come, a window at a time (twice the threads, so
//! that a slow solution of one problem overlaps with the others); the window's problems are
//! re-checked ([`recheck`]), then their solutions judged on the run's pool; a problem without
//! solutions is dropped as soon as it is read. Each window comes back as its judged problems
//! ([`JudgedProblem`]: the unit the `execute` stage commits to its journal), and
//! [`Judging::output`] puts the results (and checks, by problem id) in the order of the
//! solutions whatever the order of judging, so the output does not depend on the thread count.
//!
//! Between units it reads [`coreb_base::interrupt::requested`]: once a signal has asked to
//! stop, no solution or test starts, the window running is not handed on (a test that a
//! signal reached could have a verdict the signal made), and the run returns
//! [`ExecuteError::Interrupted`]; every window handed on before stays with its caller.
//!
//! What it does NOT do: read or write tables, or keep a journal (the `execute` stage does
//! both, around a [`Judging`]).

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use coreb_data::problem::{AnswerKind, Problem, ProblemId, TestCase};
use coreb_data::solution::{Solution, SolutionId};
use coreb_data::verdict::SolutionResult;
use coreb_sandbox::{BusySlots, Sandbox};

use crate::driver::Harness;
use crate::recheck::{self, ProblemCheck, RecheckProblem, RecheckSource};
use crate::{
    Cost, ExecuteConfig, ExecuteError, ExecuteStats, Stop, Submission, judge_solution,
    prepare_fast_compiles,
};

/// What a set of solutions came to.
#[derive(Debug, Clone)]
pub struct ExecuteOutput {
    /// One result per judged solution, in input order.
    pub results: Vec<SolutionResult>,
    /// Solutions whose problem was missing or rejected whole by the re-check (listed, not
    /// judged).
    pub without_problem: Vec<SolutionId>,
    /// Counts.
    pub stats: ExecuteStats,
    /// The re-check of every problem with a changed test that a solution needed, in problem
    /// order ([`recheck`]).
    pub checks: Vec<ProblemCheck>,
    /// Solutions whose results an earlier, interrupted run had judged (handed to
    /// [`Judging::output`] as such, not judged again).
    pub resumed: usize,
}

/// One problem, judged: its re-check and the result of every one of its solutions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgedProblem {
    /// The problem.
    pub problem_id: ProblemId,
    /// The re-check of its changed tests, when it has any.
    pub check: Option<ProblemCheck>,
    /// Every one of its solutions with what judging it cost (none for a problem rejected
    /// whole by the re-check), in the order of the run's solutions.
    pub solutions: Vec<(SolutionResult, Cost)>,
}

/// The judge: every solution against its problem's tests (public, then private).
///
/// Runs on a pool of `jobs` threads (`0` = all cores); results are in input order.
pub fn execute(
    config: &ExecuteConfig,
    problems: &[Problem],
    solutions: &[Solution],
    sandbox: &Sandbox,
    jobs: usize,
) -> Result<ExecuteOutput, ExecuteError> {
    execute_with_progress(config, problems, solutions, sandbox, jobs, &|| {})
}

/// [`execute`], calling `progress` once per judged solution (from the worker threads).
pub fn execute_with_progress(
    config: &ExecuteConfig,
    problems: &[Problem],
    solutions: &[Solution],
    sandbox: &Sandbox,
    jobs: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<ExecuteOutput, ExecuteError> {
    execute_checked(config, problems, &[], solutions, sandbox, jobs, progress)
}

/// [`execute_with_progress`] after re-checking the changed tests of `recheck`'s problems
/// against their references ([`recheck::recheck`]; only problems a solution needs): no
/// solution is judged on a rejected test, and the solutions of a problem rejected whole are
/// not judged at all (listed in `without_problem`).
pub fn execute_checked(
    config: &ExecuteConfig,
    problems: &[Problem],
    recheck: &[RecheckProblem],
    solutions: &[Solution],
    sandbox: &Sandbox,
    jobs: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<ExecuteOutput, ExecuteError> {
    let judging = Judging::new(config, sandbox, solutions, jobs)?;
    let mut judged = Vec::new();
    judging.run(
        problems.iter().cloned().map(Ok),
        recheck,
        &HashSet::new(),
        progress,
        &mut |window| {
            judged.extend(window);
            Ok(())
        },
    )?;
    judging.output(judged, 0)
}

/// One run of the judge over a set of solutions: the configuration checked, each problem's
/// solutions found, a working directory of its own (removed with the run), every faster
/// compile prepared once, and the pool the solutions and their tests run on.
pub struct Judging<'a> {
    config: &'a ExecuteConfig,
    sandbox: &'a Sandbox,
    /// With idle slots: the runs that may be busy at once.
    busy: Option<BusySlots>,
    solutions: &'a [Solution],
    /// Each problem's solutions, by their index in `solutions`.
    slots_of: HashMap<&'a ProblemId, Vec<usize>>,
    root: tempfile::TempDir,
    pool: rayon::ThreadPool,
    /// Problems per window.
    window: usize,
}

impl<'a> Judging<'a> {
    /// Set up a run judging `solutions` on `jobs` threads (`0` = all cores), with `idle_slots`
    /// more where the configuration asks.
    pub fn new(
        config: &'a ExecuteConfig,
        sandbox: &'a Sandbox,
        solutions: &'a [Solution],
        jobs: usize,
    ) -> Result<Judging<'a>, ExecuteError> {
        config.validate()?;
        let mut slots_of: HashMap<&ProblemId, Vec<usize>> = HashMap::new();
        for (i, s) in solutions.iter().enumerate() {
            slots_of.entry(&s.problem_id).or_default().push(i);
        }
        let base = config.work_dir.clone().unwrap_or_else(std::env::temp_dir);
        fs_err::create_dir_all(&base)
            .map_err(|e| ExecuteError::Io { path: base.clone(), source: e })?;
        let root = tempfile::Builder::new()
            .prefix("coreb-execute-")
            .tempdir_in(&base)
            .map_err(|source| ExecuteError::Io { path: base.clone(), source })?;
        prepare_fast_compiles(config, sandbox, solutions, root.path())?;
        // With idle slots, `jobs` runs may be busy and `idle_slots` more wait beside them, each
        // on a thread of its own.
        let (threads, busy) = match config.idle_slots {
            0 => (jobs, None),
            idle => {
                let busy_runs = if jobs == 0 {
                    std::thread::available_parallelism().map_or(1, usize::from)
                } else {
                    jobs
                };
                (busy_runs + idle, Some(BusySlots::new(busy_runs)))
            }
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("coreb-execute-{i}"))
            .build()
            .map_err(|e| ExecuteError::Config(format!("thread pool: {e}")))?;
        // A window ends when its slowest solution does: with idle slots, as many problems as
        // there are threads to wait in, so that a few sleepers do not hold the cores idle.
        let window = 2 * pool.current_num_threads().max(1);
        Ok(Judging { config, sandbox, busy, solutions, slots_of, root, pool, window })
    }

    /// Whether `judged` (of an earlier run) still holds for this run's solutions: a result for
    /// exactly its solutions, in their order, or rejected whole by its re-check with none.
    pub fn holds(&self, judged: &JudgedProblem) -> bool {
        let Some(slots) = self.slots_of.get(&judged.problem_id) else {
            return false;
        };
        let whole = judged.check.as_ref().is_some_and(|c| c.rejected_whole);
        let exact = judged.solutions.len() == slots.len()
            && judged
                .solutions
                .iter()
                .zip(slots)
                .all(|((r, _), &slot)| r.solution_id == self.solutions[slot].id);
        (whole && judged.solutions.is_empty()) || (!whole && exact)
    }

    /// Judge `problems` as they come (see the module doc), skipping those in `skip` (judged
    /// already), those without solutions and repeats, and hand each window's judged problems,
    /// in the order they came, to `each` before the next window starts. `progress` is called
    /// once per judged solution (from the worker threads).
    pub fn run(
        &self,
        problems: impl Iterator<Item = Result<Problem, ExecuteError>>,
        recheck: &(impl RecheckSource + ?Sized),
        skip: &HashSet<ProblemId>,
        progress: &(dyn Fn() + Sync),
        each: &mut dyn FnMut(Vec<JudgedProblem>) -> Result<(), ExecuteError>,
    ) -> Result<(), ExecuteError> {
        let mut seen: HashSet<ProblemId> = HashSet::new();
        let mut windows = 0usize;
        let mut judge_window = |batch: &mut Vec<Problem>| -> Result<(), ExecuteError> {
            if batch.is_empty() {
                return Ok(());
            }
            coreb_base::interrupt::check()?;
            let (done, window_checks) = self.window(batch, recheck, windows, progress)?;
            windows += 1;
            let mut by_slot: HashMap<usize, Judged> = done.into_iter().collect();
            let mut check_of: HashMap<ProblemId, ProblemCheck> = window_checks
                .into_iter()
                .filter_map(|c| c.tests.first().map(|t| t.problem_id.clone()).map(|id| (id, c)))
                .collect();
            let mut judged = Vec::with_capacity(batch.len());
            for p in batch.iter() {
                let check = check_of.remove(&p.id);
                let whole = check.as_ref().is_some_and(|c| c.rejected_whole);
                let mut results = Vec::new();
                for slot in self.slots_of[&p.id].iter().filter(|_| !whole) {
                    match by_slot.remove(slot) {
                        Some(result) => results.push(result?),
                        None => {
                            return Err(ExecuteError::Recheck(format!(
                                "solution `{}` was not judged",
                                self.solutions[*slot].id
                            )));
                        }
                    }
                }
                judged.push(JudgedProblem { problem_id: p.id.clone(), check, solutions: results });
            }
            // A window that a signal reached is not handed on: its verdicts could be the signal's.
            coreb_base::interrupt::check()?;
            each(judged)?;
            batch.clear();
            Ok(())
        };
        let mut batch = Vec::with_capacity(self.window);
        for problem in problems {
            let problem = problem?;
            if !self.slots_of.contains_key(&problem.id)
                || skip.contains(&problem.id)
                || !seen.insert(problem.id.clone())
            {
                continue;
            }
            batch.push(problem);
            if batch.len() >= self.window {
                judge_window(&mut batch)?;
            }
        }
        judge_window(&mut batch)
    }

    /// The run's output from its judged problems (those `resumed` solutions among them judged
    /// by an earlier run): results in the order of the solutions (those never judged, without
    /// a problem or of a problem rejected whole, listed apart), checks by problem id, counts.
    pub fn output(
        &self,
        judged: Vec<JudgedProblem>,
        resumed: usize,
    ) -> Result<ExecuteOutput, ExecuteError> {
        let mut by_slot: Vec<Option<(SolutionResult, Cost)>> =
            (0..self.solutions.len()).map(|_| None).collect();
        let mut checks = Vec::new();
        for p in judged {
            let slots = self.slots_of.get(&p.problem_id).ok_or_else(|| {
                ExecuteError::Recheck(format!(
                    "problem `{}` has no solution to judge",
                    p.problem_id
                ))
            })?;
            for (result, slot) in p.solutions.into_iter().zip(slots) {
                by_slot[*slot] = Some(result);
            }
            checks.extend(p.check);
        }
        // The checks by problem id, whatever the order problems came in.
        checks.sort_by(|a, b| {
            a.tests.first().map(|t| &t.problem_id).cmp(&b.tests.first().map(|t| &t.problem_id))
        });
        let (results, without_problem, stats) = tally(self.solutions, by_slot);
        Ok(ExecuteOutput { results, without_problem, stats, checks, resumed })
    }

    /// Re-check the window's problems, then judge their solutions on the tests left: each
    /// solution's result by its index in `solutions`, and the window's checks.
    fn window(
        &self,
        batch: &[Problem],
        recheck: &(impl RecheckSource + ?Sized),
        index: usize,
        progress: &(dyn Fn() + Sync),
    ) -> Result<Window, ExecuteError> {
        let harnesses: Vec<Harness> = batch.iter().map(Harness::of).collect();
        let checks = self.recheck(batch, &harnesses, recheck, index)?;
        let checked: HashMap<&ProblemId, &ProblemCheck> =
            checks.iter().filter_map(|c| c.tests.first().map(|t| (&t.problem_id, c))).collect();
        // Each solution borrows its problem's tests (one pointer per test, no copies), less the
        // tests the re-check rejected; a problem rejected whole judges none of its solutions.
        let mut work: Vec<(usize, &Harness, IndexedTests, Stop, AnswerKind)> = Vec::new();
        for (p, harness) in batch.iter().zip(&harnesses) {
            let check = checked.get(&p.id);
            if check.is_some_and(|c| c.rejected_whole) {
                continue;
            }
            let rejected = check.map(|c| c.rejected()).unwrap_or_default();
            let tests: IndexedTests = tests_of(p)
                .into_iter()
                .enumerate()
                .map(|(i, t)| (i as u32, t))
                .filter(|(i, _)| !rejected.contains(i))
                .collect();
            for &slot in self.slots_of.get(&p.id).into_iter().flatten() {
                let stop = Stop::of(self.config, p.public_tests.len());
                work.push((slot, harness, tests.clone(), stop, p.answer));
            }
        }
        let done = self.pool.install(|| {
            work.par_iter()
                .map(|(slot, harness, tests, stop, answer)| {
                    // Once a signal asked to stop, no solution starts.
                    let result =
                        coreb_base::interrupt::check().map_err(ExecuteError::from).and_then(|()| {
                            let submission = Submission {
                                solution: &self.solutions[*slot],
                                harness,
                                tests,
                                stop: *stop,
                                answer: *answer,
                            };
                            judge_solution(
                                self.config,
                                self.sandbox,
                                self.busy.as_ref(),
                                &submission,
                                self.root.path(),
                                *slot,
                            )
                        });
                    if result.is_ok() {
                        progress();
                    }
                    (*slot, result)
                })
                .collect()
        });
        drop(checked);
        Ok((done, checks))
    }

    /// The re-check of the window's problems that have changed tests (in window order).
    fn recheck(
        &self,
        batch: &[Problem],
        harnesses: &[Harness],
        source: &(impl RecheckSource + ?Sized),
        index: usize,
    ) -> Result<Vec<ProblemCheck>, ExecuteError> {
        let wanted: Vec<(&Problem, &Harness)> =
            batch.iter().zip(harnesses).filter(|(p, _)| source.wants(&p.id)).collect();
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        // Only this window's original tests are loaded, and dropped with the window.
        let loaded = source.load(&wanted.iter().map(|(p, _)| &p.id).collect::<Vec<_>>())?;
        let checking: Vec<(&RecheckProblem, Vec<&TestCase>, &Harness, AnswerKind)> =
            loaded.iter().zip(&wanted).map(|(r, (p, h))| (r, tests_of(p), *h, p.answer)).collect();
        let references = self.root.path().join(format!("references-{index}"));
        fs_err::create_dir_all(&references)
            .map_err(|e| ExecuteError::Io { path: references.clone(), source: e })?;
        self.pool.install(|| {
            recheck::recheck(self.config, self.sandbox, self.busy.as_ref(), &checking, &references)
        })
    }
}

/// A solution's tests, each with its index in its problem's test list.
type IndexedTests<'a> = Vec<(u32, &'a TestCase)>;

/// A window's results (by index in `solutions`) and its problems' checks.
type Window = (Vec<(usize, Judged)>, Vec<ProblemCheck>);

/// One solution's result and what judging it cost, or the run's error.
type Judged = Result<(SolutionResult, Cost), ExecuteError>;

/// The results in the order of `solutions` (those never judged: without a problem, or of a
/// problem rejected whole) and their counts.
fn tally(
    solutions: &[Solution],
    judged: Vec<Option<(SolutionResult, Cost)>>,
) -> (Vec<SolutionResult>, Vec<SolutionId>, ExecuteStats) {
    let mut stats = ExecuteStats::default();
    let mut results = Vec::with_capacity(solutions.len());
    let mut without_problem = Vec::new();
    for (s, j) in solutions.iter().zip(judged) {
        let Some((result, cpu)) = j else {
            without_problem.push(s.id.clone());
            continue;
        };
        stats.solutions += 1;
        stats.solutions_passed += usize::from(result.passed);
        stats.tests += result.tests.len();
        stats.cpu_ms += cpu.cpu_ms;
        stats.fast_starts += usize::from(cpu.fast_start);
        stats.fast_compiles += usize::from(cpu.fast_compile);
        stats.gave_way += cpu.gave_way;
        stats.time += cpu.time;
        for t in &result.tests {
            *stats.verdicts.entry(t.verdict).or_default() += 1;
        }
        results.push(result);
    }
    stats.solutions_without_problem = without_problem.len();
    (results, without_problem, stats)
}

/// A problem's tests, public then private, borrowed.
fn tests_of(p: &Problem) -> Vec<&TestCase> {
    p.public_tests.iter().chain(&p.private_tests).collect()
}
