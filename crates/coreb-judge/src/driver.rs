//! Program assembly: what the judge compiles for one solution.
//!
//! A stdin problem's solution is a whole program and runs as written. A functional
//! (LeetCode) problem's solution is the solution only — the class or function of its
//! skeleton ([`Signature::skeleton`]) with its helpers and imports, no entry point, no I/O —
//! and the judge adds the I/O driver of its language: a program part that reads one JSON
//! value per stdin line, converts each to the parameter's type, calls the method and prints
//! the result as compact JSON (what [`crate::functional_outputs_match`] compares).
//!
//! The drivers are templates, one file per language in `drivers/` (placeholders
//! `{{solution}}`, `{{method}}`, `{{arity}}`, `{{types}}`), and every identifier they add is
//! prefixed (`coreb`, `_coreb_`, `CorebMain`) so that it does not clash with a solution's.
//! Where the solution goes, per language:
//!
//! - Python, Ruby: the driver's imports, the solution, then the driver's functions and the
//!   call; arguments are converted by the signature's type descriptors (an `int` JSON value
//!   for a `float` parameter becomes a float).
//! - C++: `#include <bits/stdc++.h>`, the solution, then the driver, which reads each
//!   argument as the type the method itself declares (deduced from `&Solution::method`), so a
//!   solution that took `vector<int>&` still runs.
//! - Java: the solution's `class Solution` (a top-level `public` is dropped: the file is the
//!   driver's `public class CorebMain`), then the driver, which finds the method by
//!   reflection and converts by its declared parameter types (arrays, `List<…>`, boxed).
//! - Go: the driver's package clause and imports (aliased, `corebjson "encoding/json"`, so a
//!   solution importing the same packages does not collide), the solution without its own
//!   package clause, then the driver (`reflect` on the function's own parameter types).
//!
//! A compile error in the assembled program is the solution's `compile_error`, as before.

use std::sync::LazyLock;

use regex::Regex;

use crate::signature::{self, Signature, SignatureError};
use coreb_data::problem::Problem;
use coreb_data::solution::Language;

/// How a problem's solutions become programs.
#[derive(Debug, Clone, PartialEq)]
pub enum Harness {
    /// A stdin problem: the solution is the program.
    Program,
    /// A functional problem: solution + the language's driver for this signature.
    Driver(Signature),
    /// A functional problem whose starter gives no usable signature (`filter` rejects such
    /// problems; an artifact from before it did gets this): every test is `compile_error`.
    Unsupported(SignatureError),
}

impl Harness {
    /// The harness of a problem's solutions.
    pub fn of(problem: &Problem) -> Harness {
        if !problem.is_functional() {
            return Harness::Program;
        }
        match signature::parse(&problem.starter_code) {
            Ok(s) => Harness::Driver(s),
            Err(e) => Harness::Unsupported(e),
        }
    }
}

/// The driver template of a language.
pub fn template(language: Language) -> &'static str {
    match language {
        Language::Python => include_str!("drivers/driver.py"),
        Language::Cpp => include_str!("drivers/driver.cpp"),
        Language::Java => include_str!("drivers/driver.java"),
        Language::Go => include_str!("drivers/driver.go"),
        Language::Ruby => include_str!("drivers/driver.rb"),
    }
}

/// The program the judge compiles: `code` (the solution only) inside its language's driver.
pub fn assemble(code: &str, language: Language, signature: &Signature) -> String {
    let types: Vec<String> = signature.params.iter().map(|p| p.ty.descriptor()).collect();
    let filled = template(language)
        .replace("{{method}}", &signature.callable(language))
        .replace("{{arity}}", &signature.params.len().to_string())
        .replace("{{types}}", &serde_json::to_string(&types).unwrap_or_default());
    let (before, after) = filled.split_once("{{solution}}").unwrap_or((&filled, ""));
    let code = match language {
        Language::Go => without_package_clause(code),
        Language::Java => JAVA_PUBLIC_SOLUTION.replace_all(code, "$1").into_owned(),
        _ => code.to_owned(),
    };
    format!("{before}{}{after}", code.trim_end())
}

/// A top-level `public class Solution` (the file belongs to the driver's public class).
static JAVA_PUBLIC_SOLUTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^public\s+((?:(?:final|abstract|strictfp)\s+)*class\s+Solution\b)")
        .expect("valid regex")
});

/// Go code without its `package` line (the driver's `package main` comes first); the line
/// stays, empty, so that line numbers after it do not move.
fn without_package_clause(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut done = false;
    for line in code.split_inclusive('\n') {
        if !done && line.trim_start().starts_with("package ") {
            done = true;
            out.push('\n');
            continue;
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assembly_places_the_solution_and_fills_the_driver() {
        let sig = signature::parse(
            "class Solution:\n    def maxHaul(self, shelves: List[List[int]], k: float) -> int:\n",
        )
        .unwrap();
        let py = assemble(
            "class Solution:\n    def maxHaul(self, shelves, k):\n        return 1\n",
            Language::Python,
            &sig,
        );
        assert!(py.contains("kinds = [\"list:list:int\",\"float\"]"), "{py}");
        assert!(py.contains("Solution().maxHaul(*args)"));
        let rb = assemble("def max_haul(s, k)\n  1\nend\n", Language::Ruby, &sig);
        assert!(rb.contains("send(:max_haul, *args)"), "{rb}");
        let go = assemble(
            "package main\n\nimport \"sort\"\n\nfunc maxHaul(s [][]int, k float64) int { sort.Ints(nil); return 1 }\n",
            Language::Go,
            &sig,
        );
        assert_eq!(go.matches("package main").count(), 1, "{go}");
        assert!(go.contains("corebreflect.ValueOf(maxHaul)"));
        let java = assemble(
            "import java.util.*;\n\npublic class Solution {\n    public long maxHaul(long[][] s, double k) { return 1; }\n}\n",
            Language::Java,
            &sig,
        );
        assert!(java.starts_with("import java.util.*;\n\nclass Solution {"), "{java}");
        assert!(java.contains("m.getName().equals(\"maxHaul\") && m.getParameterCount() == 2"));
        assert_eq!(crate::java_main_class(&java), "CorebMain");
        let cpp = assemble(
            "class Solution { public: long long maxHaul(vector<vector<long long>>& s, double k) { return 1; } };",
            Language::Cpp,
            &sig,
        );
        assert!(cpp.contains("&Solution::maxHaul") && cpp.contains("k < 2 &&"), "{cpp}");
        // A solution's own text is never substituted.
        let odd = assemble(
            "class Solution:\n    def maxHaul(self, a, b):\n        return '{{method}}'\n",
            Language::Python,
            &sig,
        );
        assert!(odd.contains("return '{{method}}'"));
    }
}
