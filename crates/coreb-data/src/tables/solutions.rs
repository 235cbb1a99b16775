//! The `solutions` table: Parquet encoding and decoding of [`Solution`]s (what `generate`
//! writes and `execute` reads). Small enough per release to be read and written whole.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::TableError;
use crate::problem::ProblemId;
use crate::solution::{Language, Solution, SolutionId};

/// Rows per record batch.
const BATCH_ROWS: usize = 1024;

/// The Arrow schema of the solutions table.
pub fn solutions_schema() -> SchemaRef {
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    Arc::new(Schema::new(vec![
        text("id"),
        text("problem_id"),
        text("model"),
        text("language"),
        Field::new("sample", DataType::UInt32, false),
        text("code"),
    ]))
}

fn to_batch(rows: &[Solution]) -> RecordBatch {
    let text = |f: fn(&Solution) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    };
    let columns: Vec<ArrayRef> = vec![
        text(|s| s.id.as_str()),
        text(|s| s.problem_id.as_str()),
        text(|s| &s.model),
        text(|s| s.language.as_str()),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|s| s.sample))),
        text(|s| &s.code),
    ];
    RecordBatch::try_new(solutions_schema(), columns).expect("columns match solutions_schema")
}

/// Write `rows` to `path` atomically (`<path>.tmp`, then rename).
pub fn write_solutions(path: &Path, rows: &[Solution]) -> Result<usize, TableError> {
    super::write_atomic(path, solutions_schema(), rows.chunks(BATCH_ROWS).map(to_batch))?;
    Ok(rows.len())
}

/// Read the whole table.
pub fn read_solutions(path: &Path) -> Result<Vec<Solution>, TableError> {
    let mut out = Vec::new();
    for batch in super::read_batches(path, BATCH_ROWS)? {
        let batch = batch?;
        let view = super::BatchView::new(&batch, path, out.len());
        let err = |row: usize, column: &str, reason: String| view.err(row, column, reason);
        let text = |name: &str| view.column::<StringArray>(name);
        let (id, problem, model, language, code) =
            (text("id")?, text("problem_id")?, text("model")?, text("language")?, text("code")?);
        let sample = view.column::<UInt32Array>("sample")?;
        for r in 0..batch.num_rows() {
            let lang = Language::parse(language.value(r)).ok_or_else(|| {
                err(r, "language", format!("unknown language `{}`", language.value(r)))
            })?;
            out.push(Solution {
                id: SolutionId::from_raw(id.value(r).to_owned()),
                problem_id: ProblemId::from_raw(problem.value(r).to_owned()),
                model: model.value(r).to_owned(),
                language: lang,
                sample: sample.value(r),
                code: code.value(r).to_owned(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let rows: Vec<Solution> = (0..2500)
            .map(|i| {
                let p = ProblemId::from_question_id(&format!("{}", i % 7));
                let lang = Language::ALL[i % 5];
                Solution {
                    id: SolutionId::new(&p, "m", lang, i as u32),
                    problem_id: p,
                    model: "m".into(),
                    language: lang,
                    sample: i as u32,
                    code: format!("print({i})"),
                }
            })
            .collect();
        super::super::assert_round_trip("s.parquet", &rows, write_solutions, read_solutions);
    }
}
