//! JSONL input read as JSON objects, row by row, with errors naming file and line. Shared by
//! the corpus runner of `coreb corpus` and the overlap audit ([`crate::audit::overlap`]).

use std::io::BufRead as _;
use std::path::Path;

use anyhow::Context as _;

/// Call `emit` with each row of a JSONL file as a JSON object.
pub fn for_each_json(path: &Path, mut emit: impl FnMut(usize, serde_json::Map<String, serde_json::Value>) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let reader = std::io::BufReader::new(fs_err::File::open(path)?);
    for (i, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("`{}`:{}", path.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&line).with_context(|| format!("`{}`:{}: not a JSON object", path.display(), i + 1))?;
        emit(i + 1, obj)?;
    }
    Ok(())
}
