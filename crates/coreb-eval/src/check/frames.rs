//! Every polars call of the validity checks: lazy queries over a release's Parquet configs that
//! the checks ([`super`]) read their figures from (the results store's are in
//! [`crate::leaderboard::frames`], which shares this module's column reader). The configs are
//! scanned by [`crate::frames::scan_parquet`]. Each function builds one lazy plan
//! (scans, joins, group-bys), collects it and hands back plain Rust values, so nothing
//! outside this module sees a polars type (polars changes its API several times a year).

use std::path::{Path, PathBuf};

use polars::prelude::*;

use coreb_data::composition::SearchPositives;
use coreb_data::qrels::Task;

pub use crate::frames::FrameError;

type Result<T> = std::result::Result<T, FrameError>;

/// Word-like tokens: what a "word" of a query or document is in the length figures.
const WORD: &str = r"\S+";

/// The configs of one release, scanned lazily.
pub struct Frames {
    dir: PathBuf,
    /// Which solutions a search query's definition makes relevant (the release's
    /// composition).
    search_positives: SearchPositives,
}

/// The length distribution of one text column.
#[derive(Debug, Clone, PartialEq)]
pub struct Lengths {
    /// `config.column`.
    pub name: String,
    /// Rows.
    pub rows: usize,
    /// Characters: min, median, max.
    pub chars: [f64; 3],
    /// Words (whitespace-separated tokens): min, median, max.
    pub words: [f64; 3],
    /// Ids of the texts longer than the limit asked for.
    pub too_long: Vec<String>,
}

/// A query of one task, as the checks compare it with the BEIR folder.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryRow {
    /// `query_id`.
    pub id: String,
    /// `query`.
    pub text: String,
    /// `source_doc_id`, for code queries.
    pub source_doc_id: Option<String>,
}

/// The id and text columns of a corpus config.
fn corpus_columns(task: Task) -> (&'static str, &'static str, &'static str) {
    match task {
        Task::Text2Code | Task::Code2Code => ("code_corpus", "code_id", "code"),
        Task::Code2Text => ("text_corpus", "text_id", "text"),
    }
}

/// A string column as owned strings (a null as the empty string).
pub(crate) fn strings(df: &DataFrame, name: &str) -> Result<Vec<String>> {
    Ok(df.column(name)?.str()?.iter().map(|s| s.unwrap_or_default().to_owned()).collect())
}

/// The `pair`s of `these` that `those` lacks, sorted.
fn pairs_not_in(these: LazyFrame, those: LazyFrame) -> Result<Vec<String>> {
    let df = these.anti_join(those, col("pair"), col("pair")).collect()?;
    Ok(sorted(strings(&df, "pair")?))
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

impl Frames {
    /// The release at `dir` (its configs are read when a query runs), composed with the
    /// series' search positives.
    pub fn new(dir: &Path) -> Frames {
        Frames { dir: dir.to_owned(), search_positives: SearchPositives::All }
    }

    /// The same release, its search queries' definition made relevant by `search_positives`.
    pub fn with_search_positives(self, search_positives: SearchPositives) -> Frames {
        Frames { search_positives, ..self }
    }

    fn scan(&self, config: &str) -> Result<LazyFrame> {
        let path = self.dir.join(format!("{config}.parquet"));
        if !path.is_file() {
            return Err(FrameError::new(format!(
                "`{}`: missing (a release has eight Parquet configs)",
                path.display()
            )));
        }
        crate::frames::scan_parquet(&path)
    }

    fn queries(&self, task: Task) -> Result<LazyFrame> {
        self.scan(&format!("{}_queries", task.as_str()))
    }

    fn qrels(&self, task: Task) -> Result<LazyFrame> {
        self.scan(&format!("{}_qrels", task.as_str()))
    }

    /// The code2code anchors that no code2code query judges (the `source_doc_id`s the
    /// code2code corpus leaves out).
    fn anchors(&self) -> Result<LazyFrame> {
        let judged = self.qrels(Task::Code2Code)?.select([col("doc_id")]);
        Ok(self
            .queries(Task::Code2Code)?
            .select([col("source_doc_id").alias("doc_id")])
            .filter(col("doc_id").is_not_null())
            .unique(None, UniqueKeepStrategy::Any)
            .anti_join(judged, col("doc_id"), col("doc_id")))
    }

    /// The ids of `Frames::anchors`, sorted.
    pub fn unjudged_anchors(&self) -> Result<Vec<String>> {
        Ok(sorted(strings(&self.anchors()?.collect()?, "doc_id")?))
    }

    /// The documents a task's queries are ranked against, as `doc_id, text, problem_id`: the
    /// code corpus (without the unjudged code2code anchors for code2code) or the text corpus.
    fn candidates(&self, task: Task) -> Result<LazyFrame> {
        let (config, id, text) = corpus_columns(task);
        let docs = self.scan(config)?.select([
            col(id).alias("doc_id"),
            col(text).alias("text"),
            col("problem_id"),
        ]);
        Ok(match task {
            Task::Code2Code => docs.anti_join(self.anchors()?, col("doc_id"), col("doc_id")),
            _ => docs,
        })
    }

    /// Every id of the release (documents and queries) with the config it is in.
    fn ids(&self) -> Result<LazyFrame> {
        let mut parts = vec![
            self.scan("code_corpus")?
                .select([col("code_id").alias("id"), lit("code_corpus").alias("config")]),
            self.scan("text_corpus")?
                .select([col("text_id").alias("id"), lit("text_corpus").alias("config")]),
        ];
        for task in Task::ALL {
            parts.push(self.queries(task)?.select([
                col("query_id").alias("id"),
                lit(format!("{}_queries", task.as_str())).alias("config"),
            ]));
        }
        Ok(concat(parts, UnionArgs::default())?)
    }

    /// Ids that occur more than once among all documents and queries (within or across
    /// configs), and judgements repeated within a task (`query→doc`).
    pub fn duplicate_ids(&self) -> Result<Vec<String>> {
        let df = self
            .ids()?
            .group_by([col("id")])
            .agg([len().alias("n")])
            .filter(col("n").gt(lit(1)))
            .collect()?;
        let mut out = strings(&df, "id")?;
        for task in Task::ALL {
            let pairs =
                self.qrels(task)?.select([
                    concat_str([col("query_id"), col("doc_id")], "→", true).alias("pair")
                ]);
            let df = pairs
                .group_by([col("pair")])
                .agg([len().alias("n")])
                .filter(col("n").gt(lit(1)))
                .collect()?;
            out.extend(strings(&df, "pair")?);
        }
        Ok(sorted(out))
    }

    /// Ids that do not carry their kind and `version` as prefix, or hold whitespace.
    pub fn malformed_ids(&self, version: &str) -> Result<Vec<String>> {
        let mut parts = vec![
            self.scan("code_corpus")?.select([
                col("code_id").alias("id"),
                lit(format!("code_{version}_")).alias("prefix"),
            ]),
            self.scan("text_corpus")?.select([
                col("text_id").alias("id"),
                lit(format!("text_{version}_")).alias("prefix"),
            ]),
        ];
        for task in Task::ALL {
            parts.push(self.queries(task)?.select([
                col("query_id").alias("id"),
                lit(format!("{}_{version}_", task.prefix())).alias("prefix"),
            ]));
        }
        let bad = col("id")
            .str()
            .starts_with(col("prefix"))
            .not()
            .or(col("id").str().contains(lit(r"\s"), false));
        let df = concat(parts, UnionArgs::default())?.filter(bad).collect()?;
        Ok(sorted(strings(&df, "id")?))
    }

    /// Ids of this release that `other` (an earlier release) also holds.
    pub fn ids_also_in(&self, other: &Frames) -> Result<Vec<String>> {
        let df = self.ids()?.semi_join(other.ids()?, col("id"), col("id")).collect()?;
        Ok(sorted(strings(&df, "id")?))
    }

    /// Judgements naming a query or a document the task does not have (`query→doc`).
    pub fn dangling_qrels(&self, task: Task) -> Result<Vec<String>> {
        let qrels = self.qrels(task)?;
        let no_query = qrels.clone().anti_join(
            self.queries(task)?.select([col("query_id")]),
            col("query_id"),
            col("query_id"),
        );
        let no_doc = qrels.anti_join(
            self.candidates(task)?.select([col("doc_id")]),
            col("doc_id"),
            col("doc_id"),
        );
        let pair = |lf: LazyFrame| {
            lf.select([concat_str([col("query_id"), col("doc_id")], "→", true).alias("pair")])
        };
        let df = concat([pair(no_query), pair(no_doc)], UnionArgs::default())?.collect()?;
        Ok(sorted(strings(&df, "pair")?))
    }

    /// The `(query, doc)` pairs that the task's definition makes relevant, from the corpora
    /// and the queries alone: text2code, the problem's passing solutions (in the constrained
    /// language; every solution for a search query where the composition counts them all);
    /// code2text, the problem's `full` and `canonical` texts (whichever the text corpus
    /// holds); code2code, the passing documents but the query's own that fit the subtask
    /// relative to the anchor.
    fn known_relevant(&self, task: Task) -> Result<LazyFrame> {
        let queries = self.queries(task)?;
        let pair = concat_str([col("query_id"), col("doc_id")], "→", true).alias("pair");
        Ok(match task {
            Task::Text2Code => {
                let code = self.scan("code_corpus")?.select([
                    col("code_id").alias("doc_id"),
                    col("problem_id"),
                    col("language"),
                    col("passed"),
                ]);
                // A search query counts every solution of its problem where the composition
                // says so; the other subtasks count the passing ones.
                let counts = match self.search_positives {
                    SearchPositives::All => col("passed").or(col("subtask").eq(lit("search"))),
                    SearchPositives::Passing => col("passed"),
                };
                queries
                    .select([
                        col("query_id"),
                        col("subtask"),
                        col("source_problem_id"),
                        col("language_constraint"),
                    ])
                    .inner_join(code, col("source_problem_id"), col("problem_id"))
                    .filter(counts)
                    .filter(
                        col("language_constraint")
                            .eq(lit("any"))
                            .or(col("language").eq(col("language_constraint"))),
                    )
                    .select([pair])
            }
            Task::Code2Text => {
                let texts = self
                    .scan("text_corpus")?
                    .filter(col("kind").eq(lit("full")).or(col("kind").eq(lit("canonical"))))
                    .select([col("text_id").alias("doc_id"), col("problem_id")]);
                queries
                    .select([col("query_id"), col("source_problem_id")])
                    .inner_join(texts, col("source_problem_id"), col("problem_id"))
                    .select([pair])
            }
            Task::Code2Code => {
                let code = self.scan("code_corpus")?;
                let anchor = code.clone().select([
                    col("code_id").alias("anchor_id"),
                    col("model").alias("anchor_model"),
                    col("language").alias("anchor_language"),
                ]);
                let passing = code.filter(col("passed")).select([
                    col("code_id").alias("doc_id"),
                    col("problem_id"),
                    col("model"),
                    col("language"),
                ]);
                let (same_model, same_lang) = (
                    col("model").eq(col("anchor_model")),
                    col("language").eq(col("anchor_language")),
                );
                let fits = col("subtask")
                    .eq(lit("mono_lang"))
                    .and(same_model.clone().not())
                    .and(same_lang.clone())
                    .or(col("subtask")
                        .eq(lit("cross_lang"))
                        .and(same_model.clone())
                        .and(same_lang.clone().not()))
                    .or(col("subtask")
                        .eq(lit("cross_model"))
                        .and(same_model.not())
                        .and(same_lang.not()));
                queries
                    .select([
                        col("query_id"),
                        col("subtask"),
                        col("source_problem_id"),
                        col("source_doc_id"),
                    ])
                    .inner_join(anchor, col("source_doc_id"), col("anchor_id"))
                    .inner_join(passing, col("source_problem_id"), col("problem_id"))
                    .filter(fits.and(col("doc_id").neq(col("source_doc_id"))))
                    .select([pair])
            }
        })
    }

    fn positives(&self, task: Task) -> Result<LazyFrame> {
        Ok(self.qrels(task)?.filter(col("relevance").gt_eq(lit(2))).select([concat_str(
            [col("query_id"), col("doc_id")],
            "→",
            true,
        )
        .alias("pair")]))
    }

    /// Known-relevant pairs without a relevance-2 judgement (`query→doc`).
    pub fn unjudged_relevant(&self, task: Task) -> Result<Vec<String>> {
        pairs_not_in(self.known_relevant(task)?, self.positives(task)?)
    }

    /// Relevance-2 judgements that the task's definition does not make relevant.
    pub fn unfounded_positives(&self, task: Task) -> Result<Vec<String>> {
        pairs_not_in(self.positives(task)?, self.known_relevant(task)?)
    }

    /// Queries of the task without any judgement of at least `relevance`, and how many
    /// queries the task has.
    pub fn queries_without(
        &self,
        task: Task,
        relevance: i64,
        exact: bool,
    ) -> Result<(Vec<String>, usize)> {
        let all = self.queries(task)?.select([col("query_id")]).collect()?;
        let rel = if exact {
            col("relevance").eq(lit(relevance))
        } else {
            col("relevance").gt_eq(lit(relevance))
        };
        let judged = self.qrels(task)?.filter(rel).select([col("query_id")]);
        let df = self
            .queries(task)?
            .select([col("query_id")])
            .anti_join(judged, col("query_id"), col("query_id"))
            .collect()?;
        Ok((sorted(strings(&df, "query_id")?), all.height()))
    }

    /// text2code `any` queries whose positives are all in one language, and how many `any`
    /// queries there are.
    pub fn single_language_queries(&self) -> Result<(Vec<String>, usize)> {
        let any = self
            .queries(Task::Text2Code)?
            .filter(col("language_constraint").eq(lit("any")))
            .select([col("query_id")]);
        let total = any.clone().collect()?.height();
        let langs = self.scan("code_corpus")?.select([col("code_id"), col("language")]);
        let df = self
            .qrels(Task::Text2Code)?
            .filter(col("relevance").gt_eq(lit(2)))
            .semi_join(any, col("query_id"), col("query_id"))
            .inner_join(langs, col("doc_id"), col("code_id"))
            .group_by([col("query_id")])
            .agg([col("language").n_unique().alias("languages")])
            .filter(col("languages").eq(lit(1u32)))
            .collect()?;
        Ok((sorted(strings(&df, "query_id")?), total))
    }

    /// Judgements of a code query's own document, and code2code candidates whose text is the
    /// query's own text without being one of its positives (`query→doc`).
    pub fn self_matches(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for task in [Task::Code2Code, Task::Code2Text] {
            let own = self
                .qrels(task)?
                .inner_join(
                    self.queries(task)?.select([col("query_id"), col("source_doc_id")]),
                    col("query_id"),
                    col("query_id"),
                )
                .filter(col("doc_id").eq(col("source_doc_id")))
                .select([concat_str([col("query_id"), col("doc_id")], "→", true).alias("pair")])
                .collect()?;
            out.extend(strings(&own, "pair")?);
        }
        let same_text = self
            .queries(Task::Code2Code)?
            .select([col("query_id"), col("query"), col("source_doc_id")])
            .inner_join(
                self.candidates(Task::Code2Code)?.select([col("doc_id"), col("text")]),
                col("query"),
                col("text"),
            )
            // The query's own document: dropped from its ranking, never a match.
            .filter(col("doc_id").neq(col("source_doc_id")))
            .select([concat_str([col("query_id"), col("doc_id")], "→", true).alias("pair")])
            .anti_join(self.positives(Task::Code2Code)?, col("pair"), col("pair"))
            .collect()?;
        out.extend(strings(&same_text, "pair")?);
        Ok(sorted(out))
    }

    /// Language-constrained text2code queries whose text does not name their language, and
    /// how many constrained queries there are.
    pub fn unnamed_language_queries(&self) -> Result<(Vec<String>, usize)> {
        let constrained =
            self.queries(Task::Text2Code)?.filter(col("language_constraint").neq(lit("any")));
        let total = constrained.clone().collect()?.height();
        let names = [
            ("python", "python"),
            ("cpp", r"c\+\+|cpp"),
            ("java", "java"),
            ("go", "go|golang"),
            ("ruby", "ruby"),
        ];
        let mut named = lit(false);
        for (lang, pattern) in names.iter().rev() {
            let says = col("query")
                .str()
                .contains(lit(format!(r"(?i)(^|[^a-z0-9_])({pattern})([^a-z0-9_+]|$)")), false);
            named = when(col("language_constraint").eq(lit(*lang))).then(says).otherwise(named);
        }
        let df = constrained.filter(named.not()).select([col("query_id")]).collect()?;
        Ok((sorted(strings(&df, "query_id")?), total))
    }

    /// `config:id` of every document or query whose text is empty or only whitespace.
    pub fn empty_texts(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for (config, id, text) in self.text_columns() {
            let df = self
                .scan(&config)?
                .filter(col(text).str().contains(lit(r"\S"), false).not())
                .select([col(id)])
                .collect()?;
            out.extend(strings(&df, id)?.into_iter().map(|i| format!("{config}:{i}")));
        }
        Ok(sorted(out))
    }

    /// Query texts of one subtask that stand for different positive sets (the same words
    /// asked twice with different answers, as a language-constrained query that does not say
    /// its language), as `id=id=…`; and document texts shared by documents of different
    /// problems. (code2code asks one anchor in three subtasks, by definition.)
    pub fn ambiguous_texts(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for task in Task::ALL {
            let answers = self
                .qrels(task)?
                .filter(col("relevance").gt_eq(lit(2)))
                .group_by([col("query_id")])
                .agg([col("doc_id")
                    .sort(SortOptions::default())
                    .str()
                    .join(",", true)
                    .alias("answers")]);
            let df = self
                .queries(task)?
                .select([col("query_id"), col("subtask"), col("query")])
                .left_join(answers, col("query_id"), col("query_id"))
                .group_by([col("subtask"), col("query")])
                .agg([
                    col("answers").n_unique().alias("n"),
                    col("query_id").sort(SortOptions::default()).str().join("=", true).alias("ids"),
                ])
                .filter(col("n").gt(lit(1u32)))
                .collect()?;
            out.extend(strings(&df, "ids")?);
        }
        for (config, id, text) in
            [("code_corpus", "code_id", "code"), ("text_corpus", "text_id", "text")]
        {
            let df = self
                .scan(config)?
                .group_by([col(text)])
                .agg([
                    col("problem_id").n_unique().alias("n"),
                    col(id).sort(SortOptions::default()).str().join("=", true).alias("ids"),
                ])
                .filter(col("n").gt(lit(1u32)))
                .collect()?;
            out.extend(strings(&df, "ids")?);
        }
        Ok(sorted(out))
    }

    fn text_columns(&self) -> Vec<(String, &'static str, &'static str)> {
        let mut cols = vec![
            ("code_corpus".to_owned(), "code_id", "code"),
            ("text_corpus".to_owned(), "text_id", "text"),
        ];
        cols.extend(
            Task::ALL.iter().map(|t| (format!("{}_queries", t.as_str()), "query_id", "query")),
        );
        cols
    }

    /// The length distribution of every text column, with the ids of texts over
    /// `max_chars` characters.
    pub fn lengths(&self, max_chars: usize) -> Result<Vec<Lengths>> {
        let mut out = Vec::new();
        for (config, id, text) in self.text_columns() {
            let sized = self.scan(&config)?.select([
                col(id).alias("id"),
                col(text).str().len_chars().cast(DataType::Float64).alias("chars"),
                col(text)
                    .str()
                    .count_matches(lit(WORD), false)
                    .cast(DataType::Float64)
                    .alias("words"),
            ]);
            let stats = sized
                .clone()
                .select([
                    len().alias("rows"),
                    col("chars").min().alias("c0"),
                    col("chars").median().alias("c1"),
                    col("chars").max().alias("c2"),
                    col("words").min().alias("w0"),
                    col("words").median().alias("w1"),
                    col("words").max().alias("w2"),
                ])
                .collect()?;
            let value = |name: &str| -> Result<f64> {
                Ok(stats.column(name)?.cast(&DataType::Float64)?.f64()?.get(0).unwrap_or(0.0))
            };
            let rows =
                stats.column("rows")?.cast(&DataType::UInt64)?.u64()?.get(0).unwrap_or(0) as usize;
            let long = sized
                .filter(col("chars").gt(lit(max_chars as f64)))
                .select([col("id")])
                .collect()?;
            out.push(Lengths {
                name: format!("{config}.{text}"),
                rows,
                chars: [value("c0")?, value("c1")?, value("c2")?],
                words: [value("w0")?, value("w1")?, value("w2")?],
                too_long: sorted(strings(&long, "id")?),
            });
        }
        Ok(out)
    }

    /// The queries of a task (id, text, own document), in id order.
    pub fn query_rows(&self, task: Task) -> Result<Vec<QueryRow>> {
        let df = self
            .queries(task)?
            .select([col("query_id"), col("query"), col("source_doc_id")])
            .collect()?;
        let (ids, texts) = (strings(&df, "query_id")?, strings(&df, "query")?);
        let own: Vec<Option<String>> =
            df.column("source_doc_id")?.str()?.iter().map(|s| s.map(str::to_owned)).collect();
        let mut rows: Vec<QueryRow> = ids
            .into_iter()
            .zip(texts)
            .zip(own)
            .map(|((id, text), source_doc_id)| QueryRow { id, text, source_doc_id })
            .collect();
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(rows)
    }

    /// The graded judgements of a task (`query, doc, relevance`).
    pub fn qrel_rows(&self, task: Task) -> Result<Vec<(String, String, i64)>> {
        let df = self
            .qrels(task)?
            .select([col("query_id"), col("doc_id"), col("relevance").cast(DataType::Int64)])
            .collect()?;
        let rel: Vec<i64> = df.column("relevance")?.i64()?.iter().map(|r| r.unwrap_or(0)).collect();
        Ok(strings(&df, "query_id")?
            .into_iter()
            .zip(strings(&df, "doc_id")?)
            .zip(rel)
            .map(|((q, d), r)| (q, d, r))
            .collect())
    }

    /// The candidate documents of a task (id, text), in id order.
    pub fn candidate_rows(&self, task: Task) -> Result<Vec<(String, String)>> {
        let df = self.candidates(task)?.collect()?;
        let mut rows: Vec<(String, String)> =
            strings(&df, "doc_id")?.into_iter().zip(strings(&df, "text")?).collect();
        rows.sort();
        Ok(rows)
    }
}
