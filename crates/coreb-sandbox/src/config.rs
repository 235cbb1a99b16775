//! What a caller configures: [`Limits`] of one run and [`SandboxConfig`] of the sandbox (uid
//! pool, filesystem allowlist, cgroup use), with the checks that keep a bad configuration from
//! weakening the sandbox ([`SandboxConfig::validate`]).

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::SandboxError;

/// Resource limits of one run. Sizes in MiB unless the name says bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// CPU time (user + system) of each process, ms; SIGXCPU then SIGKILL.
    pub cpu_time_ms: u64,
    /// Wall-clock time of the run, ms; everything is killed at expiry.
    pub wall_time_ms: u64,
    /// Memory. With a cgroup (see [`MemoryBound`](crate::MemoryBound)) the whole run — every
    /// process, shared memory, and the files of its private tmpfs — is held to
    /// `memory_mb + tmp_size_mb`; every process also gets RLIMIT_DATA = `memory_mb` (heap,
    /// private mappings, thread stacks), which makes a single greedy process fail the way its
    /// language reports running out of memory.
    pub memory_mb: u64,
    /// RLIMIT_AS (virtual address space) of each process. Unset: none with a cgroup, and
    /// `2 × memory_mb + 1024` without one (the fallback bound; the JVM and Go reserve
    /// address space well beyond what they use, so it cannot be `memory_mb` itself).
    pub address_space_mb: Option<u64>,
    /// Processes and threads of the run (RLIMIT_NPROC on the run's own uid or user
    /// namespace, and `pids.max` with a cgroup).
    pub processes: u64,
    /// Open file descriptors of each process.
    pub open_files: u64,
    /// Bytes of stdout (and, separately, of stderr) before the run is killed.
    pub output_bytes: u64,
    /// Largest file the program may write (RLIMIT_FSIZE), bytes.
    pub file_size_bytes: u64,
    /// Size of the private tmpfs at `/tmp` (holding the scratch directory) and of `/dev/shm`.
    pub tmp_size_mb: u64,
    /// Stack size (RLIMIT_STACK).
    pub stack_mb: u64,
}

/// The sandbox's defaults, for a caller that sets no limits of its own, and for the fields a
/// partial `Limits` table leaves out. coreb's judge starts its test runs from them
/// (`coreb_judge::toolchain::test_limits`) and decides there, per language, what changes.
impl Default for Limits {
    fn default() -> Self {
        Limits {
            cpu_time_ms: 4_000,
            wall_time_ms: 10_000,
            memory_mb: 512,
            address_space_mb: None,
            processes: 32,
            open_files: 64,
            output_bytes: 16 << 20,
            file_size_bytes: 16 << 20,
            tmp_size_mb: 64,
            stack_mb: 256,
        }
    }
}

/// Whether runs are put in a cgroup of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CgroupMode {
    /// A cgroup v2 where one is delegated, else a cgroup v1 memory (and pids) hierarchy we
    /// may write (root), else none.
    #[default]
    Auto,
    /// Never: the fallback bound (RLIMIT_AS per process times the process cap).
    None,
}

/// `[stages.execute.sandbox]`: how runs are isolated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// First uid of the pool used when running as root (each concurrent run gets its own).
    pub uid_base: u32,
    /// Size of the uid pool = most concurrent runs (root only).
    pub uid_count: u32,
    /// The only host paths a program sees, read-only (missing ones are skipped; symlinks
    /// such as `/bin -> usr/bin` are reproduced as links). The sandbox adds its own `/dev`
    /// (null, zero, full, random, urandom), `/proc` (its PID namespace only) and `/tmp`.
    pub visible_paths: Vec<PathBuf>,
    /// Where the uid claims (lock files) live when running as root: a directory owned by
    /// root and writable by nobody else.
    pub lock_dir: PathBuf,
    /// Whether runs get a cgroup (memory and process bound of the whole run).
    pub cgroup: CgroupMode,
    /// The cgroup v2 directory under which run cgroups are made (it must have `memory` and
    /// `pids` in its `cgroup.subtree_control`); default: the parent of the judge's own cgroup.
    pub cgroup_parent: Option<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            // Not the 1_990_000_000 of judges before coreb-sandbox: those claim uids through
            // lock files in /tmp and kill every process of a uid after each run, so sharing
            // a range with them would let them kill this judge's runs.
            uid_base: 1_991_000_000,
            uid_count: 256,
            visible_paths: ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"]
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            lock_dir: PathBuf::from("/run/coreb-sandbox"),
            cgroup: CgroupMode::Auto,
            cgroup_parent: None,
        }
    }
}

/// The system's account databases, as the uid pool check reads them.
#[derive(Debug, Clone, Default)]
pub struct Accounts {
    /// `/etc/passwd`.
    pub passwd: String,
    /// `/etc/group`.
    pub group: String,
    /// `/etc/subuid`.
    pub subuid: String,
    /// `/etc/subgid`.
    pub subgid: String,
}

impl Accounts {
    /// Read them from `/etc` (a missing file reads as empty).
    pub fn from_system() -> Accounts {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        Accounts {
            passwd: read("/etc/passwd"),
            group: read("/etc/group"),
            subuid: read("/etc/subuid"),
            subgid: read("/etc/subgid"),
        }
    }
}

/// Paths the sandbox makes itself; a visible path may not cover them.
const OWN_PATHS: [&str; 4] = ["/proc", "/dev", "/tmp", "/sys"];

impl SandboxConfig {
    /// The last uid of the pool.
    pub fn uid_last(&self) -> u32 {
        self.uid_base.saturating_add(self.uid_count.saturating_sub(1))
    }

    /// Check the pool and the allowlist against the system's accounts (see [`Accounts`]).
    ///
    /// The pool must hold at least one uid, contain neither uid 0 nor the "no uid" values
    /// 65535 and 4294967295 (nor 4294967294, the kernel's overflow uid on some systems), not
    /// wrap around, and share no uid (or gid: each run also gets the gid equal to its uid)
    /// with a user or group of `/etc/passwd`, `/etc/group`, or a subordinate range of
    /// `/etc/subuid`/`/etc/subgid`. A uid that a real account owns would let judged code
    /// signal or read that account's processes and files.
    pub fn validate(&self, accounts: &Accounts) -> Result<(), SandboxError> {
        let bad = |what: String| Err(SandboxError::Config(what));
        if self.uid_count == 0 {
            return bad("`uid_count` must be at least 1".into());
        }
        if self.uid_count > 65_536 {
            return bad(format!("`uid_count` {} is more than 65536", self.uid_count));
        }
        let Some(end) = self.uid_base.checked_add(self.uid_count - 1) else {
            return bad(format!(
                "uid pool `uid_base` {} + `uid_count` {} wraps around past 4294967295",
                self.uid_base, self.uid_count
            ));
        };
        let range = self.uid_base..=end;
        for (uid, why) in [
            (0, "root"),
            (65_535, "the 16-bit \"no uid\""),
            (u32::MAX - 1, "the overflow uid"),
            (u32::MAX, "the \"no uid\" value -1"),
        ] {
            if range.contains(&uid) {
                return bad(format!(
                    "uid pool {}..={end} contains uid {uid} ({why})",
                    self.uid_base
                ));
            }
        }
        for (file, text) in [("/etc/passwd", &accounts.passwd), ("/etc/group", &accounts.group)] {
            for line in text.lines() {
                let mut fields = line.split(':');
                let (Some(name), Some(_), Some(id)) = (fields.next(), fields.next(), fields.next())
                else {
                    continue;
                };
                if let Ok(id) = id.trim().parse::<u32>()
                    && range.contains(&id)
                {
                    return bad(format!(
                        "uid pool {}..={end} overlaps id {id} of `{name}` in {file}: choose a `uid_base` no account uses",
                        self.uid_base
                    ));
                }
            }
        }
        for (file, text) in [("/etc/subuid", &accounts.subuid), ("/etc/subgid", &accounts.subgid)] {
            for line in text.lines() {
                let mut fields = line.split(':');
                let (Some(name), Some(start), Some(count)) =
                    (fields.next(), fields.next(), fields.next())
                else {
                    continue;
                };
                let (Ok(start), Ok(count)) =
                    (start.trim().parse::<u64>(), count.trim().parse::<u64>())
                else {
                    continue;
                };
                let (lo, hi) = (u64::from(self.uid_base), u64::from(end));
                if count > 0 && start <= hi && lo < start + count {
                    return bad(format!(
                        "uid pool {}..={end} overlaps the subordinate ids {start}..{} of `{name}` in {file}",
                        self.uid_base,
                        start + count - 1
                    ));
                }
            }
        }
        for path in &self.visible_paths {
            check_visible(path)?;
        }
        if !self.lock_dir.is_absolute() {
            return bad(format!(
                "`lock_dir` `{}` is not an absolute path",
                self.lock_dir.display()
            ));
        }
        Ok(())
    }
}

fn check_visible(path: &Path) -> Result<(), SandboxError> {
    let bad = |why: &str| {
        Err(SandboxError::Config(format!("`visible_paths`: `{}` {why}", path.display())))
    };
    if !path.is_absolute() {
        return bad("is not an absolute path");
    }
    if path.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)) {
        return bad("holds `.` or `..`");
    }
    if path.parent().is_none() {
        return bad("is the whole filesystem: list the directories programs need instead");
    }
    for own in OWN_PATHS {
        let own = Path::new(own);
        if path.starts_with(own) || own.starts_with(path) {
            return bad(&format!(
                "overlaps `{}`, which the sandbox provides itself",
                own.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accounts() -> Accounts {
        Accounts {
            passwd: "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\nalice:x:1000:1000::/home/alice:/bin/sh\n".into(),
            group: "root:x:0:\nstaff:x:50:\nbig:x:3000000000:\n".into(),
            subuid: "alice:100000:65536\n".into(),
            subgid: "alice:100000:65536\n".into(),
        }
    }

    fn pool(base: u32, count: u32) -> Result<(), SandboxError> {
        SandboxConfig { uid_base: base, uid_count: count, ..SandboxConfig::default() }
            .validate(&accounts())
    }

    fn message(r: Result<(), SandboxError>) -> String {
        r.expect_err("rejected").to_string()
    }

    #[test]
    fn the_default_pool_is_valid() {
        pool(1_991_000_000, 256).unwrap();
        SandboxConfig::default().validate(&Accounts::from_system()).unwrap();
    }

    #[test]
    fn root_wrapping_overlapping_and_empty_pools_are_rejected() {
        assert!(message(pool(0, 10)).contains("contains uid 0 (root)"));
        assert!(message(pool(u32::MAX, 1)).contains("4294967295"));
        assert!(message(pool(u32::MAX - 5, 10)).contains("wraps around"));
        assert!(message(pool(u32::MAX - 5, 5)).contains("overflow uid"));
        assert!(message(pool(65_000, 1000)).contains("65535"));
        assert!(message(pool(990, 20)).contains("id 1000 of `alice` in /etc/passwd"));
        assert!(message(pool(65_534, 1)).contains("`nobody`"));
        assert!(message(pool(2_999_999_999, 2)).contains("`big` in /etc/group"));
        assert!(
            message(pool(165_000, 10))
                .contains("subordinate ids 100000..165535 of `alice` in /etc/subuid")
        );
        assert!(message(pool(5000, 0)).contains("at least 1"));
        pool(165_536, 10).unwrap();
    }

    #[test]
    fn visible_paths_must_be_narrow_and_absolute() {
        let with = |p: &str| {
            SandboxConfig { visible_paths: vec![PathBuf::from(p)], ..SandboxConfig::default() }
                .validate(&accounts())
        };
        assert!(message(with("/")).contains("whole filesystem"));
        assert!(message(with("usr")).contains("absolute"));
        assert!(message(with("/usr/../run")).contains("`..`"));
        assert!(message(with("/proc/1")).contains("`/proc`"));
        assert!(message(with("/tmp")).contains("`/tmp`"));
        with("/opt/toolchains").unwrap();
    }
}
