//! A solution's tests in one process where the program cannot tell (issue #61):
//! `[stages.execute] batch = ["java"]`.
//!
//! A Java test pays for a JVM of its own: about 50 ms of CPU to start one, most of a test's
//! cost when the program itself runs for a millisecond (in `bench/month` at N = 175, Java was
//! 56 % of the programs' CPU). With `batch`, a solution's tests first run in one JVM, the
//! runner `CorebBatch` (`runners/CorebBatch.java`, compiled once per `execute` run), in the
//! order judging would run them: each test loads the solution's classes anew through a class
//! loader of its own (its static fields start fresh), gets its own `System.in`, `System.out` and
//! `System.err` (stdin read at most 64 KiB at a time, as from the judge's pipe), and runs `main`
//! on a thread with the run command's stack size.
//!
//! The runner only ever saves work; it never decides a verdict a process of its own would
//! not have given:
//! - it keeps a test's output only when `main` returned normally, well inside the test's
//!   limits (a quarter of its wall and CPU limits: a JVM of its own, started cold, would not
//!   have come near them), with no thread left running and no output over the cap;
//! - at the first test that does anything else (throws, exits, is slow, prints too much) it
//!   stops, and that test and every later one run as processes of their own, as without
//!   `batch`: a runtime error, a time limit or a memory limit is always a real process's;
//! - a kept output is compared as any test's ([`crate::verdict_of`]), so it is `passed` or
//!   `wrong_answer`; which tests judging reads (labels mode stops at the first failure, the
//!   gate at a public failure) does not change.
//!
//! Whether a program may run that way is decided from its text, conservatively
//! ([`BatchRun::allows`]): it must name nothing that could tell one JVM from several or
//! reach past its own classes and standard streams (`System.exit`, `Runtime`, threads and
//! executors, files and file descriptors, system properties, the default locale, class
//! loaders, reflection …). Anything else runs test by test as before. A kept test records the
//! runner's measure of it (the thread's CPU time, the wall time of `main`) and the whole
//! runner's peak memory.

use serde::Serialize;

use coreb_sandbox::{BOX_DIR, ExitStatus, Limits, Outcome};

/// Running the tests of one solution in one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum BatchRun {
    /// One JVM, a class loader per test (`CorebBatch`).
    #[serde(rename = "one JVM, a class loader per test")]
    JavaClassLoaders,
}

/// The Java runner's source.
const JAVA_RUNNER: &str = include_str!("runners/CorebBatch.java");

/// Where the runner's classes are put in a solution's directory (a name no Java class can
/// have, so the solution's class loader never finds them).
pub const RUNNER_DIR: &str = ".coreb-batch";

/// Words that send a Java program to a process per test: whatever could tell one JVM from
/// several, or reach past the program's own classes and standard streams. Matched anywhere in
/// the text (strings and comments included), so a word can only keep a program out.
const JAVA_WORDS: &[&str] = &[
    "System.exit",
    "Runtime",
    "Thread",
    "Executor",
    "ForkJoin",
    "Future",
    "concurrent",
    "parallel",
    "Timer",
    "File",
    "Path",
    "setIn",
    "setOut",
    "setErr",
    "Property",
    "getenv",
    "Locale",
    "setDefault",
    "ClassLoader",
    "forName",
    "reflect",
    "Process",
    "console",
    "available",
    "SecurityManager",
    "Reference",
    "Cleaner",
    "finalize",
    "management",
    "Unsafe",
    "MethodHandle",
    " native ",
    "Properties",
    "loadLibrary",
    "getResource",
    "identityHashCode",
    "System.gc",
    "halt",
];

impl BatchRun {
    /// The batch runner of `language`, if it has one.
    pub fn of(language: coreb_data::solution::Language) -> Option<BatchRun> {
        match language {
            coreb_data::solution::Language::Java => Some(BatchRun::JavaClassLoaders),
            _ => None,
        }
    }

    /// The program the run command must start with.
    pub fn interpreter(self) -> &'static str {
        "java"
    }

    /// The runner's source file: its name and text.
    pub fn source(self) -> (&'static str, &'static str) {
        ("CorebBatch.java", JAVA_RUNNER)
    }

    /// Whether the solution's own code (without the judge's driver) may run in the batch.
    pub fn allows(self, code: &str) -> bool {
        code.is_ascii() && !JAVA_WORDS.iter().any(|w| code.contains(w))
    }

    /// The runner's command, from the run command `run` (placeholders filled): the same JVM
    /// and flags, the runner's class path instead of the solution's, its main class and
    /// arguments. `None` where `run` does not end in `-cp <dir> <main class>` (a run command
    /// of a manifest's own), which then runs test by test.
    pub fn command(self, run: &[String], main_class: &str, limits: &Limits) -> Option<Vec<String>> {
        let [head @ .., cp, dir, class] = run else {
            return None;
        };
        if cp != "-cp" || dir != BOX_DIR || class != main_class || head.first()? != "java" {
            return None;
        }
        let stack = head.iter().find_map(|a| a.strip_prefix("-Xss")).map_or(Some(0), bytes)?;
        let mut argv = head.to_vec();
        argv.extend([
            "-cp".to_owned(),
            format!("{BOX_DIR}/{RUNNER_DIR}"),
            "CorebBatch".to_owned(),
            BOX_DIR.to_owned(),
            main_class.to_owned(),
            stack.to_string(),
            (limits.wall_time_ms / 4).max(1).to_string(),
            (limits.cpu_time_ms / 4).max(1).to_string(),
            limits.output_bytes.min(i32::MAX as u64).to_string(),
            TOTAL_OUTPUT.to_string(),
        ]);
        Some(argv)
    }

    /// The limits of the runner's process for `tests` tests: room for each test's budget
    /// and one JVM start, the outputs of every test, the run's other limits.
    pub fn limits(self, limits: &Limits, tests: usize) -> Limits {
        let n = tests as u64 + 1;
        Limits {
            cpu_time_ms: (limits.cpu_time_ms / 4).max(1) * n + limits.cpu_time_ms,
            wall_time_ms: (limits.wall_time_ms / 4).max(1) * n + limits.wall_time_ms,
            output_bytes: TOTAL_OUTPUT + (tests as u64 + 1) * 64,
            ..limits.clone()
        }
    }
}

/// The most output the runner keeps of all tests together; past it, the rest run as
/// processes of their own.
const TOTAL_OUTPUT: u64 = 64 << 20;

/// `64m`, `512k`, `1g` or a number of bytes (the JVM's `-Xss`).
fn bytes(size: &str) -> Option<u64> {
    let (digits, unit) = match size.as_bytes().last()? {
        b'k' | b'K' => (&size[..size.len() - 1], 1 << 10),
        b'm' | b'M' => (&size[..size.len() - 1], 1 << 20),
        b'g' | b'G' => (&size[..size.len() - 1], 1 << 30),
        _ => (size, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// The runner's stdin: the number of tests, then each input with its length (big-endian, as
/// Java's `DataInputStream` reads them). `None` past Java's array limits.
pub fn stdin<'a>(inputs: impl ExactSizeIterator<Item = &'a [u8]>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    out.extend(i32::try_from(inputs.len()).ok()?.to_be_bytes());
    for input in inputs {
        out.extend(i32::try_from(input.len()).ok()?.to_be_bytes());
        out.extend_from_slice(input);
    }
    Some(out)
}

/// The tests the runner kept, in order, as the outcomes of runs of their own (exit 0, no
/// limit hit; the runner's peak memory and memory bound): every whole `K` frame of its stdout
/// before the first `B`, `E`, anything else or the end of the bytes (a runner killed
/// mid-frame keeps the frames before it).
pub fn kept(runner: &Outcome) -> Vec<Outcome> {
    fn long(rest: &mut &[u8]) -> Option<u64> {
        let (head, tail) = rest.split_first_chunk::<8>()?;
        *rest = tail;
        u64::try_from(i64::from_be_bytes(*head)).ok()
    }
    fn text(rest: &mut &[u8]) -> Option<Vec<u8>> {
        let (head, tail) = rest.split_first_chunk::<4>()?;
        let len = usize::try_from(i32::from_be_bytes(*head)).ok()?;
        if tail.len() < len {
            return None;
        }
        let (text, tail) = tail.split_at(len);
        *rest = tail;
        Some(text.to_vec())
    }
    let mut out = Vec::new();
    let mut rest = runner.stdout.as_slice();
    while let [b'K', tail @ ..] = rest {
        let mut at = tail;
        let frame = (|| {
            let (cpu_ns, wall_ns) = (long(&mut at)?, long(&mut at)?);
            let (stdout, stderr) = (text(&mut at)?, text(&mut at)?);
            Some(Outcome {
                status: ExitStatus::Exited(0),
                stdout,
                stderr,
                wall_ms: wall_ns / 1_000_000,
                cpu_ms: cpu_ns / 1_000_000,
                peak_memory_kb: runner.peak_memory_kb,
                memory_floor_kb: runner.memory_floor_kb,
                limit: None,
                memory_bound: runner.memory_bound,
                gave_way: false,
            })
        })();
        let Some(frame) = frame else { break };
        out.push(frame);
        rest = at;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_that_could_tell_run_test_by_test() {
        let ok = "import java.util.*;\npublic class Main { static int n; public static void main(String[] a) { Scanner s = new Scanner(System.in); System.out.println(s.nextInt() + n++); } }";
        assert!(BatchRun::JavaClassLoaders.allows(ok));
        for word in [
            "System.exit(0);",
            "new Thread(r)",
            "Runtime.getRuntime()",
            "new FileInputStream(FileDescriptor.in)",
            "System.setProperty(\"a\", \"b\")",
            "Locale.setDefault(Locale.US)",
            "list.parallelStream()",
            "System.in.available()",
            "Class.forName(\"X\")",
        ] {
            assert!(!BatchRun::JavaClassLoaders.allows(&ok.replace("s.nextInt()", word)), "{word}");
        }
        assert!(!BatchRun::JavaClassLoaders.allows(&ok.replace("Main", "Maïn")));
    }

    #[test]
    fn the_command_keeps_the_jvm_and_its_flags() {
        let run: Vec<String> = ["java", "-XX:+UseSerialGC", "-Xss64m", "-cp", BOX_DIR, "Main"]
            .map(str::to_owned)
            .to_vec();
        let limits = Limits { cpu_time_ms: 8_000, wall_time_ms: 20_000, ..Limits::default() };
        let argv = BatchRun::JavaClassLoaders.command(&run, "Main", &limits).unwrap();
        let want = format!(
            "java -XX:+UseSerialGC -Xss64m -cp {BOX_DIR}/{RUNNER_DIR} CorebBatch {BOX_DIR} Main {} 5000 2000 {} {}",
            64 << 20,
            16 << 20,
            64 << 20
        );
        assert_eq!(argv.join(" "), want);
        // A run command of a manifest's own runs test by test.
        let mut other = run.clone();
        other[4] = "/elsewhere".to_owned();
        assert_eq!(BatchRun::JavaClassLoaders.command(&other, "Main", &limits), None);
        assert_eq!(BatchRun::JavaClassLoaders.command(&run, "Other", &limits), None);
        let batch = BatchRun::JavaClassLoaders.limits(&limits, 3);
        assert_eq!((batch.cpu_time_ms, batch.wall_time_ms), (16_000, 40_000));
        assert_eq!(batch.memory_mb, limits.memory_mb);
    }

    #[test]
    fn frames_are_kept_up_to_the_first_stop_or_the_end_of_the_bytes() {
        let frame = |cpu_ns: i64, wall_ns: i64, out: &[u8]| {
            let mut f = vec![b'K'];
            f.extend(cpu_ns.to_be_bytes());
            f.extend(wall_ns.to_be_bytes());
            f.extend((out.len() as i32).to_be_bytes());
            f.extend_from_slice(out);
            f.extend(1i32.to_be_bytes());
            f.push(b'!');
            f
        };
        let runner = |stdout: &[u8]| Outcome {
            status: ExitStatus::Signaled(9),
            stdout: stdout.to_vec(),
            stderr: b"the runner's".to_vec(),
            wall_ms: 900,
            cpu_ms: 800,
            peak_memory_kb: 70_000,
            memory_floor_kb: 0,
            limit: Some(coreb_sandbox::LimitHit::WallTime),
            memory_bound: coreb_sandbox::MemoryBound::Rlimit,
            gave_way: true,
        };
        let mut out = frame(3_000_000, 5_000_000, b"6\n");
        out.extend(frame(1_000_000, 2_000_000, b""));
        let two = out.clone();
        out.extend([b'B', 0, 0, 0, 2, 0, 1, b'x']);
        out.extend(frame(1, 1, b"never read"));
        let kept = kept(&runner(&out));
        assert_eq!(kept.len(), 2);
        let first = &kept[0];
        assert_eq!((first.cpu_ms, first.wall_ms, first.peak_memory_kb), (3, 5, 70_000));
        assert_eq!((&first.stdout[..], &first.stderr[..]), (&b"6\n"[..], &b"!"[..]));
        assert!(first.success() && !first.gave_way);
        assert_eq!(kept[1].stdout, b"");
        // Cut anywhere inside the second frame: only the first is kept.
        let one = frame(3_000_000, 5_000_000, b"6\n").len();
        for cut in one..two.len() {
            assert_eq!(super::kept(&runner(&two[..cut])).len(), 1, "cut at {cut}");
        }
        assert!(super::kept(&runner(b"E")).is_empty());
        assert_eq!(
            stdin([&b"1 2"[..], b""].into_iter()).unwrap(),
            [0, 0, 0, 2, 0, 0, 0, 3, b'1', b' ', b'2', 0, 0, 0, 0]
        );
        assert_eq!(
            (bytes("64m"), bytes("512k"), bytes("1G"), bytes("100"), bytes("x")),
            (Some(64 << 20), Some(512 << 10), Some(1 << 30), Some(100), None)
        );
    }
}
