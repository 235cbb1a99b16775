//! Publishing a release: what the publish directory already holds against the release about
//! to be published (published releases are immutable unless replaced).

use std::collections::BTreeMap;
use std::path::Path;

use coreb_base::hashing::sha256_hex;
use coreb_data::releases::ReleaseManifest;

/// Why a release that is already published with other content is not replaced: the
/// files that would change, and what to do.
pub(crate) fn release_exists(version: &str, dir: &Path, changes: &[String]) -> anyhow::Error {
    let list: Vec<String> = changes.iter().map(|c| format!("  {c}")).collect();
    anyhow::anyhow!(
        "release `{version}` is already published in `{}` with other content: published releases are immutable, and publishing would change {} file(s):\n{}\npublish it under another version, or pass `--replace` to replace it (the new MANIFEST records the sha256 of the MANIFEST it replaces)",
        dir.display(),
        changes.len(),
        list.join("\n")
    )
}

/// What the publish directory holds, against the release about to be published.
pub(crate) enum Published {
    /// Nothing: publish.
    Absent,
    /// This release, byte for byte (its MANIFEST may also record what it replaced): its
    /// MANIFEST text.
    Same(String),
    /// Another release (or other files).
    Other {
        /// One line per file that would be added, removed or changed.
        changes: Vec<String>,
        /// sha256 of its `MANIFEST.json`, if it has one.
        manifest_sha256: Option<String>,
    },
}

/// Compare the directory `dir` with the release whose files are `files` and whose MANIFEST
/// is `manifest`.
pub(crate) fn published_state(
    dir: &Path,
    files: &BTreeMap<String, coreb_data::releases::FileEntry>,
    manifest: &str,
) -> anyhow::Result<Published> {
    if !dir.exists() {
        return Ok(Published::Absent);
    }
    let existing = crate::artifacts::hash_files(dir, |_| true)?;
    let manifest_path = dir.join("MANIFEST.json");
    let (old_text, manifest_sha256) = if manifest_path.is_file() {
        let bytes = fs_err::read(&manifest_path)?;
        (String::from_utf8(bytes.clone()).ok(), Some(sha256_hex(&bytes)))
    } else {
        (None, None)
    };
    let mut changes = Vec::new();
    for (path, entry) in files {
        match existing.get(path) {
            None => changes.push(format!("added   {path}")),
            Some(e) if e.sha256 != entry.sha256 => changes.push(format!("changed {path}")),
            Some(_) => {}
        }
    }
    for path in existing.keys().filter(|p| *p != "MANIFEST.json" && !files.contains_key(*p)) {
        changes.push(format!("removed {path}"));
    }
    let same_manifest =
        old_text.as_deref().is_some_and(|old| without_replaces(old) == without_replaces(manifest));
    if !same_manifest {
        changes.push(format!(
            "{} MANIFEST.json",
            if manifest_sha256.is_some() { "changed" } else { "added  " }
        ));
    }
    Ok(match (changes.is_empty(), old_text) {
        (true, Some(old)) => Published::Same(old),
        _ => Published::Other { changes, manifest_sha256 },
    })
}

/// A MANIFEST without its `replaces` record (`None`: not a MANIFEST).
fn without_replaces(text: &str) -> Option<ReleaseManifest> {
    let mut manifest: ReleaseManifest = serde_json::from_str(text).ok()?;
    manifest.replaces = None;
    Some(manifest)
}
