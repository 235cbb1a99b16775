//! The leaderboard (issue #18): retrievers' results across releases, filtered by time.
//!
//! CoREB judges a model fairly only on problems published after its training cutoff. The
//! results store holds every recorded evaluation (`coreb eval --record`); the leaderboard
//! averages them over a window of release months, optionally only over the releases whose
//! contest window starts after each model's declared cutoff, and shows the releases' own
//! figures beside them.
//!
//! - [`record`]: the store's rows (one per model, release, task, subtask, language, metric)
//!   and the record id that makes re-recording idempotent.
//! - [`frames`]: the polars analytics over the store (latest record per model, release and
//!   task; window means).
//! - [`site`]: the static site, one HTML page and its data (`data.js`), whose script computes
//!   the same means as [`view`] when the window or the cutoff toggle moves.
//!
//! Definitions (the page's script and [`view`] follow them alike):
//! - a release's month is the month of its window's last day (else the `vYYYYMM` of its name);
//! - a release is *after a cutoff* when its window's first day is later than the cutoff;
//! - a model's task mean is the mean over the releases in the window (and after its cutoff,
//!   when asked; a model without a declared cutoff keeps every release) of its value on the
//!   task's `all` group; likewise per subtask and per language;
//! - a model's average is the mean of its task means over every task of the store, and is
//!   absent when any task mean is;
//! - a model's overall score (the authors' site's, weighted by queries) is the mean of its
//!   values on the `all` group of every (release, task) it has in the window, each weighted by
//!   the queries it averages: Σ value × queries / Σ queries, i.e. the mean over every query of
//!   the window's releases and tasks. It is absent when the average is (and when no query is
//!   counted); rows are ranked by overall score (absent last), then by name;
//! - a model's category is `code`, `general` or `closed` as recorded (`coreb eval --record
//!   --category`; the one of its latest record that names one), else `unknown`; a category
//!   filter keeps the rows (and breakdowns and plot series) of that category's models only,
//!   ranked among themselves, their numbers unchanged.
//!
//! - [`store`]: the results store on disk (`coreb eval --record` writes it), the releases'
//!   MANIFESTs and the audit reports read beside it.
//! - [`table`]: one record's rows as a Parquet file (the Arrow schema and its writer), which
//!   [`store`] writes.
//!
//! Only [`store`] reads and writes files (through [`table`]): it reads the releases' MANIFESTs and audits and lists
//! the store's files; [`frames`] scans those files.

pub mod frames;
pub mod record;
pub mod site;
pub mod store;
pub mod table;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use frames::{FrameError, MeanRow, StoreFrames, WindowFilter, WindowRelease};
use record::{ALL, CATEGORIES, ContestWindow, UNKNOWN_CATEGORY, metric_order};

/// The metric a leaderboard shows first, when the store has it.
pub const DEFAULT_METRIC: &str = "ndcg@10";

/// Why a leaderboard could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LeaderboardError {
    /// The store could not be read or queried.
    #[error("results store: {0}")]
    Frames(#[from] FrameError),
    /// A window bound is not a month.
    #[error("`{0}`: expected a month `YYYY-MM`")]
    BadMonth(String),
    /// The window ends before it starts.
    #[error("the window starts (`{from}`) after it ends (`{to}`)")]
    EmptyWindow {
        /// First month.
        from: String,
        /// Last month.
        to: String,
    },
    /// The category asked for is none of the leaderboard's.
    #[error("category `{0}`: expected one of `code`, `general`, `closed`, `unknown`")]
    UnknownCategory(String),
    /// The metric asked for is not in the store.
    #[error("metric `{metric}` is not in the results store (it has: {available})")]
    UnknownMetric {
        /// The metric asked for.
        metric: String,
        /// Those recorded.
        available: String,
    },
}

/// pass@1 on the original problems against their rewrites, from a `coreb audit <release>
/// model` report (`model.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditFigure {
    /// The model audited.
    pub model: String,
    /// The language of its solutions.
    pub language: String,
    /// Samples per problem and version.
    pub samples: u32,
    /// Problems counted.
    pub problems: usize,
    /// Mean pass@1 on the originals.
    pub pass_at_1_original: f64,
    /// Mean pass@1 on the rewrites.
    pub pass_at_1_rewritten: f64,
    /// Original − rewritten.
    pub drop: f64,
    /// Drop / original.
    pub relative_drop: Option<f64>,
}

/// A release's own figures, from its `MANIFEST.json` (or, for a release the store names but
/// the releases directory lacks, from the store's rows).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReleaseInfo {
    /// Version.
    pub version: String,
    /// Its month (`YYYY-MM`), see the module doc.
    pub month: String,
    /// Its contest window.
    #[serde(flatten)]
    pub window: ContestWindow,
    /// Whether its directory was found (else only the store knows it).
    pub published: bool,
    /// Problems.
    pub problems: Option<u64>,
    /// Queries per task.
    pub queries: BTreeMap<String, u64>,
    /// Code documents.
    pub code_docs: Option<u64>,
    /// Text documents.
    pub text_docs: Option<u64>,
    /// BM25 nDCG@10 per task, as the release gates measured it.
    pub bm25_ndcg10: BTreeMap<String, f64>,
    /// The gates' BM25 band `[min, max]`.
    pub bm25_band: Option<[f64; 2]>,
    /// Share of queries with a hard negative.
    pub hard_negative_share: Option<f64>,
    /// Its gate.
    pub min_hard_negative_share: Option<f64>,
    /// Validity checks (`coreb check`) passed at publication, where the MANIFEST records them.
    pub checks_passed: Option<u64>,
    /// Model audits of the release (pass@1 original vs rewritten).
    pub audits: Vec<AuditFigure>,
}

/// The month of a release: its window's last day's, else its `vYYYYMM` name's, else empty.
pub fn release_month(version: &str, window_end: Option<&str>) -> String {
    if let Some(end) = window_end.filter(|e| e.len() >= 7) {
        return end[..7].to_owned();
    }
    let digits = version.strip_prefix('v').unwrap_or("");
    if digits.len() == 6 && digits.bytes().all(|b| b.is_ascii_digit()) {
        return format!("{}-{}", &digits[..4], &digits[4..]);
    }
    String::new()
}

impl ReleaseInfo {
    /// The figures of a release from its MANIFEST's `counts` (fields absent from an older
    /// MANIFEST stay empty).
    pub fn from_manifest(
        version: &str,
        window: ContestWindow,
        counts: &serde_json::Value,
    ) -> ReleaseInfo {
        let u = |v: &serde_json::Value| v.as_u64();
        let qrels = &counts["qrels"];
        let mut queries: BTreeMap<String, u64> = BTreeMap::new();
        if let Some(map) = qrels["queries"].as_object() {
            for (key, n) in map {
                let task = key.split('/').next().unwrap_or(key).to_owned();
                *queries.entry(task).or_default() += n.as_u64().unwrap_or(0);
            }
        }
        let total: u64 = queries.values().sum();
        let gates = &counts["gates"];
        let bm25_band = match (gates["bm25_ndcg10_min"].as_f64(), gates["bm25_ndcg10_max"].as_f64())
        {
            (Some(lo), Some(hi)) => Some([lo, hi]),
            _ => None,
        };
        ReleaseInfo {
            published: true,
            problems: u(&qrels["problems"]),
            queries,
            code_docs: u(&qrels["code_docs"]),
            text_docs: u(&qrels["text_docs"]),
            bm25_ndcg10: counts["bm25_ndcg10"]
                .as_object()
                .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))).collect())
                .unwrap_or_default(),
            bm25_band,
            hard_negative_share: u(&qrels["with_hard_negatives"])
                .filter(|_| total > 0)
                .map(|n| n as f64 / total as f64),
            min_hard_negative_share: gates["min_hard_negative_share"].as_f64(),
            checks_passed: u(&counts["checks_passed"]),
            ..ReleaseInfo::from_store(version, window)
        }
    }

    /// A release only the store knows.
    pub fn from_store(version: &str, window: ContestWindow) -> ReleaseInfo {
        ReleaseInfo {
            version: version.to_owned(),
            month: release_month(version, window.end.as_deref()),
            window,
            published: false,
            problems: None,
            queries: BTreeMap::new(),
            code_docs: None,
            text_docs: None,
            bm25_ndcg10: BTreeMap::new(),
            bm25_band: None,
            hard_negative_share: None,
            min_hard_negative_share: None,
            checks_passed: None,
            audits: Vec::new(),
        }
    }
}

/// A model of the leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelInfo {
    /// Its name.
    pub name: String,
    /// The retriever of its latest record.
    pub retriever: String,
    /// Its declared training cutoff (of its latest record).
    pub cutoff: Option<String>,
    /// Its category (`code`, `general`, `closed`; `None`: recorded without one, shown as
    /// `unknown`).
    pub category: Option<String>,
    /// Records in the store.
    pub records: u64,
    /// Records superseded by a later record of the same release and task.
    pub superseded: u64,
}

/// One value: indices into `models`, `releases`, `tasks`, `groups`, `metrics`, then the
/// value and the queries it averages.
pub type Cell = (usize, usize, usize, usize, usize, f64, u64);

/// Everything the page shows, as `data.js` holds it and `coreb leaderboard --json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leaderboard {
    /// Format tag.
    pub format: &'static str,
    /// The metric shown first.
    pub default_metric: String,
    /// Every metric recorded, in display order.
    pub metrics: Vec<String>,
    /// Every task recorded, by name.
    pub tasks: Vec<String>,
    /// The categories a model may have, the filter's choices: `code`, `general`, `closed`,
    /// `unknown`.
    pub categories: Vec<String>,
    /// Query groups: `all`, `subtask:<name>`, `language:<name>`.
    pub groups: Vec<String>,
    /// Release months, sorted (the window control's steps).
    pub months: Vec<String>,
    /// Releases by month, then version.
    pub releases: Vec<ReleaseInfo>,
    /// Models by name.
    pub models: Vec<ModelInfo>,
    /// The latest value of every (model, release, task, group, metric).
    pub cells: Vec<Cell>,
}

/// Which releases and metric a [`View`] averages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ViewSpec {
    /// First month, inclusive (`None`: the first release's).
    pub from: Option<String>,
    /// Last month, inclusive.
    pub to: Option<String>,
    /// Only releases after each model's cutoff.
    pub after_cutoff: bool,
    /// The metric (`None`: [`Leaderboard::default_metric`]).
    pub metric: Option<String>,
    /// Only the models of this category (`code`, `general`, `closed`, `unknown`; `None`:
    /// every model).
    pub category: Option<String>,
}

/// A mean over the releases of a window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WindowMean {
    /// The mean.
    pub mean: f64,
    /// Releases averaged.
    pub releases: u64,
}

/// A row of the main table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViewRow {
    /// 1-based position.
    pub rank: usize,
    /// Model name.
    pub model: String,
    /// Its cutoff.
    pub cutoff: Option<String>,
    /// Its category (`unknown` when recorded without one).
    pub category: String,
    /// Task means (absent: no release of the window has the task).
    pub tasks: BTreeMap<String, Option<WindowMean>>,
    /// Mean of the task means, when every task has one.
    pub average: Option<f64>,
    /// The overall score: the query-weighted mean of its values on every (release, task) of
    /// the window, when the average is shown (see the module doc). Rows are ranked by it.
    pub overall: Option<f64>,
    /// The queries the overall score weighs (Σ over the window's releases and tasks).
    pub queries: u64,
    /// The releases the row averages.
    pub releases: Vec<String>,
}

/// A model's mean on one subtask or language of a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupMean {
    /// Model name.
    pub model: String,
    /// Task.
    pub task: String,
    /// Subtask or language.
    pub group: String,
    /// The mean over the window.
    pub mean: WindowMean,
}

/// A model's value on one release (a point of the per-month plot).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesPoint {
    /// Model name.
    pub model: String,
    /// Release version.
    pub release: String,
    /// Release month.
    pub month: String,
    /// Task, or `average` (the mean over every task, when the release has them all).
    pub task: String,
    /// The value.
    pub value: f64,
}

/// The numbers of the page in one state of its controls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct View {
    /// The metric.
    pub metric: String,
    /// First month.
    pub from: Option<String>,
    /// Last month.
    pub to: Option<String>,
    /// Only releases after each model's cutoff.
    pub after_cutoff: bool,
    /// The category shown (`None`: every model).
    pub category: Option<String>,
    /// The main table, ranked.
    pub rows: Vec<ViewRow>,
    /// Per task and subtask.
    pub by_subtask: Vec<GroupMean>,
    /// Per task and language.
    pub by_language: Vec<GroupMean>,
    /// Every model's value per release (whatever the window), for the plot.
    pub series: Vec<SeriesPoint>,
}

fn group_name(subtask: &str, language: &str) -> String {
    match (subtask, language) {
        (ALL, ALL) => ALL.to_owned(),
        (s, ALL) => format!("subtask:{s}"),
        (_, l) => format!("language:{l}"),
    }
}

fn check_month(m: &Option<String>) -> Result<(), LeaderboardError> {
    if let Some(m) = m {
        let ok = m.len() == 7
            && m.as_bytes()[4] == b'-'
            && m.bytes().enumerate().all(|(i, b)| i == 4 || b.is_ascii_digit())
            && matches!(
                &m[5..],
                "01" | "02" | "03" | "04" | "05" | "06" | "07" | "08" | "09" | "10" | "11" | "12"
            );
        if !ok {
            return Err(LeaderboardError::BadMonth(m.clone()));
        }
    }
    Ok(())
}

/// The leaderboard of the releases found (`published`) and the store's records. Releases the
/// store names but `published` lacks are added from the store's rows.
pub fn build(
    published: Vec<ReleaseInfo>,
    store: &StoreFrames,
) -> Result<Leaderboard, LeaderboardError> {
    let mut releases = published;
    let known: BTreeSet<String> = releases.iter().map(|r| r.version.clone()).collect();
    for r in store.releases()? {
        if !known.contains(&r.release) {
            releases.push(ReleaseInfo::from_store(&r.release, r.window));
        }
    }
    releases.sort_by(|a, b| (&a.month, &a.version).cmp(&(&b.month, &b.version)));
    let months: Vec<String> =
        releases.iter().map(|r| r.month.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    let models: Vec<ModelInfo> = store
        .models()?
        .into_iter()
        .map(|m| ModelInfo {
            name: m.label.model,
            retriever: m.label.retriever,
            cutoff: m.label.cutoff,
            category: m.label.category,
            records: m.records,
            superseded: m.records - m.current_records,
        })
        .collect();
    let rows = store.cells()?;
    let mut metrics: Vec<String> =
        rows.iter().map(|c| c.metric.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    metrics.sort_by_key(|m| metric_order(m));
    let tasks: Vec<String> =
        rows.iter().map(|c| c.task.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    let mut groups: Vec<String> = rows
        .iter()
        .map(|c| group_name(&c.subtask, &c.language))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // `all` first, then subtasks, then languages, each by name.
    groups.sort_by_key(|g| (g != ALL, g.starts_with("language:"), g.clone()));
    let index = |list: &[String], key: &str| list.iter().position(|x| x == key);
    let model_names: Vec<String> = models.iter().map(|m| m.name.clone()).collect();
    let versions: Vec<String> = releases.iter().map(|r| r.version.clone()).collect();
    let cells = rows
        .iter()
        .filter_map(|c| {
            Some((
                index(&model_names, &c.model)?,
                index(&versions, &c.release)?,
                index(&tasks, &c.task)?,
                index(&groups, &group_name(&c.subtask, &c.language))?,
                index(&metrics, &c.metric)?,
                c.value,
                c.num_queries,
            ))
        })
        .collect();
    let default_metric = if metrics.iter().any(|m| m == DEFAULT_METRIC) {
        DEFAULT_METRIC.to_owned()
    } else {
        metrics.first().cloned().unwrap_or_else(|| DEFAULT_METRIC.to_owned())
    };
    Ok(Leaderboard {
        format: "coreb-leaderboard/1",
        default_metric,
        metrics,
        tasks,
        categories: CATEGORIES.iter().chain([&UNKNOWN_CATEGORY]).map(|c| (*c).to_owned()).collect(),
        groups,
        months,
        releases,
        models,
        cells,
    })
}

/// The page's numbers in one state of its controls, computed by [`frames`] over the store.
pub fn view(
    board: &Leaderboard,
    store: &StoreFrames,
    spec: &ViewSpec,
) -> Result<View, LeaderboardError> {
    check_month(&spec.from)?;
    check_month(&spec.to)?;
    if let (Some(from), Some(to)) = (&spec.from, &spec.to)
        && from > to
    {
        return Err(LeaderboardError::EmptyWindow { from: from.clone(), to: to.clone() });
    }
    if let Some(c) = &spec.category
        && !CATEGORIES.contains(&c.as_str())
        && c != UNKNOWN_CATEGORY
    {
        return Err(LeaderboardError::UnknownCategory(c.clone()));
    }
    let metric = spec.metric.clone().unwrap_or_else(|| board.default_metric.clone());
    if !board.metrics.is_empty() && !board.metrics.contains(&metric) {
        return Err(LeaderboardError::UnknownMetric {
            metric,
            available: board.metrics.join(", "),
        });
    }
    let releases: Vec<WindowRelease> = board
        .releases
        .iter()
        .map(|r| WindowRelease {
            release: r.version.clone(),
            month: r.month.clone(),
            window_start: r.window.start.clone(),
        })
        .collect();
    let filter = WindowFilter {
        from: spec.from.clone(),
        to: spec.to.clone(),
        after_cutoff: spec.after_cutoff,
        metric: metric.clone(),
    };
    let (means, used) = store.means(&releases, &filter)?;
    let weighted = store.weighted(&releases, &filter)?;
    let shown: BTreeSet<&str> = board
        .models
        .iter()
        .filter(|m| spec.category.as_deref().is_none_or(|c| category_of(m) == c))
        .map(|m| m.name.as_str())
        .collect();
    let mut rows: Vec<ViewRow> = board
        .models
        .iter()
        .filter(|m| shown.contains(m.name.as_str()))
        .map(|m| {
            let tasks: BTreeMap<String, Option<WindowMean>> = board
                .tasks
                .iter()
                .map(|t| {
                    let mean = means.iter().find(|r| {
                        r.model == m.name && &r.task == t && r.subtask == ALL && r.language == ALL
                    });
                    (t.clone(), mean.map(|r| WindowMean { mean: r.mean, releases: r.releases }))
                })
                .collect();
            let all: Option<Vec<f64>> =
                tasks.values().map(|v| v.as_ref().map(|w| w.mean)).collect();
            let average =
                all.filter(|v| !v.is_empty()).map(|v| v.iter().sum::<f64>() / v.len() as f64);
            let releases =
                used.iter().filter(|(model, _)| model == &m.name).map(|(_, r)| r.clone()).collect();
            let parts = weighted.iter().find(|w| w.model == m.name);
            let queries = parts.map_or(0, |w| w.queries);
            let overall = parts
                .filter(|w| average.is_some() && w.queries > 0)
                .map(|w| w.weighted / w.queries as f64);
            ViewRow {
                rank: 0,
                model: m.name.clone(),
                cutoff: m.cutoff.clone(),
                category: category_of(m).to_owned(),
                tasks,
                average,
                overall,
                queries,
                releases,
            }
        })
        .collect();
    rows.sort_by(|a, b| match (a.overall, b.overall) {
        (Some(x), Some(y)) => y.total_cmp(&x).then_with(|| a.model.cmp(&b.model)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.model.cmp(&b.model),
    });
    for (i, r) in rows.iter_mut().enumerate() {
        r.rank = i + 1;
    }
    let group = |r: &MeanRow, name: &str| GroupMean {
        model: r.model.clone(),
        task: r.task.clone(),
        group: name.to_owned(),
        mean: WindowMean { mean: r.mean, releases: r.releases },
    };
    let means: Vec<&MeanRow> = means.iter().filter(|r| shown.contains(r.model.as_str())).collect();
    let by_subtask =
        means.iter().filter(|r| r.subtask != ALL).map(|r| group(r, &r.subtask)).collect();
    let by_language =
        means.iter().filter(|r| r.language != ALL).map(|r| group(r, &r.language)).collect();
    Ok(View {
        metric: metric.clone(),
        from: spec.from.clone(),
        to: spec.to.clone(),
        after_cutoff: spec.after_cutoff,
        category: spec.category.clone(),
        rows,
        by_subtask,
        by_language,
        series: series(board, &metric)
            .into_iter()
            .filter(|p| shown.contains(p.model.as_str()))
            .collect(),
    })
}

/// A model's category as the leaderboard shows it (`unknown` when recorded without one).
pub fn category_of(model: &ModelInfo) -> &str {
    model.category.as_deref().unwrap_or(UNKNOWN_CATEGORY)
}

/// Every model's value per release and task on the `all` group, and its mean over the tasks
/// where the release has every task.
fn series(board: &Leaderboard, metric: &str) -> Vec<SeriesPoint> {
    let Some(k) = board.metrics.iter().position(|m| m == metric) else {
        return Vec::new();
    };
    let Some(g) = board.groups.iter().position(|x| x == ALL) else {
        return Vec::new();
    };
    let mut by: BTreeMap<(usize, usize), BTreeMap<usize, f64>> = BTreeMap::new();
    for &(m, r, t, cg, ck, v, _) in &board.cells {
        if cg == g && ck == k {
            by.entry((m, r)).or_default().insert(t, v);
        }
    }
    let mut out = Vec::new();
    for ((m, r), values) in by {
        let point = |task: &str, value: f64| SeriesPoint {
            model: board.models[m].name.clone(),
            release: board.releases[r].version.clone(),
            month: board.releases[r].month.clone(),
            task: task.to_owned(),
            value,
        };
        for (t, v) in &values {
            out.push(point(&board.tasks[*t], *v));
        }
        if values.len() == board.tasks.len() {
            out.push(point("average", values.values().sum::<f64>() / values.len() as f64));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_months_come_from_the_window_else_the_name() {
        assert_eq!(release_month("v202503", Some("2025-03-31")), "2025-03");
        assert_eq!(release_month("sample", Some("2025-01-31")), "2025-01");
        assert_eq!(release_month("v202502", None), "2025-02");
        assert_eq!(release_month("rc1", None), "");
    }

    #[test]
    fn manifest_counts_give_the_release_figures() {
        let counts = serde_json::json!({
            "bm25_ndcg10": {"code2code": 0.4551, "text2code": 0.2613},
            "gates": {"bm25_ndcg10_max": 0.95, "bm25_ndcg10_min": 0.05, "min_hard_negative_share": 0.8},
            "qrels": {"code_docs": 100, "problems": 10, "text_docs": 60, "with_hard_negatives": 30,
                      "queries": {"code2code/cross_lang": 10, "code2code/cross_model": 10, "text2code/full": 20}},
        });
        let window = record::ContestWindow {
            start: Some("2025-01-01".into()),
            end: Some("2025-03-31".into()),
        };
        let r = ReleaseInfo::from_manifest("v202503", window, &counts);
        assert_eq!(r.month, "2025-03");
        assert_eq!((r.problems, r.code_docs, r.text_docs), (Some(10), Some(100), Some(60)));
        assert_eq!(r.queries, [("code2code".to_owned(), 20), ("text2code".to_owned(), 20)].into());
        assert_eq!(r.bm25_band, Some([0.05, 0.95]));
        assert_eq!(r.hard_negative_share, Some(0.75));
        assert_eq!(r.checks_passed, None);
        let with_checks = ReleaseInfo::from_manifest(
            "v1",
            Default::default(),
            &serde_json::json!({"checks_passed": 31}),
        );
        assert_eq!(
            (with_checks.checks_passed, with_checks.problems, with_checks.hard_negative_share),
            (Some(31), None, None)
        );
    }

    /// One `all`-group ndcg@10 row of a record.
    fn stored(
        model: &str,
        category: Option<&str>,
        release: &str,
        task: &str,
        value: f64,
        queries: u64,
    ) -> record::ResultRow {
        let month = if release == "v202501" { "01" } else { "02" };
        record::ResultRow {
            record_id: format!("{model}-{release}"),
            recorded_at: "2025-03-01T00:00:00Z".into(),
            label: record::ModelLabel {
                model: model.into(),
                retriever: "run:x".into(),
                cutoff: None,
                category: category.map(str::to_owned),
            },
            release: record::ReleaseRef {
                version: release.into(),
                manifest_sha256: format!("sha-{release}"),
                window: record::ContestWindow {
                    start: Some(format!("2025-{month}-01")),
                    end: Some(format!("2025-{month}-28")),
                },
            },
            task: task.into(),
            subtask: ALL.into(),
            language: ALL.into(),
            metric: "ndcg@10".into(),
            value,
            ci: None,
            num_queries: queries,
            run_sha256: "ab".into(),
            prompts: None,
            tool_version: "0.1.0".into(),
        }
    }

    /// A record file as coreb wrote them before categories: the same columns but `category`.
    fn write_without_category(path: &std::path::Path, rows: &[record::ResultRow]) {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let full = path.with_extension("full");
        table::write_results(&full, rows).unwrap();
        let reader =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&full).unwrap()).unwrap();
        let schema = reader.schema().clone();
        let keep: Vec<usize> =
            (0..schema.fields().len()).filter(|&i| schema.field(i).name() != "category").collect();
        let batches: Vec<_> =
            reader.build().unwrap().map(|b| b.unwrap().project(&keep).unwrap()).collect();
        let old = std::sync::Arc::new(schema.project(&keep).unwrap());
        coreb_data::tables::write_atomic(path, old, batches.into_iter()).unwrap();
        fs_err::remove_file(full).unwrap();
    }

    /// The overall score and the category filter against a hand computation from the records.
    #[test]
    fn the_overall_score_weighs_by_queries_and_the_category_filter_keeps_the_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let (t2c, c2c) = ("text2code", "code2code");
        let records: [(&str, Vec<record::ResultRow>); 4] = [
            (
                "a1",
                vec![
                    stored("a", Some("code"), "v202501", t2c, 0.5, 10),
                    stored("a", Some("code"), "v202501", c2c, 0.8, 30),
                ],
            ),
            (
                "a2",
                vec![
                    stored("a", Some("code"), "v202502", t2c, 0.2, 20),
                    stored("a", Some("code"), "v202502", c2c, 0.6, 10),
                ],
            ),
            (
                "b1",
                vec![
                    stored("b", None, "v202501", t2c, 0.9, 10),
                    stored("b", None, "v202501", c2c, 0.3, 30),
                ],
            ),
            ("c1", vec![stored("c", Some("general"), "v202501", t2c, 0.7, 10)]),
        ];
        let mut files = Vec::new();
        for (name, rows) in &records {
            let path = dir.path().join(format!("{name}.parquet"));
            if *name == "b1" {
                write_without_category(&path, rows);
            } else {
                table::write_results(&path, rows).unwrap();
            }
            files.push(path);
        }
        let store = StoreFrames::open(&files).unwrap();
        let board = build(Vec::new(), &store).unwrap();
        let categories: Vec<Option<&str>> =
            board.models.iter().map(|m| m.category.as_deref()).collect();
        assert_eq!(categories, [Some("code"), None, Some("general")]);
        assert_eq!(board.categories, ["code", "general", "closed", "unknown"]);

        let all = view(&board, &store, &ViewSpec::default()).unwrap();
        let row = |v: &View, m: &str| v.rows.iter().find(|r| r.model == m).unwrap().clone();
        // By hand: a's task means are (0.5 + 0.2) / 2 and (0.8 + 0.6) / 2, their mean 0.525;
        // its overall (0.5·10 + 0.8·30 + 0.2·20 + 0.6·10) / (10 + 30 + 20 + 10) = 39 / 70.
        let a = row(&all, "a");
        assert!((a.average.unwrap() - 0.525).abs() < 1e-12, "{a:?}");
        assert!((a.overall.unwrap() - 39.0 / 70.0).abs() < 1e-12, "{a:?}");
        assert_eq!((a.queries, a.category.as_str()), (70, "code"));
        // b (recorded before categories: unknown): mean (0.9 + 0.3) / 2 = 0.6, above a's, but
        // overall (0.9·10 + 0.3·30) / 40 = 0.45, below: the ranking follows the overall score.
        let b = row(&all, "b");
        assert!((b.average.unwrap() - 0.6).abs() < 1e-12, "{b:?}");
        assert!((b.overall.unwrap() - 0.45).abs() < 1e-12, "{b:?}");
        assert_eq!((b.queries, b.category.as_str()), (40, "unknown"));
        // c lacks code2code: neither an average nor an overall score, ranked last.
        let c = row(&all, "c");
        assert_eq!((c.average, c.overall, c.queries), (None, None, 10));
        let order: Vec<(usize, &str)> =
            all.rows.iter().map(|r| (r.rank, r.model.as_str())).collect();
        assert_eq!(order, [(1, "a"), (2, "b"), (3, "c")]);

        // The filter keeps a category's rows, ranked among themselves, numbers unchanged.
        for (category, model) in [("code", "a"), ("unknown", "b"), ("general", "c")] {
            let spec = ViewSpec { category: Some(category.into()), ..ViewSpec::default() };
            let v = view(&board, &store, &spec).unwrap();
            let rows: Vec<ViewRow> = v.rows.clone();
            assert_eq!(rows.len(), 1, "{category}: {rows:?}");
            let mut expected = row(&all, model);
            expected.rank = 1;
            assert_eq!(rows[0], expected, "{category}");
            assert!(v.series.iter().all(|p| p.model == model), "{category}");
        }
        let closed = ViewSpec { category: Some("closed".into()), ..ViewSpec::default() };
        assert!(view(&board, &store, &closed).unwrap().rows.is_empty());
        let bad = ViewSpec { category: Some("open".into()), ..ViewSpec::default() };
        assert!(matches!(
            view(&board, &store, &bad),
            Err(LeaderboardError::UnknownCategory(c)) if c == "open"
        ));

        // A window of February alone: a's overall is (0.2·20 + 0.6·10) / 30; b and c have none.
        let feb = ViewSpec { from: Some("2025-02".into()), ..ViewSpec::default() };
        let v = view(&board, &store, &feb).unwrap();
        let a = row(&v, "a");
        assert!((a.overall.unwrap() - 10.0 / 30.0).abs() < 1e-12, "{a:?}");
        assert_eq!(a.queries, 30);
        assert_eq!((row(&v, "b").overall, row(&v, "b").queries), (None, 0));
    }

    #[test]
    fn window_bounds_must_be_months() {
        for good in ["2025-01", "1999-12"] {
            assert!(check_month(&Some(good.into())).is_ok(), "{good}");
        }
        for bad in ["2025-13", "2025-1", "202501", "2025-01-01", "abcd-01"] {
            assert!(
                matches!(check_month(&Some(bad.into())), Err(LeaderboardError::BadMonth(_))),
                "{bad}"
            );
        }
    }
}
