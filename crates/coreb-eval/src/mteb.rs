//! MTEB's CoREB(v1) tasks: their names, protocol, main score and prompt ([`TASKS`], as the
//! pinned `mteb` declares them in `tasks/{retrieval,reranking}/code/coreb_*.py`), and the task
//! folders `coreb export --layout mteb` writes for them ([`Folder`]).
//!
//! A task folder is an MTEB dataset and a BEIR folder at once: `corpus.jsonl`,
//! `queries.jsonl`, `qrels/test.jsonl` (MTEB's config `default`) with `qrels/test.tsv` beside
//! it, and for a reranking task `top_ranked/test.jsonl` (`query-id`, `corpus-ids`: the
//! query's fixed candidates, MTEB's config `top_ranked`). [`TASK_FILE`] names the task, so
//! that `coreb eval` scores the folder as MTEB does: the candidates only, where it has them,
//! and the task's main score.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use coreb_trec::Run;

/// The file of a task folder naming its MTEB task (no `datasets` config reads it).
pub const TASK_FILE: &str = "mteb_task.json";

/// How MTEB scores a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    /// The whole corpus ranked; main score nDCG@10.
    Retrieval,
    /// Each query's fixed candidates (`top_ranked`) ranked; main score MAP@10.
    Reranking,
}

/// One of MTEB's CoREB(v1) tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MtebTask {
    /// MTEB's task name (`CorebT2CRetrieval`).
    pub name: &'static str,
    /// The CoREB task of a release it is made from (`text2code`).
    pub coreb_task: &'static str,
    /// Retrieval or reranking.
    pub protocol: Protocol,
    /// The task's prompt (MTEB's `TaskMetadata.prompt`).
    pub prompt: &'static str,
}

impl MtebTask {
    /// MTEB's main score: `ndcg_at_10` for retrieval, `map_at_10` for reranking.
    pub fn main_score(&self) -> &'static str {
        match self.protocol {
            Protocol::Retrieval => "ndcg_at_10",
            Protocol::Reranking => "map_at_10",
        }
    }

    /// MTEB's `type` (`Retrieval`, `Reranking`).
    pub fn kind(&self) -> &'static str {
        match self.protocol {
            Protocol::Retrieval => "Retrieval",
            Protocol::Reranking => "Reranking",
        }
    }
}

const T2C: &str =
    "Retrieve the most relevant code implementation for the given problem description.";
const C2C: &str = "Retrieve equivalent code implementations across languages.";
const C2T: &str =
    "Retrieve the most relevant problem description for the given code implementation.";

/// The six tasks of MTEB's benchmark `CoREB(v1)`, retrieval first.
pub const TASKS: [MtebTask; 6] = [
    MtebTask {
        name: "CorebT2CRetrieval",
        coreb_task: "text2code",
        protocol: Protocol::Retrieval,
        prompt: T2C,
    },
    MtebTask {
        name: "CorebC2CRetrieval",
        coreb_task: "code2code",
        protocol: Protocol::Retrieval,
        prompt: C2C,
    },
    MtebTask {
        name: "CorebC2TRetrieval",
        coreb_task: "code2text",
        protocol: Protocol::Retrieval,
        prompt: C2T,
    },
    MtebTask {
        name: "CorebT2CReranking",
        coreb_task: "text2code",
        protocol: Protocol::Reranking,
        prompt: T2C,
    },
    MtebTask {
        name: "CorebC2CReranking",
        coreb_task: "code2code",
        protocol: Protocol::Reranking,
        prompt: C2C,
    },
    MtebTask {
        name: "CorebC2TReranking",
        coreb_task: "code2text",
        protocol: Protocol::Reranking,
        prompt: C2T,
    },
];

/// The task named `name`.
pub fn task(name: &str) -> Option<&'static MtebTask> {
    TASKS.iter().find(|t| t.name == name)
}

/// What [`TASK_FILE`] holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskFile {
    /// MTEB's task name.
    pub task: String,
    /// MTEB's `type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The CoREB task it is made from.
    pub coreb_task: String,
    /// MTEB's main score.
    pub main_score: String,
    /// The task's prompt.
    pub prompt: String,
    /// The release it is made from.
    pub release: String,
    /// Candidates per reranking query (none for a retrieval task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<usize>,
    /// Seed of the candidates' draw (none for a retrieval task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// Why a task folder cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum MtebError {
    /// A file cannot be read or a line does not parse.
    #[error(transparent)]
    Jsonl(#[from] coreb_base::jsonl::JsonlError),
    /// [`TASK_FILE`] does not parse or names no task of MTEB's CoREB(v1).
    #[error("`{}`: {why}", path.display())]
    TaskFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A `top_ranked` line names a query twice.
    #[error("`{}`:{line}: query `{query}` has a second candidate list", path.display())]
    Duplicate {
        /// The file.
        path: PathBuf,
        /// The line.
        line: u64,
        /// The query.
        query: String,
    },
}

/// A task folder of `coreb export --layout mteb`, as `coreb eval` scores it.
#[derive(Debug, Clone)]
pub struct Folder {
    /// The task.
    pub task: &'static MtebTask,
    /// Each query's candidates (`top_ranked/<split>.jsonl`), when the folder has them: a
    /// reranking task's fixed lists, or a code2code retrieval task's whole corpus but the
    /// query's own document.
    pub candidates: Option<BTreeMap<String, BTreeSet<String>>>,
}

#[derive(Deserialize)]
struct TopRanked {
    #[serde(rename = "query-id")]
    query: String,
    #[serde(rename = "corpus-ids")]
    docs: Vec<String>,
}

/// The MTEB task folder `dir`, if it is one (holds [`TASK_FILE`]), with the `split`
/// candidate lists.
pub fn read_folder(dir: &Path, split: &str) -> Result<Option<Folder>, MtebError> {
    let path = dir.join(TASK_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let bad = |why: String| MtebError::TaskFile { path: path.clone(), why };
    let text = fs_err::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
    let file: TaskFile = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let task = task(&file.task).ok_or_else(|| {
        bad(format!(
            "`task`: `{}` is none of MTEB's CoREB(v1) tasks ({})",
            file.task,
            TASKS.map(|t| t.name).join(", ")
        ))
    })?;
    let top = dir.join("top_ranked").join(format!("{split}.jsonl"));
    let candidates = if top.is_file() {
        let mut lists = BTreeMap::new();
        for line in coreb_base::jsonl::lines(&top)? {
            let line = line?;
            let row: TopRanked = line.parse(&top)?;
            if lists.insert(row.query.clone(), row.docs.into_iter().collect()).is_some() {
                return Err(MtebError::Duplicate {
                    path: top,
                    line: line.number,
                    query: row.query,
                });
            }
        }
        Some(lists)
    } else {
        None
    };
    Ok(Some(Folder { task, candidates }))
}

/// `run` with each query's documents limited to its candidates (a query without a list is
/// left out), and how many entries were dropped.
pub fn restrict(run: &Run, candidates: &BTreeMap<String, BTreeSet<String>>) -> (Run, usize) {
    let mut kept = Run::new(run.run_id.clone());
    let mut dropped = 0;
    for (qid, entries) in &run.queries {
        let list = candidates.get(qid);
        for e in entries {
            let doc = run.doc(e);
            if list.is_some_and(|l| l.contains(doc)) {
                kept.push(qid, doc, e.score);
            } else {
                dropped += 1;
            }
        }
    }
    (kept, dropped)
}

/// Qwen3-Reranker's prompt before the instruction and query (its model card).
const QWEN3_PREFIX: &str = "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n";
/// Qwen3-Reranker's prompt after the document.
const QWEN3_SUFFIX: &str = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

/// `data` with its texts written as Qwen3-Reranker reads them through vLLM's `/score` and
/// `/rerank` (its model card): a query `<prefix><Instruct>: {instruction}\n<Query>: {query}\n`
/// and a document `<Document>: {document}<suffix>`; the instruction is the task's (MTEB's
/// prompt, for a release's task folder or an MTEB task folder), else Qwen3's default.
pub fn qwen3_reranker_texts(data: &crate::beir::Dataset) -> crate::beir::Dataset {
    let instruction =
        TASKS.iter().find(|t| t.name == data.name || t.coreb_task == data.name).map_or(
            "Given a web search query, retrieve relevant passages that answer the query",
            |t| t.prompt,
        );
    let mut out = data.clone();
    for q in &mut out.queries {
        q.text = format!("{QWEN3_PREFIX}<Instruct>: {instruction}\n<Query>: {}\n", q.text);
    }
    for d in &mut out.corpus {
        d.text = format!("<Document>: {}{QWEN3_SUFFIX}", d.full_text());
        d.title.clear();
    }
    out
}

/// `run` with every candidate of every list ranked: a candidate the run lacks (a document a
/// retriever scored nothing, as BM25 does with no word in common) is added below the query's
/// lowest score, so that each query ranks its whole list, as MTEB's reranking does. Returns
/// how many were added.
pub fn complete(run: &mut Run, candidates: &BTreeMap<String, BTreeSet<String>>) -> usize {
    let mut added = 0;
    for (qid, list) in candidates {
        let ranked: Vec<(String, f64)> =
            run.ranked(qid).iter().map(|e| (run.doc(e).to_owned(), e.score)).collect();
        let floor = ranked.iter().map(|(_, s)| *s).fold(f64::INFINITY, f64::min);
        let below = if floor.is_finite() { floor - 1.0 } else { 0.0 };
        let have: BTreeSet<&str> = ranked.iter().map(|(d, _)| d.as_str()).collect();
        for doc in list.iter().filter(|d| !have.contains(d.as_str())) {
            run.push(qid, doc, below);
            added += 1;
        }
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_six_tasks_have_mtebs_names_and_main_scores() {
        let names: Vec<_> = TASKS.iter().map(|t| (t.name, t.main_score())).collect();
        assert_eq!(
            names,
            [
                ("CorebT2CRetrieval", "ndcg_at_10"),
                ("CorebC2CRetrieval", "ndcg_at_10"),
                ("CorebC2TRetrieval", "ndcg_at_10"),
                ("CorebT2CReranking", "map_at_10"),
                ("CorebC2CReranking", "map_at_10"),
                ("CorebC2TReranking", "map_at_10"),
            ]
        );
        assert_eq!(task("CorebC2TReranking").unwrap().coreb_task, "code2text");
        assert!(task("CoREB-text2code").is_none());
    }

    #[test]
    fn qwen3_reranker_texts_carry_the_tasks_instruction() {
        use crate::beir::{Dataset, Doc, Query};
        let data = Dataset {
            name: "CorebC2TReranking".into(),
            corpus: vec![Doc {
                id: "d".into(),
                title: "T".into(),
                text: "body".into(),
                problem_id: None,
            }],
            queries: vec![Query {
                id: "q".into(),
                text: "def f(): pass".into(),
                subtask: None,
                language_constraint: None,
                source_doc_id: None,
            }],
            qrels: coreb_trec::Qrels::from_triples([("q", "d", 2)]).unwrap(),
        };
        let t = qwen3_reranker_texts(&data);
        assert!(t.queries[0].text.ends_with(
            "<|im_start|>user\n<Instruct>: Retrieve the most relevant problem description for the given code implementation.\n<Query>: def f(): pass\n"
        ));
        assert!(t.queries[0].text.starts_with("<|im_start|>system\nJudge whether"));
        assert_eq!(
            t.corpus[0].full_text(),
            "<Document>: T\nbody<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        );
    }

    #[test]
    fn a_folder_reads_its_lists_and_a_run_keeps_the_candidates_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = TaskFile {
            task: "CorebC2CReranking".into(),
            kind: "Reranking".into(),
            coreb_task: "code2code".into(),
            main_score: "map_at_10".into(),
            prompt: C2C.into(),
            release: "v1".into(),
            candidates: Some(2),
            seed: Some(1),
        };
        fs_err::write(dir.path().join(TASK_FILE), serde_json::to_string(&file).unwrap()).unwrap();
        fs_err::create_dir_all(dir.path().join("top_ranked")).unwrap();
        fs_err::write(
            dir.path().join("top_ranked/test.jsonl"),
            "{\"query-id\":\"q\",\"corpus-ids\":[\"a\",\"b\"]}\n",
        )
        .unwrap();
        let folder = read_folder(dir.path(), "test").unwrap().unwrap();
        assert_eq!(folder.task.protocol, Protocol::Reranking);
        let lists = folder.candidates.unwrap();
        let mut run = Run::new("r");
        for (q, d, s) in [("q", "a", 1.0), ("q", "c", 3.0), ("q", "b", 2.0), ("x", "a", 1.0)] {
            run.push(q, d, s);
        }
        let (kept, dropped) = restrict(&run, &lists);
        let ranked: Vec<&str> = kept.ranked("q").iter().map(|e| kept.doc(e)).collect();
        assert_eq!((ranked, dropped), (vec!["b", "a"], 2));
        // A candidate the run lacks is ranked last.
        let mut part = Run::new("p");
        part.push("q", "b", 0.5);
        assert_eq!(complete(&mut part, &lists), 1);
        let ranked: Vec<(String, f64)> =
            part.ranked("q").iter().map(|e| (part.doc(e).to_owned(), e.score)).collect();
        assert_eq!(ranked, [("b".to_owned(), 0.5), ("a".to_owned(), -0.5)]);
        assert_eq!(complete(&mut part, &lists), 0);

        // A second list for one query, and an unknown task, are named.
        fs_err::write(
            dir.path().join("top_ranked/test.jsonl"),
            "{\"query-id\":\"q\",\"corpus-ids\":[]}\n{\"query-id\":\"q\",\"corpus-ids\":[]}\n",
        )
        .unwrap();
        let e = read_folder(dir.path(), "test").unwrap_err().to_string();
        assert!(e.contains("test.jsonl`:2: query `q`"), "{e}");
        fs_err::write(
            dir.path().join(TASK_FILE),
            serde_json::to_string(&TaskFile { task: "Other".into(), ..file }).unwrap(),
        )
        .unwrap();
        let e = read_folder(dir.path(), "test").unwrap_err().to_string();
        assert!(e.contains("`Other` is none of MTEB's CoREB(v1) tasks"), "{e}");
        assert!(read_folder(&dir.path().join("top_ranked"), "test").unwrap().is_none());
    }
}
