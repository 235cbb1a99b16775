//! What judging a solution found: the [`Verdict`] of each test ([`TestResult`]) and of the
//! solution as a whole ([`SolutionResult`]). The `execute` stage makes them, the verdicts table
//! (`tables::verdicts`) stores them, the engine's `qrels` runner reads them; none of those is
//! needed to name them (so `execute` and `tables` do not import each other).

use serde::{Deserialize, Serialize};

use crate::problem::{AnswerKind, ProblemId};
use crate::solution::{Language, SolutionId};

/// What held the memory of a solution's runs, as the verdicts table records it (the judge
/// passes on its sandbox's).
pub use coreb_base::bound::MemoryBound;

/// How one test (or a solution that does not compile) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Output matches.
    Passed,
    /// Ran fine, output differs.
    WrongAnswer,
    /// CPU or wall-clock limit.
    TimeLimit,
    /// Ran out of memory.
    MemoryLimit,
    /// Non-zero exit or a signal.
    RuntimeError,
    /// The solution did not compile (every test gets this verdict).
    CompileError,
    /// Wrote more than the output limit.
    OutputLimit,
    /// Not run: the solution had already failed a test that ends its judging (any test with
    /// `stages.execute.mode = "labels"`, a public one with
    /// `stages.execute.skip_private_after_public_failure`).
    NotRun,
}

impl Verdict {
    /// Every verdict, in a fixed order.
    pub const ALL: [Verdict; 8] = [
        Verdict::Passed,
        Verdict::WrongAnswer,
        Verdict::TimeLimit,
        Verdict::MemoryLimit,
        Verdict::RuntimeError,
        Verdict::CompileError,
        Verdict::OutputLimit,
        Verdict::NotRun,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::WrongAnswer => "wrong_answer",
            Verdict::TimeLimit => "time_limit",
            Verdict::MemoryLimit => "memory_limit",
            Verdict::RuntimeError => "runtime_error",
            Verdict::CompileError => "compile_error",
            Verdict::OutputLimit => "output_limit",
            Verdict::NotRun => "not_run",
        }
    }

    /// Parse the snake_case name.
    pub fn parse(s: &str) -> Option<Self> {
        Verdict::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

coreb_base::display_as_str!(Verdict);

/// The result of one test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// Index of the test (public tests first, then private).
    pub index: u32,
    /// The verdict.
    pub verdict: Verdict,
    /// Wall-clock time, ms.
    pub wall_ms: u64,
    /// CPU time, ms.
    pub cpu_ms: u64,
    /// Peak resident memory, KiB.
    pub peak_memory_kb: u64,
    /// What the program printed, when the test is a `wrong_answer` (never the output itself):
    /// `qrels` compares the wrong outputs of a problem's solutions to find answers the
    /// statement did not say could differ (`coreb_stages::ambiguity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrong_output: Option<WrongOutput>,
}

/// The output of a test judged `wrong_answer`, as a digest: two solutions that printed the
/// same answer (as the judge compares answers: whitespace, number spelling, a JSON value's
/// layout, an unordered answer's order do not matter) have the same digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrongOutput {
    /// The sha256 (hex) of the output's canonical form (`coreb_judge::compare::canonical`).
    pub sha256: String,
    /// The output is laid out as another answer to the same test could be: the expected
    /// output holds several items (tokens; a functional answer: an array's elements or a
    /// string's characters) and this one as many, alike (as many lines, each with as many
    /// tokens; an array as long, a string as long). A count, a sum or a `Yes` never is.
    pub alternative: bool,
}

/// The result of one solution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SolutionResult {
    /// The solution.
    pub solution_id: SolutionId,
    /// Its problem.
    pub problem_id: ProblemId,
    /// The model that wrote it.
    pub model: String,
    /// Its language.
    pub language: Language,
    /// Every test passed (and there was at least one).
    pub passed: bool,
    /// Share of tests passed (0 when there are none).
    pub pass_rate: f64,
    /// One result per test, in test order.
    pub tests: Vec<TestResult>,
    /// Compiler output of a compile error, or stderr of the first failing test (truncated).
    pub message: String,
    /// What bounded the memory of its runs (a cgroup of its own, or per-process rlimits).
    pub memory_bound: MemoryBound,
    /// How its outputs were compared: its problem's kind of answer (`unordered`: as a
    /// multiset).
    #[serde(default, skip_serializing_if = "AnswerKind::is_exact")]
    pub comparison: AnswerKind,
    /// Why judging stopped, when a failing test ended it: with `stages.execute.mode =
    /// "labels"` the solution's first failing test, with the public-test gate the public test
    /// that held back the private ones (the tests after it in the order judged are `not_run`).
    /// `None` for a solution judged on every test, or on none (a compile error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
}

/// The test whose failure ended the judging of a solution: with `stages.execute.mode =
/// "labels"` its first failing test (in the order judged: public tests, then the private ones
/// by decreasing input size), with `skip_private_after_public_failure` the first failing
/// public test. A solution that stopped did not pass, exactly as it would not have had every
/// test run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stopped {
    /// The test's index (public tests first, then private).
    pub index: u32,
    /// Its verdict (never `passed` or `not_run`).
    pub verdict: Verdict,
}

/// What the re-check of a rewritten problem's tests against its reference solution found for
/// one test (see `coreb_judge::recheck`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcome {
    /// The adapted reference passes it.
    Passed,
    /// A rewritten test the adapted reference fails while it passes every original test and
    /// every verbatim one: no solution is judged on it.
    Rejected,
    /// Not decided (no reference, the reference fails the original, the adaptation is
    /// broken): the test is kept.
    Unchecked,
}

impl CheckOutcome {
    /// Every outcome.
    pub const ALL: [CheckOutcome; 3] =
        [CheckOutcome::Passed, CheckOutcome::Rejected, CheckOutcome::Unchecked];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckOutcome::Passed => "passed",
            CheckOutcome::Rejected => "rejected",
            CheckOutcome::Unchecked => "unchecked",
        }
    }

    /// Parse the snake_case name.
    pub fn parse(s: &str) -> Option<Self> {
        CheckOutcome::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

coreb_base::display_as_str!(CheckOutcome);

/// One test of a re-checked problem: how it was carried over and what the check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCheck {
    /// The problem.
    pub problem_id: ProblemId,
    /// Index of the test (public tests first, then private), as in the verdicts.
    pub test_index: u32,
    /// How `rewrite` carried it over.
    pub origin: crate::rewritten::TestOrigin,
    /// What the check found.
    pub outcome: CheckOutcome,
    /// Why (empty for a passed test).
    pub reason: String,
}
