//! BEIR folders: `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`.
//!
//! Documents carry `_id`, `title`, `text` and, in CoREB releases, a `problem_id`; queries carry
//! `_id`, `text` and, in releases, `subtask` and `language_constraint` (other fields are
//! ignored). Qrels TSV: a `query-id corpus-id score` header, then one judgement a line.
//! Parsing is pure (`parse_*` from text, errors naming file and line); [`read_dir`] is the one
//! convenience that reads files, and [`release_qrels`] reads a release's graded judgements
//! beside its BEIR folder. Does NOT download anything.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use coreb_trec::Qrels;

/// Errors reading a BEIR folder.
#[derive(Debug, thiserror::Error)]
pub enum BeirError {
    /// A file could not be read (the error names it).
    #[error(transparent)]
    Io(std::io::Error),
    /// A JSON line does not parse.
    #[error("{}:{line}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A release's Parquet qrels could not be read.
    #[error(transparent)]
    Table(#[from] coreb_data::tables::TableError),
    /// A qrels line is malformed.
    #[error("{}:{line}: {why}", path.display())]
    Qrels {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        why: String,
    },
}

/// A corpus document.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Doc {
    /// Document id.
    #[serde(rename = "_id")]
    pub id: String,
    /// Title (often empty).
    #[serde(default)]
    pub title: String,
    /// Body.
    #[serde(default)]
    pub text: String,
    /// The problem the document belongs to (CoREB releases).
    #[serde(default)]
    pub problem_id: Option<String>,
}

impl Doc {
    /// Title and text, as retrievers see them.
    pub fn full_text(&self) -> String {
        if self.title.is_empty() {
            self.text.clone()
        } else {
            format!("{}\n{}", self.title, self.text)
        }
    }
}

/// A query.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Query {
    /// Query id.
    #[serde(rename = "_id")]
    pub id: String,
    /// Query text.
    #[serde(default)]
    pub text: String,
    /// Subtask (CoREB releases: `canonical`, `full`, `search`, `cross_lang` ...).
    #[serde(default)]
    pub subtask: Option<String>,
    /// Language constraint (CoREB releases: `any`, `python`, ...).
    #[serde(default)]
    pub language_constraint: Option<String>,
    /// For a code query: the corpus document it is (never ranked for itself).
    #[serde(default)]
    pub source_doc_id: Option<String>,
}

/// One BEIR folder in memory.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Folder name (the task, for a release).
    pub name: String,
    /// Documents in file order.
    pub corpus: Vec<Doc>,
    /// Queries in file order.
    pub queries: Vec<Query>,
    /// Judgements.
    pub qrels: Qrels,
}

fn parse_jsonl<T: for<'de> Deserialize<'de>>(text: &str, path: &Path) -> Result<Vec<T>, BeirError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| BeirError::Json {
                path: path.to_owned(),
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// Parse `corpus.jsonl` text.
pub fn parse_corpus(text: &str, path: &Path) -> Result<Vec<Doc>, BeirError> {
    parse_jsonl(text, path)
}

/// Parse `queries.jsonl` text.
pub fn parse_queries(text: &str, path: &Path) -> Result<Vec<Query>, BeirError> {
    parse_jsonl(text, path)
}

/// Parse a qrels TSV (header optional).
pub fn parse_qrels(text: &str, path: &Path) -> Result<Qrels, BeirError> {
    let mut triples = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || (i == 0 && line.starts_with("query-id")) {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = |why: String| BeirError::Qrels { path: path.to_owned(), line: i + 1, why };
        if f.len() != 3 {
            return Err(bad(format!("expected 3 tab-separated fields, found {}", f.len())));
        }
        let rel: i64 =
            f[2].trim().parse().map_err(|_| bad(format!("score `{}` is not an integer", f[2])))?;
        triples.push((f[0].to_owned(), f[1].to_owned(), rel));
    }
    Qrels::from_triples(triples).map_err(|e| BeirError::Qrels {
        path: path.to_owned(),
        line: 0,
        why: e.to_string(),
    })
}

/// The corpus of a BEIR folder: its own `corpus.jsonl`, or its parent's for a split folder
/// that only holds `queries.jsonl` and `qrels/` (CoSQA's `dev/`).
pub fn corpus_path(dir: &Path) -> Option<PathBuf> {
    let own = dir.join("corpus.jsonl");
    if own.is_file() {
        return Some(own);
    }
    let parent = dir.parent()?.join("corpus.jsonl");
    parent.is_file().then_some(parent)
}

/// Whether `dir` looks like a BEIR folder.
pub fn is_beir_dir(dir: &Path) -> bool {
    corpus_path(dir).is_some() && dir.join("queries.jsonl").is_file() && dir.join("qrels").is_dir()
}

/// The graded judgements (relevance 2 and 1) of the task whose BEIR folder is `dir`, when
/// `dir` sits in a CoREB release (`<release>/<task>/` beside `<release>/<task>_qrels.parquet`);
/// `None` for any other folder. A release's `qrels/test.tsv` lists the positives only, so
/// this is where the hard negatives are found.
pub fn release_qrels(dir: &Path) -> Result<Option<Qrels>, BeirError> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Ok(None);
    };
    let path = parent.join(format!("{}_qrels.parquet", name.to_string_lossy()));
    if !path.is_file() {
        return Ok(None);
    }
    let rows = coreb_data::tables::published::read_qrels(&path)?;
    let triples = rows.into_iter().map(|r| (r.query_id.0, r.doc_id.0, i64::from(r.relevance.0)));
    Qrels::from_triples(triples).map(Some).map_err(|e| BeirError::Qrels {
        path,
        line: 0,
        why: e.to_string(),
    })
}

/// Read a BEIR folder with the `split` qrels (`test`).
pub fn read_dir(dir: &Path, split: &str) -> Result<Dataset, BeirError> {
    let read = |p: PathBuf| fs_err::read_to_string(&p).map_err(BeirError::Io).map(|t| (t, p));
    let (corpus, cp) = read(corpus_path(dir).unwrap_or_else(|| dir.join("corpus.jsonl")))?;
    let (queries, qp) = read(dir.join("queries.jsonl"))?;
    let (qrels, rp) = read(dir.join("qrels").join(format!("{split}.tsv")))?;
    Ok(Dataset {
        name: dir
            .file_name()
            .map_or_else(|| "dataset".to_owned(), |n| n.to_string_lossy().into_owned()),
        corpus: parse_corpus(&corpus, &cp)?,
        queries: parse_queries(&queries, &qp)?,
        qrels: parse_qrels(&qrels, &rp)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_reports_lines() {
        let docs =
            parse_corpus("{\"_id\":\"d1\",\"text\":\"x\",\"problem_id\":\"p\"}\n", Path::new("c"))
                .unwrap();
        assert_eq!(docs[0].problem_id.as_deref(), Some("p"));
        let e = parse_queries("{\"_id\":\"q\"}\n{oops}\n", Path::new("queries.jsonl")).unwrap_err();
        assert!(e.to_string().starts_with("queries.jsonl:2:"), "{e}");
        let q = parse_qrels("query-id\tcorpus-id\tscore\nq\td\t2\n", Path::new("t")).unwrap();
        assert_eq!(q.queries["q"].relevance("d"), Some(2));
        let e = parse_qrels("q\td\n", Path::new("t.tsv")).unwrap_err();
        assert!(e.to_string().contains("t.tsv:1"), "{e}");
    }
}
