//! The release's gates: no problem of an earlier release (disjointness), a test release
//! disjoint from its training releases (`[purpose]`), and the quality gates and validity
//! checks on the files exactly as they will be published.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use coreb_base::hashing::sha256_file;
use coreb_data::problem::ProblemId;
use coreb_data::qrels::{QrelsOutput, Task};
use coreb_data::releases::ReleaseManifest;
use coreb_data::tables::ProblemReader;
use coreb_trec::Qrels;

use crate::manifest::RunPlan;

/// Problem ids of every release before this one (from their `problems.parquet`).
pub(crate) fn earlier_problem_ids(
    plan: &RunPlan,
) -> anyhow::Result<Vec<(String, BTreeSet<ProblemId>)>> {
    let mut out = Vec::new();
    for release in super::layout::earlier_releases(plan)? {
        let ids = ProblemReader::open(&release.path)?
            .map(|p| p.map(|p| p.id))
            .collect::<Result<_, _>>()?;
        out.push((release.version, ids));
    }
    Ok(out)
}

/// `[purpose]`: for a test release, the gate that it shares no problem with any training
/// release it names (refused naming every shared problem; a named release that is itself a
/// test release is refused too); what the MANIFEST records under `purpose`.
pub(crate) fn purpose_gate(
    version: &str,
    purpose: &crate::manifest::PurposeFile,
    ids: &BTreeSet<ProblemId>,
) -> anyhow::Result<coreb_data::releases::Purpose> {
    use coreb_data::releases::{ControlOf, Purpose, Role};
    let mut named = Vec::new();
    for dir in &purpose.training {
        let manifest_path = dir.join("MANIFEST.json");
        let manifest = ReleaseManifest::read(&manifest_path)
            .with_context(|| format!("`purpose.training`: `{}`", dir.display()))?;
        if manifest.purpose.as_ref().map(|p| p.role) == Some(Role::Test) {
            anyhow::bail!(
                "`purpose.training`: `{}` is a test release, not a training release",
                dir.display()
            );
        }
        let theirs: BTreeSet<ProblemId> = ProblemReader::open(&dir.join("problems.parquet"))?
            .map(|p| p.map(|p| p.id))
            .collect::<Result<_, _>>()?;
        let shared: Vec<&str> = ids.intersection(&theirs).map(ProblemId::as_str).collect();
        if !shared.is_empty() {
            anyhow::bail!(
                "test release `{version}` shares {} problem(s) with its training release `{}` (`{}`): {}",
                shared.len(),
                manifest.version,
                dir.display(),
                shared.join(", ")
            );
        }
        named.push(ControlOf {
            version: manifest.version,
            manifest_sha256: sha256_file(&manifest_path)?,
        });
    }
    Ok(Purpose { role: purpose.role, training_releases: named })
}

/// The gates, on the BEIR folders exactly as they will be published (with the graded
/// judgements, whose hard negatives the BEIR qrels leave out), then every validity check of
/// `coreb check` on the release files. On a failure the temporary directory is removed and
/// the error lists every failed gate; else returns BM25's nDCG@10 per task (4 decimals) and
/// the number of checks passed.
pub(crate) fn gate(
    plan: &RunPlan,
    tmp: &Path,
    out: &QrelsOutput,
) -> anyhow::Result<(BTreeMap<String, f64>, usize)> {
    let mut failures = Vec::new();
    let mut bm25 = BTreeMap::new();
    for task in Task::ALL {
        let mut data = coreb_eval::beir::read_dir(&tmp.join(task.as_str()), "test")?;
        let graded = out.tasks.get(&task).map(|t| {
            t.qrels
                .iter()
                .map(|r| (r.query_id.0.as_str(), r.doc_id.0.as_str(), i64::from(r.relevance.0)))
                .collect::<Vec<_>>()
        });
        data.qrels = Qrels::from_triples(graded.unwrap_or_default())?;
        let ndcg10 = coreb_eval::bm25_ndcg10(&data);
        bm25.insert(task.as_str().to_owned(), (ndcg10 * 1e4).round() / 1e4);
        failures.extend(
            coreb_eval::gates::check_task(&data, ndcg10, &plan.gates)
                .iter()
                .map(ToString::to_string),
        );
    }
    let earlier: Vec<PathBuf> = super::layout::earlier_releases(plan)?
        .into_iter()
        .filter_map(|r| r.path.parent().map(Path::to_owned))
        .collect();
    let checks = coreb_eval::check::check_release(
        tmp,
        &plan.version,
        &earlier,
        &plan.gates,
        &plan.stages.qrels.composition(),
    )?;
    failures.extend(checks.failures().iter().map(ToString::to_string));
    if !failures.is_empty() {
        fs_err::remove_dir_all(tmp)?;
        let list: Vec<String> = failures.iter().map(|f| format!("  - {f}")).collect();
        anyhow::bail!(
            "release `{}` not published: {} gate(s) failed:\n{}",
            plan.version,
            failures.len(),
            list.join("\n")
        );
    }
    Ok((bm25, checks.results.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_release_sharing_a_problem_with_its_training_release_is_refused() {
        use coreb_data::releases::Role;
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../releases/sample/v202503");
        let purpose =
            crate::manifest::PurposeFile { role: Role::Test, training: vec![sample.clone()] };
        let ids = |v: &[&str]| -> BTreeSet<ProblemId> {
            v.iter().map(|i| ProblemId::from_raw((*i).to_owned())).collect()
        };
        let e = purpose_gate("v209912", &purpose, &ids(&["lcb_3704", "lcb_new", "lcb_3709"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("shares 2 problem(s) with its training release `v202503`")
                && e.ends_with(": lcb_3704, lcb_3709"),
            "{e}"
        );
        let ok = purpose_gate("v209912", &purpose, &ids(&["lcb_new"])).unwrap();
        assert_eq!(ok.role, Role::Test);
        assert_eq!(ok.training_releases[0].version, "v202503");
        assert_eq!(
            ok.training_releases[0].manifest_sha256,
            sha256_file(&sample.join("MANIFEST.json")).unwrap()
        );
    }
}
