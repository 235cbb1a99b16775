//! The spool: the rows of one output shard between the scan and the curation, in a file of
//! length-prefixed records (`seq` as a u64, then `id`, `text`, `code`, each a u32 length and
//! UTF-8 bytes) after [`MAGIC`]. [`encode`] writes a record; [`SpoolReader`] reads a file back
//! one record at a time into a reused [`Pair`]; [`MergedSpool`] reads several (one per shard
//! process) in input order (by `seq`).

use std::collections::BinaryHeap;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use coreb_base::hashing::HashingReader;
use thiserror::Error;

use super::Pair;

/// The first bytes of a spool file (and its format version).
pub const MAGIC: &[u8; 8] = b"CRBSPL01";

/// A spool file that cannot be read.
#[derive(Debug, Error)]
pub enum SpoolError {
    /// Reading failed.
    #[error("reading `{}`", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start with [`MAGIC`].
    #[error("`{}` is not a coreb spool file (or of another version)", .0.display())]
    NotSpool(PathBuf),
    /// A field is not UTF-8.
    #[error("`{}`: a record is not UTF-8", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::string::FromUtf8Error,
    },
    /// A record's `seq` is not above the one before it.
    #[error("`{}`: records out of order", .0.display())]
    OutOfOrder(PathBuf),
}

/// Append one record to `buf`.
pub fn encode(buf: &mut Vec<u8>, seq: u64, id: &str, text: &str, code: &str) {
    buf.extend_from_slice(&seq.to_le_bytes());
    for field in [id, text, code] {
        buf.extend_from_slice(&(field.len() as u32).to_le_bytes());
        buf.extend_from_slice(field.as_bytes());
    }
}

/// An empty pair, to be filled by the readers.
fn empty() -> Pair {
    Pair { id: String::new(), text: String::new(), code: String::new() }
}

/// A spool file as read: hashed as it is read when asked ([`MergedSpool::open_hashing`]).
enum Source {
    Plain(std::fs::File),
    Hashed(HashingReader<std::fs::File>),
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Source::Plain(f) => f.read(buf),
            Source::Hashed(h) => h.read(buf),
        }
    }
}

/// Reads a spool file back, one record at a time, into a reused [`Pair`].
pub struct SpoolReader {
    path: PathBuf,
    reader: BufReader<Source>,
}

impl SpoolReader {
    /// Open the spool file at `path` and check its magic.
    pub fn open(path: &Path) -> Result<SpoolReader, SpoolError> {
        SpoolReader::open_with(path, false)
    }

    /// Open the spool file at `path`, hashing every byte read from it when `hash`, and check
    /// its magic.
    fn open_with(path: &Path, hash: bool) -> Result<SpoolReader, SpoolError> {
        let io = |source| SpoolError::Io { path: path.to_owned(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        let source =
            if hash { Source::Hashed(HashingReader::new(file)) } else { Source::Plain(file) };
        let mut reader = BufReader::with_capacity(1 << 16, source);
        let mut magic = [0u8; 8];
        reader.read_exact(&mut magic).map_err(io)?;
        if &magic != MAGIC {
            return Err(SpoolError::NotSpool(path.to_owned()));
        }
        Ok(SpoolReader { path: path.to_owned(), reader })
    }

    /// The next record into `seq` and `pair`; `false` at the end.
    pub fn next_into(&mut self, seq: &mut u64, pair: &mut Pair) -> Result<bool, SpoolError> {
        let io = |source| SpoolError::Io { path: self.path.clone(), source };
        let mut head = [0u8; 8];
        match self.reader.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(io(e)),
        }
        *seq = u64::from_le_bytes(head);
        let mut len = [0u8; 4];
        for field in [&mut pair.id, &mut pair.text, &mut pair.code] {
            self.reader.read_exact(&mut len).map_err(io)?;
            let mut bytes = std::mem::take(field).into_bytes();
            bytes.clear();
            bytes.resize(u32::from_le_bytes(len) as usize, 0);
            self.reader.read_exact(&mut bytes).map_err(io)?;
            *field = String::from_utf8(bytes)
                .map_err(|source| SpoolError::NotUtf8 { path: self.path.clone(), source })?;
        }
        Ok(true)
    }

    /// The sha256 and size of the whole file when it was opened hashing (the rest of it is read
    /// first: every byte passes through the hash once); `None` otherwise.
    fn finish(self) -> Result<Option<(String, u64)>, SpoolError> {
        match self.reader.into_inner() {
            Source::Plain(_) => Ok(None),
            Source::Hashed(mut h) => {
                std::io::copy(&mut h, &mut std::io::sink())
                    .map_err(|source| SpoolError::Io { path: self.path.clone(), source })?;
                Ok(Some(h.finish()))
            }
        }
    }
}

/// The records of several spool files (one per shard process) in input order.
pub struct MergedSpool {
    readers: Vec<SpoolReader>,
    heads: Vec<(u64, Pair)>,
    /// `(seq, reader)` of each reader's next record, smallest first.
    heap: BinaryHeap<std::cmp::Reverse<(u64, usize)>>,
}

impl MergedSpool {
    /// Open the spool files `paths`.
    pub fn open(paths: &[PathBuf]) -> Result<MergedSpool, SpoolError> {
        MergedSpool::open_with(paths, false)
    }

    /// Open the spool files `paths`, hashing each as it is read: [`MergedSpool::finish`] gives
    /// their hashes, without a separate pass over them.
    pub fn open_hashing(paths: &[PathBuf]) -> Result<MergedSpool, SpoolError> {
        MergedSpool::open_with(paths, true)
    }

    fn open_with(paths: &[PathBuf], hash: bool) -> Result<MergedSpool, SpoolError> {
        let mut m = MergedSpool { readers: Vec::new(), heads: Vec::new(), heap: BinaryHeap::new() };
        for p in paths {
            let mut r = SpoolReader::open_with(p, hash)?;
            let mut head = (0, empty());
            if r.next_into(&mut head.0, &mut head.1)? {
                m.heap.push(std::cmp::Reverse((head.0, m.readers.len())));
            }
            m.readers.push(r);
            m.heads.push(head);
        }
        Ok(m)
    }

    /// The sha256 and size of each whole file, in the order they were given (read to their
    /// ends first, if the records were not); `None` for each unless opened hashing.
    pub fn finish(self) -> Result<Vec<Option<(String, u64)>>, SpoolError> {
        self.readers.into_iter().map(SpoolReader::finish).collect()
    }
}

impl super::curate::Rows for MergedSpool {
    type Error = SpoolError;

    /// The next record in input order into `seq` and `pair`; `false` at the end.
    fn next_into(&mut self, seq: &mut u64, pair: &mut Pair) -> Result<bool, SpoolError> {
        let Some(std::cmp::Reverse((s, i))) = self.heap.pop() else {
            return Ok(false);
        };
        *seq = s;
        std::mem::swap(pair, &mut self.heads[i].1);
        let (next, head) = &mut self.heads[i];
        if self.readers[i].next_into(next, head)? {
            if *next <= s {
                return Err(SpoolError::OutOfOrder(self.readers[i].path.clone()));
            }
            self.heap.push(std::cmp::Reverse((*next, i)));
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::curate::Rows;
    use super::*;

    fn write(path: &Path, rows: &[(u64, &str)]) {
        let mut buf = MAGIC.to_vec();
        for (seq, id) in rows {
            encode(&mut buf, *seq, id, "text", "code");
        }
        std::fs::write(path, buf).unwrap();
    }

    #[test]
    fn merged_spools_come_back_in_seq_order_and_disorder_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.bin"), dir.path().join("b.bin"));
        write(&a, &[(0, "x"), (3, "y")]);
        write(&b, &[(1, "z"), (2, "w"), (5, "v")]);
        let mut m = MergedSpool::open(&[a.clone(), b.clone()]).unwrap();
        let (mut seq, mut pair, mut got) = (0, empty(), Vec::new());
        while m.next_into(&mut seq, &mut pair).unwrap() {
            got.push((seq, pair.id.clone()));
        }
        assert_eq!(
            got,
            [(0, "x"), (1, "z"), (2, "w"), (3, "y"), (5, "v")].map(|(s, i)| (s, i.to_owned()))
        );

        write(&a, &[(4, "x"), (3, "y")]);
        let mut m = MergedSpool::open(std::slice::from_ref(&a)).unwrap();
        let err = m.next_into(&mut seq, &mut pair).unwrap_err();
        assert_eq!(err.to_string(), format!("`{}`: records out of order", a.display()));

        // Hashed as read: the whole files' hashes, whether the records were all read or not.
        write(&b, &[(1, "z"), (2, "w"), (5, "v")]);
        let mut m = MergedSpool::open_hashing(&[a.clone(), b.clone()]).unwrap();
        assert!(m.next_into(&mut seq, &mut pair).unwrap());
        let file = |p: &Path| {
            Some((
                coreb_base::hashing::sha256_file(p).unwrap(),
                std::fs::metadata(p).unwrap().len(),
            ))
        };
        assert_eq!(m.finish().unwrap(), vec![file(&a), file(&b)]);
        let mut m = MergedSpool::open(std::slice::from_ref(&b)).unwrap();
        while m.next_into(&mut seq, &mut pair).unwrap() {}
        assert_eq!(m.finish().unwrap(), vec![None]);

        std::fs::write(&a, b"NOTASPOOL").unwrap();
        assert!(matches!(MergedSpool::open(&[a]), Err(SpoolError::NotSpool(_))));
    }
}
