//! The checks a build makes before its first stage, so that what would fail late fails at
//! once: the directories it writes are writable, the API key of a live build is set, its
//! endpoint answers and serves every model the manifest names (one `GET <base_url>/models`;
//! none in replay), the composition can be made from the models and languages configured.
//! (The judge's toolchains are checked by [`super::judge::preflight`] in the same place.)
//!
//! Every problem found is one line naming the setting and the manifest file; all of them are
//! reported together. `coreb build --check` runs these checks alone.

use std::path::{Path, PathBuf};

use coreb_llm::{LlmStage, StoreMode};

use super::stage_name::StageName;
use crate::manifest::RunPlan;

/// What the checks need beyond the plan.
pub(crate) struct Preflight<'a> {
    /// The plan.
    pub(crate) plan: &'a RunPlan,
    /// The last stage the build runs.
    pub(crate) until: StageName,
    /// A gateway is given in place of the manifest's endpoint (no key, no store needed).
    pub(crate) own_gateway: bool,
    /// Every LLM stage up to `until` has a record already (a rerun that will most likely
    /// send nothing: its endpoint is not asked, so that it runs while the endpoint is down).
    pub(crate) llm_recorded: bool,
}

impl Preflight<'_> {
    /// Every problem found, one line each (empty: none).
    pub(crate) fn problems(&self) -> Vec<String> {
        let plan = self.plan;
        let file = plan.manifest_path.display();
        let mut problems = Vec::new();
        problems.extend(output_dir(plan));
        let llm = self.until >= StageName::Rewrite && !self.own_gateway;
        if llm {
            match plan.llm.mode {
                StoreMode::Replay if !plan.response_store.is_dir() => problems.push(format!(
                    "`response_store` = `{}` (in `{file}`): `llm.mode = \"replay\"` answers from this store only, and it does not exist",
                    plan.response_store.display()
                )),
                StoreMode::Replay => {}
                StoreMode::Live | StoreMode::RecordOnly => {
                    if let Err(e) = writable(&plan.response_store) {
                        problems.push(format!("`response_store` = `{}` (in `{file}`): {e}", plan.response_store.display()));
                    }
                    if let Err(e) = coreb_llm::gateway::api_key_from_env(&plan.llm) {
                        problems.push(format!("`llm.api_key_env` = `{}` (in `{file}`): {e}", plan.llm.api_key_env));
                    }
                }
            }
        }
        if self.until >= StageName::Release {
            let releases = plan.publish_dir.parent().unwrap_or(&plan.publish_dir);
            if let Err(e) = writable(releases) {
                problems.push(format!(
                    "`releases_dir` = `{}` (in `{file}`, or `--publish-dir`): {e}",
                    releases.display()
                ));
            }
        }
        if self.until >= StageName::Qrels {
            problems.extend(composition(plan));
        }
        problems
    }

    /// Whether the build sends requests to its endpoint.
    fn sends(&self) -> bool {
        self.until >= StageName::Rewrite
            && !self.own_gateway
            && !self.llm_recorded
            && matches!(self.plan.llm.mode, StoreMode::Live | StoreMode::RecordOnly)
    }

    /// Ask the endpoint of a build that sends requests which models it serves (one request):
    /// the problems found (unreachable, credentials refused, a model it does not list), and
    /// a note when it has no list to check against. Nothing is asked without the API key
    /// ([`Preflight::problems`] names that).
    pub(crate) fn endpoint(
        &self,
        runtime: &tokio::runtime::Handle,
    ) -> (Vec<String>, Option<String>) {
        let plan = self.plan;
        let file = plan.manifest_path.display();
        let base = plan.llm.base_url.trim_end_matches('/');
        let Ok(key) = coreb_llm::gateway::api_key_from_env(&plan.llm) else {
            return (Vec::new(), None);
        };
        let timeout = std::time::Duration::from_secs_f64(plan.llm.timeout_secs.clamp(1.0, 30.0));
        let asked = runtime.block_on(coreb_llm::client::list_models(base, key.as_deref(), timeout));
        match asked {
            Err(e @ coreb_llm::client::ListingError::Unreachable { .. }) => {
                (vec![format!("`llm.base_url` = `{base}` (in `{file}`): {e}")], None)
            }
            Err(e @ coreb_llm::client::ListingError::Credentials { .. })
                if plan.llm.api_key_env.is_empty() =>
            {
                (
                    vec![format!(
                        "`llm.api_key_env` is empty (in `{file}`), so no key is sent: {e}"
                    )],
                    None,
                )
            }
            Err(e @ coreb_llm::client::ListingError::Credentials { .. }) => (
                vec![format!("`llm.api_key_env` = `{}` (in `{file}`): {e}", plan.llm.api_key_env)],
                None,
            ),
            Ok(coreb_llm::client::ModelListing::Unlisted(why)) => (
                Vec::new(),
                Some(format!(
                    "preflight: `{base}/models` answered {why}: the models the manifest names are not checked before the build"
                )),
            ),
            Ok(coreb_llm::client::ModelListing::Served(ids)) => (unserved(plan, base, &ids), None),
        }
    }

    /// Run the checks (the endpoint's on the runtime `runtime` gives, when it is asked): an
    /// error listing every problem, one per line; else the notes (a check that could not be
    /// made).
    pub(crate) fn check(
        &self,
        runtime: impl FnOnce() -> anyhow::Result<tokio::runtime::Handle>,
    ) -> anyhow::Result<Vec<String>> {
        let mut problems = self.problems();
        let mut notes = Vec::new();
        if self.sends() {
            let (found, note) = self.endpoint(&runtime()?);
            problems.extend(found);
            notes.extend(note);
        }
        if problems.is_empty() {
            return Ok(notes);
        }
        anyhow::bail!(
            "preflight: the build would fail; nothing was run:\n  {}",
            problems.join("\n  ")
        )
    }
}

/// What is wrong with `output_dir` (a file, under a file, read-only), naming the setting:
/// checked by the preflight and before the artifact store is opened in it, which is before
/// the preflight runs.
pub(crate) fn output_dir(plan: &RunPlan) -> Option<String> {
    writable(&plan.output_dir).err().map(|e| {
        format!(
            "`output_dir` = `{}` (in `{}`, or `--output-dir`): {e}",
            plan.output_dir.display(),
            plan.manifest_path.display()
        )
    })
}

/// Refuse an `output_dir` [`output_dir`] finds wrong, as the preflight would.
pub(crate) fn refuse_output_dir(plan: &RunPlan) -> anyhow::Result<()> {
    match output_dir(plan) {
        Some(problem) => {
            anyhow::bail!("preflight: the build would fail; nothing was run:\n  {problem}")
        }
        None => Ok(()),
    }
}

/// The models the manifest names that `served` (the list of the endpoint at `base`) lacks,
/// one line each, naming the setting.
fn unserved(plan: &RunPlan, base: &str, served: &[String]) -> Vec<String> {
    let file = plan.manifest_path.display();
    let listed = || {
        let shown: Vec<&str> = served.iter().take(8).map(String::as_str).collect();
        let more = served.len().saturating_sub(shown.len());
        if more > 0 { format!("{}, … ({more} more)", shown.join(", ")) } else { shown.join(", ") }
    };
    let mut named: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    named.insert(plan.llm.model.clone(), "llm.model".into());
    for stage in LlmStage::ALL {
        if let Some(s) = plan.llm.stages.get(&stage).filter(|s| !s.models.is_empty()) {
            for m in &s.models {
                named.entry(m.clone()).or_insert_with(|| format!("llm.stages.{stage}.models"));
            }
        }
    }
    named
        .into_iter()
        .filter(|(m, _)| !served.contains(m))
        .map(|(m, setting)| format!("`{setting}` names `{m}` (in `{file}`), which `{base}/models` does not list (it lists: {})", listed()))
        .collect()
}

/// Whether the composition of the series can be made from what the manifest generates.
fn composition(plan: &RunPlan) -> Vec<String> {
    let file = plan.manifest_path.display();
    let models = plan.llm.models(LlmStage::Generate);
    let languages = &plan.stages.generate.languages;
    let qrels = &plan.stages.qrels;
    let mut problems = Vec::new();
    for (key, model) in
        [("anchor_model", &qrels.anchor_model), ("target_model", &qrels.target_model)]
    {
        if let Some(m) = model.as_ref().filter(|m| !models.contains(m)) {
            problems.push(format!("`stages.qrels.{key}` = `{m}` (in `{file}`) is not among the generating models ({})", models.join(", ")));
        }
    }
    if !languages.contains(&qrels.anchor_language) {
        problems.push(format!("`stages.qrels.anchor_language` = `{}` (in `{file}`) is not among `stages.generate.languages`", qrels.anchor_language));
    }
    let waived = plan.gates.waive.iter().any(|g| g == "hard_negatives");
    if models.len() < 2 && plan.gates.min_hard_negative_share > 0.0 && !waived {
        problems.push(format!(
            "`llm.stages.generate.models` (in `{file}`) names one model ({}): hard negatives are solutions of another model, so the `hard_negatives` gate (`gates.min_hard_negative_share` = {}) would refuse the release; name a second model",
            models.join(", "),
            plan.gates.min_hard_negative_share
        ));
    }
    problems
}

/// Whether files can be made in `dir` (or, while it does not exist, in its nearest existing
/// ancestor, where it would be made).
fn writable(dir: &Path) -> Result<(), String> {
    let mut at: PathBuf = dir.to_owned();
    while !at.exists() {
        match at.parent() {
            Some(p) => at = p.to_owned(),
            None => return Err("no existing directory above it".into()),
        }
    }
    if !at.is_dir() {
        return Err(format!("`{}` is not a directory", at.display()));
    }
    tempfile::Builder::new()
        .prefix(".coreb-preflight-")
        .tempfile_in(&at)
        .map(drop)
        .map_err(|e| format!("cannot write in `{}`: {e}", at.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RunPlan {
        RunPlan::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/sample.toml"),
            Some(1),
        )
        .unwrap()
    }

    fn problems(plan: &RunPlan, until: StageName) -> Vec<String> {
        Preflight { plan, until, own_gateway: false, llm_recorded: false }.problems()
    }

    /// The one problem found for a build of `plan` up to `until`, which holds each of `said`.
    fn one_problem(plan: &RunPlan, until: StageName, said: &[&str]) -> String {
        let found = problems(plan, until);
        assert!(found.len() == 1 && said.iter().all(|s| found[0].contains(s)), "{found:?}");
        found[0].clone()
    }

    #[test]
    fn the_sample_passes() {
        assert_eq!(problems(&sample(), StageName::Release), Vec::<String>::new());
    }

    #[test]
    fn an_unwritable_releases_dir_is_named_before_any_stage() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let mut plan = sample();
        plan.publish_dir = file.join("v202503");
        let found = one_problem(&plan, StageName::Release, &["is not a directory"]);
        assert!(found.starts_with("`releases_dir`"), "{found}");
        // A build that stops before `release` does not need it.
        assert!(problems(&plan, StageName::Qrels).is_empty());
        plan.output_dir = file.join("build");
        assert!(problems(&plan, StageName::Fetch)[0].starts_with("`output_dir`"));
    }

    #[test]
    fn a_live_build_needs_its_key_and_a_replay_its_store() {
        let mut plan = sample();
        plan.llm.mode = StoreMode::Live;
        plan.llm.api_key_env = "COREB_PREFLIGHT_TEST_KEY_THAT_IS_NOT_SET".into();
        one_problem(
            &plan,
            StageName::Rewrite,
            &["COREB_PREFLIGHT_TEST_KEY_THAT_IS_NOT_SET", "sample.toml"],
        );
        // Before the LLM stages, or with a gateway of the caller's, no key is needed.
        assert!(problems(&plan, StageName::Filter).is_empty());
        assert!(
            Preflight {
                plan: &plan,
                until: StageName::Release,
                own_gateway: true,
                llm_recorded: false
            }
            .problems()
            .is_empty()
        );
        let mut replay = sample();
        replay.response_store = replay.output_dir.join("no-such-store");
        assert!(problems(&replay, StageName::Rewrite)[0].contains("does not exist"));
    }

    #[test]
    fn a_composition_the_models_cannot_make_is_named() {
        let mut plan = sample();
        plan.llm.stages.entry(LlmStage::Generate).or_default().models = vec!["only-one".into()];
        one_problem(
            &plan,
            StageName::Release,
            &["names one model (only-one)", "min_hard_negative_share"],
        );
        assert!(
            problems(&plan, StageName::Execute).is_empty(),
            "checked only for builds that compose the qrels"
        );
        plan.gates.waive.push("hard_negatives".into());
        assert!(problems(&plan, StageName::Release).is_empty());
        let mut plan = sample();
        plan.stages.qrels.target_model = Some("not-a-model".into());
        assert!(
            problems(&plan, StageName::Release)[0]
                .starts_with("`stages.qrels.target_model` = `not-a-model`")
        );
    }
}
