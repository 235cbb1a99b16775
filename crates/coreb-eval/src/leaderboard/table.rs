//! One record of the results store (`<releases_dir>/results/<release>/<record_id>.parquet`):
//! the rows of [`super::record`], one file per `coreb eval --record`. Files are
//! written once and never changed (append-only); the leaderboard reads them all into polars
//! ([`super::frames`], through [`crate::frames::read_parquet`]), and so can duckdb, pandas or Spark:
//! `pd.read_parquet("releases/results")`.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::record::ResultRow;
use coreb_data::tables::TableError;

/// The store's columns, in order.
pub fn results_schema() -> SchemaRef {
    let text = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
    Arc::new(Schema::new(vec![
        text("record_id", false),
        text("recorded_at", false),
        text("model", false),
        text("retriever", false),
        text("cutoff", true),
        text("release", false),
        text("release_manifest_sha256", false),
        text("window_start", true),
        text("window_end", true),
        text("task", false),
        text("subtask", false),
        text("language", false),
        text("metric", false),
        Field::new("value", DataType::Float64, false),
        Field::new("ci_low", DataType::Float64, true),
        Field::new("ci_high", DataType::Float64, true),
        Field::new("num_queries", DataType::UInt64, false),
        text("run_sha256", false),
        text("prompts", true),
        text("tool_version", false),
        // Added after the first records: a store's older files lack it (read as no category).
        text("category", true),
    ]))
}

/// Write the rows of one record to `path` (through `<path>.tmp`, renamed when complete).
pub fn write_results(path: &Path, rows: &[ResultRow]) -> Result<(), TableError> {
    let texts: [fn(&ResultRow) -> Option<&str>; 13] = [
        |r| Some(&r.record_id),
        |r| Some(&r.recorded_at),
        |r| Some(&r.label.model),
        |r| Some(&r.label.retriever),
        |r| r.label.cutoff.as_deref(),
        |r| Some(&r.release.version),
        |r| Some(&r.release.manifest_sha256),
        |r| r.release.window.start.as_deref(),
        |r| r.release.window.end.as_deref(),
        |r| Some(&r.task),
        |r| Some(&r.subtask),
        |r| Some(&r.language),
        |r| Some(&r.metric),
    ];
    let text_column = |f: fn(&ResultRow) -> Option<&str>| -> ArrayRef {
        let mut b = StringBuilder::new();
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let float_column = |f: fn(&ResultRow) -> Option<f64>| -> ArrayRef {
        let mut b = Float64Builder::new();
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let mut columns: Vec<ArrayRef> = texts.iter().map(|f| text_column(*f)).collect();
    columns.push(float_column(|r| Some(r.value)));
    columns.push(float_column(|r| r.ci.map(|i| i.low)));
    columns.push(float_column(|r| r.ci.map(|i| i.high)));
    let mut n = UInt64Builder::new();
    rows.iter().for_each(|r| n.append_value(r.num_queries));
    columns.push(Arc::new(n.finish()));
    columns.push(text_column(|r| Some(&r.run_sha256)));
    columns.push(text_column(|r| r.prompts.as_deref()));
    columns.push(text_column(|r| Some(&r.tool_version)));
    columns.push(text_column(|r| r.label.category.as_deref()));
    let schema = results_schema();
    let batch = RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| TableError::Parquet { path: path.to_owned(), source: e.into() })?;
    coreb_data::tables::write_atomic(path, schema, std::iter::once(batch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leaderboard::record::{ContestWindow, ModelLabel, ReleaseRef};
    use crate::significance::Interval;
    use arrow_array::{Array, Float64Array, StringArray, UInt64Array};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    #[test]
    fn rows_round_trip_with_their_nulls() {
        let row = ResultRow {
            record_id: "id".into(),
            recorded_at: "2025-04-02T03:00:00Z".into(),
            label: ModelLabel {
                model: "m".into(),
                retriever: "bm25".into(),
                cutoff: None,
                category: Some("code".into()),
            },
            release: ReleaseRef {
                version: "v202503".into(),
                manifest_sha256: "ab".into(),
                window: ContestWindow { start: Some("2025-01-01".into()), end: None },
            },
            task: "text2code".into(),
            subtask: "all".into(),
            language: "python".into(),
            metric: "ndcg@10".into(),
            value: 0.5,
            ci: Some(Interval { low: 0.25, high: 0.75 }),
            num_queries: 7,
            run_sha256: "cd".into(),
            prompts: None,
            tool_version: "0.1.0".into(),
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.parquet");
        let other = ResultRow { metric: "map@10".into(), ci: None, ..row.clone() };
        write_results(&path, &[row, other]).unwrap();
        assert!(!dir.path().join("r.parquet.tmp").exists());
        let reader =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(reader.schema().as_ref(), results_schema().as_ref());
        let batch = reader.build().unwrap().next().unwrap().unwrap();
        assert_eq!(batch.num_rows(), 2);
        let text = |c: &str| {
            batch.column_by_name(c).unwrap().as_any().downcast_ref::<StringArray>().unwrap().clone()
        };
        assert_eq!(text("metric").value(1), "map@10");
        assert!(text("cutoff").is_null(0) && text("window_end").is_null(0));
        assert_eq!(text("window_start").value(0), "2025-01-01");
        assert_eq!(text("category").value(1), "code");
        let float = |c: &str| {
            batch
                .column_by_name(c)
                .unwrap()
                .as_any()
                .downcast_ref::<Float64Array>()
                .unwrap()
                .clone()
        };
        assert_eq!((float("value").value(0), float("ci_low").value(0)), (0.5, 0.25));
        assert_eq!(float("ci_high").value(0), 0.75);
        assert!(float("ci_low").is_null(1) && float("ci_high").is_null(1));
        let n = batch
            .column_by_name("num_queries")
            .unwrap()
            .as_any()
            .downcast_ref::<UInt64Array>()
            .unwrap()
            .value(1);
        assert_eq!(n, 7);
    }
}
