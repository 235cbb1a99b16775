//! The rows an evaluation adds to the results store (`coreb eval --record`): one row per
//! (model, release, task, subtask, language, metric), and the record id that makes recording
//! the same run twice a no-op.
//!
//! A task's summary over all its queries is the row with `subtask = language = "all"`; each
//! subtask has a row with `language = "all"` and each language constraint one with
//! `subtask = "all"` (the report groups queries one way or the other, never both). Metrics are
//! named `<measure>@<k>` (`ndcg@10`, `map@10`, `recall@10`, `p@10`, `mrr@10`, `r_cap@10`) plus
//! `hn_intrusion` (the hard-negative intrusion rate, where the task has hard negatives).
//!
//! Pure: builds rows and ids from a report and what the caller read. Does NOT write (see
//! [`super::table`]) nor read the clock (the caller passes `recorded_at`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::report::{AtKIntervals, EvalReport, TaskReport};
use crate::significance::Interval;
use coreb_base::hashing::sha256_hex;
use coreb_data::problem::DateWindow;
use coreb_trec::coreb::Summary;

/// The group label of "every query" in the `subtask` and `language` columns.
pub const ALL: &str = "all";

/// The measure families of a row's metric name, in display order.
pub const MEASURES: [&str; 6] = ["ndcg", "map", "recall", "p", "mrr", "r_cap"];

/// The metric name of the hard-negative intrusion rate.
pub const INTRUSION: &str = "hn_intrusion";

/// A model's category, as the leaderboard filters by it: a code model, a general-purpose
/// model, or a closed one (served only behind an API). A record without one (made before
/// categories, or without `--category`) is shown as [`UNKNOWN_CATEGORY`].
pub const CATEGORIES: [&str; 3] = ["code", "general", "closed"];

/// How the leaderboard names the category of a model recorded without one.
pub const UNKNOWN_CATEGORY: &str = "unknown";

/// The release a run was evaluated on, as its `MANIFEST.json` says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReleaseRef {
    /// Release version (`v202503`).
    pub version: String,
    /// sha256 of its `MANIFEST.json` (which holds the sha256 of every file of the release).
    pub manifest_sha256: String,
    /// Its contest window.
    #[serde(flatten)]
    pub window: ContestWindow,
}

/// A release's contest window, as its MANIFEST gives it, the store's rows and the
/// leaderboard's releases carry it (keys `window_start`, `window_end`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ContestWindow {
    /// First contest day (`YYYY-MM-DD`).
    #[serde(rename = "window_start")]
    pub start: Option<String>,
    /// Last contest day.
    #[serde(rename = "window_end")]
    pub end: Option<String>,
}

impl From<&DateWindow> for ContestWindow {
    fn from(w: &DateWindow) -> Self {
        ContestWindow { start: w.start.clone(), end: w.end.clone() }
    }
}

/// The model a record is of, as the leaderboard shows it: what every row of the record and
/// every model of the store carry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelLabel {
    /// The model (or retriever) name the leaderboard shows.
    pub model: String,
    /// The retriever as `coreb eval` describes it (`bm25`, `embed:<model>+rerank:<model>`,
    /// `run:<file>`).
    pub retriever: String,
    /// The model's declared training cutoff (`YYYY-MM-DD`, see [`parse_cutoff`]).
    pub cutoff: Option<String>,
    /// The model's category, one of [`CATEGORIES`] (see [`parse_category`]). Left out of the
    /// record id when absent, so that a record made before categories keeps its id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

/// Who and what is recorded, besides the report's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordMeta {
    /// The model (its fields stand in the record id as the meta's own).
    #[serde(flatten)]
    pub label: ModelLabel,
    /// The release.
    pub release: ReleaseRef,
    /// sha256 of each task's run file (`task → hex`).
    pub run_sha256: BTreeMap<String, String>,
    /// coreb's version.
    pub tool_version: String,
}

/// One row of the results store.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultRow {
    /// The record (one `coreb eval --record`) the row belongs to.
    pub record_id: String,
    /// When it was recorded (RFC 3339, UTC): the later record of a (model, release, task)
    /// supersedes the earlier one.
    pub recorded_at: String,
    /// The model (columns `model`, `retriever`, `cutoff`, `category`).
    pub label: ModelLabel,
    /// The release (columns `release`, `release_manifest_sha256`, `window_start`,
    /// `window_end`).
    pub release: ReleaseRef,
    /// Task (`text2code`, `code2text`, `code2code`, or a BEIR folder's name).
    pub task: String,
    /// Subtask, or [`ALL`].
    pub subtask: String,
    /// Language constraint, or [`ALL`].
    pub language: String,
    /// Metric name (`ndcg@10`, …, [`INTRUSION`]).
    pub metric: String,
    /// Its mean over the group's queries.
    pub value: f64,
    /// Its bootstrap interval (columns `ci_low`, `ci_high`).
    pub ci: Option<Interval>,
    /// Queries averaged (for [`INTRUSION`]: queries with a hard negative).
    pub num_queries: u64,
    /// sha256 of the task's run file.
    pub run_sha256: String,
    /// The prompts a dense retriever was given (JSON), when it was given any.
    pub prompts: Option<String>,
    /// coreb's version.
    pub tool_version: String,
}

/// A cutoff that is not a date.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: expected a training cutoff as `YYYY-MM-DD` or `YYYY-MM` (the month's last day)")]
pub struct CutoffError(pub String);

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A category that is not one of [`CATEGORIES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: expected a model category, one of `code`, `general`, `closed`")]
pub struct CategoryError(pub String);

/// A model's category as given (`--category`): one of [`CATEGORIES`], exactly.
pub fn parse_category(text: &str) -> Result<String, CategoryError> {
    CATEGORIES
        .iter()
        .find(|c| **c == text)
        .map(|c| (*c).to_owned())
        .ok_or_else(|| CategoryError(text.to_owned()))
}

/// A declared training cutoff as `YYYY-MM-DD`: a date as it is, a month as its last day (a
/// model trained "up to 2025-01" has seen January).
pub fn parse_cutoff(text: &str) -> Result<String, CutoffError> {
    let bad = || CutoffError(text.to_owned());
    let parts: Vec<&str> = text.trim().split('-').collect();
    let num = |s: &str, len: usize| -> Result<u32, CutoffError> {
        if s.len() != len || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse().map_err(|_| bad())
    };
    let (year, month) = match parts.as_slice() {
        [y, m] | [y, m, _] => (num(y, 4)?, num(m, 2)?),
        _ => return Err(bad()),
    };
    if !(1..=12).contains(&month) {
        return Err(bad());
    }
    let day = match parts.as_slice() {
        [_, _, d] => num(d, 2)?,
        _ => days_in_month(year, month),
    };
    if day == 0 || day > days_in_month(year, month) {
        return Err(bad());
    }
    Ok(format!("{year:04}-{month:02}-{day:02}"))
}

/// The id of a record: sha256 over everything that determines its rows (model, cutoff,
/// release and its MANIFEST hash, each task's run hash, cut-offs, bootstrap settings, prompts).
/// The same run recorded again gets the same id.
pub fn record_id(report: &EvalReport, meta: &RecordMeta) -> String {
    #[derive(Serialize)]
    struct Key<'a> {
        format: &'static str,
        meta: &'a RecordMeta,
        tasks: Vec<&'a str>,
        ks: &'a [usize],
        bootstrap: Option<&'a crate::significance::BootstrapConfig>,
        prompts: Option<String>,
    }
    let key = Key {
        format: "coreb-results/1",
        meta,
        tasks: report.tasks.iter().map(|t| t.task.as_str()).collect(),
        ks: &report.ks,
        bootstrap: report.bootstrap.as_ref(),
        prompts: prompts_json(report),
    };
    sha256_hex(serde_json::to_string(&key).unwrap_or_default().as_bytes())
}

fn prompts_json(report: &EvalReport) -> Option<String> {
    report.prompts.as_ref().and_then(|p| serde_json::to_string(p).ok())
}

/// The rows of one evaluation, in a fixed order (task, group, metric).
pub fn rows(report: &EvalReport, meta: &RecordMeta, recorded_at: &str) -> Vec<ResultRow> {
    let id = record_id(report, meta);
    let prompts = prompts_json(report);
    let mut out = Vec::new();
    for task in &report.tasks {
        let run_sha256 = meta.run_sha256.get(&task.task).cloned().unwrap_or_default();
        let mut push = |subtask: &str,
                        language: &str,
                        metric: String,
                        value: f64,
                        ci: Option<&Interval>,
                        num_queries: usize| {
            out.push(ResultRow {
                record_id: id.clone(),
                recorded_at: recorded_at.to_owned(),
                label: meta.label.clone(),
                release: meta.release.clone(),
                task: task.task.clone(),
                subtask: subtask.to_owned(),
                language: language.to_owned(),
                metric,
                value,
                ci: ci.copied(),
                num_queries: num_queries as u64,
                run_sha256: run_sha256.clone(),
                prompts: prompts.clone(),
                tool_version: meta.tool_version.clone(),
            });
        };
        for (subtask, language, summary, ci) in groups(task) {
            for (m, name) in MEASURES.iter().enumerate() {
                let values = measure(summary, m);
                let cis = ci.map(|c| interval_measure(c, m));
                for (i, k) in summary.ks.iter().enumerate() {
                    let ci = cis.and_then(|c| c.get(i)).and_then(Option::as_ref);
                    push(
                        subtask,
                        language,
                        format!("{name}@{k}"),
                        values[i],
                        ci,
                        summary.num_queries,
                    );
                }
            }
            if let Some(rate) = summary.intrusion_rate {
                push(
                    subtask,
                    language,
                    INTRUSION.to_owned(),
                    rate,
                    None,
                    summary.with_hard_negatives,
                );
            }
        }
    }
    out
}

/// A task's groups: all queries, each subtask, each language; with their intervals.
fn groups(task: &TaskReport) -> Vec<(&str, &str, &Summary, Option<&AtKIntervals>)> {
    let ci = task.ci.as_ref();
    let mut out = vec![(ALL, ALL, &task.overall, ci.map(|c| &c.overall))];
    out.extend(
        task.by_subtask
            .iter()
            .map(|(s, v)| (s.as_str(), ALL, v, ci.and_then(|c| c.by_subtask.get(s)))),
    );
    out.extend(
        task.by_language
            .iter()
            .map(|(l, v)| (ALL, l.as_str(), v, ci.and_then(|c| c.by_language.get(l)))),
    );
    out
}

fn measure(s: &Summary, m: usize) -> &Vec<f64> {
    crate::report::AT_K[m](&s.at_k)
}

fn interval_measure(c: &AtKIntervals, m: usize) -> &Vec<Option<Interval>> {
    [&c.ndcg, &c.map, &c.recall, &c.precision, &c.mrr, &c.r_cap][m]
}

/// The display order of metric names: measure family as in [`MEASURES`], then k, then
/// [`INTRUSION`], then anything else by name.
pub fn metric_order(name: &str) -> (usize, u64, String) {
    if let Some((family, k)) = name.split_once('@')
        && let Some(pos) = MEASURES.iter().position(|m| *m == family)
    {
        return (pos, k.parse().unwrap_or(u64::MAX), String::new());
    }
    if name == INTRUSION {
        return (MEASURES.len(), 0, String::new());
    }
    (MEASURES.len() + 1, 0, name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::TaskIntervals;
    use coreb_trec::coreb::AtK;

    fn summary(v: f64, n: usize) -> Summary {
        let at = vec![v, v / 2.0];
        Summary {
            ks: vec![1, 10],
            num_queries: n,
            missing: 0,
            at_k: AtK {
                ndcg: at.clone(),
                map: at.clone(),
                recall: at.clone(),
                precision: at.clone(),
                mrr: at.clone(),
                r_cap: at,
            },
            intrusion_rate: Some(0.25),
            with_hard_negatives: 4,
        }
    }

    fn report() -> EvalReport {
        let mut task = TaskReport {
            task: "text2code".into(),
            num_docs: 3,
            level: 2,
            overall: summary(0.8, 6),
            by_subtask: [("full".to_owned(), summary(0.6, 2))].into(),
            by_language: [("python".to_owned(), summary(0.4, 3))].into(),
            ci: None,
            rerank: None,
            mteb: None,
            queries: Vec::new(),
        };
        let iv = Some(Interval { low: 0.1, high: 0.9 });
        let all = AtKIntervals {
            ndcg: vec![iv, None],
            map: vec![None, None],
            recall: vec![None, None],
            precision: vec![None, None],
            mrr: vec![None, None],
            r_cap: vec![None, None],
        };
        task.ci = Some(TaskIntervals { overall: all, ..Default::default() });
        EvalReport {
            retriever: "bm25".into(),
            ks: vec![1, 10],
            tasks: vec![task],
            bootstrap: None,
            prompts: None,
            rerank: None,
            release: None,
            run_coverage: None,
        }
    }

    fn meta() -> RecordMeta {
        RecordMeta {
            label: ModelLabel {
                model: "BM25".into(),
                retriever: "bm25".into(),
                cutoff: None,
                category: None,
            },
            release: ReleaseRef {
                version: "v202503".into(),
                manifest_sha256: "ab".into(),
                window: ContestWindow {
                    start: Some("2025-01-01".into()),
                    end: Some("2025-03-31".into()),
                },
            },
            run_sha256: [("text2code".to_owned(), "cd".to_owned())].into(),
            tool_version: "0.1.0".into(),
        }
    }

    #[test]
    fn one_row_per_group_and_metric_with_its_interval() {
        let rows = rows(&report(), &meta(), "2025-04-02T03:00:00Z");
        // 3 groups × (6 measures × 2 cut-offs + intrusion).
        assert_eq!(rows.len(), 3 * 13);
        let find = |s: &str, l: &str, m: &str| {
            rows.iter().find(|r| r.subtask == s && r.language == l && r.metric == m).unwrap()
        };
        let r = find(ALL, ALL, "ndcg@1");
        assert_eq!(
            (r.value, r.ci, r.num_queries),
            (0.8, Some(Interval { low: 0.1, high: 0.9 }), 6)
        );
        assert_eq!(find(ALL, ALL, "ndcg@10").ci, None);
        assert_eq!(find("full", ALL, "r_cap@10").value, 0.3);
        assert_eq!(find(ALL, "python", "p@1").num_queries, 3);
        let hn = find(ALL, ALL, INTRUSION);
        assert_eq!((hn.value, hn.num_queries), (0.25, 4));
        assert!(rows.iter().all(|r| r.run_sha256 == "cd"
            && r.release.version == "v202503"
            && r.record_id.len() == 64));
    }

    #[test]
    fn the_record_id_changes_with_what_determines_the_rows_only() {
        let (r, m) = (report(), meta());
        assert_eq!(record_id(&r, &m), record_id(&r, &m));
        let mut other = m.clone();
        other.run_sha256.insert("text2code".into(), "ef".into());
        assert_ne!(record_id(&r, &m), record_id(&r, &other));
        let mut other = m.clone();
        other.label.cutoff = Some("2025-01-31".into());
        assert_ne!(record_id(&r, &m), record_id(&r, &other));
        let mut other = m.clone();
        other.label.category = Some("code".into());
        assert_ne!(record_id(&r, &m), record_id(&r, &other));
        // The time of recording is not part of it: recording again is idempotent.
        assert_eq!(rows(&r, &m, "a")[0].record_id, rows(&r, &m, "b")[0].record_id);
    }

    #[test]
    fn cutoffs_are_dates_and_months_end_on_their_last_day() {
        assert_eq!(parse_cutoff("2025-01-15").unwrap(), "2025-01-15");
        assert_eq!(parse_cutoff("2024-02").unwrap(), "2024-02-29");
        assert_eq!(parse_cutoff("2023-02").unwrap(), "2023-02-28");
        assert_eq!(parse_cutoff("2025-12").unwrap(), "2025-12-31");
        for bad in
            ["2025", "2025-13", "2025-02-30", "25-01-01", "2025-1-01", "soon", "2025-01-01-01"]
        {
            assert!(parse_cutoff(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn categories_are_code_general_or_closed_exactly() {
        for c in CATEGORIES {
            assert_eq!(parse_category(c).unwrap(), c);
        }
        for bad in ["Code", "open", "", "code ", "unknown"] {
            assert_eq!(parse_category(bad), Err(CategoryError(bad.to_owned())));
        }
    }

    #[test]
    fn a_record_without_a_category_keeps_the_id_it_had_before_categories() {
        // The id of this report and meta as coreb computed it before the `category` field.
        let key = concat!(
            r#"{"format":"coreb-results/1","meta":{"model":"BM25","retriever":"bm25","cutoff":null,"#,
            r#""release":{"version":"v202503","manifest_sha256":"ab","window_start":"2025-01-01","#,
            r#""window_end":"2025-03-31"},"run_sha256":{"text2code":"cd"},"tool_version":"0.1.0"},"#,
            r#""tasks":["text2code"],"ks":[1,10],"bootstrap":null,"prompts":null}"#
        );
        assert_eq!(record_id(&report(), &meta()), sha256_hex(key.as_bytes()));
    }

    #[test]
    fn metrics_sort_by_family_then_k() {
        let mut names = vec!["map@10", "ndcg@10", "hn_intrusion", "ndcg@5", "p@1"];
        names.sort_by_key(|n| metric_order(n));
        assert_eq!(names, ["ndcg@5", "ndcg@10", "map@10", "p@1", "hn_intrusion"]);
    }
}
