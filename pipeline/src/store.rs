//! The artifact store: stage outputs under `<output_dir>/artifacts/<stage>/`, keyed by the
//! hash of their inputs.
//!
//! A stage's input key is the sha256 of the canonical JSON of: the stage name, the tool
//! version, the stage's manifest section and the fingerprints of its upstream outputs (and,
//! for LLM stages later, prompt hashes). A stage writes into `artifacts/.<stage>.tmp/`, then
//! [`StageWriter::commit`] hashes every output, writes `record.json` and renames the directory
//! into place. A directory without `record.json`, or with another key, is never taken as
//! complete, so a killed stage simply runs again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use stages::hashing::{sha256_file, sha256_hex};

/// The version recorded in every stage key and release.
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// One output file of a stage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFile {
    /// File name inside the stage directory.
    pub file: String,
    /// Its sha256.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

/// What a completed stage left behind (`artifacts/<stage>/record.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    /// The stage.
    pub stage: String,
    /// Input key this output was built from.
    pub key: String,
    /// coreb version that built it.
    pub tool_version: String,
    /// Output files by role (`problems`, `report` …).
    pub outputs: BTreeMap<String, OutputFile>,
    /// The stage's summary: counts, parameters, stage-specific facts. Part of the
    /// fingerprint, so it holds nothing machine-specific.
    pub summary: serde_json::Value,
    /// Machine-specific facts (absolute paths of local sources); not part of the fingerprint,
    /// so that the same inputs give the same keys on every machine.
    #[serde(default)]
    pub local: serde_json::Value,
}

impl StageRecord {
    /// A digest of what this stage produced, for downstream keys.
    pub fn fingerprint(&self) -> String {
        let value = serde_json::json!({ "outputs": self.outputs, "summary": self.summary });
        sha256_hex(value.to_string().as_bytes())
    }
}

/// The input key of a stage run.
pub fn input_key(stage: &str, config: &impl Serialize, upstream: &[&StageRecord]) -> anyhow::Result<String> {
    let value = serde_json::json!({
        "stage": stage,
        "tool_version": TOOL_VERSION,
        "config": serde_json::to_value(config)?,
        "upstream": upstream.iter().map(|r| (r.stage.clone(), r.fingerprint())).collect::<BTreeMap<_, _>>(),
    });
    Ok(sha256_hex(value.to_string().as_bytes()))
}

/// The store rooted at `<output_dir>/artifacts`.
#[derive(Debug, Clone)]
pub struct ArtifactStore {
    root: PathBuf,
}

impl ArtifactStore {
    /// Open (create) the store.
    pub fn open(root: &Path) -> anyhow::Result<Self> {
        fs_err::create_dir_all(root)?;
        Ok(ArtifactStore { root: root.to_owned() })
    }

    /// The directory of a completed stage.
    pub fn stage_dir(&self, stage: &str) -> PathBuf {
        self.root.join(stage)
    }

    /// The record of a stage, whatever its key (for reports and `verify`).
    pub fn record(&self, stage: &str) -> anyhow::Result<Option<StageRecord>> {
        let path = self.stage_dir(stage).join("record.json");
        if !path.exists() {
            return Ok(None);
        }
        read_record(&path).map(Some)
    }

    /// The record of a stage built from exactly `key`, if its outputs are all present.
    pub fn lookup(&self, stage: &str, key: &str) -> anyhow::Result<Option<StageRecord>> {
        let Some(record) = self.record(stage)? else { return Ok(None) };
        if record.key != key || record.tool_version != TOOL_VERSION {
            return Ok(None);
        }
        let dir = self.stage_dir(stage);
        let intact = record
            .outputs
            .values()
            .all(|o| fs_err::metadata(dir.join(&o.file)).is_ok_and(|m| m.len() == o.bytes));
        Ok(intact.then_some(record))
    }

    /// Start writing a stage: a fresh temporary directory.
    pub fn begin(&self, stage: &str) -> anyhow::Result<StageWriter> {
        let tmp = self.root.join(format!(".{stage}.tmp"));
        if tmp.exists() {
            fs_err::remove_dir_all(&tmp)?;
        }
        fs_err::create_dir_all(&tmp)?;
        Ok(StageWriter { stage: stage.to_owned(), tmp, dir: self.stage_dir(stage), root: self.root.clone() })
    }
}

/// A stage being written; nothing is visible until [`StageWriter::commit`].
#[derive(Debug)]
pub struct StageWriter {
    stage: String,
    tmp: PathBuf,
    dir: PathBuf,
    root: PathBuf,
}

impl StageWriter {
    /// Where to write an output file.
    pub fn path(&self, file: &str) -> PathBuf {
        self.tmp.join(file)
    }

    /// Hash the outputs, write the record and move the stage into place.
    pub fn commit(self, key: &str, outputs: &[(&str, &str)], summary: serde_json::Value) -> anyhow::Result<StageRecord> {
        self.commit_with_local(key, outputs, summary, serde_json::Value::Null)
    }

    /// [`commit`](Self::commit), also recording machine-specific facts outside the fingerprint.
    pub fn commit_with_local(
        self,
        key: &str,
        outputs: &[(&str, &str)],
        summary: serde_json::Value,
        local: serde_json::Value,
    ) -> anyhow::Result<StageRecord> {
        let mut files = BTreeMap::new();
        for (role, file) in outputs {
            let path = self.tmp.join(file);
            let sha256 = sha256_file(&path).with_context(|| format!("hashing `{}`", path.display()))?;
            let bytes = fs_err::metadata(&path)?.len();
            files.insert((*role).to_owned(), OutputFile { file: (*file).to_owned(), sha256, bytes });
        }
        let record = StageRecord {
            stage: self.stage.clone(),
            key: key.to_owned(),
            tool_version: TOOL_VERSION.to_owned(),
            outputs: files,
            summary,
            local,
        };
        write_atomic(&self.tmp.join("record.json"), serde_json::to_string_pretty(&record)?.as_bytes())?;
        if self.dir.exists() {
            let old = self.root.join(format!(".{}.old", self.stage));
            if old.exists() {
                fs_err::remove_dir_all(&old)?;
            }
            fs_err::rename(&self.dir, &old)?;
            fs_err::rename(&self.tmp, &self.dir)?;
            fs_err::remove_dir_all(&old)?;
        } else {
            fs_err::rename(&self.tmp, &self.dir)?;
        }
        Ok(record)
    }
}

/// Read a stage's `record.json`.
pub fn read_record(path: &Path) -> anyhow::Result<StageRecord> {
    let text = fs_err::read_to_string(path)?;
    serde_json::from_str(&text).with_context(|| format!("`{}`: not a stage record", path.display()))
}

/// Write a file atomically: `<path>.tmp` (its directory made if missing), fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs_err::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let mut file = fs_err::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs_err::rename(&tmp, path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_lookup_and_invalidate() {
        let dir = tempfile::tempdir().unwrap();
        let store = ArtifactStore::open(dir.path()).unwrap();
        let key = input_key("ingest", &serde_json::json!({"a": 1}), &[]).unwrap();
        assert!(store.lookup("ingest", &key).unwrap().is_none());

        let w = store.begin("ingest").unwrap();
        fs_err::write(w.path("out.txt"), "hello").unwrap();
        let rec = w.commit(&key, &[("out", "out.txt")], serde_json::json!({"rows_out": 1})).unwrap();
        assert_eq!(rec.outputs["out"].bytes, 5);
        assert_eq!(store.lookup("ingest", &key).unwrap(), Some(rec.clone()));

        // Another config → another key → miss.
        let other = input_key("ingest", &serde_json::json!({"a": 2}), &[]).unwrap();
        assert_ne!(key, other);
        assert!(store.lookup("ingest", &other).unwrap().is_none());
        // Upstream fingerprints are part of the key.
        assert_ne!(input_key("dedup", &(), &[&rec]).unwrap(), input_key("dedup", &(), &[]).unwrap());

        // A damaged output is not taken as complete.
        fs_err::write(store.stage_dir("ingest").join("out.txt"), "hell").unwrap();
        assert!(store.lookup("ingest", &key).unwrap().is_none());

        // An interrupted rewrite leaves the old stage in place and is cleared on the next begin.
        let w = store.begin("ingest").unwrap();
        fs_err::write(w.path("partial"), "x").unwrap();
        drop(w);
        let w = store.begin("ingest").unwrap();
        assert!(!w.path("partial").exists());
    }
}
