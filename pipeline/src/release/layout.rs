//! The published release's layout: its tables (the eight Parquet configs and each task's
//! BEIR/MTEB folder), its source problems, where a path is recorded relative to it, and the
//! earlier releases beside it ([`earlier_releases`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use coreb_data::problem::{Platform, ProblemId};
use coreb_data::qrels::{QrelsOutput, Task};
use coreb_data::tables::published::{
    write_code_corpus, write_qrels, write_queries, write_text_corpus,
};
use coreb_data::tables::{ProblemReader, ProblemWriter};
use coreb_stages::release::beir;

use anyhow::{Context, bail};
use coreb_base::hashing::sha256_file;

use crate::manifest::RunPlan;

/// `to` relative to the directory `from` (both absolute and normalised).
pub(crate) fn relative_path(from: &Path, to: &Path) -> String {
    let a: Vec<_> = from.components().collect();
    let b: Vec<_> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut rel = PathBuf::new();
    for _ in common..a.len() {
        rel.push("..");
    }
    for c in &b[common..] {
        rel.push(c);
    }
    rel.display().to_string()
}

/// The eight Parquet configs and, per task, the BEIR/MTEB folder (corpus, queries, qrels,
/// card), into the release's temporary directory.
pub(crate) fn write_tables(tmp: &Path, version: &str, out: &QrelsOutput) -> anyhow::Result<()> {
    write_code_corpus(&tmp.join("code_corpus.parquet"), &out.code_corpus)?;
    write_text_corpus(&tmp.join("text_corpus.parquet"), &out.text_corpus)?;
    for task in Task::ALL {
        let set = out.tasks.get(&task).cloned().unwrap_or_default();
        write_queries(&tmp.join(format!("{}_queries.parquet", task.as_str())), &set.queries)?;
        write_qrels(&tmp.join(format!("{}_qrels.parquet", task.as_str())), &set.qrels)?;
        let files = beir(task, version, out);
        let dir = tmp.join(task.as_str());
        fs_err::create_dir_all(dir.join("qrels"))?;
        fs_err::write(dir.join("corpus.jsonl"), files.corpus)?;
        fs_err::write(dir.join("queries.jsonl"), files.queries)?;
        fs_err::write(dir.join("qrels/test.tsv"), files.qrels)?;
        fs_err::write(dir.join("qrels/test.jsonl"), files.qrels_jsonl)?;
        fs_err::write(dir.join("README.md"), files.card)?;
    }
    Ok(())
}

/// The source problems of the release (`problems.parquet`, for later releases' disjointness
/// checks), taken from the filtered problems; returns their platforms.
pub(crate) fn write_source_problems(
    filtered: &Path,
    tmp: &Path,
    ids: &BTreeSet<ProblemId>,
) -> anyhow::Result<BTreeSet<Platform>> {
    let mut problems = ProblemWriter::create(&tmp.join("problems.parquet"))?;
    let mut platforms = BTreeSet::new();
    for p in ProblemReader::open(filtered)? {
        let p = p?;
        if ids.contains(&p.id) {
            platforms.insert(p.platform);
            problems.write(p)?;
        }
    }
    problems.finish()?;
    Ok(platforms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_path(
                Path::new("/p/build/sample/releases/v1"),
                Path::new("/p/manifests/sample.toml")
            ),
            "../../../../manifests/sample.toml"
        );
        assert_eq!(relative_path(Path::new("/p/releases/v1"), Path::new("/p/releases/v1/x")), "x");
    }
}

/// An earlier release's problems table (what `dedup` and the release's gates read of it).
#[derive(Debug, serde::Serialize)]
pub(crate) struct EarlierRelease {
    pub(crate) version: String,
    sha256: String,
    #[serde(skip)]
    pub(crate) path: PathBuf,
}

/// Earlier releases under `releases_dir`: `vYYYYMM` directories before this version.
pub(crate) fn earlier_releases(plan: &RunPlan) -> anyhow::Result<Vec<EarlierRelease>> {
    let dir = &plan.releases_dir;
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_version = crate::manifest::has_version_shape(&name);
        if !is_version || name >= plan.version || !entry.path().is_dir() {
            continue;
        }
        let path = entry.path().join("problems.parquet");
        if !path.exists() {
            bail!(
                "release `{}` has no `problems.parquet`: cannot check that this release is problem-disjoint from it",
                entry.path().display()
            );
        }
        let sha256 = sha256_file(&path).with_context(|| format!("hashing `{}`", path.display()))?;
        found.push(EarlierRelease { version: name, sha256, path });
    }
    found.sort_by(|a, b| a.version.cmp(&b.version));
    Ok(found)
}
