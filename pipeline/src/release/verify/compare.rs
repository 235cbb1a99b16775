//! Where a rebuilt release differs from the published one, in words: a table's first
//! differing row and column, a text file's line (and field or column), the MANIFEST's first
//! differing field, sorted into the data and the provenance (the versions it records).

use std::path::Path;

use anyhow::Context;
use coreb_data::releases::{PROVENANCE_FIELDS, ReleaseManifest};

/// Where two text files first differ, in words (for a `differs` line): the line, and in a
/// JSON Lines file the field, in a TSV file the column (named by the header line).
pub(crate) fn describe_text_difference(published: &Path, rebuilt: &Path) -> String {
    match first_line_difference(published, rebuilt) {
        Ok(Some(d)) => d,
        Ok(None) => "the same lines (the files differ in their line endings)".into(),
        Err(e) => format!("cannot compare the files: {e:#}"),
    }
}

/// The first line where the text file at `rebuilt` differs from the one at `published`,
/// read line by line; `None` when every line is the same.
fn first_line_difference(published: &Path, rebuilt: &Path) -> anyhow::Result<Option<String>> {
    use std::io::BufRead as _;
    let lines = |p: &Path| -> anyhow::Result<_> {
        Ok(std::io::BufReader::new(fs_err::File::open(p)?).split(b'\n'))
    };
    let (mut a, mut b) = (lines(published)?, lines(rebuilt)?);
    let name = published.to_string_lossy();
    let (jsonl, tsv) = (name.ends_with(".jsonl"), name.ends_with(".tsv"));
    let mut header: Vec<String> = Vec::new();
    for n in 1usize.. {
        let (x, y) = (a.next().transpose()?, b.next().transpose()?);
        let (x, y) = match (x, y) {
            (None, None) => return Ok(None),
            (Some(x), Some(y)) if x == y => {
                if n == 1 && tsv {
                    header = String::from_utf8_lossy(&x).split('\t').map(str::to_owned).collect();
                }
                continue;
            }
            (x, y) => (x, y),
        };
        let shown = |l: &Option<Vec<u8>>| match l {
            None => "nothing (the file ends)".to_owned(),
            Some(l) => format!("`{}`", clip(&String::from_utf8_lossy(l))),
        };
        let (Some(xl), Some(yl)) = (&x, &y) else {
            return Ok(Some(format!(
                "first difference at line {n}: published {}, rebuilt {}",
                shown(&x),
                shown(&y)
            )));
        };
        if jsonl
            && let (Ok(va), Ok(vb)) = (
                serde_json::from_slice::<serde_json::Value>(xl),
                serde_json::from_slice::<serde_json::Value>(yl),
            )
            && let Some((field, pa, pb)) = first_json_difference(&va, &vb, "")
        {
            return Ok(Some(format!(
                "first difference at line {n}, field `{field}`: published {pa}, rebuilt {pb}"
            )));
        }
        if tsv {
            let (xs, ys) = (String::from_utf8_lossy(xl), String::from_utf8_lossy(yl));
            let (ca, cb): (Vec<&str>, Vec<&str>) =
                (xs.split('\t').collect(), ys.split('\t').collect());
            if ca.len() == cb.len()
                && let Some(i) = ca.iter().zip(&cb).position(|(p, q)| p != q)
            {
                let column = header
                    .get(i)
                    .map_or_else(|| format!("{}", i + 1), |h| format!("{} (`{h}`)", i + 1));
                return Ok(Some(format!(
                    "first difference at line {n}, column {column}: published `{}`, rebuilt `{}`",
                    clip(ca[i]),
                    clip(cb[i])
                )));
            }
        }
        return Ok(Some(format!(
            "first difference at line {n}: published {}, rebuilt {}",
            shown(&x),
            shown(&y)
        )));
    }
    Ok(None)
}

/// Where two Parquet tables first differ, in words (for a `differs` line).
pub(crate) fn describe_table_difference(published: &Path, rebuilt: &Path) -> String {
    match first_table_difference(published, rebuilt) {
        Ok(Some(d)) => d,
        Ok(None) => "the same rows and columns (the files differ in their encoding)".into(),
        Err(e) => format!("cannot compare the tables: {e:#}"),
    }
}

/// The first row and column where the Parquet table at `rebuilt` differs from the one at
/// `published` ("row 3, column `text`: published …, rebuilt …"), or how their columns or row
/// counts differ; `None` when they hold the same values.
pub(crate) fn first_table_difference(
    published: &Path,
    rebuilt: &Path,
) -> anyhow::Result<Option<String>> {
    let read = |path: &Path| -> anyhow::Result<arrow_array::RecordBatch> {
        let batches: Vec<arrow_array::RecordBatch> = coreb_data::tables::read_batches(path, 8192)?
            .collect::<Result<_, _>>()
            .with_context(|| format!("reading `{}` as Parquet", path.display()))?;
        let schema = match batches.first() {
            Some(b) => b.schema(),
            None => {
                return Ok(arrow_array::RecordBatch::new_empty(std::sync::Arc::new(
                    arrow_schema::Schema::empty(),
                )));
            }
        };
        Ok(arrow_select::concat::concat_batches(&schema, &batches)?)
    };
    let (a, b) = (
        read(published).context("the published table")?,
        read(rebuilt).context("the rebuilt table")?,
    );
    let fields = |batch: &arrow_array::RecordBatch| {
        batch
            .schema()
            .fields()
            .iter()
            .map(|f| format!("{}: {}", f.name(), f.data_type()))
            .collect::<Vec<_>>()
    };
    if a.schema().fields() != b.schema().fields() {
        let (fa, fb) = (fields(&a), fields(&b));
        let first = fa.iter().zip(&fb).position(|(x, y)| x != y).unwrap_or(fa.len().min(fb.len()));
        let at =
            |f: &[String]| f.get(first).map_or_else(|| "none".to_owned(), |s| format!("`{s}`"));
        return Ok(Some(format!(
            "columns differ from column {first}: published {}, rebuilt {}",
            at(&fa),
            at(&fb)
        )));
    }
    let rows = a.num_rows().min(b.num_rows());
    let mut first: Option<(usize, usize)> = None;
    for (j, (ca, cb)) in a.columns().iter().zip(b.columns()).enumerate() {
        let limit = first.map_or(rows, |(r, _)| r);
        if ca.slice(0, limit).to_data() == cb.slice(0, limit).to_data() {
            continue;
        }
        // The first differing row of this column: halve the prefix that still differs.
        let (mut lo, mut hi) = (0, limit);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if ca.slice(0, mid).to_data() == cb.slice(0, mid).to_data() {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let row = lo;
        if first.is_none_or(|(r, _)| row < r) {
            first = Some((row, j));
        }
    }
    let schema = a.schema();
    if let Some((row, j)) = first {
        let name = schema.field(j).name();
        // A verdict (`code_corpus.passed`): the judge here decided the solution otherwise.
        let verdict = match (name.as_str(), a.column_by_name("code_id")) {
            ("passed", Some(id)) if row < id.len() => {
                format!(" (the verdict of {}: the judge decided it otherwise here)", cell(id, row))
            }
            _ => String::new(),
        };
        return Ok(Some(format!(
            "first difference at row {row}, column `{name}`: published {}, rebuilt {}{verdict}",
            cell(a.column(j), row),
            cell(b.column(j), row)
        )));
    }
    if a.num_rows() != b.num_rows() {
        return Ok(Some(format!(
            "the first {rows} rows are the same; published {} rows, rebuilt {} (first differing row {rows})",
            a.num_rows(),
            b.num_rows()
        )));
    }
    Ok(None)
}

/// One cell, shown briefly: a string or number as such, anything else by its type.
fn cell(array: &arrow_array::ArrayRef, row: usize) -> String {
    use arrow_array::Array as _;
    if array.is_null(row) {
        return "null".into();
    }
    let any = array.as_any();
    let shown = if let Some(s) = any.downcast_ref::<arrow_array::StringArray>() {
        format!("{:?}", s.value(row))
    } else if let Some(s) = any.downcast_ref::<arrow_array::LargeStringArray>() {
        format!("{:?}", s.value(row))
    } else if let Some(v) = any.downcast_ref::<arrow_array::Int64Array>() {
        v.value(row).to_string()
    } else if let Some(v) = any.downcast_ref::<arrow_array::Int32Array>() {
        v.value(row).to_string()
    } else if let Some(v) = any.downcast_ref::<arrow_array::BooleanArray>() {
        v.value(row).to_string()
    } else {
        return format!("a {} value", array.data_type());
    };
    if shown.chars().count() > 80 {
        format!("{}…", shown.chars().take(80).collect::<String>())
    } else {
        shown
    }
}

/// How a rebuilt MANIFEST differs from the published one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ManifestDifference {
    /// Byte for byte the same.
    Same,
    /// Only in the provenance ([`PROVENANCE_FIELDS`]) and the files' entries (each file is
    /// compared on its own): one line per version that differs (`java `javac`: 17.0.15 in
    /// the release, 17.0.19 here`).
    Provenance(Vec<String>),
    /// In the data: the first differing field, in words.
    Data(String),
}

/// The published and the rebuilt MANIFEST, in two layers: the same, different only in the
/// versions they record (the provenance; the file entries are left to the file comparison),
/// or different in a field of the data (named: ``field `counts.qrels.anchors`: published 39,
/// rebuilt 38``).
pub(crate) fn manifest_difference(published: &[u8], rebuilt: &[u8]) -> ManifestDifference {
    use serde_json::Value;
    if published == rebuilt {
        return ManifestDifference::Same;
    }
    let parse = |bytes: &[u8], which: &str| {
        serde_json::from_slice::<Value>(bytes).map_err(|e| {
            ManifestDifference::Data(format!("the {which} MANIFEST is not JSON ({e})"))
        })
    };
    let (a, b) = match (parse(published, "published"), parse(rebuilt, "rebuilt")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let mut versions = Vec::new();
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "(none)".to_owned(),
    };
    let (ca, cb) = (a.pointer("/tool_version"), b.pointer("/tool_version"));
    if ca != cb {
        versions.push(format!("coreb: {} in the release, {} here", text(ca), text(cb)));
    }
    let none = Value::Null;
    versions.extend(toolchain_notes(
        a.pointer("/stages/execute/toolchains").unwrap_or(&none),
        b.pointer("/stages/execute/toolchains").unwrap_or(&none),
    ));
    // The published MANIFEST with the rebuilt one's provenance and file entries: written as
    // coreb writes it, it is the rebuilt one when nothing else differs (and the published one
    // when it was written as coreb writes it).
    let as_coreb_writes = |v: &Value| {
        serde_json::from_value::<ReleaseManifest>(v.clone())
            .ok()
            .and_then(|m| serde_json::to_string_pretty(&m).ok())
            .map(|t| t + "\n")
    };
    let mut same = a.clone();
    for pointer in PROVENANCE_FIELDS.into_iter().chain(["/files"]) {
        set_pointer(&mut same, pointer, b.pointer(pointer).cloned());
    }
    let canonical = as_coreb_writes(&a).as_deref().map(str::as_bytes) == Some(published);
    if canonical && as_coreb_writes(&same).as_deref().map(str::as_bytes) == Some(rebuilt) {
        return ManifestDifference::Provenance(versions);
    }
    ManifestDifference::Data(match first_json_difference(&same, &b, "") {
        Some((field, x, y)) => format!("field `{field}`: published {x}, rebuilt {y}"),
        None => "the same fields, not written as coreb writes them".to_owned(),
    })
}

/// When two MANIFESTs differ only in the versions they record (and the files' entries), one
/// line per version that differs (none: the same); `None` when a field of the data differs.
pub fn toolchain_difference(published: &[u8], rebuilt: &[u8]) -> Option<Vec<String>> {
    match manifest_difference(published, rebuilt) {
        ManifestDifference::Same => Some(Vec::new()),
        ManifestDifference::Provenance(versions) => Some(versions),
        ManifestDifference::Data(_) => None,
    }
}

/// `value` at the JSON `pointer` set to `to` (removed when `None`); a missing parent is left
/// missing.
fn set_pointer(value: &mut serde_json::Value, pointer: &str, to: Option<serde_json::Value>) {
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    let Some(serde_json::Value::Object(map)) = value.pointer_mut(parent) else {
        return;
    };
    match to {
        Some(v) => {
            map.insert(key.to_owned(), v);
        }
        None => {
            map.remove(key);
        }
    }
}

/// One line per program whose version differs between two `toolchains` objects (language →
/// program → version): ``java `java`: 17.0.15 in the release, 17.0.19 here``, the versions
/// shown by their first differing word.
///
/// A version one side does not record (a container's `deb:<package>` versions, where the
/// other build ran outside it) reads "none recorded".
fn toolchain_notes(published: &serde_json::Value, rebuilt: &serde_json::Value) -> Vec<String> {
    use std::collections::BTreeSet;
    let (ta, tb) = (
        published.as_object().cloned().unwrap_or_default(),
        rebuilt.as_object().cloned().unwrap_or_default(),
    );
    let mut notes = Vec::new();
    let languages: BTreeSet<&String> = ta.keys().chain(tb.keys()).collect();
    for lang in languages {
        let (pa, pb) =
            (ta.get(lang).and_then(|v| v.as_object()), tb.get(lang).and_then(|v| v.as_object()));
        let programs: BTreeSet<&String> = pa
            .into_iter()
            .flat_map(|m| m.keys())
            .chain(pb.into_iter().flat_map(|m| m.keys()))
            .collect();
        for program in programs {
            let version = |m: Option<&serde_json::Map<String, serde_json::Value>>| {
                m.and_then(|m| m.get(program))
                    .and_then(|v| v.as_str())
                    .unwrap_or(NOT_RECORDED)
                    .to_owned()
            };
            let (va, vb) = (version(pa), version(pb));
            if va != vb {
                let (sa, sb) = if va == NOT_RECORDED || vb == NOT_RECORDED {
                    (va, vb)
                } else {
                    versions_apart(&va, &vb)
                };
                notes.push(format!("{lang} `{program}`: {sa} in the release, {sb} here"));
            }
        }
    }
    notes
}

const NOT_RECORDED: &str = "none recorded";

/// The versions verify's last line names: three at most, those both sides record first (a
/// patch release rather than a package list one side lacks); every one has its `toolchain:`
/// line above it.
pub(super) fn summary_versions(versions: &[String]) -> String {
    let mut named: Vec<&str> = versions.iter().map(String::as_str).collect();
    named.sort_by_key(|v| v.contains(NOT_RECORDED));
    match named.len() {
        0 => "no version".to_owned(),
        1..=3 => named.join("; "),
        n => {
            format!("{}; and {} more (the `toolchain:` lines above)", named[..2].join("; "), n - 2)
        }
    }
}

/// Two version strings shown by the first word where they differ (`openjdk version "17.0.15"
/// 2025-04-15; …` and `… "17.0.19" …`: `17.0.15`, `17.0.19`), or whole when their words do not
/// line up.
fn versions_apart(a: &str, b: &str) -> (String, String) {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| c.is_whitespace() || c == ';')
            .filter(|w| !w.is_empty())
            .map(|w| w.trim_matches(|c| matches!(c, '"' | '(' | ')' | '[' | ']' | ',')).to_owned())
            .collect()
    };
    let (wa, wb) = (words(a), words(b));
    if wa.len() == wb.len()
        && let Some((x, y)) = wa.iter().zip(&wb).find(|(x, y)| x != y)
    {
        return (x.clone(), y.clone());
    }
    (format!("`{a}`"), format!("`{b}`"))
}

/// The first field (a dotted path, `[i]` for an array's item) where two JSON values differ,
/// and each value there, shown briefly; `None` when they are equal.
fn first_json_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
    at: &str,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    if a == b {
        return None;
    }
    let shown = |v: Option<&Value>| match v {
        None => "nothing".to_owned(),
        Some(v) => clip(&v.to_string()),
    };
    let join = |key: &str| {
        if at.is_empty() { key.to_owned() } else { format!("{at}.{key}") }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                match (x.get(key), y.get(key)) {
                    (Some(va), Some(vb)) => {
                        if let Some(d) = first_json_difference(va, vb, &join(key)) {
                            return Some(d);
                        }
                    }
                    (va, vb) => return Some((join(key), shown(va), shown(vb))),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_json_difference(va, vb, &format!("{at}[{i}]")) {
                    return Some(d);
                }
            }
            Some((at.to_owned(), format!("{} items", x.len()), format!("{} items", y.len())))
        }
        _ => Some((at.to_owned(), shown(Some(a)), shown(Some(b)))),
    }
}

/// At most 80 characters of `s`, an ellipsis after.
fn clip(s: &str) -> String {
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_differing_table_names_its_first_differing_row_and_column() {
        use coreb_data::tables::columns::{Column, write};
        let dir = tempfile::tempdir().unwrap();
        let table = |name: &str, texts: &[&str], ids: &[i64]| {
            let path = dir.path().join(name);
            let texts = texts.iter().map(|t| Some((*t).to_owned())).collect();
            write(
                &path,
                &[
                    Column::int("id", ids.iter().copied().map(Some).collect()),
                    Column::str("text", texts),
                ],
            )
            .unwrap();
            path
        };
        let published = table("a.parquet", &["x", "y", "z", "w"], &[1, 2, 3, 4]);
        assert_eq!(first_table_difference(&published, &published).unwrap(), None);
        // Row 2 differs in `text`, row 3 in `id`: the first row wins.
        let rebuilt = table("b.parquet", &["x", "y", "Z", "w"], &[1, 2, 3, 5]);
        assert_eq!(
            first_table_difference(&published, &rebuilt).unwrap().as_deref(),
            Some("first difference at row 2, column `text`: published \"z\", rebuilt \"Z\"")
        );
        // At one row, the first column in the table's order.
        let both = table("c.parquet", &["x", "Y", "z", "w"], &[1, 9, 3, 4]);
        assert_eq!(
            first_table_difference(&published, &both).unwrap().as_deref(),
            Some("first difference at row 1, column `id`: published 2, rebuilt 9")
        );
        let shorter = table("d.parquet", &["x", "y", "z"], &[1, 2, 3]);
        assert_eq!(
            first_table_difference(&published, &shorter).unwrap().as_deref(),
            Some(
                "the first 3 rows are the same; published 4 rows, rebuilt 3 (first differing row 3)"
            )
        );
        let other = dir.path().join("e.parquet");
        write(&other, &[Column::int("id", vec![Some(1)]), Column::int("text", vec![Some(1)])])
            .unwrap();
        assert_eq!(
            first_table_difference(&published, &other).unwrap().as_deref(),
            Some("columns differ from column 1: published `text: Utf8`, rebuilt `text: Int64`")
        );
        // A truncated file: the comparison says it cannot read it, naming it.
        let bytes = fs_err::read(&published).unwrap();
        let damaged = dir.path().join("damaged.parquet");
        fs_err::write(&damaged, &bytes[..bytes.len() / 2]).unwrap();
        let said = describe_table_difference(&damaged, &published);
        assert!(
            said.starts_with("cannot compare the tables") && said.contains("damaged.parquet"),
            "{said}"
        );
    }

    /// The sample's MANIFEST, as a JSON value to change.
    fn sample_manifest() -> serde_json::Value {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../releases/sample/v202503/MANIFEST.json");
        serde_json::from_slice(&fs_err::read(path).unwrap()).unwrap()
    }

    fn written(v: &serde_json::Value) -> Vec<u8> {
        let m: ReleaseManifest = serde_json::from_value(v.clone()).unwrap();
        (serde_json::to_string_pretty(&m).unwrap() + "\n").into_bytes()
    }

    #[test]
    fn a_manifest_differs_in_its_provenance_or_in_its_data() {
        let published = sample_manifest();
        let bytes = written(&published);
        assert_eq!(manifest_difference(&bytes, &bytes), ManifestDifference::Same);
        // Another JDK patch release, another coreb, another checksum of `versions.json`.
        let mut other = published.clone();
        let java = &mut other["stages"]["execute"]["toolchains"]["java"];
        java["java"] = java["java"].as_str().unwrap().replace("17.0.15", "17.0.19").into();
        java["javac"] = "javac 17.0.19".into();
        java["deb:openjdk-17-jdk-headless"] = "17.0.19+10-1~deb12u1".into();
        other["tool_version"] = "0.1.1".into();
        other["files"]["regeneration/versions.json"]["sha256"] = "0".repeat(64).into();
        assert_eq!(
            manifest_difference(&bytes, &written(&other)),
            ManifestDifference::Provenance(vec![
                "coreb: 0.1.0 in the release, 0.1.1 here".to_owned(),
                "java `deb:openjdk-17-jdk-headless`: none recorded in the release, 17.0.19+10-1~deb12u1 here".to_owned(),
                "java `java`: 17.0.15 in the release, 17.0.19 here".to_owned(),
                "java `javac`: 17.0.15 in the release, 17.0.19 here".to_owned(),
            ])
        );
        assert!(toolchain_difference(&bytes, &written(&other)).is_some());
        // A verdict's count of the test check: the data, named by its field.
        let mut verdict = other.clone();
        verdict["stages"]["execute"]["test_check"]["tests_passed"] = 7.into();
        assert_eq!(
            manifest_difference(&bytes, &written(&verdict)),
            ManifestDifference::Data(
                "field `stages.execute.test_check.tests_passed`: published 8, rebuilt 7".into()
            )
        );
        assert_eq!(toolchain_difference(&bytes, &written(&verdict)), None);
        // The same values written otherwise (not as coreb writes them) are not the same file.
        let compact = serde_json::to_vec(&published).unwrap();
        assert_eq!(
            manifest_difference(&compact, &bytes),
            ManifestDifference::Data("the same fields, not written as coreb writes them".into())
        );
    }

    #[test]
    fn a_differing_text_file_names_its_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.path().join(name);
            fs_err::write(&path, text).unwrap();
            path
        };
        let a = file("a.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\n");
        let b = file("b.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t2\n");
        assert_eq!(
            describe_text_difference(&a, &b),
            "first difference at line 3, column 3 (`score`): published `1`, rebuilt `2`"
        );
        let a = file(
            "a.jsonl",
            "{\"_id\": \"d1\", \"text\": \"x\"}\n{\"_id\": \"d2\", \"text\": \"y\"}\n",
        );
        let b = file(
            "b.jsonl",
            "{\"_id\": \"d1\", \"text\": \"x\"}\n{\"_id\": \"d2\", \"text\": \"z\"}\n",
        );
        assert_eq!(
            describe_text_difference(&a, &b),
            "first difference at line 2, field `text`: published \"y\", rebuilt \"z\""
        );
        let c = file("c.md", "# v1\n");
        let d = file("d.md", "# v1\n\n## Human validation\n");
        assert_eq!(
            describe_text_difference(&c, &d),
            "first difference at line 2: published nothing (the file ends), rebuilt ``"
        );
    }

    #[test]
    fn the_summary_names_versions_both_sides_record_first_and_three_at_most() {
        let line = |lang: &str, a: &str, b: &str| format!("{lang}: {a} in the release, {b} here");
        let versions = vec![
            line("cpp `deb:g++`", NOT_RECORDED, "4:12.2.0-3"),
            line("go `deb:golang-go`", NOT_RECORDED, "2:1.19~1"),
            line("java `java`", "17.0.15", "17.0.19"),
            line("java `javac`", "17.0.15", "17.0.19"),
        ];
        assert_eq!(
            summary_versions(&versions),
            "java `java`: 17.0.15 in the release, 17.0.19 here; java `javac`: 17.0.15 in the release, 17.0.19 here; and 2 more (the `toolchain:` lines above)"
        );
        assert_eq!(summary_versions(&versions[..1]), versions[0]);
        assert_eq!(summary_versions(&[]), "no version");
    }

    #[test]
    fn versions_are_shown_by_their_first_differing_word() {
        assert_eq!(
            versions_apart(
                "openjdk version \"17.0.15\" 2025-04-15; OpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)",
                "openjdk version \"17.0.19\" 2025-10-21; OpenJDK Runtime Environment (build 17.0.19+10-Debian-1deb12u1)"
            ),
            ("17.0.15".to_owned(), "17.0.19".to_owned())
        );
        assert_eq!(
            versions_apart(
                "g++ (Debian 12.2.0-14+deb12u1) 12.2.0",
                "g++ (Debian 12.2.0-14+deb12u2) 12.2.0"
            ),
            ("12.2.0-14+deb12u1".to_owned(), "12.2.0-14+deb12u2".to_owned())
        );
        assert_eq!(
            versions_apart("Python 3.11.2", "Python 3.12.1 (x)"),
            ("`Python 3.11.2`".to_owned(), "`Python 3.12.1 (x)`".to_owned())
        );
    }
}
