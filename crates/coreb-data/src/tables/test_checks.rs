//! The `test_checks` table: one row per test of every problem whose rewritten tests `execute`
//! re-checked against the problem's reference solution ([`TestCheck`]): problem, test index,
//! how `rewrite` carried the test over, the outcome (`passed`, `rejected`, `unchecked`) and
//! why. Written by `execute` through the one column mechanism ([`super::columns`]).

use std::path::Path;

use super::TableError;
use super::columns::{self, Column};
use crate::problem::ProblemId;
use crate::rewritten::TestOrigin;
use crate::verdict::{CheckOutcome, TestCheck};

/// Write `rows` as the table at `path` (atomically).
pub fn write_test_checks(path: &Path, rows: &[TestCheck]) -> Result<(), TableError> {
    let text = |name: &str, f: fn(&TestCheck) -> &str| {
        Column::str(name, rows.iter().map(|r| Some(f(r).to_owned())).collect())
    };
    columns::write(
        path,
        &[
            text("problem_id", |r| r.problem_id.as_str()),
            Column::int("test_index", rows.iter().map(|r| Some(i64::from(r.test_index))).collect()),
            text("origin", |r| r.origin.as_str()),
            text("outcome", |r| r.outcome.as_str()),
            text("reason", |r| &r.reason),
        ],
    )
}

/// Read the whole table; a bad value is an error naming the file, the row and the column.
pub fn read_test_checks(path: &Path) -> Result<Vec<TestCheck>, TableError> {
    let cols = columns::read(path)?;
    if cols.is_empty() {
        // No batch at all: a table of no rows.
        return Ok(Vec::new());
    }
    let bad =
        |row: usize, column: &str, reason: String| columns::cell_error(path, row, column, reason);
    let text = |name: &str| columns::strings(&cols, path, name);
    let (problem, origin, outcome, reason) =
        (text("problem_id")?, text("origin")?, text("outcome")?, text("reason")?);
    let index = columns::integers(&cols, path, "test_index")?;
    let mut rows = Vec::with_capacity(problem.len());
    for r in 0..problem.len() {
        let value = |v: &[Option<String>], name: &str| columns::required_string(v, path, r, name);
        let origin_text = value(origin, "origin")?;
        let outcome_text = value(outcome, "outcome")?;
        rows.push(TestCheck {
            problem_id: ProblemId::from_raw(value(problem, "problem_id")?),
            test_index: index
                .get(r)
                .copied()
                .flatten()
                .and_then(|i| u32::try_from(i).ok())
                .ok_or_else(|| bad(r, "test_index", "null or out of range".into()))?,
            origin: TestOrigin::parse(&origin_text)
                .ok_or_else(|| bad(r, "origin", format!("unknown origin `{origin_text}`")))?,
            outcome: CheckOutcome::parse(&outcome_text)
                .ok_or_else(|| bad(r, "outcome", format!("unknown outcome `{outcome_text}`")))?,
            reason: value(reason, "reason")?,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bad_values_are_named() {
        let rows = vec![
            TestCheck {
                problem_id: ProblemId::from_question_id("1"),
                test_index: 0,
                origin: TestOrigin::Kept,
                outcome: CheckOutcome::Passed,
                reason: String::new(),
            },
            TestCheck {
                problem_id: ProblemId::from_question_id("1"),
                test_index: 1,
                origin: TestOrigin::Bijection,
                outcome: CheckOutcome::Rejected,
                reason: "wrong_answer".into(),
            },
        ];
        let (_dir, path) = super::super::assert_round_trip(
            "test_checks.parquet",
            &rows,
            write_test_checks,
            read_test_checks,
        );
        write_test_checks(&path, &[]).unwrap();
        assert_eq!(read_test_checks(&path).unwrap(), []);
        columns::write(
            &path,
            &[
                Column::str("problem_id", vec![Some("lcb_1".into())]),
                Column::int("test_index", vec![Some(0)]),
                Column::str("origin", vec![Some("guessed".into())]),
                Column::str("outcome", vec![Some("passed".into())]),
                Column::str("reason", vec![Some(String::new())]),
            ],
        )
        .unwrap();
        let err = read_test_checks(&path).unwrap_err().to_string();
        assert!(
            err.contains("row 0")
                && err.contains("`origin`")
                && err.contains("unknown origin `guessed`"),
            "{err}"
        );
    }
}
