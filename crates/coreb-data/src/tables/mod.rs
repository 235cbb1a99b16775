//! Parquet tables exchanged between stages. Every arrow/parquet call of the project lives
//! under this module, one file per table, but the results store's table
//! (`coreb_eval::leaderboard::table`) and the reader that hands tables to polars
//! (`coreb_eval::frames`; the polars analytics over them live in
//! `coreb_eval::check::frames`, what `coreb check` runs over published tables, and
//! `coreb_eval::leaderboard::frames`, over the results store).

pub mod columns;
pub mod problems;
pub mod published;
pub mod references;
pub mod solutions;
pub mod test_checks;
pub mod verdicts;

pub use problems::{ProblemReader, ProblemWriter, TableError, problems_schema};

/// Open a table for reading, `rows` rows a batch.
pub fn open_batches(
    path: &std::path::Path,
    rows: usize,
) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader, TableError> {
    let file = std::fs::File::open(path)
        .map_err(|source| TableError::Io { path: path.to_owned(), source })?;
    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.with_batch_size(rows).build())
        .map_err(|source| TableError::Parquet { path: path.to_owned(), source })
}

/// Every batch of a table, with errors naming the table.
pub fn read_batches(
    path: &std::path::Path,
    rows: usize,
) -> Result<impl Iterator<Item = Result<arrow_array::RecordBatch, TableError>> + '_, TableError> {
    Ok(open_batches(path, rows)?.map(move |b| {
        b.map_err(|e| TableError::Parquet { path: path.to_owned(), source: e.into() })
    }))
}

/// One batch of a table being read: typed columns, and errors that name the table, the row
/// (counted from the start of the file) and the column.
pub struct BatchView<'a> {
    batch: &'a arrow_array::RecordBatch,
    path: &'a std::path::Path,
    first_row: usize,
}

impl<'a> BatchView<'a> {
    /// A view of `batch`, whose first row is row `first_row` of the file at `path`.
    pub fn new(
        batch: &'a arrow_array::RecordBatch,
        path: &'a std::path::Path,
        first_row: usize,
    ) -> Self {
        BatchView { batch, path, first_row }
    }

    /// An error about `column` in row `row` of this batch.
    pub fn err(&self, row: usize, column: &str, reason: String) -> TableError {
        TableError::Column {
            path: self.path.to_owned(),
            row: self.first_row + row,
            column: column.to_owned(),
            reason,
        }
    }

    /// The column `name` as an array of type `T`.
    pub fn column<T: 'static>(&self, name: &str) -> Result<&'a T, TableError> {
        self.batch.column_by_name(name).and_then(|c| c.as_any().downcast_ref::<T>()).ok_or_else(
            || {
                self.err(
                    0,
                    name,
                    format!(
                        "missing or not a {} column",
                        std::any::type_name::<T>().rsplit("::").next().unwrap_or("typed")
                    ),
                )
            },
        )
    }
}

/// The properties of every Parquet file coreb writes: Snappy pages and a `created_by` that
/// names coreb's version (never a time), so the same rows give the same bytes.
pub fn writer_properties() -> parquet::file::properties::WriterProperties {
    parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .set_created_by(format!("coreb {}", env!("CARGO_PKG_VERSION")))
        .build()
}

/// A Parquet file being written through [`coreb_base::durable::AtomicFile`]: invisible under its
/// name until [`TableFile::finish`] has written the footer, fsynced and renamed it.
pub struct TableFile {
    path: std::path::PathBuf,
    writer: parquet::arrow::ArrowWriter<coreb_base::durable::AtomicFile>,
}

impl TableFile {
    /// Start the table at `path` with these writer properties.
    pub fn create(
        path: &std::path::Path,
        schema: arrow_schema::SchemaRef,
        props: parquet::file::properties::WriterProperties,
    ) -> Result<TableFile, TableError> {
        let file = coreb_base::durable::AtomicFile::create(path)
            .map_err(|source| TableError::Io { path: path.to_owned(), source })?;
        let writer = parquet::arrow::ArrowWriter::try_new(file, schema, Some(props))
            .map_err(|source| TableError::Parquet { path: path.to_owned(), source })?;
        Ok(TableFile { path: path.to_owned(), writer })
    }

    /// A Parquet error of this table, naming its path.
    pub fn parquet(&self, source: parquet::errors::ParquetError) -> TableError {
        TableError::Parquet { path: self.path.clone(), source }
    }

    /// Append one batch.
    pub fn write(&mut self, batch: &arrow_array::RecordBatch) -> Result<(), TableError> {
        self.writer.write(batch).map_err(|e| self.parquet(e))
    }

    /// Bytes buffered for the row group in progress.
    pub fn in_progress_size(&self) -> usize {
        self.writer.in_progress_size()
    }

    /// Close the row group in progress.
    pub fn flush(&mut self) -> Result<(), TableError> {
        self.writer.flush().map_err(|e| self.parquet(e))
    }

    /// Write the footer, then put the file in place durably.
    pub fn finish(self) -> Result<(), TableError> {
        let TableFile { path, writer } = self;
        let file = writer
            .into_inner()
            .map_err(|source| TableError::Parquet { path: path.clone(), source })?;
        file.commit().map_err(|source| TableError::Io { path, source })
    }
}

/// Row groups being encoded at once by a [`GroupedTableFile`]: the next one is handed over
/// while the last is still encoding, so the caller rarely waits, and memory holds two.
const GROUPS_IN_FLIGHT: usize = 2;

/// A Parquet file written a row group at a time, each group encoded beside the caller: on a
/// thread of its own, building its Arrow columns and then encoding and compressing its leaf
/// columns in parallel. The caller only hands over rows and, in order, appends the finished
/// column chunks. The bytes are those [`TableFile`] writes for one batch per row group, and
/// the file is as durable and as invisible until [`GroupedTableFile::finish`].
pub struct GroupedTableFile {
    path: std::path::PathBuf,
    schema: arrow_schema::SchemaRef,
    file: parquet::file::writer::SerializedFileWriter<coreb_base::durable::AtomicFile>,
    factory: parquet::arrow::arrow_writer::ArrowRowGroupWriterFactory,
    /// Row groups handed over so far.
    started: usize,
    /// Groups being encoded, oldest first.
    encoding: std::collections::VecDeque<std::thread::JoinHandle<EncodedGroup>>,
}

type EncodedGroup = parquet::errors::Result<Vec<parquet::arrow::arrow_writer::ArrowColumnChunk>>;

impl GroupedTableFile {
    /// Start the table at `path` with these writer properties.
    pub fn create(
        path: &std::path::Path,
        schema: arrow_schema::SchemaRef,
        props: parquet::file::properties::WriterProperties,
    ) -> Result<GroupedTableFile, TableError> {
        let TableFile { path, writer } = TableFile::create(path, schema.clone(), props)?;
        let (file, factory) = writer
            .into_serialized_writer()
            .map_err(|source| TableError::Parquet { path: path.clone(), source })?;
        Ok(GroupedTableFile {
            path,
            schema,
            file,
            factory,
            started: 0,
            encoding: Default::default(),
        })
    }

    fn parquet(&self, source: parquet::errors::ParquetError) -> TableError {
        TableError::Parquet { path: self.path.clone(), source }
    }

    /// Write the batch that `build` makes as the next row group. `build` and the encoding
    /// run on another thread; this waits only while `GROUPS_IN_FLIGHT` groups are encoding.
    pub fn write_group(
        &mut self,
        build: impl FnOnce() -> arrow_array::RecordBatch + Send + 'static,
    ) -> Result<(), TableError> {
        while self.encoding.len() >= GROUPS_IN_FLIGHT {
            self.append_oldest()?;
        }
        let writers =
            self.factory.create_column_writers(self.started).map_err(|e| self.parquet(e))?;
        let schema = self.schema.clone();
        let encoder = std::thread::Builder::new()
            .name(format!("encode row group {}", self.started))
            .spawn(move || encode_group(&schema, &build(), writers))
            .map_err(|source| TableError::Io { path: self.path.clone(), source })?;
        self.started += 1;
        self.encoding.push_back(encoder);
        Ok(())
    }

    /// Wait for the oldest group being encoded and append it to the file.
    fn append_oldest(&mut self) -> Result<(), TableError> {
        let Some(encoder) = self.encoding.pop_front() else {
            return Ok(());
        };
        let chunks = encoder
            .join()
            .unwrap_or_else(|_| {
                Err(parquet::errors::ParquetError::General(
                    "encoding a row group panicked (a bug in coreb)".into(),
                ))
            })
            .map_err(|e| self.parquet(e))?;
        let parquet_err = |source| TableError::Parquet { path: self.path.clone(), source };
        let mut group = self.file.next_row_group().map_err(parquet_err)?;
        for chunk in chunks {
            chunk.append_to_row_group(&mut group).map_err(parquet_err)?;
        }
        group.close().map_err(parquet_err)?;
        Ok(())
    }

    /// Append every group still encoding, write the footer, then put the file in place durably.
    pub fn finish(mut self) -> Result<(), TableError> {
        while !self.encoding.is_empty() {
            self.append_oldest()?;
        }
        let GroupedTableFile { path, file, .. } = self;
        let file = file
            .into_inner()
            .map_err(|source| TableError::Parquet { path: path.clone(), source })?;
        file.commit().map_err(|source| TableError::Io { path, source })
    }
}

/// Encode one batch as the column chunks of a row group, every leaf column in parallel.
fn encode_group(
    schema: &arrow_schema::Schema,
    batch: &arrow_array::RecordBatch,
    writers: Vec<parquet::arrow::arrow_writer::ArrowColumnWriter>,
) -> EncodedGroup {
    use rayon::prelude::*;
    if batch.schema().fields() != schema.fields() {
        return Err(parquet::errors::ParquetError::General(
            "a row group's columns do not match the table's schema".into(),
        ));
    }
    let mut leaves = Vec::with_capacity(writers.len());
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        leaves.extend(parquet::arrow::arrow_writer::compute_leaves(field, column)?);
    }
    writers
        .into_par_iter()
        .zip(leaves)
        .map(|(mut writer, leaf)| {
            writer.write(&leaf)?;
            writer.close()
        })
        .collect()
}

/// Write record batches as the table at `path`, atomically and durably ([`TableFile`]).
pub fn write_atomic(
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

/// What every table's tests check first: `rows` written to a fresh file named `name` and read
/// back equal, nothing but the table left in its folder (no temporary file). The folder (kept
/// alive) and the file's path, for what a test checks next.
#[cfg(test)]
pub(crate) fn assert_round_trip<T: PartialEq + std::fmt::Debug, W>(
    name: &str,
    rows: &[T],
    write: impl Fn(&std::path::Path, &[T]) -> Result<W, TableError>,
    read: impl Fn(&std::path::Path) -> Result<Vec<T>, TableError>,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    write(&path, rows).unwrap();
    assert_eq!(read(&path).unwrap(), rows);
    let left: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, [name], "no temporary file is left");
    (dir, path)
}
