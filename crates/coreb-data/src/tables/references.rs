//! The `references` table: beside `rewrite`'s problems table, one row per rewritten problem
//! with how each of its tests was carried over (`test_origins`, comma-separated
//! [`TestOrigin`] names, public then private) and, for a problem with a rewritten test, its
//! reference solution ([`Reference`]: `reference_model`, `reference` for the original
//! problem, `adapted_reference` for the rewrite; null when none). `execute` reads it to
//! re-check the rewritten tests. Written through the one column mechanism ([`super::columns`]).

use std::path::Path;

use super::TableError;
use super::columns::{self, Column};
use crate::problem::ProblemId;
use crate::rewritten::{Reference, RewrittenProblem, TestOrigin};

/// One row: what `execute` needs to re-check a problem's tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceRow {
    /// The problem.
    pub problem_id: ProblemId,
    /// How each test was carried over (public then private).
    pub test_origins: Vec<TestOrigin>,
    /// The reference solution, if the problem has one.
    pub reference: Option<Reference>,
}

impl ReferenceRow {
    /// The row of a rewritten problem.
    pub fn of(p: &RewrittenProblem) -> Self {
        ReferenceRow {
            problem_id: p.id.clone(),
            test_origins: p.test_origins.clone(),
            reference: p.reference.clone(),
        }
    }
}

/// Write `rows` as the table at `path` (atomically).
pub fn write_references(path: &Path, rows: &[ReferenceRow]) -> Result<(), TableError> {
    let origins =
        |r: &ReferenceRow| r.test_origins.iter().map(|o| o.as_str()).collect::<Vec<_>>().join(",");
    let of_reference = |f: fn(&Reference) -> &str| {
        rows.iter().map(|r| r.reference.as_ref().map(|x| f(x).to_owned())).collect()
    };
    columns::write(
        path,
        &[
            Column::str(
                "problem_id",
                rows.iter().map(|r| Some(r.problem_id.as_str().to_owned())).collect(),
            ),
            Column::str("test_origins", rows.iter().map(|r| Some(origins(r))).collect()),
            Column::str("reference_model", of_reference(|x| &x.model)).nullable(),
            Column::str("reference", of_reference(|x| &x.original)).nullable(),
            Column::str("adapted_reference", of_reference(|x| &x.adapted)).nullable(),
        ],
    )
}

/// Read the whole table; a bad value is an error naming the file, the row and the column.
pub fn read_references(path: &Path) -> Result<Vec<ReferenceRow>, TableError> {
    let cols = columns::read(path)?;
    if cols.is_empty() {
        // No batch at all: a table of no rows.
        return Ok(Vec::new());
    }
    let bad =
        |row: usize, column: &str, reason: String| columns::cell_error(path, row, column, reason);
    let text = |name: &str| columns::strings(&cols, path, name);
    let (problem, origins, model, original, adapted) = (
        text("problem_id")?,
        text("test_origins")?,
        text("reference_model")?,
        text("reference")?,
        text("adapted_reference")?,
    );
    let mut rows = Vec::with_capacity(problem.len());
    for r in 0..problem.len() {
        let required =
            |v: &[Option<String>], name: &str| columns::required_string(v, path, r, name);
        let test_origins = required(origins, "test_origins")?
            .split(',')
            .filter(|o| !o.is_empty())
            .map(|o| {
                TestOrigin::parse(o)
                    .ok_or_else(|| bad(r, "test_origins", format!("unknown origin `{o}`")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let reference = match (model[r].clone(), original[r].clone(), adapted[r].clone()) {
            (Some(model), Some(original), Some(adapted)) => Some(Reference { model, original, adapted }),
            (None, None, None) => None,
            _ => return Err(bad(r, "reference", "`reference_model`, `reference` and `adapted_reference` must be all set or all null".into())),
        };
        rows.push(ReferenceRow {
            problem_id: ProblemId::from_raw(required(problem, "problem_id")?),
            test_origins,
            reference,
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
            ReferenceRow {
                problem_id: ProblemId::from_question_id("1"),
                test_origins: vec![TestOrigin::Kept, TestOrigin::Bijection],
                reference: Some(Reference {
                    model: "m".into(),
                    original: "print(1)".into(),
                    adapted: "print(2)".into(),
                }),
            },
            ReferenceRow {
                problem_id: ProblemId::from_question_id("2"),
                test_origins: vec![TestOrigin::Kept],
                reference: None,
            },
            ReferenceRow {
                problem_id: ProblemId::from_question_id("3"),
                test_origins: vec![],
                reference: None,
            },
        ];
        let (_dir, path) = super::super::assert_round_trip(
            "references.parquet",
            &rows,
            write_references,
            read_references,
        );
        let half = vec![
            Column::str("problem_id", vec![Some("lcb_1".into())]),
            Column::str("test_origins", vec![Some("kept,model".into())]),
            Column::str("reference_model", vec![Some("m".into())]),
            Column::str("reference", vec![None]),
            Column::str("adapted_reference", vec![None]),
        ];
        columns::write(&path, &half).unwrap();
        let err = read_references(&path).unwrap_err().to_string();
        assert!(err.contains("row 0") && err.contains("all set or all null"), "{err}");
    }
}
