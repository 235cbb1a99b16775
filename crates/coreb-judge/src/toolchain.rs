//! Language recipes: how each language is built and run ([`LanguageConfig`] →
//! [`Toolchain`]), its time-limit multiplier, and the versions of the programs it uses
//! ([`toolchain_versions`]), which go into the execute stage's key and the release MANIFEST so
//! that a changed compiler or interpreter re-judges everything.

use std::collections::BTreeMap;

use coreb_sandbox::{
    BOX_DIR, CACHE_DIR, DirAccess, Limits, Program, Sandbox, SandboxError, WORK_DIR,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::ExecuteError;
use crate::batch::BatchRun;
use crate::reuse::{FastCompile, FastStart};
use coreb_data::solution::Language;

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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// Factor on the global CPU and wall-clock limits of test runs (default: see
    /// [`default_time_multiplier`]). A `limits.cpu_time_ms`/`wall_time_ms` of this section is
    /// absolute and wins over it. Compiles are not scaled.
    pub time_multiplier: Option<f64>,
}

/// The judge's limits, decided here and nowhere else (the sandbox only enforces what it is
/// given): the test-run limits every language starts from (`[stages.execute.limits]` by
/// default), the compile-step limits (`[stages.execute.compile_limits]` by default), and in
/// [`language_limits`] what each language changes of them before a manifest's
/// `[stages.execute.<language>.limits]` / `compile_limits` do. Time limits are further
/// scaled per language by [`default_time_multiplier`].
///
/// The test-run limits are the sandbox's defaults ([`Limits::default`]: 4 s CPU, 10 s wall
/// clock, 512 MiB, 32 processes, …), the same values a partial `[stages.execute.limits]` or
/// `compile_limits` table falls back to for the fields it leaves out.
pub fn test_limits() -> Limits {
    Limits::default()
}

/// The limits of a compile step (see [`test_limits`]). Generous: the first Go build of a run
/// on Go >= 1.20 compiles the standard library into the shared cache.
pub fn compile_limits() -> Limits {
    Limits {
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
    }
}

/// What `language` changes of [`test_limits`] and [`compile_limits`]: (test runs, compile
/// step). The JVM needs more memory, threads and files than a native program; the Go runtime
/// more memory and threads; Ruby's runtime starts threads.
pub fn language_limits(language: Language) -> (LimitsPatch, LimitsPatch) {
    let run = match language {
        Language::Java => LimitsPatch {
            memory_mb: Some(1536),
            processes: Some(128),
            open_files: Some(256),
            ..LimitsPatch::default()
        },
        Language::Go => {
            LimitsPatch { memory_mb: Some(1024), processes: Some(64), ..LimitsPatch::default() }
        }
        Language::Ruby => LimitsPatch { processes: Some(64), ..LimitsPatch::default() },
        Language::Python | Language::Cpp => LimitsPatch::default(),
    };
    (run, LimitsPatch::default())
}

/// The default time-limit multiplier of a language: 1 for C++ and Go, 2 for Java (JVM start
/// and JIT warm-up), 3 for Python and Ruby (interpreters), so that a correct solution in a
/// slower language is not a false time-limit failure — CoREB uses verdicts as relevance, and
/// such a failure would become a hard negative. The multipliers are recorded in the MANIFEST.
pub fn default_time_multiplier(language: Language) -> f64 {
    match language {
        Language::Cpp | Language::Go => 1.0,
        Language::Java => 2.0,
        Language::Python | Language::Ruby => 3.0,
    }
}

/// A language's resolved build and run recipe.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// The factor applied to the global test-run time limits.
    pub time_multiplier: f64,
    /// The faster start of tests, where `[stages.execute] reuse` names the language (and
    /// the program allows it: [`FastStart::allows`]); absent from the stage key when off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_start: Option<FastStart>,
    /// The faster compile, where `[stages.execute] reuse` names the language
    /// ([`FastCompile::of`]); absent from the stage key when off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_compile: Option<FastCompile>,
    /// The batch runner of tests, where `[stages.execute] batch` names the language
    /// ([`BatchRun::of`]); absent from the stage key when off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchRun>,
}

fn argv(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

impl LanguageConfig {
    /// The recipe of `language`: defaults, then this section's settings; with `reuse`, the
    /// language's faster start of tests ([`FastStart::of`]).
    pub fn resolve(
        &self,
        language: Language,
        limits: &Limits,
        compile_limits: &Limits,
        reuse: bool,
        batch: bool,
    ) -> Toolchain {
        let mut env: BTreeMap<String, String> = [
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("HOME", WORK_DIR),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        // Language defaults: (source, compile, run); limits: [`language_limits`].
        let (lang_limits, lang_compile) = language_limits(language);
        let (source, compile, run) = match language {
            Language::Python => (
                "main.py",
                argv(&["python3", "-m", "py_compile", "{src}"]),
                argv(&["python3", "{src}"]),
            ),
            Language::Cpp => (
                "main.cpp",
                argv(&["g++", "-std=c++17", "-O2", "-pipe", "-o", "{dir}/main", "{src}"]),
                argv(&["{dir}/main"]),
            ),
            Language::Java => (
                "{main_class}.java",
                argv(&[
                    "javac",
                    "-encoding",
                    "UTF-8",
                    "-J-XX:+UseSerialGC",
                    "-J-XX:TieredStopAtLevel=1",
                    "-d",
                    "{dir}",
                    "{src}",
                ]),
                argv(&[
                    "java",
                    "-XX:MaxRAM={memory_mb}m",
                    "-XX:MaxRAMPercentage=60",
                    // Smaller reservations (1 GiB of class space, 240 MiB of code cache by
                    // default): where no cgroup holds, RLIMIT_AS bounds the address space.
                    "-XX:CompressedClassSpaceSize=128m",
                    "-XX:ReservedCodeCacheSize=64m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-XX:-UsePerfData",
                    "-Xss64m",
                    "-cp",
                    "{dir}",
                    "{main_class}",
                ]),
            ),
            Language::Go => (
                "main.go",
                argv(&["go", "build", "-o", "{dir}/main", "{src}"]),
                argv(&["{dir}/main"]),
            ),
            Language::Ruby => ("main.rb", argv(&["ruby", "-c", "{src}"]), argv(&["ruby", "{src}"])),
        };
        if language == Language::Go {
            for (k, v) in [
                ("GOCACHE", CACHE_DIR),
                ("GOPATH", "/tmp/gopath"),
                ("CGO_ENABLED", "0"),
                ("GO111MODULE", "off"),
            ] {
                env.insert(k.to_owned(), v.to_owned());
            }
        }
        env.extend(self.env.clone());
        let time_multiplier =
            self.time_multiplier.unwrap_or_else(|| default_time_multiplier(language));
        let scale =
            |ms: u64| (ms as f64 * time_multiplier).round().clamp(1.0, u64::MAX as f64) as u64;
        let scaled = Limits {
            cpu_time_ms: scale(limits.cpu_time_ms),
            wall_time_ms: scale(limits.wall_time_ms),
            ..limits.clone()
        };
        Toolchain {
            language,
            source: self.source.clone().unwrap_or_else(|| source.to_owned()),
            compile: self.compile.clone().unwrap_or(compile),
            run: self.run.clone().unwrap_or(run),
            env,
            prelude: self.prelude.clone().unwrap_or_default(),
            limits: self.limits.apply(&lang_limits.apply(&scaled)),
            compile_limits: self.compile_limits.apply(&lang_compile.apply(compile_limits)),
            compile_cache: self.compile_cache.unwrap_or(language == Language::Go),
            time_multiplier,
            fast_start: if reuse { FastStart::of(language) } else { None },
            fast_compile: if reuse { FastCompile::of(language) } else { None },
            batch: if batch { BatchRun::of(language) } else { None },
        }
    }
}

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
    let class_re = regex::Regex::new(
        r"\b(?:(public)\s+)?(?:(?:final|abstract|static)\s+)*class\s+([A-Za-z_$][\w$]*)",
    )
    .expect("valid regex");
    let main_re =
        regex::Regex::new(r"\bstatic\s+(?:final\s+)?void\s+main\s*\(").expect("valid regex");
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
                let close = (open + 1..clean.len())
                    .find(|&k| depth_at[k + 1] == 0 && clean.as_bytes()[k] == b'}');
                if m > open && close.is_none_or(|c| m < c) {
                    return name;
                }
            }
        }
    }
    public.unwrap_or_else(|| "Main".to_owned())
}

/// Substitute placeholders in one argument.
pub(super) fn fill(arg: &str, src: &str, main_class: &str, memory_mb: u64) -> String {
    arg.replace("{src}", src)
        .replace("{dir}", BOX_DIR)
        .replace("{main_class}", main_class)
        .replace("{memory_mb}", &memory_mb.to_string())
}

/// The Debian package that provides a program, for "install it" messages.
pub fn debian_package(program: &str) -> Option<&'static str> {
    Some(match program.rsplit('/').next().unwrap_or(program) {
        "g++" | "c++" | "gcc" => "g++",
        "java" | "javac" => "default-jdk-headless",
        "go" | "gofmt" => "golang-go",
        "ruby" => "ruby",
        "python3" | "python" => "python3",
        _ => return None,
    })
}

/// The arguments that make a program print its version.
fn version_args(program: &str) -> &'static [&'static str] {
    match program.rsplit('/').next().unwrap_or(program) {
        "java" | "javac" => &["-version"],
        "go" => &["version"],
        "python3" | "python" => &["-V"],
        _ => &["--version"],
    }
}

/// The programs a language's recipe starts from `PATH` (or by absolute path), in order and
/// without repeats: the compiler and the runtime; the solution's own binary is not one.
pub fn programs(toolchain: &Toolchain) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cmd in [&toolchain.compile, &toolchain.run] {
        if let Some(p) = cmd.first() {
            let p = fill(p, "", "Main", toolchain.limits.memory_mb);
            if !p.starts_with(BOX_DIR) && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// The version of each program of each language, as the sandbox runs them:
/// `language → program → version text` (the first line of its version output, and a line
/// naming the build where there is one, as `java -version` prints).
pub type ToolchainVersions = BTreeMap<Language, BTreeMap<String, String>>;

/// Ask every program of `languages` for its version, in the sandbox (so a toolchain that the
/// sandbox's filesystem view hides counts as missing). A program that cannot be started is
/// [`ExecuteError::MissingToolchain`], naming the Debian package to install.
pub fn toolchain_versions(
    config: &crate::ExecuteConfig,
    sandbox: &Sandbox,
    languages: &[Language],
) -> Result<ToolchainVersions, ExecuteError> {
    let dir = tempfile::Builder::new()
        .prefix("coreb-toolchains-")
        .tempdir()
        .map_err(|source| ExecuteError::Io { path: std::env::temp_dir(), source })?;
    // (language, program, environment) of every program to ask.
    let mut asks = Vec::new();
    for &language in languages {
        let t = config.toolchain(language);
        let env: Vec<(String, String)> =
            t.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for program in programs(&t) {
            asks.push((language, program, env.clone()));
        }
    }
    let limits = Limits {
        memory_mb: 2048,
        processes: 256,
        open_files: 1024,
        cpu_time_ms: 30_000,
        wall_time_ms: 60_000,
        ..Limits::default()
    };
    let answers: Vec<Result<(Language, String, String), ExecuteError>> = asks
        .par_iter()
        .map(|(language, program, env)| {
            let mut argv = vec![program.clone()];
            argv.extend(version_args(program).iter().map(|a| (*a).to_owned()));
            let run = Program {
                argv,
                env: env.clone(),
                stdin: b"",
                dir: dir.path(),
                access: DirAccess::ReadOnly,
                cache: None,
            };
            let outcome = sandbox.run(&run, &limits).map_err(|e| match e {
                SandboxError::Spawn { source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    ExecuteError::MissingToolchain {
                        language: *language,
                        program: program.clone(),
                        package: debian_package(program),
                    }
                }
                source => ExecuteError::Version { program: program.clone(), source },
            })?;
            let text = String::from_utf8_lossy(
                if outcome.stdout.iter().any(|b| !b.is_ascii_whitespace()) {
                    &outcome.stdout
                } else {
                    &outcome.stderr
                },
            )
            .into_owned();
            let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            let Some(first) = lines.first() else {
                return Err(ExecuteError::Config(format!(
                    "`{program} {}` printed no version ({:?})",
                    version_args(program).join(" "),
                    outcome.status
                )));
            };
            let mut version = (*first).to_owned();
            if let Some(build) = lines.iter().take(3).skip(1).find(|l| l.contains("build")) {
                version.push_str("; ");
                version.push_str(build);
            }
            Ok((*language, program.clone(), version))
        })
        .collect();
    let mut out = ToolchainVersions::new();
    for a in answers {
        let (language, program, version) = a?;
        out.entry(language).or_default().insert(program, version);
    }
    Ok(out)
}
