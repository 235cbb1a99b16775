//! The scan step: every input row gets its position in the input (`seq`); the rows of a
//! process's slice (all of them; those of its byte range of a source it reads by range,
//! [`SourceFields::by_range`]; or those whose id hash falls in shard `i` of `N`) are
//! sketched for deduplication ([`Sketcher`]) and encoded into the spool of their output shard
//! (by id hash; [`super::spool`]).
//!
//! The engine reads the sources into [`Block`]s (whole JSONL lines, or rows already read from
//! Parquet or BEIR), processes a batch of blocks in parallel with [`Scan::process`] (pure: a
//! JSONL line is parsed keeping only the three wanted fields, `Wanted`) and takes the results
//! in input order with [`Scan::append`], writing each block's spool bytes itself. Reads and
//! writes nothing.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

use super::duplicates::{CorpusDedupConfig, Sketcher, Sketches};
use super::{Prehashed, spool};
use coreb_base::shard::{id_hash, shard_of_id};

/// A source row that cannot be read; names the file, the line and the field.
#[derive(Debug, Error)]
pub enum RowError {
    /// A wanted field is missing.
    #[error("`{}`:{line}: field `{field}` is missing", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The field.
        field: String,
    },
    /// A wanted field is neither a string nor a number.
    #[error("`{}`:{line}: field `{field}`: expected a string, found `{found}`", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The field.
        field: String,
        /// The value found.
        found: String,
    },
    /// The line is not a JSON object.
    #[error("`{}`:{line}: not a JSON object", path.display())]
    NotObject {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// Where a source's rows come from and which of their fields make a pair.
#[derive(Debug, Clone, Copy)]
pub struct SourceFields<'a> {
    /// The source name: ids are `<name>:<row id>`.
    pub name: &'a str,
    /// The local file (for messages).
    pub path: &'a Path,
    /// The text field.
    pub text: &'a str,
    /// The code field.
    pub code: &'a str,
    /// The id field; without one a row's id is its 0-based line number.
    pub id: Option<&'a str>,
    /// The process reads only its byte range of this (JSONL) source, so every row of it that
    /// it is given is in its slice; otherwise it is given every row and keeps those whose id
    /// hash falls in its slice.
    pub by_range: bool,
}

/// A block of input rows, processed in parallel with the other blocks of a batch.
pub enum Block {
    /// Whole JSONL lines of source `source`; the first is line `first_line + 1` of its file.
    Jsonl {
        /// The source's index in the manifest.
        source: usize,
        /// Lines of the file before this block.
        first_line: usize,
        /// The lines.
        bytes: Vec<u8>,
    },
    /// Rows already read (Parquet, BEIR): `(id, text, code)`.
    Rows {
        /// The rows.
        rows: Vec<(String, String, String)>,
    },
}

/// The rows of one block that fall in the slice: their sketches, and their spool records per
/// output shard (empty for shards not wanted).
pub struct BlockOut {
    /// The sketches, in input order.
    pub sketches: Sketches,
    /// Encoded records per output shard.
    pub spool: Vec<Vec<u8>>,
}

/// What a scan keeps of the rows of its slice: their sketches (and the local duplicate tables
/// that spare storing near sketches of rows that are duplicates anyway).
pub struct Scan {
    slice: (u32, u32),
    out_shards: u32,
    /// Which output shards are spooled.
    wanted: Vec<bool>,
    dedup: CorpusDedupConfig,
    sketches: Sketches,
    /// Input rows seen so far: the `seq` of the next one.
    rows: u64,
    /// Local duplicate ids and exact keys (a row that repeats an earlier row of the slice
    /// repeats an earlier row of the input: it is a duplicate globally too).
    ids: HashMap<u64, u32, Prehashed>,
    collided_ids: HashSet<String>,
    exact: HashSet<u128, Prehashed>,
}

impl Scan {
    /// A scan of shard `slice.0` of `slice.1`, spooling the output shards for which `wanted`
    /// is true (one flag per output shard).
    pub fn new(dedup: &CorpusDedupConfig, slice: (u32, u32), wanted: Vec<bool>) -> Scan {
        Scan {
            slice,
            out_shards: wanted.len() as u32,
            wanted,
            dedup: dedup.clone(),
            sketches: Sketches::new(dedup),
            rows: 0,
            ids: HashMap::default(),
            collided_ids: HashSet::new(),
            exact: HashSet::default(),
        }
    }

    /// Input rows taken so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Sketch and spool every row of one block whose first row is input row `seq`.
    pub fn process(
        &self,
        sources: &[SourceFields<'_>],
        block: &Block,
        seq: u64,
    ) -> Result<BlockOut, RowError> {
        // Each shard's buffer sized for its share of the block (plus slack), so that it rarely grows.
        let bytes = match block {
            Block::Jsonl { bytes, .. } => bytes.len(),
            Block::Rows { rows } => {
                rows.iter().map(|(i, t, c)| i.len() + t.len() + c.len() + 20).sum()
            }
        };
        let by_range = matches!(block, Block::Jsonl { source, .. } if sources[*source].by_range);
        let share =
            (bytes / if by_range { 1 } else { self.slice.1 as usize } / self.out_shards as usize)
                * 9
                / 8
                + 1024;
        let spool = self
            .wanted
            .iter()
            .map(|&w| if w { Vec::with_capacity(share) } else { Vec::new() })
            .collect();
        let mut out = BlockOut { sketches: Sketches::new(&self.dedup), spool };
        let mut sketcher = Sketcher::new(&self.dedup);
        let mut id_buf = String::new();
        let mut take = |seq: u64, id: &str, text: &str, code: &str| {
            let h = id_hash(id);
            if by_range || shard_of_id(h, self.slice.1) == self.slice.0 {
                sketcher.sketch(seq, id, text, code, &mut out.sketches);
                let shard = shard_of_id(h, self.out_shards) as usize;
                if self.wanted[shard] {
                    spool::encode(&mut out.spool[shard], seq, id, text, code);
                }
            }
        };
        match block {
            Block::Rows { rows } => {
                for (i, (id, text, code)) in rows.iter().enumerate() {
                    take(seq + i as u64, id, text, code);
                }
            }
            Block::Jsonl { source, first_line, bytes } => {
                let s = sources[*source];
                let names = Wanted { text: s.text, code: s.code, id: s.id };
                let mut row = 0u64;
                for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
                    let number = first_line + i + 1;
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    if is_blank(line) {
                        continue;
                    }
                    let mut de = serde_json::Deserializer::from_slice(line);
                    let (text, code, id) =
                        match serde::de::DeserializeSeed::deserialize(names, &mut de)
                            .and_then(|r| de.end().map(|()| r))
                        {
                            Ok(WantedRow { text: Some(text), code: Some(code), id })
                                if id.is_some() || names.id.is_none() =>
                            {
                                (text, code, id)
                            }
                            // Anything unusual: the generic path reports it with the file, line and field.
                            _ => slow_row(&s, number, line)?,
                        };
                    id_buf.clear();
                    id_buf.push_str(s.name);
                    id_buf.push(':');
                    match &id {
                        Some(id) => id_buf.push_str(id),
                        None => id_buf.push_str(&(number - 1).to_string()),
                    }
                    take(seq + row, &id_buf, &text, &code);
                    row += 1;
                }
            }
        }
        Ok(out)
    }

    /// Take a processed block of `rows` input rows (in input order): keep its sketches. The
    /// caller writes its spool bytes.
    pub fn append(&mut self, out: &BlockOut, rows: u64) {
        for r in 0..out.sketches.len() {
            let duplicate = self.local_duplicate(&out.sketches, r);
            self.sketches.push_from(&out.sketches, r, !duplicate);
        }
        self.rows += rows;
    }

    /// Whether row `r` of `s` repeats the id or the exact key of an earlier row of this slice.
    fn local_duplicate(&mut self, s: &Sketches, r: usize) -> bool {
        let (hash, id) = (s.id_hash(r), s.id(r));
        match self.ids.entry(hash) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(self.sketches.len() as u32);
            }
            std::collections::hash_map::Entry::Occupied(e) => {
                if self.sketches.id(*e.get() as usize) == id
                    || !self.collided_ids.insert(id.to_owned())
                {
                    return true;
                }
            }
        }
        !self.exact.insert(s.exact(r))
    }

    /// The sketches of the slice, knowing how many input rows there were.
    pub fn finish(mut self) -> Sketches {
        self.sketches.set_input_rows(self.rows);
        self.sketches
    }
}

/// Whether a line holds only whitespace (not a row).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// A string field of a JSON object (numbers are turned into text, for ids); `line` of `path`
/// for the message.
pub fn field(
    obj: &serde_json::Map<String, serde_json::Value>,
    name: &str,
    path: &Path,
    line: usize,
) -> Result<String, RowError> {
    match obj.get(name) {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(serde_json::Value::Number(n)) => Ok(n.to_string()),
        Some(other) => Err(RowError::NotText {
            path: path.to_owned(),
            line,
            field: name.to_owned(),
            found: other.to_string(),
        }),
        None => Err(RowError::Missing { path: path.to_owned(), line, field: name.to_owned() }),
    }
}

/// A row that the fast parser did not take: parse it as a JSON object and read its fields
/// with the messages of [`field`].
fn slow_row(
    s: &SourceFields<'_>,
    line: usize,
    bytes: &[u8],
) -> Result<(String, String, Option<String>), RowError> {
    let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(bytes)
        .map_err(|source| RowError::NotObject { path: s.path.to_owned(), line, source })?;
    let id = s.id.map(|name| field(&obj, name, s.path, line)).transpose()?;
    Ok((field(&obj, s.text, s.path, line)?, field(&obj, s.code, s.path, line)?, id))
}

/// The names of the fields to keep from a JSONL row; every other field is skipped unparsed.
#[derive(Clone, Copy)]
struct Wanted<'n> {
    text: &'n str,
    code: &'n str,
    id: Option<&'n str>,
}

/// The wanted fields of one row (strings, or integers turned into text).
#[derive(Default)]
struct WantedRow {
    text: Option<String>,
    code: Option<String>,
    id: Option<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Wanted<'_> {
    type Value = WantedRow;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<WantedRow, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Wanted<'_> {
    type Value = WantedRow;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<WantedRow, A::Error> {
        let mut row = WantedRow::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let slots = [
                (self.text == key, &mut row.text),
                (self.code == key, &mut row.code),
                (self.id == Some(&*key), &mut row.id),
            ];
            if !slots.iter().any(|s| s.0) {
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            }
            let Text(value) = map.next_value::<Text>()?;
            for (hit, slot) in slots {
                if hit {
                    *slot = Some(value.clone());
                }
            }
        }
        Ok(row)
    }
}

/// An object key, borrowed from the line when it has no escapes.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A string value, or an integer as text (ids); anything else is left to [`slow_row`].
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Text;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_str<E>(self, v: &str) -> Result<Text, E> {
                Ok(Text(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Text, E> {
                Ok(Text(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_row_names_its_file_line_and_field() {
        let scan = Scan::new(&CorpusDedupConfig::default(), (0, 1), vec![true]);
        let path = Path::new("src.jsonl");
        let source =
            SourceFields { name: "s", path, text: "q", code: "c", id: None, by_range: false };
        let block = |text: &str| Block::Jsonl {
            source: 0,
            first_line: 10,
            bytes: text.as_bytes().to_vec(),
        };
        let ok = scan
            .process(
                &[source],
                &block("{\"q\":\"a\",\"x\":[1,{}],\"c\":\"b\"}\n\n{\"c\":\"d\",\"q\":7}"),
                5,
            )
            .unwrap();
        assert_eq!(ok.sketches.len(), 2);
        let err = scan
            .process(&[source], &block("{\"q\":\"a\",\"c\":\"b\"}\n{\"q\":\"a\"}"), 0)
            .err()
            .expect("an error");
        assert_eq!(err.to_string(), "`src.jsonl`:12: field `c` is missing");
        let err =
            scan.process(&[source], &block("{\"q\":[1],\"c\":\"b\"}"), 0).err().expect("an error");
        assert_eq!(err.to_string(), "`src.jsonl`:11: field `q`: expected a string, found `[1]`");
        let err = scan.process(&[source], &block("[]"), 0).err().expect("an error");
        assert!(matches!(err, RowError::NotObject { line: 11, .. }), "{err}");
    }
}
