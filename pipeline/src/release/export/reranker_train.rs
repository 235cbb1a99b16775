//! `coreb export --layout reranker-train <release> <out>`: a training release as the records a
//! pointwise reranker (CoREB-Reranker: Qwen3-Reranker with LoRA, per its model card) is trained
//! on: `(instruction, query, document, label)` with `label` `yes` or `no`, for every positive
//! of every query one record with the positive, one with a hard negative (a document the
//! release judges 1 for the query) and one with an easy negative (a document of another
//! problem), the two negatives drawn with the seed. The instruction is the task's (MTEB's task
//! prompt, CoREB's instruction).
//!
//! `<out>` is a Hugging Face dataset folder: `train.jsonl` (split `train`) and a card; `load_dataset(<out>,
//! split="train")` reads it. A release whose MANIFEST says it is a test release
//! (`purpose.role = "test"`) is refused: its problems are for evaluation only. Queries without
//! a hard negative are left out (and counted).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use coreb_eval::mteb::{Protocol, TASKS};

use super::{ExportError, judged, releases_by_version};

/// One record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Record {
    /// The task's instruction.
    pub(crate) instruction: String,
    /// The query's text.
    pub(crate) query: String,
    /// The document's text.
    pub(crate) document: String,
    /// `yes` (a positive) or `no`.
    pub(crate) label: &'static str,
    /// `positive`, `hard_negative` or `easy_negative`.
    pub(crate) kind: &'static str,
    /// The CoREB task.
    pub(crate) task: &'static str,
    /// The query's id.
    pub(crate) query_id: String,
    /// The document's id.
    pub(crate) doc_id: String,
    /// The positive this record belongs to.
    positive_id: String,
    /// The query's problem.
    pub(crate) problem_id: String,
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TrainCounts {
    /// The release's version.
    pub(crate) version: String,
    /// Records per task.
    pub(crate) records: BTreeMap<&'static str, usize>,
    /// Positives per task.
    pub(crate) positives: BTreeMap<&'static str, usize>,
    /// Queries left out (no hard negative) per task.
    pub(crate) left_out: BTreeMap<&'static str, usize>,
}

#[derive(Deserialize)]
struct Row {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    problem_id: Option<String>,
    #[serde(default)]
    source_problem_id: Option<String>,
    #[serde(default)]
    source_doc_id: Option<String>,
}

fn read_rows(release: &Path, task: &str, file: &str) -> Result<Vec<Row>, ExportError> {
    let path = release.join(task).join(file);
    if !path.is_file() {
        return Err(ExportError::MissingFile {
            release: release.to_owned(),
            file: format!("{task}/{file}"),
        });
    }
    coreb_base::jsonl::read(&path)
        .map_err(|e| ExportError::Manifest { path, reason: e.to_string() })
}

/// The role a release's MANIFEST declares (`purpose.role`), if any.
fn declared_role(release: &Path) -> Result<Option<String>, ExportError> {
    let path = release.join("MANIFEST.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|source| ExportError::Io { path: path.clone(), source })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| ExportError::Manifest { path, reason: e.to_string() })?;
    Ok(value.pointer("/purpose/role").and_then(|r| r.as_str()).map(str::to_owned))
}

/// The records of one release (see the module's documentation).
pub(crate) fn records(
    release: &Path,
    seed: u64,
) -> Result<(Vec<Record>, TrainCounts), ExportError> {
    let mut out = Vec::new();
    let mut counts = TrainCounts::default();
    for task in TASKS.iter().filter(|t| t.protocol == Protocol::Retrieval) {
        let docs = read_rows(release, task.coreb_task, "corpus.jsonl")?;
        let queries = read_rows(release, task.coreb_task, "queries.jsonl")?;
        let mut judged = judged(release, task.coreb_task)?;
        let by_id: BTreeMap<&str, &Row> = docs.iter().map(|d| (d.id.as_str(), d)).collect();
        let (mut n, mut pos, mut left) = (0, 0, 0);
        for q in &queries {
            let Some((positives, hard)) = judged.get_mut(&q.id) else {
                continue;
            };
            // Hard negatives that are documents of the corpus (a code2code anchor no query
            // judges is not one).
            hard.retain(|d| by_id.contains_key(d.as_str()));
            if hard.is_empty() {
                left += 1;
                continue;
            }
            let problem = q.source_problem_id.clone().unwrap_or_default();
            let easy: Vec<&Row> = docs
                .iter()
                .filter(|d| {
                    d.problem_id.as_deref() != Some(problem.as_str())
                        && Some(&d.id) != q.source_doc_id.as_ref()
                })
                .collect();
            for p in positives.iter() {
                let Some(doc) = by_id.get(p.as_str()) else {
                    continue;
                };
                let mut rng = super::mteb::stream(seed, &format!("{}\t{p}", q.id));
                let h = by_id[hard[rng.index(hard.len())].as_str()];
                let mut record = |d: &Row, label, kind| {
                    out.push(Record {
                        instruction: task.prompt.to_owned(),
                        query: q.text.clone(),
                        document: d.text.clone(),
                        label,
                        kind,
                        task: task.coreb_task,
                        query_id: q.id.clone(),
                        doc_id: d.id.clone(),
                        positive_id: p.clone(),
                        problem_id: problem.clone(),
                    });
                    n += 1;
                };
                record(doc, "yes", "positive");
                record(h, "no", "hard_negative");
                if !easy.is_empty() {
                    record(easy[rng.index(easy.len())], "no", "easy_negative");
                }
                pos += 1;
            }
        }
        counts.records.insert(task.coreb_task, n);
        counts.positives.insert(task.coreb_task, pos);
        counts.left_out.insert(task.coreb_task, left);
    }
    Ok((out, counts))
}

/// Export the training records of the release `release` to `out` (an empty directory or an
/// earlier export is replaced, anything else refused); a test release is refused.
pub(crate) fn export_reranker_train(
    release: &Path,
    out: &Path,
    seed: u64,
) -> Result<TrainCounts, ExportError> {
    let found = releases_by_version(release)?;
    let [f] = found.as_slice() else {
        return Err(ExportError::Manifest {
            path: release.to_owned(),
            reason: format!(
                "`--layout reranker-train` exports one release, not a directory of {}",
                found.len()
            ),
        });
    };
    if declared_role(&f.dir)?.as_deref() == Some("test") {
        return Err(ExportError::TestRelease(f.dir.clone()));
    }
    let (rows, mut counts) = records(&f.dir, seed)?;
    counts.version = f.version.clone();
    let tmp = super::staging_dir(out)?;
    let io = |path: PathBuf| move |source| ExportError::Io { path, source };
    std::fs::create_dir_all(&tmp).map_err(io(tmp.clone()))?;
    let mut text = String::new();
    for r in &rows {
        text.push_str(&serde_json::to_string(r).unwrap_or_default());
        text.push('\n');
    }
    std::fs::write(tmp.join("train.jsonl"), text).map_err(io(tmp.join("train.jsonl")))?;
    let mut card = format!(
        "---\nconfigs:\n- config_name: default\n  default: true\n  data_files:\n  - split: train\n    path: train.jsonl\n---\n\n\
         # Reranker training records of CoREB release `{}`\n\n\
         Written by `coreb export --layout reranker-train` (seed {seed}): for every positive of every query, the \
         positive (`label` `yes`), one hard negative (a document the release judges 1 for the query) and one easy \
         negative (a document of another problem), each as `instruction`, `query`, `document`, `label`; `kind`, \
         `task`, `query_id`, `doc_id`, `positive_id` and `problem_id` say where a record comes from. Queries \
         without a hard negative are left out.\n\n\
         | task | positives | records | queries left out |\n|---|---:|---:|---:|\n",
        f.version
    );
    for (task, n) in &counts.records {
        let _ = writeln!(
            card,
            "| {task} | {} | {n} | {} |",
            counts.positives[task], counts.left_out[task]
        );
    }
    std::fs::write(tmp.join("README.md"), card).map_err(io(tmp.join("README.md")))?;
    super::publish(&tmp, out, "reranker-train")?;
    Ok(counts)
}
