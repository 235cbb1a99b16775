//! A control release against the release it controls (`[control] of`): [`controlled`] reads
//! the controlled release and checks that this build can be its control; [`check_queries`]
//! holds the control's queries to the release's before it is published; [`card_section`] is
//! what the control's card ends with. The control build itself (its `rewrite`) is the
//! engine's (`engine::control`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Context;
use coreb_base::hashing::sha256_file;
use coreb_data::qrels::Task;
use coreb_data::releases::{ControlOf, ReleaseManifest};
use serde::Deserialize;

use crate::manifest::RunPlan;

/// The release a control build controls: its directory, and what the control's MANIFEST
/// records of it.
pub(crate) struct Controlled {
    /// Its published directory.
    pub(crate) dir: std::path::PathBuf,
    /// Its version and MANIFEST sha256.
    pub(crate) of: ControlOf,
}

/// Read the release that `[control] of` names, and check that this build can be its control.
pub(crate) fn controlled(plan: &RunPlan) -> anyhow::Result<Option<Controlled>> {
    let Some(dir) = &plan.control else {
        return Ok(None);
    };
    let path = dir.join("MANIFEST.json");
    if !path.is_file() {
        anyhow::bail!(
            "`control.of`: `{}` holds no `MANIFEST.json`: build and publish the release first, then its control",
            dir.display()
        );
    }
    let manifest = ReleaseManifest::read(&path)?;
    if manifest.version != plan.version {
        anyhow::bail!(
            "`control.of`: `{}` is release `{}`, but this manifest builds `{}`: a control is of the same month (set `version = \"{}\"`)",
            dir.display(),
            manifest.version,
            plan.version,
            manifest.version
        );
    }
    if manifest.window != plan.window {
        anyhow::bail!(
            "`control.of`: release `{}` (`{}`) has the window {:?}, this manifest {:?}: a control covers the same contest days",
            manifest.version,
            dir.display(),
            manifest.window,
            plan.window
        );
    }
    if manifest.controls.is_some() {
        anyhow::bail!(
            "`control.of`: `{}` is itself a control release; name the release it controls",
            dir.display()
        );
    }
    let manifest_sha256 =
        sha256_file(&path).with_context(|| format!("hashing `{}`", path.display()))?;
    Ok(Some(Controlled {
        dir: dir.clone(),
        of: ControlOf { version: manifest.version, manifest_sha256 },
    }))
}

/// A query as the mapping compares it: (problem, subtask, language).
type QueryKey = (String, String, String);

/// A query of a release's BEIR folder, as the mapping reads it.
#[derive(Deserialize)]
struct BeirQuery {
    #[serde(rename = "_id", default)]
    id: Option<String>,
    #[serde(default)]
    source_problem_id: Option<String>,
    #[serde(default)]
    subtask: Option<String>,
    #[serde(default)]
    language_constraint: Option<String>,
}

/// The queries of each task's BEIR folder under `release`: id → (problem, subtask, language).
fn release_queries(release: &Path) -> anyhow::Result<BTreeMap<Task, BTreeMap<String, QueryKey>>> {
    let mut out = BTreeMap::new();
    for task in Task::ALL {
        let path = release.join(task.as_str()).join("queries.jsonl");
        let mut queries = BTreeMap::new();
        for q in coreb_base::jsonl::rows::<BeirQuery>(&path)? {
            let q = q?;
            queries.insert(
                q.id.unwrap_or_default(),
                (
                    q.source_problem_id.unwrap_or_default(),
                    q.subtask.unwrap_or_default(),
                    q.language_constraint.unwrap_or_default(),
                ),
            );
        }
        out.insert(task, queries);
    }
    Ok(out)
}

/// The control (about to be published in `control`) against the release it controls: its
/// queries map one to one onto the release's queries of the same problems. Returns the
/// number of queries paired and of the release's problems the control holds.
pub(crate) fn check_queries(
    control: &Path,
    controlled: &Controlled,
) -> anyhow::Result<(usize, usize)> {
    let ours = release_queries(control)?;
    let theirs = release_queries(&controlled.dir)?;
    let problems: BTreeSet<&str> =
        ours.values().flat_map(|q| q.values().map(|k| k.0.as_str())).collect();
    let mut faults = Vec::new();
    let mut paired = 0;
    for (task, queries) in &ours {
        let other = &theirs[task];
        for (id, k) in queries {
            match other.get(id) {
                Some(o) if o == k => paired += 1,
                Some(o) => faults.push(format!(
                    "{} query `{id}` is about {k:?} in the control, {o:?} in the release",
                    task.as_str()
                )),
                None => faults.push(format!(
                    "{} query `{id}` of the control is no query of the release",
                    task.as_str()
                )),
            }
        }
        for (id, k) in other
            .iter()
            .filter(|(id, k)| problems.contains(k.0.as_str()) && !queries.contains_key(*id))
        {
            faults.push(format!(
                "{} query `{id}` of the release (problem `{}`) has no counterpart in the control",
                task.as_str(),
                k.0
            ));
        }
    }
    if !faults.is_empty() {
        let n = faults.len();
        faults.truncate(10);
        anyhow::bail!(
            "the control's queries do not map one to one onto those of release `{}` (`{}`): {n} fault(s):\n  {}",
            controlled.of.version,
            controlled.dir.display(),
            faults.join("\n  ")
        );
    }
    Ok((paired, problems.len()))
}

/// The section a control's card ends with: what it is the control of, and that its problems
/// were not rewritten.
pub(crate) fn card_section(of: &ControlOf) -> String {
    format!(
        "\n## Control release\n\nThis release is the **control** of release `{}` (MANIFEST sha256 `{}`): the same month built \
         without the counterfactual rewrite. Its problems are the originals, statements and tests as the contest sites published \
         them; the distractors, summaries, queries and solutions were made for the originals. Where the text above says the \
         problems were rewritten, it does not apply here. Its query ids are those of the release (same problem, subtask and \
         language), so `coreb compare` pairs a retriever's results on the two per query.\n",
        of.version, of.manifest_sha256
    )
}
