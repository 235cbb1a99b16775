//! A cgroup per run: the memory (and process) bound of the run as a whole.
//!
//! Per-process rlimits cannot bound a run: RLIMIT_DATA ignores shared memory (`MAP_SHARED`
//! anonymous mappings, memfds, SysV segments), and every process of the run gets its own
//! allowance. A cgroup charges every page the run's processes touch — private, shared, and
//! the files of its tmpfs — to one counter with one ceiling, and counts its processes.
//!
//! Where one is found ([`Cgroups::discover`]):
//! - **cgroup v2**, where the host delegates a directory whose `cgroup.subtree_control`
//!   enables `memory` and `pids` (the `cgroup_parent` setting, else the parent of the judge's
//!   own cgroup): a child per run with `memory.max`, `memory.swap.max = 0`, `pids.max` and
//!   `memory.oom.group = 1` (an out-of-memory kill takes the whole run);
//! - **cgroup v1** (hybrid hosts, as root): a child of the judge's own cgroup in the memory
//!   hierarchy (`memory.limit_in_bytes`, and `memory.memsw.limit_in_bytes` where swap is
//!   accounted) and, when mounted, in the pids hierarchy (`pids.max`).
//!
//! Each run's cgroup is made before the run and removed after it
//! (`coreb-run-<pid namespace>-<pid>-<n>`), so nothing is left under a cgroup the judge does
//! not own once it is done; those of a judge that was killed are removed by the next one
//! ([`Cgroups::discover`]). The init process of a run joins it by writing `0` to the
//! `cgroup.procs` files this module opened.
//!
//! A run's cgroup is its judge's alone: `create` never takes a directory that is already
//! there (a killed judge's, whose pid a new judge got back: `pid_max` is 32,768 on many
//! hosts), it numbers on. And a judge removes only the leftovers of judges of its own PID
//! namespace, the only ones whose pids it can look up: a judge in another namespace (a
//! container sharing the host's cgroup tree) would find no `/proc/<pid>` for a live judge
//! and remove its empty cgroup between `create` and the run's joining it (`No such device`).
//!
//! What it does NOT do: move the judge itself, enable controllers on a cgroup holding
//! processes, or bound CPU (RLIMIT_CPU and the wall timer do).

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::MemoryBound;

/// Where run cgroups are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hierarchy {
    /// A delegated cgroup v2 directory.
    V2 {
        /// The parent of the run cgroups.
        parent: PathBuf,
    },
    /// cgroup v1 controllers.
    V1 {
        /// The parent in the memory hierarchy.
        memory: PathBuf,
        /// The parent in the pids hierarchy, when mounted.
        pids: Option<PathBuf>,
    },
}

/// The cgroup setup of a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cgroups {
    pub(crate) hierarchy: Hierarchy,
}

/// One mount of `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    /// The path of the mounted filesystem's root within it (`/` unless a cgroup namespace
    /// or a bind shows a subtree).
    root: PathBuf,
    mount_point: PathBuf,
    fstype: String,
    super_options: Vec<String>,
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = left.split(' ').collect();
        let rest: Vec<&str> = right.split(' ').collect();
        if fields.len() < 5 || rest.len() < 3 {
            continue;
        }
        let unescape = |s: &str| {
            s.replace("\\040", " ")
                .replace("\\011", "\t")
                .replace("\\012", "\n")
                .replace("\\134", "\\")
        };
        out.push(Mount {
            root: PathBuf::from(unescape(fields[3])),
            mount_point: PathBuf::from(unescape(fields[4])),
            fstype: rest[0].to_owned(),
            super_options: rest[2].split(',').map(str::to_owned).collect(),
        });
    }
    out
}

/// `/proc/self/cgroup`: (hierarchy id, controllers, path).
fn parse_proc_cgroup(text: &str) -> Vec<(String, Vec<String>, PathBuf)> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let controllers =
                controllers.split(',').filter(|c| !c.is_empty()).map(str::to_owned).collect();
            Some((id.to_owned(), controllers, PathBuf::from(path)))
        })
        .collect()
}

/// The host directory of cgroup `path` in `mount` (accounting for the mount's own root).
fn host_dir(mount: &Mount, path: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix(&mount.root).ok()?;
    Some(mount.mount_point.join(rel))
}

fn has_words(path: &Path, words: &[&str]) -> bool {
    std::fs::read_to_string(path)
        .is_ok_and(|t| words.iter().all(|w| t.split_whitespace().any(|x| x == *w)))
}

/// Where run cgroups can be made, from the process's mountinfo and cgroup membership.
/// `parent` overrides the v2 parent. Pure over its inputs (except for reading the candidate
/// directories' control files), so tests can give it a fake tree.
pub(crate) fn locate(
    mountinfo: &str,
    proc_cgroup: &str,
    parent: Option<&Path>,
    root: bool,
) -> Option<Hierarchy> {
    let mounts = parse_mountinfo(mountinfo);
    let membership = parse_proc_cgroup(proc_cgroup);
    // cgroup v2.
    let unified = mounts.iter().find(|m| m.fstype == "cgroup2");
    let v2_parent = match parent {
        Some(p) => Some(p.to_owned()),
        None => unified.and_then(|m| {
            let own = membership.iter().find(|(id, c, _)| id == "0" && c.is_empty())?.2.clone();
            host_dir(m, own.parent()?)
        }),
    };
    if let Some(dir) = v2_parent
        && has_words(&dir.join("cgroup.subtree_control"), &["memory", "pids"])
    {
        return Some(Hierarchy::V2 { parent: dir });
    }
    // cgroup v1: its directories belong to root (there is no delegation).
    if !root {
        return None;
    }
    let v1 = |controller: &str| -> Option<PathBuf> {
        let mount = mounts
            .iter()
            .find(|m| m.fstype == "cgroup" && m.super_options.iter().any(|o| o == controller))?;
        let own = &membership.iter().find(|(_, c, _)| c.iter().any(|x| x == controller))?.2;
        let dir = host_dir(mount, own)?;
        dir.join("cgroup.procs").exists().then_some(dir)
    };
    let memory = v1("memory")?;
    if !memory.join("memory.limit_in_bytes").exists() {
        return None;
    }
    Some(Hierarchy::V1 { memory, pids: v1("pids") })
}

/// Numbers run cgroups within this process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Run cgroups' names begin so. Not the `coreb-sandbox-<pid>-<n>` of earlier versions: a judge
/// of those, on the same host, would read a namespace number as a pid that is gone and remove a
/// live run's cgroup.
const PREFIX: &str = "coreb-run-";

/// This process's PID namespace, as the inode number of `/proc/self/ns/pid` (`pid:[N]`).
fn pid_namespace() -> u64 {
    std::fs::read_link("/proc/self/ns/pid")
        .ok()
        .and_then(|l| l.to_str()?.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok())
        .unwrap_or(0)
}

/// A run cgroup's name: `coreb-run-<pid namespace>-<pid>-<n>`.
fn run_name(namespace: u64, pid: u32, n: u64) -> String {
    format!("{PREFIX}{namespace}-{pid}-{n}")
}

/// The judge a run cgroup's name says made it: (pid namespace, pid); `None` for a name not
/// of this form (another program's cgroup, or an earlier version's `coreb-sandbox-<pid>-<n>`,
/// whose namespace is unknown: left where it is).
fn owner(name: &str) -> Option<(u64, u32)> {
    let mut parts = name.strip_prefix(PREFIX)?.split('-');
    let (namespace, pid, n) = (parts.next()?, parts.next()?, parts.next()?);
    n.parse::<u64>().ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some((namespace.parse().ok()?, pid.parse().ok()?))
}

impl Cgroups {
    /// The cgroups of this machine for this process, if any may be used; removes the run
    /// cgroups of judges that are gone.
    pub(crate) fn discover(parent: Option<&Path>, root: bool) -> Option<Cgroups> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let hierarchy = locate(&mountinfo, &membership, parent, root)?;
        let cgroups = Cgroups { hierarchy };
        let namespace = pid_namespace();
        for dir in cgroups.parents() {
            remove_stale(&dir, namespace, |pid| {
                pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
            });
        }
        Some(cgroups)
    }

    /// Which bound this gives.
    pub(crate) fn bound(&self) -> MemoryBound {
        match self.hierarchy {
            Hierarchy::V2 { .. } => MemoryBound::CgroupV2,
            Hierarchy::V1 { .. } => MemoryBound::CgroupV1,
        }
    }

    fn parents(&self) -> Vec<PathBuf> {
        match &self.hierarchy {
            Hierarchy::V2 { parent } => vec![parent.clone()],
            Hierarchy::V1 { memory, pids } => {
                std::iter::once(memory.clone()).chain(pids.clone()).collect()
            }
        }
    }

    /// Make the cgroup of one run, holding it to `memory_bytes` and `processes`.
    pub(crate) fn create(&self, memory_bytes: u64, processes: u64) -> std::io::Result<RunCgroup> {
        let namespace = pid_namespace();
        let dirs = make_own_dirs(&self.parents(), || {
            run_name(namespace, std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
        })?;
        // Removed when dropped, if a step below fails.
        let mut run = RunCgroup { dirs, procs: Vec::new(), hierarchy: self.hierarchy.clone() };
        let bytes = memory_bytes.to_string();
        let procs = processes.to_string();
        match &self.hierarchy {
            Hierarchy::V2 { .. } => {
                let dir = &run.dirs[0];
                write(&dir.join("memory.max"), &bytes)?;
                write_if_present(&dir.join("memory.swap.max"), "0")?;
                write(&dir.join("pids.max"), &procs)?;
                write_if_present(&dir.join("memory.oom.group"), "1")?;
            }
            Hierarchy::V1 { pids, .. } => {
                let dir = &run.dirs[0];
                write(&dir.join("memory.limit_in_bytes"), &bytes)?;
                // Only where swap is accounted; it must not be below the memory limit.
                let _ = write_if_present(&dir.join("memory.memsw.limit_in_bytes"), &bytes);
                if pids.is_some() {
                    write(&run.dirs[1].join("pids.max"), &procs)?;
                }
            }
        }
        for dir in &run.dirs {
            run.procs.push(
                fs_err::OpenOptions::new().write(true).open(dir.join("cgroup.procs"))?.into(),
            );
        }
        Ok(run)
    }
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    let mut f = fs_err::OpenOptions::new().write(true).open(path)?;
    f.write_all(value.as_bytes())
}

fn write_if_present(path: &Path, value: &str) -> std::io::Result<()> {
    if path.exists() { write(path, value) } else { Ok(()) }
}

/// Make a directory of one new name under every parent, none of which existed: a name
/// already taken under any parent (a killed judge's leftover) is skipped for the next one, so
/// that no run shares a cgroup another judge may remove.
fn make_own_dirs(
    parents: &[PathBuf],
    mut next_name: impl FnMut() -> String,
) -> std::io::Result<Vec<PathBuf>> {
    'names: for _ in 0..1000 {
        let name = next_name();
        let mut made = Vec::new();
        for parent in parents {
            let dir = parent.join(&name);
            match fs_err::create_dir(&dir) {
                Ok(()) => made.push(dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    for dir in made {
                        let _ = std::fs::remove_dir(dir);
                    }
                    continue 'names;
                }
                Err(e) => {
                    for dir in made {
                        let _ = std::fs::remove_dir(dir);
                    }
                    return Err(e);
                }
            }
        }
        return Ok(made);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!(
            "1,000 run cgroup names in a row were taken under {}",
            parents.first().map(|p| p.display().to_string()).unwrap_or_default()
        ),
    ))
}

/// Remove the empty run cgroups under `parent` left by judges of PID namespace `namespace`
/// that are gone (`alive` says whether a pid of that namespace is running).
fn remove_stale(parent: &Path, namespace: u64, alive: impl Fn(u32) -> bool) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let Some((ns, pid)) = entry.file_name().to_str().and_then(owner) else {
            continue;
        };
        if ns == namespace && !alive(pid) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// The cgroup of one run; removed when dropped.
#[derive(Debug)]
pub(crate) struct RunCgroup {
    dirs: Vec<PathBuf>,
    procs: Vec<File>,
    hierarchy: Hierarchy,
}

/// What the cgroup saw of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct CgroupReport {
    /// Peak memory of the run, bytes (when the kernel reports it).
    pub(crate) peak_bytes: Option<u64>,
    /// The kernel killed a process of the run for exceeding the memory bound.
    pub(crate) oom_killed: bool,
}

fn key_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
}

impl RunCgroup {
    /// The `cgroup.procs` descriptors the run's init writes `0` to.
    pub(crate) fn procs_fds(&self) -> Vec<RawFd> {
        self.procs.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// Read the run's figures (after every process of it has exited).
    pub(crate) fn report(&self) -> CgroupReport {
        let read =
            |name: &str| std::fs::read_to_string(self.dirs[0].join(name)).unwrap_or_default();
        match self.hierarchy {
            Hierarchy::V2 { .. } => CgroupReport {
                peak_bytes: read("memory.peak").trim().parse().ok(),
                oom_killed: key_value(&read("memory.events"), "oom_kill ").is_some_and(|n| n > 0),
            },
            Hierarchy::V1 { .. } => CgroupReport {
                peak_bytes: read("memory.max_usage_in_bytes").trim().parse().ok(),
                oom_killed: key_value(&read("memory.oom_control"), "oom_kill ")
                    .is_some_and(|n| n > 0),
            },
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.procs.clear();
        for dir in &self.dirs {
            // The run's processes are reaped before this; a cgroup whose last task is still
            // being torn down refuses removal for a moment.
            for attempt in 0..50 {
                match std::fs::remove_dir(dir) {
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt < 49 => {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                    _ => break,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
24 23 0:21 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755
30 24 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
31 24 0:28 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
33 24 0:30 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn parses_mountinfo_and_membership() {
        let mounts = parse_mountinfo(HYBRID);
        assert_eq!(mounts.len(), 4);
        assert_eq!(mounts[1].mount_point, PathBuf::from("/sys/fs/cgroup/memory"));
        assert_eq!(mounts[1].super_options, ["rw", "memory"]);
        let m = parse_proc_cgroup("4:memory:/process_api/abc\n8:pids:/\n0::/\n");
        assert_eq!(m[0], ("4".into(), vec!["memory".into()], PathBuf::from("/process_api/abc")));
        assert_eq!(m[2], ("0".into(), vec![], PathBuf::from("/")));
    }

    /// A fake cgroup tree under a temp dir, described by a mountinfo pointing into it.
    fn fake(v2_controllers: &str) -> (tempfile::TempDir, String) {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for (dir, files) in [
            ("memory/judges/me", vec!["cgroup.procs", "memory.limit_in_bytes"]),
            ("pids", vec!["cgroup.procs"]),
            ("unified/service", vec!["cgroup.procs"]),
        ] {
            std::fs::create_dir_all(r.join(dir)).unwrap();
            for f in files {
                std::fs::write(r.join(dir).join(f), "").unwrap();
            }
        }
        std::fs::write(r.join("unified/cgroup.subtree_control"), v2_controllers).unwrap();
        let info = format!(
            "30 24 0:27 / {0}/memory rw - cgroup cgroup rw,memory\n31 24 0:28 / {0}/pids rw - cgroup cgroup rw,pids\n33 24 0:30 / {0}/unified rw - cgroup2 cgroup2 rw\n",
            r.display()
        );
        (root, info)
    }

    #[test]
    fn delegated_v2_is_preferred_then_v1() {
        let membership = "4:memory:/judges/me\n8:pids:/\n0::/service\n";
        let (root, info) = fake("cpu memory pids\n");
        assert_eq!(
            locate(&info, membership, None, true),
            Some(Hierarchy::V2 { parent: root.path().join("unified") })
        );
        // v2 without the controllers delegated: v1 memory (the judge's own cgroup) and pids.
        let (root, info) = fake("cpu\n");
        assert_eq!(
            locate(&info, membership, None, true),
            Some(Hierarchy::V1 {
                memory: root.path().join("memory/judges/me"),
                pids: Some(root.path().join("pids"))
            })
        );
        // An explicit v2 parent without the controllers does not count either.
        assert!(matches!(
            locate(&info, membership, Some(&root.path().join("unified")), true),
            Some(Hierarchy::V1 { .. })
        ));
        // v1 is for root only; nothing usable at all.
        assert_eq!(locate(&info, membership, None, false), None);
        assert_eq!(locate("", "0::/\n", None, true), None);
    }

    #[test]
    fn run_names_carry_their_judges_namespace_and_pid() {
        assert_eq!(run_name(4026531836, 1234, 7), "coreb-run-4026531836-1234-7");
        assert_eq!(owner("coreb-run-4026531836-1234-7"), Some((4026531836, 1234)));
        // Earlier versions' names, other programs' cgroups: nobody's to remove.
        assert_eq!(owner("coreb-sandbox-1234-7"), None);
        assert_eq!(owner("coreb-sandbox-4026531836-1234-7"), None);
        assert_eq!(owner("coreb-run-1-2-3-4"), None);
        assert_eq!(owner("system.slice"), None);
        assert!(pid_namespace() > 0, "/proc/self/ns/pid reads as pid:[N]");
    }

    #[test]
    fn a_taken_name_is_skipped_never_shared() {
        let root = tempfile::tempdir().unwrap();
        let parents = [root.path().join("memory"), root.path().join("pids")];
        for p in &parents {
            std::fs::create_dir(p).unwrap();
        }
        // A killed judge left `…-5` in the pids hierarchy only, and `…-6` in both.
        std::fs::create_dir(parents[1].join(run_name(1, 2, 5))).unwrap();
        for p in &parents {
            std::fs::create_dir(p.join(run_name(1, 2, 6))).unwrap();
        }
        let mut n = 4;
        let mut next = || {
            n += 1;
            run_name(1, 2, n)
        };
        let dirs = make_own_dirs(&parents, &mut next).unwrap();
        assert_eq!(dirs, parents.each_ref().map(|p| p.join(run_name(1, 2, 7))));
        // The half-made `…-5` of the memory hierarchy was taken back.
        assert!(!parents[0].join(run_name(1, 2, 5)).exists());
        assert!(parents[1].join(run_name(1, 2, 5)).exists());
    }

    #[test]
    fn only_leftovers_of_gone_judges_of_this_namespace_are_removed() {
        let root = tempfile::tempdir().unwrap();
        let parent = root.path();
        let names = [
            run_name(10, 100, 0),             // this namespace, judge gone: removed
            run_name(10, 200, 0),             // this namespace, judge running: kept
            run_name(11, 100, 0),             // another namespace: its pids mean nothing here, kept
            "coreb-sandbox-100-0".to_owned(), // an earlier version's name: kept
            "other".to_owned(),
        ];
        for name in &names {
            std::fs::create_dir(parent.join(name)).unwrap();
        }
        remove_stale(parent, 10, |pid| pid == 200);
        let left: Vec<bool> = names.iter().map(|n| parent.join(n).exists()).collect();
        assert_eq!(left, [false, true, true, true, true]);
    }

    #[test]
    fn reads_v1_and_v2_figures() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_owned();
        std::fs::write(d.join("memory.max_usage_in_bytes"), "1048576\n").unwrap();
        std::fs::write(
            d.join("memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
        )
        .unwrap();
        std::fs::write(d.join("memory.peak"), "2097152\n").unwrap();
        std::fs::write(d.join("memory.events"), "low 0\nhigh 0\nmax 5\noom 1\noom_kill 0\n")
            .unwrap();
        let v1 = RunCgroup {
            dirs: vec![d.clone()],
            procs: vec![],
            hierarchy: Hierarchy::V1 { memory: d.clone(), pids: None },
        };
        assert_eq!(v1.report(), CgroupReport { peak_bytes: Some(1 << 20), oom_killed: true });
        std::mem::forget(v1);
        let v2 = RunCgroup {
            dirs: vec![d.clone()],
            procs: vec![],
            hierarchy: Hierarchy::V2 { parent: d.clone() },
        };
        assert_eq!(v2.report(), CgroupReport { peak_bytes: Some(2 << 20), oom_killed: false });
        std::mem::forget(v2);
    }
}
