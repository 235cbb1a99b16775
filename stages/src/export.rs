//! `coreb export --layout hf-coreb`: every release of a releases directory as one
//! Hugging Face dataset folder in the published CoREB layout (`hq-bench/coreb` on the Hub):
//! the eight configs, one split per release named `release_<version>`, the published column
//! and subtask names, a dataset card with full metadata and a `LICENSE`.
//!
//! Code written for the published dataset (`load_dataset(path, "text2code_queries",
//! split="release_v202503")`, `query_id`/`query`/`subtask`/`split`, `doc_id`/`relevance`,
//! `code_id`/`code`/`language`/`model`/`problem_id`, `text_id`/`text`) reads the export
//! unchanged. Subtasks are renamed to the published names: text2code
//! `t2c_{canonical_retro,full_retro,search}_{any,<lang>}`, code2code `c2c_mono_lang`,
//! `c2c_cross_lang`, `c2c_cross_model`, code2text `c2t_full_retro_<lang>` (coreb's
//! `describe`: the code of one language → its problem's description, where coreb counts the
//! full statement and the canonical summary as positives).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::release::{CONFIGS, config_features, size_category};
use crate::tables::TableError;
use crate::tables::published::{row_count, write_published_queries};

/// Why an export failed.
#[derive(Debug, Error)]
pub enum ExportError {
    /// No release (a directory with a `MANIFEST.json`) under the releases directory.
    #[error("no release under `{0}` (a release is a directory holding MANIFEST.json)")]
    NoRelease(PathBuf),
    /// A release lacks a config file.
    #[error("release `{release}` has no `{file}`")]
    MissingFile {
        /// The release directory.
        release: PathBuf,
        /// The missing file.
        file: String,
    },
    /// A release's MANIFEST.json cannot be read.
    #[error("reading `{path}`: {reason}")]
    Manifest {
        /// The MANIFEST.json.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The output exists, is not empty and is not an earlier export.
    #[error("`{0}` exists and is not an export of coreb (no `.coreb-export`): refusing to replace it")]
    NotAnExport(PathBuf),
    /// A table could not be read or written.
    #[error(transparent)]
    Table(#[from] TableError),
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The published CoREB name of a coreb subtask.
pub fn published_subtask(task: &str, subtask: &str, language: &str) -> Result<String, String> {
    Ok(match (task, subtask) {
        ("text2code", "canonical" | "full") => format!("t2c_{subtask}_retro_{language}"),
        ("text2code", "search") => format!("t2c_search_{language}"),
        ("code2code", "mono_lang" | "cross_lang" | "cross_model") => format!("c2c_{subtask}"),
        ("code2text", "describe") => format!("c2t_full_retro_{language}"),
        _ => return Err(format!("no published CoREB name for subtask `{subtask}` of task `{task}`")),
    })
}

/// One release in an export.
#[derive(Debug, Clone)]
pub struct ExportedRelease {
    /// Its version (`v202503`); its split is `release_<version>`.
    pub version: String,
    /// Rows per config.
    pub rows: BTreeMap<&'static str, usize>,
    /// Its LICENSE text (empty if it has none).
    pub license: String,
}

impl ExportedRelease {
    /// The split name of the release.
    pub fn split(&self) -> String {
        format!("release_{}", self.version)
    }
}

/// The releases of a directory: its subdirectories with a `MANIFEST.json`, by version.
pub fn find_releases(releases_dir: &Path) -> Result<Vec<(String, PathBuf)>, ExportError> {
    let io = |source| ExportError::Io { path: releases_dir.to_owned(), source };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(releases_dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let manifest = path.join("MANIFEST.json");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest).map_err(|source| ExportError::Io { path: manifest.clone(), source })?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| ExportError::Manifest { path: manifest.clone(), reason: e.to_string() })?;
        let version = value["version"].as_str().ok_or_else(|| ExportError::Manifest { path: manifest.clone(), reason: "no string field `version`".into() })?;
        out.push((version.to_owned(), path));
    }
    out.sort();
    if out.is_empty() {
        return Err(ExportError::NoRelease(releases_dir.to_owned()));
    }
    Ok(out)
}

/// The dataset card of an export.
pub fn card(releases: &[ExportedRelease]) -> String {
    let mut s = String::new();
    let largest = CONFIGS.iter().map(|c| releases.iter().map(|r| r.rows.get(c).copied().unwrap_or(0)).sum::<usize>()).max().unwrap_or(0);
    let _ = write!(
        s,
        "---\npretty_name: CoREB (coreb build)\nlicense: other\nlicense_name: {}\nlicense_link: LICENSE\n\
         task_categories:\n- text-retrieval\ntask_ids:\n- document-retrieval\nlanguage:\n- en\n- code\n\
         size_categories:\n- {}\ntags:\n- code-retrieval\n- reranking\n- benchmark\n- coreb\nconfigs:\n",
        crate::release::LICENSE_NAME,
        size_category(largest)
    );
    for c in CONFIGS {
        let default = if c == CONFIGS[0] { "  default: true\n" } else { "" };
        let _ = writeln!(s, "- config_name: {c}\n{default}  data_files:");
        for r in releases {
            let _ = writeln!(s, "  - split: {}\n    path: data/{c}/{}.parquet", r.split(), r.split());
        }
    }
    s.push_str("dataset_info:\n");
    for c in CONFIGS {
        let _ = writeln!(s, "- config_name: {c}\n  features:");
        for (name, dtype) in config_features(c) {
            let name = if *name == "task" { "split" } else { name };
            let _ = writeln!(s, "  - name: {name}\n    dtype: {dtype}");
        }
        s.push_str("  splits:\n");
        for r in releases {
            let _ = writeln!(s, "  - name: {}\n    num_examples: {}", r.split(), r.rows.get(c).copied().unwrap_or(0));
        }
    }
    s.push_str("---\n\n# CoREB releases built by coreb\n\n");
    let _ = writeln!(
        s,
        "Every release of a coreb releases directory in the layout of the published CoREB dataset \
         (`hq-bench/coreb`): eight configs, one split per release ({}). Code written for the published \
         dataset loads it unchanged:\n\n```python\nfrom datasets import load_dataset\n\
         code_corpus = load_dataset(\"<this folder>\", \"code_corpus\", split=\"{}\")\n\
         t2c_qrels = load_dataset(\"<this folder>\", \"text2code_qrels\", split=\"{}\")\n```\n",
        releases.iter().map(|r| format!("`{}`", r.split())).collect::<Vec<_>>().join(", "),
        releases.last().map(|r| r.split()).unwrap_or_default(),
        releases.last().map(|r| r.split()).unwrap_or_default(),
    );
    s.push_str(
        "## Columns and subtasks\n\n\
         - `code_corpus`: `code_id`, `code`, `language`, `model`, `problem_id`, `solution_id`, `passed`.\n\
         - `text_corpus`: `text_id`, `text`, `kind` (`full`, `canonical`, `distractor<i>`), `problem_id`.\n\
         - `<task>_queries`: `query_id`, `query`, `split` (the task), `subtask`, `language_constraint`, \
         `source_problem_id`, `source_doc_id` (a code query's own document: never a candidate), `num_relevant_docs`.\n\
         - `<task>_qrels`: `query_id`, `doc_id`, `relevance` (2 = positive, 1 = hard negative; count only 2 \
         as relevant, with no gain for 1 in nDCG).\n\n\
         Subtasks carry the published names: text2code `t2c_canonical_retro_<any|lang>`, \
         `t2c_full_retro_<any|lang>`, `t2c_search_<any|lang>`; code2code `c2c_mono_lang`, `c2c_cross_lang`, \
         `c2c_cross_model`; code2text `c2t_full_retro_<lang>` (code in one language → its problem's \
         description; coreb counts both the full statement and the canonical summary as positives).\n\n",
    );
    s.push_str("## Rows per release\n\n| config |");
    for r in releases {
        let _ = write!(s, " {} |", r.split());
    }
    s.push_str("\n|---|");
    s.push_str(&"---:|".repeat(releases.len()));
    s.push('\n');
    for c in CONFIGS {
        let _ = write!(s, "| {c} |");
        for r in releases {
            let _ = write!(s, " {} |", r.rows.get(c).copied().unwrap_or(0));
        }
        s.push('\n');
    }
    s.push_str(
        "\n## Licence\n\n`license: other`: `LICENSE` gathers each release's terms. The problem statements \
         come from LiveCodeBench, which collected them from contest platforms (AtCoder, LeetCode, Codeforces); \
         they and everything rewritten from them stay subject to those platforms' terms; the generated text and \
         code to the terms of the providers of the models named there. Use for evaluation and research.\n",
    );
    s
}

/// Export every release of `releases_dir` to `out` (written beside it, then renamed into
/// place; an empty directory or an earlier export at `out` is replaced, anything else refused).
pub fn export_hf_coreb(releases_dir: &Path, out: &Path) -> Result<Vec<ExportedRelease>, ExportError> {
    let found = find_releases(releases_dir)?;
    let empty_dir = std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_none());
    if out.exists() && !empty_dir && !out.join(".coreb-export").exists() {
        return Err(ExportError::NotAnExport(out.to_owned()));
    }
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "export".into());
    let tmp = out.with_file_name(format!(".{name}.tmp"));
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ExportError::Io { path, source }
    };
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
    }
    let mut exported = Vec::new();
    for (version, dir) in &found {
        let split = format!("release_{version}");
        let mut rows = BTreeMap::new();
        for c in CONFIGS {
            let src = dir.join(format!("{c}.parquet"));
            if !src.is_file() {
                return Err(ExportError::MissingFile { release: dir.clone(), file: format!("{c}.parquet") });
            }
            let dst_dir = tmp.join("data").join(c);
            std::fs::create_dir_all(&dst_dir).map_err(io(&dst_dir))?;
            let dst = dst_dir.join(format!("{split}.parquet"));
            let n = if c.ends_with("_queries") {
                write_published_queries(&src, &dst, published_subtask)?
            } else {
                std::fs::copy(&src, &dst).map_err(io(&dst))?;
                row_count(&dst)?
            };
            rows.insert(c, n);
        }
        let license = std::fs::read_to_string(dir.join("LICENSE")).unwrap_or_default();
        exported.push(ExportedRelease { version: version.clone(), rows, license });
    }
    let write = |file: &str, text: &str| std::fs::write(tmp.join(file), text).map_err(io(&tmp.join(file)));
    write("README.md", &card(&exported))?;
    let mut license = String::from("Terms of this dataset: those of each release it holds, below.\n");
    for r in &exported {
        let _ = write!(license, "\n===== {} =====\n\n{}", r.split(), if r.license.is_empty() { "(the release has no LICENSE file)\n" } else { &r.license });
    }
    write("LICENSE", &license)?;
    write(".coreb-export", "hf-coreb\n")?;
    crate::durable::replace_dir(&tmp, out).map_err(io(out))?;
    Ok(exported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtask_names() {
        assert_eq!(published_subtask("text2code", "canonical", "any").unwrap(), "t2c_canonical_retro_any");
        assert_eq!(published_subtask("text2code", "full", "python").unwrap(), "t2c_full_retro_python");
        assert_eq!(published_subtask("text2code", "search", "go").unwrap(), "t2c_search_go");
        assert_eq!(published_subtask("code2code", "cross_model", "any").unwrap(), "c2c_cross_model");
        assert_eq!(published_subtask("code2text", "describe", "ruby").unwrap(), "c2t_full_retro_ruby");
        assert!(published_subtask("code2text", "match", "any").unwrap_err().contains("`match`"));
    }
}
