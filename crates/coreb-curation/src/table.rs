//! Tables of training corpora: writing curated training records (`query, pos, hard_neg[],
//! easy_neg[]`) and reranker records (`query, doc, label`) batch by batch as they are produced
//! (reading a source's text columns is [`coreb_data::tables::columns::for_each_row`]).
//! Does NOT decide what goes in them (see `crate`).

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::TrainingRecord;
use coreb_data::tables::TableError;

fn list_field(name: &str) -> Field {
    Field::new(name, DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))), false)
}

/// Rows buffered before they are handed to the Parquet writer as one batch.
const BATCH_ROWS: usize = 8192;
/// Rows per row group: bounds what the Parquet writer holds in memory.
const ROW_GROUP_ROWS: usize = 16_384;

/// A Parquet file written batch by batch, put in place by `finish` ([`coreb_data::tables::TableFile`]).
struct Streaming {
    schema: SchemaRef,
    table: coreb_data::tables::TableFile,
}

impl Streaming {
    fn create(path: &Path, schema: SchemaRef) -> Result<Streaming, TableError> {
        let props = coreb_data::tables::writer_properties()
            .into_builder()
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .build();
        Ok(Streaming {
            table: coreb_data::tables::TableFile::create(path, schema.clone(), props)?,
            schema,
        })
    }

    fn write(&mut self, arrays: Vec<ArrayRef>) -> Result<(), TableError> {
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| self.table.parquet(e.into()))?;
        self.table.write(&batch)
    }

    fn finish(self) -> Result<(), TableError> {
        self.table.finish()
    }
}

/// Writes training records (`id, query, pos, hard_neg[], easy_neg[]`) as they come, in
/// batches, so that a shard never needs all its records in memory. Atomic: the file appears
/// under its name only after [`TrainingWriter::finish`].
pub struct TrainingWriter {
    file: Streaming,
    id: StringBuilder,
    query: StringBuilder,
    pos: StringBuilder,
    hard: ListBuilder<StringBuilder>,
    easy: ListBuilder<StringBuilder>,
    rows: usize,
}

impl TrainingWriter {
    /// Start the table at `path` (invisible under that name until `finish`).
    pub fn create(path: &Path) -> Result<TrainingWriter, TableError> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Utf8, false),
            Field::new("query", DataType::Utf8, false),
            Field::new("pos", DataType::Utf8, false),
            list_field("hard_neg"),
            list_field("easy_neg"),
        ]));
        Ok(TrainingWriter {
            file: Streaming::create(path, schema)?,
            id: StringBuilder::new(),
            query: StringBuilder::new(),
            pos: StringBuilder::new(),
            hard: ListBuilder::new(StringBuilder::new()),
            easy: ListBuilder::new(StringBuilder::new()),
            rows: 0,
        })
    }

    /// Add one record.
    pub fn push(&mut self, r: &TrainingRecordRef<'_>) -> Result<(), TableError> {
        self.id.append_value(r.id);
        self.query.append_value(r.query);
        self.pos.append_value(r.pos);
        for h in r.hard_neg {
            self.hard.values().append_value(h);
        }
        self.hard.append(true);
        for e in r.easy_neg {
            self.easy.values().append_value(e);
        }
        self.easy.append(true);
        self.rows += 1;
        if self.rows == BATCH_ROWS { self.flush() } else { Ok(()) }
    }

    fn flush(&mut self) -> Result<(), TableError> {
        self.rows = 0;
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(self.id.finish()),
            Arc::new(self.query.finish()),
            Arc::new(self.pos.finish()),
            Arc::new(self.hard.finish()),
            Arc::new(self.easy.finish()),
        ];
        self.file.write(arrays)
    }

    /// Write what is buffered, close and put the file in place (fsynced).
    pub fn finish(mut self) -> Result<(), TableError> {
        self.flush()?;
        self.file.finish()
    }
}

/// A training record by reference (what [`TrainingWriter`] and the JSONL output take, so that
/// a streamed pair needs no copy): serialises like [`TrainingRecord`].
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct TrainingRecordRef<'a> {
    /// The pair id.
    pub id: &'a str,
    /// The text.
    pub query: &'a str,
    /// Its code.
    pub pos: &'a str,
    /// Hard negatives.
    pub hard_neg: &'a [String],
    /// Easy negatives.
    pub easy_neg: &'a [String],
}

impl<'a> From<&'a TrainingRecord> for TrainingRecordRef<'a> {
    fn from(r: &'a TrainingRecord) -> Self {
        TrainingRecordRef {
            id: &r.id,
            query: &r.query,
            pos: &r.pos,
            hard_neg: &r.hard_neg,
            easy_neg: &r.easy_neg,
        }
    }
}

/// Writes reranker records (`query, doc, label`) as they come; see [`TrainingWriter`].
pub struct RerankWriter {
    file: Streaming,
    query: StringBuilder,
    doc: StringBuilder,
    label: Int64Builder,
    rows: usize,
}

impl RerankWriter {
    /// Start the table at `path` (invisible under that name until `finish`).
    pub fn create(path: &Path) -> Result<RerankWriter, TableError> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("query", DataType::Utf8, false),
            Field::new("doc", DataType::Utf8, false),
            Field::new("label", DataType::Int64, false),
        ]));
        Ok(RerankWriter {
            file: Streaming::create(path, schema)?,
            query: StringBuilder::new(),
            doc: StringBuilder::new(),
            label: Int64Builder::new(),
            rows: 0,
        })
    }

    /// Add one record.
    pub fn push(&mut self, query: &str, doc: &str, label: u8) -> Result<(), TableError> {
        self.query.append_value(query);
        self.doc.append_value(doc);
        self.label.append_value(i64::from(label));
        self.rows += 1;
        if self.rows == BATCH_ROWS { self.flush() } else { Ok(()) }
    }

    fn flush(&mut self) -> Result<(), TableError> {
        self.rows = 0;
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(self.query.finish()),
            Arc::new(self.doc.finish()),
            Arc::new(self.label.finish()),
        ];
        self.file.write(arrays)
    }

    /// Write what is buffered, close and put the file in place (fsynced).
    pub fn finish(mut self) -> Result<(), TableError> {
        self.flush()?;
        self.file.finish()
    }
}
