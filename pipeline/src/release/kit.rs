//! The release's regeneration kit (`regeneration/`): written by the `release` stage, read
//! back by `coreb verify` to rebuild the release from it alone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use coreb_judge::ToolchainVersions;
use serde::Serialize;

use crate::artifacts::TOOL_VERSION;
use crate::manifest::{RunPlan, check_release_sandbox};

/// The folder of a release that holds its regeneration kit.
pub(crate) const KIT_DIR: &str = "regeneration";

/// The kit's files (under [`KIT_DIR`]): the answers, the build manifest, the versions.
pub(crate) const KIT_ANSWERS: &str = "answers.jsonl.gz";
/// The kit's `versions.json`.
#[derive(Serialize)]
struct KitVersions<'a> {
    /// coreb's version.
    coreb: &'a str,
    /// Each language's programs and their versions.
    toolchains: &'a ToolchainVersions,
}

/// The build manifest with its paths relative to the kit.
pub(crate) const KIT_MANIFEST: &str = "build.toml";
/// coreb's version and the toolchains' versions.
const KIT_VERSIONS: &str = "versions.json";

/// The release's regeneration kit, under `regeneration/`: what a stranger needs besides the
/// public sources (which the MANIFEST names by sha256) to rebuild it — exactly the LLM answers
/// the build used (`answers.jsonl.gz`: the response store's entries, one compact JSON object
/// a line sorted by key, the format of `coreb store export`), the build manifest with its
/// paths relative to the kit (`build.toml`), the prompts (`prompts/`), and the versions of
/// coreb and of the toolchains (`versions.json`). Every byte depends on the build's inputs
/// alone, so a rebuild writes the same kit. `answer_keys` are the LLM stages' lists of the
/// answers they used (one response-store key a line).
pub(crate) fn write_kit(
    plan: &RunPlan,
    tmp: &Path,
    answer_keys: &[PathBuf],
    toolchains: &ToolchainVersions,
) -> anyhow::Result<()> {
    use std::io::Write as _;
    let kit = tmp.join(KIT_DIR);
    fs_err::create_dir_all(kit.join("prompts"))?;

    let mut keys = BTreeSet::new();
    for path in answer_keys {
        keys.extend(
            fs_err::read_to_string(path)?.lines().filter(|l| !l.is_empty()).map(str::to_owned),
        );
    }
    let store = coreb_llm::ResponseStore::open(&plan.response_store);
    let mut gz = flate2::GzBuilder::new().mtime(0).write(Vec::new(), flate2::Compression::best());
    for key in &keys {
        let mut entry = store.get(key)?.with_context(|| {
            format!(
                "the build used the answer `{key}`, which the response store `{}` does not hold",
                plan.response_store.display()
            )
        })?;
        // What a stage made of the answer is not an input: the rebuild's stages decide again.
        entry.rejected = None;
        gz.write_all(serde_json::to_string(&entry)?.as_bytes())?;
        gz.write_all(b"\n")?;
    }
    fs_err::write(kit.join(KIT_ANSWERS), gz.finish()?)?;

    for stage in coreb_llm::LlmStage::ALL {
        for name in [format!("{stage}.toml"), format!("{stage}.schema.json")] {
            let from = plan.prompts_dir.join(&name);
            if from.is_file() {
                fs_err::copy(&from, kit.join("prompts").join(&name))?;
            }
        }
    }
    fs_err::write(kit.join(KIT_MANIFEST), kit_manifest(&plan.manifest_text)?)?;
    let versions = KitVersions { coreb: TOOL_VERSION, toolchains };
    // Through a JSON value, whose maps sort their keys: the languages by name.
    fs_err::write(
        kit.join(KIT_VERSIONS),
        serde_json::to_string_pretty(&serde_json::to_value(&versions)?)? + "\n",
    )?;
    Ok(())
}

/// The build manifest with its paths relative to the kit: the response store `store/` (made
/// from `answers.jsonl.gz` with `coreb store import`), the prompts `prompts/`, artifacts in
/// `build/`, the release in `releases/`; a local source is looked for in `sources/` (a source
/// with a URL keeps it).
fn kit_manifest(text: &str) -> anyhow::Result<String> {
    let mut table: toml::Table = text.parse().context("the build manifest")?;
    for (key, value) in [
        ("output_dir", "build"),
        ("releases_dir", "releases"),
        ("response_store", "store"),
        ("prompts_dir", "prompts"),
    ] {
        table.insert(key.to_owned(), toml::Value::String(value.to_owned()));
    }
    if let Some(sources) = table.get_mut("sources").and_then(toml::Value::as_array_mut) {
        for source in sources.iter_mut().filter_map(toml::Value::as_table_mut) {
            let Some(url) = source.get("url").and_then(toml::Value::as_str) else {
                continue;
            };
            if !url.contains("://") {
                let file = Path::new(url)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                source.insert("url".to_owned(), toml::Value::String(format!("sources/{file}")));
            }
        }
    }
    Ok(format!(
        "# The build manifest of this release, its paths relative to this folder (`regeneration/`).\n# Put the source files in `sources/`, `coreb store import store answers.jsonl` (gunzipped),\n# then `coreb build build.toml` rebuilds the release offline.\n{}",
        toml::to_string(&table)?
    ))
}

/// The kit's `build.toml`, checked: parsed (a damaged file is an error with its line), its
/// four directories the kit's own (`build`, `releases`, `store`, `prompts`), its local
/// sources in `sources/`, no sandbox settings unless trusted.
pub(crate) fn check_kit_manifest(path: &Path, trusted: bool) -> anyhow::Result<()> {
    let bytes = fs_err::read(path)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "`{}`: not UTF-8 text (byte {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        anyhow::anyhow!("`{}`: {}", path.display(), e.to_string().trim_end())
    })?;
    for (key, kit_value) in [
        ("output_dir", "build"),
        ("releases_dir", "releases"),
        ("response_store", "store"),
        ("prompts_dir", "prompts"),
    ] {
        match table.get(key) {
            Some(toml::Value::String(v)) if v == kit_value => {}
            Some(v) => bail!(
                "`{}`: `{key} = {v}`: a kit's `{key}` is `\"{kit_value}\"`, inside the kit (refused: a kit never points a rebuild outside the temporary directory it is rebuilt in)",
                path.display()
            ),
            None => bail!("`{}`: no `{key}` (a kit's is `\"{kit_value}\"`)", path.display()),
        }
    }
    for (i, source) in
        table.get("sources").and_then(toml::Value::as_array).into_iter().flatten().enumerate()
    {
        let Some(url) = source.get("url").and_then(toml::Value::as_str) else {
            continue;
        };
        if url.contains("://") {
            continue;
        }
        let file = url
            .strip_prefix("sources/")
            .filter(|f| !f.is_empty() && !f.contains('/') && *f != ".." && *f != ".");
        if file.is_none() {
            bail!(
                "`{}`: `sources[{i}].url = \"{url}\"`: a kit's local source is `sources/<file>` (refused: it would reach outside the kit)",
                path.display()
            );
        }
    }
    // Whether it says what the embedded manifest says is checked by the rebuild: the rebuilt
    // kit's `build.toml` is made from the embedded manifest, and compared.
    check_release_sandbox(&text, path, trusted)
}

/// Decompress the kit's answers (`answers.jsonl.gz`) and import them into the response
/// store `store` (the store's own import: every key checked against its request). A
/// truncated or corrupt file, or an entry that is not a valid one, is an error naming
/// `shown` (the file in the release) and the line. Returns the number of answers.
///
/// A downloaded kit is untrusted: its answers are decompressed as a stream within bounds that
/// do not grow with the file ([`answers_bounds`]): a line longer than [`ANSWERS_MAX_LINE`],
/// more than [`ANSWERS_MAX_LINES`] lines, or more than [`ANSWERS_MAX_RATIO`] times the
/// compressed size (at least 64 MiB, at most [`ANSWERS_MAX_BYTES`]) is refused at its first
/// byte past, before it fills the disk or the memory.
pub(crate) fn import_answers(
    gz: &Path,
    shown: &Path,
    work: &Path,
    store: &Path,
) -> anyhow::Result<u64> {
    let bounds = answers_bounds(fs_err::metadata(gz)?.len());
    import_answers_capped(gz, shown, work, store, &bounds)
}

/// How many times its compressed size a kit's answers may decompress to.
const ANSWERS_MAX_RATIO: u64 = 200;
/// The most a kit's answers may decompress to, whatever their compressed size.
const ANSWERS_MAX_BYTES: u64 = 4 << 30;
/// The longest line (one stored answer, its request with it) of a kit's answers.
const ANSWERS_MAX_LINE: usize = 32 << 20;
/// The most lines (answers) of a kit's answers.
const ANSWERS_MAX_LINES: u64 = 10_000_000;

/// The bounds of the answers of a kit whose `answers.jsonl.gz` has `compressed` bytes.
fn answers_bounds(compressed: u64) -> coreb_base::jsonl::LineBounds {
    coreb_base::jsonl::LineBounds {
        total_bytes: compressed
            .saturating_mul(ANSWERS_MAX_RATIO)
            .clamp(64 << 20, ANSWERS_MAX_BYTES),
        line_bytes: ANSWERS_MAX_LINE,
        lines: ANSWERS_MAX_LINES,
    }
}

fn import_answers_capped(
    gz: &Path,
    shown: &Path,
    work: &Path,
    store: &Path,
    bounds: &coreb_base::jsonl::LineBounds,
) -> anyhow::Result<u64> {
    use coreb_base::jsonl::BoundedError;
    use std::io::Write as _;
    let jsonl = work.join("answers.jsonl");
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(fs_err::File::open(gz)?));
    let mut out = std::io::BufWriter::new(fs_err::File::create(&jsonl)?);
    let read = coreb_base::jsonl::bounded_lines(reader, bounds, |line| out.write_all(line));
    if let Err(e) = read {
        drop(out);
        let _ = fs_err::remove_file(&jsonl);
        let shown = shown.display();
        match e {
            BoundedError::Io { line, source } => {
                bail!("`{shown}`, line {line}: truncated or corrupt gzip data ({source})")
            }
            BoundedError::Truncated { line } => {
                bail!("`{shown}`, line {line}: the file ends inside the line (truncated)")
            }
            other => bail!(
                "`{shown}`, {other} (a kit's answers are at most {ANSWERS_MAX_RATIO}x their compressed size, at least 64 MiB and at most 4 GiB, in lines of at most 32 MiB)"
            ),
        }
    }
    out.flush()?;
    drop(out);
    fs_err::create_dir_all(store)?;
    let at = |line: Option<usize>| line.map(|l| format!(", line {l}")).unwrap_or_default();
    let report =
        coreb_llm::ResponseStore::open(store).import(&jsonl, false).map_err(|e| match e {
            coreb_llm::StoreError::Parse { line, source, .. } => anyhow::anyhow!(
                "`{}`{}: not a valid response-store entry: {source}",
                shown.display(),
                at(line)
            ),
            coreb_llm::StoreError::Inconsistent { line, problem, .. } => {
                anyhow::anyhow!("`{}`{}: {problem}", shown.display(), at(line))
            }
            other => anyhow::Error::new(other)
                .context(format!("importing the answers of `{}`", shown.display())),
        })?;
    if let Some(key) = report.conflicts.first() {
        bail!(
            "`{}`: the answer `{key}` is given twice, with different content ({} such key(s))",
            shown.display(),
            report.conflicts.len()
        );
    }
    Ok(report.added + report.unchanged)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Importing `gz` (shown as `kit/answers.jsonl.gz`) into a store beside it fails with an
    /// error that starts with `said`.
    fn assert_import_refused(gz: &Path, said: &str) {
        let dir = gz.parent().unwrap();
        let err = import_answers(gz, Path::new("kit/answers.jsonl.gz"), dir, &dir.join("store"))
            .unwrap_err();
        assert!(format!("{err:#}").starts_with(said), "{err:#}");
    }

    #[test]
    fn answers_import_names_the_line_of_a_bad_entry() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("answers.jsonl.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"{\"format\": 1}\n").unwrap();
        fs_err::write(&gz, enc.finish().unwrap()).unwrap();
        assert_import_refused(
            &gz,
            "`kit/answers.jsonl.gz`, line 1: not a valid response-store entry",
        );
        fs_err::write(&gz, b"not gzip").unwrap();
        assert_import_refused(
            &gz,
            "`kit/answers.jsonl.gz`, line 1: truncated or corrupt gzip data",
        );
    }

    /// A gzip bomb: past any bound (bytes in all, bytes a line, lines) it is refused, naming
    /// the line, whether the data has newlines or is one endless line; nothing of it is
    /// imported. The bounds of a real kit do not grow with its size.
    #[test]
    fn answers_that_decompress_past_a_bound_are_refused() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let gz = dir.path().join("answers.jsonl.gz");
        let bounds =
            coreb_base::jsonl::LineBounds { total_bytes: 6_144, line_bytes: 1_024, lines: 3_000 };
        for (body, said) in [
            (b"{}\n".repeat(4000), "line 2049: more than 6144 bytes in all"),
            (vec![0u8; 12_000], "line 1: longer than 1024 bytes"),
            (b"\n".repeat(4000), "line 3001: more than 3000 lines"),
        ] {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            enc.write_all(&body).unwrap();
            fs_err::write(&gz, enc.finish().unwrap()).unwrap();
            let store = dir.path().join("store");
            let err = import_answers_capped(
                &gz,
                Path::new("kit/answers.jsonl.gz"),
                dir.path(),
                &store,
                &bounds,
            )
            .unwrap_err();
            assert!(
                format!("{err:#}").starts_with(&format!("`kit/answers.jsonl.gz`, {said}: refused")),
                "{err:#}"
            );
            assert!(!store.exists(), "nothing imported");
            assert!(!dir.path().join("answers.jsonl").exists());
        }
        let huge = answers_bounds(u64::MAX);
        assert_eq!(
            (huge.total_bytes, huge.line_bytes, huge.lines),
            (ANSWERS_MAX_BYTES, ANSWERS_MAX_LINE, ANSWERS_MAX_LINES)
        );
        assert_eq!(answers_bounds(1).total_bytes, 64 << 20);
    }
}
