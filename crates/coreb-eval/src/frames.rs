//! Parquet tables as polars frames, read with the `parquet` crate's Arrow reader (the one
//! that writes them) rather than polars' own: polars' `parquet` feature brings its streaming
//! engine and cloud I/O (object_store, a second HTTP stack), most of a cold build's work for
//! nothing coreb asks of it. The two frames modules ([`crate::check::frames`] over a release's
//! configs, [`crate::leaderboard::frames`] over the results store) read their tables here.
//!
//! Only the Arrow types those tables are written with are converted: strings (`Utf8`, and
//! `LargeUtf8` or `Utf8View` as pandas or pyarrow write them back after an edit), `Int64`,
//! `UInt64`, `Float64` and `Boolean`. A column of another type is an error naming the file
//! and the column.

use std::any::Any;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type as ArrowF64, Int64Type as ArrowI64, UInt64Type as ArrowU64};
use arrow_schema::DataType as ArrowType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use polars::prelude::*;

/// A failure reading or querying a table, as text (it names the file or column involved).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FrameError(String);

impl From<PolarsError> for FrameError {
    fn from(e: PolarsError) -> Self {
        FrameError(e.to_string())
    }
}

impl FrameError {
    /// An error with this text.
    pub(crate) fn new(text: String) -> Self {
        FrameError(text)
    }
}

type Result<T> = std::result::Result<T, FrameError>;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 64 * 1024;

/// The polars type a column of Arrow type `arrow` becomes, if it is one coreb converts.
fn polars_type(arrow: &ArrowType) -> Option<DataType> {
    Some(match arrow {
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => DataType::String,
        ArrowType::Int64 => DataType::Int64,
        ArrowType::UInt64 => DataType::UInt64,
        ArrowType::Float64 => DataType::Float64,
        ArrowType::Boolean => DataType::Boolean,
        _ => None?,
    })
}

fn unconverted(path: &Path, column: &str, arrow: &ArrowType) -> FrameError {
    FrameError(format!(
        "`{}`: column `{column}` is of Arrow type {arrow}, which is not read into a frame (strings, Int64, UInt64, Float64 and Boolean are)",
        path.display()
    ))
}

fn unreadable(path: &Path, e: impl std::fmt::Display) -> FrameError {
    FrameError(format!("`{}`: not a readable Parquet table ({e})", path.display()))
}

/// The reader of the table at `path` (its footer read).
fn open(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>> {
    let file = File::open(path).map_err(|e| FrameError(format!("`{}`: {e}", path.display())))?;
    ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| unreadable(path, e))
}

/// The polars schema of the table at `path`: every column, each of a type that is converted.
pub fn parquet_schema(path: &Path) -> Result<Schema> {
    let reader = open(path)?;
    reader
        .schema()
        .fields()
        .iter()
        .map(|f| {
            polars_type(f.data_type())
                .map(|t| Field::new(f.name().as_str().into(), t))
                .ok_or_else(|| unconverted(path, f.name(), f.data_type()))
        })
        .collect()
}

/// Read the table at `path` into a frame: the columns `columns`, in that order (every column
/// without), and at most `rows` rows (all without).
pub fn read_parquet(
    path: &Path,
    columns: Option<&[&str]>,
    rows: Option<usize>,
) -> Result<DataFrame> {
    let reader = open(path)?;
    let fields = reader.schema().fields().clone();
    let names: Vec<&str> = match columns {
        Some(names) => names.to_vec(),
        None => fields.iter().map(|f| f.name().as_str()).collect(),
    };
    // Top-level column `i` of a table of flat columns is root `i` of its Parquet schema.
    let mut roots = Vec::with_capacity(names.len());
    let mut types = Vec::with_capacity(names.len());
    for name in &names {
        let (i, field) = fields
            .find(name)
            .ok_or_else(|| FrameError(format!("`{}`: no column `{name}`", path.display())))?;
        if polars_type(field.data_type()).is_none() {
            return Err(unconverted(path, name, field.data_type()));
        }
        roots.push(i);
        types.push(field.data_type());
    }
    let mask = ProjectionMask::roots(reader.parquet_schema(), roots);
    let mut reader = reader.with_projection(mask).with_batch_size(BATCH_ROWS);
    if let Some(rows) = rows {
        reader = reader.with_limit(rows);
    }
    let batches = reader
        .build()
        .map_err(|e| unreadable(path, e))?
        .collect::<std::result::Result<Vec<RecordBatch>, _>>()
        .map_err(|e| unreadable(path, e))?;
    let height = batches.iter().map(RecordBatch::num_rows).sum();
    let columns = names
        .iter()
        .zip(types)
        .map(|(name, arrow)| column(path, name, arrow, &batches))
        .collect::<Result<Vec<Column>>>()?;
    Ok(DataFrame::new(height, columns)?)
}

/// The column `name` (of Arrow type `arrow`) of `batches` as one polars column.
fn column(path: &Path, name: &str, arrow: &ArrowType, batches: &[RecordBatch]) -> Result<Column> {
    let arrays = batches
        .iter()
        .map(|b| {
            b.column_by_name(name)
                .ok_or_else(|| unreadable(path, format!("a batch without column `{name}`")))
        })
        .collect::<Result<Vec<_>>>()?;
    let ca = PlSmallStr::from(name);
    let series = match arrow {
        ArrowType::Utf8 => {
            gathered::<StringType, _, _>(ca, &arrays, |a| a.as_string::<i32>().iter())
        }
        ArrowType::LargeUtf8 => {
            gathered::<StringType, _, _>(ca, &arrays, |a| a.as_string::<i64>().iter())
        }
        ArrowType::Utf8View => {
            gathered::<StringType, _, _>(ca, &arrays, |a| a.as_string_view().iter())
        }
        ArrowType::Int64 => {
            gathered::<Int64Type, _, _>(ca, &arrays, |a| a.as_primitive::<ArrowI64>().iter())
        }
        ArrowType::UInt64 => {
            gathered::<UInt64Type, _, _>(ca, &arrays, |a| a.as_primitive::<ArrowU64>().iter())
        }
        ArrowType::Float64 => {
            gathered::<Float64Type, _, _>(ca, &arrays, |a| a.as_primitive::<ArrowF64>().iter())
        }
        ArrowType::Boolean => gathered::<BooleanType, _, _>(ca, &arrays, |a| a.as_boolean().iter()),
        other => return Err(unconverted(path, name, other)),
    };
    Ok(series.into_column())
}

/// One polars column of `T` named `name`: the values of every batch's array in turn, each
/// array read by `values`.
fn gathered<'a, T, N, I>(
    name: PlSmallStr,
    arrays: &[&'a arrow_array::ArrayRef],
    values: impl Fn(&'a arrow_array::ArrayRef) -> I,
) -> Series
where
    T: PolarsDataType,
    ChunkedArray<T>: NewChunkedArray<T, N> + IntoSeries,
    I: Iterator<Item = Option<N>>,
{
    ChunkedArray::<T>::from_iter_options(name, arrays.iter().flat_map(|a| values(a))).into_series()
}

/// The table at `path` as a lazy frame: its schema read now, its rows when the frame is
/// collected, only the columns the query uses (polars pushes its projection down to
/// [`read_parquet`]).
pub fn scan_parquet(path: &Path) -> Result<LazyFrame> {
    let schema = Arc::new(parquet_schema(path)?);
    let args =
        ScanArgsAnonymous { schema: Some(schema), name: "parquet", ..ScanArgsAnonymous::default() };
    Ok(LazyFrame::anonymous_scan(Arc::new(ParquetScan { path: path.to_owned() }), args)?)
}

/// A Parquet table as polars' lazy engine reads it.
struct ParquetScan {
    path: PathBuf,
}

impl AnonymousScan for ParquetScan {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn scan(&self, args: AnonymousScanArgs) -> PolarsResult<DataFrame> {
        let columns: Option<Vec<&str>> =
            args.with_columns.as_deref().map(|c| c.iter().map(PlSmallStr::as_str).collect());
        read_parquet(&self.path, columns.as_deref(), args.n_rows)
            .map_err(|e| PolarsError::ComputeError(e.0.into()))
    }

    fn allows_projection_pushdown(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use arrow_array::{
        Array, ArrayRef, BooleanArray, Float64Array, Int64Array, ListArray, StringArray,
        UInt64Array,
    };
    use arrow_schema::{Field as ArrowField, Schema as ArrowSchema};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    /// Write `columns` as a Parquet table, `per_group` rows a row group.
    fn write(path: &Path, columns: Vec<(&str, ArrayRef)>, per_group: usize) {
        let fields: Vec<ArrowField> = columns
            .iter()
            .map(|(n, a)| ArrowField::new(*n, a.data_type().clone(), a.null_count() > 0))
            .collect();
        let batch = RecordBatch::try_new(
            Arc::new(ArrowSchema::new(fields)),
            columns.into_iter().map(|(_, a)| a).collect(),
        )
        .unwrap();
        let props =
            WriterProperties::builder().set_max_row_group_row_count(Some(per_group)).build();
        let mut w =
            ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    fn names(df: &DataFrame) -> Vec<&str> {
        df.get_column_names().into_iter().map(PlSmallStr::as_str).collect()
    }

    fn sample(path: &Path, per_group: usize) {
        write(
            path,
            vec![
                ("id", Arc::new(StringArray::from(vec![Some("a"), Some("b"), None])) as ArrayRef),
                ("n", Arc::new(Int64Array::from(vec![Some(1), None, Some(-3)]))),
                ("u", Arc::new(UInt64Array::from(vec![7, 8, u64::MAX]))),
                ("x", Arc::new(Float64Array::from(vec![Some(0.5), Some(f64::NAN), None]))),
                ("ok", Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)]))),
            ],
            per_group,
        );
    }

    #[test]
    fn every_converted_type_reads_with_its_values_and_nulls() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        // One row a row group: the rows come from several groups into one column.
        sample(&path, 1);
        let df = read_parquet(&path, None, None).unwrap();
        assert_eq!(names(&df), ["id", "n", "u", "x", "ok"]);
        assert_eq!(
            df.column("id").unwrap().str().unwrap().iter().collect::<Vec<_>>(),
            [Some("a"), Some("b"), None]
        );
        assert_eq!(
            df.column("n").unwrap().i64().unwrap().iter().collect::<Vec<_>>(),
            [Some(1), None, Some(-3)]
        );
        assert_eq!(
            df.column("u").unwrap().u64().unwrap().iter().collect::<Vec<_>>(),
            [Some(7), Some(8), Some(u64::MAX)]
        );
        let x: Vec<Option<f64>> = df.column("x").unwrap().f64().unwrap().iter().collect();
        assert_eq!((x[0], x[1].is_some_and(f64::is_nan), x[2]), (Some(0.5), true, None));
        assert_eq!(
            df.column("ok").unwrap().bool().unwrap().iter().collect::<Vec<_>>(),
            [Some(true), None, Some(false)]
        );
        let schema = parquet_schema(&path).unwrap();
        assert_eq!(schema.get("u"), Some(&DataType::UInt64));
        assert_eq!(&**df.schema(), &schema);
    }

    #[test]
    fn strings_read_in_each_arrow_layout() {
        use arrow_array::{LargeStringArray, StringViewArray};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let values = vec![Some("é"), None, Some("")];
        write(
            &path,
            vec![
                ("utf8", Arc::new(StringArray::from(values.clone())) as ArrayRef),
                ("large", Arc::new(LargeStringArray::from(values.clone()))),
                ("view", Arc::new(StringViewArray::from(values.clone()))),
            ],
            2,
        );
        let df = read_parquet(&path, None, None).unwrap();
        for name in ["utf8", "large", "view"] {
            assert_eq!(
                df.column(name).unwrap().str().unwrap().iter().collect::<Vec<_>>(),
                values,
                "{name}"
            );
        }
    }

    #[test]
    fn a_projection_reads_only_its_columns_in_its_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        sample(&path, 2);
        let df = read_parquet(&path, Some(&["ok", "id"]), Some(2)).unwrap();
        assert_eq!(names(&df), ["ok", "id"]);
        assert_eq!(df.height(), 2);
        let err = read_parquet(&path, Some(&["id", "nope"]), None).unwrap_err().to_string();
        assert!(err.contains("t.parquet") && err.contains("no column `nope`"), "{err}");
    }

    #[test]
    fn a_lazy_scan_reads_what_the_query_needs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        sample(&path, 2);
        let query = scan_parquet(&path)
            .unwrap()
            .filter(col("n").is_not_null())
            .select([col("id"), (col("u") / lit(1u64)).alias("u")]);
        // Only `id`, `n` and `u` are read (polars pushed its projection down to the scan).
        let plan = query.clone().explain(true).unwrap();
        assert!(plan.contains("PROJECT 3/5 COLUMNS"), "{plan}");
        let df = query.collect().unwrap();
        assert_eq!(
            df.column("id").unwrap().str().unwrap().iter().collect::<Vec<_>>(),
            [Some("a"), None]
        );
        assert_eq!(
            scan_parquet(&path)
                .unwrap()
                .select([len()])
                .collect()
                .unwrap()
                .column("len")
                .unwrap()
                .u32()
                .unwrap()
                .get(0),
            Some(3)
        );
    }

    #[test]
    fn an_empty_table_keeps_its_column_types() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        write(
            &path,
            vec![
                ("id", Arc::new(StringArray::from(Vec::<&str>::new())) as ArrayRef),
                ("n", Arc::new(Int64Array::from(Vec::<i64>::new()))),
            ],
            8,
        );
        let df = read_parquet(&path, None, None).unwrap();
        assert_eq!(
            (df.height(), df.column("id").unwrap().dtype(), df.column("n").unwrap().dtype()),
            (0, &DataType::String, &DataType::Int64)
        );
    }

    #[test]
    fn a_column_of_another_type_is_named_with_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let lists = ListArray::from_iter_primitive::<ArrowI64, _, _>(vec![Some(vec![Some(1)])]);
        write(
            &path,
            vec![
                ("id", Arc::new(StringArray::from(vec!["a"])) as ArrayRef),
                ("tests", Arc::new(lists)),
            ],
            8,
        );
        for err in [
            parquet_schema(&path).unwrap_err(),
            read_parquet(&path, Some(&["tests"]), None).unwrap_err(),
        ] {
            let err = err.to_string();
            assert!(
                err.contains("t.parquet") && err.contains("column `tests`") && err.contains("List"),
                "{err}"
            );
        }
        // The other columns read all the same.
        assert_eq!(read_parquet(&path, Some(&["id"]), None).unwrap().height(), 1);
    }

    #[test]
    fn a_damaged_or_missing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        sample(&path, 8);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        let err = scan_parquet(&path).err().unwrap().to_string();
        assert!(err.contains("t.parquet") && err.contains("not a readable Parquet table"), "{err}");
        let err =
            read_parquet(&dir.path().join("gone.parquet"), None, None).unwrap_err().to_string();
        assert!(err.contains("gone.parquet"), "{err}");
    }
}
