//! Shared test helpers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `coreb` binary under test.
pub fn coreb() -> Command {
    Command::new(env!("CARGO_BIN_EXE_coreb"))
}

/// The project root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("pipeline/ has a parent").to_owned()
}

/// `../shared/data/<rel>` beside the project.
pub fn shared_data(rel: &str) -> PathBuf {
    root().join("../shared/data").join(rel)
}

/// Run a command, returning its output; panics only on a failure to start.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("start coreb")
}

/// stdout + stderr as text, for assertion messages.
pub fn text(out: &Output) -> String {
    format!("status: {}\nstdout:\n{}\nstderr:\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}
