//! The corpus output's layout: each output shard's files, its `_SUCCESS` marker, its spool
//! file, and the reports merged over the shards.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use coreb_base::durable::{self, AtomicFile};
use coreb_curation::CorpusReport;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use coreb_data::releases::FileEntry;

/// The directory (and file) name of output shard `s`.
pub(super) fn shard_name(s: u32) -> String {
    format!("shard={s:03}")
}

/// The spool file of output shard `s` in `dir`.
pub(super) fn spool_path(dir: &Path, s: u32) -> PathBuf {
    dir.join(format!("{}.bin", shard_name(s)))
}

/// The `_SUCCESS` of output shard `s`.
pub(super) fn marker_path(out: &Path, s: u32) -> PathBuf {
    out.join("train").join(shard_name(s)).join("_SUCCESS")
}

/// The files an output shard writes, relative to the output directory.
fn shard_files(s: u32) -> Vec<String> {
    let name = shard_name(s);
    vec![
        format!("train/{name}/part.parquet"),
        format!("rerank/{name}/part.parquet"),
        format!("jsonl/train/{name}/part.jsonl"),
        format!("jsonl/rerank/{name}/part.jsonl"),
        format!("reports/{name}.json"),
        format!("reports/{name}.dropped.jsonl"),
    ]
}

/// The `_SUCCESS` of an output shard: the plan it was made from and the sha256 and size of
/// each of its files, written (fsynced) after them.
#[derive(Debug, Serialize, Deserialize)]
struct ShardMarker {
    plan: String,
    files: BTreeMap<String, FileEntry>,
}

/// Is output shard `s` complete for this plan: a `_SUCCESS` of this plan, and every file it
/// lists still the one it describes (a torn or edited file redoes the shard).
pub(super) fn shard_done(out: &Path, s: u32, plan_hash: &str) -> bool {
    let Some(marker) = fs_err::read_to_string(marker_path(out, s))
        .ok()
        .and_then(|t| serde_json::from_str::<ShardMarker>(&t).ok())
    else {
        return false;
    };
    if marker.plan != plan_hash {
        return false;
    }
    let listed = shard_files(s).iter().all(|f| marker.files.contains_key(f));
    let intact = listed
        && marker
            .files
            .par_iter()
            .all(|(rel, e)| crate::artifacts::file_intact(&out.join(rel), &e.sha256, e.bytes));
    if !intact {
        tracing::warn!(
            "output shard {s}: a file no longer matches its `_SUCCESS`; redoing the shard"
        );
    }
    intact
}

/// Write the `_SUCCESS` of output shard `s` once its files are fsynced: the marker that
/// vouches for them, last.
pub(super) fn write_marker(out: &Path, s: u32, plan_hash: &str) -> anyhow::Result<()> {
    let files = shard_files(s)
        .par_iter()
        .map(|rel| Ok((rel.clone(), crate::artifacts::file_entry(&out.join(rel))?)))
        .collect::<anyhow::Result<_>>()?;
    durable::write(
        &marker_path(out, s),
        &serde_json::to_vec_pretty(&ShardMarker { plan: plan_hash.to_owned(), files })?,
    )?;
    Ok(())
}

/// Sum the shard reports into `report.json`, `report.md` and `dropped.jsonl` (the shards'
/// dropped pairs, concatenated in shard order without being held in memory).
pub(super) fn merge_reports(out: &Path, shards: u32) -> anyhow::Result<CorpusReport> {
    let mut merged = CorpusReport::default();
    let mut dropped = AtomicFile::create(&out.join("dropped.jsonl"))?;
    for s in 0..shards {
        let path: PathBuf = out.join("reports").join(format!("{}.json", shard_name(s)));
        let r: CorpusReport = serde_json::from_str(&fs_err::read_to_string(&path)?)
            .with_context(|| format!("`{}`", path.display()))?;
        coreb_curation::curate::merge(&mut merged, r);
        let mut part = fs_err::File::open(
            out.join("reports").join(format!("{}.dropped.jsonl", shard_name(s))),
        )?;
        std::io::copy(&mut part, &mut dropped)?;
    }
    dropped.commit()?;
    durable::write(&out.join("report.json"), &serde_json::to_vec_pretty(&merged)?)?;
    durable::write(&out.join("report.md"), coreb_curation::curate::markdown(&merged).as_bytes())?;
    Ok(merged)
}
