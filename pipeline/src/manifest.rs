//! Build manifests: the raw TOML layer ([`ManifestFile`]) and the resolved [`RunPlan`].
//!
//! Unknown keys are errors everywhere (`deny_unknown_fields`). Relative paths are relative to
//! the manifest's own directory. The environment is read only for secrets, at the edge.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use coreb_data::problem::DateWindow;
use coreb_data::releases::ReleaseManifest;
use coreb_eval::gates::GatesConfig;
use coreb_llm::LlmConfig;
use coreb_stages::fetch::Source;
use serde::{Deserialize, Serialize};

/// A manifest exactly as written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManifestFile {
    /// Release version, `vYYYYMM`.
    pub(crate) version: String,
    /// Contest-date window of the release (inclusive dates).
    #[serde(default)]
    pub(crate) window: WindowFile,
    /// Where build artifacts go (relative to the manifest).
    pub(crate) output_dir: PathBuf,
    /// Where published releases live (relative to the manifest); default `../releases`.
    #[serde(default)]
    pub(crate) releases_dir: Option<PathBuf>,
    /// Source files, concatenated in order (release files are cumulative).
    pub(crate) sources: Vec<SourceFile>,
    /// Stage parameters.
    #[serde(default)]
    pub(crate) stages: StagesFile,
    /// `[llm]`: endpoint, models, sampling, limits, store mode.
    #[serde(default)]
    pub(crate) llm: LlmConfig,
    /// `[gates]`: what a release must pass before `release` publishes it.
    #[serde(default)]
    pub(crate) gates: GatesConfig,
    /// Prompt templates (relative to the manifest); default `../prompts`.
    #[serde(default)]
    pub(crate) prompts_dir: Option<PathBuf>,
    /// The LLM response store (relative to the manifest); default `<output_dir>/responses`.
    #[serde(default)]
    pub(crate) response_store: Option<PathBuf>,
    /// `[eval]`: how `coreb eval --manifest` evaluates (and checks the gates of) the release.
    #[serde(default)]
    pub(crate) eval: EvalFile,
    /// `[control]`: build this month as the control of a published release (no
    /// counterfactual rewrite; see [`ControlFile`]).
    #[serde(default)]
    pub(crate) control: Option<ControlFile>,
    /// `[purpose]`: whether the release is for training or testing (see [`PurposeFile`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) purpose: Option<PurposeFile>,
}

/// `[purpose] role = "training" | "test"`, and for a test release `training = ["<release
/// directory>", ...]`: the training releases it must be problem-disjoint from. `release`
/// refuses a test release that shares a problem with one of them (naming the problems) and
/// records the role and the training releases (version, MANIFEST sha256) under `purpose` in
/// its MANIFEST; `coreb export --layout reranker-train` refuses a test release.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PurposeFile {
    /// Training or test.
    pub(crate) role: coreb_data::releases::Role,
    /// A test release's training releases (relative to the manifest).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) training: Vec<PathBuf>,
}

/// `[control] of = "<release directory>"`: the build is the control release of that
/// published release: the same month without the counterfactual rewrite. `rewrite` passes the
/// original statements, starter code and tests through unchanged (no LLM request), keeping
/// only the problems the release published; every later stage runs on them as usual; the
/// `release` stage checks that its queries map one to one onto the release's and records the
/// release's version and MANIFEST sha256 under `controls` in its own MANIFEST.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ControlFile {
    /// The release controlled (relative to the manifest), e.g. `"../releases/sample/v202503"`.
    pub(crate) of: PathBuf,
}

/// `[eval]`: the prompts `coreb eval --manifest <this>` gives a dense retriever; the
/// command line overrides them.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EvalFile {
    /// A preset file (relative to the manifest); default: the built-in presets.
    #[serde(default)]
    pub(crate) prompts_file: Option<PathBuf>,
    /// `[eval.prompts]`: `preset`, `query`, `document`.
    #[serde(default)]
    pub(crate) prompts: coreb_eval::prompts::PromptOverrides,
}

/// `[window]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WindowFile {
    /// First contest day, `YYYY-MM-DD`.
    pub(crate) start: Option<String>,
    /// Last contest day, `YYYY-MM-DD`.
    pub(crate) end: Option<String>,
}

/// One `[[sources]]` entry.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SourceFile {
    /// A short name (`test6`); names the downloaded file.
    pub(crate) name: String,
    /// `https://…`, `http://…`, `file://…` or a path (relative to the manifest).
    pub(crate) url: String,
    /// Expected sha256 (hex); checked when given.
    pub(crate) sha256: Option<String>,
}

/// Makes [`StagesFile`] from the rows of [`crate::stage_rows::stage_rows!`]: a section for each
/// stage whose row names its configuration (`config [T]`), none for a stage without one.
macro_rules! stages_file {
    ($({
        $_doc:tt $_variant:ident $name:ident $_run:tt $_reads:tt [$($config:ty)?] $($_rest:tt)*
    })*) => {
        /// `[stages.*]`: parameters of each stage; every section is optional.
        #[derive(Debug, Clone, Default, Deserialize, Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct StagesFile {
            $($(
                #[doc = concat!("`[stages.", stringify!($name), "]`.")]
                #[serde(default)]
                pub(crate) $name: $config,
            )?)*
        }
    };
}

crate::stage_rows::stage_rows!(stages_file);

/// A validated manifest: paths absolute, defaults applied.
#[derive(Debug, Clone, Serialize)]
pub struct RunPlan {
    /// The manifest file.
    pub(crate) manifest_path: PathBuf,
    /// Release version.
    pub(crate) version: String,
    /// Contest-date window.
    pub(crate) window: DateWindow,
    /// Build directory.
    pub(crate) output_dir: PathBuf,
    /// Published releases.
    pub(crate) releases_dir: PathBuf,
    /// Sources, resolved.
    pub(crate) sources: Vec<Source>,
    /// Stage parameters.
    pub(crate) stages: StagesFile,
    /// LLM settings.
    pub(crate) llm: LlmConfig,
    /// Release gates.
    pub(crate) gates: GatesConfig,
    /// Prompt templates.
    pub(crate) prompts_dir: PathBuf,
    /// The LLM response store.
    pub(crate) response_store: PathBuf,
    /// `[eval]`, with `prompts_file` absolute.
    pub(crate) eval: EvalFile,
    /// Worker threads.
    pub(crate) jobs: usize,
    /// Where `release` publishes: `<releases_dir>/<version>` unless `verify` redirects it.
    pub(crate) publish_dir: PathBuf,
    /// The manifest's exact text (embedded in the release MANIFEST).
    #[serde(skip)]
    pub(crate) manifest_text: String,
    /// `--replace`: `release` may replace a published release of this version that holds
    /// other content (else it refuses: published releases are immutable).
    pub(crate) replace: bool,
    /// `[control] of`, absolute: the release this build is the control of.
    pub(crate) control: Option<PathBuf>,
    /// `[purpose]`, its training releases absolute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) purpose: Option<PurposeFile>,
    /// Where `release` looks for the human review recorded for this version (`None`:
    /// `<releases_dir>/reviews/<version>/`, where `coreb review report --record` puts it);
    /// `verify` points it at the review a release's kit carries.
    #[serde(skip)]
    pub(crate) review_dir: Option<PathBuf>,
    /// The build manifest's path as the release records it (`build_manifest.path`, relative
    /// to where the release belongs). `None`: computed from `manifest_path`; `verify` gives
    /// the published release's own, which a rebuild cannot always compute again (the
    /// published path may climb above a copy's place: `../../../manifests/sample.toml` of a
    /// copy at `/rel/v202503`).
    #[serde(skip)]
    pub(crate) recorded_manifest_path: Option<String>,
    /// The command line's `--output-dir` and `--publish-dir`, as a rerun must repeat them
    /// ([`RunPlan::rerun`]).
    #[serde(skip)]
    pub(crate) rerun_flags: Vec<String>,
}

impl RunPlan {
    /// The command that runs this plan again (`coreb build <manifest>` with the
    /// `--output-dir` and `--publish-dir` it was given), to suggest in a message.
    pub(crate) fn rerun(&self) -> String {
        let mut words = vec![
            "coreb".to_owned(),
            "build".to_owned(),
            shell_word(&self.manifest_path.to_string_lossy()),
        ];
        words.extend(self.rerun_flags.iter().cloned());
        words.join(" ")
    }

    /// Read, parse and resolve a manifest.
    pub fn load(path: &Path, jobs: Option<usize>) -> anyhow::Result<RunPlan> {
        // A manifest that cannot be read, parsed or resolved is the command's mistake (exit 2).
        let usage =
            |e: anyhow::Error| anyhow::Error::new(coreb_base::errors::Usage(format!("{e:#}")));
        let text = fs_err::read_to_string(path).map_err(|e| usage(e.into()))?;
        let file: ManifestFile = toml::from_str(&text).map_err(|e| {
            usage(anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))
        })?;
        let mut plan = Self::resolve(path, file, jobs)
            .with_context(|| format!("resolving manifest `{}`", path.display()))
            .map_err(usage)?;
        plan.manifest_text = text;
        Ok(plan)
    }

    /// Validate a parsed manifest and apply defaults.
    pub(crate) fn resolve(
        path: &Path,
        file: ManifestFile,
        jobs: Option<usize>,
    ) -> anyhow::Result<RunPlan> {
        let ManifestFile {
            version,
            window,
            output_dir,
            releases_dir,
            sources,
            stages,
            llm,
            gates,
            prompts_dir,
            response_store,
            eval,
            control,
            purpose,
        } = file;
        coreb_eval::check::check_waivers(&gates)?;
        if !is_version(&version) {
            bail!("`version`: expected `vYYYYMM`, got `{version}`");
        }
        let base = path
            .parent()
            .map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p })
            .unwrap_or(Path::new("."));
        let base = fs_err::canonicalize(base)?;
        let window = DateWindow::new(window.start.as_deref(), window.end.as_deref())
            .map_err(|e| anyhow::anyhow!("`window`: {e}"))?;
        if sources.is_empty() {
            bail!("`sources`: at least one source is needed");
        }
        let mut resolved = Vec::with_capacity(sources.len());
        for (i, s) in sources.into_iter().enumerate() {
            let url = if s.url.contains("://") {
                s.url.clone()
            } else {
                lexical_join(&base, Path::new(&s.url)).display().to_string()
            };
            let source = Source::resolve(&s.name, &url, s.sha256.as_deref(), &base)
                .map_err(|e| anyhow::anyhow!("`sources[{i}]`: {e}"))?;
            if resolved.iter().any(|r: &Source| r.name == source.name) {
                bail!("`sources[{i}].name`: duplicate name `{}`", source.name);
            }
            resolved.push(source);
        }
        stages.dedup.validate().map_err(|e| anyhow::anyhow!("`stages.dedup`: {e}"))?;
        stages.filter.validate().map_err(|e| anyhow::anyhow!("`stages.filter`: {e}"))?;
        llm.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
        let output_dir = lexical_join(&base, &output_dir);
        // `--jobs 0` (or none) means every core.
        let jobs = jobs
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let releases_dir =
            lexical_join(&base, &releases_dir.unwrap_or_else(|| PathBuf::from("../releases")));
        let control = control.map(|c| lexical_join(&base, &c.of));
        if let Some(of) = &control
            && of.parent() == Some(releases_dir.as_path())
        {
            bail!(
                "`control.of`: the control of `{}` is published in a `releases_dir` of its own (e.g. `{}`), not beside the releases of the series, whose problems it repeats",
                of.display(),
                releases_dir.join("control").display()
            );
        }
        let purpose = purpose
            .map(|p| -> anyhow::Result<PurposeFile> {
                if p.role == coreb_data::releases::Role::Training && !p.training.is_empty() {
                    bail!("`purpose.training`: only a test release names training releases");
                }
                Ok(PurposeFile {
                    role: p.role,
                    training: p.training.iter().map(|t| lexical_join(&base, t)).collect(),
                })
            })
            .transpose()?;
        Ok(RunPlan {
            control,
            purpose,
            review_dir: None,
            recorded_manifest_path: None,
            rerun_flags: Vec::new(),
            publish_dir: releases_dir.join(&version),
            manifest_text: String::new(),
            replace: false,
            manifest_path: base.join(path.file_name().unwrap_or_default()),
            version,
            window,
            prompts_dir: lexical_join(
                &base,
                &prompts_dir.unwrap_or_else(|| PathBuf::from("../prompts")),
            ),
            response_store: response_store
                .map_or_else(|| output_dir.join("responses"), |p| lexical_join(&base, &p)),
            eval: EvalFile {
                prompts_file: eval.prompts_file.map(|p| lexical_join(&base, &p)),
                prompts: eval.prompts,
            },
            output_dir,
            llm,
            gates,
            releases_dir,
            sources: resolved,
            stages,
            jobs,
        })
    }
}

/// The build manifest a published release embeds in its `MANIFEST.json`, as every command
/// that goes back from a release to its build reads it (`coreb verify`, `coreb audit`,
/// `coreb review`, `coreb plan`): the release's MANIFEST, the build manifest parsed, and where
/// that manifest was when the release was built. Does NOT check the sandbox settings it may
/// carry: a caller that would run its judge asks [`EmbeddedManifest::check_sandbox`].
#[derive(Debug, Clone)]
pub(crate) struct EmbeddedManifest {
    /// The release's `MANIFEST.json`.
    pub(crate) manifest_file: PathBuf,
    /// Its contents.
    pub(crate) release: ReleaseManifest,
    /// The embedded build manifest (`build_manifest.text`), parsed.
    pub(crate) file: ManifestFile,
    /// Where the build manifest was: the release directory, made absolute, joined with
    /// `build_manifest.path` (the manifest's relative paths start from its parent).
    pub(crate) path: PathBuf,
}

impl EmbeddedManifest {
    /// Read `<release>/MANIFEST.json` and parse the build manifest it embeds; an error names
    /// the MANIFEST.
    pub(crate) fn read(release: &Path) -> anyhow::Result<EmbeddedManifest> {
        let manifest_file = release.join("MANIFEST.json");
        let manifest = ReleaseManifest::read(&manifest_file)?;
        let file: ManifestFile = toml::from_str(&manifest.build_manifest.text).map_err(|e| {
            anyhow::anyhow!(
                "the build manifest embedded in `{}` (`build_manifest.text`): {}",
                manifest_file.display(),
                e.to_string().trim_end()
            )
        })?;
        let release_abs =
            std::path::absolute(release).with_context(|| format!("`{}`", release.display()))?;
        let path = lexical_join(&release_abs, Path::new(&manifest.build_manifest.path));
        Ok(EmbeddedManifest { manifest_file, release: manifest, file, path })
    }

    /// The build manifest's exact text.
    pub(crate) fn text(&self) -> &str {
        &self.release.build_manifest.text
    }

    /// The directory the build manifest's relative paths start from.
    pub(crate) fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("/"))
    }

    /// Refuse a build manifest that sets the judge's sandbox ([`sandbox_settings`]), unless
    /// `trusted` (`--trust-release-sandbox`).
    pub(crate) fn check_sandbox(&self, trusted: bool) -> anyhow::Result<()> {
        check_release_sandbox(self.text(), &self.manifest_file, trusted)
    }
}

/// The keys of `[stages.execute]` in a manifest's text that decide how the judge isolates and
/// what it runs: the whole `sandbox` table, `work_dir`, and each language's `compile`, `run`,
/// `env`, `prelude`, `source` and `compile_cache`. A build manifest embedded in a release
/// (`coreb verify`, `coreb audit … model`) may set them only when the user passes
/// `--trust-release-sandbox`: its author, not the user, would otherwise choose the uid pool,
/// the visible host paths, and the commands that run. Limits and time multipliers are not in
/// the list (they change verdicts, not the sandbox).
fn sandbox_settings(manifest_text: &str) -> Vec<String> {
    let Ok(value) = manifest_text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let Some(execute) =
        value.get("stages").and_then(|s| s.get("execute")).and_then(toml::Value::as_table)
    else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (key, v) in execute {
        match (key.as_str(), v.as_table()) {
            ("sandbox", Some(t)) if !t.is_empty() => {
                found.extend(t.keys().map(|k| format!("stages.execute.sandbox.{k}")))
            }
            ("sandbox", _) => found.push("stages.execute.sandbox".into()),
            ("work_dir", _) => found.push("stages.execute.work_dir".into()),
            (lang, Some(t)) => {
                for k in ["compile", "run", "env", "prelude", "source", "compile_cache"] {
                    if t.contains_key(k) {
                        found.push(format!("stages.execute.{lang}.{k}"));
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// Refuse a release's embedded manifest that sets [`sandbox_settings`], unless trusted.
pub(crate) fn check_release_sandbox(
    manifest_text: &str,
    where_: &Path,
    trusted: bool,
) -> anyhow::Result<()> {
    let found = sandbox_settings(manifest_text);
    if found.is_empty() || trusted {
        return Ok(());
    }
    let list: Vec<String> = found.iter().map(|k| format!("`{k}`")).collect();
    bail!(
        "`{}`: the build manifest embedded in the release sets {}: a release never chooses the sandbox's settings or the commands the judge runs unless you pass `--trust-release-sandbox` (read them first)",
        where_.display(),
        list.join(", ")
    )
}

/// `base` joined with `rel`, with `.` and `..` removed lexically (the target may not exist yet).
pub(crate) fn lexical_join(base: &Path, rel: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in base.join(rel).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn is_version(v: &str) -> bool {
    has_version_shape(v) && {
        let month: u32 = v[5..].parse().unwrap_or(0);
        (1..=12).contains(&month)
    }
}

/// Whether a name has the shape of a release version, `v` and six digits (what a releases
/// directory's entries are matched by; `is_version` also checks the month).
pub(crate) fn has_version_shape(name: &str) -> bool {
    name.len() == 7 && name.starts_with('v') && name[1..].bytes().all(|b| b.is_ascii_digit())
}

/// `word` as one shell word: as is when plain, else in single quotes.
pub(crate) fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain { word.to_owned() } else { format!("'{}'", word.replace('\'', "'\\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ManifestFile, toml::de::Error> {
        toml::from_str(text)
    }

    const MINIMAL: &str = r#"
version = "v202504"
output_dir = "build"
[[sources]]
name = "lcb"
url = "data.jsonl"
"#;

    #[test]
    fn minimal_manifest_parses_with_defaults() {
        let m = parse(MINIMAL).unwrap();
        assert_eq!(m.version, "v202504");
        assert_eq!(m.stages.dedup, coreb_stages::dedup::DedupConfig::default());
    }

    #[test]
    fn unknown_keys_are_errors() {
        let err =
            parse(&format!("{MINIMAL}\n[stages.dedup]\nshingle = 3\n")).unwrap_err().to_string();
        assert!(err.contains("unknown field `shingle`"), "{err}");
        assert!(err.contains("line 9"), "{err}");
        let err = parse(&format!("colour = 1\n{MINIMAL}")).unwrap_err().to_string();
        assert!(err.contains("unknown field `colour`"), "{err}");
    }

    #[test]
    fn paths_are_normalised() {
        assert_eq!(
            lexical_join(Path::new("/p/manifests"), Path::new("../build/x")),
            PathBuf::from("/p/build/x")
        );
        assert_eq!(
            lexical_join(Path::new("/p/manifests"), Path::new("/abs/./y")),
            PathBuf::from("/abs/y")
        );
    }

    #[test]
    fn sandbox_settings_of_a_release_are_found() {
        assert!(sandbox_settings(MINIMAL).is_empty());
        let limits_only = format!(
            "{MINIMAL}\n[stages.execute.limits]\ncpu_time_ms = 1000\n[stages.execute.python]\ntime_multiplier = 2.0\n"
        );
        assert!(sandbox_settings(&limits_only).is_empty());
        let hostile = format!(
            "{MINIMAL}\n[stages.execute]\nwork_dir = \"/etc\"\n[stages.execute.sandbox]\nuid_base = 0\nvisible_paths = [\"/home\"]\n[stages.execute.python]\nrun = [\"sh\", \"-c\", \"curl x\"]\n"
        );
        let mut found = sandbox_settings(&hostile);
        found.sort();
        assert_eq!(
            found,
            [
                "stages.execute.python.run",
                "stages.execute.sandbox.uid_base",
                "stages.execute.sandbox.visible_paths",
                "stages.execute.work_dir"
            ]
        );
        let err = check_release_sandbox(&hostile, Path::new("r/MANIFEST.json"), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`stages.execute.sandbox.uid_base`")
                && err.contains("--trust-release-sandbox"),
            "{err}"
        );
        check_release_sandbox(&hostile, Path::new("r/MANIFEST.json"), true).unwrap();
    }

    #[test]
    fn versions() {
        assert!(is_version("v202504"));
        assert!(!is_version("v202513"));
        assert!(!is_version("2025-04"));
    }
}
