//! A coreb release's tables in the published CoREB dataset's shape (`hq-bench/coreb`, made by
//! `coreb_runner/runners/query_corpus_dataset_maker.py`): its column names, its subtask
//! names, its `meta` fields and its `c2t_match` pairs. Pure: tables in, tables out.
//!
//! What each published name holds here:
//! - every config: a `meta` struct with the fields the published rows carry: `passed`;
//!   `is_noise_sample`, `original_problem_id`; `anchor_code_id`, `original_query_type`,
//!   `num_relevant_docs`, `models_in_relevant_docs`, `is_multi_model` (search),
//!   `target_languages`, `num_target_solutions` (`cross_lang`, `cross_model`), `task_type`,
//!   `text_type`, `available_languages`, `pair_type`, `negative_problem_id` (code2text), and
//!   `created_at`, `generator_version` from the release ([`ReleaseFacts`]: its window and the
//!   coreb that built it, never the clock);
//! - text2code queries: `query_type` (`language_agnostic`/`language_specific`) and
//!   `sub_query_type` (`abbreviated`, `full_description`, or the search query's type:
//!   `title_search`, `description_search`, `algorithm_search`);
//! - code2code and code2text queries: `anchor_language`, `anchor_model` (the query code's);
//! - `language_constraint` is `none` where coreb says `any`;
//! - code2text: a release composed with the series' `full_retro`/`canonical_retro` keeps them
//!   (`c2t_<subtask>_<any|lang>`); one composed with coreb's `describe` (both true texts
//!   positive) is published as `c2t_full_retro_<lang>` and again as `c2t_canonical_retro_<lang>`,
//!   with one anchor per problem (Python first, then the smallest code id) for the `_any`
//!   subtasks. `c2t_match` pairs each problem's `c2t_full_retro_any` code with its own full and
//!   canonical texts (`label` 1) and with those of another problem drawn from the problem's id
//!   (`label` 0, `pair_type` `negative_random`), relevance 2 for a match and 0 otherwise: the
//!   series judges a match 1, which its own `relevance_level = 2` counts as not relevant.

use std::collections::{BTreeMap, BTreeSet};

use xxhash_rust::xxh3::xxh3_64;

use coreb_data::tables::columns::{Column, Values, find};
use coreb_stages::queries::QueryType;

/// Why a release's table cannot be exported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{config}`: {reason}")]
pub(crate) struct ShapeError {
    /// The config.
    pub(crate) config: String,
    /// What is wrong.
    pub(crate) reason: String,
}

/// Makes the readers of a typed column, one a row: `reader: Variant of Values, its values'
/// type, what the error calls it`. A reader gives column `name` of `config`'s table, or the
/// error that there is no such column of that type.
macro_rules! column_readers {
    ($($reader:ident: $variant:ident, $t:ty, $kind:literal;)*) => {$(
        fn $reader<'a>(
            config: &str,
            cols: &'a [Column],
            name: &str,
        ) -> Result<&'a [Option<$t>], ShapeError> {
            match find(cols, name) {
                Some(Values::$variant(v)) => Ok(v),
                _ => Err(ShapeError {
                    config: config.into(),
                    reason: format!(concat!("no ", $kind, " column `{}`"), name),
                }),
            }
        }
    )*};
}

column_readers! {
    strings: Str, String, "string";
    ints: Int, i64, "integer";
    bools: Bool, bool, "boolean";
}

/// The string columns `names` of `config`'s table, in that order.
fn string_columns<'a, const N: usize>(
    config: &str,
    cols: &'a [Column],
    names: [&str; N],
) -> Result<[&'a [Option<String>]; N], ShapeError> {
    let mut found: [&[Option<String>]; N] = [&[]; N];
    for (column, name) in found.iter_mut().zip(names) {
        *column = strings(config, cols, name)?;
    }
    Ok(found)
}

fn some(v: &[Option<String>], i: usize) -> String {
    v[i].clone().unwrap_or_default()
}

/// The published CoREB name of a coreb subtask (`language`: coreb's `language_constraint`).
fn published_subtask(task: &str, subtask: &str, language: &str) -> Result<String, String> {
    Ok(match (task, subtask) {
        ("text2code", "canonical" | "full") => format!("t2c_{subtask}_retro_{language}"),
        ("text2code", "search") => format!("t2c_search_{language}"),
        ("code2code", "mono_lang" | "cross_lang" | "cross_model") => format!("c2c_{subtask}"),
        ("code2text", "describe") => format!("c2t_full_retro_{language}"),
        ("code2text", "full_retro" | "canonical_retro") => format!("c2t_{subtask}_{language}"),
        _ => {
            return Err(format!(
                "no published CoREB name for subtask `{subtask}` of task `{task}`"
            ));
        }
    })
}

/// `code_corpus` with the published `meta` (`source_problem_id`, `passed`).
pub(crate) fn code_corpus(cols: &[Column]) -> Result<Vec<Column>, ShapeError> {
    let c = "code_corpus";
    let meta = Column::structure(
        "meta",
        vec![
            Column::str("source_problem_id", strings(c, cols, "problem_id")?.to_vec()),
            Column::bool("passed", bools(c, cols, "passed")?.to_vec()),
        ],
    );
    Ok(cols.iter().cloned().chain([meta]).collect())
}

/// `text_corpus` with the published `meta` (`source_problem_id`, `is_noise_sample` for a
/// distractor, `original_problem_id`: the problem a distractor imitates).
pub(crate) fn text_corpus(cols: &[Column]) -> Result<Vec<Column>, ShapeError> {
    let c = "text_corpus";
    let (problem, kind) = (strings(c, cols, "problem_id")?, strings(c, cols, "kind")?);
    let noise: Vec<Option<bool>> =
        kind.iter().map(|k| Some(k.as_deref() == Some("distractor"))).collect();
    let original = problem
        .iter()
        .zip(&noise)
        .map(|(p, n)| if *n == Some(true) { p.clone() } else { None })
        .collect();
    let meta = Column::structure(
        "meta",
        vec![
            Column::str("source_problem_id", problem.to_vec()),
            Column::bool("is_noise_sample", noise),
            Column::str("original_problem_id", original),
        ],
    );
    Ok(cols.iter().cloned().chain([meta]).collect())
}

/// The code corpus and text corpus facts a query's published columns need.
#[derive(Debug, Default)]
pub(crate) struct Corpora {
    /// code id → (language, model, code).
    code: BTreeMap<String, (String, String, String)>,
    /// (problem, kind) → (text id, text), for `full` and `canonical`.
    texts: BTreeMap<(String, String), (String, String)>,
    /// problem → its canonical summary (the text of its `canonical`/`any` text2code query),
    /// for `c2t_match` where the summary is no document.
    summaries: BTreeMap<String, String>,
}

impl Corpora {
    /// Index the two corpus configs.
    pub(crate) fn new(code: &[Column], text: &[Column]) -> Result<Self, ShapeError> {
        let [ids, langs, models, codes] =
            string_columns("code_corpus", code, ["code_id", "language", "model", "code"])?;
        let code = (0..ids.len())
            .map(|i| (some(ids, i), (some(langs, i), some(models, i), some(codes, i))))
            .collect();
        let [tids, kinds, problems, texts] =
            string_columns("text_corpus", text, ["text_id", "kind", "problem_id", "text"])?;
        let texts = (0..tids.len())
            .filter(|&i| matches!(kinds[i].as_deref(), Some("full" | "canonical")))
            .map(|i| ((some(problems, i), some(kinds, i)), (some(tids, i), some(texts, i))))
            .collect();
        Ok(Corpora { code, texts, summaries: BTreeMap::new() })
    }

    /// Take each problem's summary from the text2code queries.
    pub(crate) fn with_summaries(
        mut self,
        text2code_queries: &[Column],
    ) -> Result<Self, ShapeError> {
        let [subtask, language, problem, query] = string_columns(
            "text2code_queries",
            text2code_queries,
            ["subtask", "language_constraint", "source_problem_id", "query"],
        )?;
        for i in 0..subtask.len() {
            if subtask[i].as_deref() == Some("canonical") && language[i].as_deref() == Some("any") {
                self.summaries.insert(some(problem, i), some(query, i));
            }
        }
        Ok(self)
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
    meta: Meta,
    // c2t_match only.
    pair: Option<Pair>,
}

/// The `meta` fields a published row carries beyond its problem and anchor (null where its
/// subtask has none).
#[derive(Debug, Clone, Default, PartialEq)]
struct Meta {
    /// text2code search: the models among the positives, sorted.
    models_in_relevant_docs: Option<Vec<String>>,
    /// code2code `cross_lang` and `cross_model`: the positives' languages, sorted.
    target_languages: Option<Vec<String>>,
    /// code2code `cross_lang` and `cross_model`: how many positives.
    num_target_solutions: Option<i64>,
    /// code2text: `description_retrieval` (`any`) or `cross_language_invariance`.
    task_type: Option<String>,
    /// code2text per language: the languages the problem has a query in, sorted.
    available_languages: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq)]
struct Pair {
    text_id: String,
    text: String,
    label: i64,
    negative_problem: Option<String>,
}

/// What a published row records of the release itself, the same in every row: never the
/// clock, so a re-export is byte-identical.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReleaseFacts {
    /// `created_at`: the end of the release's contest window, as an ISO 8601 instant.
    pub(crate) created_at: String,
    /// `generator_version`: the coreb that built the release (`coreb <version>`).
    pub(crate) generator_version: String,
}

fn query_rows(config: &str, cols: &[Column]) -> Result<Vec<QueryRow>, ShapeError> {
    let [id, query, task, subtask, lang, problem, doc] = string_columns(
        config,
        cols,
        [
            "query_id",
            "query",
            "task",
            "subtask",
            "language_constraint",
            "source_problem_id",
            "source_doc_id",
        ],
    )?;
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
type Judgement = (String, String, i64);

fn qrel_rows(config: &str, cols: &[Column]) -> Result<Vec<Judgement>, ShapeError> {
    let (q, d, r) = (
        strings(config, cols, "query_id")?,
        strings(config, cols, "doc_id")?,
        ints(config, cols, "relevance")?,
    );
    Ok((0..q.len()).map(|i| (some(q, i), some(d, i), r[i].unwrap_or(0))).collect())
}

fn constraint(language: &str) -> String {
    if language == "any" { "none".into() } else { language.into() }
}

/// The type of a search query (`t2c_<version>_<problem>_search<index>_<constraint>`): the
/// name of the [`QueryType`] at its index.
fn search_type(id: &str) -> Option<&'static str> {
    let rest = &id[id.rfind("_search")? + "_search".len()..];
    let index: usize = rest.split('_').next()?.parse().ok()?;
    QueryType::ALL.get(index).map(|t| t.as_str())
}

fn sorted_unique<'a>(items: impl Iterator<Item = &'a str>) -> Vec<String> {
    items.map(str::to_owned).collect::<BTreeSet<_>>().into_iter().collect()
}

/// One task's queries and qrels in the published shape, and the derived code2text subtasks.
pub(crate) fn task(
    task: &str,
    version: &str,
    facts: &ReleaseFacts,
    queries: &[Column],
    qrels: &[Column],
    corpora: &Corpora,
) -> Result<(Vec<Column>, Vec<Column>), ShapeError> {
    let qconfig = format!("{task}_queries");
    let rows = query_rows(&qconfig, queries)?;
    let mut judgements = qrel_rows(&format!("{task}_qrels"), qrels)?;
    let mut positives: BTreeMap<&str, Vec<&(String, String, String)>> = BTreeMap::new();
    for (q, d, r) in &judgements {
        if let (2.., Some(doc)) = (*r, corpora.code.get(d)) {
            positives.entry(q.as_str()).or_default().push(doc);
        }
    }
    // code2text: the languages each (problem, subtask) has a per-language query in.
    let mut languages: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    for row in rows.iter().filter(|r| r.language != "any") {
        languages
            .entry((row.problem.as_str(), row.subtask.as_str()))
            .or_default()
            .push(row.language.clone());
    }
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let subtask =
            published_subtask(&row.task, &row.subtask, &row.language).map_err(|reason| {
                ShapeError {
                    config: qconfig.clone(),
                    reason: format!("query `{}`: {reason}", row.id),
                }
            })?;
        let anchor = row.source_doc.as_ref().and_then(|d| corpora.code.get(d));
        let pos = positives.get(row.id.as_str()).cloned().unwrap_or_default();
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
        match task {
            "text2code" => {
                p.query_type = Some(
                    if row.language == "any" { "language_agnostic" } else { "language_specific" }
                        .into(),
                );
                p.sub_query_type = Some(match row.subtask.as_str() {
                    "canonical" => "abbreviated".into(),
                    "full" => "full_description".into(),
                    _ => search_type(&row.id).unwrap_or("search").into(),
                });
                if row.subtask == "search" {
                    p.meta.models_in_relevant_docs =
                        Some(sorted_unique(pos.iter().map(|d| d.1.as_str())));
                }
            }
            "code2code" if row.subtask != "mono_lang" => {
                p.meta.target_languages = Some(sorted_unique(pos.iter().map(|d| d.0.as_str())));
                p.meta.num_target_solutions = Some(pos.len() as i64);
            }
            "code2text" => {
                p.text_type = Some(
                    if row.subtask == "canonical_retro" {
                        "canonical_description"
                    } else {
                        "full_description"
                    }
                    .into(),
                );
                p.meta.task_type = Some(
                    if row.language == "any" {
                        "description_retrieval"
                    } else {
                        "cross_language_invariance"
                    }
                    .into(),
                );
                if row.language != "any" {
                    p.meta.available_languages = languages
                        .get(&(row.problem.as_str(), row.subtask.as_str()))
                        .map(|l| sorted_unique(l.iter().map(String::as_str)));
                }
            }
            _ => {}
        }
        out.push(p);
    }
    if task == "code2text" {
        if rows.iter().any(|r| r.subtask == "describe") {
            derive_describe(version, &mut out, &mut judgements);
        }
        derive_match(version, &mut out, &mut judgements, corpora);
    }
    Ok((query_columns(task, facts, &out), qrel_columns(&judgements)))
}

/// The `full_retro`/`canonical_retro` subtasks of a release composed with `describe`: the
/// canonical twin of every `describe` query, and per problem one `any` anchor (Python first,
/// then the smallest code id) for each.
fn derive_describe(version: &str, out: &mut Vec<Published>, judgements: &mut Vec<Judgement>) {
    let mut by_query: BTreeMap<&str, Vec<(String, i64)>> = BTreeMap::new();
    for (q, d, r) in judgements.iter() {
        by_query.entry(q.as_str()).or_default().push((d.clone(), *r));
    }
    let mut derived: Vec<(Published, Vec<(String, i64)>)> = Vec::new();
    let copy = |base: &Published, id: String, subtask: String, text_type: &str| Published {
        id,
        subtask,
        text_type: Some(text_type.into()),
        ..base.clone()
    };
    for base in out.iter() {
        let subtask = base.subtask.replacen("c2t_full_retro_", "c2t_canonical_retro_", 1);
        let q = copy(base, format!("{}_canonical", base.id), subtask, "canonical_description");
        derived.push((q, by_query.get(base.id.as_str()).cloned().unwrap_or_default()));
    }
    let mut anchors: BTreeMap<&str, &Published> = BTreeMap::new();
    for p in out.iter() {
        let rank =
            |q: &Published| (q.anchor_language.as_deref() != Some("python"), q.source_doc.clone());
        let e = anchors.entry(p.problem.as_str()).or_insert(p);
        if rank(p) < rank(e) {
            *e = p;
        }
    }
    for (&problem, &anchor) in &anchors {
        let qrels = by_query.get(anchor.id.as_str()).cloned().unwrap_or_default();
        for (kind, text_type) in
            [("full", "full_description"), ("canonical", "canonical_description")]
        {
            let mut q = copy(
                anchor,
                format!("c2t_{version}_{problem}_{kind}_retro_any"),
                format!("c2t_{kind}_retro_any"),
                text_type,
            );
            q.language_constraint = "none".into();
            q.meta = Meta { task_type: Some("description_retrieval".into()), ..Meta::default() };
            derived.push((q, qrels.clone()));
        }
    }
    for (q, qrels) in derived {
        judgements.extend(qrels.into_iter().map(|(d, r)| (q.id.clone(), d, r)));
        out.push(q);
    }
}

/// `c2t_match`: per problem, its `c2t_full_retro_any` code paired with its own full and
/// canonical texts (`label` 1, relevance 2) and with those of another problem drawn from
/// the problem's id (`label` 0, relevance 0). A canonical text that is no document of the
/// text corpus (the series' composition) is the full text's id with the summary as `text`,
/// as the series writes it.
fn derive_match(
    version: &str,
    out: &mut Vec<Published>,
    judgements: &mut Vec<Judgement>,
    corpora: &Corpora,
) {
    let anchors: BTreeMap<String, Published> = out
        .iter()
        .filter(|p| p.subtask == "c2t_full_retro_any")
        .map(|p| (p.problem.clone(), p.clone()))
        .collect();
    let problems: Vec<&str> = anchors.keys().map(String::as_str).collect();
    let text = |problem: &str, kind: &str| -> Option<(String, String)> {
        match corpora.texts.get(&(problem.to_owned(), kind.to_owned())) {
            Some(t) => Some(t.clone()),
            None if kind == "canonical" => {
                let (full, _) = corpora.texts.get(&(problem.to_owned(), "full".to_owned()))?;
                Some((full.clone(), corpora.summaries.get(problem)?.clone()))
            }
            None => None,
        }
    };
    for (problem, anchor) in &anchors {
        let others: Vec<&str> = problems.iter().copied().filter(|o| *o != problem).collect();
        let other = (!others.is_empty()).then(|| {
            others[(xxh3_64(format!("{version}:{problem}").as_bytes()) % others.len() as u64)
                as usize]
        });
        for kind in ["full", "canonical"] {
            for (of, label, tag) in [(Some(problem.as_str()), 1, "pos"), (other, 0, "neg")] {
                let Some((text_id, text)) = of.and_then(|o| text(o, kind)) else {
                    continue;
                };
                let mut q = Published {
                    id: format!("c2t_{version}_{problem}_match_{kind}_{tag}"),
                    subtask: "c2t_match".into(),
                    text_type: Some(kind.into()),
                    meta: Meta::default(),
                    ..anchor.clone()
                };
                q.language_constraint = "none".into();
                q.relevant = label;
                q.pair = Some(Pair {
                    text_id: text_id.clone(),
                    text,
                    label,
                    negative_problem: (label == 0).then(|| of.unwrap_or_default().to_owned()),
                });
                judgements.push((q.id.clone(), text_id, 2 * label));
                out.push(q);
            }
        }
    }
}

fn col<T: Clone>(rows: &[Published], f: impl Fn(&Published) -> T) -> Vec<T> {
    rows.iter().map(f).collect()
}

/// The published columns of one task's queries (the columns that task's published rows carry).
fn query_columns(task: &str, facts: &ReleaseFacts, rows: &[Published]) -> Vec<Column> {
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
        cols.push(Column::str(
            "text_id",
            col(rows, |r| r.pair.as_ref().map(|p| p.text_id.clone())),
        ));
        cols.push(Column::str("text", col(rows, |r| r.pair.as_ref().map(|p| p.text.clone()))));
        cols.push(Column::int("label", col(rows, |r| r.pair.as_ref().map(|p| p.label))));
        cols.push(Column::str(
            "text_type",
            col(rows, |r| r.pair.as_ref().map(|_| r.text_type.clone().unwrap_or_default())),
        ));
    }
    let mut meta = vec![Column::str("source_problem_id", col(rows, |r| Some(r.problem.clone())))];
    match task {
        "text2code" => {
            meta.push(Column::str("original_query_type", col(rows, |r| r.sub_query_type.clone())));
            let search = |r: &Published| r.meta.models_in_relevant_docs.is_some();
            meta.push(
                Column::int("num_relevant_docs", col(rows, |r| search(r).then_some(r.relevant)))
                    .nullable(),
            );
            meta.push(
                Column::str_list(
                    "models_in_relevant_docs",
                    col(rows, |r| r.meta.models_in_relevant_docs.clone()),
                )
                .nullable(),
            );
            meta.push(
                Column::bool(
                    "is_multi_model",
                    col(rows, |r| r.meta.models_in_relevant_docs.as_ref().map(|m| m.len() > 1)),
                )
                .nullable(),
            );
        }
        _ => meta.push(Column::str("anchor_code_id", col(rows, |r| r.source_doc.clone()))),
    }
    if task == "code2code" {
        meta.push(
            Column::str_list("target_languages", col(rows, |r| r.meta.target_languages.clone()))
                .nullable(),
        );
        meta.push(
            Column::int("num_target_solutions", col(rows, |r| r.meta.num_target_solutions))
                .nullable(),
        );
    }
    if task == "code2text" {
        meta.push(Column::str("task_type", col(rows, |r| r.meta.task_type.clone())).nullable());
        meta.push(Column::str(
            "text_type",
            col(rows, |r| r.pair.is_none().then(|| r.text_type.clone()).flatten()),
        ));
        meta.push(
            Column::str_list(
                "available_languages",
                col(rows, |r| r.meta.available_languages.clone()),
            )
            .nullable(),
        );
        meta.push(Column::str(
            "pair_type",
            col(rows, |r| {
                r.pair.as_ref().map(|p| {
                    if p.label == 1 { "positive".into() } else { "negative_random".into() }
                })
            }),
        ));
        meta.push(Column::str(
            "negative_problem_id",
            col(rows, |r| r.pair.as_ref().and_then(|p| p.negative_problem.clone())),
        ));
    }
    meta.push(Column::str("created_at", vec![Some(facts.created_at.clone()); rows.len()]));
    meta.push(Column::str(
        "generator_version",
        vec![Some(facts.generator_version.clone()); rows.len()],
    ));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The subtask names of a task's published queries, sorted.
    fn subtasks(cols: &[Column]) -> BTreeSet<String> {
        match find(cols, "subtask") {
            Some(Values::Str(v)) => v.iter().flatten().cloned().collect(),
            _ => BTreeSet::new(),
        }
    }

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
            Column::str(
                "text_id",
                s(&["t_p1_full", "t_p1_canonical", "t_p1_d0", "t_p2_full", "t_p2_canonical"]),
            ),
            Column::str("text", s(&["P1 full", "P1 short", "noise", "P2 full", "P2 short"])),
            Column::str("kind", s(&["full", "canonical", "distractor", "full", "canonical"])),
            Column::str("problem_id", s(&["p1", "p1", "p1", "p2", "p2"])),
        ];
        Corpora::new(&code, &text).unwrap()
    }

    fn facts() -> ReleaseFacts {
        ReleaseFacts {
            created_at: "2025-03-31T23:59:59Z".into(),
            generator_version: "coreb 0.1.0".into(),
        }
    }

    fn meta<'a>(cols: &'a [Column], field: &str) -> &'a Values {
        let Some(Values::Struct(fields)) = find(cols, "meta") else { panic!("no meta") };
        find(fields, field).unwrap_or_else(|| panic!("no meta.{field}"))
    }

    /// A release of the series' composition: `full_retro`/`canonical_retro` queries, the full
    /// text their one positive, no summary document.
    #[test]
    fn a_series_release_keeps_its_subtasks_and_pairs_the_summary_by_the_full_text_id() {
        let code = vec![
            Column::str("code_id", s(&["c_p1_cpp", "c_p1_py", "c_p2_py"])),
            Column::str("code", s(&["int main", "print", "print 2"])),
            Column::str("language", s(&["cpp", "python", "python"])),
            Column::str("model", s(&["m1", "m2", "m2"])),
        ];
        let text = vec![
            Column::str("text_id", s(&["t_p1_full", "t_p1_d0", "t_p2_full"])),
            Column::str("text", s(&["P1 full", "noise", "P2 full"])),
            Column::str("kind", s(&["full", "distractor", "full"])),
            Column::str("problem_id", s(&["p1", "p1", "p2"])),
        ];
        let t2c = vec![
            Column::str("subtask", s(&["canonical", "canonical", "search"])),
            Column::str("language_constraint", s(&["any", "cpp", "any"])),
            Column::str("source_problem_id", s(&["p1", "p1", "p1"])),
            Column::str("query", s(&["P1 short", "C++ solution: P1 short", "find it"])),
        ];
        let corpora = Corpora::new(&code, &text).unwrap().with_summaries(&t2c).unwrap();
        let q = vec![
            Column::str(
                "query_id",
                s(&[
                    "c2t_v1_p1_full_retro_any",
                    "c2t_v1_p1_full_retro_cpp",
                    "c2t_v1_p1_full_retro_python",
                    "c2t_v1_p2_full_retro_any",
                    "c2t_v1_p1_canonical_retro_any",
                ]),
            ),
            Column::str("query", s(&["print", "int main", "print", "print 2", "print"])),
            Column::str("task", s(&["code2text"; 5])),
            Column::str(
                "subtask",
                s(&["full_retro", "full_retro", "full_retro", "full_retro", "canonical_retro"]),
            ),
            Column::str("language_constraint", s(&["any", "cpp", "python", "any", "any"])),
            Column::str("source_problem_id", s(&["p1", "p1", "p1", "p2", "p1"])),
            Column::str(
                "source_doc_id",
                s(&["c_p1_py", "c_p1_cpp", "c_p1_py", "c_p2_py", "c_p1_py"]),
            ),
            Column::int("num_relevant_docs", vec![Some(1); 5]),
        ];
        let r = vec![
            Column::str("query_id", s(&["c2t_v1_p1_full_retro_any", "c2t_v1_p1_full_retro_any"])),
            Column::str("doc_id", s(&["t_p1_full", "t_p1_d0"])),
            Column::int("relevance", vec![Some(2), Some(1)]),
        ];
        let (queries, qrels) = task("code2text", "v1", &facts(), &q, &r, &corpora).unwrap();
        let names: Vec<String> = subtasks(&queries).into_iter().collect();
        assert_eq!(
            names,
            [
                "c2t_canonical_retro_any",
                "c2t_full_retro_any",
                "c2t_full_retro_cpp",
                "c2t_full_retro_python",
                "c2t_match"
            ]
        );
        let Some(Values::Str(ids)) = find(&queries, "query_id") else { panic!() };
        let row = |id: &str| ids.iter().position(|x| x.as_deref() == Some(id)).unwrap();
        // The canonical match pair: the full text's id, the summary as its text.
        let Some(Values::Str(text_ids)) = find(&queries, "text_id") else { panic!() };
        let Some(Values::Str(texts)) = find(&queries, "text") else { panic!() };
        let pos = row("c2t_v1_p1_match_canonical_pos");
        assert_eq!(
            (text_ids[pos].as_deref(), texts[pos].as_deref()),
            (Some("t_p1_full"), Some("P1 short"))
        );
        let j = qrel_rows("q", &qrels).unwrap();
        assert!(j.contains(&("c2t_v1_p1_match_full_pos".into(), "t_p1_full".into(), 2)));
        assert!(j.contains(&("c2t_v1_p2_match_full_neg".into(), "t_p1_full".into(), 0)));
        // meta: the series' fields, from the release, never the clock.
        let Values::Str(task_type) = meta(&queries, "task_type") else { panic!() };
        assert_eq!(
            task_type[row("c2t_v1_p1_full_retro_cpp")].as_deref(),
            Some("cross_language_invariance")
        );
        assert_eq!(
            task_type[row("c2t_v1_p1_full_retro_any")].as_deref(),
            Some("description_retrieval")
        );
        let Values::StrList(available) = meta(&queries, "available_languages") else { panic!() };
        assert_eq!(
            available[row("c2t_v1_p1_full_retro_cpp")],
            Some(vec!["cpp".to_owned(), "python".to_owned()])
        );
        assert_eq!(available[row("c2t_v1_p1_full_retro_any")], None);
        let Values::Str(pair) = meta(&queries, "pair_type") else { panic!() };
        assert_eq!(pair[row("c2t_v1_p1_match_full_neg")].as_deref(), Some("negative_random"));
        assert_eq!(
            meta(&queries, "created_at"),
            &Values::Str(vec![Some("2025-03-31T23:59:59Z".into()); ids.len()])
        );
        assert_eq!(
            meta(&queries, "generator_version"),
            &Values::Str(vec![Some("coreb 0.1.0".into()); ids.len()])
        );
    }

    #[test]
    fn search_and_code2code_meta() {
        assert_eq!(search_type("t2c_v202503_lcb_1_search0_any"), Some("title_search"));
        assert_eq!(search_type("t2c_v202503_lcb_1_search2_cpp"), Some("algorithm_search"));
        assert_eq!(search_type("t2c_v202503_lcb_1_search9_cpp"), None);
        let q = vec![
            Column::str("query_id", s(&["c2c_v1_c_p1_py_cross_model", "c2c_v1_c_p1_py_mono_lang"])),
            Column::str("query", s(&["print", "print"])),
            Column::str("task", s(&["code2code"; 2])),
            Column::str("subtask", s(&["cross_model", "mono_lang"])),
            Column::str("language_constraint", s(&["any", "python"])),
            Column::str("source_problem_id", s(&["p1", "p1"])),
            Column::str("source_doc_id", s(&["c_p1_py", "c_p1_py"])),
            Column::int("num_relevant_docs", vec![Some(1), Some(0)]),
        ];
        let r = vec![
            Column::str("query_id", s(&["c2c_v1_c_p1_py_cross_model"])),
            Column::str("doc_id", s(&["c_p1_cpp"])),
            Column::int("relevance", vec![Some(2)]),
        ];
        let (queries, _) = task("code2code", "v1", &facts(), &q, &r, &corpora()).unwrap();
        assert_eq!(
            meta(&queries, "target_languages"),
            &Values::StrList(vec![Some(vec!["cpp".into()]), None])
        );
        assert_eq!(meta(&queries, "num_target_solutions"), &Values::Int(vec![Some(1), None]));
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
            Column::str(
                "query_id",
                s(&[
                    "c2t_v1_c_p1_cpp",
                    "c2t_v1_c_p1_cpp",
                    "c2t_v1_c_p1_cpp",
                    "c2t_v1_c_p1_py",
                    "c2t_v1_c_p1_py",
                    "c2t_v1_c_p2_go",
                    "c2t_v1_c_p2_go",
                ]),
            ),
            Column::str(
                "doc_id",
                s(&[
                    "t_p1_full",
                    "t_p1_canonical",
                    "t_p1_d0",
                    "t_p1_full",
                    "t_p1_canonical",
                    "t_p2_full",
                    "t_p2_canonical",
                ]),
            ),
            Column::int("relevance", [2, 2, 1, 2, 2, 2, 2].map(Some).to_vec()),
        ];
        (q, r)
    }

    #[test]
    fn code2text_gets_the_published_subtasks_with_coreb_judgements() {
        let (q, r) = describe();
        let (queries, qrels) = task("code2text", "v1", &facts(), &q, &r, &corpora()).unwrap();
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
        let of = |id: &str| {
            j.iter().filter(|x| x.0 == id).map(|x| (x.1.as_str(), x.2)).collect::<Vec<_>>()
        };
        assert_eq!(of("c2t_v1_p1_full_retro_any"), [("t_p1_full", 2), ("t_p1_canonical", 2)]);
        assert_eq!(
            of("c2t_v1_c_p1_cpp_canonical"),
            [("t_p1_full", 2), ("t_p1_canonical", 2), ("t_p1_d0", 1)]
        );
        // Match pairs: own texts relevant (2), the next problem's texts not (0); p2 pairs with p1.
        assert_eq!(of("c2t_v1_p1_match_full_pos"), [("t_p1_full", 2)]);
        assert_eq!(of("c2t_v1_p1_match_canonical_neg"), [("t_p2_canonical", 0)]);
        assert_eq!(of("c2t_v1_p2_match_full_neg"), [("t_p1_full", 0)]);
        let row =
            ids.iter().position(|x| x.as_deref() == Some("c2t_v1_p1_full_retro_any")).unwrap();
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
        let r = vec![
            Column::str("query_id", vec![]),
            Column::str("doc_id", vec![]),
            Column::int("relevance", vec![]),
        ];
        let (queries, _) = task("text2code", "v1", &facts(), &q, &r, &corpora()).unwrap();
        assert_eq!(
            find(&queries, "subtask"),
            Some(&Values::Str(s(&["t2c_canonical_retro_any", "t2c_full_retro_go"])))
        );
        assert_eq!(find(&queries, "language_constraint"), Some(&Values::Str(s(&["none", "go"]))));
        assert_eq!(
            find(&queries, "query_type"),
            Some(&Values::Str(s(&["language_agnostic", "language_specific"])))
        );
        assert_eq!(
            find(&queries, "sub_query_type"),
            Some(&Values::Str(s(&["abbreviated", "full_description"])))
        );
        assert!(find(&queries, "anchor_model").is_none());
    }

    #[test]
    fn an_unknown_subtask_is_an_error_naming_the_query() {
        let (mut q, r) = describe();
        q[3] = Column::str("subtask", s(&["describe", "summarise", "describe"]));
        let err = task("code2text", "v1", &facts(), &q, &r, &corpora()).unwrap_err().to_string();
        assert!(err.contains("c2t_v1_c_p1_py") && err.contains("summarise"), "{err}");
    }

    #[test]
    fn subtask_names() {
        assert_eq!(
            published_subtask("text2code", "canonical", "any").unwrap(),
            "t2c_canonical_retro_any"
        );
        assert_eq!(published_subtask("text2code", "search", "go").unwrap(), "t2c_search_go");
        assert_eq!(
            published_subtask("code2code", "cross_model", "any").unwrap(),
            "c2c_cross_model"
        );
        assert_eq!(
            published_subtask("code2text", "describe", "ruby").unwrap(),
            "c2t_full_retro_ruby"
        );
    }
}
