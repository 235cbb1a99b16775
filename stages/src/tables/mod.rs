//! Parquet tables exchanged between stages. Every Parquet call of the project lives under
//! this module, one file per table.

pub mod corpus;
pub mod problems;
pub mod release;
pub mod solutions;
pub mod verdicts;

pub use problems::{ProblemReader, ProblemWriter, TableError, problems_schema};

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
