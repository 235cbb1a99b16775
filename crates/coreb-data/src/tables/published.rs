//! The Parquet configs of a published release: `code_corpus`, `text_corpus`, and per task
//! `<task>_queries` and `<task>_qrels`. Column names follow the published CoREB dataset
//! (`code_id, code, language, model, problem_id`; `query_id, doc_id, relevance` …) so that
//! readers of the Hugging Face dataset can switch.

use std::path::Path;

use arrow_array::{Array, Int64Array, StringArray};

use super::TableError;
use super::columns::{self, Column};
use crate::qrels::{CodeDoc, DocId, Qrel, Query, QueryId, Relevance, TextDoc};

/// A non-null string column of `rows`.
fn text<T>(name: &str, rows: &[T], value: impl Fn(&T) -> String) -> Column {
    Column::str(name, rows.iter().map(|r| Some(value(r))).collect())
}

/// Write the `code_corpus` config.
pub fn write_code_corpus(path: &Path, docs: &[CodeDoc]) -> Result<(), TableError> {
    columns::write(
        path,
        &[
            text("code_id", docs, |d| d.code_id.0.clone()),
            text("code", docs, |d| d.code.clone()),
            text("language", docs, |d| d.language.as_str().to_owned()),
            text("model", docs, |d| d.model.clone()),
            text("problem_id", docs, |d| d.problem_id.as_str().to_owned()),
            text("solution_id", docs, |d| d.solution_id.as_str().to_owned()),
            Column::bool("passed", docs.iter().map(|d| Some(d.passed)).collect()),
        ],
    )
}

/// Write the `text_corpus` config.
pub fn write_text_corpus(path: &Path, docs: &[TextDoc]) -> Result<(), TableError> {
    let kind = |d: &TextDoc| {
        serde_json::to_value(d.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    columns::write(
        path,
        &[
            text("text_id", docs, |d| d.text_id.0.clone()),
            text("text", docs, |d| d.text.clone()),
            text("kind", docs, kind),
            text("problem_id", docs, |d| d.problem_id.as_str().to_owned()),
        ],
    )
}

/// Write a `<task>_queries` config.
pub fn write_queries(path: &Path, queries: &[Query]) -> Result<(), TableError> {
    columns::write(
        path,
        &[
            text("query_id", queries, |q| q.query_id.0.clone()),
            text("query", queries, |q| q.query.clone()),
            text("task", queries, |q| q.task.as_str().to_owned()),
            text("subtask", queries, |q| q.subtask.clone()),
            text("language_constraint", queries, |q| q.language_constraint.clone()),
            text("source_problem_id", queries, |q| q.source_problem_id.as_str().to_owned()),
            Column::str(
                "source_doc_id",
                queries.iter().map(|q| q.source_doc_id.as_ref().map(|d| d.0.clone())).collect(),
            )
            .nullable(),
            Column::int(
                "num_relevant_docs",
                queries.iter().map(|q| Some(q.num_relevant_docs as i64)).collect(),
            ),
        ],
    )
}

/// Write a `<task>_qrels` config.
pub fn write_qrels(path: &Path, qrels: &[Qrel]) -> Result<(), TableError> {
    columns::write(
        path,
        &[
            text("query_id", qrels, |q| q.query_id.0.clone()),
            text("doc_id", qrels, |q| q.doc_id.0.clone()),
            Column::int(
                "relevance",
                qrels.iter().map(|q| Some(i64::from(q.relevance.0))).collect(),
            ),
        ],
    )
}

/// Read a `<task>_qrels` config back (the graded judgements, relevance 2 and 1).
pub fn read_qrels(path: &Path) -> Result<Vec<Qrel>, TableError> {
    let mut out = Vec::new();
    for batch in super::read_batches(path, 8192)? {
        let batch = batch?;
        let view = super::BatchView::new(&batch, path, out.len());
        let (q, d, r) = (
            view.column::<StringArray>("query_id")?,
            view.column::<StringArray>("doc_id")?,
            view.column::<Int64Array>("relevance")?,
        );
        for i in 0..batch.num_rows() {
            let rel = r.value(i);
            if q.is_null(i) || d.is_null(i) || r.is_null(i) {
                return Err(view.err(i, "query_id", "a null field".into()));
            }
            let relevance = u8::try_from(rel).map_err(|_| {
                view.err(i, "relevance", format!("`{rel}` is not a relevance grade"))
            })?;
            out.push(Qrel {
                query_id: QueryId(q.value(i).to_owned()),
                doc_id: DocId(d.value(i).to_owned()),
                relevance: Relevance(relevance),
            });
        }
    }
    Ok(out)
}

/// The number of rows of a Parquet table (from its footer).
pub fn row_count(path: &Path) -> Result<usize, TableError> {
    let file = std::fs::File::open(path)
        .map_err(|source| TableError::Io { path: path.to_owned(), source })?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|source| TableError::Parquet { path: path.to_owned(), source })?;
    Ok(usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::fs::File;

    #[test]
    fn qrels_table_has_the_published_columns() {
        let rows = vec![
            Qrel {
                query_id: QueryId("q_full_0001".into()),
                doc_id: DocId("code_v1_00000".into()),
                relevance: Relevance(2),
            },
            Qrel {
                query_id: QueryId("q_full_0001".into()),
                doc_id: DocId("code_v1_00001".into()),
                relevance: Relevance(1),
            },
        ];
        let (_dir, path) =
            super::super::assert_round_trip("q.parquet", &rows, write_qrels, read_qrels);
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        let names: Vec<String> =
            reader.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["query_id", "doc_id", "relevance"]);
        let batch = reader.build().unwrap().next().unwrap().unwrap();
        assert_eq!(batch.num_rows(), 2);
    }
}
