//! TREC qrels and run files: parsing (with file/line errors), an in-memory builder, writing.
//!
//! Parsing follows trec_eval's readers: whitespace-separated fields, `#` comment lines, blank
//! lines skipped; qrels lines are `qid iter docno rel` (exactly four fields); run lines are
//! `qid iter docno rank score run_id [ignored...]` and the run id of the *last* line names the
//! run. Unlike trec_eval, a duplicated document (in a query of the qrels or of the run) is
//! reported with both line numbers instead of later, and scores must parse as numbers.
//! Does NOT sort or rank anything: ranking is the evaluator's job.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::EvalError;

/// FNV-1a: a fast hash for the many short document ids hashed per query (no DoS concern: the
/// inputs are the user's own files).
#[derive(Debug, Clone, Copy, Default)]
pub struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// A `HashMap`/`HashSet` hasher builder for [`Fnv`].
pub type FnvBuild = std::hash::BuildHasherDefault<Fnv>;

/// Relevance level as written in a qrels file; negative means "in the pool, unjudged".
pub type Relevance = i64;

/// The judgements of one query, sorted by document id (byte order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryQrels {
    /// `(doc id, relevance)` sorted by doc id, no duplicates.
    pub judged: Vec<(String, Relevance)>,
}

impl QueryQrels {
    /// The relevance of `doc`, if judged.
    pub fn relevance(&self, doc: &str) -> Option<Relevance> {
        self.judged.binary_search_by(|(d, _)| d.as_str().cmp(doc)).ok().map(|i| self.judged[i].1)
    }
}

/// Relevance judgements for many queries, ordered by query id (byte order, as trec_eval).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Qrels {
    /// Query id → its judgements.
    pub queries: BTreeMap<String, QueryQrels>,
}

impl Qrels {
    /// Build from `(query, doc, relevance)` triples; a repeated `(query, doc)` is an error.
    pub fn from_triples<I, Q, D>(triples: I) -> Result<Qrels, EvalError>
    where
        I: IntoIterator<Item = (Q, D, Relevance)>,
        Q: Into<String>,
        D: Into<String>,
    {
        let mut queries: BTreeMap<String, Vec<(String, Relevance, usize)>> = BTreeMap::new();
        for (n, (q, d, r)) in triples.into_iter().enumerate() {
            queries.entry(q.into()).or_default().push((d.into(), r, n + 1));
        }
        finish_qrels(queries, Path::new("<memory>"))
    }

    /// Parse qrels text; `path` only names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Qrels, EvalError> {
        let mut queries: BTreeMap<String, Vec<(String, Relevance, usize)>> = BTreeMap::new();
        for (idx, line) in text.lines().enumerate() {
            let line_no = idx + 1;
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let mut fields = trimmed.split_ascii_whitespace();
            let (Some(qid), Some(_iter), Some(doc), Some(rel), None) =
                (fields.next(), fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return Err(malformed(path, line_no, "expected 4 fields `qid iter docno rel`"));
            };
            let rel: Relevance = rel.parse().map_err(|_| {
                malformed(path, line_no, &format!("relevance `{rel}` is not an integer"))
            })?;
            queries.entry(qid.to_owned()).or_default().push((doc.to_owned(), rel, line_no));
        }
        finish_qrels(queries, path)
    }

    /// Read and parse a qrels file.
    pub fn read(path: &Path) -> Result<Qrels, EvalError> {
        let text = fs_err::read_to_string(path).map_err(EvalError::Io)?;
        Qrels::parse(&text, path)
    }

    /// Number of judgements.
    pub fn len(&self) -> usize {
        self.queries.values().map(|q| q.judged.len()).sum()
    }

    /// Whether there is no judgement at all.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }
}

fn finish_qrels(
    queries: BTreeMap<String, Vec<(String, Relevance, usize)>>,
    path: &Path,
) -> Result<Qrels, EvalError> {
    let mut out = BTreeMap::new();
    for (qid, mut rows) in queries {
        rows.sort_by(|a, b| a.0.cmp(&b.0).then(a.2.cmp(&b.2)));
        for w in rows.windows(2) {
            if w[0].0 == w[1].0 {
                return Err(EvalError::DuplicateDoc {
                    path: path.to_owned(),
                    line: w[1].2,
                    first_line: w[0].2,
                    query: qid.clone(),
                    doc: w[1].0.clone(),
                });
            }
        }
        out.insert(qid, QueryQrels { judged: rows.into_iter().map(|(d, r, _)| (d, r)).collect() });
    }
    Ok(Qrels { queries: out })
}

fn malformed(path: &Path, line: usize, why: &str) -> EvalError {
    EvalError::Malformed { path: path.to_owned(), line, why: why.to_owned() }
}

/// One retrieved document of a query: a span of the run's text arena and a score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunEntry {
    start: u32,
    len: u32,
    /// The retrieval score; higher ranks first.
    pub score: f64,
}

/// A retrieval run: scored documents per query. Document ids live in one text arena (the run
/// file itself when parsed), so a run of millions of lines costs 16 bytes a line.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// The run tag (trec_eval's `runid`).
    pub run_id: String,
    /// Query id → retrieved documents (in file order; rank and order are ignored).
    pub queries: BTreeMap<String, Vec<RunEntry>>,
    arena: Arena,
}

/// The text that document ids point into: a string, or a run file mapped into memory (no
/// copy and no page zeroing for a run of hundreds of megabytes).
#[derive(Debug, Clone)]
enum Arena {
    Owned(String),
    /// Checked to be UTF-8 when mapped.
    Mapped(std::sync::Arc<memmap2::Mmap>),
}

impl Default for Arena {
    fn default() -> Self {
        Arena::Owned(String::new())
    }
}

impl Arena {
    fn as_str(&self) -> &str {
        match self {
            Arena::Owned(s) => s,
            // SAFETY: `Run::read` checked the mapped bytes with `std::str::from_utf8`.
            Arena::Mapped(m) => unsafe { std::str::from_utf8_unchecked(m) },
        }
    }

    fn push_str(&mut self, text: &str) {
        if let Arena::Mapped(_) = self {
            *self = Arena::Owned(self.as_str().to_owned());
        }
        if let Arena::Owned(s) = self {
            s.push_str(text);
        }
    }
}

/// A line-level parse failure inside a chunk: byte offset of the line and what is wrong.
struct ChunkError {
    offset: usize,
    why: String,
}

type ChunkQueries<'a> = Vec<(&'a str, Vec<RunEntry>)>;

/// Parse one chunk of whole lines; `base` is the chunk's offset in the arena.
fn parse_chunk<'a>(chunk: &'a str, base: usize) -> Result<(ChunkQueries<'a>, Option<&'a str>), ChunkError> {
    let mut out: ChunkQueries<'a> = Vec::new();
    let mut index: HashMap<&'a str, usize, FnvBuild> = HashMap::default();
    let mut last_tag = None;
    let mut offset = 0usize;
    for line in chunk.split_inclusive('\n') {
        let line_offset = base + offset;
        offset += line.len();
        let trimmed = line.trim_start();
        if trimmed.trim_end().is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut f = trimmed.split_ascii_whitespace();
        let (Some(qid), Some(_iter), Some(doc), Some(_rank), Some(score), Some(tag)) =
            (f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            return Err(ChunkError { offset: line_offset, why: "expected 6 fields `qid Q0 docno rank score run_id`".into() });
        };
        let score: f64 = score
            .parse()
            .map_err(|_| ChunkError { offset: line_offset, why: format!("score `{score}` is not a number") })?;
        last_tag = Some(tag);
        let start = base + (doc.as_ptr() as usize - chunk.as_ptr() as usize);
        let entry = RunEntry { start: start as u32, len: doc.len() as u32, score };
        // Lines of one query are usually consecutive: check the last query first.
        match out.last_mut() {
            Some((q, v)) if *q == qid => v.push(entry),
            _ => match index.get(qid) {
                Some(&i) => out[i].1.push(entry),
                None => {
                    index.insert(qid, out.len());
                    out.push((qid, vec![entry]));
                }
            },
        }
    }
    Ok((out, last_tag))
}

/// Cut `text` into about `n` chunks of whole lines.
fn line_chunks(text: &str, n: usize) -> Vec<(usize, &str)> {
    let target = text.len() / n.max(1) + 1;
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + target).min(text.len());
        while end < text.len() && text.as_bytes()[end - 1] != b'\n' {
            end += 1;
        }
        chunks.push((start, &text[start..end]));
        start = end;
    }
    chunks
}

impl Run {
    /// An empty run named `run_id`.
    pub fn new(run_id: impl Into<String>) -> Run {
        Run { run_id: run_id.into(), ..Run::default() }
    }

    /// The document id of an entry.
    pub fn doc(&self, e: &RunEntry) -> &str {
        &self.arena.as_str()[e.start as usize..(e.start + e.len) as usize]
    }

    /// Add one scored document; duplicates are detected by [`Run::check_duplicates`].
    pub fn push(&mut self, query: &str, doc: &str, score: f64) {
        let entry = RunEntry { start: self.arena.as_str().len() as u32, len: doc.len() as u32, score };
        self.arena.push_str(doc);
        match self.queries.get_mut(query) {
            Some(v) => v.push(entry),
            None => {
                self.queries.insert(query.to_owned(), vec![entry]);
            }
        }
    }

    /// Parse run text; `path` only names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Run, EvalError> {
        Run::parse_owned(text.to_owned(), path)
    }

    /// Parse run text, keeping it as the document-id arena (chunks are parsed in parallel).
    pub fn parse_owned(text: String, path: &Path) -> Result<Run, EvalError> {
        Run::parse_arena(Arena::Owned(text), path)
    }

    fn parse_arena(arena: Arena, path: &Path) -> Result<Run, EvalError> {
        let text = arena.as_str();
        if text.len() >= u32::MAX as usize {
            return Err(malformed(path, 0, "run files of 4 GiB or more are not supported"));
        }
        let chunks = line_chunks(text, rayon::current_num_threads() * 4);
        let parsed: Vec<Result<(ChunkQueries<'_>, Option<&str>), ChunkError>> =
            chunks.par_iter().map(|(base, chunk)| parse_chunk(chunk, *base)).collect();
        let mut order: Vec<(String, Vec<RunEntry>)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut run_id = String::new();
        for result in parsed {
            let (queries, tag) = match result {
                Ok(x) => x,
                Err(e) => {
                    let line = text[..e.offset].bytes().filter(|&b| b == b'\n').count() + 1;
                    return Err(malformed(path, line, &e.why));
                }
            };
            if let Some(tag) = tag {
                run_id = tag.to_owned();
            }
            for (qid, entries) in queries {
                match index.get(qid) {
                    Some(&i) => order[i].1.extend(entries),
                    None => {
                        index.insert(qid.to_owned(), order.len());
                        order.push((qid.to_owned(), entries));
                    }
                }
            }
        }
        let run = Run { run_id, queries: order.into_iter().collect(), arena };
        if let Some((qid, doc)) = run.first_duplicate() {
            let lines: Vec<usize> = run
                .arena
                .as_str()
                .lines()
                .enumerate()
                .filter(|(_, l)| {
                    let mut f = l.split_ascii_whitespace();
                    f.next() == Some(qid.as_str()) && f.nth(1) == Some(doc.as_str())
                })
                .map(|(i, _)| i + 1)
                .take(2)
                .collect();
            return Err(EvalError::DuplicateDoc {
                path: path.to_owned(),
                line: lines.get(1).copied().unwrap_or(0),
                first_line: lines.first().copied().unwrap_or(0),
                query: qid,
                doc,
            });
        }
        Ok(run)
    }

    /// Read and parse a run file.
    pub fn read(path: &Path) -> Result<Run, EvalError> {
        let file = fs_err::File::open(path).map_err(EvalError::Io)?;
        if file.metadata().map_err(EvalError::Io)?.len() == 0 {
            return Run::parse_owned(String::new(), path);
        }
        // SAFETY: the map is read-only and lives as long as the run; a run file changed
        // while it is evaluated is outside what this reader promises.
        let map = unsafe { memmap2::Mmap::map(file.file()) }.map_err(|e| EvalError::Io(std::io::Error::new(e.kind(), format!("mapping `{}`: {e}", path.display()))))?;
        if let Err(e) = std::str::from_utf8(&map) {
            let line = map[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
            return Err(malformed(path, line, "not UTF-8"));
        }
        Run::parse_arena(Arena::Mapped(std::sync::Arc::new(map)), path)
    }

    /// The first (query, document) retrieved twice, queries in id order.
    fn first_duplicate(&self) -> Option<(String, String)> {
        let found: Vec<Option<(String, String)>> = self
            .queries
            .par_iter()
            .map(|(qid, entries)| {
                let mut seen: std::collections::HashSet<&str, FnvBuild> =
                    std::collections::HashSet::with_capacity_and_hasher(entries.len(), FnvBuild::default());
                entries.iter().find(|e| !seen.insert(self.doc(e))).map(|e| (qid.clone(), self.doc(e).to_owned()))
            })
            .collect();
        found.into_iter().flatten().next()
    }

    /// Error on the first document retrieved twice for one query (for runs built with `push`).
    pub fn check_duplicates(&self) -> Result<(), EvalError> {
        match self.first_duplicate() {
            None => Ok(()),
            Some((query, doc)) => {
                Err(EvalError::DuplicateDoc { path: PathBuf::from("<memory>"), line: 0, first_line: 0, query, doc })
            }
        }
    }

    /// The documents of `query` in trec_eval rank order: score descending, then doc id
    /// descending (byte order).
    pub fn ranked(&self, query: &str) -> Vec<RunEntry> {
        let mut v = self.queries.get(query).cloned().unwrap_or_default();
        self.sort_ranked(&mut v);
        v
    }

    /// Sort entries into trec_eval rank order. Scores are sorted as integer keys (fast), and only
    /// groups of tied scores compare document ids.
    pub fn sort_ranked(&self, v: &mut [RunEntry]) {
        fn descending_key(x: f64) -> u64 {
            let x = if x == 0.0 { 0.0 } else { x }; // -0.0 ties with 0.0, as in C
            let bits = x.to_bits();
            let ascending = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
            !ascending
        }
        let mut keys: Vec<(u64, u32)> = v.iter().enumerate().map(|(i, e)| (descending_key(e.score), i as u32)).collect();
        keys.sort_unstable();
        let mut i = 0;
        while i < keys.len() {
            let mut j = i + 1;
            while j < keys.len() && keys[j].0 == keys[i].0 {
                j += 1;
            }
            if j - i > 1 {
                keys[i..j].sort_unstable_by(|a, b| self.doc(&v[b.1 as usize]).cmp(self.doc(&v[a.1 as usize])));
            }
            i = j;
        }
        let sorted: Vec<RunEntry> = keys.iter().map(|&(_, i)| v[i as usize]).collect();
        v.copy_from_slice(&sorted);
    }

    /// Render in TREC run format (`qid Q0 docid rank score tag`), queries in id order, documents
    /// in rank order, at most `depth` per query.
    pub fn to_trec(&self, depth: usize) -> String {
        let mut out = String::new();
        for qid in self.queries.keys() {
            for (rank, e) in self.ranked(qid).iter().take(depth).enumerate() {
                let _ = writeln!(out, "{qid} Q0 {} {} {} {}", self.doc(e), rank + 1, e.score, self.run_id);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qrels_parse_and_errors() {
        let q = Qrels::parse("# c\n1 0 b 2\n1 0 a 0\n\n2 0 x -1\n", Path::new("q")).unwrap();
        assert_eq!(q.queries["1"].judged, vec![("a".into(), 0), ("b".into(), 2)]);
        assert_eq!(q.queries["2"].relevance("x"), Some(-1));
        let e = Qrels::parse("1 0 a\n", Path::new("q.txt")).unwrap_err().to_string();
        assert!(e.contains("q.txt:1"), "{e}");
        let e = Qrels::parse("1 0 a 1\n1 0 a 2\n", Path::new("q.txt")).unwrap_err().to_string();
        assert!(e.contains("q.txt:2") && e.contains("`a`"), "{e}");
    }

    #[test]
    fn run_parse_rank_and_duplicates() {
        let r = Run::parse("1 Q0 a 1 1.0 x\n1 Q0 b 2 1.0 x\n2 Q0 a 1 3 y junk\n1 Q0 c 3 2 x\n", Path::new("r"))
            .unwrap();
        assert_eq!(r.run_id, "x", "the last line names the run");
        let ranked: Vec<&str> = r.ranked("1").iter().map(|e| r.doc(e)).collect();
        assert_eq!(ranked, ["c", "b", "a"]);
        let e = Run::parse("1 Q0 a 1 1 x\n2 Q0 a 1 1 x\n1 Q0 a 2 0.5 x\n", Path::new("run.trec"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("run.trec:3") && e.contains("line 1"), "{e}");
        let e = Run::parse("1 Q0 a 1 high x\n", Path::new("r")).unwrap_err().to_string();
        assert!(e.contains("`high`"), "{e}");
    }
}
