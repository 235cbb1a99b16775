//! Throughput of the `execute` stage beside a naive judge.
//!
//! Workload: the correct solutions of the four fixture problems (tests/fixtures/execute) in
//! all five languages, each repeated as several samples, each problem's tests repeated, so a
//! few hundred solution × test pairs. Both judges run the same pairs on a pool of `--jobs`
//! workers (default: all cores):
//! - `coreb`: [`coreb_judge::execute`]: compile once per solution, every test sandboxed;
//! - `naive`: like the reference CoREB harness, one unsandboxed process per test that also
//!   recompiles per test (`python3 f.py`, `g++ -O2` + run, `javac` + `java`, `go run`, `ruby`).
//!
//! Prints pairs, wall time, tests/s, CPU utilisation (children's user+sys CPU from
//! `getrusage(RUSAGE_CHILDREN)` / wall / cores) and the throughput ratio.
//!
//! Run: `cargo bench -p coreb-stages --bench execute -- [--samples N] [--test-copies N] [--jobs N] [--skip-naive]`

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coreb_data::problem::{Problem, TestCase, TestType};
use coreb_data::solution::{Language, Solution, SolutionId};
use coreb_judge::driver::assemble;
use coreb_judge::{ExecuteConfig, Harness, execute, functional_outputs_match, outputs_match};
use coreb_sandbox::{Sandbox, SandboxConfig};
use coreb_stages::ingest::{IngestConfig, decode_row};
use rayon::prelude::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/execute")
}

fn children_cpu() -> Duration {
    // SAFETY: an all-zero rusage is valid and getrusage fills it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(u.ru_utime) + tv(u.ru_stime)
}

struct Figures {
    name: &'static str,
    pairs: usize,
    passed: usize,
    wall: Duration,
    cpu: Duration,
}

impl Figures {
    fn print(&self, cores: usize) {
        let secs = self.wall.as_secs_f64();
        println!(
            "{:<6} pairs {:>4}  passed {:>4}  wall {:>7.2} s  {:>7.2} tests/s  cpu {:>7.2} s  utilisation {:>5.1}% of {} cores",
            self.name,
            self.pairs,
            self.passed,
            secs,
            self.pairs as f64 / secs,
            self.cpu.as_secs_f64(),
            100.0 * self.cpu.as_secs_f64() / secs / cores as f64,
            cores
        );
    }
}

/// One unsandboxed process chain per test, recompiling every time.
/// `program` is what the judge compiles for `solution`: the solution itself, or for a LeetCode
/// problem the solution inside its language's driver.
fn naive_test(solution: &Solution, program: &str, test: &TestCase) -> bool {
    let Ok(dir) = tempfile::tempdir() else {
        return false;
    };
    let main_class = coreb_judge::java_main_class(program);
    let file = match solution.language {
        Language::Java => format!("{main_class}.java"),
        l => format!("main.{}", l.extension()),
    };
    if std::fs::write(dir.path().join(&file), program).is_err() {
        return false;
    }
    let script = match solution.language {
        Language::Python => format!("python3 {file}"),
        Language::Cpp => format!("g++ -std=c++17 -O2 -o main {file} && ./main"),
        Language::Java => format!("javac -d . {file} && java -cp . {main_class}"),
        Language::Go => format!("go run {file}"),
        Language::Ruby => format!("ruby {file}"),
    };
    let child = Command::new("/bin/sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return false };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(test.input.as_bytes());
    }
    let Ok(out) = child.wait_with_output() else {
        return false;
    };
    let actual = String::from_utf8_lossy(&out.stdout);
    out.status.success()
        && match test.testtype {
            TestType::Stdin => outputs_match(&test.output, &actual),
            TestType::Functional => functional_outputs_match(&test.output, &actual),
        }
}

fn main() {
    let mut samples = 3usize;
    let mut copies = 2usize;
    let mut jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let skip_naive = std::env::args().any(|a| a == "--skip-naive");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = || args.get(i + 1).and_then(|v| v.parse::<usize>().ok());
        match args[i].as_str() {
            "--samples" => samples = value().expect("--samples N"),
            "--test-copies" => copies = value().expect("--test-copies N"),
            "--jobs" => jobs = value().expect("--jobs N"),
            _ => {} // cargo bench passes `--bench`.
        }
        i += if args[i].starts_with("--") && value().is_some() { 2 } else { 1 };
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    let text =
        std::fs::read_to_string(fixtures().join("problems.jsonl")).expect("fixture problems");
    let mut problems: Vec<Problem> = text
        .lines()
        .map(|l| decode_row(l.as_bytes(), &IngestConfig::default()).expect("row"))
        .collect();
    for p in &mut problems {
        let tests = p.public_tests.clone();
        for _ in 1..copies {
            p.public_tests.extend(tests.iter().cloned());
        }
    }
    let mut solutions = Vec::new();
    for p in &problems {
        for language in Language::ALL {
            let file =
                fixtures().join(format!("solutions/{}/ok.{}", p.question_id, language.extension()));
            let code = std::fs::read_to_string(&file).expect("fixture solution");
            for sample in 0..samples as u32 {
                solutions.push(Solution {
                    id: SolutionId::new(&p.id, "bench", language, sample),
                    problem_id: p.id.clone(),
                    model: "bench".into(),
                    language,
                    sample,
                    code: code.clone(),
                });
            }
        }
    }
    let pairs: Vec<(&Solution, &TestCase)> = solutions
        .iter()
        .flat_map(|s| {
            let p = problems.iter().find(|p| p.id == s.problem_id).expect("problem");
            p.public_tests.iter().map(move |t| (s, t))
        })
        .collect();
    println!(
        "workload: {} solutions, {} solution x test pairs, jobs {jobs}, {cores} cores",
        solutions.len(),
        pairs.len()
    );

    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    println!("isolation: {}", sandbox.isolation());
    let config = ExecuteConfig::default();
    let (cpu0, t0) = (children_cpu(), Instant::now());
    let out = execute(&config, &problems, &solutions, &sandbox, jobs).expect("execute");
    let ours = Figures {
        name: "coreb",
        pairs: out.stats.tests,
        passed: out.stats.verdicts.get(&coreb_judge::Verdict::Passed).copied().unwrap_or(0),
        wall: t0.elapsed(),
        cpu: children_cpu() - cpu0,
    };

    ours.print(cores);
    if skip_naive {
        return;
    }
    // The same programs the judge compiles (a LeetCode solution inside its driver).
    let harness: std::collections::HashMap<_, _> =
        problems.iter().map(|p| (p.id.clone(), Harness::of(p))).collect();
    let program = |s: &Solution| match harness.get(&s.problem_id) {
        Some(Harness::Driver(signature)) => assemble(&s.code, s.language, signature),
        _ => s.code.clone(),
    };
    let pairs: Vec<(&Solution, String, &TestCase)> =
        pairs.iter().map(|(s, t)| (*s, program(s), *t)).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build().expect("pool");
    let (cpu0, t0) = (children_cpu(), Instant::now());
    let passed = pool.install(|| pairs.par_iter().filter(|(s, p, t)| naive_test(s, p, t)).count());
    let naive = Figures {
        name: "naive",
        pairs: pairs.len(),
        passed,
        wall: t0.elapsed(),
        cpu: children_cpu() - cpu0,
    };

    naive.print(cores);
    println!(
        "ratio: coreb is {:.2}x the naive judge's throughput ({:.2}x less CPU)",
        naive.wall.as_secs_f64() / ours.wall.as_secs_f64(),
        naive.cpu.as_secs_f64() / ours.cpu.as_secs_f64()
    );
    let mut per_language = std::collections::BTreeMap::new();
    for r in &out.results {
        let e = per_language.entry(r.language.as_str()).or_insert((0usize, 0u64));
        e.0 += r.tests.len();
        e.1 += r.tests.iter().map(|t| t.wall_ms).sum::<u64>();
    }
    for (lang, (n, ms)) in per_language {
        println!("coreb {lang:<6} {n:>4} tests, mean test wall {:>6.1} ms", ms as f64 / n as f64);
    }
}
