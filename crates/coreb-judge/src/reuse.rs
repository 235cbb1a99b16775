//! Faster starts for the interpreted languages (issue #34): `[stages.execute] reuse =
//! ["python", "ruby"]`.
//!
//! Every test still runs as a process of its own in the sandbox, with its own limits, stdin,
//! stdout, exit status and verdict: nothing is shared between tests. What changes is what the
//! interpreter loads before the program, and only when the program cannot tell:
//!
//! - Python: `python3 -S` (no `site`: no `.pth` files, no site-packages on `sys.path`, no
//!   `exit`/`quit`/`help`/`copyright`/`credits`/`license` builtins);
//! - Ruby: `ruby --disable-gems -rdid_you_mean -rerror_highlight` (no RubyGems; the two
//!   libraries RubyGems' prelude would have loaded are loaded from the standard library, so
//!   error messages are the plain command's).
//!
//! Whether a program may start that way is decided from its text, conservatively
//! ([`FastStart::allows`]): everything it imports (`import`, `from … import`, `require`) must
//! be a standard-library module of a fixed list, and it must name nothing the skipped start-up
//! would have defined (Python's site builtins, Ruby's `Gem`, `gem`, `RbConfig`, `Monitor` …) nor
//! anything that loads code by a computed name (`__import__`, `importlib`, `exec`, `eval`,
//! `load`, `autoload`, `require_relative`, a `require` of anything but a literal). Anything else,
//! a non-ASCII program included, gets the plain command. Strings are read as code, so a word in
//! a string can only send a program to the plain command, never away from it.
//!
//! Measured on this repository's machine (bare processes, a program printing one number):
//! Python 13 → 9 ms, Ruby 80 → 20 ms (docs/building.md, "How long does a month take", "Faster starts").
//!
//! For the compiled languages the start-up paid per solution is the compiler's
//! ([`FastCompile`]): `reuse = ["cpp"]` compiles `<bits/stdc++.h>` once per `execute` run into
//! a precompiled header that every C++ compile then loads (g++ itself checks that it may: a
//! program that defines a macro the header depends on before the include, or includes
//! anything first, gets the header parsed as before); `reuse = ["java"]` records the classes `javac` loads into a
//! class-data archive once per run, and every compile maps it instead of loading them one by
//! one. The compiler is the same, with the same flags, so the class files and binaries are the
//! plain command's; a compile that fails is redone with the plain command, so a solution that
//! does not build keeps the plain compiler's message. Measured bare on this machine: a C++
//! solution including `<bits/stdc++.h>` 1.95 → 0.45 s, `javac` of a 40-line class 0.70 → 0.45 s.

use serde::Serialize;

use coreb_data::solution::Language;
use coreb_sandbox::CACHE_DIR;

/// A faster start of one language's interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FastStart {
    /// `python3 -S`.
    #[serde(rename = "python3 -S")]
    PythonNoSite,
    /// `ruby --disable-gems -rdid_you_mean -rerror_highlight`.
    #[serde(rename = "ruby --disable-gems -rdid_you_mean -rerror_highlight")]
    RubyNoGems,
}

/// Python modules a program may import and still start with `-S`: standard-library modules
/// that import nothing from site-packages. `tests/execute.rs` imports each one under `-S` in
/// the sandbox.
pub const PYTHON_MODULES: &[&str] = &[
    "__future__",
    "abc",
    "array",
    "atexit",
    "base64",
    "bisect",
    "calendar",
    "cmath",
    "collections",
    "contextlib",
    "copy",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "fractions",
    "functools",
    "gc",
    "hashlib",
    "heapq",
    "io",
    "itertools",
    "json",
    "math",
    "numbers",
    "operator",
    "os",
    "pprint",
    "queue",
    "random",
    "re",
    "resource",
    "signal",
    "socket",
    "statistics",
    "string",
    "struct",
    "sys",
    "textwrap",
    "threading",
    "time",
    "traceback",
    "types",
    "typing",
    "unicodedata",
    "warnings",
    "weakref",
];

/// Names that `site` defines (the builtins it adds, measured: `dir(builtins)` with and without
/// `-S`) or that reach code by a computed name: a program naming one starts plainly.
pub const PYTHON_NAMES: &[&str] = &[
    "exit",
    "quit",
    "help",
    "copyright",
    "credits",
    "license",
    "site",
    "sitecustomize",
    "usercustomize",
    "__import__",
    "importlib",
    "__builtins__",
    "builtins",
    "exec",
    "eval",
    "compile",
    "runpy",
    "pkgutil",
    "zipimport",
];

/// Ruby libraries a program may `require` and still start without RubyGems: they live in the
/// standard library's own directory. `tests/execute.rs` requires each one under the fast
/// command in the sandbox.
pub const RUBY_LIBRARIES: &[&str] = &[
    "set",
    "json",
    "bigdecimal",
    "bigdecimal/util",
    "date",
    "time",
    "pp",
    "prettyprint",
    "stringio",
    "strscan",
    "securerandom",
    "ostruct",
    "tsort",
    "forwardable",
    "delegate",
    "singleton",
    "benchmark",
    "timeout",
    "digest",
    "English",
    "abbrev",
    "base64",
    "shellwords",
    "io/console",
    "etc",
    "socket",
];

/// Names that RubyGems defines (measured: `Object.constants` and `Kernel`'s methods with and
/// without it) or that load code by a computed name: a program naming one starts plainly.
pub const RUBY_NAMES: &[&str] = &[
    "Gem",
    "gem",
    "gem_original_require",
    "RbConfig",
    "CROSS_COMPILING",
    "Monitor",
    "MonitorMixin",
    "RUBYGEMS_ACTIVATION_MONITOR",
    "load",
    "autoload",
    "autoload?",
    "require_relative",
    "eval",
    "instance_eval",
    "class_eval",
    "module_eval",
    "instance_exec",
    "class_exec",
    "module_exec",
    "binding",
    "const_get",
    "RUBYOPT",
    "LOADED_FEATURES",
    "LOAD_PATH",
];

impl FastStart {
    /// The faster start of `language`, if it has one.
    pub fn of(language: Language) -> Option<FastStart> {
        match language {
            Language::Python => Some(FastStart::PythonNoSite),
            Language::Ruby => Some(FastStart::RubyNoGems),
            Language::Cpp | Language::Java | Language::Go => None,
        }
    }

    /// The interpreter the plain run command must start with.
    pub fn interpreter(self) -> &'static str {
        match self {
            FastStart::PythonNoSite => "python3",
            FastStart::RubyNoGems => "ruby",
        }
    }

    /// What goes right after the interpreter.
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            FastStart::PythonNoSite => &["-S"],
            FastStart::RubyNoGems => &["--disable-gems", "-rdid_you_mean", "-rerror_highlight"],
        }
    }

    /// `plain` (a run command starting with [`Self::interpreter`]) with [`Self::flags`] after
    /// the interpreter.
    pub fn command(self, plain: &[String]) -> Vec<String> {
        let mut out = Vec::with_capacity(plain.len() + 3);
        out.extend(plain.first().cloned());
        out.extend(self.flags().iter().map(|f| (*f).to_owned()));
        out.extend(plain.iter().skip(1).cloned());
        out
    }

    /// Whether `code` (the whole program the judge runs) behaves the same under the faster
    /// start; `false` whenever that is not certain.
    pub fn allows(self, code: &str) -> bool {
        if !code.is_ascii() {
            return false;
        }
        match self {
            FastStart::PythonNoSite => python_allows(code),
            FastStart::RubyNoGems => ruby_allows(code),
        }
    }
}

/// A token of a program read without regard to strings or comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    /// An identifier (for Ruby with a trailing `?` or `!`), with the byte offset after it.
    Word(&'a str, usize),
    /// Any other character (numbers are skipped whole).
    Mark(u8),
}

/// The tokens of ASCII `code`. Spaces, tabs, carriage returns and backslash-newlines are
/// skipped; newlines are marks.
fn tokens(code: &str, ruby: bool) -> Vec<Token<'_>> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        let c = b[i];
        if c == b' ' || c == b'\t' || c == b'\r' || (c == b'\\' && b.get(i + 1) == Some(&b'\n')) {
            i += if c == b'\\' { 2 } else { 1 };
        } else if c.is_ascii_digit() {
            while i < b.len() && (word(b[i]) || b[i] == b'.') {
                i += 1;
            }
        } else if word(c) {
            let start = i;
            while i < b.len() && word(b[i]) {
                i += 1;
            }
            if ruby && i < b.len() && (b[i] == b'?' || b[i] == b'!') && b.get(i + 1) != Some(&b'=')
            {
                i += 1;
            }
            out.push(Token::Word(&code[start..i], i));
        } else {
            out.push(Token::Mark(c));
            i += 1;
        }
    }
    out
}

/// A dotted name at `toks[at..]`: its first component and the index after it.
fn dotted<'a>(toks: &[Token<'a>], mut at: usize) -> Option<(&'a str, usize)> {
    let Some(Token::Word(first, _)) = toks.get(at) else {
        return None;
    };
    at += 1;
    while toks.get(at) == Some(&Token::Mark(b'.')) {
        let Some(Token::Word(..)) = toks.get(at + 1) else {
            return None;
        };
        at += 2;
    }
    Some((first, at))
}

/// A compiler start-up paid once per `execute` run instead of once per solution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FastCompile {
    /// `g++` with `<bits/stdc++.h>` precompiled (with the compile command's own flags).
    #[serde(rename = "g++ with <bits/stdc++.h> precompiled")]
    CppPrecompiledHeader,
    /// `javac` mapping a class-data archive of the classes it loads.
    #[serde(rename = "javac with a class-data archive of itself")]
    JavacClassData,
}

/// The program the Java archive is recorded from: enough of the language that `javac` loads
/// the classes a solution's compile needs (generics, lambdas, streams, records of I/O).
const JAVA_SEED: &str = r#"import java.io.*;
import java.util.*;
import java.util.function.*;
import java.util.stream.*;

public class Main {
    interface Shape { double area(); }
    record Circle(double r) implements Shape { public double area() { return Math.PI * r * r; } }
    enum Color { RED, GREEN }
    static <T extends Comparable<T>> T max(List<T> xs) { return Collections.max(xs); }
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringTokenizer st = new StringTokenizer(in.readLine() == null ? "" : "x");
        Map<String, List<Integer>> m = new HashMap<>();
        m.computeIfAbsent("a", k -> new ArrayList<>()).add(st.countTokens());
        int[] a = {3, 1, 2};
        Arrays.sort(a);
        long s = IntStream.of(a).mapToLong(x -> (long) x * x).sum();
        Function<Integer, String> f = x -> Integer.toString(x);
        PriorityQueue<long[]> pq = new PriorityQueue<>((p, q) -> Long.compare(p[0], q[0]));
        pq.add(new long[] {s, 1});
        StringBuilder sb = new StringBuilder();
        for (var e : m.entrySet()) sb.append(e.getKey()).append(f.apply(e.getValue().size()));
        switch (Color.RED) { case RED -> sb.append(max(List.of(1, 2))); default -> sb.append(0); }
        try { sb.append(new Circle(1).area()); } catch (RuntimeException e) { throw new IllegalStateException(e); }
        System.out.println(sb.toString() + pq.peek()[0] + Stream.of("x").collect(Collectors.joining()));
    }
}
"#;

impl FastCompile {
    /// The faster compile of `language`, if it has one.
    pub fn of(language: Language) -> Option<FastCompile> {
        match language {
            Language::Cpp => Some(FastCompile::CppPrecompiledHeader),
            Language::Java => Some(FastCompile::JavacClassData),
            Language::Python | Language::Ruby | Language::Go => None,
        }
    }

    /// The compiler the compile command must start with.
    pub fn compiler(self) -> &'static str {
        match self {
            FastCompile::CppPrecompiledHeader => "g++",
            FastCompile::JavacClassData => "javac",
        }
    }

    /// What the preparation makes, relative to the shared directory (shown at `CACHE_DIR`).
    pub fn artifact(self) -> &'static str {
        match self {
            FastCompile::CppPrecompiledHeader => "bits/stdc++.h.gch",
            FastCompile::JavacClassData => "javac.jsa",
        }
    }

    /// The source the preparation compiles: its file name and text.
    pub fn seed(self) -> (&'static str, &'static str) {
        match self {
            FastCompile::CppPrecompiledHeader => ("stdc++.h", "#include <bits/stdc++.h>\n"),
            FastCompile::JavacClassData => ("Main.java", JAVA_SEED),
        }
    }

    /// Files put beside the artifact (names relative to the shared directory, and texts). For
    /// C++ the header itself, forwarding to the system's: g++ uses the precompiled header
    /// only where `<bits/stdc++.h>` is the program's first include, and where it cannot, it
    /// reads the header of the directory the precompiled one is in.
    pub fn companions(self) -> &'static [(&'static str, &'static str)] {
        match self {
            FastCompile::CppPrecompiledHeader => {
                &[("bits/stdc++.h", "#include_next <bits/stdc++.h>\n")]
            }
            FastCompile::JavacClassData => &[],
        }
    }

    /// The preparation command, from the compile command `plain` (placeholders filled, the
    /// source being [`Self::seed`]'s): the same compiler and flags, writing
    /// [`Self::artifact`] under `CACHE_DIR`.
    pub fn prepare(self, plain: &[String]) -> Vec<String> {
        let artifact = format!("{CACHE_DIR}/{}", self.artifact());
        let mut out: Vec<String> = plain.first().cloned().into_iter().collect();
        match self {
            FastCompile::CppPrecompiledHeader => {
                out.extend(["-x".to_owned(), "c++-header".to_owned()]);
                let mut rest = plain.iter().skip(1);
                let mut wrote = false;
                while let Some(arg) = rest.next() {
                    out.push(arg.clone());
                    if arg == "-o" {
                        rest.next();
                        out.push(artifact.clone());
                        wrote = true;
                    }
                }
                if !wrote {
                    out.extend(["-o".to_owned(), artifact]);
                }
            }
            FastCompile::JavacClassData => {
                out.push(format!("-J-XX:ArchiveClassesAtExit={artifact}"));
                out.extend(plain.iter().skip(1).cloned());
            }
        }
        out
    }

    /// The compile command `plain` (placeholders filled) using the prepared artifact.
    pub fn command(self, plain: &[String]) -> Vec<String> {
        let flag = match self {
            FastCompile::CppPrecompiledHeader => format!("-I{CACHE_DIR}"),
            FastCompile::JavacClassData => {
                format!("-J-XX:SharedArchiveFile={CACHE_DIR}/{}", self.artifact())
            }
        };
        let mut out = Vec::with_capacity(plain.len() + 1);
        out.extend(plain.first().cloned());
        out.push(flag);
        out.extend(plain.iter().skip(1).cloned());
        out
    }
}

fn python_allows(code: &str) -> bool {
    let toks = tokens(code, false);
    let allowed = |m: &str| PYTHON_MODULES.contains(&m);
    let mut from_imports = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let Token::Word(w, _) = *t else { continue };
        if i > 0 && toks[i - 1] == Token::Mark(b'.') {
            // An attribute (`sys.exit`) is not the builtin.
            continue;
        }
        if PYTHON_NAMES.contains(&w) {
            return false;
        }
        match w {
            "from" => {
                if toks.get(i + 1) == Some(&Token::Mark(b'.')) {
                    // A relative import (or something this reader does not know).
                    return false;
                }
                // `from m import …`; anything else (`yield from x`, `raise E from e`) is no import.
                if let Some((module, after)) = dotted(&toks, i + 1)
                    && matches!(toks.get(after), Some(Token::Word("import", _)))
                {
                    if !allowed(module) {
                        return false;
                    }
                    from_imports.push(after);
                }
            }
            "import" if !from_imports.contains(&i) => {
                // `import a.b [as c], d …`
                let mut at = i + 1;
                loop {
                    let Some((module, after)) = dotted(&toks, at) else {
                        return false;
                    };
                    if !allowed(module) {
                        return false;
                    }
                    at = after;
                    if matches!(toks.get(at), Some(Token::Word("as", _))) {
                        let Some(Token::Word(..)) = toks.get(at + 1) else {
                            return false;
                        };
                        at += 2;
                    }
                    if toks.get(at) != Some(&Token::Mark(b',')) {
                        break;
                    }
                    at += 1;
                }
            }
            _ => {}
        }
    }
    true
}

/// The literal name of a `require` whose word ends at byte `end`: `require 'x'`,
/// `require("x")`, without interpolation or escapes.
fn required_name(code: &str, end: usize) -> Option<&str> {
    let rest = code[end..].trim_start_matches([' ', '\t']);
    let rest = rest.strip_prefix('(').map_or(rest, |r| r.trim_start_matches([' ', '\t']));
    let quote = rest.chars().next().filter(|q| *q == '\'' || *q == '"')?;
    let body = &rest[1..];
    let close = body.find(quote)?;
    let name = &body[..close];
    name.bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'/' | b'-'))
        .then_some(name)
}

fn ruby_allows(code: &str) -> bool {
    for t in tokens(code, true) {
        let Token::Word(w, end) = t else { continue };
        if RUBY_NAMES.contains(&w) {
            return false;
        }
        if w == "require"
            && !required_name(code, end).is_some_and(|name| RUBY_LIBRARIES.contains(&name))
        {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    #[test]
    fn faster_compiles_keep_the_compilers_flags() {
        let cpp: Vec<String> =
            ["g++", "-std=c++17", "-O2", "-pipe", "-o", "/tmp/box/main", "/tmp/box/stdc++.h"]
                .map(String::from)
                .to_vec();
        let fast = FastCompile::CppPrecompiledHeader;
        assert_eq!(
            fast.prepare(&cpp),
            [
                "g++",
                "-x",
                "c++-header",
                "-std=c++17",
                "-O2",
                "-pipe",
                "-o",
                "/tmp/cache/bits/stdc++.h.gch",
                "/tmp/box/stdc++.h"
            ]
        );
        assert_eq!(
            fast.command(&cpp),
            [
                "g++",
                "-I/tmp/cache",
                "-std=c++17",
                "-O2",
                "-pipe",
                "-o",
                "/tmp/box/main",
                "/tmp/box/stdc++.h"
            ]
        );
        // No `-o`: the header is still written where the compiles look for it.
        let bare: Vec<String> = ["g++", "-O2", "/tmp/box/stdc++.h"].map(String::from).to_vec();
        assert_eq!(
            fast.prepare(&bare),
            [
                "g++",
                "-x",
                "c++-header",
                "-O2",
                "/tmp/box/stdc++.h",
                "-o",
                "/tmp/cache/bits/stdc++.h.gch"
            ]
        );
        let javac: Vec<String> =
            ["javac", "-encoding", "UTF-8", "-d", "/tmp/box", "/tmp/box/Main.java"]
                .map(String::from)
                .to_vec();
        let fast = FastCompile::JavacClassData;
        assert_eq!(
            fast.prepare(&javac)[..2],
            ["javac", "-J-XX:ArchiveClassesAtExit=/tmp/cache/javac.jsa"]
        );
        assert_eq!(
            fast.command(&javac)[..2],
            ["javac", "-J-XX:SharedArchiveFile=/tmp/cache/javac.jsa"]
        );
        assert_eq!(fast.command(&javac)[2..], javac[1..]);
        assert_eq!(FastCompile::of(Language::Go), None);
        assert_eq!(FastCompile::of(Language::Python), None);
    }

    use super::*;

    fn py(code: &str) -> bool {
        FastStart::PythonNoSite.allows(code)
    }

    fn rb(code: &str) -> bool {
        FastStart::RubyNoGems.allows(code)
    }

    #[test]
    fn python_programs_of_the_standard_library_start_without_site() {
        assert!(py("import sys\nn = int(sys.stdin.readline())\nprint(n * 2)\n"));
        assert!(py(
            "import sys, math as m\nfrom collections import deque, Counter\nfrom os.path import join\nsys.exit(0)\n"
        ));
        assert!(py(
            "from typing import *\nimport json as _j\ndef f():\n    yield from range(3)\ntry:\n    pass\nexcept E as e:\n    raise ValueError('x') from e\n"
        ));
        assert!(py("import heapq,\\\n  bisect\nx = 1e9 + 3.5\n"));
        assert!(py(""));
    }

    #[test]
    fn python_programs_that_might_notice_start_plainly() {
        for code in [
            "import numpy as np\n",
            "import sys, numpy\n",
            "from sortedcontainers import SortedList\n",
            "from . import x\n",
            "from .m import x\n",
            "exit()\n",
            "import sys\nif True: quit(0)\n",
            "from sys import exit\nexit(1)\n",
            "m = __import__('numpy')\n",
            "import importlib\n",
            "exec('import numpy')\n",
            "print(\"import\")\n",
            "import\n",
            "import sys as\n",
            "print(license)\n",
            "import site\n",
            "x = 'é'\n",
        ] {
            assert!(!py(code), "{code:?}");
        }
    }

    #[test]
    fn ruby_programs_of_the_standard_library_start_without_gems() {
        assert!(rb("n = gets.to_i\nputs n * 2\n"));
        assert!(rb(
            "require 'set'\nrequire \"json\"\nrequire('bigdecimal/util')\ns = Set.new\nputs s.empty?\n"
        ));
        assert!(rb("x = [1, 2].map { |v| v * 2 }\nputs x.sum\n"));
        // The functional driver calls the solution by a literal name.
        assert!(rb(
            "require 'json'\nresult = target.send(:twoSum, *args) if respond_to?(:twoSum, true)\n"
        ));
    }

    #[test]
    fn ruby_programs_that_might_notice_start_plainly() {
        for code in [
            "require 'prime'\n",
            "require 'matrix'\n",
            "name = 'set'\nrequire name\n",
            "require \"#{'set'}\"\n",
            "require_relative 'x'\n",
            "gem 'prime'\n",
            "puts Gem::Version.new('1')\n",
            "puts defined?(Gem)\n",
            "m = Monitor.new\n",
            "p RbConfig::CONFIG\n",
            "load 'x.rb'\n",
            "eval('1')\n",
            "Kernel.send(:require, 'prime')\n",
            "method(:require).call('prime')\n",
            "require %q(set)\n",
            "puts 'é'\n",
        ] {
            assert!(!rb(code), "{code:?}");
        }
    }

    #[test]
    fn the_fast_command_puts_the_flags_after_the_interpreter() {
        let plain = vec!["ruby".to_owned(), "/tmp/box/main.rb".to_owned()];
        assert_eq!(
            FastStart::RubyNoGems.command(&plain),
            ["ruby", "--disable-gems", "-rdid_you_mean", "-rerror_highlight", "/tmp/box/main.rb"]
        );
        let plain = vec!["python3".to_owned(), "/tmp/box/main.py".to_owned()];
        assert_eq!(FastStart::PythonNoSite.command(&plain), ["python3", "-S", "/tmp/box/main.py"]);
        assert_eq!(FastStart::of(Language::Java), None);
    }
}
