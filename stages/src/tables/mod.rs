//! Parquet tables exchanged between stages. Every arrow/parquet call of the project lives
//! under this module, one file per table (the polars analytics over them live in
//! [`crate::check::frames`], what `coreb check` runs over published tables, and
//! [`crate::leaderboard::frames`], over the results store).

pub mod corpus;
pub mod problems;
pub mod release;
pub mod results;
pub mod solutions;
pub mod verdicts;

pub use problems::{ProblemReader, ProblemWriter, TableError, problems_schema};

/// Open a table for reading, `rows` rows a batch.
pub(crate) fn open_batches(
    path: &std::path::Path,
    rows: usize,
) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader, TableError> {
    let file = std::fs::File::open(path).map_err(|source| TableError::Io { path: path.to_owned(), source })?;
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.with_batch_size(rows).build())
        .map_err(|source| TableError::Parquet { path: path.to_owned(), source })
}

/// Every batch of a table, with errors naming the table.
pub(crate) fn read_batches(
    path: &std::path::Path,
    rows: usize,
) -> Result<impl Iterator<Item = Result<arrow_array::RecordBatch, TableError>> + '_, TableError> {
    Ok(open_batches(path, rows)?.map(move |b| b.map_err(|e| TableError::Parquet { path: path.to_owned(), source: e.into() })))
}

/// One batch of a table being read: typed columns, and errors that name the table, the row
/// (counted from the start of the file) and the column.
pub(crate) struct BatchView<'a> {
    batch: &'a arrow_array::RecordBatch,
    path: &'a std::path::Path,
    first_row: usize,
}

impl<'a> BatchView<'a> {
    /// A view of `batch`, whose first row is row `first_row` of the file at `path`.
    pub(crate) fn new(batch: &'a arrow_array::RecordBatch, path: &'a std::path::Path, first_row: usize) -> Self {
        BatchView { batch, path, first_row }
    }

    /// An error about `column` in row `row` of this batch.
    pub(crate) fn err(&self, row: usize, column: &str, reason: String) -> TableError {
        TableError::Column { path: self.path.to_owned(), row: self.first_row + row, column: column.to_owned(), reason }
    }

    /// The column `name` as an array of type `T`.
    pub(crate) fn column<T: 'static>(&self, name: &str) -> Result<&'a T, TableError> {
        self.batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<T>())
            .ok_or_else(|| self.err(0, name, format!("missing or not a {} column", std::any::type_name::<T>().rsplit("::").next().unwrap_or("typed"))))
    }
}

/// The properties of every Parquet file coreb writes: Snappy pages and a `created_by` that
/// names coreb's version (never a time), so the same rows give the same bytes.
pub(crate) fn writer_properties() -> parquet::file::properties::WriterProperties {
    parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .set_created_by(format!("coreb {}", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Write record batches to `<path>.tmp`, then rename it to `path` (atomic for readers).
pub(crate) fn write_atomic(
    path: &std::path::Path,
    schema: arrow_schema::SchemaRef,
    batches: impl Iterator<Item = arrow_array::RecordBatch>,
) -> Result<(), TableError> {
    use parquet::arrow::ArrowWriter;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let io = |source| TableError::Io { path: tmp.clone(), source };
    let file = std::fs::File::create(&tmp).map_err(io)?;
    let pq = |source| TableError::Parquet { path: tmp.clone(), source };
    let mut writer = ArrowWriter::try_new(file, schema, Some(writer_properties())).map_err(pq)?;
    for batch in batches {
        writer.write(&batch).map_err(pq)?;
    }
    writer.close().map_err(pq)?;
    std::fs::rename(&tmp, path).map_err(|source| TableError::Io { path: path.to_owned(), source })?;
    Ok(())
}
