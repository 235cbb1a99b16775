//! `coreb export --layout hf-coreb`: every release of a releases directory as one
//! Hugging Face dataset folder in the published CoREB layout (`hq-bench/coreb` on the Hub):
//! the eight configs, one split per release named as the series names them
//! (`release_v2503` for `v202503`: [`split_name`]), the published column
//! and subtask names ([`published`]), a dataset card with full metadata and a `LICENSE`.
//!
//! `coreb export --layout mteb` ([`mteb`]) writes each release as MTEB's six CoREB(v1) tasks;
//! `--layout reranker-train` ([`reranker_train`]) a training release as a reranker's records.
//!
//! Code written for the published dataset (`load_dataset(path, "text2code_queries",
//! split="release_v2503")`, `query_id`/`query`/`split`/`subtask`/`query_type`/`meta`,
//! `doc_id`/`relevance`, `code_id`/`code`/`language`/`model`, `text_id`/`text`) reads the
//! export unchanged.

pub(crate) mod mteb;
pub(crate) mod published;
pub(crate) mod reranker_train;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use thiserror::Error;

use coreb_data::tables::TableError;
use coreb_data::tables::columns::{self, Column};
use coreb_stages::release::{CONFIGS, size_category};

/// Why an export failed.
#[derive(Debug, Error)]
pub(crate) enum ExportError {
    /// No release (a directory with a `MANIFEST.json`) under the releases directory.
    #[error(
        "no release under `{0}`: pass a release (a directory holding MANIFEST.json, such as `releases/sample/v202503`) or the directory holding releases (`releases/sample`)"
    )]
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
    #[error(
        "`{0}` exists and is not an export of coreb (no `.coreb-export`): refusing to replace it"
    )]
    NotAnExport(PathBuf),
    /// A test release asked for as training data.
    #[error(
        "`{0}` is a test release (its MANIFEST says `purpose.role = \"test\"`): its problems are for evaluation only, never training records"
    )]
    TestRelease(PathBuf),
    /// A table could not be read or written.
    #[error(transparent)]
    Table(#[from] TableError),
    /// A release's table does not have the shape of a coreb release.
    #[error("release `{release}`: {source}")]
    Shape {
        /// The release directory.
        release: PathBuf,
        /// What is wrong.
        source: published::ShapeError,
    },
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// One release in an export.
#[derive(Debug, Clone)]
pub(crate) struct ExportedRelease {
    /// Its version (`v202503`); its split is `release_<version>`.
    pub(crate) version: String,
    /// Rows per config.
    pub(crate) rows: BTreeMap<&'static str, usize>,
    /// Its LICENSE text (empty if it has none).
    license: String,
    /// The Arrow schema of each config as written (the card's `dataset_info` features).
    pub(crate) schemas: BTreeMap<&'static str, arrow_schema::Schema>,
    /// Bytes of each config's Parquet file (the card's `num_bytes`).
    pub(crate) bytes: BTreeMap<&'static str, u64>,
}

impl ExportedRelease {
    /// The split name of the release (see [`split_name`]).
    pub(crate) fn split(&self) -> String {
        split_name(&self.version)
    }
}

/// The series' split name of a release: `release_vYYMM` for a version `vYYYYMM`
/// (`v202603` → `release_v2603`, as `hq-bench/coreb` names its splits), else
/// `release_<version>`.
pub(crate) fn split_name(version: &str) -> String {
    let digits =
        version.strip_prefix('v').filter(|d| d.len() == 6 && d.bytes().all(|b| b.is_ascii_digit()));
    match digits {
        Some(d) => format!("release_v{}", &d[2..]),
        None => format!("release_{version}"),
    }
}

/// Each judged query's documents: (relevant, grade 2 and above; partly relevant, grade 1),
/// each sorted.
type Judged = BTreeMap<String, (Vec<String>, Vec<String>)>;

/// The judged documents of `task`'s queries in `release` (its `<task>_qrels.parquet`).
fn judged(release: &Path, task: &str) -> Result<Judged, ExportError> {
    let file = format!("{task}_qrels.parquet");
    let qrels_path = release.join(&file);
    if !qrels_path.is_file() {
        return Err(ExportError::MissingFile { release: release.to_owned(), file });
    }
    let mut judged = Judged::new();
    for q in coreb_data::tables::published::read_qrels(&qrels_path)? {
        let entry = judged.entry(q.query_id.0).or_default();
        match q.relevance.0 {
            r if r >= 2 => entry.0.push(q.doc_id.0),
            r if r >= 1 => entry.1.push(q.doc_id.0),
            _ => {}
        }
    }
    for (relevant, partly) in judged.values_mut() {
        relevant.sort();
        partly.sort();
    }
    Ok(judged)
}

/// What the export reads of a release's MANIFEST.
struct Found {
    version: String,
    dir: PathBuf,
    facts: published::ReleaseFacts,
}

/// The releases of a directory: the directory itself when it is a release (holds a
/// `MANIFEST.json`), else its subdirectories with one
/// ([`coreb_data::releases::find_releases`] up to one level down), by version.
fn releases_by_version(releases_dir: &Path) -> Result<Vec<Found>, ExportError> {
    let found = coreb_data::releases::find_releases(releases_dir, 0..=1)
        .map_err(|e| ExportError::Io { path: e.path, source: e.source })?;
    let mut out = Vec::new();
    for path in found {
        let manifest = path.join("MANIFEST.json");
        let text = std::fs::read_to_string(&manifest)
            .map_err(|source| ExportError::Io { path: manifest.clone(), source })?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| ExportError::Manifest { path: manifest.clone(), reason: e.to_string() })?;
        let field = |pointer: &str| {
            value.pointer(pointer).and_then(|v| v.as_str()).map(str::to_owned).ok_or_else(|| {
                ExportError::Manifest {
                    path: manifest.clone(),
                    reason: format!("no string field `{}`", &pointer[1..].replace('/', ".")),
                }
            })
        };
        let version = field("/version")?;
        let facts = published::ReleaseFacts {
            created_at: format!("{}T23:59:59Z", field("/window/end")?),
            generator_version: format!("coreb {}", field("/tool_version")?),
        };
        out.push(Found { version, dir: path, facts });
    }
    out.sort_by(|a, b| a.version.cmp(&b.version));
    if out.is_empty() {
        return Err(ExportError::NoRelease(releases_dir.to_owned()));
    }
    Ok(out)
}

/// The `dataset_info` features of `fields`, in the YAML the Hub's card reads (a struct's fields
/// nested under `struct:`).
fn features(s: &mut String, fields: &arrow_schema::Fields, indent: &str) {
    use arrow_schema::DataType;
    for f in fields {
        match f.data_type() {
            DataType::Struct(inner) => {
                let _ = writeln!(s, "{indent}- name: {}\n{indent}  struct:", f.name());
                features(s, inner, &format!("{indent}  "));
            }
            DataType::List(item) => {
                let _ = writeln!(
                    s,
                    "{indent}- name: {}\n{indent}  sequence: {}",
                    f.name(),
                    if matches!(item.data_type(), DataType::Int64) { "int64" } else { "string" }
                );
            }
            t => {
                let dtype = match t {
                    DataType::Int64 => "int64",
                    DataType::Boolean => "bool",
                    _ => "string",
                };
                let _ = writeln!(s, "{indent}- name: {}\n{indent}  dtype: {dtype}", f.name());
            }
        }
    }
}

/// The dataset card of an export.
pub(crate) fn card(releases: &[ExportedRelease]) -> String {
    let mut s = String::new();
    let largest = CONFIGS
        .iter()
        .map(|c| releases.iter().map(|r| r.rows.get(c).copied().unwrap_or(0)).sum::<usize>())
        .max()
        .unwrap_or(0);
    let _ = write!(
        s,
        "---\npretty_name: CoREB (coreb build)\nlicense: other\nlicense_name: {}\nlicense_link: LICENSE\n\
         task_categories:\n- text-retrieval\ntask_ids:\n- document-retrieval\nlanguage:\n- en\n- code\n\
         size_categories:\n- {}\ntags:\n- code-retrieval\n- reranking\n- benchmark\n- coreb\nconfigs:\n",
        coreb_stages::release::LICENSE_NAME,
        size_category(largest)
    );
    for c in CONFIGS {
        let default = if c == CONFIGS[0] { "  default: true\n" } else { "" };
        let _ = writeln!(s, "- config_name: {c}\n{default}  data_files:");
        for r in releases {
            let _ =
                writeln!(s, "  - split: {}\n    path: data/{c}/{}.parquet", r.split(), r.split());
        }
    }
    s.push_str("dataset_info:\n");
    for c in CONFIGS {
        let _ = writeln!(s, "- config_name: {c}\n  features:");
        if let Some(schema) = releases.last().and_then(|r| r.schemas.get(c)) {
            features(&mut s, schema.fields(), "  ");
        }
        s.push_str("  splits:\n");
        for r in releases {
            let (n, b) =
                (r.rows.get(c).copied().unwrap_or(0), r.bytes.get(c).copied().unwrap_or(0));
            let _ =
                writeln!(s, "  - name: {}\n    num_bytes: {b}\n    num_examples: {n}", r.split());
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
         - `code_corpus`: `code_id`, `code`, `language`, `model`, `problem_id`, `solution_id`, `passed`, \
         `meta` (`source_problem_id`, `passed`).\n\
         - `text_corpus`: `text_id`, `text`, `kind` (`full`, `canonical`, `distractor`), `problem_id`, `meta` \
         (`source_problem_id`, `is_noise_sample`, `original_problem_id`: the problem a distractor imitates).\n\
         - `<task>_queries`: `query_id`, `query`, `split` (the task), `subtask`, `language_constraint` (`none` or a \
         language); text2code `query_type`, `sub_query_type`; code2code and code2text `anchor_language`, \
         `anchor_model`; `source_problem_id`, `source_doc_id` (a code query's own document: never a candidate), \
         `num_relevant_docs`, `meta`; code2text `c2t_match` pairs also `code`, `text_id`, `text`, `label`, `text_type`.\n\
         - `<task>_qrels`: `query_id`, `doc_id`, `relevance` (2 = positive, 1 = hard negative, 0 = a non-matching \
         `c2t_match` pair; count only 2 as relevant, with no gain for 1 in nDCG).\n\n\
         Subtasks carry the published names: text2code `t2c_canonical_retro_<any|lang>`, \
         `t2c_full_retro_<any|lang>`, `t2c_search_<any|lang>`; code2code `c2c_mono_lang`, `c2c_cross_lang`, \
         `c2c_cross_model`; code2text `c2t_full_retro_<any|lang>`, `c2t_canonical_retro_<any|lang>`, `c2t_match`.\n\n\
         Where this export differs from the published dataset, on purpose (each difference, with its effect, is a \
         row of coreb's `docs/reference-vs-coreb.md`): `c2t_match` judges a match with relevance 2 (the published \
         rows judge it 1, which `relevance_level = 2` counts as not relevant) and draws the other problem from the \
         problem's id, not the clock's random state; `meta.created_at` is the end of the release's contest window \
         and `meta.generator_version` the coreb that built it, so an export is reproducible byte for byte; the \
         composition switches a release was built with are in its `MANIFEST.json` (`stages.qrels.composition`).\n\n",
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
pub(crate) fn export_hf_coreb(
    releases_dir: &Path,
    out: &Path,
) -> Result<Vec<ExportedRelease>, ExportError> {
    let found = releases_by_version(releases_dir)?;
    let tmp = staging_dir(out)?;
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ExportError::Io { path, source }
    };
    let mut exported = Vec::new();
    for Found { version, dir, facts } in &found {
        let split = split_name(version);
        let read = |c: &str| {
            let src = dir.join(format!("{c}.parquet"));
            if !src.is_file() {
                return Err(ExportError::MissingFile {
                    release: dir.clone(),
                    file: format!("{c}.parquet"),
                });
            }
            Ok(columns::read(&src)?)
        };
        let shape = |source| ExportError::Shape { release: dir.clone(), source };
        let (code, text) = (read("code_corpus")?, read("text_corpus")?);
        let t2c = read("text2code_queries")?;
        let corpora = published::Corpora::new(&code, &text)
            .and_then(|c| c.with_summaries(&t2c))
            .map_err(shape)?;
        let mut tables: BTreeMap<&'static str, Vec<Column>> = BTreeMap::new();
        tables.insert("code_corpus", published::code_corpus(&code).map_err(shape)?);
        tables.insert("text_corpus", published::text_corpus(&text).map_err(shape)?);
        for task in ["text2code", "code2code", "code2text"] {
            let (queries, qrels) = published::task(
                task,
                version,
                facts,
                &read(&format!("{task}_queries"))?,
                &read(&format!("{task}_qrels"))?,
                &corpora,
            )
            .map_err(shape)?;
            let config = |suffix: &str| {
                CONFIGS.into_iter().find(|c| *c == format!("{task}_{suffix}")).unwrap_or_default()
            };
            tables.insert(config("queries"), queries);
            tables.insert(config("qrels"), qrels);
        }
        let (mut rows, mut schemas, mut bytes) =
            (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        for (c, cols) in &tables {
            let dst_dir = tmp.join("data").join(c);
            std::fs::create_dir_all(&dst_dir).map_err(io(&dst_dir))?;
            let dst = dst_dir.join(format!("{split}.parquet"));
            columns::write(&dst, cols)?;
            bytes.insert(*c, std::fs::metadata(&dst).map_err(io(&dst))?.len());
            rows.insert(*c, cols.first().map_or(0, Column::len));
            schemas.insert(*c, columns::schema(cols));
        }
        // The release's regeneration kit rides along, per release (no config reads it), with
        // the release's MANIFEST and card, which names every file's sha256 and the sources: what
        // `coreb verify <export>/regeneration/<version>` rebuilds the release from.
        let kit = dir.join("regeneration");
        if kit.is_dir() {
            let to = tmp.join("regeneration").join(version);
            copy_files(&kit, &to)?;
            std::fs::copy(dir.join("MANIFEST.json"), to.join("MANIFEST.json"))
                .map_err(io(&dir.join("MANIFEST.json")))?;
            // The release's card: a recorded human review's section in it is a person's
            // input, which a rebuild takes from the published card.
            std::fs::copy(dir.join("README.md"), to.join("README.md"))
                .map_err(io(&dir.join("README.md")))?;
        }
        let license = std::fs::read_to_string(dir.join("LICENSE")).unwrap_or_default();
        exported.push(ExportedRelease { version: version.clone(), rows, license, schemas, bytes });
    }
    let write =
        |file: &str, text: &str| std::fs::write(tmp.join(file), text).map_err(io(&tmp.join(file)));
    write("README.md", &card(&exported))?;
    let mut license =
        String::from("Terms of this dataset: those of each release it holds, below.\n");
    for r in &exported {
        let _ = write!(
            license,
            "\n===== {} =====\n\n{}",
            r.split(),
            if r.license.is_empty() { "(the release has no LICENSE file)\n" } else { &r.license }
        );
    }
    write("LICENSE", &license)?;
    publish(&tmp, out, "hf-coreb")?;
    Ok(exported)
}

/// Where an export to `out` is written before it is renamed into place ([`publish`]):
/// `.<name>.tmp` beside `out`, left from no earlier run. `out` itself must be absent, an
/// empty directory or an earlier export of coreb (it holds `.coreb-export`): anything else is
/// refused, so that an export never replaces what a user wrote.
fn staging_dir(out: &Path) -> Result<PathBuf, ExportError> {
    let empty_dir = std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_none());
    if out.exists() && !empty_dir && !out.join(".coreb-export").exists() {
        return Err(ExportError::NotAnExport(out.to_owned()));
    }
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".into());
    let tmp = out.with_file_name(format!(".{name}.tmp"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)
            .map_err(|source| ExportError::Io { path: tmp.clone(), source })?;
    }
    Ok(tmp)
}

/// Mark the export staged in `tmp` as one of `layout` (`.coreb-export`) and rename it into
/// place at `out`, replacing an earlier export there.
fn publish(tmp: &Path, out: &Path, layout: &str) -> Result<(), ExportError> {
    let marker = tmp.join(".coreb-export");
    std::fs::write(&marker, format!("{layout}\n"))
        .map_err(|source| ExportError::Io { path: marker, source })?;
    coreb_base::durable::replace_dir(tmp, out)
        .map_err(|source| ExportError::Io { path: out.to_owned(), source })
}

/// Copy the plain files and directories below `from` to `to` (a link is not followed: it is
/// left out).
fn copy_files(from: &Path, to: &Path) -> Result<(), ExportError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ExportError::Io { path, source }
    };
    std::fs::create_dir_all(to).map_err(io(to))?;
    let mut entries: Vec<_> =
        std::fs::read_dir(from).map_err(io(from))?.collect::<Result<_, _>>().map_err(io(from))?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in entries {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let kind = e.file_type().map_err(io(&src))?;
        if kind.is_dir() {
            copy_files(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst).map_err(io(&src))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split_name;

    #[test]
    fn splits_are_named_as_the_series_names_them() {
        for (version, split) in [
            ("v202603", "release_v2603"),
            ("v202503", "release_v2503"),
            ("v1", "release_v1"),
            ("v2025031", "release_v2025031"),
        ] {
            assert_eq!(split_name(version), split, "{version}");
        }
    }
}
