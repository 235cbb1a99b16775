//! The ids, documents, queries and judgements of a release's three tasks, as the `qrels`
//! stage makes them and the release's tables, checks and evaluation read them.
//!
//! Ids are stable and versioned, derived from what a row is, never from its position (see
//! [`model_slug`], [`code_doc_id`], [`text_doc_id`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::problem::ProblemId;
use crate::solution::{Language, SolutionId};

/// The three tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// Text query → code.
    Text2Code,
    /// Code query → code.
    Code2Code,
    /// Code query → text.
    Code2Text,
}

impl Task {
    /// All tasks in release order.
    pub const ALL: [Task; 3] = [Task::Text2Code, Task::Code2Code, Task::Code2Text];

    /// `text2code`, `code2code`, `code2text`.
    pub fn as_str(self) -> &'static str {
        match self {
            Task::Text2Code => "text2code",
            Task::Code2Code => "code2code",
            Task::Code2Text => "code2text",
        }
    }

    /// The query-id prefix: `t2c`, `c2c`, `c2t`.
    pub fn prefix(self) -> &'static str {
        match self {
            Task::Text2Code => "t2c",
            Task::Code2Code => "c2c",
            Task::Code2Text => "c2t",
        }
    }
}

/// A document id (`code_<version>_…` or `text_<version>_…`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DocId(pub String);

/// A query id (`t2c_<version>_…`, `c2c_<version>_…`, `c2t_<version>_…`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QueryId(pub String);

/// A relevance grade: 2 positive, 1 hard negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Relevance(pub u8);

/// A model name as it appears in ids: the name itself when it holds only ASCII letters,
/// digits, `.`, `-` (and is not empty), else those characters with every other run folded
/// to `-`, plus `-` and 8 hex digits of the name's sha256, so `org/model:tag` and
/// `org-model-tag` never meet. Depends on the name alone, so adding a model never changes
/// another model's ids.
pub fn model_slug(model: &str) -> String {
    let clean = !model.is_empty()
        && model.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    if clean {
        return model.to_owned();
    }
    let mut slug = String::new();
    for c in model.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let hash = hex::encode(Sha256::digest(model.as_bytes()));
    format!("{}-{}", slug.trim_matches('-'), &hash[..8])
}

/// The id of a code document.
pub fn code_doc_id(
    version: &str,
    problem: &ProblemId,
    model: &str,
    language: Language,
    sample: u32,
) -> DocId {
    DocId(format!("code_{version}_{problem}_{}_{language}_{sample}", model_slug(model)))
}

/// The id of a text document: kind `full`, `canonical` or `distractor<i>`.
pub fn text_doc_id(version: &str, problem: &ProblemId, kind: TextKind, index: usize) -> DocId {
    match kind {
        TextKind::Full => DocId(format!("text_{version}_{problem}_full")),
        TextKind::Canonical => DocId(format!("text_{version}_{problem}_canonical")),
        TextKind::Distractor => DocId(format!("text_{version}_{problem}_distractor{index}")),
    }
}

/// A language-constrained query composed from an unconstrained text: the language named
/// first (instructed-retrieval style), so a model that truncates a long statement still
/// reads it.
pub fn constrained_query(text: &str, language: Language) -> String {
    format!("{} solution: {text}", language.display_name())
}

/// A document of the code corpus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeDoc {
    /// Its id.
    pub code_id: DocId,
    /// The code.
    pub code: String,
    /// Its language.
    pub language: Language,
    /// The model that wrote it.
    pub model: String,
    /// Its problem.
    pub problem_id: ProblemId,
    /// The solution it comes from.
    pub solution_id: SolutionId,
    /// Did it pass every test?
    pub passed: bool,
}

/// What a text document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextKind {
    /// Title + rewritten statement.
    Full,
    /// The canonical summary.
    Canonical,
    /// A distractor statement.
    Distractor,
}

/// A document of the text corpus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextDoc {
    /// Its id.
    pub text_id: DocId,
    /// The text.
    pub text: String,
    /// What it is.
    pub kind: TextKind,
    /// The problem it describes (or imitates, for a distractor).
    pub problem_id: ProblemId,
}

/// A query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Query {
    /// Its id.
    pub query_id: QueryId,
    /// The query text (or code).
    pub query: String,
    /// The task.
    pub task: Task,
    /// `canonical`, `full`, `search`; `mono_lang`, `cross_lang`, `cross_model`; `describe`.
    pub subtask: String,
    /// text2code: `any` or the language the relevant documents are in; code2code: the
    /// anchor language for `mono_lang`, else `any`; code2text: the query code's language.
    pub language_constraint: String,
    /// The problem the query comes from.
    pub source_problem_id: ProblemId,
    /// For code queries: the code document the query is (never judged for itself, and not
    /// in the code2code corpus).
    pub source_doc_id: Option<DocId>,
    /// Number of relevance-2 documents.
    pub num_relevant_docs: usize,
}

/// One judgement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Qrel {
    /// The query.
    pub query_id: QueryId,
    /// The document.
    pub doc_id: DocId,
    /// 2 or 1.
    pub relevance: Relevance,
}

/// Queries and judgements of one task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSet {
    /// Queries, in the order they were made (problem, then text or anchor).
    pub queries: Vec<Query>,
    /// Judgements, grouped by query in query order, positives first.
    pub qrels: Vec<Qrel>,
}

/// Counts of one qrels run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QrelsStats {
    /// Problems in.
    pub problems: u64,
    /// Code documents.
    pub code_docs: u64,
    /// Text documents.
    pub text_docs: u64,
    /// Queries per task and subtask.
    pub queries: BTreeMap<String, u64>,
    /// Queries skipped because they had no positive document.
    pub skipped_without_positive: u64,
    /// Queries with at least one hard negative.
    pub with_hard_negatives: u64,
    /// code2code anchors: code documents that are code2code queries.
    pub anchors: u64,
    /// Search queries left out by the per-subtask cap.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub capped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The result of `qrels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QrelsOutput {
    /// Every solution, passing or not.
    pub code_corpus: Vec<CodeDoc>,
    /// Full texts, canonical texts and distractors.
    pub text_corpus: Vec<TextDoc>,
    /// Per task.
    pub tasks: BTreeMap<Task, TaskSet>,
    /// Counts.
    pub stats: QrelsStats,
}

impl QrelsOutput {
    /// The code documents that are code2code queries (their anchors).
    pub fn code2code_sources(&self) -> BTreeSet<&DocId> {
        self.tasks
            .get(&Task::Code2Code)
            .map(|t| t.queries.iter().filter_map(|q| q.source_doc_id.as_ref()).collect())
            .unwrap_or_default()
    }

    /// The anchors that no code2code query judges: the code2code corpus leaves them out, so
    /// a client that does not drop a query's own document still cannot retrieve it. (With
    /// `cross_lang = "anchor"` that is every anchor; with `"pairs"`, role A's.)
    pub fn code2code_unjudged_anchors(&self) -> BTreeSet<&DocId> {
        let judged: BTreeSet<&DocId> = self
            .tasks
            .get(&Task::Code2Code)
            .map(|t| t.qrels.iter().map(|r| &r.doc_id).collect())
            .unwrap_or_default();
        self.code2code_sources().into_iter().filter(|d| !judged.contains(d)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_slugs() {
        assert_eq!(model_slug("gpt-4o-mini-2024-07-18"), "gpt-4o-mini-2024-07-18");
        assert_eq!(model_slug("Qwen2.5-Coder-32B-Instruct"), "Qwen2.5-Coder-32B-Instruct");
        let s = model_slug("org/model:tag");
        assert!(s.starts_with("org-model-tag-") && s.len() == "org-model-tag-".len() + 8, "{s}");
        assert_ne!(model_slug("a b"), model_slug("a_b"));
        assert!(!model_slug("a b").contains(' '));
    }
}
