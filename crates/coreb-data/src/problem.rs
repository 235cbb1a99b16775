//! The problem: one LiveCodeBench row, typed, with its tests decoded.

use serde::{Deserialize, Serialize};

/// A problem id, `lcb_<question_id>`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProblemId(String);

impl ProblemId {
    /// The id of the problem LiveCodeBench calls `question_id`.
    pub fn from_question_id(question_id: &str) -> Self {
        ProblemId(format!("lcb_{question_id}"))
    }

    /// Wrap an id that is already in `lcb_…` form (read back from a table).
    pub fn from_raw(id: String) -> Self {
        ProblemId(id)
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ProblemId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The platform a problem comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// LeetCode (call-based, functional tests).
    Leetcode,
    /// AtCoder (stdin/stdout).
    Atcoder,
    /// Codeforces (stdin/stdout).
    Codeforces,
}

impl Platform {
    /// The platform's name as LiveCodeBench spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Leetcode => "leetcode",
            Platform::Atcoder => "atcoder",
            Platform::Codeforces => "codeforces",
        }
    }

    /// Parse LiveCodeBench's spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "leetcode" => Some(Platform::Leetcode),
            "atcoder" => Some(Platform::Atcoder),
            "codeforces" => Some(Platform::Codeforces),
            _ => None,
        }
    }
}

/// How a test feeds the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestType {
    /// The input is the program's stdin, the output its stdout.
    Stdin,
    /// LeetCode call-based: one JSON value per argument, one line each; one JSON value out.
    Functional,
}

impl TestType {
    /// LiveCodeBench's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TestType::Stdin => "stdin",
            TestType::Functional => "functional",
        }
    }

    /// Parse LiveCodeBench's spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "stdin" => Some(TestType::Stdin),
            "functional" => Some(TestType::Functional),
            _ => None,
        }
    }
}

/// The kind of answer a problem asks for, decided once from its original statement (`filter`,
/// `coreb_stages::answer`) and carried through `rewrite` as a property of the problem: the
/// judge compares by it.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    /// One answer: compared exactly (numbers within the judge's tolerance).
    #[default]
    Exact,
    /// A collection the statement says may be returned or printed in any order: compared as
    /// a multiset.
    Unordered,
    /// The statement accepts any of several answers: tests holding one cannot judge it
    /// (`filter` drops it, reason `any_answer`).
    AnyOfSeveral,
    /// The statement says the judge ignores letter case ("if the correct answer is Yes, any
    /// of yes, YES, and yEs will be accepted"): compared with letters folded to lower case.
    AnyCase,
}

impl AnswerKind {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerKind::Exact => "exact",
            AnswerKind::Unordered => "unordered",
            AnswerKind::AnyOfSeveral => "any_of_several",
            AnswerKind::AnyCase => "any_case",
        }
    }

    /// Is it the default, exact comparison (left out of serialized records)?
    pub fn is_exact(&self) -> bool {
        *self == AnswerKind::Exact
    }
}

/// One test case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TestCase {
    /// The program's input.
    pub input: String,
    /// The expected output.
    pub output: String,
    /// How the input is fed.
    pub testtype: TestType,
}

/// A problem with every field typed and its tests decoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    /// `lcb_<question_id>`.
    pub id: ProblemId,
    /// The platform's title (LeetCode: the slug).
    pub question_title: String,
    /// The statement.
    pub question_content: String,
    /// Where it comes from.
    pub platform: Platform,
    /// The platform's id.
    pub question_id: String,
    /// The contest it appeared in.
    pub contest_id: String,
    /// ISO date-time of the contest, as LiveCodeBench gives it (`2025-01-04T00:00:00`).
    pub contest_date: String,
    /// Starter code (LeetCode) or empty.
    pub starter_code: String,
    /// `easy`, `medium` or `hard`.
    pub difficulty: String,
    /// The public (example) tests.
    pub public_tests: Vec<TestCase>,
    /// The private tests.
    pub private_tests: Vec<TestCase>,
    /// The function name of a LeetCode call-based problem (from `metadata`).
    pub func_name: Option<String>,
    /// The raw `metadata` JSON, kept whole so that nothing is lost.
    pub metadata: String,
    /// The kind of answer, decided by `filter` from the original statement. Not a column of
    /// the problems table: `execute` sets it from `rewrite`'s `answers.jsonl`; a problem file
    /// given to `coreb judge` may name it (`"answer": "unordered"`).
    #[serde(default, skip_serializing_if = "AnswerKind::is_exact")]
    pub answer: AnswerKind,
}

impl Problem {
    /// The contest date's `YYYY-MM-DD` part.
    pub fn contest_day(&self) -> &str {
        self.contest_date.get(..10).unwrap_or(&self.contest_date)
    }

    /// Number of tests, public and private.
    pub fn test_count(&self) -> usize {
        self.public_tests.len() + self.private_tests.len()
    }

    /// Is the problem call-based (LeetCode: a `func_name`, or functional tests)? Its
    /// solutions are then the solution only, and the judge adds a driver.
    pub fn is_functional(&self) -> bool {
        self.func_name.is_some()
            || self
                .public_tests
                .iter()
                .chain(&self.private_tests)
                .any(|t| t.testtype == TestType::Functional)
    }
}

/// An inclusive window of contest days (`YYYY-MM-DD`); either end may be open.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DateWindow {
    /// First day, inclusive.
    pub start: Option<String>,
    /// Last day, inclusive.
    pub end: Option<String>,
}

impl DateWindow {
    /// A window from optional `YYYY-MM-DD` bounds; a malformed date or `start > end` is an error.
    pub fn new(start: Option<&str>, end: Option<&str>) -> Result<Self, String> {
        for d in [start, end].into_iter().flatten() {
            if !is_iso_day(d) {
                return Err(format!("`{d}` is not a `YYYY-MM-DD` date"));
            }
        }
        if let (Some(s), Some(e)) = (start, end)
            && s > e
        {
            return Err(format!("start `{s}` is after end `{e}`"));
        }
        Ok(DateWindow { start: start.map(str::to_owned), end: end.map(str::to_owned) })
    }

    /// Does a contest day (`YYYY-MM-DD…`) fall inside the window?
    pub fn contains(&self, day: &str) -> bool {
        let day = day.get(..10).unwrap_or(day);
        self.start.as_deref().is_none_or(|s| day >= s)
            && self.end.as_deref().is_none_or(|e| day <= e)
    }
}

/// The days of month `m` (1–12) of year `y` in the Gregorian calendar.
pub fn days_in_month(y: u32, m: u32) -> u32 {
    let leap = (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Is `s` a `YYYY-MM-DD` day of the calendar (digits in place, month 1–12, a day the month
/// has: `2025-02-30` is not one)?
pub fn is_iso_day(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| {
        b[r.clone()].iter().all(u8::is_ascii_digit).then(|| s[r].parse::<u32>().ok()).flatten()
    };
    matches!((digits(0..4), digits(5..7), digits(8..10)), (Some(y), Some(m), Some(d)) if (1..=12).contains(&m) && (1..=days_in_month(y, m)).contains(&d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_bounds_are_inclusive() {
        let w = DateWindow::new(Some("2025-01-01"), Some("2025-04-30")).unwrap();
        assert!(w.contains("2025-01-01T00:00:00"));
        assert!(w.contains("2025-04-30T23:59:59"));
        assert!(!w.contains("2024-12-31T00:00:00"));
        assert!(!w.contains("2025-05-01T00:00:00"));
        assert!(DateWindow::default().contains("1999-01-01"));
        assert!(DateWindow::new(Some("2025-13-01"), None).is_err());
        // Dates are days of the calendar.
        assert!(DateWindow::new(None, Some("2025-02-30")).is_err());
        assert!(DateWindow::new(None, Some("2025-02-29")).is_err());
        assert!(DateWindow::new(None, Some("2024-02-29")).is_ok());
        assert!(DateWindow::new(None, Some("2025-04-31")).is_err());
        assert!(DateWindow::new(None, Some("1900-02-29")).is_err());
        assert!(DateWindow::new(None, Some("2000-02-29")).is_ok());
        assert!(DateWindow::new(Some("2025-02-01"), Some("2025-01-01")).is_err());
    }
}
