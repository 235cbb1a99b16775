//! JSON Lines: one JSON value a line, read a line at a time so that a file of gigabytes is
//! never in memory at once, and written with one `fsync` at the end.
//!
//! - [`lines`]: the non-blank lines of a file, each with its line number ([`Line`]), for a
//!   reader that decodes a line its own way (a LiveCodeBench row, a JSON object whose field
//!   names a manifest chooses).
//! - [`rows`]: the lines decoded as `T`; [`read`] collects them.
//! - [`write()`]: rows as JSON lines.
//!
//! Every error names the file, and the line where there is one: ``reading `a.jsonl` ``,
//! `` `a.jsonl`:12: expected value at line 1 column 3 ``. Blank lines are skipped (and
//! counted: a line number is the file's).

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A JSON Lines file that cannot be read or written, or a line that is not what it should be.
#[derive(Debug, thiserror::Error)]
pub enum JsonlError {
    /// The file cannot be opened, read or written.
    #[error("{}`{}`", if *.writing { "writing " } else { "reading " }, path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Whether it was being written.
        writing: bool,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line is not JSON of the expected shape.
    #[error("`{}`:{line}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: u64,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// One non-blank line of a JSON Lines file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its number in the file, from 1.
    pub number: u64,
    /// Its text, without the line break.
    pub text: String,
}

impl Line {
    /// The line decoded as `T`; the error names `path` and the line.
    pub fn parse<T: DeserializeOwned>(&self, path: &Path) -> Result<T, JsonlError> {
        serde_json::from_str(&self.text).map_err(|source| JsonlError::Parse {
            path: path.to_owned(),
            line: self.number,
            source,
        })
    }

    /// `` `path`:N `` for an error of the caller's about this line.
    pub fn at(&self, path: &Path) -> String {
        format!("`{}`:{}", path.display(), self.number)
    }
}

/// The non-blank lines of a file, in order ([`lines`]).
pub struct Lines {
    path: PathBuf,
    reader: BufReader<fs_err::File>,
    number: u64,
}

impl Lines {
    /// The file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Iterator for Lines {
    type Item = Result<Line, JsonlError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let mut text = String::new();
            match self.reader.read_line(&mut text) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(source) => {
                    return Some(Err(JsonlError::Io {
                        path: self.path.clone(),
                        writing: false,
                        source,
                    }));
                }
            }
            self.number += 1;
            if text.trim().is_empty() {
                continue;
            }
            if text.ends_with('\n') {
                text.pop();
                if text.ends_with('\r') {
                    text.pop();
                }
            }
            return Some(Ok(Line {
                number: self.number,
                text,
            }));
        }
    }
}

/// Open `path` for reading its lines.
pub fn lines(path: &Path) -> Result<Lines, JsonlError> {
    let file = fs_err::File::open(path).map_err(|source| JsonlError::Io {
        path: path.to_owned(),
        writing: false,
        source,
    })?;
    Ok(Lines {
        path: path.to_owned(),
        reader: BufReader::new(file),
        number: 0,
    })
}

/// The rows of a file decoded as `T`, in order ([`rows`]).
pub struct Rows<T> {
    lines: Lines,
    row: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> Iterator for Rows<T> {
    type Item = Result<T, JsonlError>;

    fn next(&mut self) -> Option<Self::Item> {
        let line = self.lines.next()?;
        Some(line.and_then(|l| l.parse(&self.lines.path)))
    }
}

/// Open `path` for reading its rows as `T`, one a line.
pub fn rows<T: DeserializeOwned>(path: &Path) -> Result<Rows<T>, JsonlError> {
    Ok(Rows {
        lines: lines(path)?,
        row: PhantomData,
    })
}

/// Every row of `path` as `T`.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, JsonlError> {
    rows(path)?.collect()
}

/// Write `rows` to `path`, one compact JSON value a line, and `fsync` the file.
pub fn write<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), JsonlError> {
    let io = |source: std::io::Error| JsonlError::Io {
        path: path.to_owned(),
        writing: true,
        source,
    };
    let mut out = BufWriter::new(fs_err::File::create(path).map_err(io)?);
    for r in rows {
        serde_json::to_writer(&mut out, r).map_err(|e| io(e.into()))?;
        out.write_all(b"\n").map_err(io)?;
    }
    out.into_inner()
        .map_err(|e| io(e.into_error()))?
        .sync_all()
        .map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_skip_blank_lines_and_a_bad_line_is_named_by_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.jsonl");
        write(
            &path,
            &[serde_json::json!({"a": 1}), serde_json::json!({"a": 2})],
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"a\":2}\n"
        );
        std::fs::write(&path, "{\"a\":1}\n\n  \r\n{\"a\":2}\r\n{\"a\":\n").unwrap();
        let mut it = rows::<serde_json::Map<String, serde_json::Value>>(&path).unwrap();
        assert_eq!(it.next().unwrap().unwrap()["a"], 1);
        assert_eq!(it.next().unwrap().unwrap()["a"], 2);
        let e = it.next().unwrap().unwrap_err().to_string();
        assert!(e.starts_with(&format!("`{}`:5: ", path.display())), "{e}");
        assert!(it.next().is_none());
        let numbers: Vec<u64> = lines(&path).unwrap().map(|l| l.unwrap().number).collect();
        assert_eq!(numbers, [1, 4, 5]);
        let missing = read::<u32>(&dir.path().join("none.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(
            missing.starts_with("reading `") && missing.contains("none.jsonl"),
            "{missing}"
        );
    }
}
