//! `coreb-judge`: the judge. It compiles and runs solutions against their problem's tests in
//! the [`Sandbox`] and says what each test came to; the `execute` stage (coreb-stages), `coreb
//! judge`, `coreb programs` and the model audit all judge through it.
//!
//! Each solution is written to a directory of its own and compiled once (C++ `g++ -O2`,
//! Java `javac`, Go `go build`; a syntax check for Python and Ruby), then every test runs
//! against the result. Solutions, and the tests of each solution, run in parallel on a bounded
//! pool of `jobs` threads; results come back in input order whatever `jobs` is.
//!
//! Verdicts ([`Verdict`]): passed, wrong_answer, time_limit, memory_limit, runtime_error,
//! compile_error, output_limit. Outputs are compared by [`outputs_match`] (
//! integer tokens exactly, non-integers within 1e-6); for functional (LeetCode) tests a failed
//! textual match falls back to comparing both sides as JSON values ([`compare`]); a problem
//! whose answer may be in any order (`Problem::answer`) is compared as a multiset, and each
//! solution's result records the comparison used (`SolutionResult::comparison`); a
//! `wrong_answer` test records its output's digest ([`WrongOutput`], never the output). A solution
//! passes only if every test passes. A solution the judge cannot even write to disk (its
//! Java class name makes a file name too long, …) gets `compile_error`: one solution's
//! failure is never the run's.
//!
//! Configuration is [`ExecuteConfig`] (`[stages.execute]` of a manifest, the section the
//! judge's settings keep their name from; unknown keys are
//! errors): global `limits` and `compile_limits`, `[stages.execute.sandbox]`, and one section
//! per language (`[stages.execute.java]` …) with `compile`/`run` argv templates, `source`,
//! `env`, `prelude`, `compile_cache`, `time_multiplier` and limit overrides ([`toolchain`]);
//! `reuse` lists the languages whose tests start faster where the program cannot tell
//! ([`reuse`]: Python without `site`, Ruby without RubyGems), each test still a process of
//! its own, or compile faster (C++ with `<bits/stdc++.h>` precompiled, `javac` with a
//! class-data archive, each made once per run: [`FastCompile`]); `idle_slots` lets that many test runs beyond `jobs` wait (sleep, block) beside
//! the `jobs` busy ones, a run idle for a whole window giving its core to the next
//! ([`coreb_sandbox::BusySlots`]).
//! [`toolchain_versions`] asks each language's programs for their versions in the sandbox;
//! the engine puts them in the stage key and the MANIFEST, and fails early, naming the
//! Debian package, when one is missing.
//!
//! One solution: [`judge_solution`] (the program it runs: [`program_of`]). A set of
//! solutions: [`execute`] over problems in memory, or a [`Judging`] run that takes problems
//! as they come, a window at a time, and hands each window's judged problems back ([`run`]:
//! the `execute` stage streams its tables through one and commits each window to its
//! journal). Tests are borrowed from the problems, never copied per solution or per run.
//!
//! A functional (LeetCode) problem's solution is the solution only; the judge adds its
//! language's I/O driver, made from the problem's signature ([`signature`], [`driver`]), and
//! compiles the two as one program. A stdin problem's solution runs as written.
//!
//! Before judging, the tests `rewrite` changed are re-checked against each problem's
//! reference solution ([`recheck`], [`execute_checked`]): a changed test the adapted reference
//! fails is rejected (no solution is judged on it; verdict indices stay those of the full
//! test list), and a problem left with no test is rejected whole (its solutions are not
//! judged, like a solution without a problem).
//!
//! What it does NOT do: read or write tables, or keep a journal (the `execute` stage does),
//! inject anything into a stdin program (only a configured
//! `prelude`), or retry flaky runs. Wall and CPU times and peak memory are measured, so those columns differ
//! from run to run; verdicts do not (for programs well inside their limits).
#![deny(missing_docs)]

pub mod batch;
pub mod compare;
pub mod driver;
pub mod recheck;
pub mod reuse;
pub mod run;
pub mod signature;
pub mod toolchain;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::AddAssign;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use coreb_sandbox::{
    BOX_DIR, BusySlots, DirAccess, LimitHit, Limits, Outcome, Program, Sandbox, SandboxConfig,
    SandboxError,
};

pub use batch::BatchRun;
pub use compare::{answers_match, functional_outputs_match, outputs_match};
pub use driver::Harness;
pub use reuse::{FastCompile, FastStart};
pub use run::{
    ExecuteOutput, JudgedProblem, Judging, execute, execute_checked, execute_with_progress,
};
pub use toolchain::{
    LanguageConfig, LimitsPatch, Toolchain, ToolchainVersions, default_time_multiplier,
    java_main_class, toolchain_versions,
};

use coreb_data::problem::{AnswerKind, TestCase};
use coreb_data::solution::{Language, Solution, SolutionId};
pub use coreb_data::verdict::{SolutionResult, Stopped, TestResult, Verdict, WrongOutput};
use toolchain::fill;

fn is_false(b: &bool) -> bool {
    !*b
}

/// Errors that stop the stage (a failing solution is a verdict, not an error).
#[derive(Debug, Error)]
pub enum ExecuteError {
    /// The sandbox could not run a program (e.g. the compiler or interpreter is missing).
    #[error("solution `{solution}`: {step}")]
    Sandbox {
        /// The solution being judged.
        solution: SolutionId,
        /// `compile` or `test <n>`.
        step: String,
        /// The cause.
        #[source]
        source: SandboxError,
    },
    /// A program of a language's recipe could not be asked for its version.
    #[error("asking `{program}` for its version")]
    Version {
        /// The program.
        program: String,
        /// The cause.
        #[source]
        source: SandboxError,
    },
    /// A working directory could not be prepared.
    #[error("`{}`", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The configuration is unusable.
    #[error("`stages.execute`: {0}")]
    Config(String),
    /// A program a language needs cannot be started in the sandbox.
    #[error("`{program}` (needed for {language} solutions) is not installed or not visible in the sandbox{}", package.map(|p| format!(": install the Debian package `{p}`")).unwrap_or_default())]
    MissingToolchain {
        /// The language.
        language: Language,
        /// The program (`go`, `javac` …).
        program: String,
        /// The Debian package that provides it, when known.
        package: Option<&'static str>,
    },
    /// Reading or writing a table failed.
    #[error(transparent)]
    Table(#[from] coreb_data::tables::TableError),
    /// The inputs of the re-check of changed tests are inconsistent.
    #[error("re-checking changed tests: {0}")]
    Recheck(String),
    /// A signal asked the run to stop ([`coreb_base::interrupt`]): the windows a [`Judging`]
    /// run handed on before are kept by its caller.
    #[error(transparent)]
    Interrupted(#[from] coreb_base::interrupt::Interrupted),
}

/// Counts of one run of the judge; mergeable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecuteStats {
    /// Solutions judged.
    pub solutions: usize,
    /// Solutions that passed every test.
    pub solutions_passed: usize,
    /// Solutions whose problem was not among the problems given (not judged).
    pub solutions_without_problem: usize,
    /// Tests run (or marked compile_error).
    pub tests: usize,
    /// Tests per verdict.
    pub verdicts: BTreeMap<Verdict, usize>,
    /// CPU time of every sandboxed program (compiles and tests), ms. A measurement: it
    /// differs from run to run.
    pub cpu_ms: u64,
    /// Solutions whose tests ran with their language's faster start ([`reuse`]); omitted
    /// while none did.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fast_starts: usize,
    /// Solutions compiled with their language's faster compile ([`FastCompile`]) and not
    /// compiled again plainly; omitted while none were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fast_compiles: usize,
    /// Test runs that gave their core to the next run while they waited
    /// ([`ExecuteConfig::idle_slots`]). A measurement, like `cpu_ms`; omitted while none did.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gave_way: usize,
    /// Where judging's time went (issue #61), summed over solutions; measurements, like
    /// `cpu_ms`.
    #[serde(default)]
    pub time: JudgingTime,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Where the time of judging went, summed over solutions (issue #61): a measurement, which
/// differs from run to run and is kept out of every fingerprint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgingTime {
    /// Compile steps run (a faster compile redone plainly counts twice).
    pub compiles: usize,
    /// Their summed wall time, ms.
    pub compile_wall_ms: u64,
    /// Test runs started (each a process of its own).
    pub test_runs: usize,
    /// Their summed wall time, ms (runs that overlap count each).
    pub test_wall_ms: u64,
    /// The summed wall time of the test runs that ended at their time limit, ms: what
    /// waiting out limits cost.
    pub time_limit_wall_ms: u64,
    /// Batch runs started ([`batch`]: one a solution at most); omitted while none were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batches: usize,
    /// Tests whose outcome a batch run kept and judging read (not counted in `test_runs`);
    /// omitted while none were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub batched_tests: usize,
    /// The batch runs' summed wall time, ms; omitted while none ran.
    #[serde(default, skip_serializing_if = "is_zero_ms")]
    pub batch_wall_ms: u64,
}

fn is_zero_ms(n: &u64) -> bool {
    *n == 0
}

impl AddAssign for JudgingTime {
    fn add_assign(&mut self, o: JudgingTime) {
        self.compiles += o.compiles;
        self.compile_wall_ms += o.compile_wall_ms;
        self.test_runs += o.test_runs;
        self.test_wall_ms += o.test_wall_ms;
        self.time_limit_wall_ms += o.time_limit_wall_ms;
        self.batches += o.batches;
        self.batched_tests += o.batched_tests;
        self.batch_wall_ms += o.batch_wall_ms;
    }
}

/// What judging one solution cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cost {
    /// CPU milliseconds of its sandboxed runs (compile and tests).
    pub cpu_ms: u64,
    /// Its tests ran with the faster start of [`reuse`].
    pub fast_start: bool,
    /// It was compiled with the faster compile of [`reuse`] ([`FastCompile`]).
    pub fast_compile: bool,
    /// Its test runs that gave their core to the next run while they waited.
    pub gave_way: usize,
    /// Where its time went.
    #[serde(default)]
    pub time: JudgingTime,
}

impl AddAssign for ExecuteStats {
    fn add_assign(&mut self, other: ExecuteStats) {
        self.solutions += other.solutions;
        self.solutions_passed += other.solutions_passed;
        self.solutions_without_problem += other.solutions_without_problem;
        self.tests += other.tests;
        for (v, n) in other.verdicts {
            *self.verdicts.entry(v).or_default() += n;
        }
        self.cpu_ms += other.cpu_ms;
        self.fast_starts += other.fast_starts;
        self.fast_compiles += other.fast_compiles;
        self.gave_way += other.gave_way;
        self.time += other.time;
    }
}

/// `[stages.execute] mode`: what judging a solution is for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecuteMode {
    /// Every test runs to its own verdict (per-test verdicts and pass rates are complete).
    #[default]
    EveryTest,
    /// A solution's pass/fail only (issue #61): its tests run in [`label_order`] (public
    /// tests first, then the private ones by decreasing input size: the test most likely to
    /// fail or to run out of time early), each public test and the first private one alone,
    /// the rest in batches that double (2, 4, 8 …, each in parallel), and judging stops after
    /// the first test (or batch) that does not pass; the rest are `not_run` and the result
    /// says which test stopped it ([`coreb_data::verdict::Stopped`]). Which tests run depends
    /// on verdicts only, never on timing. A solution passes exactly when it would have passed
    /// every test, so every label is the full run's; its `pass_rate` counts the tests not run
    /// as not passed.
    Labels,
}

impl ExecuteMode {
    /// The default (`every_test`), left out of what is recorded.
    pub fn is_every_test(&self) -> bool {
        *self == ExecuteMode::EveryTest
    }

    /// `every_test` or `labels`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecuteMode::EveryTest => "every_test",
            ExecuteMode::Labels => "labels",
        }
    }
}

/// `[stages.execute]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExecuteConfig {
    /// Run a solution's private tests only when it passed every public test; otherwise they
    /// get `not_run`. A solution's grade is the same either way (it passes only if it passes
    /// every test), but a month stops paying the time limit of every private test of every
    /// slow solution: 94 % of `execute`'s test time in `bench/month` at N = 10 (issue #13).
    /// Off by default, so per-test verdicts and pass rates stay complete; omitted from the
    /// stage key and the MANIFEST while off.
    #[serde(skip_serializing_if = "is_false")]
    pub skip_private_after_public_failure: bool,
    /// What a solution's judging is for ([`ExecuteMode`]): `every_test` (the default: every
    /// test to its own verdict, for per-test pass rates) or `labels` (a solution's pass/fail
    /// only, which is all `qrels` reads: judging stops at its first failing test). Omitted
    /// from the stage key and the MANIFEST while `every_test`, so that a manifest without the
    /// key means what it meant before the key existed.
    #[serde(skip_serializing_if = "ExecuteMode::is_every_test")]
    pub mode: ExecuteMode,
    /// The languages whose tests start faster or that compile faster (issue #34, [`reuse`]):
    /// `["python", "ruby"]` start faster, `["cpp", "java"]` compile faster ([`FastCompile`]).
    /// Every test is still a process of its own with its own limits; a program that could
    /// notice the difference gets the plain command. Empty by default (the plain command
    /// everywhere) and then omitted from the stage key and the MANIFEST.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub reuse: BTreeSet<Language>,
    /// The languages whose tests of one solution first run in one process where the program
    /// cannot tell ([`batch`]: `["java"]`, one JVM with a class loader per test). A test the
    /// runner does not finish well inside its limits, and every test after it, runs as a
    /// process of its own, so every verdict other than `passed` and `wrong_answer` is a real
    /// process's. Empty by default, and then omitted from the stage key and the MANIFEST.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub batch: BTreeSet<Language>,
    /// Test runs beyond `jobs` that may be alive at once while they wait (issue #34): at most
    /// `jobs` runs are busy, and a run that has used at most a tenth of a core over a quarter
    /// of a second (a program sleeping or blocked until its wall limit) gives its core to the
    /// next run ([`BusySlots`]). Each test is still a process of its own with its own limits;
    /// only when it starts changes. A run that wakes after giving way competes with the busy
    /// ones, so at most `jobs + idle_slots` runs compete for `jobs` cores (and memory holds up
    /// to that many runs' limits). 0 (the default) runs `jobs` tests at once, and is then
    /// omitted from the stage key and the MANIFEST.
    #[serde(skip_serializing_if = "is_zero")]
    pub idle_slots: usize,
    /// Limits of every test run (languages may override).
    pub limits: Limits,
    /// Limits of every compile step (languages may override).
    pub compile_limits: Limits,
    /// Where solution directories are made (default: the system temp dir).
    pub work_dir: Option<PathBuf>,
    /// Isolation settings.
    pub sandbox: SandboxConfig,
    /// `[stages.execute.python]`.
    pub python: LanguageConfig,
    /// `[stages.execute.cpp]`.
    pub cpp: LanguageConfig,
    /// `[stages.execute.java]`.
    pub java: LanguageConfig,
    /// `[stages.execute.go]`.
    pub go: LanguageConfig,
    /// `[stages.execute.ruby]`.
    pub ruby: LanguageConfig,
}

impl Default for ExecuteConfig {
    fn default() -> Self {
        ExecuteConfig {
            limits: toolchain::test_limits(),
            compile_limits: toolchain::compile_limits(),
            work_dir: None,
            skip_private_after_public_failure: false,
            mode: ExecuteMode::EveryTest,
            reuse: BTreeSet::new(),
            batch: BTreeSet::new(),
            idle_slots: 0,
            sandbox: SandboxConfig::default(),
            python: LanguageConfig::default(),
            cpp: LanguageConfig::default(),
            java: LanguageConfig::default(),
            go: LanguageConfig::default(),
            ruby: LanguageConfig::default(),
        }
    }
}

impl ExecuteConfig {
    /// The resolved recipe of one language.
    pub fn toolchain(&self, language: Language) -> Toolchain {
        let section = match language {
            Language::Python => &self.python,
            Language::Cpp => &self.cpp,
            Language::Java => &self.java,
            Language::Go => &self.go,
            Language::Ruby => &self.ruby,
        };
        section.resolve(
            language,
            &self.limits,
            &self.compile_limits,
            self.reuse.contains(&language),
            self.batch.contains(&language),
        )
    }

    /// Check what serde cannot: non-empty run commands, non-zero limits, sane multipliers.
    pub fn validate(&self) -> Result<(), ExecuteError> {
        if self.idle_slots > MAX_IDLE_SLOTS {
            return Err(ExecuteError::Config(format!(
                "`idle_slots` is at most {MAX_IDLE_SLOTS}, not {}",
                self.idle_slots
            )));
        }
        for language in Language::ALL {
            let t = self.toolchain(language);
            if t.run.is_empty() {
                return Err(ExecuteError::Config(format!("`{language}.run` is empty")));
            }
            if self.reuse.contains(&language) {
                let (step, commands, program) = match (
                    FastStart::of(language),
                    FastCompile::of(language),
                ) {
                    (Some(fast), _) => ("run", &t.run, fast.interpreter()),
                    (None, Some(fast)) => ("compile", &t.compile, fast.compiler()),
                    (None, None) => {
                        return Err(ExecuteError::Config(format!(
                            "`reuse`: {language} has no faster start (python, ruby, cpp and java do)"
                        )));
                    }
                };
                if commands.first().map(String::as_str) != Some(program) {
                    return Err(ExecuteError::Config(format!(
                        "`reuse` names {language}, whose `{language}.{step}` does not start with `{program}`: drop {language} from `reuse` or use the default command"
                    )));
                }
            }
            if self.batch.contains(&language) {
                let Some(runner) = BatchRun::of(language) else {
                    return Err(ExecuteError::Config(format!(
                        "`batch`: {language} has no batch runner (java has)"
                    )));
                };
                if t.run.first().map(String::as_str) != Some(runner.interpreter()) {
                    return Err(ExecuteError::Config(format!(
                        "`batch` names {language}, whose `{language}.run` does not start with `{}`: drop {language} from `batch` or use the default command",
                        runner.interpreter()
                    )));
                }
            }
            if !(t.time_multiplier.is_finite()
                && t.time_multiplier > 0.0
                && t.time_multiplier <= 100.0)
            {
                return Err(ExecuteError::Config(format!(
                    "`{language}.time_multiplier` must be in (0, 100], not {}",
                    t.time_multiplier
                )));
            }
            for (what, l) in [("limits", &t.limits), ("compile_limits", &t.compile_limits)] {
                if l.cpu_time_ms == 0
                    || l.wall_time_ms == 0
                    || l.memory_mb == 0
                    || l.processes == 0
                    || l.open_files < 4
                {
                    return Err(ExecuteError::Config(format!(
                        "`{language}.{what}`: a limit is zero (or open_files < 4)"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// The most [`ExecuteConfig::idle_slots`]: each is a thread and, at worst, a run's memory.
pub const MAX_IDLE_SLOTS: usize = 64;

/// How much stderr a result keeps in its message.
const MESSAGE_BYTES: usize = 2000;

fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut end = text.len().min(MESSAGE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Signs in stderr that a program died of memory exhaustion under RLIMIT_DATA.
const OOM_MARKERS: [&str; 9] = [
    "MemoryError",
    "std::bad_alloc",
    "OutOfMemoryError",
    "insufficient memory",
    "out of memory",
    "NoMemoryError",
    "failed to allocate memory",
    "Cannot allocate memory",
    "cannot allocate memory",
];

/// The run was at (90 % of) its memory limit, by a measurement that can be trusted: the
/// cgroup's peak, or a `ru_maxrss` above what the process started with (see
/// [`Outcome::memory_floor_kb`]).
fn near_memory_limit(outcome: &Outcome, limits: &Limits) -> bool {
    outcome.peak_memory_kb > outcome.memory_floor_kb
        && outcome.peak_memory_kb >= limits.memory_mb * 1024 * 9 / 10
}

/// The verdict of one test run.
pub fn verdict_of(
    outcome: &Outcome,
    test: &TestCase,
    limits: &Limits,
    answer: AnswerKind,
) -> Verdict {
    // The JVM reports a failed commit on stdout, everything else on stderr.
    let said_oom = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(64 << 10)..]);
        OOM_MARKERS.iter().any(|m| text.contains(m))
    };
    let oom = || said_oom(&outcome.stderr) || said_oom(&outcome.stdout);
    match outcome.limit {
        Some(LimitHit::Output) => return Verdict::OutputLimit,
        Some(LimitHit::Memory) => return Verdict::MemoryLimit,
        // A program that ran out of memory and was then slow to die is a memory failure.
        Some(LimitHit::WallTime | LimitHit::CpuTime) => {
            return if oom() { Verdict::MemoryLimit } else { Verdict::TimeLimit };
        }
        None => {}
    }
    if !outcome.success() {
        return if near_memory_limit(outcome, limits) || oom() {
            Verdict::MemoryLimit
        } else {
            Verdict::RuntimeError
        };
    }
    let actual = String::from_utf8_lossy(&outcome.stdout);
    if answers_match(answer, test.testtype, &test.output, &actual) {
        Verdict::Passed
    } else {
        Verdict::WrongAnswer
    }
}

/// The digest of a `wrong_answer` test's output ([`compare::canonical`]) and whether it is
/// laid out as another answer could be ([`compare::alternative_layout`]).
pub fn wrong_output(outcome: &Outcome, test: &TestCase, answer: AnswerKind) -> WrongOutput {
    let actual = String::from_utf8_lossy(&outcome.stdout);
    WrongOutput {
        sha256: coreb_base::hashing::sha256_hex(
            compare::canonical(answer, test.testtype, &actual).as_bytes(),
        ),
        alternative: compare::alternative_layout(test.testtype, &test.output, &actual),
    }
}

/// What the judge is given for one solution.
#[derive(Debug, Clone, Copy)]
pub struct Submission<'a> {
    /// The solution.
    pub solution: &'a Solution,
    /// How its program is assembled ([`Harness`]).
    pub harness: &'a Harness,
    /// The tests to run, each with its index in the problem's test list (which its result
    /// carries).
    pub tests: &'a [(u32, &'a TestCase)],
    /// When judging stops before the last test.
    pub stop: Stop,
    /// How its outputs are compared: its problem's kind of answer ([`compare::answers_match`]).
    pub answer: AnswerKind,
}

/// When the judging of a solution stops before its last test ([`Submission::stop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Never: every test runs (in parallel).
    Never,
    /// `skip_private_after_public_failure`: the tests below this index (the public ones) run
    /// first, and the others only if every one of those passed.
    PrivateAfterPublicFailure(u32),
    /// `mode = "labels"`: the tests run in [`label_order`] (the tests below this index are the
    /// public ones), one or a doubling batch at a time ([`ExecuteMode::Labels`]), until one
    /// does not pass.
    FirstFailure(u32),
}

impl Stop {
    /// How `config` stops a solution of a problem with `public` public tests.
    pub fn of(config: &ExecuteConfig, public: usize) -> Stop {
        let public = public as u32;
        match config.mode {
            ExecuteMode::Labels => Stop::FirstFailure(public),
            ExecuteMode::EveryTest if config.skip_private_after_public_failure => {
                Stop::PrivateAfterPublicFailure(public)
            }
            ExecuteMode::EveryTest => Stop::Never,
        }
    }
}

/// The order `mode = "labels"` runs a solution's tests in, so that a failure shows early: the
/// public tests (index below `public`) as given, then the private ones by decreasing input
/// size (a large input is the likeliest to exceed a limit or to reach a case the public tests
/// miss), ties by index. Positions in `tests`.
pub fn label_order(tests: &[(u32, &TestCase)], public: u32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..tests.len()).collect();
    order.sort_by_key(|&i| {
        let (index, test) = tests[i];
        let private = index >= public;
        (private, std::cmp::Reverse(if private { test.input.len() } else { 0 }), index)
    });
    order
}

/// Where and how one solution is judged: its toolchain, the sandbox, its own directory and
/// the language's shared compile cache.
#[derive(Debug, Clone, Copy)]
struct Workspace<'a> {
    toolchain: &'a Toolchain,
    sandbox: &'a Sandbox,
    busy: Option<&'a BusySlots>,
    dir: &'a Path,
    cache: Option<&'a Path>,
    /// The language's faster compile and the directory holding what it prepared.
    fast_compile: Option<(FastCompile, &'a Path)>,
    /// The language's batch runner and the directory holding its classes
    /// ([`batch::RUNNER_DIR`]).
    batch: Option<(BatchRun, &'a Path)>,
}

/// Judge one submission: assemble its program ([`Harness`]), compile once, run each test (in
/// parallel on the current rayon pool; with `busy`, as one of the runs sharing its slots), in
/// the directory `s<slot>` of `work_root`.
pub fn judge_solution(
    config: &ExecuteConfig,
    sandbox: &Sandbox,
    busy: Option<&BusySlots>,
    submission: &Submission<'_>,
    work_root: &Path,
    slot: usize,
) -> Result<(SolutionResult, Cost), ExecuteError> {
    let solution = submission.solution;
    let toolchain = config.toolchain(solution.language);
    let dir = work_root.join(format!("s{slot:06}"));
    let io_err = |path: &Path| {
        let path = path.to_owned();
        move |source| ExecuteError::Io { path, source }
    };
    fs_err::create_dir_all(&dir).map_err(|e| ExecuteError::Io { path: dir.clone(), source: e })?;
    let cache = if toolchain.compile_cache {
        let cache = work_root.join(format!("cache-{}", solution.language));
        match fs_err::create_dir(&cache) {
            Ok(()) => std::fs::set_permissions(
                &cache,
                std::os::unix::fs::PermissionsExt::from_mode(0o777),
            )
            .map_err(io_err(&cache))?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(ExecuteError::Io { path: cache, source: e });
            }
        }
        Some(cache)
    } else {
        None
    };
    let prepared = toolchain
        .fast_compile
        .map(|fast| (fast, work_root.join(format!("fast-{}", solution.language))))
        .filter(|(_, d)| d.join(READY).exists());
    let fast_compile = prepared.as_ref().map(|(fast, d)| (*fast, d.as_path()));
    let runner = toolchain
        .batch
        .map(|runner| (runner, work_root.join(format!("batch-{}", solution.language))))
        .filter(|(_, d)| d.join(READY).exists());
    let batch = runner.as_ref().map(|(runner, d)| (*runner, d.as_path()));
    let result = judge_in(
        &Workspace {
            toolchain: &toolchain,
            sandbox,
            busy,
            dir: &dir,
            cache: cache.as_deref(),
            fast_compile,
            batch,
        },
        submission,
    );
    // The directory is the judge's again after the compile (see `Sandbox::run`).
    std::fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
    result
}

/// The source file the judge compiles and runs for a solution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgedProgram {
    /// Its file name (`main.py`, `Main.java` …).
    pub source_name: String,
    /// Its text: the language's prelude, then the solution (a LeetCode solution inside its
    /// language's I/O driver).
    pub code: String,
    /// The Java class holding `main` (empty for other languages).
    pub main_class: String,
}

/// The program the judge runs for `solution` under `harness`, with `toolchain`'s file name
/// and prelude (empty code when no driver supports the problem's signature). `coreb programs`
/// writes these out, so they can be run outside coreb.
pub fn program_of(toolchain: &Toolchain, solution: &Solution, harness: &Harness) -> JudgedProgram {
    let program = match harness {
        Harness::Program => solution.code.clone(),
        Harness::Driver(signature) => {
            driver::assemble(&solution.code, solution.language, signature)
        }
        Harness::Unsupported(_) => String::new(),
    };
    let main_class =
        if solution.language == Language::Java { java_main_class(&program) } else { String::new() };
    let source_name = fill(&toolchain.source, "", &main_class, 0);
    JudgedProgram { source_name, code: format!("{}{}", toolchain.prelude, program), main_class }
}

/// Errors of writing a solution's files that are the machine's fault (the stage stops);
/// any other (a file name too long, an invalid name) is the solution's.
fn machine_fault(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::ENOSPC
                | libc::EDQUOT
                | libc::EIO
                | libc::EROFS
                | libc::ENOMEM
                | libc::EMFILE
                | libc::ENFILE
        )
    )
}

/// Every test of a solution with one verdict (a solution that did not build).
fn all_tests(tests: &[(u32, &TestCase)], verdict: Verdict) -> Vec<TestResult> {
    tests
        .iter()
        .map(|&(index, _)| TestResult {
            index,
            verdict,
            wall_ms: 0,
            cpu_ms: 0,
            peak_memory_kb: 0,
            wrong_output: None,
        })
        .collect()
}

/// The marker of a directory whose faster compile is prepared ([`prepare_fast_compiles`]).
const READY: &str = "ready";

/// Prepare, once for this run, for every language with at least one solution among
/// `solutions`: its faster compile where it has one on, under `root/fast-<language>` (its
/// compiler, with the compile command's flags, run in the sandbox on [`FastCompile::seed`]);
/// its batch runner where `batch` is on, under `root/batch-<language>` ([`batch`]: the
/// compile command on [`BatchRun::source`]). A preparation that fails is logged and leaves
/// that language's compiles plain or its tests a process each (no verdict depends on it).
pub(crate) fn prepare_fast_compiles(
    config: &ExecuteConfig,
    sandbox: &Sandbox,
    solutions: &[Solution],
    root: &Path,
) -> Result<(), ExecuteError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ExecuteError::Io { path, source }
    };
    for language in Language::ALL {
        let toolchain = config.toolchain(language);
        if !solutions.iter().any(|s| s.language == language) {
            continue;
        }
        let limits = &toolchain.compile_limits;
        let compile = |source: &str, class: &str| -> Vec<String> {
            let src = format!("{BOX_DIR}/{source}");
            toolchain.compile.iter().map(|a| fill(a, &src, class, limits.memory_mb)).collect()
        };
        let run = |argv: Vec<String>, work: &Path, cache: Option<&Path>, what: &str| {
            let program = Program {
                argv,
                env: toolchain.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                stdin: b"",
                dir: work,
                access: DirAccess::Writable,
                cache,
            };
            sandbox.run(&program, limits).map_err(|source| ExecuteError::Sandbox {
                solution: SolutionId::from_raw(format!("({language} {what})")),
                step: "compile".into(),
                source,
            })
        };
        let ready = |dir: &Path, made: bool, outcome: &Outcome, what: &str| {
            if made {
                std::fs::write(dir.join(READY), b"").map_err(io(&dir.join(READY)))
            } else {
                tracing::warn!(%language, status = ?outcome.status, stderr = %excerpt(&outcome.stderr), "{what}");
                Ok(())
            }
        };
        if let Some(fast) = toolchain.fast_compile {
            let dir = root.join(format!("fast-{language}"));
            let (work, cache) = (dir.join("box"), dir.join("cache"));
            let artifact = cache.join(fast.artifact());
            let shared = artifact.parent().unwrap_or(&cache).to_path_buf();
            for d in [&work, &cache, &shared] {
                fs_err::create_dir_all(d)
                    .map_err(|e| ExecuteError::Io { path: d.clone(), source: e })?;
            }
            // Written by the preparation's uid, read by every compile's.
            for d in [&cache, &shared] {
                std::fs::set_permissions(d, std::os::unix::fs::PermissionsExt::from_mode(0o777))
                    .map_err(io(d))?;
            }
            let (seed_name, seed) = fast.seed();
            std::fs::write(work.join(seed_name), seed).map_err(io(&work.join(seed_name)))?;
            for (name, text) in fast.companions() {
                std::fs::write(cache.join(name), text).map_err(io(&cache.join(name)))?;
            }
            let argv = fast.prepare(&compile(seed_name, "Main"));
            let outcome = run(argv, &work, Some(&cache), "compile preparation")?;
            let made = outcome.success() && artifact.is_file();
            ready(
                &dir,
                made,
                &outcome,
                "the faster compile could not be prepared; compiles stay plain",
            )?;
            std::fs::remove_dir_all(&work).map_err(io(&work))?;
        }
        if let Some(runner) = toolchain.batch {
            let dir = root.join(format!("batch-{language}"));
            let classes = dir.join(batch::RUNNER_DIR);
            fs_err::create_dir_all(&classes)
                .map_err(|e| ExecuteError::Io { path: classes.clone(), source: e })?;
            let (name, text) = runner.source();
            std::fs::write(classes.join(name), text).map_err(io(&classes.join(name)))?;
            let outcome = run(compile(name, "CorebBatch"), &classes, None, "batch runner")?;
            std::fs::remove_file(classes.join(name)).map_err(io(&classes.join(name)))?;
            let made = outcome.success() && classes.join("CorebBatch.class").is_file();
            ready(
                &dir,
                made,
                &outcome,
                "the batch runner could not be compiled; tests stay a process each",
            )?;
        }
    }
    Ok(())
}

/// Compile `src_inside` in the sandbox: the compiler's message when it failed (the
/// solution's `compile_error`), the CPU milliseconds it took, and whether the faster compile
/// built it (each compile step counted in `time`). A faster compile that fails is redone
/// plainly, so the message is the plain compiler's.
fn compile(
    ws: &Workspace<'_>,
    solution: &Solution,
    src_inside: &str,
    main_class: &str,
    env: &[(String, String)],
    time: &mut JudgingTime,
) -> Result<(Option<String>, u64, bool), ExecuteError> {
    let Workspace { toolchain, sandbox, busy, dir, cache, fast_compile, .. } = *ws;
    let limits = &toolchain.compile_limits;
    let plain: Vec<String> = toolchain
        .compile
        .iter()
        .map(|a| fill(a, src_inside, main_class, limits.memory_mb))
        .collect();
    let run = |argv: Vec<String>, cache: Option<&Path>| {
        let program = Program {
            argv,
            env: env.to_vec(),
            stdin: b"",
            dir,
            access: DirAccess::Writable,
            cache,
        };
        sandbox.run_sharing(&program, limits, busy).map_err(|source| ExecuteError::Sandbox {
            solution: solution.id.clone(),
            step: "compile".into(),
            source,
        })
    };
    let mut cpu_ms = 0;
    let mut count = |outcome: &Outcome| {
        time.compiles += 1;
        time.compile_wall_ms += outcome.wall_ms;
    };
    if let Some((fast, prepared)) = fast_compile {
        let outcome = run(fast.command(&plain), Some(prepared.join("cache").as_path()))?;
        count(&outcome);
        cpu_ms += outcome.cpu_ms;
        if outcome.success() {
            return Ok((None, cpu_ms, true));
        }
    }
    let outcome = run(plain, cache)?;
    count(&outcome);
    cpu_ms += outcome.cpu_ms;
    if outcome.success() {
        return Ok((None, cpu_ms, false));
    }
    let mut message = excerpt(&outcome.stderr);
    if message.trim().is_empty() {
        message = format!("compiler ended with {:?} (limit {:?})", outcome.status, outcome.limit);
    }
    Ok((Some(message), cpu_ms, false))
}

fn judge_in(
    ws: &Workspace<'_>,
    submission: &Submission<'_>,
) -> Result<(SolutionResult, Cost), ExecuteError> {
    let Workspace { toolchain, sandbox, busy, dir, .. } = *ws;
    let Submission { solution, harness, tests, stop, answer } = *submission;
    let JudgedProgram { source_name, code, main_class } = program_of(toolchain, solution, harness);
    let fast = toolchain.fast_start.filter(|f| f.allows(&code));
    let src_inside = format!("{BOX_DIR}/{source_name}");
    let src_host = dir.join(&source_name);
    let mut cpu_ms = 0;
    let base = SolutionResult {
        solution_id: solution.id.clone(),
        problem_id: solution.problem_id.clone(),
        model: solution.model.clone(),
        language: solution.language,
        passed: false,
        pass_rate: 0.0,
        tests: Vec::new(),
        message: String::new(),
        memory_bound: sandbox.memory_bound(),
        comparison: answer,
        stopped: None,
    };
    if let Harness::Unsupported(e) = harness {
        let message = format!("no driver for this problem's signature: {e}");
        return Ok((
            SolutionResult { tests: all_tests(tests, Verdict::CompileError), message, ..base },
            Cost::default(),
        ));
    }
    if let Err(e) = std::fs::write(&src_host, code) {
        if machine_fault(&e) {
            return Err(ExecuteError::Io { path: src_host, source: e });
        }
        let message = format!("the judge could not write the source file `{source_name}`: {e}");
        return Ok((
            SolutionResult { tests: all_tests(tests, Verdict::CompileError), message, ..base },
            Cost::default(),
        ));
    }
    let env: Vec<(String, String)> =
        toolchain.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();

    let mut fast_compile = false;
    let mut time = JudgingTime::default();
    if !toolchain.compile.is_empty() {
        let (failure, compile_ms, fast) =
            compile(ws, solution, &src_inside, &main_class, &env, &mut time)?;
        cpu_ms += compile_ms;
        fast_compile = fast;
        if let Some(message) = failure {
            return Ok((
                SolutionResult { tests: all_tests(tests, Verdict::CompileError), message, ..base },
                Cost { cpu_ms, time, ..Cost::default() },
            ));
        }
    }

    let limits = &toolchain.limits;
    let mut run_argv: Vec<String> =
        toolchain.run.iter().map(|a| fill(a, &src_inside, &main_class, limits.memory_mb)).collect();
    if let Some(fast) = fast {
        run_argv = fast.command(&run_argv);
    }
    let run_all = |tests: &[(u32, &TestCase)]| -> Vec<Result<(TestResult, Outcome), ExecuteError>> {
        tests
            .par_iter()
            .map(|&(i, test)| {
                // Once a signal asked to stop, no test starts.
                coreb_base::interrupt::check()?;
                let program = Program {
                    argv: run_argv.clone(),
                    env: env.clone(),
                    stdin: test.input.as_bytes(),
                    dir,
                    access: DirAccess::ReadOnly,
                    cache: None,
                };
                let outcome = sandbox.run_sharing(&program, limits, busy).map_err(|source| {
                    ExecuteError::Sandbox {
                        solution: solution.id.clone(),
                        step: format!("test {i}"),
                        source,
                    }
                })?;
                let verdict = verdict_of(&outcome, test, limits, answer);
                let result = TestResult {
                    index: i,
                    verdict,
                    wall_ms: outcome.wall_ms,
                    cpu_ms: outcome.cpu_ms,
                    peak_memory_kb: outcome.peak_memory_kb,
                    wrong_output: (verdict == Verdict::WrongAnswer)
                        .then(|| wrong_output(&outcome, test, answer)),
                };
                Ok((result, outcome))
            })
            .collect()
    };
    let mut gave_way_batch = 0;
    // The order judging reads the tests in: labels mode's, else as given (public first).
    let order: Vec<(u32, &TestCase)> = match stop {
        Stop::FirstFailure(public) => {
            label_order(tests, public).into_iter().map(|at| tests[at]).collect()
        }
        Stop::Never | Stop::PrivateAfterPublicFailure(_) => tests.to_vec(),
    };
    // With a batch runner, the outcomes of a first stretch of `order`, from one process.
    let batch = ws.batch.filter(|(runner, _)| runner.allows(&solution.code)).and_then(
        |(runner, classes)| {
            let argv = runner.command(&run_argv, &main_class, limits)?;
            Some(Batch { runner, classes, argv, env: &env, answer })
        },
    );
    let pre = match batch {
        Some(batch) => match run_batch(ws, solution, &batch, &order)? {
            Some((pre, outcome)) => {
                cpu_ms += outcome.cpu_ms;
                gave_way_batch = usize::from(outcome.gave_way);
                time.batches += 1;
                time.batch_wall_ms += outcome.wall_ms;
                pre
            }
            None => Vec::new(),
        },
        None => Vec::new(),
    };
    let batched = std::cell::Cell::new(0);
    // The runs of `order[a..b]`: what the batch kept, then processes of their own.
    let run_range = |a: usize, b: usize| {
        let kept = pre.len().clamp(a, b);
        batched.set(batched.get() + (kept - a));
        let mut runs: Vec<_> = pre.get(a..kept).unwrap_or(&[]).iter().cloned().map(Ok).collect();
        runs.extend(run_all(&order[kept..b]));
        runs
    };
    let failed = |r: &Result<(TestResult, Outcome), ExecuteError>| {
        r.as_ref().is_ok_and(|(t, _)| t.verdict != Verdict::Passed)
    };
    let (runs, not_run): (_, Vec<(u32, &TestCase)>) = match stop {
        Stop::Never => (run_range(0, order.len()), Vec::new()),
        // The tests below the gate (the public ones) run first, and the others only if every
        // one of those passed.
        Stop::PrivateAfterPublicFailure(gate) => {
            let split = order.partition_point(|(i, _)| *i < gate);
            let mut runs = run_range(0, split);
            if runs.iter().any(failed) {
                (runs, order[split..].to_vec())
            } else {
                runs.extend(run_range(split, order.len()));
                (runs, Vec::new())
            }
        }
        // In label order: each public test and then the first private one alone, the rest in
        // batches that double (2, 4, 8 …), each batch in parallel, until a batch in which a test
        // does not pass (or the judge fails). Which tests run depends on verdicts only.
        Stop::FirstFailure(public) => {
            let alone = order
                .iter()
                .position(|&(i, _)| i >= public)
                .map_or(order.len(), |first_private| first_private + 1);
            let mut runs = Vec::with_capacity(order.len());
            let (mut next, mut size) = (0, 2);
            while next < order.len() {
                let take = if next < alone {
                    1
                } else {
                    size *= 2;
                    size / 2
                };
                let end = (next + take).min(order.len());
                let batch_runs = run_range(next, end);
                next = end;
                let stop_here = batch_runs.iter().any(|r| r.is_err() || failed(r));
                runs.extend(batch_runs);
                if stop_here {
                    break;
                }
            }
            (runs, order[next..].to_vec())
        }
    };
    let batched = batched.get();
    time.batched_tests += batched;
    // What ended the judging: in labels mode any failure, with the gate one that held back
    // the private tests.
    let stopped = (matches!(stop, Stop::FirstFailure(_)) || !not_run.is_empty())
        .then(|| {
            runs.iter().find_map(|r| match r {
                Ok((t, _)) if t.verdict != Verdict::Passed => {
                    Some(Stopped { index: t.index, verdict: t.verdict })
                }
                _ => None,
            })
        })
        .flatten();
    let mut results = Vec::with_capacity(runs.len());
    let mut message = String::new();
    let mut gave_way = gave_way_batch;
    for (n, run) in runs.into_iter().enumerate() {
        let (result, outcome) = run?;
        // The first `batched` runs are the batch's (its process counted in `run_batch`).
        if n >= batched {
            cpu_ms += outcome.cpu_ms;
            gave_way += usize::from(outcome.gave_way);
            time.test_runs += 1;
            time.test_wall_ms += outcome.wall_ms;
        }
        if result.verdict == Verdict::TimeLimit {
            time.time_limit_wall_ms += outcome.wall_ms;
        }
        if message.is_empty() && result.verdict != Verdict::Passed {
            message =
                format!("test {}: {}: {}", result.index, result.verdict, excerpt(&outcome.stderr));
        }
        results.push(result);
    }
    results.extend(not_run.iter().map(|&(index, _)| TestResult {
        index,
        verdict: Verdict::NotRun,
        wall_ms: 0,
        cpu_ms: 0,
        peak_memory_kb: 0,
        wrong_output: None,
    }));
    // In test order, whatever the order they ran in.
    results.sort_by_key(|r| r.index);
    let passed_n = results.iter().filter(|r| r.verdict == Verdict::Passed).count();
    let pass_rate = if results.is_empty() { 0.0 } else { passed_n as f64 / results.len() as f64 };
    let passed = !results.is_empty() && passed_n == results.len();
    Ok((
        SolutionResult { passed, pass_rate, tests: results, message, stopped, ..base },
        Cost { cpu_ms, fast_start: fast.is_some(), fast_compile, gave_way, time },
    ))
}

/// The results of the tests a batch run kept, and the runner's outcome.
type Batched = (Vec<(TestResult, Outcome)>, Outcome);

/// A solution's batch run: its runner, the directory of the runner's classes, the command,
/// the environment and how outputs are compared.
struct Batch<'a> {
    runner: BatchRun,
    classes: &'a Path,
    argv: Vec<String>,
    env: &'a [(String, String)],
    answer: AnswerKind,
}

/// Run `order`'s tests in the batch runner ([`batch`]): the results of the tests it kept (a
/// first stretch of `order`, each judged as a run of its own would be) and the runner's own
/// outcome; `None` for inputs too large to frame (no batch runs).
fn run_batch(
    ws: &Workspace<'_>,
    solution: &Solution,
    batch: &Batch<'_>,
    order: &[(u32, &TestCase)],
) -> Result<Option<Batched>, ExecuteError> {
    let Workspace { toolchain, sandbox, busy, dir, .. } = *ws;
    let limits = &toolchain.limits;
    let Some(stdin) = batch::stdin(order.iter().map(|(_, t)| t.input.as_bytes())) else {
        return Ok(None);
    };
    // The runner's classes beside the solution's, in a directory no class name can reach.
    let into = dir.join(batch::RUNNER_DIR);
    fs_err::create_dir_all(&into)
        .map_err(|e| ExecuteError::Io { path: into.clone(), source: e })?;
    for entry in fs_err::read_dir(batch.classes.join(batch::RUNNER_DIR))
        .map_err(|e| ExecuteError::Io { path: batch.classes.to_owned(), source: e })?
    {
        let from = entry
            .map_err(|e| ExecuteError::Io { path: batch.classes.to_owned(), source: e })?
            .path();
        let to = into.join(from.file_name().unwrap_or_default());
        fs_err::copy(&from, &to).map_err(|e| ExecuteError::Io { path: to.clone(), source: e })?;
    }
    let program = Program {
        argv: batch.argv.clone(),
        env: batch.env.to_vec(),
        stdin: &stdin,
        dir,
        access: DirAccess::ReadOnly,
        cache: None,
    };
    let runner = sandbox
        .run_sharing(&program, &batch.runner.limits(limits, order.len()), busy)
        .map_err(|source| ExecuteError::Sandbox {
            solution: solution.id.clone(),
            step: "batch of tests".into(),
            source,
        })?;
    let results = batch::kept(&runner)
        .into_iter()
        .zip(order)
        .map(|(outcome, &(index, test))| {
            let verdict = verdict_of(&outcome, test, limits, batch.answer);
            let result = TestResult {
                index,
                verdict,
                wall_ms: outcome.wall_ms,
                cpu_ms: outcome.cpu_ms,
                peak_memory_kb: outcome.peak_memory_kb,
                wrong_output: (verdict == Verdict::WrongAnswer)
                    .then(|| wrong_output(&outcome, test, batch.answer)),
            };
            (result, outcome)
        })
        .collect();
    Ok(Some((results, runner)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use coreb_data::problem::TestType;

    #[test]
    fn java_main_class_found() {
        assert_eq!(
            java_main_class("public class Main { public static void main(String[] a) {} }"),
            "Main"
        );
        let code = "import java.util.*;\n// class Fake\nclass Helper { static class Pair {} }\npublic class Solution {\n  static class Node { }\n  String s = \"class X {\";\n  public static void main(String[] args) { }\n}\n";
        assert_eq!(java_main_class(code), "Solution");
        assert_eq!(
            java_main_class("class A {}\nclass B { public static void main(String[] x) {} }"),
            "B"
        );
        assert_eq!(java_main_class("class A {}"), "Main");
    }

    #[test]
    fn config_rejects_unknown_keys_and_patches_limits() {
        let cfg: ExecuteConfig = toml_like(
            r#"{"java": {"limits": {"memory_mb": 3000}}, "limits": {"cpu_time_ms": 1000}}"#,
        );
        let java = cfg.toolchain(Language::Java);
        assert_eq!(java.limits.memory_mb, 3000);
        // Java's default multiplier (2) scales the global CPU limit.
        assert_eq!(java.limits.cpu_time_ms, 2000);
        assert_eq!(cfg.toolchain(Language::Cpp).limits.memory_mb, 512);
        assert!(serde_json::from_str::<ExecuteConfig>(r#"{"pyhton": {}}"#).is_err());
        assert!(
            serde_json::from_str::<ExecuteConfig>(r#"{"cpp": {"compiler": "clang"}}"#).is_err()
        );
    }

    #[test]
    fn per_language_time_multipliers() {
        let cfg = ExecuteConfig::default();
        let limit = |l: Language| {
            (cfg.toolchain(l).limits.cpu_time_ms, cfg.toolchain(l).limits.wall_time_ms)
        };
        assert_eq!(limit(Language::Cpp), (4_000, 10_000));
        assert_eq!(limit(Language::Go), (4_000, 10_000));
        assert_eq!(limit(Language::Java), (8_000, 20_000));
        assert_eq!(limit(Language::Python), (12_000, 30_000));
        assert_eq!(limit(Language::Ruby), (12_000, 30_000));
        // Compiles are not scaled.
        assert_eq!(cfg.toolchain(Language::Python).compile_limits.cpu_time_ms, 60_000);
        // A section's multiplier, and its absolute limits, win.
        let cfg = toml_like(
            r#"{"python": {"time_multiplier": 1.5}, "ruby": {"time_multiplier": 5, "limits": {"cpu_time_ms": 700}}}"#,
        );
        assert_eq!(cfg.toolchain(Language::Python).limits.cpu_time_ms, 6_000);
        assert_eq!(cfg.toolchain(Language::Ruby).limits.cpu_time_ms, 700);
        assert_eq!(cfg.toolchain(Language::Ruby).limits.wall_time_ms, 50_000);
        for bad in ["0", "-1", "1000"] {
            let cfg = toml_like(&format!(r#"{{"go": {{"time_multiplier": {bad}}}}}"#));
            assert!(
                cfg.validate().unwrap_err().to_string().contains("go.time_multiplier"),
                "{bad}"
            );
        }
    }

    #[test]
    fn reuse_is_per_language_recorded_only_when_on_and_checked() {
        let cfg = toml_like(r#"{"reuse": ["ruby", "python"]}"#);
        cfg.validate().unwrap();
        assert_eq!(cfg.toolchain(Language::Python).fast_start, Some(FastStart::PythonNoSite));
        assert_eq!(cfg.toolchain(Language::Ruby).fast_start, Some(FastStart::RubyNoGems));
        assert_eq!(cfg.toolchain(Language::Java).fast_start, None);
        assert_eq!(
            serde_json::to_value(&cfg).unwrap()["reuse"],
            serde_json::json!(["python", "ruby"])
        );
        assert_eq!(
            serde_json::to_value(cfg.toolchain(Language::Ruby)).unwrap()["fast_start"],
            "ruby --disable-gems -rdid_you_mean -rerror_highlight"
        );
        // Off: neither the configuration nor a recipe says a word of it (stage key and MANIFEST
        // as before the switch existed).
        let off = ExecuteConfig::default();
        assert!(serde_json::to_value(&off).unwrap().get("reuse").is_none());
        assert!(
            serde_json::to_value(off.toolchain(Language::Python))
                .unwrap()
                .get("fast_start")
                .is_none()
        );
        assert!(off.toolchain(Language::Cpp).fast_compile.is_none());
        assert!(
            serde_json::to_value(off.toolchain(Language::Java))
                .unwrap()
                .get("fast_compile")
                .is_none()
        );
        let err = toml_like(r#"{"reuse": ["go"]}"#).validate().unwrap_err().to_string();
        assert!(err.contains("go has no faster start"), "{err}");
        // The compiled languages: a faster compile, recorded in their recipes.
        let compiled = toml_like(r#"{"reuse": ["cpp", "java"]}"#);
        compiled.validate().unwrap();
        assert_eq!(
            compiled.toolchain(Language::Cpp).fast_compile,
            Some(FastCompile::CppPrecompiledHeader)
        );
        assert_eq!(
            compiled.toolchain(Language::Java).fast_compile,
            Some(FastCompile::JavacClassData)
        );
        assert_eq!(compiled.toolchain(Language::Python).fast_compile, None);
        assert_eq!(
            serde_json::to_value(compiled.toolchain(Language::Cpp)).unwrap()["fast_compile"],
            "g++ with <bits/stdc++.h> precompiled"
        );
        let err = toml_like(
            r#"{"reuse": ["cpp"], "cpp": {"compile": ["clang++", "-o", "{dir}/main", "{src}"]}}"#,
        )
        .validate()
        .unwrap_err()
        .to_string();
        assert!(err.contains("`cpp.compile` does not start with `g++`"), "{err}");
        let err = toml_like(r#"{"reuse": ["python"], "python": {"run": ["pypy3", "{src}"]}}"#)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.contains("`python.run` does not start with `python3`"), "{err}");
        assert!(serde_json::from_str::<ExecuteConfig>(r#"{"reuse": ["cobol"]}"#).is_err());
    }

    #[test]
    fn idle_slots_are_recorded_only_when_on_and_bounded() {
        let cfg = toml_like(r#"{"idle_slots": 6}"#);
        cfg.validate().unwrap();
        assert_eq!(serde_json::to_value(&cfg).unwrap()["idle_slots"], 6);
        assert!(
            serde_json::to_value(ExecuteConfig::default()).unwrap().get("idle_slots").is_none()
        );
        let err = toml_like(r#"{"idle_slots": 65}"#).validate().unwrap_err().to_string();
        assert!(err.contains("`idle_slots` is at most 64, not 65"), "{err}");
        assert!(serde_json::from_str::<ExecuteConfig>(r#"{"idle_slots": -1}"#).is_err());
    }

    #[test]
    fn mode_is_recorded_only_when_labels() {
        let labels = toml_like(r#"{"mode": "labels"}"#);
        assert_eq!(labels.mode, ExecuteMode::Labels);
        assert_eq!(serde_json::to_value(&labels).unwrap()["mode"], "labels");
        assert_eq!(toml_like(r#"{"mode": "every_test"}"#), ExecuteConfig::default());
        assert!(serde_json::to_value(ExecuteConfig::default()).unwrap().get("mode").is_none());
        assert!(serde_json::from_str::<ExecuteConfig>(r#"{"mode": "fast"}"#).is_err());
        assert_eq!(Stop::of(&labels, 2), Stop::FirstFailure(2));
        let gate = toml_like(r#"{"skip_private_after_public_failure": true}"#);
        assert_eq!(Stop::of(&gate, 2), Stop::PrivateAfterPublicFailure(2));
        assert_eq!(Stop::of(&ExecuteConfig::default(), 2), Stop::Never);
    }

    #[test]
    fn label_order_is_public_then_private_by_decreasing_input() {
        let test = |input: &str| TestCase {
            input: input.into(),
            output: String::new(),
            testtype: TestType::Stdin,
        };
        let cases =
            [test("long public"), test("p"), test("aa"), test("bbbb"), test("cc"), test("d")];
        // Index 3 was rejected by the re-check: positions and indices differ.
        let tests: Vec<(u32, &TestCase)> = [0u32, 1, 2, 4, 5, 6].into_iter().zip(&cases).collect();
        let order: Vec<u32> = label_order(&tests, 2).into_iter().map(|at| tests[at].0).collect();
        assert_eq!(order, [0, 1, 4, 2, 5, 6]);
        assert_eq!(label_order(&tests, 0)[0], 0, "no public test: the largest first");
        assert!(label_order(&[], 1).is_empty());
    }

    fn toml_like(json: &str) -> ExecuteConfig {
        serde_json::from_str(json).unwrap()
    }
}
