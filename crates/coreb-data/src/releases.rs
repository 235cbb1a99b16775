//! Published releases on disk: a release's `MANIFEST.json` ([`ReleaseManifest`]), and the
//! reads several commands share: [`find_releases`] (export, decontamination, audits, the
//! leaderboard) and [`release_docs`] (the documents a training corpus or a model's output is
//! checked against); and the one edit a published card gets after its build,
//! [`with_human_validation`], which the release's publish (a recorded review), `coreb review
//! report` and `coreb verify` (taking the review back out) all make the same way. A release's
//! files are its data and its provenance ([`PROVENANCE_FILES`]); a recorded review is pinned to
//! the digest of its data ([`ReleaseManifest::data_sha256`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::problem::DateWindow;

/// `MANIFEST.json` of a release: every file's sha256 and everything needed to rebuild it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseManifest {
    /// Format tag.
    pub format: String,
    /// Release version.
    pub version: String,
    /// coreb version that built it.
    pub tool_version: String,
    /// Contest-date window.
    pub window: DateWindow,
    /// The build manifest: its path relative to the release directory, its sha256 and text.
    pub build_manifest: BuildManifest,
    /// Source files by name: sha256 and size.
    pub sources: Vec<SourcePin>,
    /// Per stage: the parameters, prompt hashes and models it recorded.
    pub stages: BTreeMap<String, serde_json::Value>,
    /// Seeds used (dedup permutations, hard-negative sampling …).
    pub seeds: BTreeMap<String, u64>,
    /// Counts of the release.
    pub counts: serde_json::Value,
    /// Every published file but this one: path → sha256 and size.
    pub files: BTreeMap<String, FileEntry>,
    /// The release this one replaced under the same version (`--replace`); absent for a
    /// release published once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<Replaced>,
    /// The release this one is the control of (`[control]` of the build manifest: the same
    /// month built without the counterfactual rewrite); absent for any other release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controls: Option<ControlOf>,
    /// What the release is for (`[purpose]` of the build manifest): training or test, and the
    /// training releases a test release was checked problem-disjoint from; absent where the
    /// build manifest does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<Purpose>,
}

/// Whether a release is for training or for testing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Training data (a reranker's records: `coreb export --layout reranker-train`).
    Training,
    /// Evaluation only: problem-disjoint from every training release it names.
    Test,
}

/// A release's `purpose` in its MANIFEST.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Purpose {
    /// Training or test.
    pub role: Role,
    /// A test release: the training releases it shares no problem with, as they were when it
    /// was published.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub training_releases: Vec<ControlOf>,
}

/// A release named by another: the release a control release controls, or a training release
/// a test release is disjoint from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlOf {
    /// Its version (the control's own: the same month).
    pub version: String,
    /// sha256 of its `MANIFEST.json`.
    pub manifest_sha256: String,
}

/// The release a `--replace` publish put aside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replaced {
    /// sha256 of its `MANIFEST.json` (`None`: the directory held no MANIFEST).
    pub manifest_sha256: Option<String>,
}

/// The files of a release that record the machine it was built on rather than what it holds:
/// the versions of coreb and of the judge's toolchains (`regeneration/versions.json`). With the
/// MANIFEST's fields that hold the same versions ([`PROVENANCE_FIELDS`]), they are the
/// release's provenance; every other file is its data. A rebuild on another machine with
/// other toolchain versions reproduces the data and differs in the provenance alone.
pub const PROVENANCE_FILES: [&str; 1] = ["regeneration/versions.json"];

/// The MANIFEST's fields (JSON pointers) that hold versions of the machine that built it:
/// coreb's version and the toolchains' (`stages.execute.toolchains`).
pub const PROVENANCE_FIELDS: [&str; 2] = ["/tool_version", "/stages/execute/toolchains"];

/// The release's card, which a recorded human review edits after the build
/// ([`with_human_validation`]).
pub const CARD: &str = "README.md";

impl ReleaseManifest {
    /// The digest of the release's data: sha256 over one line `<sha256>  <path>\n` (as
    /// `sha256sum` writes them) per file of [`ReleaseManifest::files`] in path order, leaving
    /// out the provenance ([`PROVENANCE_FILES`]) and the card ([`CARD`]: it is made from the
    /// data, and a recorded review edits it). Two builds of a release whose tables, BEIR files,
    /// qrels and regeneration kit are the same have the same data digest, on any machine; a
    /// recorded human review is pinned to it.
    pub fn data_sha256(&self) -> String {
        let mut lines = String::new();
        for (path, entry) in &self.files {
            if path == CARD || PROVENANCE_FILES.contains(&path.as_str()) {
                continue;
            }
            lines.push_str(&format!("{}  {path}\n", entry.sha256));
        }
        coreb_base::hashing::sha256_hex(lines.as_bytes())
    }

    /// Read and parse the `MANIFEST.json` at `path` (the one reader every command shares).
    pub fn read(path: &std::path::Path) -> Result<ReleaseManifest, ManifestError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ManifestError::Io { path: path.to_owned(), source })?;
        serde_json::from_str(&text)
            .map_err(|source| ManifestError::Parse { path: path.to_owned(), source })
    }
}

/// A release `MANIFEST.json` that cannot be read.
#[derive(Debug, Error)]
pub enum ManifestError {
    /// The file cannot be read.
    #[error("reading `{}`", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It is not a release MANIFEST.
    #[error("`{}`: not a release manifest", path.display())]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// The build manifest as embedded in a release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildManifest {
    /// Path relative to the release directory.
    pub path: String,
    /// sha256 of its text.
    pub sha256: String,
    /// Its exact text.
    pub text: String,
}

/// A pinned source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourcePin {
    /// Source name.
    pub name: String,
    /// sha256.
    pub sha256: String,
    /// Size.
    pub bytes: u64,
}

/// A published file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// sha256.
    pub sha256: String,
    /// Size.
    pub bytes: u64,
}

/// A document of a release to check against.
#[derive(Debug, Clone)]
pub struct ReleaseDoc {
    /// The release (directory name).
    pub release: String,
    /// Its id (`problems:<id>`, `text_…`, `code_…`).
    pub doc: String,
    /// Its text.
    pub text: String,
}

/// A directory that cannot be listed while looking for releases.
#[derive(Debug, Error)]
#[error("reading `{}`", path.display())]
pub struct FindError {
    /// The directory.
    pub path: std::path::PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// Every release (a directory holding a `MANIFEST.json`) from `levels.start()` to
/// `levels.end()` levels below `dir` (`0` is `dir` itself), sorted by path; a release's own
/// subdirectories are not searched.
pub fn find_releases(
    dir: &std::path::Path,
    levels: std::ops::RangeInclusive<usize>,
) -> Result<Vec<std::path::PathBuf>, FindError> {
    let mut found = Vec::new();
    let mut stack = vec![(dir.to_owned(), 0)];
    while let Some((d, depth)) = stack.pop() {
        if depth >= *levels.start() && d.join("MANIFEST.json").is_file() {
            found.push(d);
            continue;
        }
        if depth >= *levels.end() {
            continue;
        }
        let io = |source| FindError { path: d.clone(), source };
        for entry in std::fs::read_dir(&d).map_err(io)? {
            let entry = entry.map_err(io)?;
            if entry.file_type().map_err(io)?.is_dir() {
                stack.push((entry.path(), depth + 1));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The release's name in reports: its last two path components (`sample/v202503`).
pub fn release_name(dir: &std::path::Path) -> String {
    let parts: Vec<String> = dir
        .components()
        .rev()
        .take(2)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

/// The documents of a release: source statements, texts and codes.
pub fn release_docs(dir: &std::path::Path) -> Result<Vec<ReleaseDoc>, crate::tables::TableError> {
    let release = release_name(dir);
    let mut docs = Vec::new();
    for p in crate::tables::ProblemReader::open(&dir.join("problems.parquet"))? {
        let p = p?;
        docs.push(ReleaseDoc {
            release: release.clone(),
            doc: format!("problems:{}", p.id.as_str()),
            text: p.question_content,
        });
    }
    for (table, id, text) in
        [("text_corpus.parquet", "text_id", "text"), ("code_corpus.parquet", "code_id", "code")]
    {
        crate::tables::columns::for_each_row(&dir.join(table), &[id, text], |_, mut v| {
            let text = v.remove(1);
            docs.push(ReleaseDoc { release: release.clone(), doc: v.remove(0), text });
        })?;
    }
    Ok(docs)
}

/// The heading of the card's section that a recorded human review adds.
pub const HUMAN_VALIDATION: &str = "## Human validation";

/// `card` with its "Human validation" section set to `section` (which starts with
/// [`HUMAN_VALIDATION`]): an earlier one replaced in place, else appended at the end. The rest
/// of the card is unchanged byte for byte.
pub fn with_human_validation(card: &str, section: &str) -> String {
    let body = section.trim_end_matches('\n');
    let start = card.find(&format!("\n{HUMAN_VALIDATION}\n")).map(|i| i + 1);
    match start {
        Some(start) => {
            let end = card[start + HUMAN_VALIDATION.len()..]
                .find("\n## ")
                .map_or(card.len(), |i| start + HUMAN_VALIDATION.len() + i + 1);
            let tail = &card[end..];
            format!("{}{body}\n{}{tail}", &card[..start], if tail.is_empty() { "" } else { "\n" })
        }
        None => format!("{}\n\n{body}\n", card.trim_end_matches('\n')),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_digest_leaves_out_the_card_and_the_provenance() {
        let entry = |sha: &str| FileEntry { sha256: sha.into(), bytes: 1 };
        let mut m = ReleaseManifest {
            format: "coreb-release-manifest/1".into(),
            version: "v1".into(),
            tool_version: "0.1.0".into(),
            window: DateWindow { start: None, end: None },
            build_manifest: BuildManifest {
                path: "m.toml".into(),
                sha256: "0".into(),
                text: String::new(),
            },
            sources: Vec::new(),
            stages: BTreeMap::new(),
            seeds: BTreeMap::new(),
            counts: serde_json::Value::Null,
            purpose: None,
            files: BTreeMap::from([
                ("a.parquet".to_owned(), entry("aa")),
                ("b/qrels/test.tsv".to_owned(), entry("bb")),
                ("README.md".to_owned(), entry("cc")),
                ("regeneration/versions.json".to_owned(), entry("dd")),
            ]),
            replaces: None,
            controls: None,
        };
        let digest = m.data_sha256();
        assert_eq!(
            digest,
            coreb_base::hashing::sha256_hex(b"aa  a.parquet\nbb  b/qrels/test.tsv\n")
        );
        // Another card, other toolchains, another coreb: the same data.
        m.files.insert("README.md".into(), entry("c2"));
        m.files.insert("regeneration/versions.json".into(), entry("d2"));
        m.tool_version = "0.2.0".into();
        assert_eq!(m.data_sha256(), digest);
        // One data file otherwise: other data.
        m.files.insert("b/qrels/test.tsv".into(), entry("b2"));
        assert_ne!(m.data_sha256(), digest);
    }

    #[test]
    fn the_human_validation_section_is_added_then_replaced() {
        let card = "# v1\n\n## Licence\n\nterms.\n";
        let once = with_human_validation(card, "## Human validation\n\nfirst.\n");
        assert_eq!(once, "# v1\n\n## Licence\n\nterms.\n\n## Human validation\n\nfirst.\n");
        assert_eq!(
            with_human_validation(&once, "## Human validation\n\nsecond.\n"),
            "# v1\n\n## Licence\n\nterms.\n\n## Human validation\n\nsecond.\n"
        );
        // A section followed by another keeps what follows.
        let middle = "# v1\n\n## Human validation\n\nold.\n\n## Licence\n\nterms.\n";
        assert_eq!(
            with_human_validation(middle, "## Human validation\n\nnew.\n"),
            "# v1\n\n## Human validation\n\nnew.\n\n## Licence\n\nterms.\n"
        );
    }
}
