//! Fingerprints the source the `coreb` binary is built from, for the stage keys.
//!
//! Every stage key holds `COREB_SOURCE_SHA256`: the sha256 over the path and content of each
//! `.rs` and `.toml` file of the crates linked into the binary (`pipeline`,
//! `stages`, `crates/*`, `vendor/whatlang-fast`), the prompts compiled in (`prompts/eval`), the judge's
//! driver templates (`crates/coreb-judge/src/drivers`, every file),
//! and the workspace's `Cargo.toml` and `Cargo.lock` (dependency versions). So a build made
//! by changed code never reuses an artifact made by the old code, even at the same
//! `CARGO_PKG_VERSION`. Coarse on purpose: a stage's output also depends on shared code
//! (tables, hashing, the sandbox, the manifest's defaults) that a per-stage file list would
//! miss, and a needless rerun costs time while a stale artifact costs a wrong release.
//! Paths that do not exist (a packaged crate) are skipped.
//!
//! It also writes `$OUT_DIR/workspace_files.rs`, the table of the repository files that
//! `coreb init` writes into a new workspace ([`WORKSPACE`]), each `include_bytes!`d so that
//! the binary carries them.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Directories and files hashed, relative to the workspace root.
const SOURCES: &[&str] = &[
    "pipeline",
    "stages",
    "crates",
    "vendor/whatlang-fast",
    "prompts/eval",
    "Cargo.toml",
    "Cargo.lock",
];

/// The judge's driver templates (`include_str!`d into the binary): every file, whatever its
/// extension.
const DRIVERS: &str = "crates/coreb-judge/src/drivers";

/// What `coreb init` copies from the repository into a workspace, at the same relative path:
/// the prompts and schemas, the sample's manifest, and the sample's problems and response
/// store (at the path the manifest, and so the published sample's MANIFEST, names), and the
/// sample's recorded review (its card shows it: the `release` stage reads it).
const WORKSPACE: &[&str] = &[
    "prompts",
    "manifests/sample.toml",
    "tests/fixtures/sample/README.md",
    "tests/fixtures/sample/problems.jsonl",
    "tests/fixtures/sample/store",
    "releases/sample/reviews",
    "scripts/monthly.sh",
];

/// `rel` itself when it is a file, else every file under it that `keep` keeps, relative to
/// `root`, in no order; folders named `target` or starting with `.` are not entered.
fn files_under(root: &Path, rel: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let path = root.join(rel);
    if path.is_file() {
        out.push(rel.to_owned());
        return;
    }
    let Ok(entries) = std::fs::read_dir(&path) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let child = rel.join(&name);
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if name != "target" && !name.to_string_lossy().starts_with('.') {
                files_under(root, &child, keep, out);
            }
        } else if kind.is_file() && keep(&child) {
            out.push(child);
        }
    }
}

/// `$OUT_DIR/workspace_files.rs`: `WORKSPACE_FILES`, (path, bytes) sorted by path.
fn workspace_table(root: &Path) {
    let mut files = Vec::new();
    for rel in WORKSPACE {
        println!("cargo:rerun-if-changed={}", root.join(rel).display());
        files_under(root, Path::new(rel), &|_| true, &mut files);
    }
    files.sort();
    let mut table = String::from(
        "/// The files `coreb init` writes, from the repository: (path, bytes).\nconst WORKSPACE_FILES: &[(&str, &[u8])] = &[\n",
    );
    for rel in &files {
        let name =
            rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
        table.push_str(&format!(
            "    ({name:?}, include_bytes!({:?})),\n",
            root.join(rel).display().to_string()
        ));
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("workspace_files.rs");
    std::fs::write(out, table).expect("writing workspace_files.rs");
}

/// A file the source fingerprint covers: Rust and TOML, and every file of the judge's drivers.
fn is_source(rel: &Path) -> bool {
    matches!(rel.extension().and_then(|e| e.to_str()), Some("rs" | "toml"))
        || rel.starts_with(DRIVERS)
}

fn main() {
    let manifest_dir = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let root = manifest_dir.parent().unwrap_or(&manifest_dir).to_owned();
    let mut files = Vec::new();
    for source in SOURCES {
        let rel = Path::new(source);
        if root.join(rel).exists() {
            println!("cargo:rerun-if-changed={}", root.join(rel).display());
            files_under(&root, rel, &is_source, &mut files);
        }
    }
    files.sort();
    let mut hasher = Sha256::new();
    for rel in &files {
        let Ok(content) = std::fs::read(root.join(rel)) else {
            continue;
        };
        // Paths with `/` whatever the platform; each part length-prefixed.
        let name =
            rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
        hasher.update((name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update((content.len() as u64).to_le_bytes());
        hasher.update(&content);
    }
    let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=COREB_SOURCE_SHA256={digest}");
    println!("cargo:rustc-env=COREB_SOURCE_FILES={}", files.len());
    workspace_table(&root);
}
