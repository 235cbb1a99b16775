//! `queries`: natural-language developer search queries per rewritten problem,
//! the query texts of the text-to-code `search` subtask, as CoREB defines them.
//!
//! Each problem is contrasted with the [`QueriesConfig::similar`] most similar OTHER problems
//! of the same build ([`similar_problems`]: BM25 over the rewritten titles and statements,
//! ties by problem id), which the prompt lists so that each query fits its target only. The
//! model answers three queries, one per [`QueryType`], each with one variant per language
//! that names the language in its text (the qrels stage uses a variant as that query's
//! language-constrained form). A query or variant is kept only if it has
//! `min_words..=max_words` words, uses no bare one-letter placeholder variable
//! ([`placeholder_variable`]), is not a repeat and (a variant) names its language; each one
//! dropped is reported as a rejection of `<problem>/<type>[/<language>]` with its reason. A
//! problem whose three queries are all dropped is rejected. No I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use coreb_data::problem::ProblemId;
use coreb_data::rewritten::RewrittenProblem;
use coreb_data::solution::Language;
use coreb_eval::bm25::{Bm25Config, Bm25Index};
use coreb_llm::prompt::Prompt;
use coreb_llm::run::{self, LlmStageError, LlmStageStats, ModelPlan, RejectReason, Rejection};
use coreb_llm::text::word_count;
use coreb_llm::{LlmGateway, LlmStage};

/// The reference's three query types, in the order their indices follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryType {
    /// The task named with the concept that sets it apart.
    TitleSearch,
    /// What the program reads, computes and outputs, with the problem's own conditions.
    DescriptionSearch,
    /// The technique or data structure that solves it.
    AlgorithmSearch,
}

impl QueryType {
    /// All types, in index order.
    pub const ALL: [QueryType; 3] =
        [QueryType::TitleSearch, QueryType::DescriptionSearch, QueryType::AlgorithmSearch];

    /// The JSON name (`title_search` …).
    pub fn as_str(self) -> &'static str {
        match self {
            QueryType::TitleSearch => "title_search",
            QueryType::DescriptionSearch => "description_search",
            QueryType::AlgorithmSearch => "algorithm_search",
        }
    }

    fn parse(s: &str) -> Option<QueryType> {
        QueryType::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// One search query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Query {
    /// The problem it searches for.
    pub problem_id: ProblemId,
    /// Its index among the problem's queries (0-based: the position of its type in
    /// [`QueryType::ALL`]).
    pub index: u32,
    /// Its type.
    pub query_type: QueryType,
    /// The query text.
    pub text: String,
    /// The model that wrote it.
    pub model: String,
    /// The language a language-specific variant is written for (it then names it in its
    /// text); absent for an unconstrained query. A variant shares `index` with the query it
    /// restates, and the qrels stage uses it as that query's constrained form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<Language>,
}

/// `[stages.queries]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueriesConfig {
    /// Problems in flight at once.
    pub concurrency: usize,
    /// Similar other problems shown to the model as contrast.
    pub similar: usize,
    /// Words of a similar problem's statement shown (its opening).
    pub similar_words: usize,
    /// Fewest words a query may have.
    pub min_words: usize,
    /// Most words a query may have.
    pub max_words: usize,
}

impl Default for QueriesConfig {
    fn default() -> Self {
        QueriesConfig {
            concurrency: 8,
            similar: 5,
            similar_words: 60,
            min_words: 15,
            max_words: 40,
        }
    }
}

/// What `queries` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueriesOutput {
    /// Queries in problem order, then index order (each unconstrained query before its
    /// variants, in language order).
    pub queries: Vec<Query>,
    /// Problems without queries, and every query or variant dropped, with the reasons.
    pub rejected: Vec<Rejection>,
    /// Counts.
    pub stats: LlmStageStats,
    /// Queries and variants dropped (each is also in `rejected`).
    pub dropped_queries: u64,
    /// sha256 of the prompt.
    pub prompt_sha256: String,
}

/// For each problem, the indices of the `k` most similar OTHER problems: BM25 (coreb's
/// [`Bm25Index`]) over title and statement, the problem's own title and statement as the
/// query; score descending, ties by problem id. Deterministic.
pub fn similar_problems(problems: &[RewrittenProblem], k: usize) -> Vec<Vec<usize>> {
    let texts: Vec<String> =
        problems.iter().map(|p| format!("{}\n{}", p.title, p.statement)).collect();
    let index = Bm25Index::build(
        Bm25Config { stop_words: true, ..Bm25Config::default() },
        texts.iter().map(String::as_str),
    );
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut hits: Vec<(usize, f32)> =
                index.search(text, problems.len()).into_iter().filter(|&(d, _)| d != i).collect();
            hits.sort_by(|a, b| {
                b.1.total_cmp(&a.1).then_with(|| problems[a.0].id.cmp(&problems[b.0].id))
            });
            hits.into_iter().take(k).map(|(d, _)| d).collect()
        })
        .collect()
}

/// The first bare one-letter variable in `text` (`n`, `k`, `t` …), if any: a letter standing
/// alone as a word (words are letters, digits, `_` and apostrophes, so `to_f` and `don't`
/// are whole words), other than `a`, `A` and `I`, and other than the `C` of `C++`/`C#`.
/// Complexity notation (`O(n log n)`) and `I/O` are not placeholders and are skipped.
pub fn placeholder_variable(text: &str) -> Option<String> {
    let mut rest = String::with_capacity(text.len());
    let mut s = text;
    while let Some(at) = s.find("O(") {
        rest.push_str(&s[..at]);
        match s[at..].find(')') {
            Some(end) => s = &s[at + end + 1..],
            None => {
                s = "";
                break;
            }
        }
    }
    rest.push_str(s);
    let rest = rest.replace("I/O", " ").replace("i/o", " ");
    let chars: Vec<char> = rest.chars().collect();
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '\'' || c == '’';
    let mut i = 0;
    while i < chars.len() {
        if !word(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && word(chars[i]) {
            i += 1;
        }
        if i - start == 1
            && chars[start].is_alphabetic()
            && !matches!(chars[start], 'a' | 'A' | 'I')
        {
            let lang =
                matches!(chars[start], 'C' | 'c' | 'F') && matches!(chars.get(i), Some('+' | '#'));
            if !lang {
                return Some(chars[start].to_string());
            }
        }
    }
    None
}

/// Does `text` name `language` (its display name or identifier, as a whole word;
/// `golang` for Go, `cpp` for C++)?
pub fn names_language(text: &str, language: Language) -> bool {
    let lower = text.to_lowercase();
    let names: &[&str] = match language {
        Language::Python => &["python"],
        Language::Cpp => &["c++", "cpp"],
        Language::Java => &["java"],
        Language::Go => &["go", "golang"],
        Language::Ruby => &["ruby"],
    };
    names.iter().any(|n| {
        lower.match_indices(n).any(|(i, _)| {
            let before = lower[..i].chars().next_back();
            let after = lower[i + n.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric)
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '+')
        })
    })
}

/// The prompt's list of similar problems: title and the opening of the statement.
fn similar_block(problems: &[RewrittenProblem], similar: &[usize], words: usize) -> String {
    if similar.is_empty() {
        return "(none: this build has no other problem)".into();
    }
    let mut out = String::new();
    for (n, &i) in similar.iter().enumerate() {
        let p = &problems[i];
        let all: Vec<&str> = p.statement.split_whitespace().collect();
        let more = if all.len() > words { " …" } else { "" };
        out.push_str(&format!(
            "{}. {}: {}{more}\n",
            n + 1,
            p.title,
            all[..all.len().min(words)].join(" ")
        ));
    }
    out.trim_end().to_owned()
}

/// Write search queries for the problems of `problems` that `asked` selects (all when
/// `None`); similar problems are looked for among all of `problems`, so a shard's queries
/// equal those of an unsharded build.
pub async fn queries(
    config: &QueriesConfig,
    plan: &ModelPlan,
    prompt: &Prompt,
    problems: &[RewrittenProblem],
    asked: Option<&dyn Fn(&ProblemId) -> bool>,
    gateway: &dyn LlmGateway,
) -> Result<QueriesOutput, LlmStageError> {
    let stage = LlmStage::Queries;
    if config.min_words > config.max_words {
        return Err(LlmStageError::Config {
            stage,
            message: "`min_words` is larger than `max_words`".into(),
        });
    }
    let similar = similar_problems(problems, config.similar);
    let languages = Language::ALL.iter().map(|l| l.as_str()).collect::<Vec<_>>().join(", ");
    let languages = languages.as_str();
    let work: Vec<(usize, &RewrittenProblem)> =
        problems.iter().enumerate().filter(|(_, p)| asked.is_none_or(|f| f(&p.id))).collect();
    let similar = &similar;
    let results = run::ordered(work, config.concurrency, |(i, p)| async move {
        let contrast = similar_block(problems, &similar[i], config.similar_words);
        let vars = [
            ("title", p.title.as_str()),
            ("statement", p.statement.as_str()),
            ("similar", contrast.as_str()),
            ("languages", languages),
        ];
        crate::ask_problem(gateway, stage, plan, prompt, p, &vars, |text| parse(text, config)).await
    })
    .await;
    let mut out = QueriesOutput {
        queries: Vec::new(),
        rejected: Vec::new(),
        stats: LlmStageStats::default(),
        dropped_queries: 0,
        prompt_sha256: prompt.sha256.clone(),
    };
    for (p, r, stats) in run::settle(results)? {
        out.stats += stats;
        out.stats.items_in += 1;
        match r {
            Ok((parsed, model)) => {
                out.stats.items_out += 1;
                for (suffix, reason) in parsed.dropped {
                    out.dropped_queries += 1;
                    out.rejected.push(Rejection {
                        item: format!("{}/{suffix}", p.id),
                        model: model.clone(),
                        key: None,
                        reason,
                    });
                }
                for (t, text, variants) in parsed.kept {
                    let index =
                        QueryType::ALL.iter().position(|x| *x == t).unwrap_or_default() as u32;
                    // The query itself, then its language variants.
                    let all = std::iter::once((None, text))
                        .chain(variants.into_iter().map(|(l, text)| (Some(l), text)));
                    for (language, text) in all {
                        out.queries.push(Query {
                            problem_id: p.id.clone(),
                            index,
                            query_type: t,
                            text,
                            model: model.clone(),
                            language,
                        });
                    }
                }
            }
            Err(rejections) => {
                out.stats.items_rejected += 1;
                out.rejected.extend(rejections);
            }
        }
    }
    Ok(out)
}

/// The queries of one answer that pass the checks, and the dropped ones with their reasons.
#[derive(Debug, Default)]
struct Parsed {
    kept: Vec<(QueryType, String, BTreeMap<Language, String>)>,
    dropped: Vec<(String, RejectReason)>,
}

/// Why `text` is not a usable query, if it is not.
fn check_query(text: &str, seen: &[String], config: &QueriesConfig) -> Option<RejectReason> {
    let words = word_count(text);
    if words < config.min_words || words > config.max_words {
        return Some(RejectReason::WordCount {
            words,
            min: config.min_words,
            max: Some(config.max_words),
        });
    }
    if let Some(variable) = placeholder_variable(text) {
        return Some(RejectReason::PlaceholderVariable { variable });
    }
    if seen.iter().any(|s| s.eq_ignore_ascii_case(text)) {
        return Some(RejectReason::Repeat);
    }
    None
}

fn clean(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_matches(|c| c == '"' || c == '`')
        .to_owned()
}

fn parse(text: &str, config: &QueriesConfig) -> Result<Parsed, RejectReason> {
    let v = run::json_answer(text)?;
    let list = v
        .get("queries")
        .and_then(|q| q.as_array())
        .ok_or(RejectReason::MissingField { field: "queries".into() })?;
    let mut out = Parsed::default();
    let mut seen: Vec<String> = Vec::new();
    for item in list {
        let Some(t) = item.get("type").and_then(|t| t.as_str()).and_then(QueryType::parse) else {
            out.dropped.push(("?".into(), RejectReason::MissingField { field: "type".into() }));
            continue;
        };
        if out.kept.iter().any(|(k, _, _)| *k == t) {
            out.dropped.push((t.as_str().into(), RejectReason::Repeat));
            continue;
        }
        let query = clean(item.get("query").and_then(|q| q.as_str()).unwrap_or_default());
        if let Some(reason) = check_query(&query, &seen, config) {
            out.dropped.push((t.as_str().into(), reason));
            continue;
        }
        seen.push(query.clone());
        let mut variants = BTreeMap::new();
        for l in Language::ALL {
            let Some(raw) =
                item.get("variants").and_then(|v| v.get(l.as_str())).and_then(|v| v.as_str())
            else {
                out.dropped.push((
                    format!("{}/{l}", t.as_str()),
                    RejectReason::MissingField { field: format!("variants.{l}") },
                ));
                continue;
            };
            let variant = clean(raw);
            let reason = check_query(&variant, &seen, config).or_else(|| {
                (!names_language(&variant, l))
                    .then(|| RejectReason::LanguageNotNamed { language: l.as_str().into() })
            });
            match reason {
                Some(reason) => out.dropped.push((format!("{}/{l}", t.as_str()), reason)),
                None => {
                    seen.push(variant.clone());
                    variants.insert(l, variant);
                }
            }
        }
        out.kept.push((t, query, variants));
    }
    if out.kept.is_empty() {
        return Err(RejectReason::NoQueries);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found_and_languages_and_complexity_are_not() {
        assert_eq!(placeholder_variable("count pairs among n numbers up to k"), Some("n".into()));
        assert_eq!(
            placeholder_variable(
                "a C++ or C# solution that doesn't use I/O tricks, in O(n log n) time"
            ),
            None
        );
        assert_eq!(placeholder_variable("answer t test cases"), Some("t".into()));
        assert_eq!(placeholder_variable("up to 200000 numbers, each below one billion"), None);
        assert_eq!(placeholder_variable("in Ruby using gets.to_f and puts"), None);
    }

    #[test]
    fn language_names_are_whole_words() {
        assert!(names_language("a Go program that reads stdin", Language::Go));
        assert!(!names_language("a good algorithm to go over the list", Language::Java));
        assert!(!names_language("going through the grid", Language::Go));
        assert!(names_language("C++ function", Language::Cpp));
        assert!(!names_language("use c++ here", Language::Go));
    }

    fn problem(id: &str, title: &str, statement: &str) -> RewrittenProblem {
        RewrittenProblem {
            id: ProblemId::from_question_id(id),
            title: title.into(),
            statement: statement.into(),
            starter_code: String::new(),
            func_name: None,
            platform: coreb_data::problem::Platform::Atcoder,
            difficulty: "easy".into(),
            contest_date: "2025-01-01".into(),
            public_tests: Vec::new(),
            private_tests: Vec::new(),
            model: "m".into(),
            test_origins: Vec::new(),
            reference: None,
        }
    }

    #[test]
    fn similar_problems_exclude_self_rank_by_bm25_and_break_ties_by_id() {
        let ps = vec![
            problem("a", "graph", "shortest path in a weighted graph with dijkstra"),
            problem("b", "path", "shortest path in a grid"),
            problem("c", "strings", "reverse a string of letters"),
            problem("d", "strings too", "reverse a string of letters"),
            problem("e", "weighted", "shortest path in a weighted graph"),
        ];
        let s = similar_problems(&ps, 2);
        assert_eq!(s[0], [4, 1]);
        assert!(!s[2].contains(&2) && s[2][0] == 3);
        assert_eq!(s, similar_problems(&ps, 2), "deterministic");
        // Identical texts tie: the lower id comes first.
        let twins = vec![
            problem("z", "t", "same words here"),
            problem("y", "t", "same words here"),
            problem("x", "t", "same words here"),
        ];
        assert_eq!(similar_problems(&twins, 2)[0], [2, 1]);
    }

    #[test]
    fn answers_are_checked_query_by_query() {
        let cfg = QueriesConfig::default();
        let long = "how do I find the shortest contiguous stretch of readings in which some value appears twice, returning minus one when no value repeats";
        let v = |l: &str| format!("{long} in {l}");
        let answer = serde_json::json!({"queries": [
            {"type": "title_search", "query": long, "variants": {"python": v("Python"), "cpp": v("C++"), "java": long, "go": "too short in Go", "ruby": v("Ruby")}},
            {"type": "description_search", "query": "given n readings and k queries find the shortest window where a value repeats, or print minus one if none does", "variants": {}},
            {"type": "algorithm_search", "query": long, "variants": {}}
        ]});
        let p = parse(&answer.to_string(), &cfg).unwrap();
        assert_eq!(p.kept.len(), 1);
        assert_eq!(
            p.kept[0].2.keys().copied().collect::<Vec<_>>(),
            [Language::Python, Language::Cpp, Language::Ruby]
        );
        let reasons: Vec<(&str, &str)> =
            p.dropped.iter().map(|(s, r)| (s.as_str(), r.kind())).collect();
        assert_eq!(
            reasons,
            [
                ("title_search/java", "repeat"),
                ("title_search/go", "word_count"),
                ("description_search", "placeholder_variable"),
                ("algorithm_search", "repeat")
            ]
        );
        let java = serde_json::json!({"queries": [{"type": "title_search", "query": long, "variants": {"java": format!("{long} please")}}]});
        let p = parse(&java.to_string(), &cfg).unwrap();
        assert!(
            matches!(&p.dropped[..], [_, _, (s, RejectReason::LanguageNotNamed { .. }), ..] if s == "title_search/java"),
            "{:?}",
            p.dropped
        );
        let none = serde_json::json!({"queries": [{"type": "title_search", "query": "sort numbers", "variants": {}}]});
        assert_eq!(parse(&none.to_string(), &cfg).unwrap_err(), RejectReason::NoQueries);
    }
}
