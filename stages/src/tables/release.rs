//! The Parquet configs of a published release: `code_corpus`, `text_corpus`, and per task
//! `<task>_queries` and `<task>_qrels`. Column names follow the published CoREB dataset
//! (`code_id, code, language, model, problem_id`; `query_id, doc_id, relevance` …) so that
//! readers of the Hugging Face dataset can switch.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use super::TableError;
use crate::qrels::{CodeDoc, DocId, Qrel, Query, QueryId, Relevance, TextDoc};

/// A column being built.
enum Col {
    Text(&'static str, StringBuilder, bool),
    Int(&'static str, Int64Builder),
    Bool(&'static str, BooleanBuilder),
}

fn text(name: &'static str) -> Col {
    Col::Text(name, StringBuilder::new(), false)
}

fn nullable_text(name: &'static str) -> Col {
    Col::Text(name, StringBuilder::new(), true)
}

fn write(path: &Path, mut cols: Vec<Col>, rows: usize, fill: impl Fn(usize, &mut [Col])) -> Result<(), TableError> {
    for row in 0..rows {
        fill(row, &mut cols);
    }
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for c in cols {
        match c {
            Col::Text(name, mut b, nullable) => {
                fields.push(Field::new(name, DataType::Utf8, nullable));
                arrays.push(Arc::new(b.finish()));
            }
            Col::Int(name, mut b) => {
                fields.push(Field::new(name, DataType::Int64, false));
                arrays.push(Arc::new(b.finish()));
            }
            Col::Bool(name, mut b) => {
                fields.push(Field::new(name, DataType::Boolean, false));
                arrays.push(Arc::new(b.finish()));
            }
        }
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| TableError::Parquet { path: path.to_owned(), source: e.into() })?;
    super::write_atomic(path, schema, std::iter::once(batch))
}

fn put(col: &mut Col, value: Option<&str>) {
    if let Col::Text(_, b, _) = col {
        b.append_option(value);
    }
}

fn put_int(col: &mut Col, value: i64) {
    if let Col::Int(_, b) = col {
        b.append_value(value);
    }
}

fn put_bool(col: &mut Col, value: bool) {
    if let Col::Bool(_, b) = col {
        b.append_value(value);
    }
}

/// Write the `code_corpus` config.
pub fn write_code_corpus(path: &Path, docs: &[CodeDoc]) -> Result<(), TableError> {
    let cols = vec![text("code_id"), text("code"), text("language"), text("model"), text("problem_id"), text("solution_id"), Col::Bool("passed", BooleanBuilder::new())];
    write(path, cols, docs.len(), |i, c| {
        let d = &docs[i];
        put(&mut c[0], Some(&d.code_id.0));
        put(&mut c[1], Some(&d.code));
        put(&mut c[2], Some(d.language.as_str()));
        put(&mut c[3], Some(&d.model));
        put(&mut c[4], Some(d.problem_id.as_str()));
        put(&mut c[5], Some(d.solution_id.as_str()));
        put_bool(&mut c[6], d.passed);
    })
}

/// Write the `text_corpus` config.
pub fn write_text_corpus(path: &Path, docs: &[TextDoc]) -> Result<(), TableError> {
    let cols = vec![text("text_id"), text("text"), text("kind"), text("problem_id")];
    write(path, cols, docs.len(), |i, c| {
        let d = &docs[i];
        put(&mut c[0], Some(&d.text_id.0));
        put(&mut c[1], Some(&d.text));
        let kind = serde_json::to_value(d.kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        put(&mut c[2], Some(&kind));
        put(&mut c[3], Some(d.problem_id.as_str()));
    })
}

/// Write a `<task>_queries` config.
pub fn write_queries(path: &Path, queries: &[Query]) -> Result<(), TableError> {
    let cols = vec![
        text("query_id"),
        text("query"),
        text("task"),
        text("subtask"),
        text("language_constraint"),
        text("source_problem_id"),
        nullable_text("source_doc_id"),
        Col::Int("num_relevant_docs", Int64Builder::new()),
    ];
    write(path, cols, queries.len(), |i, c| {
        let q = &queries[i];
        put(&mut c[0], Some(&q.query_id.0));
        put(&mut c[1], Some(&q.query));
        put(&mut c[2], Some(q.task.as_str()));
        put(&mut c[3], Some(&q.subtask));
        put(&mut c[4], Some(&q.language_constraint));
        put(&mut c[5], Some(q.source_problem_id.as_str()));
        put(&mut c[6], q.source_doc_id.as_ref().map(|d| d.0.as_str()));
        put_int(&mut c[7], q.num_relevant_docs as i64);
    })
}

/// Write a `<task>_qrels` config.
pub fn write_qrels(path: &Path, qrels: &[Qrel]) -> Result<(), TableError> {
    let cols = vec![text("query_id"), text("doc_id"), Col::Int("relevance", Int64Builder::new())];
    write(path, cols, qrels.len(), |i, c| {
        let q = &qrels[i];
        put(&mut c[0], Some(&q.query_id.0));
        put(&mut c[1], Some(&q.doc_id.0));
        put_int(&mut c[2], i64::from(q.relevance.0));
    })
}

/// Read a `<task>_qrels` config back (the graded judgements, relevance 2 and 1).
pub fn read_qrels(path: &Path) -> Result<Vec<Qrel>, TableError> {
    let mut out = Vec::new();
    for batch in super::read_batches(path, 8192)? {
        let batch = batch?;
        let view = super::BatchView::new(&batch, path, out.len());
        let (q, d, r) = (view.column::<StringArray>("query_id")?, view.column::<StringArray>("doc_id")?, view.column::<Int64Array>("relevance")?);
        for i in 0..batch.num_rows() {
            let rel = r.value(i);
            if q.is_null(i) || d.is_null(i) || r.is_null(i) {
                return Err(view.err(i, "query_id", "a null field".into()));
            }
            let relevance = u8::try_from(rel).map_err(|_| view.err(i, "relevance", format!("`{rel}` is not a relevance grade")))?;
            out.push(Qrel { query_id: QueryId(q.value(i).to_owned()), doc_id: DocId(d.value(i).to_owned()), relevance: Relevance(relevance) });
        }
    }
    Ok(out)
}

/// The number of rows of a Parquet table (from its footer).
pub fn row_count(path: &Path) -> Result<usize, TableError> {
    let file = std::fs::File::open(path).map_err(|source| TableError::Io { path: path.to_owned(), source })?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).map_err(|source| TableError::Parquet { path: path.to_owned(), source })?;
    Ok(usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::fs::File;

    #[test]
    fn qrels_table_has_the_published_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.parquet");
        let rows = vec![
            Qrel { query_id: QueryId("q_full_0001".into()), doc_id: DocId("code_v1_00000".into()), relevance: Relevance(2) },
            Qrel { query_id: QueryId("q_full_0001".into()), doc_id: DocId("code_v1_00001".into()), relevance: Relevance(1) },
        ];
        write_qrels(&path, &rows).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        let names: Vec<String> = reader.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names, ["query_id", "doc_id", "relevance"]);
        let batch = reader.build().unwrap().next().unwrap().unwrap();
        assert_eq!(batch.num_rows(), 2);
        assert_eq!(read_qrels(&path).unwrap(), rows);
    }
}
