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
        let path = Path::new("<memory>");
        let queries = queries
            .into_iter()
            .map(|(qid, rows)| finish_query(qid, rows, |n| n, path))
            .collect::<Result<_, _>>()?;
        Ok(Qrels { queries })
    }

    /// Parse qrels text; `path` only names the source in errors. Chunks of lines are parsed
    /// in parallel.
    pub fn parse(text: &str, path: &Path) -> Result<Qrels, EvalError> {
        let chunks = line_chunks(text, rayon::current_num_threads() * 4);
        let parsed: Vec<Result<QrelsGroups<'_>, ChunkError>> =
            chunks.par_iter().map(|(base, chunk)| parse_qrels_chunk(chunk, *base)).collect();
        let mut queries: BTreeMap<&str, Vec<(&str, Relevance, usize)>> = BTreeMap::new();
        for groups in parsed {
            let groups = groups.map_err(|e| malformed(path, line_of(text, e.offset), &e.why))?;
            for (qid, mut rows) in groups {
                queries.entry(qid).or_default().append(&mut rows);
            }
        }
        let finished: Vec<Result<(String, QueryQrels), EvalError>> = queries
            .into_par_iter()
            .map(|(qid, rows)| finish_query(qid, rows, |offset| line_of(text, offset), path))
            .collect();
        Ok(Qrels { queries: finished.into_iter().collect::<Result<_, _>>()? })
    }

    /// Read and parse a qrels file; one without a judgement is [`EvalError::Empty`].
    pub fn read(path: &Path) -> Result<Qrels, EvalError> {
        let text = fs_err::read_to_string(path).map_err(EvalError::Io)?;
        let qrels = Qrels::parse(&text, path)?;
        if qrels.is_empty() {
            return Err(EvalError::Empty {
                path: path.to_owned(),
                what: "qrels",
                line: "judgement",
            });
        }
        Ok(qrels)
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

/// One query's rows of a qrels chunk: `(doc, relevance, position)` in file order.
type QrelsGroups<'a> = Vec<(&'a str, Vec<(&'a str, Relevance, usize)>)>;

/// Parse one chunk of whole qrels lines; positions are byte offsets in the whole text.
fn parse_qrels_chunk(chunk: &str, base: usize) -> Result<QrelsGroups<'_>, ChunkError> {
    let mut groups: QrelsGroups<'_> = Vec::new();
    for (offset, line) in lines(chunk) {
        let mut fields = Fields { line, pos: 0 };
        let Some(qid) = fields.next() else { continue };
        if qid.starts_with('#') {
            continue;
        }
        // A BEIR `qrels/<split>.tsv` (a CoREB release's): its header line, then 3 fields.
        if base + offset == 0 && qid == "query-id" {
            continue;
        }
        let (doc, rel) = match (fields.next(), fields.next(), fields.next(), fields.next()) {
            (Some(_iter), Some(doc), Some(rel), None) => (doc, rel),
            (Some(doc), Some(rel), None, None) => (doc, rel),
            _ => return Err(ChunkError { offset: base + offset, why: "expected 4 fields `qid iter docno rel` (or BEIR's 3, `query-id corpus-id score`)".into() }),
        };
        let rel: Relevance = rel.parse().map_err(|_| ChunkError {
            offset: base + offset,
            why: format!("relevance `{rel}` is not an integer"),
        })?;
        // Lines of one query are usually consecutive: a new group only when the query changes.
        match groups.last_mut() {
            Some((q, rows)) if *q == qid => rows.push((doc, rel, base + offset)),
            _ => groups.push((qid, vec![(doc, rel, base + offset)])),
        }
    }
    Ok(groups)
}

/// Sort one query's judgements by doc id and reject a repeated doc; `line` turns a row's
/// position into the line number errors name.
fn finish_query<S: AsRef<str>>(
    qid: S,
    mut rows: Vec<(S, Relevance, usize)>,
    line: impl Fn(usize) -> usize,
    path: &Path,
) -> Result<(String, QueryQrels), EvalError> {
    rows.sort_unstable_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()).then(a.2.cmp(&b.2)));
    if let Some(w) = rows.windows(2).find(|w| w[0].0.as_ref() == w[1].0.as_ref()) {
        return Err(EvalError::DuplicateDoc {
            path: path.to_owned(),
            line: line(w[1].2),
            first_line: line(w[0].2),
            query: qid.as_ref().to_owned(),
            doc: w[1].0.as_ref().to_owned(),
        });
    }
    let judged = rows.into_iter().map(|(d, r, _)| (d.as_ref().to_owned(), r)).collect();
    Ok((qid.as_ref().to_owned(), QueryQrels { judged }))
}

/// The 1-based line number of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..offset]).count() + 1
}

/// The lines of `text` with their byte offsets, without their `\n`.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut offset = 0;
    std::iter::from_fn(move || {
        if offset >= text.len() {
            return None;
        }
        let end =
            memchr::memchr(b'\n', &text.as_bytes()[offset..]).map_or(text.len(), |i| offset + i);
        let line = (offset, &text[offset..end]);
        offset = end + 1;
        Some(line)
    })
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

/// An integer key whose ascending order is `score`'s descending order (`-0.0` ties with `0.0`,
/// as in C).
pub(crate) fn descending_key(x: f64) -> u64 {
    let x = if x == 0.0 { 0.0 } else { x };
    let bits = x.to_bits();
    let ascending = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
    !ascending
}

/// A line-level parse failure inside a chunk: byte offset of the line and what is wrong.
struct ChunkError {
    offset: usize,
    why: String,
}

type ChunkQueries<'a> = Vec<(&'a str, Vec<RunEntry>)>;

/// trec_eval's field separators (C `isspace` in the "C" locale, less the newline that ends
/// a line).
fn is_field_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c')
}

/// The whitespace-separated fields of one line, as byte ranges of the line.
struct Fields<'a> {
    line: &'a str,
    pos: usize,
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let b = self.line.as_bytes();
        while self.pos < b.len() && is_field_space(b[self.pos]) {
            self.pos += 1;
        }
        let start = self.pos;
        while self.pos < b.len() && !is_field_space(b[self.pos]) {
            self.pos += 1;
        }
        // Both ends sit next to ASCII bytes (or the line's ends), so they are char boundaries.
        (self.pos > start).then(|| &self.line[start..self.pos])
    }
}

/// Parse a score as `str::parse::<f64>` does, with a fast path for plain decimals of at most
/// 15 digits (`[+-]?d*[.d*]`): the digits as an integer, exactly representable, divided by an
/// exact power of ten, which IEEE division rounds correctly, so the result is the same double.
fn parse_score(s: &str) -> Option<f64> {
    const POW10: [f64; 16] =
        [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
    let b = s.as_bytes();
    let (negative, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    let (mut mantissa, mut count, mut frac, mut seen_dot) = (0u64, 0usize, 0usize, false);
    for &c in digits {
        match c {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(c - b'0');
                count += 1;
                frac += usize::from(seen_dot);
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => return s.parse().ok(),
        }
        if count > 15 {
            return s.parse().ok();
        }
    }
    if count == 0 {
        return s.parse().ok();
    }
    let v = mantissa as f64 / POW10[frac];
    Some(if negative { -v } else { v })
}

/// Parse one chunk of whole lines; `base` is the chunk's offset in the arena.
fn parse_chunk<'a>(
    chunk: &'a str,
    base: usize,
) -> Result<(ChunkQueries<'a>, Option<&'a str>), ChunkError> {
    let mut out: ChunkQueries<'a> = Vec::new();
    let mut index: HashMap<&'a str, usize, FnvBuild> = HashMap::default();
    let mut last_tag = None;
    for (line_start, line) in lines(chunk) {
        let line_offset = base + line_start;
        let mut f = Fields { line, pos: 0 };
        let Some(qid) = f.next() else { continue };
        if qid.starts_with('#') {
            continue;
        }
        let (Some(_iter), Some(doc), Some(_rank), Some(score), Some(tag)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            return Err(ChunkError {
                offset: line_offset,
                why: "expected 6 fields `qid Q0 docno rank score run_id`".into(),
            });
        };
        let score = parse_score(score).ok_or_else(|| ChunkError {
            offset: line_offset,
            why: format!("score `{score}` is not a number"),
        })?;
        last_tag = Some(tag);
        let start = base + line_start + (doc.as_ptr() as usize - line.as_ptr() as usize);
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
        let entry =
            RunEntry { start: self.arena.as_str().len() as u32, len: doc.len() as u32, score };
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
                    return Err(malformed(path, line_of(text, e.offset), &e.why));
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
            // Split as the parser split them, so the lines found are the ones it read.
            let lines: Vec<usize> = lines(run.arena.as_str())
                .enumerate()
                .filter(|(_, (_, line))| {
                    let mut f = Fields { line, pos: 0 };
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

    /// Read and parse a run file; one that ranks nothing is [`EvalError::Empty`].
    pub fn read(path: &Path) -> Result<Run, EvalError> {
        let run = Run::read_any(path)?;
        if run.queries.is_empty() {
            return Err(EvalError::empty_run(path));
        }
        Ok(run)
    }

    fn read_any(path: &Path) -> Result<Run, EvalError> {
        let file = fs_err::File::open(path).map_err(EvalError::Io)?;
        if file.metadata().map_err(EvalError::Io)?.len() == 0 {
            return Run::parse_owned(String::new(), path);
        }
        // Populated: the file is read whole anyway, and one call beats a fault per page.
        // SAFETY: the map is read-only and lives as long as the run; a run file changed
        // while it is evaluated is outside what this reader promises.
        let map =
            unsafe { memmap2::MmapOptions::new().populate().map(file.file()) }.map_err(|e| {
                EvalError::Io(std::io::Error::new(
                    e.kind(),
                    format!("mapping `{}`: {e}", path.display()),
                ))
            })?;
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
                    std::collections::HashSet::with_capacity_and_hasher(
                        entries.len(),
                        FnvBuild::default(),
                    );
                entries
                    .iter()
                    .find(|e| !seen.insert(self.doc(e)))
                    .map(|e| (qid.clone(), self.doc(e).to_owned()))
            })
            .collect();
        found.into_iter().flatten().next()
    }

    /// Error on the first document retrieved twice for one query (for runs built with `push`).
    pub fn check_duplicates(&self) -> Result<(), EvalError> {
        match self.first_duplicate() {
            None => Ok(()),
            Some((query, doc)) => Err(EvalError::DuplicateDoc {
                path: PathBuf::from("<memory>"),
                line: 0,
                first_line: 0,
                query,
                doc,
            }),
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
        let mut keys: Vec<(u64, u32)> =
            v.iter().enumerate().map(|(i, e)| (descending_key(e.score), i as u32)).collect();
        keys.sort_unstable();
        let mut i = 0;
        while i < keys.len() {
            let mut j = i + 1;
            while j < keys.len() && keys[j].0 == keys[i].0 {
                j += 1;
            }
            if j - i > 1 {
                keys[i..j].sort_unstable_by(|a, b| {
                    self.doc(&v[b.1 as usize]).cmp(self.doc(&v[a.1 as usize]))
                });
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
                let _ = writeln!(
                    out,
                    "{qid} Q0 {} {} {} {}",
                    self.doc(e),
                    rank + 1,
                    e.score,
                    self.run_id
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path agrees bit for bit with `str::parse`, and everything else falls back to it.
    #[test]
    fn parse_score_is_str_parse() {
        let cases = [
            "0",
            "-0",
            "+0",
            "1",
            "0.1",
            "0.3",
            "-2.675",
            "9.99",
            "123456789012345",
            "1234567890123456",
            "0.1234567890123456789",
            "12345.678901234",
            "1e3",
            "-1.5E-7",
            "inf",
            "-inf",
            "NaN",
            ".5",
            "5.",
            "-.25",
            "+7.125",
            ".",
            "-",
            "",
            "1.2.3",
            "1,5",
            "0x10",
            "00000000000000000001.5",
            "4.35",
            "0.0000001",
        ];
        for c in cases {
            let want = c.parse::<f64>().ok().map(f64::to_bits);
            assert_eq!(parse_score(c).map(f64::to_bits), want, "`{c}`");
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = (x % 10_u64.pow(1 + (x >> 60) as u32 % 15)).to_string();
            let dot = (x >> 40) as usize % (digits.len() + 1);
            let s = format!(
                "{}{}.{}",
                if x & 1 == 1 { "-" } else { "" },
                &digits[..dot],
                &digits[dot..]
            );
            assert_eq!(
                parse_score(&s).map(f64::to_bits),
                s.parse::<f64>().ok().map(f64::to_bits),
                "`{s}`"
            );
        }
    }

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
        let r = Run::parse(
            "1 Q0 a 1 1.0 x\n1 Q0 b 2 1.0 x\n2 Q0 a 1 3 y junk\n1 Q0 c 3 2 x\n",
            Path::new("r"),
        )
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
        let e = Run::parse("1 Q0 a 1 1 x\n\t \r\n# c\n1 Q0 b 2 1.2.3 x\n", Path::new("r"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("r:4") && e.contains("`1.2.3`"), "{e}");
        let e = Run::parse("1 Q0 a 1 1\n", Path::new("r")).unwrap_err().to_string();
        assert!(e.contains("r:1") && e.contains("6 fields"), "{e}");
    }
}
