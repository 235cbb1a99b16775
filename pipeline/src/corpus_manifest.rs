//! The corpus manifest of `coreb corpus`: which sources to curate, how their fields map to
//! text and code, the step parameters and where the output goes. Two layers, as for release
//! manifests: [`CorpusManifestFile`] is what the user wrote (`deny_unknown_fields`),
//! [`CorpusPlan`] is validated with paths made absolute against the manifest's directory.
//!
//! ```toml
//! releases_dir = "releases"      # every release below it is decontaminated against
//! [output]
//! dir = "corpora/cosqa"
//! shards = 4
//! [[source]]
//! name = "cosqa"
//! format = "beir"                # queries.jsonl + corpus.jsonl + qrels/<split>.tsv
//! path = "../tests/fixtures/data/cosqa"
//! [[source]]
//! name = "extra"
//! format = "jsonl"               # or "parquet"; a `.gz` JSONL file is decompressed
//! path = "extra.jsonl"           # or url = "https://…/extra.jsonl.gz" (downloaded first)
//! sha256 = "…"                   # optional pin, checked before reading
//! text_field = "text"
//! code_field = "code"
//! id_field = "id"                # optional: the row number otherwise
//! ```
//! Does NOT read the sources (see [`crate::corpus`]).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use coreb_curation::{
    AlignConfig, CorpusDedupConfig, DecontamConfig, LanguageConfig, NegativeConfig,
};
use serde::{Deserialize, Serialize};

/// A corpus manifest as written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CorpusManifestFile {
    /// Directory whose releases (any directory holding a `MANIFEST.json`) are checked.
    pub(crate) releases_dir: Option<PathBuf>,
    /// Where and how to write.
    pub(crate) output: OutputSection,
    /// The sources, in order.
    #[serde(rename = "source")]
    pub(crate) sources: Vec<SourceSpec>,
    /// Exact and near-duplicate removal.
    #[serde(default)]
    pub(crate) dedup: CorpusDedupConfig,
    /// The natural-language filter.
    #[serde(default)]
    pub(crate) language: LanguageConfig,
    /// Decontamination against releases.
    #[serde(default)]
    pub(crate) decontaminate: DecontamConfig,
    /// The dual-consistency filter.
    #[serde(default)]
    pub(crate) align: AlignConfig,
    /// Hard-negative mining.
    #[serde(default)]
    pub(crate) negatives: NegativeConfig,
    /// An OpenAI-compatible embeddings endpoint for the alignment and negative similarities;
    /// without it, the lexical TF-IDF fallback is used.
    pub(crate) embed: Option<EmbedSection>,
}

/// `[embed]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EmbedSection {
    /// Base URL with `/v1`.
    pub(crate) base_url: String,
    /// Embedding model.
    pub(crate) model: String,
    /// Environment variable holding the API key (read only at run time, never stored).
    #[serde(default = "api_key_env")]
    pub(crate) api_key_env: String,
    /// Embedding cache directory (relative to the manifest).
    pub(crate) cache_dir: Option<PathBuf>,
}

fn api_key_env() -> String {
    "OPENAI_API_KEY".into()
}

/// `[output]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutputSection {
    /// Output directory.
    pub(crate) dir: PathBuf,
    /// Number of output shards (partitions, by hash of the pair id).
    #[serde(default = "one")]
    pub(crate) shards: u32,
}

fn one() -> u32 {
    1
}

/// The layout of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SourceFormat {
    /// One JSON object a line.
    Jsonl,
    /// A Parquet file with string columns.
    Parquet,
    /// A BEIR folder: `queries.jsonl` (text), `corpus.jsonl` (code), `qrels/<split>.tsv`.
    Beir,
}

/// `[[source]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SourceSpec {
    /// Prefix of the pair ids (`<name>:<row id>`).
    pub(crate) name: String,
    /// Layout.
    pub(crate) format: SourceFormat,
    /// File (JSONL, `.jsonl.gz`, Parquet) or folder (BEIR). Exactly one of `path` and `url`.
    pub(crate) path: Option<PathBuf>,
    /// An `http://` or `https://` URL of a JSONL (`.gz` too) or Parquet file, downloaded into
    /// `<output>/.sources/` (resumed, retried, checked) before it is read.
    pub(crate) url: Option<String>,
    /// Expected sha256 of the file (a download, or a local file, which is then hashed first).
    pub(crate) sha256: Option<String>,
    /// Field holding the text (JSONL, Parquet).
    #[serde(default = "text_field")]
    pub(crate) text_field: String,
    /// Field holding the code (JSONL, Parquet).
    #[serde(default = "code_field")]
    pub(crate) code_field: String,
    /// Field holding the row id; the row number when absent.
    pub(crate) id_field: Option<String>,
    /// BEIR qrels split.
    #[serde(default = "split")]
    pub(crate) split: String,
}

fn text_field() -> String {
    "text".into()
}
fn code_field() -> String {
    "code".into()
}
fn split() -> String {
    "test".into()
}

/// A validated corpus manifest with absolute paths.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CorpusPlan {
    /// The manifest as written, paths resolved.
    pub(crate) file: CorpusManifestFile,
}

/// `p` made absolute against `base` (the manifest's directory).
fn absolute(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() { p.to_owned() } else { base.join(p) }
}

impl CorpusPlan {
    /// Read, parse and validate a corpus manifest; one that cannot be read, parsed or
    /// validated is the command's mistake (exit 2).
    pub(crate) fn load(path: &Path) -> anyhow::Result<CorpusPlan> {
        Self::load_checked(path)
            .map_err(|e| anyhow::Error::new(coreb_base::errors::Usage(format!("{e:#}"))))
    }

    fn load_checked(path: &Path) -> anyhow::Result<CorpusPlan> {
        let text = fs_err::read_to_string(path)?;
        let mut file: CorpusManifestFile = toml::from_str(&text)
            .with_context(|| format!("parsing corpus manifest `{}`", path.display()))?;
        let base = path.parent().unwrap_or(Path::new(".")).to_owned();
        let abs = |p: &Path| absolute(&base, p);
        file.output.dir = absolute(&base, &file.output.dir);
        file.releases_dir = file.releases_dir.as_deref().map(abs);
        if let Some(e) = &mut file.embed {
            e.cache_dir = e.cache_dir.as_deref().map(abs);
        }
        if file.sources.is_empty() {
            bail!("`{}`: `source`: at least one `[[source]]` is needed", path.display());
        }
        let mut names = std::collections::BTreeSet::new();
        for s in &mut file.sources {
            if s.name.is_empty() || s.name.contains([':', '/']) {
                bail!(
                    "`{}`: `source.name`: `{}` must be non-empty without `:` or `/`",
                    path.display(),
                    s.name
                );
            }
            s.path = s.path.as_deref().map(abs);
            let where_ =
                |field: &str| format!("`{}`: source `{}`: `{field}`", path.display(), s.name);
            match (&s.path, &s.url) {
                (Some(_), Some(_)) | (None, None) => {
                    bail!("{}: give exactly one of `path` and `url`", where_("path"))
                }
                (None, Some(url))
                    if !(url.starts_with("http://") || url.starts_with("https://")) =>
                {
                    bail!("{}: `{url}` is not an http:// or https:// URL", where_("url"))
                }
                (None, Some(_)) if s.format == SourceFormat::Beir => {
                    bail!("{}: a BEIR folder cannot be downloaded; give a `path`", where_("url"))
                }
                _ => {}
            }
            if let Some(h) = &s.sha256 {
                if !coreb_base::hashing::is_sha256_hex(h) {
                    bail!("{}: `{h}` is not a 64-digit hex sha256", where_("sha256"));
                }
                if s.format == SourceFormat::Beir {
                    bail!("{}: a BEIR folder has no single checksum", where_("sha256"));
                }
            }
            if !names.insert(s.name.clone()) {
                bail!("`{}`: `source.name`: `{}` appears twice", path.display(), s.name);
            }
        }
        if file.output.shards == 0 || file.output.shards > 10_000 {
            bail!(
                "`{}`: `output.shards`: must be in 1..=10000, got `{}`",
                path.display(),
                file.output.shards
            );
        }
        let check = |section: &str, r: Result<(), String>| {
            r.map_err(|e| anyhow::anyhow!("`{}`: `{section}`: {e}", path.display()))
        };
        check("dedup", file.dedup.validate())?;
        check("language", file.language.validate())?;
        check("decontaminate", file.decontaminate.validate())?;
        if file.align.top_k == 0 {
            bail!("`{}`: `align.top_k`: must be at least 1", path.display());
        }
        Ok(CorpusPlan { file })
    }
}
