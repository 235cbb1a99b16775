//! The filesystem a program sees, built as an allowlist: a fresh tmpfs becomes its root, and
//! only the configured host paths (toolchains, libraries, `/etc`) are bound into it,
//! read-only, plus the sandbox's own `/dev`, `/proc` and `/tmp`. Everything else of the host —
//! `/run`, `/var`, the host's `/tmp`, home directories, the build directory with its expected
//! outputs — simply does not exist inside, so neither its files nor its unix sockets can be
//! reached.
//!
//! This module only plans: it turns the configuration into a list of [`Step`]s (C strings
//! prepared in the judge) that the sandbox's init process performs, in order, before it
//! switches root (`pivot_root`) into the new tree.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::{BOX_DIR, CACHE_DIR, SandboxError, WORK_DIR};

/// Device nodes bound from the host's `/dev`.
const DEVICES: [&str; 5] = ["null", "zero", "full", "random", "urandom"];

/// One mount-namespace operation of the init process. Paths are absolute host paths inside
/// the stage directory (the future root), or host paths for bind sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Mount a tmpfs.
    Tmpfs { target: CString, options: CString, noexec: bool },
    /// Create a directory (an existing one is fine).
    Mkdir { path: CString, mode: u32 },
    /// Create a symbolic link.
    Symlink { target: CString, path: CString },
    /// Create an empty file (a bind target for a file or device).
    File { path: CString },
    /// Bind-mount a host path (recursively).
    Bind { source: CString, target: CString },
    /// Make a mount nosuid and nodev, and read-only unless `writable`.
    Seal { target: CString, writable: bool, recursive: bool },
    /// Mount a procfs of the run's PID namespace.
    Proc { target: CString },
    /// Hand a directory to the run's uid.
    Chown { path: CString, uid: u32 },
}

impl Step {
    /// For error messages: what failed.
    pub(crate) fn describe(&self) -> String {
        let s = |c: &CString| String::from_utf8_lossy(c.as_bytes()).into_owned();
        match self {
            Step::Tmpfs { target, options, .. } => {
                format!("mounting a tmpfs ({}) at `{}`", s(options), s(target))
            }
            Step::Mkdir { path, .. } => format!("creating `{}`", s(path)),
            Step::Symlink { target, path } => format!("linking `{}` to `{}`", s(path), s(target)),
            Step::File { path } => format!("creating `{}`", s(path)),
            Step::Bind { source, target } => format!("binding `{}` at `{}`", s(source), s(target)),
            Step::Seal { target, writable, .. } => {
                format!(
                    "making `{}` {}nosuid",
                    s(target),
                    if *writable { "" } else { "read-only and " }
                )
            }
            Step::Proc { target } => format!("mounting /proc at `{}`", s(target)),
            Step::Chown { path, uid } => format!("handing `{}` to uid {uid}", s(path)),
        }
    }
}

fn cstr(p: &Path) -> Result<CString, SandboxError> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| SandboxError::Config(format!("NUL byte in `{}`", p.display())))
}

/// A path inside the stage: `stage` + `inside` (absolute).
fn under(stage: &Path, inside: &Path) -> PathBuf {
    stage.join(inside.strip_prefix("/").unwrap_or(inside))
}

/// The part of the view that is the same for every run: the root tmpfs, the visible host
/// paths, `/dev` and `/proc`.
#[derive(Debug, Clone)]
pub(crate) struct View {
    stage: PathBuf,
    steps: Vec<Step>,
}

impl View {
    /// Plan the fixed part of the view, assembled at `stage` (an empty host directory).
    /// Visible paths are looked at now: a missing one is skipped, a symlink is reproduced as
    /// a link, and a path inside another visible directory adds nothing.
    pub(crate) fn new(stage: &Path, visible: &[PathBuf]) -> Result<View, SandboxError> {
        let mut steps = vec![Step::Tmpfs {
            target: cstr(stage)?,
            options: CString::new("size=1m,nr_inodes=4096,mode=0755").expect("no NUL"),
            noexec: false,
        }];
        let mut made: BTreeSet<PathBuf> = BTreeSet::new();
        let mut mkdir_p = |steps: &mut Vec<Step>, dir: &Path| -> Result<(), SandboxError> {
            let mut parts: Vec<&Path> = dir.ancestors().filter(|a| a.parent().is_some()).collect();
            parts.reverse();
            for p in parts {
                if made.insert(p.to_owned()) {
                    steps.push(Step::Mkdir { path: cstr(&under(stage, p))?, mode: 0o755 });
                }
            }
            Ok(())
        };
        let mut sorted: Vec<&PathBuf> = visible.iter().collect();
        sorted.sort();
        let mut shown: Vec<&Path> = Vec::new();
        for path in sorted {
            if shown.iter().any(|s| path.starts_with(s)) {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue;
            };
            if let Some(parent) = path.parent() {
                mkdir_p(&mut steps, parent)?;
            }
            let target = cstr(&under(stage, path))?;
            if meta.file_type().is_symlink() {
                let link = std::fs::read_link(path)
                    .map_err(|source| SandboxError::Io { path: path.clone(), source })?;
                steps.push(Step::Symlink { target: cstr(&link)?, path: target });
                continue;
            }
            if meta.is_dir() {
                mkdir_p(&mut steps, path)?;
            } else {
                steps.push(Step::File { path: target.clone() });
            }
            steps.push(Step::Bind { source: cstr(path)?, target: target.clone() });
            steps.push(Step::Seal { target, writable: false, recursive: true });
            shown.push(path);
        }
        // /dev: a few harmless devices and the usual links; nothing else (no tty, no disks).
        let dev = under(stage, Path::new("/dev"));
        steps.push(Step::Mkdir { path: cstr(&dev)?, mode: 0o755 });
        steps.push(Step::Tmpfs {
            target: cstr(&dev)?,
            options: CString::new("size=64k,nr_inodes=64,mode=0755").expect("no NUL"),
            noexec: true,
        });
        for name in DEVICES {
            let host = Path::new("/dev").join(name);
            if host.exists() {
                let target = cstr(&dev.join(name))?;
                steps.push(Step::File { path: target.clone() });
                steps.push(Step::Bind { source: cstr(&host)?, target });
            }
        }
        for (name, link) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            steps.push(Step::Symlink {
                target: CString::new(link).expect("no NUL"),
                path: cstr(&dev.join(name))?,
            });
        }
        steps.push(Step::Mkdir { path: cstr(&dev.join("shm"))?, mode: 0o1777 });
        let proc = under(stage, Path::new("/proc"));
        steps.push(Step::Mkdir { path: cstr(&proc)?, mode: 0o555 });
        steps.push(Step::Proc { target: cstr(&proc)? });
        steps.push(Step::Mkdir { path: cstr(&under(stage, Path::new("/tmp")))?, mode: 0o1777 });
        Ok(View { stage: stage.to_owned(), steps })
    }

    /// The stage directory (the future root).
    pub(crate) fn stage(&self) -> &Path {
        &self.stage
    }

    /// The fixed steps.
    pub(crate) fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The steps of one run: its private `/tmp` (holding its directory at [`BOX_DIR`], the
    /// scratch directory [`WORK_DIR`] and the optional cache at [`CACHE_DIR`]) and
    /// `/dev/shm`, both tmpfs capped at `tmp_size_mb`.
    pub(crate) fn run_steps(
        &self,
        dir: &Path,
        writable: bool,
        cache: Option<&Path>,
        tmp_size_mb: u64,
        uid: Option<u32>,
    ) -> Result<Vec<Step>, SandboxError> {
        let inside = |p: &str| cstr(&under(&self.stage, Path::new(p)));
        let options =
            CString::new(format!("size={}m,nr_inodes=16384,mode=1777", tmp_size_mb.max(1)))
                .expect("no NUL");
        let mut steps = vec![
            Step::Tmpfs { target: inside("/tmp")?, options: options.clone(), noexec: false },
            Step::Tmpfs { target: inside("/dev/shm")?, options, noexec: true },
            Step::Mkdir { path: inside(BOX_DIR)?, mode: 0o755 },
            Step::Bind { source: cstr(dir)?, target: inside(BOX_DIR)? },
            Step::Seal { target: inside(BOX_DIR)?, writable, recursive: false },
            Step::Mkdir { path: inside(WORK_DIR)?, mode: 0o700 },
        ];
        if let Some(uid) = uid {
            steps.push(Step::Chown { path: inside(WORK_DIR)?, uid });
        }
        if let Some(cache) = cache {
            steps.push(Step::Mkdir { path: inside(CACHE_DIR)?, mode: 0o755 });
            steps.push(Step::Bind { source: cstr(cache)?, target: inside(CACHE_DIR)? });
            steps.push(Step::Seal { target: inside(CACHE_DIR)?, writable: true, recursive: false });
        }
        Ok(steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(steps: &[Step]) -> Vec<String> {
        steps.iter().map(Step::describe).collect()
    }

    #[test]
    fn only_listed_paths_are_bound_and_links_stay_links() {
        let host = tempfile::tempdir().unwrap();
        let (usr, etc) = (host.path().join("usr"), host.path().join("etc"));
        std::fs::create_dir_all(usr.join("bin")).unwrap();
        std::fs::create_dir_all(&etc).unwrap();
        std::os::unix::fs::symlink("usr/bin", host.path().join("bin")).unwrap();
        let stage = Path::new("/stage");
        let visible = vec![
            usr.clone(),
            host.path().join("bin"),
            usr.join("bin"),
            host.path().join("missing"),
            etc.clone(),
        ];
        let view = View::new(stage, &visible).unwrap();
        let steps = text(view.steps());
        let binds: Vec<&String> = steps.iter().filter(|s| s.starts_with("binding")).collect();
        // usr and etc once each (usr/bin is inside usr), plus the devices that exist.
        let host_binds: Vec<&&String> = binds.iter().filter(|s| !s.contains("`/dev/")).collect();
        assert_eq!(host_binds.len(), 2, "{host_binds:?}");
        assert!(
            host_binds[0].contains(&format!("`{}` at `/stage{}`", etc.display(), etc.display())),
            "{host_binds:?}"
        );
        assert!(
            steps.iter().any(|s| s.starts_with("linking") && s.ends_with("to `usr/bin`")),
            "{steps:?}"
        );
        assert!(!steps.iter().any(|s| s.contains("missing")));
        // Every bound host path is sealed read-only, and the fixed view has /dev and /proc.
        for path in [&usr, &etc] {
            let sealed = format!("making `/stage{}` read-only and nosuid", path.display());
            assert!(steps.contains(&sealed), "{steps:?}");
        }
        assert!(steps.iter().any(|s| s == "mounting /proc at `/stage/proc`"));
        assert!(steps.iter().any(|s| s == "binding `/dev/null` at `/stage/dev/null`"));
        assert!(
            !steps.iter().any(|s| s.contains("/run") || s.contains("/var") || s.contains("/home"))
        );
    }

    #[test]
    fn run_steps_bind_the_program_directory_read_only_or_writable() {
        let view = View::new(Path::new("/stage"), &[]).unwrap();
        let ro = text(&view.run_steps(Path::new("/host/s1"), false, None, 64, Some(1234)).unwrap());
        assert!(ro.contains(&"binding `/host/s1` at `/stage/tmp/box`".to_owned()), "{ro:?}");
        assert!(ro.contains(&"making `/stage/tmp/box` read-only and nosuid".to_owned()), "{ro:?}");
        assert!(ro.contains(&"handing `/stage/tmp/work` to uid 1234".to_owned()), "{ro:?}");
        assert!(ro[0].contains("size=64m"), "{ro:?}");
        let rw = text(
            &view
                .run_steps(Path::new("/host/s1"), true, Some(Path::new("/host/cache")), 8, None)
                .unwrap(),
        );
        assert!(rw.contains(&"making `/stage/tmp/box` nosuid".to_owned()), "{rw:?}");
        assert!(rw.contains(&"binding `/host/cache` at `/stage/tmp/cache`".to_owned()), "{rw:?}");
        assert!(!rw.iter().any(|s| s.starts_with("handing")));
    }
}
