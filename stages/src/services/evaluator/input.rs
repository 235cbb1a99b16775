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

use super::EvalError;

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

/// One retrieved document of a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunEntry {
    /// Interned document id (see [`Run::doc`]).
    pub doc: u32,
    /// The retrieval score; higher ranks first.
    pub score: f64,
}

/// A retrieval run: scored documents per query. Document ids are interned, so a run of
/// millions of lines over a shared corpus stays compact.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// The run tag (trec_eval's `runid`).
    pub run_id: String,
    /// Query id → retrieved documents (in file order; rank and order are ignored).
    pub queries: BTreeMap<String, Vec<RunEntry>>,
    names: Vec<Box<str>>,
    ids: HashMap<Box<str>, u32>,
}

impl Run {
    /// An empty run named `run_id`.
    pub fn new(run_id: impl Into<String>) -> Run {
        Run { run_id: run_id.into(), ..Run::default() }
    }

    /// The id of interned document `doc`.
    pub fn doc(&self, doc: u32) -> &str {
        &self.names[doc as usize]
    }

    fn intern(&mut self, doc: &str) -> u32 {
        if let Some(&id) = self.ids.get(doc) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(doc.into());
        self.ids.insert(doc.into(), id);
        id
    }

    /// Add one scored document; duplicates are detected by [`Run::check_duplicates`].
    pub fn push(&mut self, query: &str, doc: &str, score: f64) {
        let doc = self.intern(doc);
        match self.queries.get_mut(query) {
            Some(v) => v.push(RunEntry { doc, score }),
            None => {
                self.queries.insert(query.to_owned(), vec![RunEntry { doc, score }]);
            }
        }
    }

    /// Parse run text; `path` only names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Run, EvalError> {
        let mut run = Run::default();
        let mut lines_of: HashMap<(u32, u32), usize> = HashMap::new();
        let mut qids: HashMap<String, u32> = HashMap::new();
        let mut last_run_id = "";
        let mut current: Option<(&str, Vec<RunEntry>)> = None;
        let mut per_query: Vec<Vec<RunEntry>> = Vec::new();
        let mut qid_names: Vec<String> = Vec::new();
        for (idx, line) in text.lines().enumerate() {
            let line_no = idx + 1;
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let mut f = trimmed.split_ascii_whitespace();
            let (Some(qid), Some(_iter), Some(doc), Some(_rank), Some(score), Some(tag)) =
                (f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
            else {
                return Err(malformed(
                    path,
                    line_no,
                    "expected 6 fields `qid Q0 docno rank score run_id`",
                ));
            };
            let score: f64 = score.parse().map_err(|_| {
                malformed(path, line_no, &format!("score `{score}` is not a number"))
            })?;
            last_run_id = tag;
            let doc = run.intern(doc);
            // Consecutive lines of one query are the common case: avoid a map lookup.
            let qslot = match &current {
                Some((q, _)) if *q == qid => None,
                _ => Some(()),
            };
            if qslot.is_some() {
                if let Some((q, entries)) = current.take() {
                    let slot = qids[q];
                    per_query[slot as usize].extend(entries);
                }
                if !qids.contains_key(qid) {
                    qids.insert(qid.to_owned(), qid_names.len() as u32);
                    qid_names.push(qid.to_owned());
                    per_query.push(Vec::new());
                }
                current = Some((qid, Vec::new()));
            }
            let slot = qids[qid];
            if let Some(first) = lines_of.insert((slot, doc), line_no) {
                return Err(EvalError::DuplicateDoc {
                    path: path.to_owned(),
                    line: line_no,
                    first_line: first,
                    query: qid.to_owned(),
                    doc: run.doc(doc).to_owned(),
                });
            }
            if let Some((_, entries)) = current.as_mut() {
                entries.push(RunEntry { doc, score });
            }
        }
        if let Some((q, entries)) = current.take() {
            per_query[qids[q] as usize].extend(entries);
        }
        run.run_id = last_run_id.to_owned();
        run.queries = qid_names.into_iter().zip(per_query).collect();
        Ok(run)
    }

    /// Read and parse a run file.
    pub fn read(path: &Path) -> Result<Run, EvalError> {
        let text = fs_err::read_to_string(path).map_err(EvalError::Io)?;
        Run::parse(&text, path)
    }

    /// Error on the first document retrieved twice for one query (for runs built with `push`).
    pub fn check_duplicates(&self) -> Result<(), EvalError> {
        for (qid, entries) in &self.queries {
            let mut docs: Vec<u32> = entries.iter().map(|e| e.doc).collect();
            docs.sort_unstable();
            if let Some(w) = docs.windows(2).find(|w| w[0] == w[1]) {
                return Err(EvalError::DuplicateDoc {
                    path: PathBuf::from("<memory>"),
                    line: 0,
                    first_line: 0,
                    query: qid.clone(),
                    doc: self.doc(w[0]).to_owned(),
                });
            }
        }
        Ok(())
    }

    /// The documents of `query` in trec_eval rank order: score descending, then doc id
    /// descending (byte order).
    pub fn ranked(&self, query: &str) -> Vec<RunEntry> {
        let mut v = self.queries.get(query).cloned().unwrap_or_default();
        self.sort_ranked(&mut v);
        v
    }

    /// Sort entries into trec_eval rank order.
    pub fn sort_ranked(&self, v: &mut [RunEntry]) {
        v.sort_by(|a, b| {
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| self.doc(b.doc).cmp(self.doc(a.doc)))
        });
    }

    /// Render in TREC run format (`qid Q0 docid rank score tag`), queries in id order, documents
    /// in rank order, at most `depth` per query.
    pub fn to_trec(&self, depth: usize) -> String {
        let mut out = String::new();
        for qid in self.queries.keys() {
            for (rank, e) in self.ranked(qid).iter().take(depth).enumerate() {
                let _ = writeln!(out, "{qid} Q0 {} {} {} {}", self.doc(e.doc), rank + 1, e.score, self.run_id);
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
        let ranked: Vec<&str> = r.ranked("1").iter().map(|e| r.doc(e.doc)).collect();
        assert_eq!(ranked, ["c", "b", "a"]);
        let e = Run::parse("1 Q0 a 1 1 x\n2 Q0 a 1 1 x\n1 Q0 a 2 0.5 x\n", Path::new("run.trec"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("run.trec:3") && e.contains("line 1"), "{e}");
        let e = Run::parse("1 Q0 a 1 high x\n", Path::new("r")).unwrap_err().to_string();
        assert!(e.contains("`high`"), "{e}");
    }
}
