//! A coreb release's tables in the published CoREB dataset's shape (`hq-bench/coreb`,
//! `coreb_runner/runners/query_corpus_dataset_maker.py`): its column names, its subtask
//! names and its derived code2text subtasks. Pure: tables in, tables out.
//!
//! What each published name holds here:
//! - every config: a `meta` struct (`source_problem_id`, and per config what the published
//!   rows carry: `passed`; `is_noise_sample`, `original_problem_id`; `anchor_code_id`,
//!   `original_query_type`, `text_type`, `pair_type`, `negative_problem_id`), no timestamps;
//! - text2code queries: `query_type` (`language_agnostic`/`language_specific`) and
//!   `sub_query_type` (`abbreviated`, `full_description`, or the search query's type);
//! - code2code and code2text queries: `anchor_language`, `anchor_model` (the query code's);
//! - `language_constraint` is `none` where coreb says `any`;
//! - code2text: coreb's `describe` (code → its problem's descriptions; both the full statement
//!   and the canonical summary are positives, both are documents of the text corpus) is
//!   published as `c2t_full_retro_<lang>` and again as `c2t_canonical_retro_<lang>`; one
//!   anchor per problem (Python first, then the smallest code id) gives `c2t_full_retro_any`
//!   and `c2t_canonical_retro_any`; `c2t_match` pairs the anchor with its own problem's full
//!   and canonical texts (`label` 1) and with those of the next problem in id order (`label`
//!   0), relevance 2 for a match and 0 otherwise. The reference keeps the summary inside the
//!   full text's row (so its two subtasks share one positive document) and judges a match
//!   with relevance 1, which its own `relevance_level = 2` counts as not relevant.

use std::collections::{BTreeMap, BTreeSet};

use crate::tables::columns::{Column, Values, find};

/// Why a release's table cannot be exported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{config}`: {reason}")]
pub struct ShapeError {
    /// The config.
    pub config: String,
    /// What is wrong.
    pub reason: String,
}

fn strings<'a>(config: &str, cols: &'a [Column], name: &str) -> Result<&'a [Option<String>], ShapeError> {
    match find(cols, name) {
        Some(Values::Str(v)) => Ok(v),
        _ => Err(ShapeError { config: config.into(), reason: format!("no string column `{name}`") }),
    }
}

fn ints<'a>(config: &str, cols: &'a [Column], name: &str) -> Result<&'a [Option<i64>], ShapeError> {
    match find(cols, name) {
        Some(Values::Int(v)) => Ok(v),
        _ => Err(ShapeError { config: config.into(), reason: format!("no integer column `{name}`") }),
    }
}

fn bools<'a>(config: &str, cols: &'a [Column], name: &str) -> Result<&'a [Option<bool>], ShapeError> {
    match find(cols, name) {
        Some(Values::Bool(v)) => Ok(v),
        _ => Err(ShapeError { config: config.into(), reason: format!("no boolean column `{name}`") }),
    }
}

fn some(v: &[Option<String>], i: usize) -> String {
    v[i].clone().unwrap_or_default()
}

/// The published CoREB name of a coreb subtask (`language`: coreb's `language_constraint`).
pub fn published_subtask(task: &str, subtask: &str, language: &str) -> Result<String, String> {
    Ok(match (task, subtask) {
        ("text2code", "canonical" | "full") => format!("t2c_{subtask}_retro_{language}"),
        ("text2code", "search") => format!("t2c_search_{language}"),
        ("code2code", "mono_lang" | "cross_lang" | "cross_model") => format!("c2c_{subtask}"),
        ("code2text", "describe") => format!("c2t_full_retro_{language}"),
        _ => return Err(format!("no published CoREB name for subtask `{subtask}` of task `{task}`")),
    })
}

/// `code_corpus` with the published `meta` (`source_problem_id`, `passed`).
pub fn code_corpus(cols: &[Column]) -> Result<Vec<Column>, ShapeError> {
    let c = "code_corpus";
    let meta = Column::structure(
        "meta",
        vec![Column::str("source_problem_id", strings(c, cols, "problem_id")?.to_vec()), Column::bool("passed", bools(c, cols, "passed")?.to_vec())],
    );
    Ok(cols.iter().cloned().chain([meta]).collect())
}

/// `text_corpus` with the published `meta` (`source_problem_id`, `is_noise_sample` for a
/// distractor, `original_problem_id`: the problem a distractor imitates).
pub fn text_corpus(cols: &[Column]) -> Result<Vec<Column>, ShapeError> {
    let c = "text_corpus";
    let (problem, kind) = (strings(c, cols, "problem_id")?, strings(c, cols, "kind")?);
    let noise: Vec<Option<bool>> = kind.iter().map(|k| Some(k.as_deref() == Some("distractor"))).collect();
    let original = problem.iter().zip(&noise).map(|(p, n)| if *n == Some(true) { p.clone() } else { None }).collect();
    let meta = Column::structure(
        "meta",
        vec![Column::str("source_problem_id", problem.to_vec()), Column::bool("is_noise_sample", noise), Column::str("original_problem_id", original)],
    );
    Ok(cols.iter().cloned().chain([meta]).collect())
}

/// The code corpus and text corpus facts a query's published columns need.
#[derive(Debug, Default)]
pub struct Corpora {
    /// code id → (language, model, code).
    code: BTreeMap<String, (String, String, String)>,
    /// (problem, kind) → (text id, text), for `full` and `canonical`.
    texts: BTreeMap<(String, String), (String, String)>,
}

impl Corpora {
    /// Index the two corpus configs.
    pub fn new(code: &[Column], text: &[Column]) -> Result<Self, ShapeError> {
        let (ids, langs, models, codes) =
            (strings("code_corpus", code, "code_id")?, strings("code_corpus", code, "language")?, strings("code_corpus", code, "model")?, strings("code_corpus", code, "code")?);
        let code = (0..ids.len()).map(|i| (some(ids, i), (some(langs, i), some(models, i), some(codes, i)))).collect();
        let (tids, kinds, problems, texts) =
            (strings("text_corpus", text, "text_id")?, strings("text_corpus", text, "kind")?, strings("text_corpus", text, "problem_id")?, strings("text_corpus", text, "text")?);
        let texts = (0..tids.len())
            .filter(|&i| matches!(kinds[i].as_deref(), Some("full" | "canonical")))
            .map(|i| ((some(problems, i), some(kinds, i)), (some(tids, i), some(texts, i))))
            .collect();
        Ok(Corpora { code, texts })
    }
}

/// A query of a coreb release.
#[derive(Debug, Clone, PartialEq)]
struct QueryRow {
    id: String,
    query: String,
    task: String,
    subtask: String,
    language: String,
    problem: String,
    source_doc: Option<String>,
    relevant: i64,
}

/// A query in the published shape.
#[derive(Debug, Clone, Default, PartialEq)]
struct Published {
    id: String,
    query: String,
    task: String,
    subtask: String,
    language_constraint: String,
    problem: String,
    source_doc: Option<String>,
    relevant: i64,
    query_type: Option<String>,
    sub_query_type: Option<String>,
    anchor_language: Option<String>,
    anchor_model: Option<String>,
    text_type: Option<String>,
    // c2t_match only.
    pair: Option<Pair>,
}

#[derive(Debug, Clone, PartialEq)]
struct Pair {
    text_id: String,
    text: String,
    label: i64,
    negative_problem: Option<String>,
}

fn query_rows(config: &str, cols: &[Column]) -> Result<Vec<QueryRow>, ShapeError> {
    let s = |name| strings(config, cols, name);
    let (id, query, task, subtask, lang, problem, doc) =
        (s("query_id")?, s("query")?, s("task")?, s("subtask")?, s("language_constraint")?, s("source_problem_id")?, s("source_doc_id")?);
    let relevant = ints(config, cols, "num_relevant_docs")?;
    Ok((0..id.len())
        .map(|i| QueryRow {
            id: some(id, i),
            query: some(query, i),
            task: some(task, i),
            subtask: some(subtask, i),
            language: some(lang, i),
            problem: some(problem, i),
            source_doc: doc[i].clone(),
            relevant: relevant[i].unwrap_or(0),
        })
        .collect())
}

/// A judgement: (query id, doc id, relevance).
pub type Judgement = (String, String, i64);

fn qrel_rows(config: &str, cols: &[Column]) -> Result<Vec<Judgement>, ShapeError> {
    let (q, d, r) = (strings(config, cols, "query_id")?, strings(config, cols, "doc_id")?, ints(config, cols, "relevance")?);
    Ok((0..q.len()).map(|i| (some(q, i), some(d, i), r[i].unwrap_or(0))).collect())
}

fn constraint(language: &str) -> String {
    if language == "any" { "none".into() } else { language.into() }
}

/// One task's queries and qrels in the published shape, and the derived code2text subtasks.
pub fn task(task: &str, version: &str, queries: &[Column], qrels: &[Column], corpora: &Corpora) -> Result<(Vec<Column>, Vec<Column>), ShapeError> {
    let qconfig = format!("{task}_queries");
    let rows = query_rows(&qconfig, queries)?;
    let mut judgements = qrel_rows(&format!("{task}_qrels"), qrels)?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let subtask = published_subtask(&row.task, &row.subtask, &row.language).map_err(|reason| ShapeError { config: qconfig.clone(), reason: format!("query `{}`: {reason}", row.id) })?;
        let anchor = row.source_doc.as_ref().and_then(|d| corpora.code.get(d));
        let mut p = Published {
            id: row.id.clone(),
            query: row.query.clone(),
            task: row.task.clone(),
            subtask,
            language_constraint: constraint(&row.language),
            problem: row.problem.clone(),
            source_doc: row.source_doc.clone(),
            relevant: row.relevant,
            anchor_language: anchor.map(|a| a.0.clone()),
            anchor_model: anchor.map(|a| a.1.clone()),
            ..Published::default()
        };
        if task == "text2code" {
            p.query_type = Some(if row.language == "any" { "language_agnostic" } else { "language_specific" }.into());
            p.sub_query_type = Some(match row.subtask.as_str() {
                "canonical" => "abbreviated".into(),
                "full" => "full_description".into(),
                other => other.into(),
            });
        }
        if task == "code2text" {
            p.text_type = Some("full_description".into());
        }
        out.push(p);
    }
    if task == "code2text" {
        derive_code2text(version, &mut out, &mut judgements, corpora);
    }
    Ok((query_columns(task, &out), qrel_columns(&judgements)))
}

/// The code2text subtasks the published dataset has and coreb derives from `describe`.
fn derive_code2text(version: &str, out: &mut Vec<Published>, judgements: &mut Vec<Judgement>, corpora: &Corpora) {
    let mut by_query: BTreeMap<&str, Vec<(String, i64)>> = BTreeMap::new();
    for (q, d, r) in judgements.iter() {
        by_query.entry(q.as_str()).or_default().push((d.clone(), *r));
    }
    let mut derived: Vec<(Published, Vec<(String, i64)>)> = Vec::new();
    let copy = |base: &Published, id: String, subtask: String, text_type: &str| Published { id, subtask, text_type: Some(text_type.into()), ..base.clone() };
    // Per language: the canonical twin of every `describe` query (`c2t_full_retro_<lang>`).
    for base in out.iter() {
        let subtask = base.subtask.replacen("c2t_full_retro_", "c2t_canonical_retro_", 1);
        let q = copy(base, format!("{}_canonical", base.id), subtask, "canonical_description");
        derived.push((q, by_query.get(base.id.as_str()).cloned().unwrap_or_default()));
    }
    // Per problem: one anchor (Python first, then the smallest code id).
    let mut anchors: BTreeMap<&str, &Published> = BTreeMap::new();
    for p in out.iter() {
        let rank = |q: &Published| (q.anchor_language.as_deref() != Some("python"), q.source_doc.clone());
        let e = anchors.entry(p.problem.as_str()).or_insert(p);
        if rank(p) < rank(e) {
            *e = p;
        }
    }
    let problems: Vec<&str> = anchors.keys().copied().collect();
    for (i, (&problem, &anchor)) in anchors.iter().enumerate() {
        let qrels = by_query.get(anchor.id.as_str()).cloned().unwrap_or_default();
        for (kind, text_type) in [("full", "full_description"), ("canonical", "canonical_description")] {
            let mut q = copy(anchor, format!("c2t_{version}_{problem}_{kind}_retro_any"), format!("c2t_{kind}_retro_any"), text_type);
            q.language_constraint = "none".into();
            derived.push((q, qrels.clone()));
        }
        let other = problems.get((i + 1) % problems.len()).copied().filter(|o| *o != problem);
        for kind in ["full", "canonical"] {
            let pairs = [(Some(problem), 1, "pos"), (other, 0, "neg")];
            for (of, label, tag) in pairs {
                let Some((text_id, text)) = of.and_then(|o| corpora.texts.get(&(o.to_owned(), kind.to_owned()))) else { continue };
                let mut q = copy(anchor, format!("c2t_{version}_{problem}_match_{kind}_{tag}"), "c2t_match".into(), kind);
                q.language_constraint = "none".into();
                q.relevant = label;
                q.pair = Some(Pair { text_id: text_id.clone(), text: text.clone(), label, negative_problem: (label == 0).then(|| of.unwrap_or_default().to_owned()) });
                derived.push((q, vec![(text_id.clone(), 2 * label)]));
            }
        }
    }
    for (q, qrels) in derived {
        judgements.extend(qrels.into_iter().map(|(d, r)| (q.id.clone(), d, r)));
        out.push(q);
    }
}

fn col<T: Clone>(rows: &[Published], f: impl Fn(&Published) -> T) -> Vec<T> {
    rows.iter().map(f).collect()
}

/// The published columns of one task's queries (the columns that task's published rows carry).
fn query_columns(task: &str, rows: &[Published]) -> Vec<Column> {
    let mut cols = vec![
        Column::str("query_id", col(rows, |r| Some(r.id.clone()))),
        Column::str("query", col(rows, |r| Some(r.query.clone()))),
        Column::str("split", col(rows, |r| Some(r.task.clone()))),
        Column::str("subtask", col(rows, |r| Some(r.subtask.clone()))),
        Column::str("language_constraint", col(rows, |r| Some(r.language_constraint.clone()))),
    ];
    if task == "text2code" {
        cols.push(Column::str("query_type", col(rows, |r| r.query_type.clone())));
        cols.push(Column::str("sub_query_type", col(rows, |r| r.sub_query_type.clone())));
    } else {
        cols.push(Column::str("anchor_language", col(rows, |r| r.anchor_language.clone())));
        cols.push(Column::str("anchor_model", col(rows, |r| r.anchor_model.clone())));
    }
    cols.push(Column::str("source_problem_id", col(rows, |r| Some(r.problem.clone()))));
    cols.push(Column::str("source_doc_id", col(rows, |r| r.source_doc.clone())));
    cols.push(Column::int("num_relevant_docs", col(rows, |r| Some(r.relevant))));
    if task == "code2text" {
        cols.push(Column::str("code", col(rows, |r| r.pair.as_ref().map(|_| r.query.clone()))));
        cols.push(Column::str("text_id", col(rows, |r| r.pair.as_ref().map(|p| p.text_id.clone()))));
        cols.push(Column::str("text", col(rows, |r| r.pair.as_ref().map(|p| p.text.clone()))));
        cols.push(Column::int("label", col(rows, |r| r.pair.as_ref().map(|p| p.label))));
        cols.push(Column::str("text_type", col(rows, |r| r.pair.as_ref().map(|_| r.text_type.clone().unwrap_or_default()))));
    }
    let mut meta = vec![Column::str("source_problem_id", col(rows, |r| Some(r.problem.clone())))];
    match task {
        "text2code" => meta.push(Column::str("original_query_type", col(rows, |r| r.sub_query_type.clone()))),
        _ => meta.push(Column::str("anchor_code_id", col(rows, |r| r.source_doc.clone()))),
    }
    if task == "code2text" {
        meta.push(Column::str("text_type", col(rows, |r| r.pair.is_none().then(|| r.text_type.clone()).flatten())));
        meta.push(Column::str("pair_type", col(rows, |r| r.pair.as_ref().map(|p| if p.label == 1 { "positive".into() } else { "negative".into() }))));
        meta.push(Column::str("negative_problem_id", col(rows, |r| r.pair.as_ref().and_then(|p| p.negative_problem.clone()))));
    }
    cols.push(Column::structure("meta", meta));
    cols
}

fn qrel_columns(judgements: &[Judgement]) -> Vec<Column> {
    vec![
        Column::str("query_id", judgements.iter().map(|j| Some(j.0.clone())).collect()),
        Column::str("doc_id", judgements.iter().map(|j| Some(j.1.clone())).collect()),
        Column::int("relevance", judgements.iter().map(|j| Some(j.2)).collect()),
    ]
}

/// The subtask names of a task's published queries, sorted.
pub fn subtasks(cols: &[Column]) -> BTreeSet<String> {
    match find(cols, "subtask") {
        Some(Values::Str(v)) => v.iter().flatten().cloned().collect(),
        _ => BTreeSet::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<Option<String>> {
        v.iter().map(|x| Some((*x).to_owned())).collect()
    }

    fn corpora() -> Corpora {
        let code = vec![
            Column::str("code_id", s(&["c_p1_cpp", "c_p1_py", "c_p2_go"])),
            Column::str("code", s(&["int main", "print", "package main"])),
            Column::str("language", s(&["cpp", "python", "go"])),
            Column::str("model", s(&["m1", "m2", "m1"])),
        ];
        let text = vec![
            Column::str("text_id", s(&["t_p1_full", "t_p1_canonical", "t_p1_d0", "t_p2_full", "t_p2_canonical"])),
            Column::str("text", s(&["P1 full", "P1 short", "noise", "P2 full", "P2 short"])),
            Column::str("kind", s(&["full", "canonical", "distractor", "full", "canonical"])),
            Column::str("problem_id", s(&["p1", "p1", "p1", "p2", "p2"])),
        ];
        Corpora::new(&code, &text).unwrap()
    }

    fn describe() -> (Vec<Column>, Vec<Column>) {
        let q = vec![
            Column::str("query_id", s(&["c2t_v1_c_p1_cpp", "c2t_v1_c_p1_py", "c2t_v1_c_p2_go"])),
            Column::str("query", s(&["int main", "print", "package main"])),
            Column::str("task", s(&["code2text"; 3])),
            Column::str("subtask", s(&["describe"; 3])),
            Column::str("language_constraint", s(&["cpp", "python", "go"])),
            Column::str("source_problem_id", s(&["p1", "p1", "p2"])),
            Column::str("source_doc_id", s(&["c_p1_cpp", "c_p1_py", "c_p2_go"])),
            Column::int("num_relevant_docs", vec![Some(2); 3]),
        ];
        let r = vec![
            Column::str("query_id", s(&["c2t_v1_c_p1_cpp", "c2t_v1_c_p1_cpp", "c2t_v1_c_p1_cpp", "c2t_v1_c_p1_py", "c2t_v1_c_p1_py", "c2t_v1_c_p2_go", "c2t_v1_c_p2_go"])),
            Column::str("doc_id", s(&["t_p1_full", "t_p1_canonical", "t_p1_d0", "t_p1_full", "t_p1_canonical", "t_p2_full", "t_p2_canonical"])),
            Column::int("relevance", [2, 2, 1, 2, 2, 2, 2].map(Some).to_vec()),
        ];
        (q, r)
    }

    #[test]
    fn code2text_gets_the_published_subtasks_with_coreb_judgements() {
        let (q, r) = describe();
        let (queries, qrels) = task("code2text", "v1", &q, &r, &corpora()).unwrap();
        let names: Vec<String> = subtasks(&queries).into_iter().collect();
        assert_eq!(
            names,
            [
                "c2t_canonical_retro_any",
                "c2t_canonical_retro_cpp",
                "c2t_canonical_retro_go",
                "c2t_canonical_retro_python",
                "c2t_full_retro_any",
                "c2t_full_retro_cpp",
                "c2t_full_retro_go",
                "c2t_full_retro_python",
                "c2t_match"
            ]
        );
        let Some(Values::Str(ids)) = find(&queries, "query_id") else { panic!() };
        // The problem's anchor is its Python code; the `any` queries copy its judgements.
        let j = qrel_rows("q", &qrels).unwrap();
        let of = |id: &str| j.iter().filter(|x| x.0 == id).map(|x| (x.1.as_str(), x.2)).collect::<Vec<_>>();
        assert_eq!(of("c2t_v1_p1_full_retro_any"), [("t_p1_full", 2), ("t_p1_canonical", 2)]);
        assert_eq!(of("c2t_v1_c_p1_cpp_canonical"), [("t_p1_full", 2), ("t_p1_canonical", 2), ("t_p1_d0", 1)]);
        // Match pairs: own texts relevant (2), the next problem's texts not (0); p2 pairs with p1.
        assert_eq!(of("c2t_v1_p1_match_full_pos"), [("t_p1_full", 2)]);
        assert_eq!(of("c2t_v1_p1_match_canonical_neg"), [("t_p2_canonical", 0)]);
        assert_eq!(of("c2t_v1_p2_match_full_neg"), [("t_p1_full", 0)]);
        let row = ids.iter().position(|x| x.as_deref() == Some("c2t_v1_p1_full_retro_any")).unwrap();
        let Some(Values::Str(lang)) = find(&queries, "anchor_language") else { panic!() };
        assert_eq!(lang[row].as_deref(), Some("python"));
        let Some(Values::Int(labels)) = find(&queries, "label") else { panic!() };
        assert_eq!(labels.iter().flatten().filter(|l| **l == 1).count(), 4);
        assert_eq!(labels.iter().flatten().filter(|l| **l == 0).count(), 4);
        // Ids stay unique.
        let unique: BTreeSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
    }

    #[test]
    fn text2code_queries_carry_query_types_and_none_for_any() {
        let q = vec![
            Column::str("query_id", s(&["t1", "t2"])),
            Column::str("query", s(&["x", "y"])),
            Column::str("task", s(&["text2code"; 2])),
            Column::str("subtask", s(&["canonical", "full"])),
            Column::str("language_constraint", s(&["any", "go"])),
            Column::str("source_problem_id", s(&["p1", "p1"])),
            Column::str("source_doc_id", vec![None, None]),
            Column::int("num_relevant_docs", vec![Some(1), Some(1)]),
        ];
        let r = vec![Column::str("query_id", vec![]), Column::str("doc_id", vec![]), Column::int("relevance", vec![])];
        let (queries, _) = task("text2code", "v1", &q, &r, &corpora()).unwrap();
        assert_eq!(find(&queries, "subtask"), Some(&Values::Str(s(&["t2c_canonical_retro_any", "t2c_full_retro_go"]))));
        assert_eq!(find(&queries, "language_constraint"), Some(&Values::Str(s(&["none", "go"]))));
        assert_eq!(find(&queries, "query_type"), Some(&Values::Str(s(&["language_agnostic", "language_specific"]))));
        assert_eq!(find(&queries, "sub_query_type"), Some(&Values::Str(s(&["abbreviated", "full_description"]))));
        assert!(find(&queries, "anchor_model").is_none());
    }

    #[test]
    fn an_unknown_subtask_is_an_error_naming_the_query() {
        let (mut q, r) = describe();
        q[3] = Column::str("subtask", s(&["describe", "summarise", "describe"]));
        let err = task("code2text", "v1", &q, &r, &corpora()).unwrap_err().to_string();
        assert!(err.contains("c2t_v1_c_p1_py") && err.contains("summarise"), "{err}");
    }

    #[test]
    fn subtask_names() {
        assert_eq!(published_subtask("text2code", "canonical", "any").unwrap(), "t2c_canonical_retro_any");
        assert_eq!(published_subtask("text2code", "search", "go").unwrap(), "t2c_search_go");
        assert_eq!(published_subtask("code2code", "cross_model", "any").unwrap(), "c2c_cross_model");
        assert_eq!(published_subtask("code2text", "describe", "ruby").unwrap(), "c2t_full_retro_ruby");
    }
}
