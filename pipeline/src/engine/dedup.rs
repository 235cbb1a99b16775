//! Runs `dedup`: reads the ingested problems and every earlier release's problems, calls
//! [`stages::dedup::dedup`], writes the kept problems and the duplicates report.

use std::path::PathBuf;

use anyhow::{Context, bail};
use coreb_base::hashing::sha256_file;
use coreb_data::problem::Problem;
use coreb_data::tables::ProblemReader;
use coreb_data::tables::problems::copy_rows;
use stages::dedup::{DedupOutput, Item, Origin, dedup};

use super::{Engine, StageReport};
use crate::artifacts::{StageRecord, input_key};
use crate::engine::stage::StageName;
use coreb_base::durable;

/// An earlier release's problems table.
#[derive(Debug, serde::Serialize)]
pub(super) struct Published {
    pub(super) version: String,
    sha256: String,
    #[serde(skip)]
    pub(super) path: PathBuf,
}

/// Earlier releases under `releases_dir`: `vYYYYMM` directories before this version.
pub(super) fn earlier_releases(engine: &Engine) -> anyhow::Result<Vec<Published>> {
    let dir = &engine.plan.releases_dir;
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_version = crate::manifest::has_version_shape(&name);
        if !is_version || name >= engine.plan.version || !entry.path().is_dir() {
            continue;
        }
        let path = entry.path().join("problems.parquet");
        if !path.exists() {
            bail!("release `{}` has no `problems.parquet`: cannot check that this release is problem-disjoint from it", entry.path().display());
        }
        let sha256 = sha256_file(&path).with_context(|| format!("hashing `{}`", path.display()))?;
        found.push(Published { version: name, sha256, path });
    }
    found.sort_by(|a, b| a.version.cmp(&b.version));
    Ok(found)
}

fn item(p: Problem, origin: Origin) -> Item {
    Item { id: p.id, contest_date: p.contest_date, statement: p.question_content, origin }
}

pub(super) fn run(engine: &Engine, ingest: &StageRecord) -> anyhow::Result<StageReport> {
    let config = &engine.plan.stages.dedup;
    let published = earlier_releases(engine)?;
    let key = input_key(StageName::Dedup.as_str(), &(config, &published), &[ingest])?;
    if let Some(hit) = engine.cached(StageName::Dedup, &key)? {
        return Ok(hit);
    }
    let input = engine.output(ingest, "problems")?;
    // Statements only: the tests are copied with the kept rows, never decoded here.
    let current: Vec<Item> = ProblemReader::open_without_test_bodies(&input)?.map(|p| p.map(|p| item(p, Origin::Current))).collect::<Result<_, _>>()?;
    let mut earlier = Vec::new();
    for release in &published {
        for p in ProblemReader::open_without_test_bodies(&release.path)? {
            earlier.push(item(p?, Origin::Release(release.version.clone())));
        }
    }
    let DedupOutput { kept_rows, clusters, stats } = engine.pool.install(|| dedup(config, &current, &earlier));
    drop(current);

    let writer = engine.store.begin(StageName::Dedup.as_str())?;
    copy_rows(&input, &writer.path("problems.parquet"), |row| kept_rows.binary_search(&row).is_ok())?;
    let report = serde_json::json!({
        "parameters": config,
        "earlier_releases": published,
        "stats": stats,
        "clusters": clusters,
    });
    durable::write(&writer.path("duplicates.json"), serde_json::to_string_pretty(&report)?.as_bytes())?;
    let mut summary = serde_json::to_value(stats)?;
    if let Some(obj) = summary.as_object_mut() {
        obj.insert("rejected".into(), serde_json::json!(stats.rows_in - stats.rows_out));
        obj.insert("parameters".into(), serde_json::to_value(config)?);
    }
    let record = writer.commit(&key, &[("problems", "problems.parquet"), ("duplicates", "duplicates.json")], summary)?;
    Ok(StageReport { stage: StageName::Dedup, skipped: false, record })
}
