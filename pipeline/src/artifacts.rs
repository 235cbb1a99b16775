//! The artifact store: stage outputs under `<output_dir>/artifacts/<stage>/`, keyed by the
//! hash of their inputs.
//!
//! A stage's input key is the sha256 of the canonical JSON of: the stage name, the tool
//! fingerprint ([`TOOL_FINGERPRINT`]: the version and the sha256 of the source the binary was
//! built from, so changed stage code never reuses an old artifact), the stage's manifest
//! section and the fingerprints of its upstream outputs (and, for LLM stages, prompt hashes).
//! A stage writes into `artifacts/.<stage>.tmp/`, then [`StageWriter::commit`] hashes every
//! output (or takes the sha256 it was written with, [`coreb_base::durable::sha256_as_written`]),
//! writes `record.json`, fsyncs every file and renames the directory into place
//! ([`coreb_base::durable::replace_dir`]). A directory without `record.json`, with another key,
//! or whose outputs no longer hash to what the record says (a torn or edited file) is never
//! taken as complete, so a killed stage simply runs again.

use coreb_data::releases::FileEntry;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use coreb_base::hashing::{sha256_file, sha256_hex};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The version recorded in every stage record and release.
pub(crate) const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What built an artifact: the version and the sha256 of the source of every crate linked
/// into the binary (`build.rs`). Part of every stage key; not of releases, whose files are
/// compared by content.
pub(crate) const TOOL_FINGERPRINT: &str =
    concat!(env!("CARGO_PKG_VERSION"), "+", env!("COREB_SOURCE_SHA256"));

/// One output file of a stage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct OutputFile {
    /// File name inside the stage directory.
    pub(crate) file: String,
    /// Its sha256.
    pub(crate) sha256: String,
    /// Its size.
    pub(crate) bytes: u64,
}

/// What a completed stage left behind (`artifacts/<stage>/record.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StageRecord {
    /// The stage.
    pub(crate) stage: String,
    /// Input key this output was built from.
    pub(crate) key: String,
    /// coreb version that built it.
    pub(crate) tool_version: String,
    /// [`TOOL_FINGERPRINT`] of the binary that built it (empty in records made before it
    /// was recorded, which are then never reused).
    #[serde(default)]
    pub(crate) tool_fingerprint: String,
    /// Output files by role (`problems`, `report` …).
    pub(crate) outputs: BTreeMap<String, OutputFile>,
    /// The stage's summary: counts, parameters, stage-specific facts. Part of the
    /// fingerprint, so it holds nothing machine-specific.
    pub(crate) summary: serde_json::Value,
    /// Machine-specific facts (absolute paths of local sources); not part of the fingerprint,
    /// so that the same inputs give the same keys on every machine.
    #[serde(default)]
    pub(crate) local: serde_json::Value,
}

impl StageRecord {
    /// A digest of what this stage produced, for downstream keys.
    pub(crate) fn fingerprint(&self) -> String {
        let value = serde_json::json!({ "outputs": self.outputs, "summary": self.summary });
        sha256_hex(value.to_string().as_bytes())
    }
}

/// The input key of a stage run.
pub(crate) fn input_key(
    stage: &str,
    config: &impl Serialize,
    upstream: &[&StageRecord],
) -> anyhow::Result<String> {
    key_of(TOOL_FINGERPRINT, stage, config, upstream)
}

/// [`input_key`] as a binary with the fingerprint `tool` computes it.
fn key_of(
    tool: &str,
    stage: &str,
    config: &impl Serialize,
    upstream: &[&StageRecord],
) -> anyhow::Result<String> {
    let value = serde_json::json!({
        "stage": stage,
        "tool": tool,
        "config": serde_json::to_value(config)?,
        "upstream": upstream.iter().map(|r| (r.stage.clone(), r.fingerprint())).collect::<BTreeMap<_, _>>(),
    });
    Ok(sha256_hex(value.to_string().as_bytes()))
}

/// The store rooted at `<output_dir>/artifacts`.
#[derive(Debug, Clone)]
pub(crate) struct ArtifactStore {
    root: PathBuf,
}

impl ArtifactStore {
    /// Open (create) the store.
    pub(crate) fn open(root: &Path) -> anyhow::Result<Self> {
        fs_err::create_dir_all(root)?;
        Ok(ArtifactStore { root: root.to_owned() })
    }

    /// The store at `root` for reading only: nothing is created; `None` when it does not exist.
    pub(crate) fn existing(root: &Path) -> Option<Self> {
        root.is_dir().then(|| ArtifactStore { root: root.to_owned() })
    }

    /// The directory of a completed stage.
    pub(crate) fn stage_dir(&self, stage: &str) -> PathBuf {
        self.root.join(stage)
    }

    /// The path of one output (`role`) of a completed stage.
    pub(crate) fn output(&self, record: &StageRecord, role: &str) -> anyhow::Result<PathBuf> {
        let file = record
            .outputs
            .get(role)
            .ok_or_else(|| anyhow::anyhow!("stage `{}` has no `{role}` output", record.stage))?;
        Ok(self.stage_dir(&record.stage).join(&file.file))
    }

    /// The record of a stage, whatever its key (for reports and `verify`).
    pub(crate) fn record(&self, stage: &str) -> anyhow::Result<Option<StageRecord>> {
        let path = self.stage_dir(stage).join("record.json");
        if !path.exists() {
            return Ok(None);
        }
        read_record(&path).map(Some)
    }

    /// Could [`lookup`](Self::lookup) find anything for `stage`, whatever the key: is there a
    /// record of it built by this binary? (A stage that knows it will miss can start before
    /// its key is known.)
    pub(crate) fn holds_reusable(&self, stage: &str) -> anyhow::Result<bool> {
        Ok(self.record(stage)?.is_some_and(|r| r.tool_fingerprint == TOOL_FINGERPRINT))
    }

    /// The record of a stage built from exactly `key` by this binary, if every output is
    /// still what it recorded: each file is hashed again (in parallel), so a torn, truncated
    /// or edited output means a miss and the stage runs again.
    pub(crate) fn lookup(&self, stage: &str, key: &str) -> anyhow::Result<Option<StageRecord>> {
        let Some(record) = self.record(stage)? else {
            return Ok(None);
        };
        if record.key != key || record.tool_fingerprint != TOOL_FINGERPRINT {
            return Ok(None);
        }
        let dir = self.stage_dir(stage);
        let intact = record
            .outputs
            .par_iter()
            .all(|(_, o)| file_intact(&dir.join(&o.file), &o.sha256, o.bytes));
        if !intact {
            tracing::warn!(
                stage,
                "an output of the stored `{stage}` no longer matches its record; running the stage again"
            );
        }
        Ok(intact.then_some(record))
    }

    /// Start writing a stage: a fresh temporary directory.
    pub(crate) fn begin(&self, stage: &str) -> anyhow::Result<StageWriter> {
        let tmp = self.root.join(format!(".{stage}.tmp"));
        if tmp.exists() {
            fs_err::remove_dir_all(&tmp)?;
        }
        fs_err::create_dir_all(&tmp)?;
        Ok(StageWriter { stage: stage.to_owned(), tmp, dir: self.stage_dir(stage) })
    }
}

/// A stage being written; nothing is visible until [`StageWriter::commit_with_local`].
#[derive(Debug)]
pub(crate) struct StageWriter {
    stage: String,
    tmp: PathBuf,
    dir: PathBuf,
}

impl StageWriter {
    /// Where to write an output file.
    pub(crate) fn path(&self, file: &str) -> PathBuf {
        self.tmp.join(file)
    }

    /// Hash the outputs, write the record and move the stage into place, also recording
    /// machine-specific facts outside the fingerprint. Both are stored as JSON values, whose
    /// maps sort their keys.
    pub(crate) fn commit_with_local(
        self,
        key: &str,
        outputs: &[(&str, &str)],
        summary: &impl Serialize,
        local: &impl Serialize,
    ) -> anyhow::Result<StageRecord> {
        let mut files = BTreeMap::new();
        for (role, file) in outputs {
            let path = self.tmp.join(file);
            // A table the stage wrote through `AtomicFile` was hashed as it was written.
            let FileEntry { sha256, bytes } = file_entry(&path)?;
            files
                .insert((*role).to_owned(), OutputFile { file: (*file).to_owned(), sha256, bytes });
        }
        let record = StageRecord {
            stage: self.stage.clone(),
            key: key.to_owned(),
            tool_version: TOOL_VERSION.to_owned(),
            tool_fingerprint: TOOL_FINGERPRINT.to_owned(),
            outputs: files,
            summary: serde_json::to_value(summary)?,
            local: serde_json::to_value(local)?,
        };
        coreb_base::durable::write(
            &self.tmp.join("record.json"),
            serde_json::to_string_pretty(&record)?.as_bytes(),
        )?;
        // Every output is on disk before the directory, record included, becomes visible.
        coreb_base::durable::replace_dir(&self.tmp, &self.dir)?;
        Ok(record)
    }
}

/// Is the file at `path` still `bytes` long with this sha256? (The size first: a truncated
/// file is caught without reading it.)
pub(crate) fn file_intact(path: &Path, sha256: &str, bytes: u64) -> bool {
    fs_err::metadata(path).is_ok_and(|m| m.len() == bytes)
        && sha256_file(path).is_ok_and(|sha| sha == sha256)
}

/// Read a stage's `record.json`.
pub(crate) fn read_record(path: &Path) -> anyhow::Result<StageRecord> {
    let text = fs_err::read_to_string(path)?;
    serde_json::from_str(&text).with_context(|| format!("`{}`: not a stage record", path.display()))
}

/// Every file under `dir`, as paths relative to it joined with `/`, sorted.
fn files_below(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in fs_err::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(
                    path.strip_prefix(dir)
                        .unwrap_or(&path)
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy())
                        .collect::<Vec<_>>()
                        .join("/"),
                );
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Hash every file under `dir` whose relative path `keep` accepts (paths with `/`).
pub(crate) fn hash_files(
    dir: &Path,
    keep: impl Fn(&str) -> bool,
) -> anyhow::Result<BTreeMap<String, FileEntry>> {
    let mut out = BTreeMap::new();
    for rel in files_below(dir)?.into_iter().filter(|rel| keep(rel)) {
        let entry = file_entry(&dir.join(&rel))?;
        out.insert(rel, entry);
    }
    Ok(out)
}

/// The sha256 and size of the file at `path`, as a marker or MANIFEST lists it: the sha256
/// it was written with when this process committed it through `AtomicFile`
/// ([`coreb_base::durable::sha256_as_written`]), else hashed now.
pub(crate) fn file_entry(path: &Path) -> anyhow::Result<FileEntry> {
    let sha256 = match coreb_base::durable::sha256_as_written(path) {
        Some(sha256) => sha256,
        None => sha256_file(path).with_context(|| format!("hashing `{}`", path.display()))?,
    };
    Ok(FileEntry { sha256, bytes: fs_err::metadata(path)?.len() })
}

/// Hash every file of a release but its `MANIFEST.json`.
pub(crate) fn hash_tree(dir: &Path) -> anyhow::Result<BTreeMap<String, FileEntry>> {
    hash_files(dir, |rel| rel != "MANIFEST.json")
}

/// A store in a new temporary directory, which it lasts as long as (tests).
#[cfg(test)]
pub(crate) fn temporary_store() -> (tempfile::TempDir, ArtifactStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::open(dir.path()).unwrap();
    (dir, store)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_lookup_and_invalidate() {
        let (_dir, store) = temporary_store();
        let key = input_key("ingest", &serde_json::json!({"a": 1}), &[]).unwrap();
        assert!(store.lookup("ingest", &key).unwrap().is_none());

        let w = store.begin("ingest").unwrap();
        fs_err::write(w.path("out.txt"), "hello").unwrap();
        let rec = w
            .commit_with_local(
                &key,
                &[("out", "out.txt")],
                &serde_json::json!({"rows_out": 1}),
                &(),
            )
            .unwrap();
        assert_eq!(rec.outputs["out"].bytes, 5);
        assert_eq!(store.lookup("ingest", &key).unwrap(), Some(rec.clone()));

        // Another config → another key → miss.
        let other = input_key("ingest", &serde_json::json!({"a": 2}), &[]).unwrap();
        assert_ne!(key, other);
        assert!(store.lookup("ingest", &other).unwrap().is_none());
        // Upstream fingerprints are part of the key.
        assert_ne!(
            input_key("dedup", &(), &[&rec]).unwrap(),
            input_key("dedup", &(), &[]).unwrap()
        );

        // A damaged output is not taken as complete: truncated, or edited at the same size.
        fs_err::write(store.stage_dir("ingest").join("out.txt"), "hellp").unwrap();
        assert!(store.lookup("ingest", &key).unwrap().is_none());
        fs_err::write(store.stage_dir("ingest").join("out.txt"), "hell").unwrap();
        assert!(store.lookup("ingest", &key).unwrap().is_none());
        fs_err::write(store.stage_dir("ingest").join("out.txt"), "hello").unwrap();
        assert!(store.lookup("ingest", &key).unwrap().is_some());

        // An interrupted rewrite leaves the old stage in place and is cleared on the next begin.
        let w = store.begin("ingest").unwrap();
        fs_err::write(w.path("partial"), "x").unwrap();
        drop(w);
        let w = store.begin("ingest").unwrap();
        assert!(!w.path("partial").exists());
    }

    #[test]
    fn a_stage_built_by_other_code_is_run_again() {
        // The fingerprint holds the sha256 of the source the binary was built from.
        let (version, source) = TOOL_FINGERPRINT.split_once('+').unwrap();
        assert_eq!(version, TOOL_VERSION);
        assert!(coreb_base::hashing::is_sha256_hex(source), "{TOOL_FINGERPRINT}");
        assert!(env!("COREB_SOURCE_FILES").parse::<usize>().unwrap() > 50);

        let config = serde_json::json!({"a": 1});
        let key = input_key("ingest", &config, &[]).unwrap();
        // The same version built from changed code computes another key for the same stage.
        let other_code = format!("{TOOL_VERSION}+{}", "0".repeat(64));
        assert_ne!(key_of(&other_code, "ingest", &config, &[]).unwrap(), key);

        // A stored stage recorded by a binary of other code is a miss even under the same key
        // (as is a record from before fingerprints were recorded).
        let (_dir, store) = temporary_store();
        let w = store.begin("ingest").unwrap();
        fs_err::write(w.path("out.txt"), "hello").unwrap();
        w.commit_with_local(&key, &[("out", "out.txt")], &serde_json::json!({}), &()).unwrap();
        assert!(store.lookup("ingest", &key).unwrap().is_some());
        let path = store.stage_dir("ingest").join("record.json");
        let mut record: serde_json::Value =
            serde_json::from_str(&fs_err::read_to_string(&path).unwrap()).unwrap();
        record["tool_fingerprint"] = other_code.into();
        fs_err::write(&path, record.to_string()).unwrap();
        assert!(store.lookup("ingest", &key).unwrap().is_none());
        record.as_object_mut().unwrap().remove("tool_fingerprint");
        fs_err::write(&path, record.to_string()).unwrap();
        assert!(store.lookup("ingest", &key).unwrap().is_none());
    }
}
