//! Tables of training corpora: reading named text columns of any Parquet file (corpus
//! sources, release configs) batch by batch, and writing curated training records
//! (`query, pos, hard_neg[], easy_neg[]`) and reranker records (`query, doc, label`).
//! Does NOT decide what goes in them (see `crate::corpus`).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, ListBuilder, StringBuilder};
use arrow_array::{Array, ArrayRef, LargeStringArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::TableError;
use crate::corpus::{RerankRecord, TrainingRecord};

/// Read the named string columns of a Parquet file; calls `row` once per row with the values
/// in the order of `columns` (a null reads as an empty string). Streams batch by batch.
pub fn for_each_row(path: &Path, columns: &[&str], mut row: impl FnMut(usize, Vec<String>)) -> Result<(), TableError> {
    let file = File::open(path).map_err(|source| TableError::Io { path: path.to_owned(), source })?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.with_batch_size(1024).build())
        .map_err(|source| TableError::Parquet { path: path.to_owned(), source })?;
    let mut n = 0usize;
    for batch in reader {
        let batch = batch.map_err(|e| TableError::Parquet { path: path.to_owned(), source: e.into() })?;
        let mut cols: Vec<&dyn Array> = Vec::new();
        for name in columns {
            let col = batch.column_by_name(name).ok_or_else(|| TableError::Column {
                path: path.to_owned(),
                row: n,
                column: (*name).to_owned(),
                reason: "no such column".into(),
            })?;
            if !matches!(col.data_type(), DataType::Utf8 | DataType::LargeUtf8) {
                return Err(TableError::Column { path: path.to_owned(), row: n, column: (*name).to_owned(), reason: format!("expected a string column, found `{}`", col.data_type()) });
            }
            cols.push(col.as_ref());
        }
        for i in 0..batch.num_rows() {
            let values = cols
                .iter()
                .map(|c| {
                    if c.is_null(i) {
                        return String::new();
                    }
                    if let Some(s) = c.as_any().downcast_ref::<StringArray>() {
                        s.value(i).to_owned()
                    } else if let Some(s) = c.as_any().downcast_ref::<LargeStringArray>() {
                        s.value(i).to_owned()
                    } else {
                        String::new()
                    }
                })
                .collect();
            row(n, values);
            n += 1;
        }
    }
    Ok(())
}

fn list_field(name: &str) -> Field {
    Field::new(name, DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))), false)
}

/// Write training records (`id, query, pos, hard_neg, easy_neg`) atomically.
pub fn write_training(path: &Path, records: &[TrainingRecord]) -> Result<(), TableError> {
    let (mut id, mut q, mut p) = (StringBuilder::new(), StringBuilder::new(), StringBuilder::new());
    let mut hard = ListBuilder::new(StringBuilder::new());
    let mut easy = ListBuilder::new(StringBuilder::new());
    for r in records {
        id.append_value(&r.id);
        q.append_value(&r.query);
        p.append_value(&r.pos);
        for h in &r.hard_neg {
            hard.values().append_value(h);
        }
        hard.append(true);
        for e in &r.easy_neg {
            easy.values().append_value(e);
        }
        easy.append(true);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("query", DataType::Utf8, false),
        Field::new("pos", DataType::Utf8, false),
        list_field("hard_neg"),
        list_field("easy_neg"),
    ]));
    let arrays: Vec<ArrayRef> = vec![Arc::new(id.finish()), Arc::new(q.finish()), Arc::new(p.finish()), Arc::new(hard.finish()), Arc::new(easy.finish())];
    let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| TableError::Parquet { path: path.to_owned(), source: e.into() })?;
    super::write_atomic(path, schema, std::iter::once(batch))
}

/// Write reranker records (`query, doc, label`) atomically.
pub fn write_rerank(path: &Path, records: &[RerankRecord]) -> Result<(), TableError> {
    let (mut q, mut d, mut l) = (StringBuilder::new(), StringBuilder::new(), Int64Builder::new());
    for r in records {
        q.append_value(&r.query);
        d.append_value(&r.doc);
        l.append_value(i64::from(r.label));
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("query", DataType::Utf8, false),
        Field::new("doc", DataType::Utf8, false),
        Field::new("label", DataType::Int64, false),
    ]));
    let arrays: Vec<ArrayRef> = vec![Arc::new(q.finish()), Arc::new(d.finish()), Arc::new(l.finish())];
    let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| TableError::Parquet { path: path.to_owned(), source: e.into() })?;
    super::write_atomic(path, schema, std::iter::once(batch))
}
