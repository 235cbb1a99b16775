//! `execute`: judge solutions against their problem's tests in the [`Sandbox`].
//!
//! Each solution is written to a directory of its own and compiled once (C++ `g++ -O2`,
//! Java `javac`, Go `go build`; a syntax check for Python and Ruby), then every test runs
//! against the result. Solutions, and the tests of each solution, run in parallel on a bounded
//! pool of `jobs` threads; results come back in input order whatever `jobs` is.
//!
//! Verdicts ([`Verdict`]): passed, wrong_answer, time_limit, memory_limit, runtime_error,
//! compile_error, output_limit. Outputs are compared by [`outputs_match`] (DESIGN §1.4); for
//! functional (LeetCode) tests a failed textual match falls back to comparing both sides as
//! JSON values. A solution passes only if every test passes.
//!
//! Configuration is [`ExecuteConfig`] (`[stages.execute]` of a manifest; unknown keys are
//! errors): global `limits` and `compile_limits`, `[stages.execute.sandbox]`, and one section
//! per language (`[stages.execute.java]` …) with `compile`/`run` argv templates, `source`,
//! `env`, `prelude`, `compile_cache` and limit overrides.
//!
//! For the engine: [`execute_tables`]`(problems.parquet, solutions.parquet, verdicts.parquet,
//! &config, jobs)` reads both tables, builds the [`Sandbox`], judges and writes the verdicts
//! table atomically, returning the stats for the `--json` summary (`rows_in` = solutions,
//! `rows_out` = judged, `rejected` = `without_problem`). [`execute`] is the pure form.
//!
//! What it does NOT do: read or write tables itself (the engine, or [`execute_tables`] for
//! the one-call form, does), inject imports or harness code (only a configured `prelude`), or
//! retry flaky runs. Wall and CPU times and peak memory are measured, so those columns differ
//! from run to run; verdicts do not (for programs well inside their limits).

use std::collections::{BTreeMap, HashMap};
use std::ops::AddAssign;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::problem::{Problem, ProblemId, TestCase, TestType};
use crate::services::sandbox::{BOX_DIR, CACHE_DIR, DirAccess, LimitHit, Limits, Outcome, Program, Sandbox, SandboxConfig, SandboxError, WORK_DIR};
use crate::solution::{Language, Solution, SolutionId};

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
    /// The sandbox could not be set up on this machine (namespaces refused, …).
    #[error("setting up the sandbox")]
    SandboxSetup(#[source] SandboxError),
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
    /// Reading or writing a table failed.
    #[error(transparent)]
    Table(#[from] crate::tables::TableError),
}

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
}

impl Verdict {
    /// Every verdict, in a fixed order.
    pub const ALL: [Verdict; 7] = [
        Verdict::Passed,
        Verdict::WrongAnswer,
        Verdict::TimeLimit,
        Verdict::MemoryLimit,
        Verdict::RuntimeError,
        Verdict::CompileError,
        Verdict::OutputLimit,
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
        }
    }

    /// Parse the snake_case name.
    pub fn parse(s: &str) -> Option<Self> {
        Verdict::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
}

/// Counts of one execute run; mergeable.
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
    /// CPU time of every sandboxed program (compiles and tests), ms.
    pub cpu_ms: u64,
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
    }
}

/// What [`execute`] returns.
#[derive(Debug, Clone)]
pub struct ExecuteOutput {
    /// One result per judged solution, in input order.
    pub results: Vec<SolutionResult>,
    /// Solutions whose problem was missing (listed, not judged).
    pub without_problem: Vec<SolutionId>,
    /// Counts.
    pub stats: ExecuteStats,
}

/// Optional overrides of [`Limits`] (a `[stages.execute.<lang>.limits]` table).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsPatch {
    /// See [`Limits::cpu_time_ms`].
    pub cpu_time_ms: Option<u64>,
    /// See [`Limits::wall_time_ms`].
    pub wall_time_ms: Option<u64>,
    /// See [`Limits::memory_mb`].
    pub memory_mb: Option<u64>,
    /// See [`Limits::address_space_mb`].
    pub address_space_mb: Option<u64>,
    /// See [`Limits::processes`].
    pub processes: Option<u64>,
    /// See [`Limits::open_files`].
    pub open_files: Option<u64>,
    /// See [`Limits::output_bytes`].
    pub output_bytes: Option<u64>,
    /// See [`Limits::file_size_bytes`].
    pub file_size_bytes: Option<u64>,
    /// See [`Limits::tmp_size_mb`].
    pub tmp_size_mb: Option<u64>,
    /// See [`Limits::stack_mb`].
    pub stack_mb: Option<u64>,
}

impl LimitsPatch {
    /// `base` with every set field replaced.
    pub fn apply(&self, base: &Limits) -> Limits {
        Limits {
            cpu_time_ms: self.cpu_time_ms.unwrap_or(base.cpu_time_ms),
            wall_time_ms: self.wall_time_ms.unwrap_or(base.wall_time_ms),
            memory_mb: self.memory_mb.unwrap_or(base.memory_mb),
            address_space_mb: self.address_space_mb.or(base.address_space_mb),
            processes: self.processes.unwrap_or(base.processes),
            open_files: self.open_files.unwrap_or(base.open_files),
            output_bytes: self.output_bytes.unwrap_or(base.output_bytes),
            file_size_bytes: self.file_size_bytes.unwrap_or(base.file_size_bytes),
            tmp_size_mb: self.tmp_size_mb.unwrap_or(base.tmp_size_mb),
            stack_mb: self.stack_mb.unwrap_or(base.stack_mb),
        }
    }
}

/// `[stages.execute.<language>]`: how one language is built and run. Unset fields keep the
/// language's default (see [`LanguageConfig::resolve`]).
///
/// Commands are argv lists with placeholders: `{src}` (the source file), `{dir}` (the
/// solution's directory, [`BOX_DIR`]), `{main_class}` (Java: the class holding `main`),
/// `{memory_mb}` (the run's memory limit).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LanguageConfig {
    /// Source file name (Java default: `{main_class}.java`).
    pub source: Option<String>,
    /// Compile command; `[]` for none.
    pub compile: Option<Vec<String>>,
    /// Run command.
    pub run: Option<Vec<String>>,
    /// Extra environment (added to the defaults, same keys replaced).
    pub env: BTreeMap<String, String>,
    /// Text put before the solution's code (none by default: nothing is injected).
    pub prelude: Option<String>,
    /// Limits of test runs (over `[stages.execute.limits]`).
    pub limits: LimitsPatch,
    /// Limits of the compile step (over `[stages.execute.compile_limits]`).
    pub compile_limits: LimitsPatch,
    /// Give compiles a cache directory shared by the solutions of one run, at
    /// `/tmp/cache` (Go default: on, with `GOCACHE=/tmp/cache`; Go ≥ 1.20 ships no compiled
    /// standard library, so without it every build recompiles the runtime).
    pub compile_cache: Option<bool>,
}

/// A language's resolved build and run recipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Toolchain {
    /// The language.
    pub language: Language,
    /// Source file name (may hold `{main_class}`).
    pub source: String,
    /// Compile command (empty: none).
    pub compile: Vec<String>,
    /// Run command.
    pub run: Vec<String>,
    /// Environment of both steps.
    pub env: BTreeMap<String, String>,
    /// Text put before the code.
    pub prelude: String,
    /// Limits of test runs.
    pub limits: Limits,
    /// Limits of the compile step.
    pub compile_limits: Limits,
    /// Compiles share a cache directory.
    pub compile_cache: bool,
}

fn argv(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

impl LanguageConfig {
    /// The recipe of `language`: defaults, then this section's settings.
    pub fn resolve(&self, language: Language, limits: &Limits, compile_limits: &Limits) -> Toolchain {
        let mut env: BTreeMap<String, String> = [
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("HOME", WORK_DIR),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        // Language defaults: (source, compile, run, extra env, limits, compile limits).
        let (source, compile, run, lang_limits, lang_compile) = match language {
            Language::Python => (
                "main.py",
                argv(&["python3", "-m", "py_compile", "{src}"]),
                argv(&["python3", "{src}"]),
                LimitsPatch::default(),
                LimitsPatch::default(),
            ),
            Language::Cpp => (
                "main.cpp",
                argv(&["g++", "-std=c++17", "-O2", "-pipe", "-o", "{dir}/main", "{src}"]),
                argv(&["{dir}/main"]),
                LimitsPatch::default(),
                LimitsPatch::default(),
            ),
            Language::Java => (
                "{main_class}.java",
                argv(&["javac", "-encoding", "UTF-8", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-d", "{dir}", "{src}"]),
                argv(&[
                    "java",
                    "-XX:MaxRAM={memory_mb}m",
                    "-XX:MaxRAMPercentage=60",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-XX:-UsePerfData",
                    "-Xss64m",
                    "-cp",
                    "{dir}",
                    "{main_class}",
                ]),
                LimitsPatch { memory_mb: Some(1536), processes: Some(128), open_files: Some(256), ..LimitsPatch::default() },
                LimitsPatch::default(),
            ),
            Language::Go => (
                "main.go",
                argv(&["go", "build", "-o", "{dir}/main", "{src}"]),
                argv(&["{dir}/main"]),
                LimitsPatch { memory_mb: Some(1024), processes: Some(64), ..LimitsPatch::default() },
                LimitsPatch::default(),
            ),
            Language::Ruby => (
                "main.rb",
                argv(&["ruby", "-c", "{src}"]),
                argv(&["ruby", "{src}"]),
                LimitsPatch { processes: Some(64), ..LimitsPatch::default() },
                LimitsPatch::default(),
            ),
        };
        if language == Language::Go {
            for (k, v) in [("GOCACHE", CACHE_DIR), ("GOPATH", "/tmp/gopath"), ("CGO_ENABLED", "0"), ("GO111MODULE", "off")] {
                env.insert(k.to_owned(), v.to_owned());
            }
        }
        env.extend(self.env.clone());
        Toolchain {
            language,
            source: self.source.clone().unwrap_or_else(|| source.to_owned()),
            compile: self.compile.clone().unwrap_or(compile),
            run: self.run.clone().unwrap_or(run),
            env,
            prelude: self.prelude.clone().unwrap_or_default(),
            limits: self.limits.apply(&lang_limits.apply(limits)),
            compile_limits: self.compile_limits.apply(&lang_compile.apply(compile_limits)),
            compile_cache: self.compile_cache.unwrap_or(language == Language::Go),
        }
    }
}

/// `[stages.execute]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExecuteConfig {
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
            limits: Limits::default(),
            // Generous: the first Go build of a run on Go >= 1.20 compiles the standard library
            // into the shared cache.
            compile_limits: Limits {
                cpu_time_ms: 60_000,
                wall_time_ms: 120_000,
                memory_mb: 2048,
                address_space_mb: None,
                processes: 256,
                open_files: 1024,
                output_bytes: 1 << 20,
                file_size_bytes: 256 << 20,
                tmp_size_mb: 512,
                stack_mb: 64,
            },
            work_dir: None,
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
        section.resolve(language, &self.limits, &self.compile_limits)
    }

    /// Check what serde cannot: non-empty run commands, non-zero limits.
    pub fn validate(&self) -> Result<(), ExecuteError> {
        for language in Language::ALL {
            let t = self.toolchain(language);
            if t.run.is_empty() {
                return Err(ExecuteError::Config(format!("`{language}.run` is empty")));
            }
            for (what, l) in [("limits", &t.limits), ("compile_limits", &t.compile_limits)] {
                if l.cpu_time_ms == 0 || l.wall_time_ms == 0 || l.memory_mb == 0 || l.processes == 0 || l.open_files < 4 {
                    return Err(ExecuteError::Config(format!("`{language}.{what}`: a limit is zero (or open_files < 4)")));
                }
            }
        }
        Ok(())
    }
}

/// Does the program's output match the expected output (DESIGN §1.4)?
///
/// CRLF → LF, strip both; equal → match. Otherwise split on whitespace: same number of
/// tokens, and each pair equal, or both numeric and within 1e-6 absolute.
pub fn outputs_match(expected: &str, actual: &str) -> bool {
    let e = expected.replace("\r\n", "\n");
    let a = actual.replace("\r\n", "\n");
    let (e, a) = (e.trim(), a.trim());
    if e == a {
        return true;
    }
    let (et, at): (Vec<&str>, Vec<&str>) = (e.split_whitespace().collect(), a.split_whitespace().collect());
    et.len() == at.len() && et.iter().zip(&at).all(|(x, y)| x == y || numbers_close(x, y))
}

/// Both tokens are decimal numbers within 1e-6 (no `inf`/`nan` spellings).
fn numbers_close(x: &str, y: &str) -> bool {
    let numeric = |s: &str| {
        !s.is_empty()
            && s.bytes().any(|b| b.is_ascii_digit())
            && s.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
    };
    if !numeric(x) || !numeric(y) {
        return false;
    }
    match (x.parse::<f64>(), y.parse::<f64>()) {
        (Ok(a), Ok(b)) => (a - b).abs() <= 1e-6,
        _ => false,
    }
}

/// Functional (LeetCode) outputs: textual match, else equal as JSON values (numbers within
/// 1e-6), so `[1, 2]` matches `[1,2]`.
pub fn functional_outputs_match(expected: &str, actual: &str) -> bool {
    if outputs_match(expected, actual) {
        return true;
    }
    match (serde_json::from_str::<serde_json::Value>(expected.trim()), serde_json::from_str::<serde_json::Value>(actual.trim())) {
        (Ok(e), Ok(a)) => json_close(&e, &a),
        _ => false,
    }
}

fn json_close(e: &serde_json::Value, a: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (e, a) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-6,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_close(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_close(v, w)))
        }
        _ => e == a,
    }
}

/// The class of a Java program that declares `main`: the top-level class whose body holds
/// `static void main`, else the public class, else `Main`.
pub fn java_main_class(code: &str) -> String {
    // Blank out comments and string/char literals, keeping offsets.
    let bytes = code.as_bytes();
    let mut clean = bytes.to_vec();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        let end = if rest.starts_with(b"//") {
            bytes[i..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |p| i + p)
        } else if rest.starts_with(b"/*") {
            code[i + 2..].find("*/").map_or(bytes.len(), |p| i + 2 + p + 2)
        } else if rest[0] == b'"' || rest[0] == b'\'' {
            let q = rest[0];
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != q && bytes[j] != b'\n' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            (j + 1).min(bytes.len())
        } else {
            i += 1;
            continue;
        };
        for b in &mut clean[i..end] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
        i = end.max(i + 1);
    }
    let clean = String::from_utf8_lossy(&clean).into_owned();
    let class_re = regex::Regex::new(r"\b(?:(public)\s+)?(?:(?:final|abstract|static)\s+)*class\s+([A-Za-z_$][\w$]*)")
        .expect("valid regex");
    let main_re = regex::Regex::new(r"\bstatic\s+(?:final\s+)?void\s+main\s*\(").expect("valid regex");
    // Top-level classes with their body spans.
    let mut depth = 0usize;
    let mut depth_at = Vec::with_capacity(clean.len() + 1);
    for b in clean.bytes() {
        depth_at.push(depth);
        match b {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    depth_at.push(depth);
    let mut public = None;
    let main_at = main_re.find(&clean).map(|m| m.start());
    for cap in class_re.captures_iter(&clean) {
        let whole = cap.get(0).map_or(0, |m| m.start());
        if depth_at[whole] != 0 {
            continue;
        }
        let name = cap[2].to_owned();
        if cap.get(1).is_some() && public.is_none() {
            public = Some(name.clone());
        }
        if let Some(m) = main_at {
            // The class's body: from its `{` to the matching `}`.
            let open = clean[whole..].find('{').map(|p| whole + p);
            if let Some(open) = open {
                let close = (open + 1..clean.len()).find(|&k| depth_at[k + 1] == 0 && clean.as_bytes()[k] == b'}');
                if m > open && close.is_none_or(|c| m < c) {
                    return name;
                }
            }
        }
    }
    public.unwrap_or_else(|| "Main".to_owned())
}

/// Substitute placeholders in one argument.
fn fill(arg: &str, src: &str, main_class: &str, memory_mb: u64) -> String {
    arg.replace("{src}", src)
        .replace("{dir}", BOX_DIR)
        .replace("{main_class}", main_class)
        .replace("{memory_mb}", &memory_mb.to_string())
}

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

/// The verdict of one test run.
pub fn verdict_of(outcome: &Outcome, test: &TestCase, limits: &Limits) -> Verdict {
    // The JVM reports a failed commit on stdout, everything else on stderr.
    let said_oom = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(64 << 10)..]);
        OOM_MARKERS.iter().any(|m| text.contains(m))
    };
    let oom = || said_oom(&outcome.stderr) || said_oom(&outcome.stdout);
    match outcome.limit {
        Some(LimitHit::Output) => return Verdict::OutputLimit,
        // A program that ran out of memory and was then slow to die is a memory failure.
        Some(LimitHit::WallTime | LimitHit::CpuTime) => {
            return if oom() { Verdict::MemoryLimit } else { Verdict::TimeLimit };
        }
        None => {}
    }
    if !outcome.success() {
        let near_limit = outcome.peak_memory_kb >= limits.memory_mb * 1024 * 9 / 10;
        return if near_limit || oom() { Verdict::MemoryLimit } else { Verdict::RuntimeError };
    }
    let actual = String::from_utf8_lossy(&outcome.stdout);
    let matches = match test.testtype {
        TestType::Stdin => outputs_match(&test.output, &actual),
        TestType::Functional => functional_outputs_match(&test.output, &actual),
    };
    if matches { Verdict::Passed } else { Verdict::WrongAnswer }
}

/// Judge one solution against `tests`: compile once, run each test (in parallel on the
/// current rayon pool).
pub fn judge_solution(
    config: &ExecuteConfig,
    sandbox: &Sandbox,
    solution: &Solution,
    tests: &[TestCase],
    work_root: &Path,
    slot: usize,
) -> Result<(SolutionResult, u64), ExecuteError> {
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
            Ok(()) => {
                std::fs::set_permissions(&cache, std::os::unix::fs::PermissionsExt::from_mode(0o777)).map_err(io_err(&cache))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(ExecuteError::Io { path: cache, source: e }),
        }
        Some(cache)
    } else {
        None
    };
    let result = judge_in(&toolchain, sandbox, solution, tests, &dir, cache);
    // The directory is the judge's again after the compile (see `Sandbox::run`).
    std::fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
    result
}

fn judge_in(
    toolchain: &Toolchain,
    sandbox: &Sandbox,
    solution: &Solution,
    tests: &[TestCase],
    dir: &Path,
    cache: Option<PathBuf>,
) -> Result<(SolutionResult, u64), ExecuteError> {
    let main_class = if solution.language == Language::Java { java_main_class(&solution.code) } else { String::new() };
    let source_name = fill(&toolchain.source, "", &main_class, 0);
    let src_inside = format!("{BOX_DIR}/{source_name}");
    let code = format!("{}{}", toolchain.prelude, solution.code);
    let src_host = dir.join(&source_name);
    fs_err::write(&src_host, code).map_err(|e| ExecuteError::Io { path: src_host.clone(), source: e })?;
    let env: Vec<(String, String)> = toolchain.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
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
    };

    if !toolchain.compile.is_empty() {
        let limits = &toolchain.compile_limits;
        let program = Program {
            argv: toolchain.compile.iter().map(|a| fill(a, &src_inside, &main_class, limits.memory_mb)).collect(),
            env: env.clone(),
            stdin: Vec::new(),
            dir: dir.to_owned(),
            access: DirAccess::Writable,
            cache,
        };
        let outcome = sandbox.run(&program, limits).map_err(|source| ExecuteError::Sandbox {
            solution: solution.id.clone(),
            step: "compile".into(),
            source,
        })?;
        cpu_ms += outcome.cpu_ms;
        if !outcome.success() {
            let mut message = excerpt(&outcome.stderr);
            if message.trim().is_empty() {
                message = format!("compiler ended with {:?} (limit {:?})", outcome.status, outcome.limit);
            }
            let tests = (0..tests.len())
                .map(|i| TestResult { index: i as u32, verdict: Verdict::CompileError, wall_ms: 0, cpu_ms: 0, peak_memory_kb: 0 })
                .collect();
            return Ok((SolutionResult { tests, message, ..base }, cpu_ms));
        }
    }

    let limits = &toolchain.limits;
    let run_argv: Vec<String> = toolchain.run.iter().map(|a| fill(a, &src_inside, &main_class, limits.memory_mb)).collect();
    let runs: Vec<Result<(TestResult, Outcome), ExecuteError>> = tests
        .par_iter()
        .enumerate()
        .map(|(i, test)| {
            let program = Program {
                argv: run_argv.clone(),
                env: env.clone(),
                stdin: test.input.as_bytes().to_vec(),
                dir: dir.to_owned(),
                access: DirAccess::ReadOnly,
                cache: None,
            };
            let outcome = sandbox.run(&program, limits).map_err(|source| ExecuteError::Sandbox {
                solution: solution.id.clone(),
                step: format!("test {i}"),
                source,
            })?;
            let verdict = verdict_of(&outcome, test, limits);
            let result = TestResult {
                index: i as u32,
                verdict,
                wall_ms: outcome.wall_ms,
                cpu_ms: outcome.cpu_ms,
                peak_memory_kb: outcome.peak_memory_kb,
            };
            Ok((result, outcome))
        })
        .collect();
    let mut results = Vec::with_capacity(runs.len());
    let mut message = String::new();
    for run in runs {
        let (result, outcome) = run?;
        cpu_ms += outcome.cpu_ms;
        if message.is_empty() && result.verdict != Verdict::Passed {
            message = format!("test {}: {}: {}", result.index, result.verdict, excerpt(&outcome.stderr));
        }
        results.push(result);
    }
    let passed_n = results.iter().filter(|r| r.verdict == Verdict::Passed).count();
    let pass_rate = if results.is_empty() { 0.0 } else { passed_n as f64 / results.len() as f64 };
    let passed = !results.is_empty() && passed_n == results.len();
    Ok((SolutionResult { passed, pass_rate, tests: results, message, ..base }, cpu_ms))
}

/// The stage: judge every solution against its problem's tests (public, then private).
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
    config.validate()?;
    let by_id: HashMap<&ProblemId, &Problem> = problems.iter().map(|p| (&p.id, p)).collect();
    let mut without_problem = Vec::new();
    let mut work: Vec<(usize, &Solution, Vec<TestCase>)> = Vec::new();
    for (i, s) in solutions.iter().enumerate() {
        match by_id.get(&s.problem_id) {
            Some(p) => work.push((i, s, p.public_tests.iter().chain(&p.private_tests).cloned().collect())),
            None => without_problem.push(s.id.clone()),
        }
    }
    let base = config.work_dir.clone().unwrap_or_else(std::env::temp_dir);
    fs_err::create_dir_all(&base).map_err(|e| ExecuteError::Io { path: base.clone(), source: e })?;
    let root = tempfile::Builder::new()
        .prefix("coreb-execute-")
        .tempdir_in(&base)
        .map_err(|source| ExecuteError::Io { path: base.clone(), source })?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .thread_name(|i| format!("coreb-execute-{i}"))
        .build()
        .map_err(|e| ExecuteError::Config(format!("thread pool: {e}")))?;
    let judged: Vec<Result<(SolutionResult, u64), ExecuteError>> = pool.install(|| {
        work.par_iter()
            .map(|(slot, s, tests)| {
                let judged = judge_solution(config, sandbox, s, tests, root.path(), *slot);
                progress();
                judged
            })
            .collect()
    });
    let mut stats = ExecuteStats { solutions_without_problem: without_problem.len(), ..ExecuteStats::default() };
    let mut results = Vec::with_capacity(judged.len());
    for j in judged {
        let (result, cpu) = j?;
        stats.solutions += 1;
        stats.solutions_passed += usize::from(result.passed);
        stats.tests += result.tests.len();
        stats.cpu_ms += cpu;
        for t in &result.tests {
            *stats.verdicts.entry(t.verdict).or_default() += 1;
        }
        results.push(result);
    }
    Ok(ExecuteOutput { results, without_problem, stats })
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

/// The engine's one call: read the problems and solutions tables, judge (calling `progress`
/// once per judged solution), write the verdicts table atomically (`<out>.tmp`, then rename).
pub fn execute_tables(
    problems: &Path,
    solutions: &Path,
    out: &Path,
    config: &ExecuteConfig,
    jobs: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<ExecuteTablesReport, ExecuteError> {
    let problems = crate::tables::ProblemReader::read_all(problems)?;
    let solutions = crate::tables::solutions::read_solutions(solutions)?;
    let sandbox = Sandbox::new(config.sandbox.clone()).map_err(ExecuteError::SandboxSetup)?;
    let output = execute_with_progress(config, &problems, &solutions, &sandbox, jobs, progress)?;
    crate::tables::verdicts::write_verdicts(out, &output.results)?;
    Ok(ExecuteTablesReport {
        stats: output.stats,
        without_problem: output.without_problem,
        isolation: sandbox.isolation().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_rules() {
        assert!(outputs_match("Yes\r\n", "Yes\n\n"));
        assert!(outputs_match("1 2\n3", "1   2 3"));
        assert!(outputs_match("0.3333333", "0.33333333"));
        assert!(!outputs_match("0.33", "0.34"));
        assert!(!outputs_match("1 2", "1 2 3"));
        assert!(!outputs_match("Yes", "yes"));
        assert!(!outputs_match("inf", "nan"));
        assert!(functional_outputs_match("[-3,-1,1,3,5]", "[-3, -1, 1, 3, 5]\n"));
        assert!(functional_outputs_match("1.5", "1.5000001"));
        assert!(!functional_outputs_match("[1,2]", "[2,1]"));
        assert!(functional_outputs_match("\"abc\"", "\"abc\""));
    }

    #[test]
    fn java_main_class_found() {
        assert_eq!(java_main_class("public class Main { public static void main(String[] a) {} }"), "Main");
        let code = "import java.util.*;\n// class Fake\nclass Helper { static class Pair {} }\npublic class Solution {\n  static class Node { }\n  String s = \"class X {\";\n  public static void main(String[] args) { }\n}\n";
        assert_eq!(java_main_class(code), "Solution");
        assert_eq!(java_main_class("class A {}\nclass B { public static void main(String[] x) {} }"), "B");
        assert_eq!(java_main_class("class A {}"), "Main");
    }

    #[test]
    fn config_rejects_unknown_keys_and_patches_limits() {
        let cfg: ExecuteConfig = toml_like(r#"{"java": {"limits": {"memory_mb": 3000}}, "limits": {"cpu_time_ms": 1000}}"#);
        let java = cfg.toolchain(Language::Java);
        assert_eq!(java.limits.memory_mb, 3000);
        assert_eq!(java.limits.cpu_time_ms, 1000);
        assert_eq!(cfg.toolchain(Language::Cpp).limits.memory_mb, 512);
        assert!(serde_json::from_str::<ExecuteConfig>(r#"{"pyhton": {}}"#).is_err());
        assert!(serde_json::from_str::<ExecuteConfig>(r#"{"cpp": {"compiler": "clang"}}"#).is_err());
    }

    fn toml_like(json: &str) -> ExecuteConfig {
        serde_json::from_str(json).unwrap()
    }
}
