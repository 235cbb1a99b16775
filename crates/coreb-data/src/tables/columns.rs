//! Whole tables as named, typed columns: what `coreb export` reads from a release and writes
//! in another layout. A [`Column`] holds one column's values (strings, integers, booleans, or
//! a struct of columns, like the published dataset's `meta`); [`read`] loads a Parquet table
//! into columns and [`write()`] writes columns as one (a null anywhere makes the field nullable).

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Int64Array, LargeStringArray, RecordBatch, StringArray,
    StructArray,
};
use arrow_schema::{DataType, Field, Fields, Schema};

use super::TableError;

/// One column's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// UTF-8 strings.
    Str(Vec<Option<String>>),
    /// 64-bit integers.
    Int(Vec<Option<i64>>),
    /// Booleans.
    Bool(Vec<Option<bool>>),
    /// A struct: its fields, each as long as the column.
    Struct(Vec<Column>),
    /// Lists of UTF-8 strings (written only: the published `meta`'s language and model lists).
    StrList(Vec<Option<Vec<String>>>),
}

/// A named column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Its name.
    pub name: String,
    /// Its values.
    pub values: Values,
    /// Is its field nullable even where every value is present? (A null anywhere makes it so.)
    pub nullable: bool,
}

impl Column {
    /// A string column.
    pub fn str(name: &str, values: Vec<Option<String>>) -> Self {
        Column { name: name.to_owned(), values: Values::Str(values), nullable: false }
    }

    /// An integer column.
    pub fn int(name: &str, values: Vec<Option<i64>>) -> Self {
        Column { name: name.to_owned(), values: Values::Int(values), nullable: false }
    }

    /// A boolean column.
    pub fn bool(name: &str, values: Vec<Option<bool>>) -> Self {
        Column { name: name.to_owned(), values: Values::Bool(values), nullable: false }
    }

    /// A column of string lists.
    pub fn str_list(name: &str, values: Vec<Option<Vec<String>>>) -> Self {
        Column { name: name.to_owned(), values: Values::StrList(values), nullable: false }
    }

    /// A struct column of `fields`.
    pub fn structure(name: &str, fields: Vec<Column>) -> Self {
        Column { name: name.to_owned(), values: Values::Struct(fields), nullable: false }
    }

    /// The same column, with a nullable field whatever its values.
    pub fn nullable(self) -> Self {
        Column { nullable: true, ..self }
    }

    /// Its number of rows.
    pub fn len(&self) -> usize {
        match &self.values {
            Values::Str(v) => v.len(),
            Values::Int(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Struct(f) => f.first().map_or(0, Column::len),
            Values::StrList(v) => v.len(),
        }
    }

    /// Does it have no rows?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn to_arrow(&self) -> (Field, ArrayRef) {
        let (dtype, array, nullable): (DataType, ArrayRef, bool) = match &self.values {
            Values::Str(v) => (
                DataType::Utf8,
                Arc::new(StringArray::from(v.clone())),
                v.iter().any(Option::is_none),
            ),
            Values::Int(v) => (
                DataType::Int64,
                Arc::new(Int64Array::from(v.clone())),
                v.iter().any(Option::is_none),
            ),
            Values::Bool(v) => (
                DataType::Boolean,
                Arc::new(BooleanArray::from(v.clone())),
                v.iter().any(Option::is_none),
            ),
            Values::StrList(v) => {
                let mut builder = ListBuilder::new(StringBuilder::new());
                for row in v {
                    match row {
                        Some(items) => {
                            for item in items {
                                builder.values().append_value(item);
                            }
                            builder.append(true);
                        }
                        None => builder.append(false),
                    }
                }
                let array = builder.finish();
                (array.data_type().clone(), Arc::new(array), v.iter().any(Option::is_none))
            }
            Values::Struct(fields) => {
                let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) =
                    fields.iter().map(Column::to_arrow).unzip();
                let fields = Fields::from(fields);
                (
                    DataType::Struct(fields.clone()),
                    Arc::new(StructArray::new(fields, arrays, None)),
                    false,
                )
            }
        };
        (Field::new(&self.name, dtype, nullable || self.nullable), array)
    }
}

/// The column `name` of `columns`.
pub fn find<'a>(columns: &'a [Column], name: &str) -> Option<&'a Values> {
    columns.iter().find(|c| c.name == name).map(|c| &c.values)
}

/// The string column `name` of `columns` read from `path` (an error naming the file and the
/// column when it is missing or not strings).
pub fn strings<'a>(
    columns: &'a [Column],
    path: &Path,
    name: &str,
) -> Result<&'a [Option<String>], TableError> {
    match find(columns, name) {
        Some(Values::Str(v)) => Ok(v),
        _ => Err(cell_error(path, 0, name, "missing or not a string column".into())),
    }
}

/// The integer column `name` of `columns` read from `path` (likewise).
pub fn integers<'a>(
    columns: &'a [Column],
    path: &Path,
    name: &str,
) -> Result<&'a [Option<i64>], TableError> {
    match find(columns, name) {
        Some(Values::Int(v)) => Ok(v),
        _ => Err(cell_error(path, 0, name, "missing or not an integer column".into())),
    }
}

/// An error about the value of `column` in `row` of the table at `path`.
pub fn cell_error(path: &Path, row: usize, column: &str, reason: String) -> TableError {
    TableError::Column { path: path.to_owned(), row, column: column.to_owned(), reason }
}

/// Row `row` of a string column that must hold a value; a null (or a missing row) is an
/// error naming the file, the row and the column.
pub fn required_string(
    values: &[Option<String>],
    path: &Path,
    row: usize,
    column: &str,
) -> Result<String, TableError> {
    values.get(row).cloned().flatten().ok_or_else(|| cell_error(path, row, column, "null".into()))
}

/// Read a whole Parquet table as columns (string, integer and boolean columns; a column of
/// another type is an error naming it), each keeping its field's nullability.
pub fn read(path: &Path) -> Result<Vec<Column>, TableError> {
    let mut columns: Vec<Column> = Vec::new();
    let mut first_row = 0;
    for batch in super::read_batches(path, 8192)? {
        let batch = batch?;
        let view = super::BatchView::new(&batch, path, first_row);
        if columns.is_empty() {
            columns = batch
                .schema()
                .fields()
                .iter()
                .map(|f| Column {
                    name: f.name().clone(),
                    values: empty_like(f.data_type()),
                    nullable: f.is_nullable(),
                })
                .collect();
        }
        for (column, array) in columns.iter_mut().zip(batch.columns()) {
            append(&mut column.values, array.as_ref())
                .map_err(|reason| view.err(0, &column.name, reason))?;
        }
        first_row += batch.num_rows();
    }
    Ok(columns)
}

fn empty_like(dtype: &DataType) -> Values {
    match dtype {
        DataType::Int64 => Values::Int(Vec::new()),
        DataType::Boolean => Values::Bool(Vec::new()),
        _ => Values::Str(Vec::new()),
    }
}

fn append(values: &mut Values, array: &dyn Array) -> Result<(), String> {
    let wrong = || {
        format!("a {} column, where strings, integers or booleans were expected", array.data_type())
    };
    match values {
        Values::Str(v) => v.extend(
            array
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(wrong)?
                .iter()
                .map(|s| s.map(str::to_owned)),
        ),
        Values::Int(v) => {
            v.extend(array.as_any().downcast_ref::<Int64Array>().ok_or_else(wrong)?.iter())
        }
        Values::Bool(v) => {
            v.extend(array.as_any().downcast_ref::<BooleanArray>().ok_or_else(wrong)?.iter())
        }
        Values::Struct(_) | Values::StrList(_) => return Err(wrong()),
    }
    Ok(())
}

/// The Arrow schema `columns` are written with.
pub fn schema(columns: &[Column]) -> Schema {
    Schema::new(columns.iter().map(|c| c.to_arrow().0).collect::<Vec<_>>())
}

/// Write `columns` (all of one length) as a Parquet table at `path` (atomically).
pub fn write(path: &Path, columns: &[Column]) -> Result<(), TableError> {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) =
        columns.iter().map(Column::to_arrow).unzip();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays)
        .map_err(|e| TableError::Parquet { path: path.to_owned(), source: e.into() })?;
    super::write_atomic(path, schema, std::iter::once(batch))
}

/// Read the named string columns of a Parquet file; calls `row` once per row with the values
/// in the order of `columns` (a null reads as an empty string). Streams batch by batch: for
/// tables too large to hold (corpus sources), and any release config.
pub fn for_each_row(
    path: &Path,
    columns: &[&str],
    mut row: impl FnMut(usize, Vec<String>),
) -> Result<(), TableError> {
    let mut n = 0usize;
    for batch in super::read_batches(path, 1024)? {
        let batch = batch?;
        let mut cols: Vec<&dyn Array> = Vec::new();
        for name in columns {
            let col = batch.column_by_name(name).ok_or_else(|| TableError::Column {
                path: path.to_owned(),
                row: n,
                column: (*name).to_owned(),
                reason: "no such column".into(),
            })?;
            if !matches!(col.data_type(), DataType::Utf8 | DataType::LargeUtf8) {
                return Err(TableError::Column {
                    path: path.to_owned(),
                    row: n,
                    column: (*name).to_owned(),
                    reason: format!("expected a string column, found `{}`", col.data_type()),
                });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_round_trip_and_structs_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let cols = vec![
            Column::str("id", vec![Some("a".into()), Some("b".into())]),
            // A null makes the field nullable; `nullable()` makes it so with every value present.
            Column::int("n", vec![Some(1), None]).nullable(),
            Column::bool("ok", vec![Some(true), Some(false)]),
            Column::str("doc", vec![Some("x".into()), Some("y".into())]).nullable(),
        ];
        write(&path, &cols).unwrap();
        assert_eq!(read(&path).unwrap(), cols);
        assert!(
            schema(&cols).field_with_name("doc").unwrap().is_nullable()
                && !schema(&cols).field_with_name("id").unwrap().is_nullable()
        );
        let with_meta = vec![
            cols[0].clone(),
            Column::structure("meta", vec![Column::str("source", vec![None, Some("x".into())])]),
        ];
        write(&path, &with_meta).unwrap();
        let s = schema(&with_meta);
        assert!(
            matches!(s.field_with_name("meta").unwrap().data_type(), DataType::Struct(f) if f[0].is_nullable())
        );
        let lists = vec![Column::str_list(
            "langs",
            vec![Some(vec!["go".into(), "ruby".into()]), None, Some(vec![])],
        )];
        write(&path, &lists).unwrap();
        let back = super::super::read_batches(&path, 8).unwrap().next().unwrap().unwrap();
        let list = back.column(0).as_any().downcast_ref::<arrow_array::ListArray>().unwrap();
        assert_eq!((list.value_length(0), list.is_null(1), list.value_length(2)), (2, true, 0));
        write(&path, &with_meta).unwrap();
        // A struct column cannot be read back as plain columns: the error names it.
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("meta"), "{err}");
    }
}
