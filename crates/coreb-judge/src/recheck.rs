//! Re-checking rewritten tests against a reference solution (issue #12).
//!
//! `rewrite` carries a test over verbatim (`kept`, `kept_long`) or changes it (`model`,
//! `bijection`); a changed test can be wrong for the rewritten problem (a letter bijection
//! breaks a test whose answer depends on alphabetical order, a model renames inconsistently),
//! and then every correct solution fails it and becomes a false hard negative. So, for each
//! problem with a changed test and a reference ([`Reference`]: a Python program for the
//! original problem and the same program adapted to the rewrite), before any solution is
//! judged:
//!
//! 1. the reference runs on the ORIGINAL tests; if it fails one, the reference proves nothing
//!    and every test of the problem is `unchecked` (kept);
//! 2. else the adapted reference runs on the rewritten tests; if it fails a verbatim test (or
//!    does not even build) the adaptation is broken: `unchecked`, kept;
//! 3. else each changed test it fails is `rejected` (no solution is judged on it) and each it
//!    passes is `passed`; a problem left with no test is rejected whole.
//!
//! [`decide`] is that decision over the verdicts of the runs; [`recheck`] makes the runs
//! (through [`crate::judge_solution`], exactly as a generated Python solution is judged, with
//! the same [`ExecuteConfig`] limits). A reference is never compared with the generated
//! solutions: a wrong majority cannot reject a correct test.

use std::collections::BTreeSet;
use std::path::Path;

use rayon::prelude::*;

use coreb_sandbox::{BusySlots, Sandbox};

use crate::driver::Harness;
use crate::{ExecuteConfig, ExecuteError, Submission, judge_solution};
use coreb_data::problem::{AnswerKind, ProblemId, TestCase};
use coreb_data::rewritten::{Reference, TestOrigin};
use coreb_data::solution::{Language, Solution, SolutionId};
use coreb_data::verdict::{CheckOutcome, TestCheck, Verdict};

/// A problem whose tests may need re-checking: how each test was carried over, its reference
/// (if any) and its original tests (public then private).
#[derive(Debug, Clone, PartialEq)]
pub struct RecheckProblem {
    /// The problem.
    pub problem_id: ProblemId,
    /// How each rewritten test was carried over (public then private).
    pub test_origins: Vec<TestOrigin>,
    /// The reference solution.
    pub reference: Option<Reference>,
    /// The original problem's tests (public then private).
    pub original_tests: Vec<TestCase>,
    /// How the reference for the original runs (a functional problem: the original
    /// signature's driver, like any solution of it).
    pub original_harness: Harness,
}

/// Where the re-check finds, a window of problems at a time, what it needs: which problems
/// have changed tests, and for those of the window their reference and original tests. The
/// engine's source reads the original tests from `filter`'s table on demand, so that a
/// month's original tests are never all in memory at once (issue #13).
pub trait RecheckSource: Sync {
    /// Does `problem` have changed tests to re-check?
    fn wants(&self, problem: &ProblemId) -> bool;
    /// The re-check inputs of `problems` (each one `wants`), in that order.
    fn load(&self, problems: &[&ProblemId]) -> Result<Vec<RecheckProblem>, ExecuteError>;
}

/// Problems given whole, in memory (tests, small runs).
impl RecheckSource for [RecheckProblem] {
    fn wants(&self, problem: &ProblemId) -> bool {
        self.iter()
            .any(|r| &r.problem_id == problem && r.test_origins.iter().any(|o| o.rewritten()))
    }

    fn load(&self, problems: &[&ProblemId]) -> Result<Vec<RecheckProblem>, ExecuteError> {
        problems
            .iter()
            .map(|id| {
                self.iter()
                    .find(|r| &r.problem_id == *id && r.test_origins.iter().any(|o| o.rewritten()))
                    .cloned()
                    .ok_or_else(|| {
                        ExecuteError::Recheck(format!("problem `{id}` has nothing to re-check"))
                    })
            })
            .collect()
    }
}

/// What the check decided for one problem.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProblemCheck {
    /// One row per test.
    pub tests: Vec<TestCheck>,
    /// Every test was rejected: the problem is rejected whole.
    pub rejected_whole: bool,
}

impl ProblemCheck {
    /// The indices of the rejected tests.
    pub fn rejected(&self) -> BTreeSet<u32> {
        self.tests
            .iter()
            .filter(|t| t.outcome == CheckOutcome::Rejected)
            .map(|t| t.test_index)
            .collect()
    }
}

/// The runs of a reference: its verdict on each original test, and (only when it passed them
/// all) the adapted reference's verdict on each rewritten test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferenceRuns {
    /// The problem has no reference.
    Missing,
    /// The reference's verdicts on the original tests, then the adapted reference's on the
    /// rewritten ones (`None`: not run, because the reference failed an original test).
    Ran {
        /// Per original test.
        original: Vec<Verdict>,
        /// Per rewritten test.
        adapted: Option<Vec<Verdict>>,
    },
}

/// Decide every test of a problem from the runs of its reference (see the module's rules).
pub fn decide(
    problem_id: &ProblemId,
    origins: &[TestOrigin],
    runs: &ReferenceRuns,
) -> ProblemCheck {
    let all = |outcome: CheckOutcome, reason: String| ProblemCheck {
        tests: origins
            .iter()
            .enumerate()
            .map(|(i, &origin)| TestCheck {
                problem_id: problem_id.clone(),
                test_index: i as u32,
                origin,
                outcome,
                reason: reason.clone(),
            })
            .collect(),
        rejected_whole: false,
    };
    let first_failure = |verdicts: &[Verdict], which: &dyn Fn(usize) -> bool| {
        verdicts
            .iter()
            .enumerate()
            .find(|&(i, v)| which(i) && *v != Verdict::Passed)
            .map(|(i, v)| (i, *v))
    };
    let (original, adapted) = match runs {
        ReferenceRuns::Missing => {
            return all(
                CheckOutcome::Unchecked,
                "no reference solution (the model gave no usable program)".into(),
            );
        }
        ReferenceRuns::Ran { original, adapted } => (original, adapted),
    };
    if original.is_empty() {
        return all(
            CheckOutcome::Unchecked,
            "the original problem has no test to check the reference on".into(),
        );
    }
    if let Some((i, v)) = first_failure(original, &|_| true) {
        return all(
            CheckOutcome::Unchecked,
            format!("the reference fails the original: original test {i}: {v}"),
        );
    }
    let Some(adapted) = adapted.as_deref().filter(|a| a.len() == origins.len()) else {
        return all(
            CheckOutcome::Unchecked,
            "the adapted reference was not run on every rewritten test".into(),
        );
    };
    if adapted.contains(&Verdict::CompileError) {
        return all(CheckOutcome::Unchecked, "the adapted reference does not build".into());
    }
    if let Some((i, v)) = first_failure(adapted, &|i| !origins[i].rewritten()) {
        return all(
            CheckOutcome::Unchecked,
            format!("the adaptation is broken: the adapted reference fails verbatim test {i}: {v}"),
        );
    }
    let tests: Vec<TestCheck> = origins
        .iter()
        .zip(adapted)
        .enumerate()
        .map(|(i, (&origin, &v))| {
            let (outcome, reason) = match v {
                Verdict::Passed => (CheckOutcome::Passed, String::new()),
                v => (CheckOutcome::Rejected, format!("the adapted reference, which passes every original and verbatim test, gets {v}")),
            };
            TestCheck { problem_id: problem_id.clone(), test_index: i as u32, origin, outcome, reason }
        })
        .collect();
    let rejected_whole =
        !tests.is_empty() && tests.iter().all(|t| t.outcome == CheckOutcome::Rejected);
    ProblemCheck { tests, rejected_whole }
}

/// Counts of the check, from its rows (so that shard parts add up without double counting).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecheckStats {
    /// Problems with a rewritten test (checked, or left unchecked).
    pub problems: usize,
    /// Problems whose every test was decided (none unchecked).
    pub problems_checked: usize,
    /// Problems left unchecked (no reference, reference fails the original, broken adaptation).
    pub problems_unchecked: usize,
    /// Problems rejected whole (every test rejected).
    pub problems_rejected: usize,
    /// Tests of those problems the adapted reference passes.
    pub tests_passed: usize,
    /// Rewritten tests rejected.
    pub tests_rejected: usize,
    /// Tests left unchecked.
    pub tests_unchecked: usize,
    /// The problems rejected whole.
    pub rejected_problems: Vec<ProblemId>,
}

impl RecheckStats {
    /// The counts of `checks` (one [`ProblemCheck`] per problem).
    pub fn of<'a>(checks: impl IntoIterator<Item = &'a ProblemCheck>) -> Self {
        let mut s = RecheckStats::default();
        for c in checks {
            s.problems += 1;
            let count = |o: CheckOutcome| c.tests.iter().filter(|t| t.outcome == o).count();
            let unchecked = count(CheckOutcome::Unchecked);
            s.tests_passed += count(CheckOutcome::Passed);
            s.tests_rejected += count(CheckOutcome::Rejected);
            s.tests_unchecked += unchecked;
            if unchecked > 0 {
                s.problems_unchecked += 1;
            } else {
                s.problems_checked += 1;
            }
            if c.rejected_whole {
                s.problems_rejected += 1;
                if let Some(t) = c.tests.first() {
                    s.rejected_problems.push(t.problem_id.clone());
                }
            }
        }
        s.rejected_problems.sort();
        s
    }
}

/// Group check rows (as read back from a table, any order) into one [`ProblemCheck`] per
/// problem, sorted by problem and test.
pub fn group(rows: impl IntoIterator<Item = TestCheck>) -> Vec<ProblemCheck> {
    let mut by: std::collections::BTreeMap<ProblemId, std::collections::BTreeMap<u32, TestCheck>> =
        Default::default();
    for r in rows {
        by.entry(r.problem_id.clone()).or_default().insert(r.test_index, r);
    }
    by.into_values()
        .map(|tests| {
            let tests: Vec<TestCheck> = tests.into_values().collect();
            let rejected_whole =
                !tests.is_empty() && tests.iter().all(|t| t.outcome == CheckOutcome::Rejected);
            ProblemCheck { tests, rejected_whole }
        })
        .collect()
}

/// A reference program as a Python solution the judge runs like any other.
fn as_solution(problem: &ProblemId, which: &str, model: &str, code: &str) -> Solution {
    Solution {
        id: SolutionId::from_raw(format!("{problem}/reference/{which}")),
        problem_id: problem.clone(),
        model: model.to_owned(),
        language: Language::Python,
        sample: 0,
        code: code.to_owned(),
    }
}

/// Run the references of `problems` (those with a rewritten test), each with its rewritten
/// tests (public then private), the harness its rewritten solutions run in and its kind of
/// answer (outputs compared as its solutions' are: an unordered answer as a multiset, on the
/// original tests and the rewritten ones alike), and decide their tests. Problems run in parallel on the current rayon pool; the result is in the order
/// of `problems`.
pub fn recheck(
    config: &ExecuteConfig,
    sandbox: &Sandbox,
    busy: Option<&BusySlots>,
    problems: &[(&RecheckProblem, Vec<&TestCase>, &Harness, AnswerKind)],
    work_root: &Path,
) -> Result<Vec<ProblemCheck>, ExecuteError> {
    problems
        .par_iter()
        .enumerate()
        .map(|(slot, (p, rewritten_tests, rewritten_harness, answer))| {
            let Some(reference) = &p.reference else {
                return Ok(decide(&p.problem_id, &p.test_origins, &ReferenceRuns::Missing));
            };
            let verdicts = |which: &str,
                            code: &str,
                            harness: &Harness,
                            tests: &[&TestCase],
                            slot: usize|
             -> Result<Vec<Verdict>, ExecuteError> {
                let solution = as_solution(&p.problem_id, which, &reference.model, code);
                let indexed: Vec<(u32, &TestCase)> =
                    tests.iter().enumerate().map(|(i, t)| (i as u32, *t)).collect();
                let (result, _cost) = judge_solution(
                    config,
                    sandbox,
                    busy,
                    &Submission {
                        solution: &solution,
                        harness,
                        tests: &indexed,
                        stop: crate::Stop::Never,
                        answer: *answer,
                    },
                    work_root,
                    slot,
                )?;
                Ok(result.tests.iter().map(|t| t.verdict).collect())
            };
            let original_tests: Vec<&TestCase> = p.original_tests.iter().collect();
            let original = if original_tests.is_empty() {
                Vec::new()
            } else {
                verdicts(
                    "original",
                    &reference.original,
                    &p.original_harness,
                    &original_tests,
                    2 * slot,
                )?
            };
            let adapted = if !original.is_empty() && original.iter().all(|v| *v == Verdict::Passed)
            {
                Some(verdicts(
                    "adapted",
                    &reference.adapted,
                    rewritten_harness,
                    rewritten_tests,
                    2 * slot + 1,
                )?)
            } else {
                None
            };
            Ok(decide(&p.problem_id, &p.test_origins, &ReferenceRuns::Ran { original, adapted }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use CheckOutcome::{Passed as P, Rejected as R, Unchecked as U};
    use TestOrigin::{Bijection, Kept, KeptLong, Model};
    use Verdict::{CompileError, Passed, WrongAnswer};

    fn outcomes(c: &ProblemCheck) -> Vec<CheckOutcome> {
        c.tests.iter().map(|t| t.outcome).collect()
    }

    fn ran(original: &[Verdict], adapted: Option<&[Verdict]>) -> ReferenceRuns {
        ReferenceRuns::Ran {
            original: original.to_vec(),
            adapted: adapted.map(<[Verdict]>::to_vec),
        }
    }

    #[test]
    fn a_rewritten_test_the_adapted_reference_fails_is_rejected() {
        let id = ProblemId::from_question_id("1");
        let origins = [Kept, Bijection, Bijection, Model, KeptLong];
        let c = decide(
            &id,
            &origins,
            &ran(
                &[Passed, Passed],
                Some(&[Passed, WrongAnswer, Passed, Verdict::RuntimeError, Passed]),
            ),
        );
        assert_eq!(outcomes(&c), [P, R, P, R, P]);
        assert_eq!(c.rejected(), BTreeSet::from([1, 3]));
        assert!(!c.rejected_whole);
        assert!(
            c.tests[1].reason.contains("wrong_answer")
                && c.tests[3].reason.contains("runtime_error"),
            "{:?}",
            c.tests
        );
        assert_eq!(c.tests[3].origin, Model);
    }

    #[test]
    fn a_reference_that_fails_the_original_proves_nothing() {
        let id = ProblemId::from_question_id("1");
        let c = decide(&id, &[Kept, Model], &ran(&[Passed, WrongAnswer], None));
        assert_eq!(outcomes(&c), [U, U]);
        assert!(
            c.tests[0]
                .reason
                .contains("the reference fails the original: original test 1: wrong_answer"),
            "{}",
            c.tests[0].reason
        );
        assert!(c.rejected().is_empty());
        let c = decide(&id, &[Model], &ReferenceRuns::Missing);
        assert_eq!(outcomes(&c), [U]);
        assert!(c.tests[0].reason.contains("no reference"));
        let c = decide(&id, &[Model], &ran(&[], None));
        assert_eq!(outcomes(&c), [U]);
    }

    #[test]
    fn an_adaptation_that_breaks_a_verbatim_test_marks_the_problem_unchecked() {
        let id = ProblemId::from_question_id("1");
        let c = decide(
            &id,
            &[Kept, Model, KeptLong],
            &ran(&[Passed], Some(&[Passed, WrongAnswer, WrongAnswer])),
        );
        assert_eq!(outcomes(&c), [U, U, U]);
        assert!(
            c.tests[1].reason.contains("adaptation is broken")
                && c.tests[1].reason.contains("verbatim test 2"),
            "{}",
            c.tests[1].reason
        );
        // One that does not build proves nothing either, verbatim tests or not.
        let c =
            decide(&id, &[Model, Bijection], &ran(&[Passed], Some(&[CompileError, CompileError])));
        assert_eq!(outcomes(&c), [U, U]);
        // Runs that do not cover the tests decide nothing.
        let c = decide(&id, &[Model, Bijection], &ran(&[Passed], Some(&[Passed])));
        assert_eq!(outcomes(&c), [U, U]);
    }

    #[test]
    fn a_problem_left_without_tests_is_rejected_whole_and_counted() {
        let id = ProblemId::from_question_id("1");
        let whole =
            decide(&id, &[Model, Bijection], &ran(&[Passed], Some(&[WrongAnswer, WrongAnswer])));
        assert!(whole.rejected_whole);
        let fine = decide(
            &ProblemId::from_question_id("2"),
            &[Kept, Model],
            &ran(&[Passed], Some(&[Passed, Passed])),
        );
        let unchecked =
            decide(&ProblemId::from_question_id("3"), &[Kept, Model], &ReferenceRuns::Missing);
        let s = RecheckStats::of([&whole, &fine, &unchecked]);
        assert_eq!(
            (
                s.problems,
                s.problems_checked,
                s.problems_unchecked,
                s.problems_rejected,
                s.tests_passed,
                s.tests_rejected,
                s.tests_unchecked
            ),
            (3, 2, 1, 1, 2, 2, 2)
        );
        assert_eq!(s.rejected_problems, [id]);
        // Rows read back in any order group into the same checks.
        let mut rows: Vec<TestCheck> =
            [&unchecked, &whole, &fine].iter().flat_map(|c| c.tests.clone()).collect();
        rows.reverse();
        assert_eq!(group(rows), [whole, fine, unchecked]);
    }
}
