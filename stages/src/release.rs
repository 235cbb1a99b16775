//! `release`: what a published release says besides its Parquet tables — the BEIR/MTEB
//! files per task, the dataset card, and the check that a release is problem-disjoint from
//! every earlier one. Pure: returns text; the engine writes the files (and the MANIFEST).
//!
//! One meaning in every client: a BEIR folder's `qrels/test.tsv` lists the positives only
//! (score 2), so BEIR, MTEB, pytrec_eval and trec_eval at their defaults compute CoREB's
//! numbers (a hard negative earns no gain and is not relevant); the graded 2/1 judgements
//! stay in the Parquet `<task>_qrels` configs. The code2code corpus leaves out the queries'
//! own documents (the anchors), so no client can retrieve a query for itself.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;
use thiserror::Error;

use crate::problem::{DateWindow, ProblemId};
use crate::qrels::{QrelsOutput, Task, TaskSet};

/// The eight Parquet configs, in card order.
pub const CONFIGS: [&str; 8] = [
    "code_corpus",
    "text_corpus",
    "text2code_queries",
    "text2code_qrels",
    "code2code_queries",
    "code2code_qrels",
    "code2text_queries",
    "code2text_qrels",
];

/// Why a release cannot be published.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ReleaseError {
    /// Problems that an earlier release already published.
    #[error("{} problem(s) already published in release `{release}`: {}", ids.len(), ids.iter().map(ProblemId::as_str).take(5).collect::<Vec<_>>().join(", "))]
    NotDisjoint {
        /// The earlier release.
        release: String,
        /// The problems in both.
        ids: Vec<ProblemId>,
    },
}

/// Refuse a release that shares a problem with an earlier one.
pub fn check_disjoint(ids: &BTreeSet<ProblemId>, earlier: &[(String, BTreeSet<ProblemId>)]) -> Result<(), ReleaseError> {
    for (release, theirs) in earlier {
        let shared: Vec<ProblemId> = ids.intersection(theirs).cloned().collect();
        if !shared.is_empty() {
            return Err(ReleaseError::NotDisjoint { release: release.clone(), ids: shared });
        }
    }
    Ok(())
}

/// The documents of a task's BEIR corpus: code for text2code, code but the anchors for
/// code2code, text for code2text.
fn corpus_lines(task: Task, out: &QrelsOutput) -> String {
    // BEIR reads `_id`, `title` and `text`; the other fields ride along for breakdowns and
    // gates (and are ignored by `beir` and `mteb`).
    let mut s = String::new();
    let anchors = if task == Task::Code2Code { out.code2code_sources() } else { BTreeSet::new() };
    match task {
        Task::Text2Code | Task::Code2Code => {
            for d in out.code_corpus.iter().filter(|d| !anchors.contains(&d.code_id)) {
                push_json(&mut s, &serde_json::json!({
                    "_id": d.code_id, "title": "", "text": d.code,
                    "problem_id": d.problem_id, "language": d.language, "model": d.model, "passed": d.passed,
                }));
            }
        }
        Task::Code2Text => {
            for d in &out.text_corpus {
                push_json(&mut s, &serde_json::json!({"_id": d.text_id, "title": "", "text": d.text, "problem_id": d.problem_id, "kind": d.kind}));
            }
        }
    }
    s
}

fn push_json(s: &mut String, value: &impl Serialize) {
    // Serialising plain structs of strings cannot fail.
    s.push_str(&serde_json::to_string(value).unwrap_or_default());
    s.push('\n');
}

/// The BEIR files of one task: `corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`.
pub struct BeirFiles {
    /// `corpus.jsonl`.
    pub corpus: String,
    /// `queries.jsonl`.
    pub queries: String,
    /// `qrels/test.tsv` (with BEIR's header line): positives only.
    pub qrels: String,
}

/// Render the BEIR layout of one task.
pub fn beir(task: Task, out: &QrelsOutput) -> BeirFiles {
    let empty = TaskSet::default();
    let set = out.tasks.get(&task).unwrap_or(&empty);
    let mut queries = String::new();
    for q in &set.queries {
        push_json(&mut queries, &serde_json::json!({
            "_id": q.query_id, "text": q.query,
            "task": q.task, "subtask": q.subtask, "language_constraint": q.language_constraint,
            "source_problem_id": q.source_problem_id, "source_doc_id": q.source_doc_id,
            "num_relevant_docs": q.num_relevant_docs,
        }));
    }
    let mut qrels = String::from("query-id\tcorpus-id\tscore\n");
    for r in set.qrels.iter().filter(|r| r.relevance.0 >= 2) {
        let _ = writeln!(qrels, "{}\t{}\t{}", r.query_id.0, r.doc_id.0, r.relevance.0);
    }
    BeirFiles { corpus: corpus_lines(task, out), queries, qrels }
}

/// What the dataset card says about the build.
pub struct CardInfo<'a> {
    /// Release version.
    pub version: &'a str,
    /// Contest-date window.
    pub window: &'a DateWindow,
    /// Models that wrote solutions.
    pub models: Vec<String>,
    /// Problems in the release.
    pub problems: usize,
    /// coreb version.
    pub tool_version: &'a str,
}

/// The dataset card (`README.md`): Hugging Face front matter with the eight configs, then
/// counts per task, subtask and language, and the query distribution.
pub fn dataset_card(info: &CardInfo<'_>, out: &QrelsOutput) -> String {
    let mut s = String::new();
    s.push_str("---\nlicense: other\ntask_categories:\n- text-retrieval\nlanguage:\n- en\n- code\ntags:\n- code-retrieval\n- reranking\n- benchmark\n- coreb\nconfigs:\n");
    for c in CONFIGS {
        let _ = writeln!(s, "- config_name: {c}\n  data_files:\n  - split: test\n    path: {c}.parquet");
    }
    s.push_str("---\n\n");
    let window = format!("{} … {}", info.window.start.as_deref().unwrap_or("(open)"), info.window.end.as_deref().unwrap_or("(open)"));
    let _ = writeln!(s, "# CoREB release `{}`\n", info.version);
    let _ = writeln!(
        s,
        "A contamination-limited, graded-relevance benchmark for code retrieval and reranking, built by \
         coreb {} from {} LiveCodeBench problems with contest dates in {window}, rewritten \
         counterfactually, solved by {} in five languages and judged by execution.\n",
        info.tool_version,
        info.problems,
        if info.models.is_empty() { "no model".to_owned() } else { info.models.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ") }
    );
    s.push_str(
        "## Relevance\n\n2 = positive (a passing solution, or a true description of the problem), 1 = hard \
         negative (same problem: a failed solution, a passing one outside the subtask, or a distractor \
         statement), 0 = everything else. CoREB scores a hard negative as not relevant, with no gain in nDCG.\n\n\
         - BEIR / MTEB / pytrec_eval / trec_eval: `<task>/qrels/test.tsv` lists the positives only, so the \
         default settings give the CoREB numbers (no `-l` option needed).\n\
         - Parquet (`<task>_qrels`): the graded 2/1 judgements, for reranking and hard-negative analyses; \
         count relevance 2 as relevant.\n\
         - code2code: the query code is an anchor solution that is not a candidate: `code2code/corpus.jsonl` \
         leaves the anchors out; with the Parquet configs, drop each query's `source_doc_id` (or use \
         `code_corpus` without the code2code `source_doc_id`s).\n\
         - A language-constrained text2code query names its language in its text.\n\n",
    );

    s.push_str("## Corpora\n\n| corpus | documents | passing | failing |\n|---|---:|---:|---:|\n");
    let passing = out.code_corpus.iter().filter(|d| d.passed).count();
    let _ = writeln!(s, "| code_corpus | {} | {passing} | {} |", out.code_corpus.len(), out.code_corpus.len() - passing);
    let _ = writeln!(s, "| text_corpus | {} | | |", out.text_corpus.len());
    let _ = writeln!(s, "| code2code candidates | {} | | |\n", out.code_corpus.len() - out.code2code_sources().len());

    let mut by_lang: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &out.code_corpus {
        *by_lang.entry(d.language.as_str()).or_default() += 1;
    }
    s.push_str("Code documents per language: ");
    s.push_str(&by_lang.iter().map(|(l, n)| format!("{l} {n}")).collect::<Vec<_>>().join(", "));
    s.push_str(".\n\n## Queries\n\n| task | subtask | language | queries | qrels (rel 2) | qrels (rel 1) | mean relevant docs |\n|---|---|---|---:|---:|---:|---:|\n");
    for task in Task::ALL {
        let Some(set) = out.tasks.get(&task) else { continue };
        let mut groups: BTreeMap<(&str, &str), (usize, usize, usize, usize)> = BTreeMap::new();
        let mut of_query: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
        for q in &set.queries {
            let g = groups.entry((q.subtask.as_str(), q.language_constraint.as_str())).or_default();
            g.0 += 1;
            g.3 += q.num_relevant_docs;
            of_query.insert(q.query_id.0.as_str(), (q.subtask.as_str(), q.language_constraint.as_str()));
        }
        for r in &set.qrels {
            if let Some(key) = of_query.get(r.query_id.0.as_str())
                && let Some(g) = groups.get_mut(key) {
                    if r.relevance.0 >= 2 { g.1 += 1 } else { g.2 += 1 }
                }
        }
        for ((subtask, lang), (n, pos, neg, rel)) in groups {
            let _ = writeln!(s, "| {} | {subtask} | {lang} | {n} | {pos} | {neg} | {:.2} |", task.as_str(), rel as f64 / n.max(1) as f64);
        }
    }
    s.push_str("\n## Query distribution\n\n| task | queries | share |\n|---|---:|---:|\n");
    let total: usize = out.tasks.values().map(|t| t.queries.len()).sum();
    for task in Task::ALL {
        let n = out.tasks.get(&task).map_or(0, |t| t.queries.len());
        let _ = writeln!(s, "| {} | {n} | {:.1}% |", task.as_str(), 100.0 * n as f64 / total.max(1) as f64);
    }
    s.push_str(
        "\n## Layout\n\n- `<config>.parquet`: the eight configs above (Hugging Face `datasets` reads them through the \
         front matter).\n- `text2code/`, `code2code/`, `code2text/`: BEIR layout (`corpus.jsonl`, `queries.jsonl`, \
         `qrels/test.tsv`) for `beir` and `mteb`.\n- `problems.parquet`: the source problems (keeps later releases \
         problem-disjoint).\n- `MANIFEST.json`: sha256 of every file and everything needed to rebuild \
         (`coreb verify`).\n\n## Licence notes\n\nProblem statements come from LiveCodeBench and belong to their \
         platforms (AtCoder, LeetCode, Codeforces); rewritten statements, summaries, distractors, queries and \
         solutions were generated by the models named above. Use for evaluation and research.\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qrels::{JudgedSolution, ProblemTexts, QrelsConfig, SearchQuery, qrels};
    use crate::solution::{Language, SolutionId};

    fn output() -> QrelsOutput {
        let pid = ProblemId::from_question_id("1");
        let problems = vec![ProblemTexts {
            problem_id: pid.clone(),
            title: "T".into(),
            statement: "S".into(),
            canonical: "C".into(),
            distractors: vec!["D1".into(), "D2".into(), "D3".into(), "D4".into()],
            search_queries: vec![SearchQuery { index: 0, text: "q".into(), language: None }],
        }];
        let solutions: Vec<JudgedSolution> = [(Language::Python, true), (Language::Cpp, true), (Language::Go, false)]
            .into_iter()
            .map(|(l, passed)| JudgedSolution {
                id: SolutionId::new(&pid, "m", l, 0),
                problem_id: pid.clone(),
                model: "m".into(),
                language: l,
                sample: 0,
                code: format!("code in {l}"),
                passed,
            })
            .collect();
        qrels(&QrelsConfig::default(), "v202503", "m", &problems, &solutions)
    }

    #[test]
    fn beir_files_parse_back() {
        let out = output();
        let files = beir(Task::Text2Code, &out);
        let corpus: Vec<serde_json::Value> = files.corpus.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(corpus.len(), 3);
        assert_eq!(corpus[0]["_id"], "code_v202503_lcb_1_m_cpp_0");
        let queries: Vec<serde_json::Value> = files.queries.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(queries.len(), out.tasks[&Task::Text2Code].queries.len());
        let mut lines = files.qrels.lines();
        assert_eq!(lines.next(), Some("query-id\tcorpus-id\tscore"));
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
        assert!(rows.iter().all(|f| f.len() == 3 && f[2] == "2"), "positives only: {rows:?}");
        let graded = &out.tasks[&Task::Text2Code].qrels;
        assert_eq!(rows.len(), graded.iter().filter(|r| r.relevance.0 == 2).count());
        assert!(graded.iter().any(|r| r.relevance.0 == 1), "the hard negatives stay in the Parquet qrels");
        let c2t = beir(Task::Code2Text, &out);
        assert_eq!(c2t.corpus.lines().count(), 6, "full, canonical and four distractors");
        // The code2code corpus has no query's own document.
        let c2c = beir(Task::Code2Code, &out);
        let ids: Vec<serde_json::Value> = c2c.corpus.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["_id"].clone()).collect();
        assert_eq!(ids.len(), 2);
        for q in c2c.queries.lines() {
            let q: serde_json::Value = serde_json::from_str(q).unwrap();
            assert!(!ids.contains(&q["source_doc_id"]));
        }
    }

    #[test]
    fn card_counts() {
        let out = output();
        let window = DateWindow::new(Some("2025-01-01"), Some("2025-03-31")).unwrap();
        let card = dataset_card(&CardInfo { version: "v202503", window: &window, models: vec!["m".into()], problems: 1, tool_version: "0.1.0" }, &out);
        assert!(card.starts_with("---\n"));
        assert_eq!(card.matches("config_name:").count(), 8);
        assert!(card.contains("| code_corpus | 3 | 2 | 1 |"), "{card}");
        assert!(card.contains("| code2code candidates | 2 | | |"), "{card}");
        assert!(card.contains("2025-01-01 … 2025-03-31"));
    }

    #[test]
    fn disjointness() {
        let ids: BTreeSet<ProblemId> = [ProblemId::from_question_id("1"), ProblemId::from_question_id("2")].into();
        let earlier = vec![("v202501".to_owned(), [ProblemId::from_question_id("3")].into())];
        assert_eq!(check_disjoint(&ids, &earlier), Ok(()));
        let earlier = vec![("v202502".to_owned(), [ProblemId::from_question_id("2")].into())];
        let err = check_disjoint(&ids, &earlier).unwrap_err();
        assert!(err.to_string().contains("v202502") && err.to_string().contains("lcb_2"));
    }
}
