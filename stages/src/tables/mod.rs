//! Parquet tables exchanged between stages. Every arrow/parquet call of the project lives
//! under this module, one file per table (the polars analytics over them live in
//! [`crate::check::frames`], what `coreb check` runs over published tables, and
//! [`crate::leaderboard::frames`], over the results store).

pub mod columns;
pub mod problems;
pub mod published;
pub mod references;
pub mod results;
pub mod solutions;
pub mod test_checks;
pub mod training;
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

/// A Parquet file being written through [`crate::durable::AtomicFile`]: invisible under its
/// name until [`TableFile::finish`] has written the footer, fsynced and renamed it.
pub(crate) struct TableFile {
    path: std::path::PathBuf,
    writer: parquet::arrow::ArrowWriter<crate::durable::AtomicFile>,
}

impl TableFile {
    /// Start the table at `path` with these writer properties.
    pub(crate) fn create(
        path: &std::path::Path,
        schema: arrow_schema::SchemaRef,
        props: parquet::file::properties::WriterProperties,
    ) -> Result<TableFile, TableError> {
        let file = crate::durable::AtomicFile::create(path).map_err(|source| TableError::Io { path: path.to_owned(), source })?;
        let writer = parquet::arrow::ArrowWriter::try_new(file, schema, Some(props)).map_err(|source| TableError::Parquet { path: path.to_owned(), source })?;
        Ok(TableFile { path: path.to_owned(), writer })
    }

    pub(crate) fn parquet(&self, source: parquet::errors::ParquetError) -> TableError {
        TableError::Parquet { path: self.path.clone(), source }
    }

    /// Append one batch.
    pub(crate) fn write(&mut self, batch: &arrow_array::RecordBatch) -> Result<(), TableError> {
        self.writer.write(batch).map_err(|e| self.parquet(e))
    }

    /// Bytes buffered for the row group in progress.
    pub(crate) fn in_progress_size(&self) -> usize {
        self.writer.in_progress_size()
    }

    /// Close the row group in progress.
    pub(crate) fn flush(&mut self) -> Result<(), TableError> {
        self.writer.flush().map_err(|e| self.parquet(e))
    }

    /// Write the footer, then put the file in place durably.
    pub(crate) fn finish(self) -> Result<(), TableError> {
        let TableFile { path, writer } = self;
        let file = writer.into_inner().map_err(|source| TableError::Parquet { path: path.clone(), source })?;
        file.commit().map_err(|source| TableError::Io { path, source })
    }
}

/// Write record batches as the table at `path`, atomically and durably ([`TableFile`]).
pub(crate) fn write_atomic(
    path: &std::path::Path,
    schema: arrow_schema::SchemaRef,
    batches: impl Iterator<Item = arrow_array::RecordBatch>,
) -> Result<(), TableError> {
    let mut table = TableFile::create(path, schema, writer_properties())?;
    for batch in batches {
        table.write(&batch)?;
    }
    table.finish()
}
