//! Every polars call of the leaderboard: queries over the results store's Parquet files.
//! Each function builds one plan (scan, group-by, join, filter), collects it and hands back
//! plain Rust values, so nothing outside this module sees a polars type (polars changes its
//! API several times a year).
//!
//! - The store is append-only, so a (model, release, task) may have several records: the
//!   latest (`recorded_at`, then `record_id`) supersedes the others ([`StoreFrames::cells`]).
//! - A model's cutoff is the one of its latest record; its category the one of its latest
//!   record that names one (a store's files written before categories have no such column,
//!   read as none).
//! - A window mean is the mean, over the releases whose month lies in the window (and, with
//!   `after_cutoff`, whose contest window starts after the model's cutoff), of the model's
//!   value for a task and group ([`StoreFrames::means`]).

use std::path::PathBuf;

use polars::prelude::*;
use rayon::prelude::*;

pub use crate::check::frames::FrameError;
use crate::check::frames::strings;

use super::record::{ALL, ContestWindow, ModelLabel};

type Result<T> = std::result::Result<T, FrameError>;

/// The results store, read once (the leaderboard's columns of every file, by
/// [`crate::frames::read_parquet`]): every row of every record, and the rows of the latest
/// record of each (model, release, task).
pub struct StoreFrames {
    /// Every row (the columns the leaderboard uses); `None` for an empty store.
    all: Option<DataFrame>,
    /// The latest records' rows, with the model's cutoff (`model_cutoff`).
    latest: Option<DataFrame>,
}

/// One value of the latest record of a (model, release, task).
#[derive(Debug, Clone, PartialEq)]
pub struct CellRow {
    /// Model name.
    pub model: String,
    /// Release version.
    pub release: String,
    /// Task.
    pub task: String,
    /// Subtask or `all`.
    pub subtask: String,
    /// Language or `all`.
    pub language: String,
    /// Metric name.
    pub metric: String,
    /// The value.
    pub value: f64,
    /// Queries averaged.
    pub num_queries: u64,
}

/// A release as the store's rows describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRelease {
    /// Release version.
    pub release: String,
    /// Its contest window (of its latest record).
    pub window: ContestWindow,
}

/// The records of one MANIFEST of a release in the store.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseDigest {
    /// Release version.
    pub release: String,
    /// sha256 of the `MANIFEST.json` the records were evaluated on.
    pub manifest_sha256: String,
    /// Records made on it.
    pub records: u64,
    /// One of them (the first by id), to name in a message.
    pub example_record: String,
}

/// A model of the store.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRow {
    /// Its name, the retriever and cutoff of its latest record, and the category of its
    /// latest record that names one.
    pub label: ModelLabel,
    /// Records of this model in the store.
    pub records: u64,
    /// Records of it that are the latest of some (release, task), i.e. shown.
    pub current_records: u64,
}

/// The releases a window mean may use: every release with its month and window start.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowRelease {
    /// Release version.
    pub release: String,
    /// Its month (`YYYY-MM`).
    pub month: String,
    /// Its first contest day.
    pub window_start: Option<String>,
}

/// Which releases a window mean uses.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowFilter {
    /// First month (`YYYY-MM`), inclusive.
    pub from: Option<String>,
    /// Last month, inclusive.
    pub to: Option<String>,
    /// Only releases whose window starts after the model's cutoff (models without one keep
    /// every release).
    pub after_cutoff: bool,
    /// The metric averaged.
    pub metric: String,
}

/// A model's values on the `all` group of every (release, task) in a window, for its overall
/// score: the sum of each value times its query count, and the sum of the query counts.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedRow {
    /// Model name.
    pub model: String,
    /// Σ value × queries.
    pub weighted: f64,
    /// Σ queries.
    pub queries: u64,
}

/// A (model, release) pair.
pub type ModelRelease = (String, String);

/// A model's mean of one metric for a task and group over the releases of a window.
#[derive(Debug, Clone, PartialEq)]
pub struct MeanRow {
    /// Model name.
    pub model: String,
    /// Task.
    pub task: String,
    /// Subtask or `all`.
    pub subtask: String,
    /// Language or `all`.
    pub language: String,
    /// The mean.
    pub mean: f64,
    /// Releases averaged.
    pub releases: u64,
}

fn optional_strings(df: &DataFrame, name: &str) -> Result<Vec<Option<String>>> {
    Ok(df.column(name)?.str()?.iter().map(|s| s.map(str::to_owned)).collect())
}

fn floats(df: &DataFrame, name: &str) -> Result<Vec<f64>> {
    Ok(df.column(name)?.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}

fn counts(df: &DataFrame, name: &str) -> Result<Vec<u64>> {
    Ok(df.column(name)?.cast(&DataType::UInt64)?.u64()?.iter().map(|v| v.unwrap_or(0)).collect())
}

/// The rows of a collected frame as `$row`s, one per frame row: each field is the column of
/// its name, read by the reader named beside it ([`strings`], [`optional_strings`],
/// [`floats`], [`counts`]); a column that cannot be read returns its error (`?`).
macro_rules! frame_rows {
    ($df:expr => $row:ident { $($field:ident: $read:ident),+ $(,)? }) => {{
        let df: &DataFrame = $df;
        $(let mut $field = $read(df, stringify!($field))?;)+
        (0..df.height())
            .map(|i| $row { $($field: std::mem::take(&mut $field[i])),+ })
            .collect::<Vec<_>>()
    }};
}

/// The order "latest record last".
fn by_recording(e: Expr) -> Expr {
    e.sort_by([col("recorded_at"), col("record_id")], SortMultipleOptions::default())
}

/// The columns the leaderboard reads.
const COLUMNS: [&str; 15] = [
    "record_id",
    "recorded_at",
    "model",
    "retriever",
    "cutoff",
    "release",
    "release_manifest_sha256",
    "window_start",
    "window_end",
    "task",
    "subtask",
    "language",
    "metric",
    "value",
    "num_queries",
];

/// The column added after the first records were written (absent from older files).
const CATEGORY: &str = "category";

impl StoreFrames {
    /// Read the store made of these record files (one scan of them all).
    pub fn open(files: &[PathBuf]) -> Result<StoreFrames> {
        if files.is_empty() {
            return Ok(StoreFrames { all: None, latest: None });
        }
        // The files are read in parallel (each is small: one record's rows).
        let records = files
            .par_iter()
            .map(|f| {
                let has_category = crate::frames::parquet_schema(f)?.get(CATEGORY).is_some();
                let mut names = COLUMNS.to_vec();
                if has_category {
                    names.push(CATEGORY);
                }
                let frame = crate::frames::read_parquet(f, Some(&names), None)?.lazy();
                Ok(if has_category {
                    frame
                } else {
                    frame.with_column(lit(NULL).cast(DataType::String).alias(CATEGORY))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        // One chunk, not one per file: the group-bys below are faster over it.
        let all =
            concat(records, UnionArgs { rechunk: true, ..UnionArgs::default() })?.collect()?;
        let keys = [col("model"), col("release"), col("task")];
        let current =
            all.clone()
                .lazy()
                .group_by(keys.clone())
                .agg([by_recording(col("record_id")).last().alias("record_id")]);
        let cutoffs =
            all.clone()
                .lazy()
                .group_by([col("model")])
                .agg([by_recording(col("cutoff")).last().alias("model_cutoff")]);
        let mut on = keys.to_vec();
        on.push(col("record_id"));
        let latest = all
            .clone()
            .lazy()
            .join(current, on.clone(), on, JoinArgs::new(JoinType::Inner))
            .join(cutoffs, [col("model")], [col("model")], JoinArgs::new(JoinType::Inner))
            .collect()?;
        Ok(StoreFrames { all: Some(all), latest: Some(latest) })
    }

    /// Every row of every record.
    fn scan(&self) -> Option<LazyFrame> {
        self.all.clone().map(DataFrame::lazy)
    }

    /// The rows of the latest record of each (model, release, task).
    fn latest(&self) -> Option<LazyFrame> {
        self.latest.clone().map(DataFrame::lazy)
    }

    /// Every value of the latest records, sorted by model, release, task, subtask, language,
    /// metric.
    pub fn cells(&self) -> Result<Vec<CellRow>> {
        let Some(latest) = self.latest() else {
            return Ok(Vec::new());
        };
        let sort = ["model", "release", "task", "subtask", "language", "metric"];
        let df = latest
            .select([
                col("model"),
                col("release"),
                col("task"),
                col("subtask"),
                col("language"),
                col("metric"),
                col("value"),
                col("num_queries"),
            ])
            .sort(sort, SortMultipleOptions::default())
            .collect()?;
        Ok(frame_rows!(&df => CellRow {
            model: strings,
            release: strings,
            task: strings,
            subtask: strings,
            language: strings,
            metric: strings,
            value: floats,
            num_queries: counts,
        }))
    }

    /// The releases the store has results for, with the window of their latest record.
    pub fn releases(&self) -> Result<Vec<StoredRelease>> {
        let Some(all) = self.scan() else {
            return Ok(Vec::new());
        };
        let df = all
            .group_by([col("release")])
            .agg([
                by_recording(col("window_start")).last().alias("window_start"),
                by_recording(col("window_end")).last().alias("window_end"),
            ])
            .sort(["release"], SortMultipleOptions::default())
            .collect()?;
        let (start, end) =
            (optional_strings(&df, "window_start")?, optional_strings(&df, "window_end")?);
        let windows = start.into_iter().zip(end).map(|(start, end)| ContestWindow { start, end });
        Ok(strings(&df, "release")?
            .into_iter()
            .zip(windows)
            .map(|(release, window)| StoredRelease { release, window })
            .collect())
    }

    /// Every (release, MANIFEST sha256) of the store with its record count, sorted: a release
    /// rebuilt into other bytes appears twice.
    pub fn digests(&self) -> Result<Vec<ReleaseDigest>> {
        let Some(all) = self.scan() else {
            return Ok(Vec::new());
        };
        let df = all
            .group_by([col("release"), col("release_manifest_sha256").alias("manifest_sha256")])
            .agg([
                col("record_id").n_unique().alias("records"),
                col("record_id").min().alias("example_record"),
            ])
            .sort(["release", "manifest_sha256"], SortMultipleOptions::default())
            .collect()?;
        Ok(frame_rows!(&df => ReleaseDigest {
            release: strings,
            manifest_sha256: strings,
            records: counts,
            example_record: strings,
        }))
    }

    /// Every model with its latest retriever and cutoff and its record counts, by name.
    pub fn models(&self) -> Result<Vec<ModelRow>> {
        let (Some(all), Some(latest)) = (self.scan(), self.latest()) else {
            return Ok(Vec::new());
        };
        let current = latest
            .group_by([col("model")])
            .agg([col("record_id").n_unique().alias("current_records")]);
        let df = all
            .group_by([col("model")])
            .agg([
                by_recording(col("retriever")).last().alias("retriever"),
                by_recording(col("cutoff")).last().alias("cutoff"),
                by_recording(col(CATEGORY)).drop_nulls().last().alias(CATEGORY),
                col("record_id").n_unique().alias("records"),
            ])
            .join(current, [col("model")], [col("model")], JoinArgs::new(JoinType::Inner))
            .sort(["model"], SortMultipleOptions::default())
            .collect()?;
        let labels = frame_rows!(&df => ModelLabel {
            model: strings,
            retriever: strings,
            cutoff: optional_strings,
            category: optional_strings,
        });
        let (records, current) = (counts(&df, "records")?, counts(&df, "current_records")?);
        Ok(labels
            .into_iter()
            .zip(records.into_iter().zip(current))
            .map(|(label, (records, current_records))| ModelRow { label, records, current_records })
            .collect())
    }

    /// The latest values of `filter.metric` restricted to the window's releases (and, with
    /// `after_cutoff`, to those after each model's cutoff).
    fn in_window(
        &self,
        releases: &[WindowRelease],
        filter: &WindowFilter,
    ) -> Result<Option<LazyFrame>> {
        let Some(latest) = self.latest() else {
            return Ok(None);
        };
        let table = df!(
            "release" => releases.iter().map(|r| r.release.as_str()).collect::<Vec<_>>(),
            "month" => releases.iter().map(|r| r.month.as_str()).collect::<Vec<_>>(),
            "release_start" => releases.iter().map(|r| r.window_start.as_deref()).collect::<Vec<_>>(),
        )?;
        let mut keep = col("metric").eq(lit(filter.metric.clone()));
        if let Some(from) = &filter.from {
            keep = keep.and(col("month").gt_eq(lit(from.clone())));
        }
        if let Some(to) = &filter.to {
            keep = keep.and(col("month").lt_eq(lit(to.clone())));
        }
        if filter.after_cutoff {
            let after = col("release_start")
                .is_not_null()
                .and(col("release_start").gt(col("model_cutoff")));
            keep = keep.and(col("model_cutoff").is_null().or(after));
        }
        Ok(Some(
            latest
                .join(
                    table.lazy(),
                    [col("release")],
                    [col("release")],
                    JoinArgs::new(JoinType::Inner),
                )
                .filter(keep),
        ))
    }

    /// Window means of `filter.metric` per model, task and group, sorted by model, task,
    /// subtask, language; and the (model, release) pairs they used.
    pub fn means(
        &self,
        releases: &[WindowRelease],
        filter: &WindowFilter,
    ) -> Result<(Vec<MeanRow>, Vec<ModelRelease>)> {
        let Some(rows) = self.in_window(releases, filter)? else {
            return Ok(Default::default());
        };
        let df = rows
            .clone()
            .group_by([col("model"), col("task"), col("subtask"), col("language")])
            .agg([col("value").mean().alias("mean"), col("release").n_unique().alias("releases")])
            .sort(["model", "task", "subtask", "language"], SortMultipleOptions::default())
            .collect()?;
        let means = frame_rows!(&df => MeanRow {
            model: strings,
            task: strings,
            subtask: strings,
            language: strings,
            mean: floats,
            releases: counts,
        });
        let used = rows
            .select([col("model"), col("release")])
            .unique(None, UniqueKeepStrategy::Any)
            .sort(["model", "release"], SortMultipleOptions::default())
            .collect()?;
        let pairs = strings(&used, "model")?.into_iter().zip(strings(&used, "release")?).collect();
        Ok((means, pairs))
    }

    /// Per model, Σ value × queries and Σ queries of `filter.metric` on the `all` group of
    /// every (release, task) of the window (the overall score's parts), sorted by model.
    pub fn weighted(
        &self,
        releases: &[WindowRelease],
        filter: &WindowFilter,
    ) -> Result<Vec<WeightedRow>> {
        let Some(rows) = self.in_window(releases, filter)? else {
            return Ok(Vec::new());
        };
        let df = rows
            .filter(col("subtask").eq(lit(ALL)).and(col("language").eq(lit(ALL))))
            .group_by([col("model")])
            .agg([
                (col("value") * col("num_queries").cast(DataType::Float64)).sum().alias("weighted"),
                col("num_queries").sum().alias("queries"),
            ])
            .sort(["model"], SortMultipleOptions::default())
            .collect()?;
        Ok(frame_rows!(&df => WeightedRow { model: strings, weighted: floats, queries: counts }))
    }
}
