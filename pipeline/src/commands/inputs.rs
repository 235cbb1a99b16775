//! The paths a command line names, checked before any command runs: an input that is not
//! there, or a directory to write that is a file, is the command's mistake (exit 2), named
//! with the argument that gave it, rather than a bare OS error half-way through the work (or,
//! for a directory read as a list, an empty answer).

use std::path::Path;

use crate::cli::{Command, ReviewCommand, StoreCommand};

/// What a path argument must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A file or a directory.
    Any,
    /// A directory.
    Dir,
}

/// The paths `command` reads, with the argument that names each and what it must be.
fn inputs(command: &Command) -> Vec<(&'static str, &Path, Kind)> {
    use Kind::{Any, Dir};
    let mut v: Vec<(&'static str, &Path, Kind)> = Vec::new();
    fn opt<'a>(
        v: &mut Vec<(&'static str, &'a Path, Kind)>,
        name: &'static str,
        p: &'a Option<std::path::PathBuf>,
        kind: Kind,
    ) {
        if let Some(p) = p {
            v.push((name, p.as_path(), kind));
        }
    }
    match command {
        Command::Verify(a) => {
            v.push(("RELEASE", &a.release, Dir));
            opt(&mut v, "--sources", &a.sources, Dir);
        }
        Command::Check(a) => {
            v.push(("RELEASE", &a.release, Dir));
            opt(&mut v, "--releases-dir", &a.releases_dir, Dir);
        }
        Command::Eval(a) => {
            v.push(("DIR", &a.dir, Dir));
            opt(&mut v, "--run", &a.run, Any);
        }
        Command::Export(a) => v.push(("RELEASES_DIR", &a.releases_dir, Dir)),
        Command::Compare(a) => {
            v.push(("A", &a.a, Any));
            v.push(("B", &a.b, Any));
            opt(&mut v, "--release", &a.release, Dir);
        }
        Command::Leaderboard(a) => v.push(("--releases-dir", &a.releases_dir, Dir)),
        Command::TrecEval(a) => {
            v.push(("QRELS", &a.qrels, Any));
            v.push(("RUN", &a.run, Any));
        }
        Command::Judge(a) => {
            v.push(("PROBLEM", &a.problem, Any));
            v.push(("SOLUTION", &a.solution, Any));
        }
        Command::Audit(a) => v.push(("RELEASE", &a.release, Dir)),
        Command::Review(a) => match &a.command {
            Some(ReviewCommand::Report(r)) => {
                v.push(("RELEASE", &r.release, Dir));
                for f in &r.files {
                    v.push(("FILE", f, Any));
                }
            }
            None => opt(&mut v, "RELEASE", &a.release, Dir),
        },
        Command::Corpus(a) => v.push(("MANIFEST", &a.manifest, Any)),
        Command::Plan(a) => opt(&mut v, "--from", &a.from, Any),
        Command::Store(a) => match &a.command {
            StoreCommand::Stats { store, .. }
            | StoreCommand::Export { store, .. }
            | StoreCommand::Prune { store, .. } => v.push(("STORE", store, Dir)),
            StoreCommand::Import { input, .. } => v.push(("INPUT", input, Any)),
            _ => {}
        },
        _ => {}
    }
    v
}

/// The directories `command` writes into (made when missing), with the argument that names
/// each.
fn output_dirs(command: &Command) -> Vec<(&'static str, &Path)> {
    let mut v: Vec<(&'static str, &Path)> = Vec::new();
    fn opt<'a>(
        v: &mut Vec<(&'static str, &'a Path)>,
        name: &'static str,
        p: &'a Option<std::path::PathBuf>,
    ) {
        if let Some(p) = p {
            v.push((name, p.as_path()));
        }
    }
    match command {
        Command::Eval(a) => opt(&mut v, "--out", &a.out),
        Command::Leaderboard(a) => opt(&mut v, "--out", &a.out),
        Command::Audit(a) => opt(&mut v, "--out", &a.out),
        Command::Export(a) => v.push(("OUT", &a.out)),
        Command::Programs(a) => v.push(("--out", &a.out)),
        Command::Review(a) => match &a.command {
            Some(ReviewCommand::Report(r)) => opt(&mut v, "--out", &r.out),
            None => opt(&mut v, "--out", &a.out),
        },
        Command::Store(a) => {
            if let StoreCommand::Import { store, .. } = &a.command {
                v.push(("STORE", store));
            }
        }
        _ => {}
    }
    v
}

/// Refuse (exit 2) a command line naming an input that is not there, a file where a
/// directory is read, or a file where a directory is written.
pub(crate) fn check(command: &Command) -> anyhow::Result<()> {
    for (name, path) in output_dirs(command) {
        // A directory above it that is a file is named the same way.
        let mut at = Some(path);
        while let Some(p) = at.filter(|p| !p.as_os_str().is_empty()) {
            if let Ok(m) = std::fs::metadata(p) {
                if !m.is_dir() {
                    coreb_base::usage!(
                        "`{}` ({name}): `{}` is a file, not a directory to write into: name a directory",
                        path.display(),
                        p.display()
                    );
                }
                break;
            }
            at = p.parent();
        }
    }
    for (name, path, kind) in inputs(command) {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                coreb_base::usage!("`{}` ({name}): no such file or directory", path.display())
            }
            Err(e) => coreb_base::usage!("`{}` ({name}): {e}", path.display()),
            Ok(m) if kind == Kind::Dir && !m.is_dir() => {
                coreb_base::usage!("`{}` ({name}): not a directory", path.display())
            }
            Ok(_) => {}
        }
    }
    Ok(())
}
