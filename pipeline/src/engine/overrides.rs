//! What the command line changes of a resolved plan: where a build keeps its artifacts and
//! where it publishes. Applied in one place, when the manifest is loaded, so every command
//! (`build`, a stage command, `merge`) means the same by `--output-dir` and `--publish-dir`.

use std::path::{Path, PathBuf};

use crate::manifest::RunPlan;

/// `--output-dir` and `--publish-dir` (relative paths: against the current directory).
#[derive(Debug, Clone, Default)]
pub(crate) struct PlanOverrides {
    /// Keep build artifacts here instead of the manifest's `output_dir`.
    pub(crate) output_dir: Option<PathBuf>,
    /// Publish the release here instead of `<releases_dir>/<version>`.
    pub(crate) publish_dir: Option<PathBuf>,
}

impl PlanOverrides {
    /// Load and resolve the manifest at `manifest` (`jobs` worker threads), then apply the
    /// overrides.
    pub(crate) fn load(self, manifest: &Path, jobs: Option<usize>) -> anyhow::Result<RunPlan> {
        let mut plan = RunPlan::load(manifest, jobs)?;
        self.apply(&mut plan)?;
        Ok(plan)
    }

    /// Apply the overrides to a resolved plan.
    pub(crate) fn apply(self, plan: &mut RunPlan) -> std::io::Result<()> {
        let word = |p: &Path| crate::manifest::shell_word(&p.to_string_lossy());
        if let Some(dir) = self.output_dir {
            plan.output_dir = std::path::absolute(dir)?;
            plan.rerun_flags.push(format!("--output-dir {}", word(&plan.output_dir)));
        }
        if let Some(dir) = self.publish_dir {
            plan.publish_dir = std::path::absolute(dir)?;
            plan.rerun_flags.push(format!("--publish-dir {}", word(&plan.publish_dir)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_only_what_they_name_and_are_made_absolute() {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/sample.toml");
        let plain = PlanOverrides::default().load(&manifest, Some(1)).unwrap();
        let moved = PlanOverrides { output_dir: Some("elsewhere/build".into()), publish_dir: None }
            .load(&manifest, Some(1))
            .unwrap();
        assert_eq!(moved.output_dir, std::env::current_dir().unwrap().join("elsewhere/build"));
        assert_eq!(moved.publish_dir, plain.publish_dir);
        assert_ne!(plain.output_dir, moved.output_dir);
        let published = PlanOverrides { output_dir: None, publish_dir: Some("/tmp/r".into()) }
            .load(&manifest, Some(1))
            .unwrap();
        assert_eq!(
            (published.output_dir, published.publish_dir),
            (plain.output_dir, PathBuf::from("/tmp/r"))
        );
    }
}
