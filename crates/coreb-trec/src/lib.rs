//! `coreb-trec`: the evaluator. One implementation of the IR measures, exactly as trec_eval
//! 10.0 computes and prints them, used by `coreb trec-eval`, `coreb eval`, `coreb check` and
//! the `coreb-trec` binary; usable on its own by anyone with a qrels and a run file.
//!
//! What it owns:
//! - [`input`]: TREC qrels and run files ([`Qrels`], [`Run`]), with errors naming file and line.
//! - [`measures`]: the `all_trec` measures and their parameter forms (`P.5,10`,
//!   `ndcg.1=3,2=9`, `ndcg_cut.10,20`, `relstring.20` ...).
//! - [`trec`]: the trec_eval driver — which queries count, `-c`, `-M`, `-l`, per-query and
//!   summary values, and trec_eval's own text output.
//! - [`command`]: the `trec-eval` command's behaviour (files in, trec_eval's text out).
//! - [`coreb`]: CoREB's convention on top (relevance 2 for binary measures, relevance 1 as gain 0
//!   in nDCG, MRR@k, R-cap@k, the hard-negative intrusion rate).
//!
//! What it must not know: anything else of coreb — releases, manifests, stages, the artifact
//! store, retrievers, report formats. It depends on no other coreb crate (`cargo tree -p
//! coreb-trec`); its callers turn releases into [`Qrels`] and [`Run`]s.
//!
//! Does NOT implement trec_eval's preference (`-R prefs`), judgement-group, z-score (`-Z`) or
//! judged-only (`-J`) modes, nor the `dcg`/`ideal_dcg` helper measures.
//!
//! ```
//! use coreb_trec::{Qrels, Run, trec::{TrecOptions, evaluate}};
//! let qrels = Qrels::from_triples([("q1", "d1", 1), ("q1", "d2", 0)]).unwrap();
//! let mut run = Run::new("demo");
//! run.push("q1", "d2", 2.0);
//! run.push("q1", "d1", 1.0);
//! let opts = TrecOptions::with_measures(&["recip_rank"]).unwrap();
//! let report = evaluate(&qrels, &run, &opts).unwrap();
//! assert_eq!(report.summary_value("recip_rank"), Some(0.5));
//! ```

pub mod command;
pub mod coreb;
pub mod input;
pub mod measures;
pub mod trec;

use std::path::PathBuf;

pub use input::{Qrels, QueryQrels, Run, RunEntry};

/// Errors of the evaluator.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// Reading a qrels or run file failed (the error names the path).
    #[error(transparent)]
    Io(std::io::Error),
    /// A line of a qrels or run file does not have the expected shape.
    #[error("{}:{line}: malformed line: {why}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// A document appears twice for one query.
    #[error("{}:{line}: duplicate document `{doc}` for query `{query}` (first at line {first_line})", path.display())]
    DuplicateDoc {
        /// The file (`<memory>` for in-memory data).
        path: PathBuf,
        /// Line of the repeat.
        line: usize,
        /// Line of the first occurrence.
        first_line: usize,
        /// The query.
        query: String,
        /// The document.
        doc: String,
    },
    /// An unknown measure or bad measure parameters.
    #[error("measure `{measure}`: {why}")]
    Measure {
        /// The measure as given.
        measure: String,
        /// What is wrong.
        why: String,
    },
    /// A qrels or run file without one line to read.
    #[error("`{}`: the {what} file is empty (not one {line} in it)", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
        /// `qrels` or `run`.
        what: &'static str,
        /// What a line of it is: `judgement`, `ranked document`.
        line: &'static str,
    },
    /// No query is both in the qrels and in the run.
    #[error("no queries with both results and relevance info")]
    NoQueries,
}

impl EvalError {
    /// The run file `path` ranks nothing.
    pub fn empty_run(path: &std::path::Path) -> EvalError {
        EvalError::Empty { path: path.to_owned(), what: "run", line: "ranked document" }
    }
}
