//! JSON Lines: one JSON value a line, read a line at a time so that a file of gigabytes is
//! never in memory at once, and written with one `fsync` at the end.
//!
//! - [`lines`]: the non-blank lines of a file, each with its line number ([`Line`]), for a
//!   reader that decodes a line its own way (a LiveCodeBench row, a JSON object whose field
//!   names a manifest chooses).
//! - [`rows`]: the lines decoded as `T`; [`read`] collects them.
//! - [`write()`]: rows as JSON lines.
//! - [`bounded_lines`]: the lines of untrusted data (a downloaded kit's decompressed answers)
//!   within fixed bounds ([`LineBounds`]: bytes in all, bytes a line, lines), refused at the
//!   first byte past one, so that neither memory nor what is written grows with the input.
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
            return Some(Ok(Line { number: self.number, text }));
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
    Ok(Lines { path: path.to_owned(), reader: BufReader::new(file), number: 0 })
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
    Ok(Rows { lines: lines(path)?, row: PhantomData })
}

/// Every row of `path` as `T`.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, JsonlError> {
    rows(path)?.collect()
}

/// Write `rows` to `path`, one compact JSON value a line, and `fsync` the file.
pub fn write<T: Serialize>(path: &Path, rows: &[T]) -> Result<(), JsonlError> {
    let io =
        |source: std::io::Error| JsonlError::Io { path: path.to_owned(), writing: true, source };
    let mut out = BufWriter::new(fs_err::File::create(path).map_err(io)?);
    for r in rows {
        serde_json::to_writer(&mut out, r).map_err(|e| io(e.into()))?;
        out.write_all(b"\n").map_err(io)?;
    }
    out.into_inner().map_err(|e| io(e.into_error()))?.sync_all().map_err(io)
}

/// The most untrusted line data [`bounded_lines`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineBounds {
    /// Bytes in all.
    pub total_bytes: u64,
    /// Bytes of one line (its newline included): the most held in memory at once.
    pub line_bytes: usize,
    /// Lines.
    pub lines: u64,
}

/// Why [`bounded_lines`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum BoundedError {
    /// More than [`LineBounds::total_bytes`].
    #[error("line {line}: more than {bound} bytes in all: refused")]
    TotalBytes {
        /// The line being read, from 1.
        line: u64,
        /// The bound.
        bound: u64,
    },
    /// A line longer than [`LineBounds::line_bytes`].
    #[error("line {line}: longer than {bound} bytes: refused")]
    LineBytes {
        /// The line, from 1.
        line: u64,
        /// The bound.
        bound: usize,
    },
    /// More than [`LineBounds::lines`] lines.
    #[error("line {line}: more than {bound} lines: refused")]
    Lines {
        /// The line, from 1.
        line: u64,
        /// The bound.
        bound: u64,
    },
    /// The data ends inside a line.
    #[error("line {line}: the data ends inside the line (truncated)")]
    Truncated {
        /// The line, from 1.
        line: u64,
    },
    /// Reading failed (a corrupt compressed stream, say), or `each` did.
    #[error("line {line}: {source}")]
    Io {
        /// The line, from 1.
        line: u64,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Hand every line of `reader` (its newline included; every line must end with one) to
/// `each`, within `bounds`: the first byte past a bound stops the reading with an error
/// naming the line, so a decompression bomb costs at most [`LineBounds::line_bytes`] of
/// memory and [`LineBounds::total_bytes`] of reading, whatever it decompresses to. Returns
/// the number of lines.
pub fn bounded_lines(
    mut reader: impl BufRead,
    bounds: &LineBounds,
    mut each: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<u64, BoundedError> {
    let mut line: Vec<u8> = Vec::new();
    let (mut total, mut n) = (0u64, 0u64);
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(BoundedError::Io { line: n + 1, source });
            }
        };
        if buf.is_empty() {
            if !line.is_empty() {
                return Err(BoundedError::Truncated { line: n + 1 });
            }
            return Ok(n);
        }
        let (take, ends) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if line.len() + take > bounds.line_bytes {
            return Err(BoundedError::LineBytes { line: n + 1, bound: bounds.line_bytes });
        }
        total += take as u64;
        if total > bounds.total_bytes {
            return Err(BoundedError::TotalBytes { line: n + 1, bound: bounds.total_bytes });
        }
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if ends {
            n += 1;
            if n > bounds.lines {
                return Err(BoundedError::Lines { line: n, bound: bounds.lines });
            }
            each(&line).map_err(|source| BoundedError::Io { line: n, source })?;
            line.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    /// Each bound refuses at its first byte past, naming the line; within them every line is
    /// handed over whole.
    #[test]
    fn bounded_lines_stop_at_the_first_byte_past_a_bound() {
        use super::{BoundedError, LineBounds, bounded_lines};
        let bounds = LineBounds { total_bytes: 100, line_bytes: 10, lines: 5 };
        let read = |data: &[u8]| {
            let mut got = Vec::new();
            let r = bounded_lines(std::io::BufReader::with_capacity(3, data), &bounds, |l| {
                got.push(l.to_vec());
                Ok(())
            });
            (r, got)
        };
        let (r, got) = read(b"ab\ncd\n");
        assert_eq!(r.unwrap(), 2);
        assert_eq!(got, [b"ab\n".to_vec(), b"cd\n".to_vec()]);
        assert!(matches!(read(&[0u8; 1000]).0, Err(BoundedError::LineBytes { line: 1, .. })));
        assert!(matches!(read(b"a\nb\nc\nd\ne\nf\n").0, Err(BoundedError::Lines { line: 6, .. })));
        let nine = b"12345678\n".repeat(5);
        let many = [b"x\n".as_slice(), &nine].concat();
        let big = LineBounds { lines: 100, ..bounds };
        let r = bounded_lines(&many[..], &LineBounds { total_bytes: 40, ..big }, |_| Ok(()));
        assert!(matches!(r, Err(BoundedError::TotalBytes { line: 6, .. })), "{r:?}");
        assert!(matches!(read(b"a\nb").0, Err(BoundedError::Truncated { line: 2 })));
        assert_eq!(
            read(&[0u8; 1000]).0.unwrap_err().to_string(),
            "line 1: longer than 10 bytes: refused"
        );
    }
    use super::*;

    #[test]
    fn rows_skip_blank_lines_and_a_bad_line_is_named_by_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.jsonl");
        write(&path, &[serde_json::json!({"a": 1}), serde_json::json!({"a": 2})]).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n{\"a\":2}\n");
        std::fs::write(&path, "{\"a\":1}\n\n  \r\n{\"a\":2}\r\n{\"a\":\n").unwrap();
        let mut it = rows::<serde_json::Map<String, serde_json::Value>>(&path).unwrap();
        assert_eq!(it.next().unwrap().unwrap()["a"], 1);
        assert_eq!(it.next().unwrap().unwrap()["a"], 2);
        let e = it.next().unwrap().unwrap_err().to_string();
        assert!(e.starts_with(&format!("`{}`:5: ", path.display())), "{e}");
        assert!(it.next().is_none());
        let numbers: Vec<u64> = lines(&path).unwrap().map(|l| l.unwrap().number).collect();
        assert_eq!(numbers, [1, 4, 5]);
        let missing = read::<u32>(&dir.path().join("none.jsonl")).unwrap_err().to_string();
        assert!(missing.starts_with("reading `") && missing.contains("none.jsonl"), "{missing}");
    }
}
