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

use coreb_data::problem::{DateWindow, Platform, ProblemId};
use coreb_data::qrels::{QrelsOutput, Task, TaskSet};

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

/// The columns of each Parquet config with their Hugging Face `dtype`, as the engine writes
/// them (the card's `dataset_info`; `datasets` checks a loaded table against it).
pub fn config_features(config: &str) -> &'static [(&'static str, &'static str)] {
    const QUERIES: &[(&str, &str)] = &[
        ("query_id", "string"),
        ("query", "string"),
        ("task", "string"),
        ("subtask", "string"),
        ("language_constraint", "string"),
        ("source_problem_id", "string"),
        ("source_doc_id", "string"),
        ("num_relevant_docs", "int64"),
    ];
    const QRELS: &[(&str, &str)] =
        &[("query_id", "string"), ("doc_id", "string"), ("relevance", "int64")];
    match config {
        "code_corpus" => &[
            ("code_id", "string"),
            ("code", "string"),
            ("language", "string"),
            ("model", "string"),
            ("problem_id", "string"),
            ("solution_id", "string"),
            ("passed", "bool"),
        ],
        "text_corpus" => &[
            ("text_id", "string"),
            ("text", "string"),
            ("kind", "string"),
            ("problem_id", "string"),
        ],
        c if c.ends_with("_queries") => QUERIES,
        c if c.ends_with("_qrels") => QRELS,
        _ => &[],
    }
}

/// Rows of each Parquet config of a release.
fn config_rows(config: &str, out: &QrelsOutput) -> usize {
    let task = |name: &str| {
        Task::ALL.into_iter().find(|t| t.as_str() == name).and_then(|t| out.tasks.get(&t))
    };
    match config.rsplit_once('_') {
        _ if config == "code_corpus" => out.code_corpus.len(),
        _ if config == "text_corpus" => out.text_corpus.len(),
        Some((t, "queries")) => task(t).map_or(0, |s| s.queries.len()),
        Some((t, "qrels")) => task(t).map_or(0, |s| s.qrels.len()),
        _ => 0,
    }
}

/// The Hugging Face `size_categories` bucket of a dataset whose largest table has `n` rows.
pub fn size_category(n: usize) -> &'static str {
    match n {
        0..1_000 => "n<1K",
        1_000..10_000 => "1K<n<10K",
        10_000..100_000 => "10K<n<100K",
        100_000..1_000_000 => "100K<n<1M",
        1_000_000..10_000_000 => "1M<n<10M",
        _ => "10M<n<100M",
    }
}

/// A platform's name and the terms that govern its problem statements.
pub fn platform_terms(p: Platform) -> (&'static str, &'static str) {
    match p {
        Platform::Leetcode => ("LeetCode", "https://leetcode.com/terms/"),
        Platform::Atcoder => ("AtCoder", "https://atcoder.jp/tos"),
        Platform::Codeforces => ("Codeforces", "https://codeforces.com/"),
    }
}

/// The `license_name` of a release's card: its `LICENSE` file says what it covers.
pub const LICENSE_NAME: &str = "coreb-release-terms";

/// The release's `LICENSE` file: no single licence covers a release, so it names who owns
/// what and whose terms govern it.
pub fn license_text(info: &CardInfo<'_>) -> String {
    let mut s = format!(
        "Terms of CoREB release {} (built by coreb {})\n\n\
         No single open licence covers this dataset. Its parts are governed as follows.\n\n\
         1. Problem statements. The problems come from LiveCodeBench \
         (https://github.com/LiveCodeBench/LiveCodeBench), which collected them from the contest \
         platforms below. The original statements, and the rewritten statements, summaries and \
         distractors derived from them, remain subject to the terms of the platform each problem \
         comes from (column `platform` of problems.parquet):\n",
        info.version, info.tool_version
    );
    if info.platforms.is_empty() {
        s.push_str("   (no problem in this release)\n");
    }
    for p in &info.platforms {
        let (name, link) = platform_terms(*p);
        let _ = writeln!(s, "   - {name}: {link}");
    }
    let _ = writeln!(
        s,
        "\n2. Generated text and code. Queries, rewritten statements, summaries, distractors and solutions: {}. \
         What a model wrote is subject to the terms of its provider; the models the manifest names:",
        origin_note(&info.written_by)
    );
    if info.models.is_empty() {
        s.push_str("   (no model)\n");
    }
    for m in &info.models {
        let _ = writeln!(s, "   - {m}");
    }
    s.push_str(
        "\n3. Relevance judgements, ids and counts were computed by coreb (MIT-licensed \
         code) from the execution of the solutions.\n\n\
         Use the dataset for evaluation and research.\n",
    );
    s
}

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
pub fn check_disjoint(
    ids: &BTreeSet<ProblemId>,
    earlier: &[(String, BTreeSet<ProblemId>)],
) -> Result<(), ReleaseError> {
    for (release, theirs) in earlier {
        let shared: Vec<ProblemId> = ids.intersection(theirs).cloned().collect();
        if !shared.is_empty() {
            return Err(ReleaseError::NotDisjoint { release: release.clone(), ids: shared });
        }
    }
    Ok(())
}

/// The documents of a task's BEIR corpus: code for text2code, code but the anchors no query
/// judges for code2code, text for code2text.
fn corpus_lines(task: Task, out: &QrelsOutput) -> String {
    // BEIR reads `_id`, `title` and `text`; the other fields ride along for breakdowns and
    // gates (and are ignored by `beir` and `mteb`).
    let mut s = String::new();
    let anchors =
        if task == Task::Code2Code { out.code2code_unjudged_anchors() } else { BTreeSet::new() };
    match task {
        Task::Text2Code | Task::Code2Code => {
            for d in out.code_corpus.iter().filter(|d| !anchors.contains(&d.code_id)) {
                push_json(
                    &mut s,
                    &serde_json::json!({
                        "_id": d.code_id, "title": "", "text": d.code,
                        "problem_id": d.problem_id, "language": d.language, "model": d.model, "passed": d.passed,
                    }),
                );
            }
        }
        Task::Code2Text => {
            for d in &out.text_corpus {
                push_json(
                    &mut s,
                    &serde_json::json!({"_id": d.text_id, "title": "", "text": d.text, "problem_id": d.problem_id, "kind": d.kind}),
                );
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

/// The BEIR and MTEB files of one task: `corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`
/// (BEIR), and for Hugging Face `datasets` and MTEB a `README.md` whose configs `corpus`,
/// `queries` and `default` point at the JSON Lines files, with `qrels/test.jsonl` (the same
/// positives: `datasets` reads one file format per folder).
pub struct BeirFiles {
    /// `corpus.jsonl`.
    pub corpus: String,
    /// `queries.jsonl`.
    pub queries: String,
    /// `qrels/test.tsv` (with BEIR's header line): positives only.
    pub qrels: String,
    /// `qrels/test.jsonl`: the rows of `qrels/test.tsv` as JSON Lines.
    pub qrels_jsonl: String,
    /// `README.md`: the configs MTEB's retrieval loader reads.
    pub card: String,
}

/// The `README.md` of a task folder: the configs MTEB's `RetrievalDatasetLoader` and
/// `load_dataset(<folder>[, config])` read, and how to load the folder.
pub fn task_card(task: Task, version: &str) -> String {
    let t = task.as_str();
    format!(
        "---\nconfigs:\n\
         - config_name: corpus\n  data_files:\n  - split: test\n    path: corpus.jsonl\n\
         - config_name: queries\n  data_files:\n  - split: test\n    path: queries.jsonl\n\
         - config_name: default\n  default: true\n  data_files:\n  - split: test\n    path: qrels/test.jsonl\n\
         ---\n\n\
         # CoREB release `{version}`: {t}\n\n\
         The {t} task in the BEIR/MTEB layout: `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` \
         (`_id`, `text`) and the qrels (`query-id`, `corpus-id`, `score`) as `qrels/test.tsv` (BEIR) and \
         `qrels/test.jsonl` (the config `default`). The qrels list the positives only, so every \
         client's default settings give CoREB's numbers; the graded judgements are in \
         `../{t}_qrels.parquet`.\n\n\
         - Hugging Face `datasets`: `load_dataset(\"<this folder>\")` (the qrels), \
         `load_dataset(\"<this folder>\", \"corpus\")`, `load_dataset(\"<this folder>\", \"queries\")`.\n\
         - BEIR: `GenericDataLoader(\"<this folder>\").load(split=\"test\")`.\n\
         - MTEB: `scripts/coreb_mteb.py` in the coreb repository defines the tasks \
         (`coreb_tasks(\"<release folder>\")`); or point an `AbsTaskRetrieval`'s \
         `dataset={{\"path\": \"<this folder>\", \"revision\": \"{version}\"}}` here.\n"
    )
}

/// A line of `qrels/test.jsonl`, in BEIR's column order.
#[derive(Serialize)]
struct QrelRow<'a> {
    #[serde(rename = "query-id")]
    query_id: &'a str,
    #[serde(rename = "corpus-id")]
    corpus_id: &'a str,
    score: u8,
}

/// Render the BEIR/MTEB layout of one task of release `version`.
pub fn beir(task: Task, version: &str, out: &QrelsOutput) -> BeirFiles {
    let empty = TaskSet::default();
    let set = out.tasks.get(&task).unwrap_or(&empty);
    let mut queries = String::new();
    for q in &set.queries {
        let mut v = serde_json::json!({
            "_id": q.query_id, "text": q.query,
            "task": q.task, "subtask": q.subtask, "language_constraint": q.language_constraint,
            "source_problem_id": q.source_problem_id, "num_relevant_docs": q.num_relevant_docs,
        });
        // Only code queries have a source document: MTEB refuses a column holding nulls.
        if q.source_doc_id.is_some() {
            v["source_doc_id"] = serde_json::json!(q.source_doc_id);
        }
        push_json(&mut queries, &v);
    }
    let mut qrels = String::from("query-id\tcorpus-id\tscore\n");
    let mut qrels_jsonl = String::new();
    for r in set.qrels.iter().filter(|r| r.relevance.0 >= 2) {
        let _ = writeln!(qrels, "{}\t{}\t{}", r.query_id.0, r.doc_id.0, r.relevance.0);
        push_json(
            &mut qrels_jsonl,
            &QrelRow { query_id: &r.query_id.0, corpus_id: &r.doc_id.0, score: r.relevance.0 },
        );
    }
    BeirFiles {
        corpus: corpus_lines(task, out),
        queries,
        qrels,
        qrels_jsonl,
        card: task_card(task, version),
    }
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
    /// The platforms the release's problems come from (their terms govern the statements).
    pub platforms: Vec<Platform>,
    /// Who wrote the LLM stages' answers.
    pub written_by: coreb_llm::run::WrittenBy,
    /// Bytes of each config's Parquet file (the card's `num_bytes`, without which `datasets`
    /// warns that the card's `splits` are malformed).
    pub config_bytes: std::collections::BTreeMap<&'static str, u64>,
}

/// The card's sentence on who wrote the generated content, from the counts.
fn origin_note(w: &coreb_llm::run::WrittenBy) -> String {
    let total = w.endpoint + w.authored + w.imported;
    if total == 0 {
        return "no LLM answers were recorded for it".into();
    }
    if w.authored == total {
        return format!(
            "all {total} of the LLM stages' answers (rewrites, reference solutions, distractors, summaries, \
             queries and solutions) were written by hand, offline, as test data: no model produced them, and the \
             model names this release records only label the generators the build pretends to use"
        );
    }
    let mut parts = Vec::new();
    for (n, what) in [
        (w.endpoint, "written by the models named above through their endpoints"),
        (w.authored, "written by hand, offline (no model)"),
        (w.imported, "imported from elsewhere (origin not recorded)"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    format!(
        "of the LLM stages' {total} answers (rewrites, reference solutions, distractors, summaries, queries and solutions), {}",
        parts.join("; ")
    )
}

/// The dataset card (`README.md`): Hugging Face front matter with the eight configs, then
/// counts per task, subtask and language, and the query distribution.
pub fn dataset_card(info: &CardInfo<'_>, out: &QrelsOutput) -> String {
    let mut s = String::new();
    card_front_matter(&mut s, info, out);
    card_intro(&mut s, info);
    card_corpora(&mut s, out);
    card_queries(&mut s, out);
    card_layout_and_terms(&mut s, info);
    s
}

/// The card's YAML front matter: tags, the eight configs and their features, sizes and rows.
fn card_front_matter(s: &mut String, info: &CardInfo<'_>, out: &QrelsOutput) {
    let largest = CONFIGS.iter().map(|c| config_rows(c, out)).max().unwrap_or(0);
    let _ = write!(
        s,
        "---\npretty_name: CoREB {}\nlicense: other\nlicense_name: {LICENSE_NAME}\nlicense_link: LICENSE\n\
         task_categories:\n- text-retrieval\ntask_ids:\n- document-retrieval\nlanguage:\n- en\n- code\n\
         size_categories:\n- {}\ntags:\n- code-retrieval\n- reranking\n- benchmark\n- coreb\n- mteb\n- beir\nconfigs:\n",
        info.version,
        size_category(largest)
    );
    for c in CONFIGS {
        // `load_dataset(<release>)` with no config name loads the code corpus.
        let default = if c == CONFIGS[0] { "  default: true\n" } else { "" };
        let _ = writeln!(
            s,
            "- config_name: {c}\n{default}  data_files:\n  - split: test\n    path: {c}.parquet"
        );
    }
    s.push_str("dataset_info:\n");
    for c in CONFIGS {
        let _ = writeln!(s, "- config_name: {c}\n  features:");
        for (name, dtype) in config_features(c) {
            let _ = writeln!(s, "  - name: {name}\n    dtype: {dtype}");
        }
        let bytes = info.config_bytes.get(c).copied().unwrap_or(0);
        let _ = writeln!(
            s,
            "  splits:\n  - name: test\n    num_bytes: {bytes}\n    num_examples: {}",
            config_rows(c, out)
        );
    }
    s.push_str("---\n\n");
}

/// The card's title, what the release is and how relevance is graded.
fn card_intro(s: &mut String, info: &CardInfo<'_>) {
    let window = format!(
        "{} … {}",
        info.window.start.as_deref().unwrap_or("(open)"),
        info.window.end.as_deref().unwrap_or("(open)")
    );
    let _ = writeln!(s, "# CoREB release `{}`\n", info.version);
    let _ = writeln!(
        s,
        "A contamination-limited, graded-relevance benchmark for code retrieval and reranking, built by \
         coreb {} from {} LiveCodeBench problems with contest dates in {window}, rewritten \
         counterfactually, solved by {} in five languages and judged by execution.\n",
        info.tool_version,
        info.problems,
        if info.models.is_empty() {
            "no model".to_owned()
        } else {
            info.models.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")
        }
    );
    s.push_str(
        "## Relevance\n\n2 = positive (a passing solution, or a true description of the problem), 1 = hard \
         negative (same problem: a failed solution, a passing one outside the subtask, or a distractor \
         statement), 0 = everything else. CoREB scores a hard negative as not relevant, with no gain in nDCG.\n\n\
         - BEIR / MTEB / pytrec_eval / trec_eval: `<task>/qrels/test.tsv` lists the positives only, so the \
         default settings give the CoREB numbers (no `-l` option needed).\n\
         - Parquet (`<task>_qrels`): the graded 2/1 judgements, for reranking and hard-negative analyses; \
         count relevance 2 as relevant.\n\
         - code2code: the query code is a solution of the corpus and never judged for its own query: drop \
         each query's `source_doc_id` from its ranking, as CoREB's runner does (`coreb eval` does). \
         `code2code/corpus.jsonl` leaves out the anchors that no query judges; an anchor that is another \
         query's positive (`cross_lang` pairs) stays.\n\
         - A language-constrained text2code query names its language in its text.\n\n",
    );
}

/// The card's corpus sizes and code documents per language.
fn card_corpora(s: &mut String, out: &QrelsOutput) {
    s.push_str("## Corpora\n\n| corpus | documents | passing | failing |\n|---|---:|---:|---:|\n");
    let passing = out.code_corpus.iter().filter(|d| d.passed).count();
    let _ = writeln!(
        s,
        "| code_corpus | {} | {passing} | {} |",
        out.code_corpus.len(),
        out.code_corpus.len() - passing
    );
    let _ = writeln!(s, "| text_corpus | {} | | |", out.text_corpus.len());
    let _ = writeln!(
        s,
        "| code2code candidates | {} | | |\n",
        out.code_corpus.len() - out.code2code_unjudged_anchors().len()
    );

    let mut by_lang: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &out.code_corpus {
        *by_lang.entry(d.language.as_str()).or_default() += 1;
    }
    s.push_str("Code documents per language: ");
    s.push_str(&by_lang.iter().map(|(l, n)| format!("{l} {n}")).collect::<Vec<_>>().join(", "));
    s.push_str(".\n\n## Queries\n\n| task | subtask | language | queries | qrels (rel 2) | qrels (rel 1) | mean relevant docs |\n|---|---|---|---:|---:|---:|---:|\n");
}

/// The card's queries per task, subtask and language, and their distribution over tasks.
fn card_queries(s: &mut String, out: &QrelsOutput) {
    for task in Task::ALL {
        let Some(set) = out.tasks.get(&task) else {
            continue;
        };
        let mut groups: BTreeMap<(&str, &str), (usize, usize, usize, usize)> = BTreeMap::new();
        let mut of_query: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
        for q in &set.queries {
            let g = groups.entry((q.subtask.as_str(), q.language_constraint.as_str())).or_default();
            g.0 += 1;
            g.3 += q.num_relevant_docs;
            of_query.insert(
                q.query_id.0.as_str(),
                (q.subtask.as_str(), q.language_constraint.as_str()),
            );
        }
        for r in &set.qrels {
            if let Some(key) = of_query.get(r.query_id.0.as_str())
                && let Some(g) = groups.get_mut(key)
            {
                if r.relevance.0 >= 2 { g.1 += 1 } else { g.2 += 1 }
            }
        }
        for ((subtask, lang), (n, pos, neg, rel)) in groups {
            let _ = writeln!(
                s,
                "| {} | {subtask} | {lang} | {n} | {pos} | {neg} | {:.2} |",
                task.as_str(),
                rel as f64 / n.max(1) as f64
            );
        }
    }
    s.push_str("\n## Query distribution\n\n| task | queries | share |\n|---|---:|---:|\n");
    let total: usize = out.tasks.values().map(|t| t.queries.len()).sum();
    for task in Task::ALL {
        let n = out.tasks.get(&task).map_or(0, |t| t.queries.len());
        let _ = writeln!(
            s,
            "| {} | {n} | {:.1}% |",
            task.as_str(),
            100.0 * n as f64 / total.max(1) as f64
        );
    }
}

/// The card's file layout, how to load the release, its licence and where its content
/// comes from.
fn card_layout_and_terms(s: &mut String, info: &CardInfo<'_>) {
    s.push_str(
        "\n## Layout\n\n- `<config>.parquet`: the eight configs above (Hugging Face `datasets` reads them through the \
         front matter).\n- `text2code/`, `code2code/`, `code2text/`: BEIR layout (`corpus.jsonl`, `queries.jsonl`, \
         `qrels/test.tsv`) for `beir` and `mteb`.\n- `problems.parquet`: the source problems (keeps later releases \
         problem-disjoint).\n- `MANIFEST.json`: sha256 of every file and everything needed to rebuild \
         (`coreb verify`).\n- `regeneration/`: the regeneration kit (not a config): the LLM answers the build used, \
         its build manifest and prompts, the versions of coreb and the toolchains; with the public sources, \
         `coreb build regeneration/build.toml` rebuilds the release from it offline.\n",
    );
    s.push_str(
        "\n## Loading\n\n\
         - Hugging Face `datasets`: `load_dataset(\"<release>\")` loads `code_corpus` (the default config); \
         `load_dataset(\"<release>\", \"text2code_qrels\")` any of the eight configs (split `test`).\n\
         - BEIR: `GenericDataLoader(\"<release>/text2code\").load(split=\"test\")`.\n\
         - MTEB: each task folder carries the configs MTEB reads (`corpus`, `queries`, `default`); with the \
         coreb repository's `scripts/coreb_mteb.py`: \
         `mteb.evaluate(model, coreb_tasks(\"<release>\"))`.\n\
         - The published CoREB layout (8 configs × `release_vYYMM` splits): `coreb export --layout hf-coreb \
         <releases_dir> <out>`.\n",
    );
    s.push_str("\n## Licence\n\n`license: other`: see `LICENSE`. ");
    let platforms: Vec<String> = info
        .platforms
        .iter()
        .map(|p| {
            let (n, l) = platform_terms(*p);
            format!("{n} ({l})")
        })
        .collect();
    let _ = writeln!(
        s,
        "The problem statements come from LiveCodeBench, which collected them from {}; the original \
         statements and everything rewritten from them stay subject to those platforms' terms. Who wrote \
         the rewritten statements, summaries, distractors, queries and solutions is under Content origin \
         below; what a model wrote stays under its provider's terms. Use for evaluation and research.",
        if platforms.is_empty() { "no platform".to_owned() } else { platforms.join(", ") }
    );
    let _ = writeln!(
        s,
        "\n## Content origin\n\nAs the response store records it (MANIFEST `counts.llm_answers_written_by`), {}.",
        origin_note(&info.written_by)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qrels::{JudgedSolution, ProblemTexts, SearchQuery, qrels};
    use coreb_data::composition::{Profile, QrelsConfig, Roles};
    use coreb_data::solution::{Language, Solution, SolutionId};

    fn output_of(profile: Profile) -> QrelsOutput {
        let pid = ProblemId::from_question_id("1");
        let problems = vec![ProblemTexts {
            problem_id: pid.clone(),
            title: "T".into(),
            statement: "S".into(),
            canonical: "C".into(),
            distractors: vec!["D1".into(), "D2".into(), "D3".into(), "D4".into()],
            search_queries: vec![SearchQuery { index: 0, text: "q".into(), language: None }],
        }];
        let solutions: Vec<JudgedSolution> =
            [(Language::Python, true), (Language::Cpp, true), (Language::Go, false)]
                .into_iter()
                .map(|(l, passed)| {
                    let solution = Solution {
                        id: SolutionId::new(&pid, "m", l, 0),
                        problem_id: pid.clone(),
                        model: "m".into(),
                        language: l,
                        sample: 0,
                        code: format!("code in {l}"),
                    };
                    JudgedSolution { solution, passed }
                })
                .collect();
        qrels(
            &QrelsConfig { profile, ..QrelsConfig::default() },
            "v202503",
            &Roles { anchor: "m".into(), target: "m".into() },
            &problems,
            &solutions,
        )
    }

    fn output() -> QrelsOutput {
        output_of(Profile::Series)
    }

    #[test]
    fn beir_files_parse_back() {
        let out = output();
        let files = beir(Task::Text2Code, "v202503", &out);
        let corpus: Vec<serde_json::Value> =
            files.corpus.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(corpus.len(), 3);
        assert_eq!(corpus[0]["_id"], "code_v202503_lcb_1_m_cpp_0");
        let queries: Vec<serde_json::Value> =
            files.queries.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(queries.len(), out.tasks[&Task::Text2Code].queries.len());
        let mut lines = files.qrels.lines();
        assert_eq!(lines.next(), Some("query-id\tcorpus-id\tscore"));
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
        assert!(rows.iter().all(|f| f.len() == 3 && f[2] == "2"), "positives only: {rows:?}");
        let jsonl: Vec<serde_json::Value> =
            files.qrels_jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(jsonl.len(), rows.len());
        assert_eq!(
            (
                jsonl[0]["query-id"].as_str(),
                jsonl[0]["corpus-id"].as_str(),
                jsonl[0]["score"].as_i64()
            ),
            (Some(rows[0][0]), Some(rows[0][1]), Some(2))
        );
        assert!(
            files.card.contains("config_name: corpus")
                && files.card.contains("path: qrels/test.jsonl")
        );
        let graded = &out.tasks[&Task::Text2Code].qrels;
        assert_eq!(rows.len(), graded.iter().filter(|r| r.relevance.0 == 2).count());
        assert!(
            graded.iter().any(|r| r.relevance.0 == 1),
            "the hard negatives stay in the Parquet qrels"
        );
        let c2t = beir(Task::Code2Text, "v202503", &out);
        assert_eq!(
            c2t.corpus.lines().count(),
            5,
            "full and four distractors: the series' summaries are queries, not documents"
        );
        // The series' code2code with one model: only `cross_lang`, the cpp → python pair; cpp,
        // an anchor no query judges, leaves the corpus; queries name their own document.
        let c2c = beir(Task::Code2Code, "v202503", &out);
        assert_eq!(c2c.corpus.lines().count(), 2);
        assert!(!c2c.corpus.contains("code_v202503_lcb_1_m_cpp_0"));
        assert!(c2c.queries.lines().all(|q| {
            serde_json::from_str::<serde_json::Value>(q).unwrap()["source_doc_id"].is_string()
        }));
        // coreb's profile: the anchors are never judged, and the corpus leaves them out.
        let old = output_of(Profile::Coreb);
        assert_eq!(
            beir(Task::Code2Text, "v202503", &old).corpus.lines().count(),
            6,
            "full, canonical and four distractors"
        );
        let c2c = beir(Task::Code2Code, "v202503", &old);
        let ids: Vec<serde_json::Value> = c2c
            .corpus
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["_id"].clone())
            .collect();
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
        let info = CardInfo {
            version: "v202503",
            window: &window,
            models: vec!["m".into()],
            problems: 1,
            tool_version: "0.1.0",
            platforms: vec![Platform::Atcoder],
            written_by: coreb_llm::run::WrittenBy { endpoint: 0, authored: 3, imported: 0 },
            config_bytes: [("code_corpus", 1234)].into_iter().collect(),
        };
        let card = dataset_card(&info, &out);
        assert!(card.contains("  - name: test\n    num_bytes: 1234\n    num_examples:"), "{card}");
        assert!(card.starts_with("---\n"));
        assert_eq!(card.matches("config_name:").count(), 16, "8 configs and their dataset_info");
        for key in [
            "pretty_name: CoREB v202503\n",
            "license_name: coreb-release-terms\n",
            "license_link: LICENSE\n",
            "- n<1K\n",
            "  default: true\n",
        ] {
            assert!(card.contains(key), "{key}: {card}");
        }
        assert!(
            card.contains("AtCoder (https://atcoder.jp/tos)") && !card.contains("LeetCode"),
            "{card}"
        );
        let license = license_text(&info);
        assert!(
            license.contains("AtCoder: https://atcoder.jp/tos") && license.contains("   - m\n"),
            "{license}"
        );
        assert!(card.contains("| code_corpus | 3 | 2 | 1 |"), "{card}");
        assert!(card.contains("| code2code candidates | 2 | | |"), "{card}");
        assert!(card.contains("2025-01-01 … 2025-03-31"));
        assert!(
            card.contains("all 3 of the LLM stages' answers")
                && card.contains("written by hand")
                && !card.contains("generated by the models"),
            "{card}"
        );
        let mixed =
            origin_note(&coreb_llm::run::WrittenBy { endpoint: 5, authored: 0, imported: 2 });
        assert!(
            mixed.contains("5 written by the models")
                && mixed.contains("2 imported")
                && !mixed.contains("by hand"),
            "{mixed}"
        );
    }

    #[test]
    fn disjointness() {
        let ids: BTreeSet<ProblemId> =
            [ProblemId::from_question_id("1"), ProblemId::from_question_id("2")].into();
        let earlier = vec![("v202501".to_owned(), [ProblemId::from_question_id("3")].into())];
        assert_eq!(check_disjoint(&ids, &earlier), Ok(()));
        let earlier = vec![("v202502".to_owned(), [ProblemId::from_question_id("2")].into())];
        let err = check_disjoint(&ids, &earlier).unwrap_err();
        assert!(err.to_string().contains("v202502") && err.to_string().contains("lcb_2"));
    }
}
