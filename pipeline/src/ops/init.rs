//! A benchmark workspace outside this repository (`coreb init <dir>`): everything the
//! installed `coreb` needs to build the bundled sample offline, plan and build real months,
//! evaluate and export, with no file of the repository.
//!
//! The binary carries what it writes: the prompts and schemas, the sample's manifest, its
//! source problems and response store, and `scripts/monthly.sh`, copied at their repository
//! paths (a table `pipeline/build.rs` generates with `include_bytes!`); and the workspace's own
//! files under `ops/init/` (its README, `.gitignore`, the month template, the schedules).
//!
//! The sample's manifest is written verbatim, so the sample's files sit at the paths it names
//! (`tests/fixtures/sample/`): a release records its build manifest's text and its path from
//! the release (`MANIFEST.json`), so the sample built in a workspace is byte for byte the
//! published `releases/sample/v202503`, and `coreb verify` and `coreb plan` resolve the paths
//! that manifest names in the workspace.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use coreb_base::durable;
use coreb_base::errors::Usage;

include!(concat!(env!("OUT_DIR"), "/workspace_files.rs"));

/// The workspace's own files: (path, bytes, executable).
const OWN_FILES: &[(&str, &[u8], bool)] = &[
    ("README.md", include_bytes!("init/README.md"), false),
    (".gitignore", include_bytes!("init/gitignore"), false),
    ("manifests/month.example.toml", include_bytes!("init/month.example.toml"), false),
    ("schedule/crontab", include_bytes!("init/crontab"), false),
    ("schedule/coreb-monthly.service", include_bytes!("init/coreb-monthly.service"), false),
    ("schedule/coreb-monthly.timer", include_bytes!("init/coreb-monthly.timer"), false),
    ("schedule/monthly.sbatch", include_bytes!("init/monthly.sbatch"), true),
];

/// Repository files that are scripts (written executable).
const EXECUTABLE: &[&str] = &["scripts/monthly.sh"];

/// Empty directories a workspace starts with (`releases/` holds the published releases).
const DIRECTORIES: &[&str] = &["releases", "build"];

/// What `coreb init` wrote.
#[derive(Debug, Clone)]
pub(crate) struct Workspace {
    /// The workspace, absolute.
    pub(crate) dir: PathBuf,
    /// Files written, relative to it, sorted.
    pub(crate) files: Vec<String>,
}

/// Every file of a new workspace: (path, bytes, executable), sorted by path.
fn workspace_files() -> Vec<(&'static str, &'static [u8], bool)> {
    let mut files: Vec<_> = WORKSPACE_FILES
        .iter()
        .map(|(p, b)| (*p, *b, EXECUTABLE.contains(p)))
        .chain(OWN_FILES.iter().copied())
        .collect();
    files.sort_by_key(|(p, _, _)| *p);
    files
}

/// Write a new workspace into `dir`, which must be missing or empty (a non-empty one is
/// refused as a [`Usage`] error: nothing in it is overwritten).
pub(crate) fn init(dir: &Path) -> anyhow::Result<Workspace> {
    let dir = std::path::absolute(dir).with_context(|| format!("`{}`", dir.display()))?;
    if dir.exists() {
        if !dir.is_dir() {
            return Err(Usage(format!("`{}` exists and is not a directory: coreb init makes a workspace in a new or empty directory", dir.display())).into());
        }
        let mut entries = fs_err::read_dir(&dir)?;
        if entries.next().is_some() {
            return Err(Usage(format!("`{}` is not empty: coreb init makes a workspace only in a new or empty directory, and overwrites nothing", dir.display())).into());
        }
    }
    let mut written = Vec::new();
    for (rel, bytes, executable) in workspace_files() {
        let path = dir.join(rel);
        durable::write(&path, bytes).with_context(|| format!("writing `{}`", path.display()))?;
        if executable {
            use std::os::unix::fs::PermissionsExt as _;
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
        written.push(rel.to_owned());
    }
    for rel in DIRECTORIES {
        fs_err::create_dir_all(dir.join(rel))?;
    }
    durable::sync_tree(&dir).with_context(|| format!("syncing `{}`", dir.display()))?;
    Ok(Workspace { dir, files: written })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_the_prompts_the_sample_and_its_store() {
        let files = workspace_files();
        let has = |p: &str| files.iter().any(|(f, _, _)| *f == p);
        for p in [
            "prompts/rewrite.toml",
            "prompts/rewrite.schema.json",
            "prompts/eval/presets.toml",
            "manifests/sample.toml",
            "tests/fixtures/sample/problems.jsonl",
            "README.md",
            ".gitignore",
        ] {
            assert!(has(p), "no `{p}` in the workspace");
        }
        let store =
            files.iter().filter(|(f, _, _)| f.starts_with("tests/fixtures/sample/store/")).count();
        assert!(store > 100, "only {store} stored answers");
        // No path twice (a workspace file shadowing a repository one).
        let mut names: Vec<_> = files.iter().map(|(f, _, _)| *f).collect();
        names.dedup();
        assert_eq!(names.len(), files.len());
    }

    #[test]
    fn refuses_a_non_empty_directory_and_touches_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::write(dir.path().join("notes.txt"), "mine").unwrap();
        let err = init(dir.path()).unwrap_err();
        assert!(err.downcast_ref::<Usage>().is_some(), "{err:#}");
        assert!(err.to_string().contains("is not empty"), "{err:#}");
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(fs_err::read_to_string(dir.path().join("notes.txt")).unwrap(), "mine");
        let file = dir.path().join("notes.txt");
        assert!(init(&file).unwrap_err().downcast_ref::<Usage>().is_some());
    }
}
