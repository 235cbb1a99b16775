//! The response store: one pretty JSON file per response, `<root>/<key[..2]>/<key>.json`.
//!
//! An entry ([`StoreEntry`]) holds the format tag, its key, the stage and item that first
//! asked (informational, not keyed), the keyed request ([`KeyedRequest`]) and the response
//! (message text, finish reason, token usage), and, when a stage could not use the answer (a
//! JSON answer that does not follow its schema …), why ([`StoredRejection`]; not keyed).
//! Only answers are stored: a failed attempt (refused, timed out, a 5xx, a body that is not a
//! chat completion) never is, so a rerun asks it again. [`ResponseStore::prune`] removes the
//! entries a stage could not use (rejected, cut or filtered), so that a rerun asks again.
//! Files are written to a temporary name in the same directory and renamed into place, so a
//! reader (or a run killed with `kill -9`) never sees half an entry; leftover temporary files
//! start with `.` and are ignored by readers and counted by [`ResponseStore::stats`]. Reading
//! checks that the file's key matches both its name and the sha256 of its request, so an
//! edited or misplaced entry is an error naming the file, never a silently wrong answer.
//!
//! One file per entry keeps the store diff-friendly in git (adding responses adds files,
//! never rewrites others) and deterministic (serde field order, two-space indent, trailing
//! newline). [`ResponseStore::export`] / [`ResponseStore::import`] move a whole store as one
//! JSONL file sorted by key.
//!
//! The store does not parse what models wrote: stages do.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::key::KeyedRequest;
use super::{FinishReason, LlmStage, TokenUsage};
use coreb_base::hashing::is_sha256_hex;

/// The value of every entry's `format` field.
pub const FORMAT: &str = "coreb-llm-response/1";

/// A stored response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreEntry {
    /// Always [`FORMAT`].
    pub format: String,
    /// sha256 of the canonical request.
    pub key: String,
    /// The stage that first asked (not keyed).
    pub stage: LlmStage,
    /// The item that first asked (not keyed).
    pub item: String,
    /// The keyed request.
    pub request: KeyedRequest,
    /// The answer.
    pub response: StoredResponse,
    /// Why the stage rejected the answer, when it did (left out otherwise, so that entries of
    /// used answers keep their byte form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected: Option<StoredRejection>,
}

impl StoreEntry {
    /// The entry of `request` answered with `response`, stored under the request's key.
    pub fn of(request: &super::ChatRequest, response: StoredResponse) -> StoreEntry {
        StoreEntry {
            format: FORMAT.to_owned(),
            key: request.key(),
            stage: request.stage,
            item: request.item.clone(),
            request: KeyedRequest::of(request),
            response,
            rejected: None,
        }
    }

    /// Why a stage could not use this answer, if it could not: its recorded rejection, else
    /// `truncated` / `content_filter` / `unfinished` for an answer that did not stop. `None`
    /// for an answer in use.
    pub fn unusable(&self) -> Option<StoredRejection> {
        if let Some(r) = &self.rejected {
            return Some(r.clone());
        }
        let kind = match &self.response.finish_reason {
            FinishReason::Stop => return None,
            FinishReason::Length => "truncated",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other(_) => "unfinished",
        };
        Some(StoredRejection {
            kind: kind.to_owned(),
            detail: format!("finish_reason `{}`", self.response.finish_reason.as_str()),
        })
    }
}

/// Why a stage rejected a stored answer: the kind (`schema`, `not_json`, `no_code` … as in
/// `rejections.jsonl`) and the reason in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredRejection {
    /// The reason's kind.
    pub kind: String,
    /// The reason in words.
    pub detail: String,
}

/// Which entries [`ResponseStore::prune`] removes: those a stage could not use, of this
/// stage and this reason kind when given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneFilter {
    /// Only entries first asked by this stage.
    pub stage: Option<LlmStage>,
    /// Only entries whose reason is of this kind (`schema`, `truncated` …).
    pub reason: Option<String>,
}

/// One entry [`ResponseStore::prune`] removed (or would remove).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pruned {
    /// Its key.
    pub key: String,
    /// The stage that first asked.
    pub stage: LlmStage,
    /// The item that first asked.
    pub item: String,
    /// The model.
    pub model: String,
    /// The reason's kind.
    pub kind: String,
    /// The reason in words.
    pub detail: String,
}

/// The answer part of an entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredResponse {
    /// The message text exactly as the model wrote it.
    pub text: String,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Token usage as the endpoint reported it (zero for content no endpoint wrote).
    pub usage: TokenUsage,
    /// Who wrote the text (`endpoint` when absent: entries stored before it was recorded
    /// were all endpoint answers).
    #[serde(default, skip_serializing_if = "super::Provenance::is_endpoint")]
    pub provenance: super::Provenance,
}

/// A failure of the store.
#[derive(Debug, Error)]
pub enum StoreError {
    /// A file or directory could not be read or written.
    #[error("response store: {action} `{}`", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An entry is not valid JSON of the entry format.
    #[error("response store: `{}`{}: not a valid entry", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line (JSONL imports).
        line: Option<usize>,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// An entry's key does not match its name or its request.
    #[error("response store: `{}`{}: {problem}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Inconsistent {
        /// The file.
        path: PathBuf,
        /// The line (JSONL imports).
        line: Option<usize>,
        /// What is wrong.
        problem: String,
    },
}

/// Counts over a whole store.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StoreStats {
    /// Valid entries.
    pub entries: u64,
    /// Bytes of valid entries.
    pub bytes: u64,
    /// Entries per stage.
    pub per_stage: BTreeMap<String, u64>,
    /// Entries per model.
    pub per_model: BTreeMap<String, u64>,
    /// Entries per finish reason.
    pub per_finish_reason: BTreeMap<String, u64>,
    /// Entries a stage could not use, per reason kind (`schema`, `truncated` …: what
    /// `coreb store prune --reason` takes).
    pub unusable: BTreeMap<String, u64>,
    /// Prompt tokens over all entries.
    pub prompt_tokens: u64,
    /// Completion tokens over all entries.
    pub completion_tokens: u64,
    /// Files that are not valid entries, with the reason.
    pub invalid: Vec<String>,
    /// Leftover temporary files (from an interrupted write; safe to delete).
    pub temporary_files: u64,
}

/// A response store rooted at a directory.
#[derive(Debug)]
pub struct ResponseStore {
    root: PathBuf,
}

impl ResponseStore {
    /// A store at `root` (created on the first write).
    pub fn open(root: impl Into<PathBuf>) -> Self {
        ResponseStore { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the entry of `key` lives.
    pub fn path_of(&self, key: &str) -> PathBuf {
        let shard = key.get(..2).unwrap_or("xx");
        self.root.join(shard).join(format!("{key}.json"))
    }

    /// The entry stored under `key`, if any; an invalid entry is an error naming the file.
    pub fn get(&self, key: &str) -> Result<Option<StoreEntry>, StoreError> {
        let path = self.path_of(key);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StoreError::Io { action: "reading", path, source });
            }
        };
        let entry = parse_entry(&bytes, &path, None)?;
        if entry.key != key {
            return Err(StoreError::Inconsistent {
                path,
                line: None,
                problem: format!("holds key `{}`, not `{key}`", entry.key),
            });
        }
        check_key(&entry, &path, None)?;
        Ok(Some(entry))
    }

    /// Is `key` stored? (Existence only.)
    pub fn contains(&self, key: &str) -> bool {
        self.path_of(key).is_file()
    }

    /// Write an entry atomically and durably ([`coreb_base::durable::write`]: a temporary file
    /// in the same directory, fsync, rename, fsync of the directory), replacing any entry of
    /// the same key. The entry's key must match its request.
    pub fn put(&self, entry: &StoreEntry) -> Result<(), StoreError> {
        let path = self.path_of(&entry.key);
        check_key(entry, &path, None)?;
        coreb_base::durable::write(&path, entry_text(entry).as_bytes())
            .map_err(|source| StoreError::Io { action: "writing", path: path.clone(), source })
    }

    /// Record (or, with `None`, clear) why a stage rejected the answer stored under `key`.
    /// Returns whether the entry changed (nothing is written when it holds that already, or
    /// when there is no such entry).
    pub fn set_rejected(
        &self,
        key: &str,
        rejected: Option<StoredRejection>,
    ) -> Result<bool, StoreError> {
        let Some(mut entry) = self.get(key)? else {
            return Ok(false);
        };
        if entry.rejected == rejected {
            return Ok(false);
        }
        entry.rejected = rejected;
        self.put(&entry)?;
        Ok(true)
    }

    /// Remove the entries a stage could not use ([`StoreEntry::unusable`]) that `filter`
    /// matches, or with `dry_run` only list them; sorted by key. A rerun then asks them
    /// again. Answers in use are never removed; an invalid file is an error naming it.
    pub fn prune(&self, filter: &PruneFilter, dry_run: bool) -> Result<Vec<Pruned>, StoreError> {
        let mut out = Vec::new();
        for key in self.keys()? {
            let Some(entry) = self.get(&key)? else {
                continue;
            };
            let Some(why) = entry.unusable() else {
                continue;
            };
            if filter.stage.is_some_and(|s| s != entry.stage)
                || filter.reason.as_ref().is_some_and(|r| *r != why.kind)
            {
                continue;
            }
            if !dry_run {
                let path = self.path_of(&key);
                std::fs::remove_file(&path).map_err(|source| StoreError::Io {
                    action: "removing",
                    path: path.clone(),
                    source,
                })?;
                if let Some(dir) = path.parent() {
                    coreb_base::durable::sync_dir(dir).map_err(|source| StoreError::Io {
                        action: "syncing",
                        path: dir.to_owned(),
                        source,
                    })?;
                }
            }
            out.push(Pruned {
                key,
                stage: entry.stage,
                item: entry.item,
                model: entry.request.model,
                kind: why.kind,
                detail: why.detail,
            });
        }
        Ok(out)
    }

    /// Every stored key, sorted.
    pub fn keys(&self) -> Result<Vec<String>, StoreError> {
        let mut keys = Vec::new();
        for (path, name) in self.files()? {
            if let Some(key) = name.strip_suffix(".json").filter(|k| is_sha256_hex(k)) {
                let _ = path;
                keys.push(key.to_owned());
            }
        }
        keys.sort();
        Ok(keys)
    }

    /// Statistics over every file of the store.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let mut stats = StoreStats::default();
        for (path, name) in self.files()? {
            if name.starts_with('.') {
                stats.temporary_files += u64::from(name.ends_with(".tmp"));
                continue;
            }
            let bytes = std::fs::read(&path).map_err(|source| StoreError::Io {
                action: "reading",
                path: path.clone(),
                source,
            })?;
            let entry = match parse_entry(&bytes, &path, None).and_then(|e| {
                check_key(&e, &path, None)?;
                let expected = format!("{}.json", e.key);
                if name != expected {
                    return Err(StoreError::Inconsistent {
                        path: path.clone(),
                        line: None,
                        problem: format!("holds key `{}` under another name", e.key),
                    });
                }
                Ok(e)
            }) {
                Ok(e) => e,
                Err(e) => {
                    stats.invalid.push(coreb_base::errors::chain(&e));
                    continue;
                }
            };
            stats.entries += 1;
            stats.bytes += bytes.len() as u64;
            *stats.per_stage.entry(entry.stage.to_string()).or_default() += 1;
            *stats.per_model.entry(entry.request.model.clone()).or_default() += 1;
            *stats
                .per_finish_reason
                .entry(finish_name(&entry.response.finish_reason))
                .or_default() += 1;
            if let Some(why) = entry.unusable() {
                *stats.unusable.entry(why.kind).or_default() += 1;
            }
            stats.prompt_tokens += entry.response.usage.prompt_tokens;
            stats.completion_tokens += entry.response.usage.completion_tokens;
        }
        Ok(stats)
    }

    /// Write every entry, sorted by key, as one compact JSON object per line. Returns the
    /// number written. The output is written atomically too.
    pub fn export(&self, out: &Path) -> Result<u64, StoreError> {
        let io = |action, source| StoreError::Io { action, path: out.to_owned(), source };
        let mut writer =
            coreb_base::durable::AtomicFile::create(out).map_err(|e| io("creating", e))?;
        let mut n = 0;
        for key in self.keys()? {
            let Some(entry) = self.get(&key)? else {
                continue;
            };
            let line = serde_json::to_string(&entry).map_err(|source| StoreError::Parse {
                path: out.to_owned(),
                line: None,
                source,
            })?;
            writeln!(writer, "{line}").map_err(|e| io("writing", e))?;
            n += 1;
        }
        writer.commit().map_err(|e| io("writing", e))?;
        Ok(n)
    }

    /// Read a JSONL export and store each entry (checking its key). An entry already stored
    /// with identical content is left alone; a different one is replaced only when
    /// `overwrite` is set and otherwise counted as a conflict.
    pub fn import(&self, input: &Path, overwrite: bool) -> Result<ImportReport, StoreError> {
        let file = std::fs::File::open(input).map_err(|source| StoreError::Io {
            action: "opening",
            path: input.to_owned(),
            source,
        })?;
        let mut report = ImportReport::default();
        for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|source| StoreError::Io {
                action: "reading",
                path: input.to_owned(),
                source,
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let entry = parse_entry(line.as_bytes(), input, Some(i + 1))?;
            check_key(&entry, input, Some(i + 1))?;
            match self.get(&entry.key)? {
                Some(existing) if existing == entry => report.unchanged += 1,
                Some(_) if !overwrite => report.conflicts.push(entry.key.clone()),
                Some(_) => {
                    self.put(&entry)?;
                    report.replaced += 1;
                }
                None => {
                    self.put(&entry)?;
                    report.added += 1;
                }
            }
        }
        Ok(report)
    }

    /// Every file two levels down (`<shard>/<name>`), sorted, as (path, name).
    fn files(&self) -> Result<Vec<(PathBuf, String)>, StoreError> {
        let read_dir = |path: &Path| -> Result<Vec<std::fs::DirEntry>, StoreError> {
            match std::fs::read_dir(path) {
                Ok(rd) => rd.collect::<Result<Vec<_>, _>>().map_err(|source| StoreError::Io {
                    action: "listing",
                    path: path.to_owned(),
                    source,
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
                Err(source) => {
                    Err(StoreError::Io { action: "listing", path: path.to_owned(), source })
                }
            }
        };
        let mut out = Vec::new();
        for shard in read_dir(&self.root)? {
            if !shard.path().is_dir() {
                continue;
            }
            for file in read_dir(&shard.path())? {
                let name = file.file_name().to_string_lossy().into_owned();
                out.push((file.path(), name));
            }
        }
        out.sort();
        Ok(out)
    }
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// New entries.
    pub added: u64,
    /// Entries already stored, identical.
    pub unchanged: u64,
    /// Entries replaced (`overwrite`).
    pub replaced: u64,
    /// Keys stored with different content and left alone.
    pub conflicts: Vec<String>,
}

/// The file text of an entry: two-space-indented JSON in field order, newline-terminated.
pub fn entry_text(entry: &StoreEntry) -> String {
    let mut text = serde_json::to_string_pretty(entry).unwrap_or_default();
    text.push('\n');
    text
}

fn parse_entry(bytes: &[u8], path: &Path, line: Option<usize>) -> Result<StoreEntry, StoreError> {
    let entry: StoreEntry = serde_json::from_slice(bytes).map_err(|source| StoreError::Parse {
        path: path.to_owned(),
        line,
        source,
    })?;
    if entry.format != FORMAT {
        return Err(StoreError::Inconsistent {
            path: path.to_owned(),
            line,
            problem: format!("format `{}`, expected `{FORMAT}`", entry.format),
        });
    }
    Ok(entry)
}

fn check_key(entry: &StoreEntry, path: &Path, line: Option<usize>) -> Result<(), StoreError> {
    let computed = entry.request.key();
    if computed != entry.key {
        return Err(StoreError::Inconsistent {
            path: path.to_owned(),
            line,
            problem: format!("key `{}` is not the sha256 of its request (`{computed}`)", entry.key),
        });
    }
    Ok(())
}

fn finish_name(f: &FinishReason) -> String {
    serde_json::to_value(f)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{f:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChatMessage, ChatRequest, Role, SamplingParams};

    pub(crate) fn entry(i: u32) -> StoreEntry {
        let req = ChatRequest {
            stage: LlmStage::Queries,
            item: format!("lcb_{i}"),
            model: "m".into(),
            messages: vec![ChatMessage { role: Role::User, content: format!("q{i}") }],
            params: SamplingParams::default(),
            sample: 0,
            prompt_sha256: "p".into(),
            response_format: None,
            on_incomplete: Default::default(),
        };
        StoreEntry::of(
            &req,
            StoredResponse {
                text: format!("answer {i}"),
                finish_reason: FinishReason::Stop,
                usage: TokenUsage { prompt_tokens: 3, completion_tokens: 2 },
                provenance: Default::default(),
            },
        )
    }

    #[test]
    fn put_get_export_import_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResponseStore::open(dir.path().join("s"));
        for i in 0..5 {
            store.put(&entry(i)).unwrap();
        }
        let e = entry(3);
        assert_eq!(store.get(&e.key).unwrap().unwrap(), e);
        assert!(store.get(&"0".repeat(64)).unwrap().is_none());
        let text = std::fs::read_to_string(store.path_of(&e.key)).unwrap();
        assert!(
            text.starts_with("{\n  \"format\": \"coreb-llm-response/1\",\n  \"key\": "),
            "{text}"
        );
        let stats = store.stats().unwrap();
        assert_eq!((stats.entries, stats.prompt_tokens, stats.per_stage["queries"]), (5, 15, 5));

        let out = dir.path().join("x.jsonl");
        assert_eq!(store.export(&out).unwrap(), 5);
        let other = ResponseStore::open(dir.path().join("t"));
        let r = other.import(&out, false).unwrap();
        assert_eq!(r.added, 5);
        assert_eq!(other.import(&out, false).unwrap().unchanged, 5);
        assert_eq!(other.keys().unwrap(), store.keys().unwrap());
    }

    #[test]
    fn bad_entries_are_refused_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResponseStore::open(dir.path());
        let mut e = entry(1);
        e.response.text = "edited".into();
        store.put(&e).unwrap();
        let mut wrong = entry(2);
        wrong.request.sample = 9; // key no longer matches the request
        assert!(matches!(store.put(&wrong), Err(StoreError::Inconsistent { .. })));
        // A half-written file under a temporary name is invisible to readers.
        let shard = store.path_of(&e.key).parent().unwrap().to_owned();
        std::fs::write(shard.join(format!(".{}.1.0.tmp", entry(4).key)), "{\"format\": \"coreb")
            .unwrap();
        assert!(store.get(&entry(4).key).unwrap().is_none());
        // A truncated entry under its real name is an error naming the file.
        let bad = store.path_of(&entry(5).key);
        std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
        std::fs::write(&bad, "{\"format\"").unwrap();
        let err = store.get(&entry(5).key).unwrap_err().to_string();
        assert!(err.contains(&entry(5).key), "{err}");
        let stats = store.stats().unwrap();
        assert_eq!((stats.entries, stats.temporary_files, stats.invalid.len()), (1, 1, 1));
    }

    #[test]
    fn rejections_are_recorded_beside_the_answer_and_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResponseStore::open(dir.path());
        for i in 0..6 {
            store.put(&entry(i)).unwrap();
        }
        let plain = std::fs::read_to_string(store.path_of(&entry(0).key)).unwrap();
        assert!(!plain.contains("rejected"), "an answer in use keeps its byte form");
        let schema = StoredRejection {
            kind: "schema".into(),
            detail: "`/`: required property `statement` is missing".into(),
        };
        assert!(store.set_rejected(&entry(1).key, Some(schema.clone())).unwrap());
        assert!(
            !store.set_rejected(&entry(1).key, Some(schema.clone())).unwrap(),
            "unchanged: not written again"
        );
        assert!(
            store
                .set_rejected(
                    &entry(2).key,
                    Some(StoredRejection {
                        kind: "not_json".into(),
                        detail: "no JSON value".into()
                    })
                )
                .unwrap()
        );
        assert!(!store.set_rejected(&"0".repeat(64), Some(schema.clone())).unwrap());
        // Cleared again when a stage uses it after all.
        assert!(store.set_rejected(&entry(3).key, Some(schema.clone())).unwrap());
        assert!(store.set_rejected(&entry(3).key, None).unwrap());
        assert_eq!(
            std::fs::read_to_string(store.path_of(&entry(3).key)).unwrap(),
            entry_text(&entry(3)),
            "back to its byte form"
        );
        let mut cut = entry(4);
        cut.response.finish_reason = FinishReason::Length;
        store.put(&cut).unwrap();
        assert_eq!(store.get(&entry(1).key).unwrap().unwrap().rejected, Some(schema));
        let stats = store.stats().unwrap();
        assert_eq!(
            stats.unusable,
            BTreeMap::from([
                ("not_json".to_owned(), 1),
                ("schema".to_owned(), 1),
                ("truncated".to_owned(), 1)
            ])
        );

        let kinds =
            |p: &[Pruned]| p.iter().map(|p| (p.item.clone(), p.kind.clone())).collect::<Vec<_>>();
        let only_schema = PruneFilter { reason: Some("schema".into()), ..PruneFilter::default() };
        assert_eq!(
            kinds(&store.prune(&only_schema, true).unwrap()),
            [("lcb_1".to_owned(), "schema".to_owned())]
        );
        assert_eq!(store.keys().unwrap().len(), 6, "a dry run removes nothing");
        let other_stage = PruneFilter { stage: Some(LlmStage::Rewrite), ..PruneFilter::default() };
        assert!(store.prune(&other_stage, false).unwrap().is_empty());
        let mut all = kinds(&store.prune(&PruneFilter::default(), false).unwrap());
        all.sort();
        assert_eq!(
            all,
            [
                ("lcb_1".to_owned(), "schema".to_owned()),
                ("lcb_2".to_owned(), "not_json".to_owned()),
                ("lcb_4".to_owned(), "truncated".to_owned())
            ]
        );
        assert_eq!(store.keys().unwrap().len(), 3, "answers in use stay");
        assert!(store.prune(&PruneFilter::default(), false).unwrap().is_empty());
    }
}
