//! The `problems` table: Parquet encoding and decoding of [`Problem`]s.
//!
//! Writing streams: rows are gathered into row groups of bounded byte size, each encoded on
//! threads beside the writer, so memory stays flat however large the input. Reading yields
//! problems batch by batch. Every Parquet call for problems is in this module.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{Array, ArrayRef, ListArray, RecordBatch, StringArray, StructArray};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use thiserror::Error;

use crate::problem::{Platform, Problem, ProblemId, TestCase, TestType};

/// Errors reading or writing a problems table; each names the file.
#[derive(Debug, Error)]
pub enum TableError {
    /// The file could not be opened or created.
    #[error("`{}`", path.display())]
    Io {
        /// The table file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Parquet or Arrow refused the data.
    #[error("`{}`: parquet", path.display())]
    Parquet {
        /// The table file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// A column is missing or has the wrong type or value.
    #[error("`{}`: row {row}: column `{column}`: {reason}", path.display())]
    Column {
        /// The table file.
        path: PathBuf,
        /// Row number (0-based) in the file.
        row: usize,
        /// The column.
        column: String,
        /// What is wrong.
        reason: String,
    },
}

/// Rows per record batch (and written row group) at most; batches also close at
/// [`BATCH_BYTES`] of text, row groups at [`GROUP_BYTES`].
const BATCH_ROWS: usize = 512;
/// Bytes of text per record batch read at most (keeps i32 offsets far from overflow).
const BATCH_BYTES: usize = 64 << 20;
/// Bytes of text per row group written at most: [`ProblemWriter`] holds the group it is
/// filling and two being encoded, each in its rows, its Arrow batch and its pages. Small
/// groups keep those buffers inside the allocator's per-thread heaps, reused from group to
/// group; at 32 MiB each group mapped fresh memory (at 2 GB of input: 2.6× the page faults,
/// 1.5× the peak memory and no faster, issue #13).
const GROUP_BYTES: usize = 8 << 20;
/// Buffered row-group bytes before [`copy_rows`] flushes a group to disk.
const ROW_GROUP_BYTES: usize = 64 << 20;

fn tests_type() -> DataType {
    let fields = Fields::from(vec![
        Field::new("input", DataType::Utf8, false),
        Field::new("output", DataType::Utf8, false),
        Field::new("testtype", DataType::Utf8, false),
    ]);
    DataType::List(Arc::new(Field::new("item", DataType::Struct(fields), false)))
}

/// The Arrow schema of the problems table.
pub fn problems_schema() -> SchemaRef {
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    Arc::new(Schema::new(vec![
        text("id"),
        text("question_title"),
        text("question_content"),
        text("platform"),
        text("question_id"),
        text("contest_id"),
        text("contest_date"),
        text("starter_code"),
        text("difficulty"),
        Field::new("public_tests", tests_type(), false),
        Field::new("private_tests", tests_type(), false),
        Field::new("func_name", DataType::Utf8, true),
        text("metadata"),
    ]))
}

/// The problems table's Parquet properties: those of every table, but Zstandard (level 1)
/// pages, and neither dictionaries nor statistics for the test strings.
///
/// Tests are mostly numbers: Snappy, which only finds repeats, shrank them by 12 % at a fifth
/// of `ingest`'s CPU, where Zstandard's entropy coding halves them for less (`bench/ingest`,
/// issue #13); every later stage reads and hashes the smaller file. A dictionary of
/// megabyte-long strings is never used, and their min/max say nothing.
fn problems_properties() -> parquet::file::properties::WriterProperties {
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::EnabledStatistics;
    use parquet::schema::types::ColumnPath;
    let level = ZstdLevel::try_new(1).expect("1 is a Zstandard level");
    let mut props =
        super::writer_properties().into_builder().set_compression(Compression::ZSTD(level));
    for tests in ["public_tests", "private_tests"] {
        for field in ["input", "output"] {
            let path =
                ColumnPath::new(vec![tests.into(), "list".into(), "item".into(), field.into()]);
            props = props
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_statistics_enabled(path, EnabledStatistics::None);
        }
    }
    props.build()
}

/// Streams problems into a Parquet file, a row group of `BATCH_ROWS` rows or
/// `GROUP_BYTES` of text at a time, each encoded beside the caller
/// ([`super::GroupedTableFile`]).
pub struct ProblemWriter {
    table: super::GroupedTableFile,
    pending: Vec<Problem>,
    pending_bytes: usize,
    rows: usize,
}

impl ProblemWriter {
    /// Start the table at `path`: it replaces any file there only on [`ProblemWriter::finish`]
    /// (atomically and durably), and a writer dropped before leaves nothing.
    pub fn create(path: &Path) -> Result<Self, TableError> {
        let table =
            super::GroupedTableFile::create(path, problems_schema(), problems_properties())?;
        Ok(ProblemWriter { table, pending: Vec::new(), pending_bytes: 0, rows: 0 })
    }

    /// Append one problem.
    pub fn write(&mut self, problem: Problem) -> Result<(), TableError> {
        self.pending_bytes += text_bytes(&problem);
        self.pending.push(problem);
        if self.pending.len() >= BATCH_ROWS || self.pending_bytes >= GROUP_BYTES {
            self.write_group()?;
        }
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> usize {
        self.rows + self.pending.len()
    }

    fn write_group(&mut self) -> Result<(), TableError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.pending);
        self.rows += rows.len();
        self.pending_bytes = 0;
        self.table.write_group(move || to_batch(&rows))
    }

    /// Write the footer and put the file in place; returns the number of rows.
    pub fn finish(mut self) -> Result<usize, TableError> {
        self.write_group()?;
        self.table.finish()?;
        Ok(self.rows)
    }
}

fn text_bytes(p: &Problem) -> usize {
    let tests: usize = p
        .public_tests
        .iter()
        .chain(&p.private_tests)
        .map(|t| t.input.len() + t.output.len() + 16)
        .sum();
    p.question_content.len()
        + p.question_title.len()
        + p.starter_code.len()
        + p.metadata.len()
        + 128
        + tests
}

fn strings<'a>(values: impl Iterator<Item = &'a str> + Clone) -> ArrayRef {
    // Sized up front: test columns hold hundreds of MB, and growing them copies.
    let (count, bytes) = values.clone().fold((0, 0), |(n, b), v| (n + 1, b + v.len()));
    let mut b = StringBuilder::with_capacity(count, bytes);
    for v in values {
        b.append_value(v);
    }
    Arc::new(b.finish())
}

fn tests_array(rows: &[Problem], pick: impl Fn(&Problem) -> &Vec<TestCase>) -> ArrayRef {
    let mut offsets = Vec::with_capacity(rows.len() + 1);
    offsets.push(0i32);
    let all: Vec<&TestCase> = rows.iter().flat_map(|p| pick(p).iter()).collect();
    let mut n = 0i32;
    for p in rows {
        n += pick(p).len() as i32;
        offsets.push(n);
    }
    let DataType::List(item) = tests_type() else { unreachable!("tests_type is a list") };
    let DataType::Struct(fields) = item.data_type().clone() else { unreachable!("list of struct") };
    let children = vec![
        strings(all.iter().map(|t| t.input.as_str())),
        strings(all.iter().map(|t| t.output.as_str())),
        strings(all.iter().map(|t| t.testtype.as_str())),
    ];
    let values = StructArray::new(fields, children, None);
    Arc::new(ListArray::new(
        item,
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Arc::new(values),
        None,
    ))
}

fn to_batch(rows: &[Problem]) -> RecordBatch {
    let col = |f: fn(&Problem) -> &str| strings(rows.iter().map(f));
    let mut func = StringBuilder::new();
    for p in rows {
        func.append_option(p.func_name.as_deref());
    }
    let columns: Vec<ArrayRef> = vec![
        col(|p| p.id.as_str()),
        col(|p| &p.question_title),
        col(|p| &p.question_content),
        col(|p| p.platform.as_str()),
        col(|p| &p.question_id),
        col(|p| &p.contest_id),
        col(|p| &p.contest_date),
        col(|p| &p.starter_code),
        col(|p| &p.difficulty),
        tests_array(rows, |p| &p.public_tests),
        tests_array(rows, |p| &p.private_tests),
        Arc::new(func.finish()),
        col(|p| &p.metadata),
    ];
    RecordBatch::try_new(problems_schema(), columns).expect("columns match problems_schema")
}

/// Copy the rows of the problems table `input` for which `keep(row)` holds (rows counted
/// from 0) into a new table at `output`, without decoding them. When every row is kept the
/// file is copied byte for byte; otherwise Arrow's filter kernel copies each kept row's
/// columns as they are. Returns the rows written. Like [`ProblemWriter`], the table appears
/// under its name only once complete.
pub fn copy_rows(
    input: &Path,
    output: &Path,
    keep: impl Fn(usize) -> bool,
) -> Result<usize, TableError> {
    fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TableError + '_ {
        move |source| TableError::Io { path: path.to_owned(), source }
    }
    let footer = metadata(input)?;
    let rows = usize::try_from(footer.file_metadata().num_rows()).unwrap_or(0);
    if (0..rows).all(&keep) {
        let mut from = std::fs::File::open(input).map_err(io_err(input))?;
        let mut to = coreb_base::durable::AtomicFile::create(output).map_err(io_err(output))?;
        std::io::copy(&mut from, &mut to).map_err(io_err(output))?;
        to.commit().map_err(io_err(output))?;
        return Ok(rows);
    }
    let mut table = super::TableFile::create(output, problems_schema(), problems_properties())?;
    let (mut row, mut written) = (0usize, 0usize);
    for batch in super::read_batches(input, rows_per_batch(&footer))? {
        let batch = batch?;
        let mask: arrow_array::BooleanArray =
            (row..row + batch.num_rows()).map(|r| Some(keep(r))).collect();
        row += batch.num_rows();
        let parquet_err = |e: arrow_schema::ArrowError| TableError::Parquet {
            path: input.to_owned(),
            source: e.into(),
        };
        let kept = arrow_select::filter::filter_record_batch(&batch, &mask).map_err(parquet_err)?;
        if kept.num_rows() == 0 {
            continue;
        }
        // The table's own schema, so that a file of another shape is refused here.
        let kept = RecordBatch::try_new(problems_schema(), kept.columns().to_vec())
            .map_err(parquet_err)?;
        written += kept.num_rows();
        table.write(&kept)?;
        if table.in_progress_size() >= ROW_GROUP_BYTES {
            table.flush()?;
        }
    }
    table.finish()?;
    Ok(written)
}

/// Reads a problems table batch by batch.
pub struct ProblemReader {
    path: PathBuf,
    reader: ParquetRecordBatchReader,
    current: std::vec::IntoIter<Problem>,
    row: usize,
    /// Whether tests carry their input and output (see [`ProblemReader::open_without_test_bodies`]).
    bodies: bool,
}

impl ProblemReader {
    /// Open the table at `path`.
    ///
    /// A batch holds as many rows as fit in `BATCH_BYTES` by the file's own row-group sizes
    /// (1 to `BATCH_ROWS`): a month's problems carry MBs of tests each, and a reader that took
    /// a fixed 256 rows would hold a whole month in memory (and overflow a string column's
    /// 32-bit offsets past 2 GiB).
    pub fn open(path: &Path) -> Result<Self, TableError> {
        let reader = super::open_batches(path, rows_per_batch(&metadata(path)?))?;
        Ok(ProblemReader {
            path: path.to_owned(),
            reader,
            current: Vec::new().into_iter(),
            row: 0,
            bodies: true,
        })
    }

    /// Open the table at `path` for the stages that judge problems by their statement and
    /// the number and kind of their tests (`dedup`, `filter`): every test comes back with
    /// its type but an empty input and output, which are never read from the file. The
    /// megabytes of a month's tests are neither decompressed nor copied; [`copy_rows`]
    /// then writes the kept rows whole.
    pub fn open_without_test_bodies(path: &Path) -> Result<Self, TableError> {
        let parquet_err = |source| TableError::Parquet { path: path.to_owned(), source };
        let file = std::fs::File::open(path)
            .map_err(|source| TableError::Io { path: path.to_owned(), source })?;
        let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(parquet_err)?;
        let schema = builder.parquet_schema();
        let light: Vec<usize> = (0..schema.num_columns())
            .filter(|&i| {
                let parts = schema.column(i).path().parts().to_vec();
                let is_tests = matches!(
                    parts.first().map(String::as_str),
                    Some("public_tests" | "private_tests")
                );
                !(is_tests && matches!(parts.last().map(String::as_str), Some("input" | "output")))
            })
            .collect();
        let mask = parquet::arrow::ProjectionMask::leaves(schema, light);
        let reader = builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(parquet_err)?;
        Ok(ProblemReader {
            path: path.to_owned(),
            reader,
            current: Vec::new().into_iter(),
            row: 0,
            bodies: false,
        })
    }

    /// Read every problem into memory (for small tables: samples, releases, tests).
    pub fn read_all(path: &Path) -> Result<Vec<Problem>, TableError> {
        ProblemReader::open(path)?.collect()
    }
}

/// Rows per read batch for a table with this footer: [`BATCH_BYTES`] over its largest mean
/// row (uncompressed, per row group), within 1..=[`BATCH_ROWS`].
fn rows_per_batch(metadata: &parquet::file::metadata::ParquetMetaData) -> usize {
    let widest_row = metadata
        .row_groups()
        .iter()
        .filter(|g| g.num_rows() > 0)
        .map(|g| (g.total_byte_size().max(0) as u64).div_ceil(g.num_rows() as u64))
        .max()
        .unwrap_or(0);
    ((BATCH_BYTES as u64) / widest_row.max(1)).clamp(1, BATCH_ROWS as u64) as usize
}

/// The problems at `rows` (0-based, ascending) of the table at `path`, whole. Only the row
/// groups that hold one of them are read.
pub fn read_rows(path: &Path, rows: &[usize]) -> Result<Vec<Problem>, TableError> {
    use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
    let parquet_err = |source| TableError::Parquet { path: path.to_owned(), source };
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let file = std::fs::File::open(path)
        .map_err(|source| TableError::Io { path: path.to_owned(), source })?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(parquet_err)?;
    let batch_rows = rows_per_batch(builder.metadata());
    // The row groups holding a wanted row, and a selection counted within those groups.
    let (mut groups, mut selectors) = (Vec::new(), Vec::new());
    let (mut start, mut wanted) = (0usize, rows.iter().copied().peekable());
    for (g, group) in builder.metadata().row_groups().iter().enumerate() {
        let end = start + usize::try_from(group.num_rows()).unwrap_or(0);
        let mut at = start;
        while let Some(row) = wanted.next_if(|&r| r < end) {
            if row < at {
                return Err(TableError::Column {
                    path: path.to_owned(),
                    row,
                    column: "(row)".into(),
                    reason: "rows asked for out of order".into(),
                });
            }
            if at == start {
                groups.push(g);
            }
            selectors.extend([RowSelector::skip(row - at), RowSelector::select(1)]);
            at = row + 1;
        }
        if at > start && at < end {
            selectors.push(RowSelector::skip(end - at));
        }
        start = end;
    }
    if let Some(row) = wanted.next() {
        return Err(TableError::Column {
            path: path.to_owned(),
            row,
            column: "(row)".into(),
            reason: format!("the table has {start} rows"),
        });
    }
    let reader = builder
        .with_row_groups(groups)
        .with_row_selection(RowSelection::from(selectors))
        .with_batch_size(batch_rows)
        .build()
        .map_err(parquet_err)?;
    let mut out = Vec::with_capacity(rows.len());
    for batch in reader {
        let batch = batch.map_err(|e| parquet_err(e.into()))?;
        out.extend(from_batch(&batch, path, rows[out.len()], true)?);
    }
    Ok(out)
}

/// The Parquet footer of the table at `path`.
fn metadata(path: &Path) -> Result<parquet::file::metadata::ParquetMetaData, TableError> {
    let file = std::fs::File::open(path)
        .map_err(|source| TableError::Io { path: path.to_owned(), source })?;
    parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .map_err(|source| TableError::Parquet { path: path.to_owned(), source })
}

impl Iterator for ProblemReader {
    type Item = Result<Problem, TableError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(p) = self.current.next() {
                return Some(Ok(p));
            }
            let batch = match self.reader.next()? {
                Ok(batch) => batch,
                Err(e) => {
                    return Some(Err(TableError::Parquet {
                        path: self.path.clone(),
                        source: e.into(),
                    }));
                }
            };
            match from_batch(&batch, &self.path, self.row, self.bodies) {
                Ok(rows) => {
                    self.row += rows.len();
                    self.current = rows.into_iter();
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// The problems of a batch; without `bodies`, tests have no `input` and `output` columns and
/// come back with empty ones.
fn from_batch(
    batch: &RecordBatch,
    path: &Path,
    first_row: usize,
    bodies: bool,
) -> Result<Vec<Problem>, TableError> {
    let view = super::BatchView::new(batch, path, first_row);
    let err = |row: usize, column: &str, reason: String| view.err(row, column, reason);
    let text = |name: &str| view.column::<StringArray>(name);
    let tests = |name: &str| -> Result<Vec<Vec<TestCase>>, TableError> {
        let list = view.column::<ListArray>(name)?;
        let values = list
            .values()
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(|| err(0, name, "items are not structs".into()))?;
        let field = |f: &str| -> Result<&StringArray, TableError> {
            values
                .column_by_name(f)
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                .ok_or_else(|| {
                    err(0, &format!("{name}.{f}"), "missing or not a string field".into())
                })
        };
        let (input, output) =
            if bodies { (Some(field("input")?), Some(field("output")?)) } else { (None, None) };
        let testtype = field("testtype")?;
        let body = |column: Option<&StringArray>, i: usize| {
            column.map(|c| c.value(i).to_owned()).unwrap_or_default()
        };
        let offsets = list.value_offsets();
        let mut out = Vec::with_capacity(list.len());
        for row in 0..list.len() {
            let mut cases = Vec::new();
            for i in offsets[row] as usize..offsets[row + 1] as usize {
                let tt = TestType::parse(testtype.value(i)).ok_or_else(|| {
                    err(row, name, format!("unknown testtype `{}`", testtype.value(i)))
                })?;
                cases.push(TestCase {
                    input: body(input, i),
                    output: body(output, i),
                    testtype: tt,
                });
            }
            out.push(cases);
        }
        Ok(out)
    };
    let (id, title, content, platform) =
        (text("id")?, text("question_title")?, text("question_content")?, text("platform")?);
    let (qid, cid, date, starter, difficulty) = (
        text("question_id")?,
        text("contest_id")?,
        text("contest_date")?,
        text("starter_code")?,
        text("difficulty")?,
    );
    let (func, metadata) = (text("func_name")?, text("metadata")?);
    let mut public = tests("public_tests")?.into_iter();
    let mut private = tests("private_tests")?.into_iter();
    let mut rows = Vec::with_capacity(batch.num_rows());
    for r in 0..batch.num_rows() {
        let platform = Platform::parse(platform.value(r)).ok_or_else(|| {
            err(r, "platform", format!("unknown platform `{}`", platform.value(r)))
        })?;
        rows.push(Problem {
            id: ProblemId::from_raw(id.value(r).to_owned()),
            question_title: title.value(r).to_owned(),
            question_content: content.value(r).to_owned(),
            platform,
            question_id: qid.value(r).to_owned(),
            contest_id: cid.value(r).to_owned(),
            contest_date: date.value(r).to_owned(),
            starter_code: starter.value(r).to_owned(),
            difficulty: difficulty.value(r).to_owned(),
            public_tests: public.next().unwrap_or_default(),
            private_tests: private.next().unwrap_or_default(),
            func_name: (!func.is_null(r)).then(|| func.value(r).to_owned()),
            metadata: metadata.value(r).to_owned(),
            answer: Default::default(),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(id: &str, tests: usize) -> Problem {
        Problem {
            id: ProblemId::from_question_id(id),
            question_title: format!("title {id}"),
            question_content: format!("statement of {id}"),
            platform: Platform::Atcoder,
            question_id: id.to_owned(),
            contest_id: "abc1".into(),
            contest_date: "2025-01-04T00:00:00".into(),
            starter_code: String::new(),
            difficulty: "easy".into(),
            public_tests: (0..tests)
                .map(|i| TestCase {
                    input: format!("{i}\n"),
                    output: format!("{}\n", i * 2),
                    testtype: TestType::Stdin,
                })
                .collect(),
            private_tests: vec![],
            func_name: tests.is_multiple_of(2).then(|| "f".to_owned()),
            metadata: "{}".into(),
            answer: Default::default(),
        }
    }

    #[test]
    fn round_trip_across_batches() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.parquet");
        let mut w = ProblemWriter::create(&path).unwrap();
        let problems: Vec<Problem> = (0..1200).map(|i| sample(&i.to_string(), i % 4)).collect();
        for p in &problems {
            w.write(p.clone()).unwrap();
        }
        assert_eq!(w.finish().unwrap(), 1200);
        assert_eq!(ProblemReader::read_all(&path).unwrap(), problems);
    }

    #[test]
    fn problems_with_mbs_of_tests_are_read_a_few_at_a_time() {
        // Small problems come 512 a batch; problems of ~8 MiB of tests come at most 64 MiB a batch.
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.parquet");
        let mut w = ProblemWriter::create(&small).unwrap();
        (0..600).for_each(|i| w.write(sample(&i.to_string(), 2)).unwrap());
        w.finish().unwrap();
        assert_eq!(rows_per_batch(&metadata(&small).unwrap()), BATCH_ROWS);

        let big = dir.path().join("big.parquet");
        let mut w = ProblemWriter::create(&big).unwrap();
        let heavy = |i: usize| {
            let mut p = sample(&i.to_string(), 1);
            // Incompressible-looking digits, 8 MiB per problem.
            let input: String = (0..(1u64 << 20))
                .map(|k| format!("{:07}\n", (k * 2_654_435_761 + i as u64) % 9_999_991))
                .collect();
            p.private_tests =
                vec![TestCase { input, output: "0\n".into(), testtype: TestType::Stdin }];
            p
        };
        let problems: Vec<Problem> = (0..20).map(heavy).collect();
        for p in &problems {
            w.write(p.clone()).unwrap();
        }
        w.finish().unwrap();
        let rows = rows_per_batch(&metadata(&big).unwrap());
        assert!((1..=8).contains(&rows), "{rows} rows of ~8 MiB a batch");
        // A group closes at 8 MiB of text: each ~8 MiB problem is a group of its own.
        assert_eq!(metadata(&big).unwrap().num_row_groups(), 20);
        assert_eq!(ProblemReader::read_all(&big).unwrap(), problems);
    }

    /// `sample` problems with private tests too, written to `path` across several batches.
    fn table_of(path: &Path, n: usize) -> Vec<Problem> {
        let problems: Vec<Problem> = (0..n)
            .map(|i| {
                let mut p = sample(&i.to_string(), i % 3);
                p.private_tests = (0..i % 4)
                    .map(|k| TestCase {
                        input: format!("{i} {k}\n").repeat(50),
                        output: format!("{k}"),
                        testtype: TestType::Functional,
                    })
                    .collect();
                p
            })
            .collect();
        let mut w = ProblemWriter::create(path).unwrap();
        problems.iter().for_each(|p| w.write(p.clone()).unwrap());
        w.finish().unwrap();
        problems
    }

    #[test]
    fn without_test_bodies_every_field_but_the_test_bodies_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.parquet");
        let problems = table_of(&path, 1100);
        let light = ProblemReader::open_without_test_bodies(&path)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let hollow = |p: &Problem| {
            let mut p = p.clone();
            for t in p.public_tests.iter_mut().chain(p.private_tests.iter_mut()) {
                (t.input, t.output) = (String::new(), String::new());
            }
            p
        };
        assert_eq!(light, problems.iter().map(hollow).collect::<Vec<_>>());
        assert!(light.iter().zip(&problems).all(
            |(l, p)| l.test_count() == p.test_count() && l.is_functional() == p.is_functional()
        ));
    }

    #[test]
    fn copy_rows_keeps_the_chosen_rows_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (input, output) = (dir.path().join("in.parquet"), dir.path().join("out.parquet"));
        let problems = table_of(&input, 1100);
        let keep = |row: usize| row % 7 != 3 && row != 1099;
        assert_eq!(copy_rows(&input, &output, keep).unwrap(), problems.len() - 158);
        let expected: Vec<Problem> =
            problems.iter().enumerate().filter(|(i, _)| keep(*i)).map(|(_, p)| p.clone()).collect();
        assert_eq!(ProblemReader::read_all(&output).unwrap(), expected);
        // Every row kept: the very same bytes. No row kept: an empty, readable table.
        assert_eq!(copy_rows(&input, &output, |_| true).unwrap(), 1100);
        assert_eq!(std::fs::read(&output).unwrap(), std::fs::read(&input).unwrap());
        assert_eq!(copy_rows(&input, &output, |_| false).unwrap(), 0);
        assert_eq!(ProblemReader::read_all(&output).unwrap(), vec![]);
    }

    #[test]
    fn read_rows_reads_just_those_rows_across_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.parquet");
        let problems: Vec<Problem> = (0..150).map(|i| sample(&i.to_string(), i % 3)).collect();
        // Fifteen row groups of ten rows.
        let mut table =
            crate::tables::TableFile::create(&path, problems_schema(), problems_properties())
                .unwrap();
        for chunk in problems.chunks(10) {
            table.write(&to_batch(chunk)).unwrap();
            table.flush().unwrap();
        }
        table.finish().unwrap();
        assert_eq!(metadata(&path).unwrap().num_row_groups(), 15);
        for rows in
            [vec![0], vec![149], vec![3, 4, 9, 10, 70, 71, 72, 148], (0..150).collect::<Vec<_>>()]
        {
            let expected: Vec<Problem> = rows.iter().map(|&r| problems[r].clone()).collect();
            assert_eq!(read_rows(&path, &rows).unwrap(), expected, "rows {rows:?}");
        }
        assert!(read_rows(&path, &[5, 150]).is_err());
        assert!(read_rows(&path, &[9, 2]).is_err());
        assert_eq!(read_rows(&path, &[]).unwrap(), vec![]);
    }

    #[test]
    fn row_groups_encoded_beside_the_writer_are_the_bytes_of_a_plain_writer() {
        let dir = tempfile::tempdir().unwrap();
        let problems: Vec<Problem> = (0..1300)
            .map(|i| {
                let mut p = sample(&i.to_string(), i % 3);
                p.private_tests = vec![TestCase {
                    input: format!("{i}\n").repeat(i % 40),
                    output: i.to_string(),
                    testtype: TestType::Stdin,
                }];
                p
            })
            .collect();
        let grouped = dir.path().join("grouped.parquet");
        let mut w = ProblemWriter::create(&grouped).unwrap();
        problems.iter().for_each(|p| w.write(p.clone()).unwrap());
        assert_eq!(w.finish().unwrap(), 1300);
        // The same row groups through one `ArrowWriter`, a batch each, on this thread.
        let plain = dir.path().join("plain.parquet");
        let mut table =
            crate::tables::TableFile::create(&plain, problems_schema(), problems_properties())
                .unwrap();
        for chunk in problems.chunks(BATCH_ROWS) {
            table.write(&to_batch(chunk)).unwrap();
            table.flush().unwrap();
        }
        table.finish().unwrap();
        assert_eq!(metadata(&grouped).unwrap().num_row_groups(), 3);
        assert_eq!(std::fs::read(&grouped).unwrap(), std::fs::read(&plain).unwrap());
        assert_eq!(ProblemReader::read_all(&grouped).unwrap(), problems);
    }

    #[test]
    fn a_row_group_that_cannot_be_encoded_is_an_error_naming_the_table_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.parquet");
        let good = to_batch(&[sample("1", 1)]);
        // Columns of another shape.
        let mut table = crate::tables::GroupedTableFile::create(
            &path,
            problems_schema(),
            problems_properties(),
        )
        .unwrap();
        table.write_group(move || good).unwrap();
        table.write_group(|| to_batch(&[sample("2", 1)]).project(&[0, 1]).unwrap()).unwrap();
        let err = table.finish().unwrap_err().to_string();
        assert!(err.contains("p.parquet"), "{err}");
        // A panic while building a group's batch.
        let mut table = crate::tables::GroupedTableFile::create(
            &path,
            problems_schema(),
            problems_properties(),
        )
        .unwrap();
        table.write_group(|| panic!("a bug while building the batch")).unwrap();
        let err = table.finish().unwrap_err();
        assert!(format!("{err:#?}").contains("panicked"), "{err:#?}");
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn same_rows_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str| {
            let path = dir.path().join(name);
            let mut w = ProblemWriter::create(&path).unwrap();
            for i in 0..50 {
                w.write(sample(&i.to_string(), 2)).unwrap();
            }
            w.finish().unwrap();
            std::fs::read(path).unwrap()
        };
        assert_eq!(write("a.parquet"), write("b.parquet"));
    }
}
