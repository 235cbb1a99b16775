//! The sandbox: runs one untrusted program with limits and no way out, and reports how it
//! ended. [`Sandbox::run`] takes a [`Program`] (argv, environment, stdin, one host directory)
//! and [`Limits`], and returns an [`Outcome`] (exit status, captured output, wall and CPU time,
//! peak memory, which limit was hit).
//!
//! Isolation of every run (see [`Isolation`]):
//! - fresh network, mount, IPC and UTS namespaces: no network at all (not even loopback is up);
//! - a private, size-capped tmpfs over `/tmp` (and `/dev/shm`, `/var/tmp`): the program sees
//!   its own directory at [`BOX_DIR`] (read-only for test runs, writable for compiles) and a
//!   private scratch directory [`WORK_DIR`], and nothing of other runs; configured directories
//!   (`/home`, `/root`, …) are hidden behind empty read-only mounts;
//! - as root (how these machines run), the program runs as a uid of its own, leased from a
//!   pool so that no two concurrent runs share one, with `no_new_privs`: RLIMIT_NPROC then
//!   really bounds processes and threads, nothing outside its directory is writable and
//!   root-only files (`/etc/shadow`) are unreadable. After the run every process of that uid
//!   is killed, including ones that left the process group;
//! - unprivileged callers get a user namespace instead (weaker: RLIMIT_NPROC counts all the
//!   caller's processes, so it is not set; straggler processes are killed through the process
//!   group only);
//! - rlimits: CPU time, data segment (memory), optionally address space, processes/threads,
//!   open files, file size, stack, no core dumps; a wall-clock timer and an output cap that
//!   kill everything on expiry.
//!
//! Memory is bounded by RLIMIT_DATA (heap, anonymous private mappings, thread stacks); shared
//! anonymous mappings escape it, and files written to the private tmpfs count against the
//! tmpfs size instead. Peak memory is wait4's `ru_maxrss`.
//!
//! What it does NOT do: decide verdicts or compare outputs (the `execute` stage does), use
//! cgroups (the machines this was built on have a hybrid cgroup v1 layout whose memory
//! controller belongs to the supervisor and no writable cgroup v2; the uid pool and rlimits
//! bound processes and memory without one), hide other processes (no PID namespace: `/proc`
//! shows them, but signalling or tracing them needs their uid), or filter system calls (no
//! seccomp). Uid claims are `flock`ed files `coreb-sandbox-uid-<uid>.lock` in the temp dir.

mod child;

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use child::{Bind, ChildSetup, Identity, kill_uid, uid_has_processes};

/// Where the program's own directory appears inside the sandbox.
pub const BOX_DIR: &str = "/tmp/box";
/// Where [`Program::cache`] appears inside the sandbox.
pub const CACHE_DIR: &str = "/tmp/cache";
/// The program's private scratch directory inside the sandbox (its cwd for test runs).
pub const WORK_DIR: &str = "/tmp/work";

/// A readable pipe end.
trait ReadFd: Read + std::os::fd::AsRawFd + Send {}
impl<T: Read + std::os::fd::AsRawFd + Send> ReadFd for T {}

/// The descriptor number the child holds its directory at while binding it (above stdio and
/// anything std keeps open across the fork).
const BOX_FD: i32 = 1000;

/// Errors of the sandbox itself (not of the judged program, whose failures are [`Outcome`]s).
#[derive(Debug, Error)]
pub enum SandboxError {
    /// The program could not be started (missing interpreter, namespace setup refused, …).
    #[error("starting `{program}` in the sandbox")]
    Spawn {
        /// argv\[0\].
        program: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A host path could not be prepared.
    #[error("`{}`", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The program description is unusable.
    #[error("invalid program: {0}")]
    Invalid(String),
    /// Waiting for the program failed.
    #[error("waiting for `{program}`")]
    Wait {
        /// argv\[0\].
        program: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Resource limits of one run. Sizes in MiB unless the name says bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// CPU time (user + system), ms; SIGXCPU then SIGKILL.
    pub cpu_time_ms: u64,
    /// Wall-clock time, ms; everything is killed at expiry.
    pub wall_time_ms: u64,
    /// Memory, as RLIMIT_DATA (private writable mappings: heap, anonymous mmap, thread
    /// stacks). Unlike RLIMIT_AS it leaves the JVM's and Go's address-space reservations alone.
    pub memory_mb: u64,
    /// Optional RLIMIT_AS (virtual address space); off by default.
    pub address_space_mb: Option<u64>,
    /// Processes and threads of the run (RLIMIT_NPROC on the run's own uid).
    pub processes: u64,
    /// Open file descriptors.
    pub open_files: u64,
    /// Bytes of stdout (and, separately, of stderr) before the run is killed.
    pub output_bytes: u64,
    /// Largest file the program may write (RLIMIT_FSIZE), bytes.
    pub file_size_bytes: u64,
    /// Size of the private tmpfs (`/tmp`, holding the scratch directory).
    pub tmp_size_mb: u64,
    /// Stack size (RLIMIT_STACK).
    pub stack_mb: u64,
}

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

/// Whether the program may write its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirAccess {
    /// Read-only (test runs of a compiled solution).
    ReadOnly,
    /// Writable (the compile step writes its binary there).
    Writable,
}

/// One program to run.
#[derive(Debug, Clone)]
pub struct Program {
    /// The command; paths inside the sandbox (the directory is at [`BOX_DIR`]).
    pub argv: Vec<String>,
    /// The whole environment (nothing is inherited).
    pub env: Vec<(String, String)>,
    /// Bytes fed on stdin.
    pub stdin: Vec<u8>,
    /// The host directory shown at [`BOX_DIR`].
    pub dir: PathBuf,
    /// Read-only or writable; writable runs start in [`BOX_DIR`], others in [`WORK_DIR`].
    pub access: DirAccess,
    /// A host directory shared between runs, shown writable at [`CACHE_DIR`] (a compiler
    /// cache such as Go's `GOCACHE`). Runs with a cache create files world-writable (umask 0)
    /// so that the next run, under another uid, can use them. Never give one to test runs.
    pub cache: Option<PathBuf>,
}

/// How a program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ExitStatus {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

/// A limit the sandbox enforced by killing the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LimitHit {
    /// The wall-clock timer expired.
    WallTime,
    /// CPU time ran out (SIGXCPU/SIGKILL from RLIMIT_CPU).
    CpuTime,
    /// More output than [`Limits::output_bytes`].
    Output,
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Exit code or signal.
    pub status: ExitStatus,
    /// Captured stdout (at most the output cap).
    pub stdout: Vec<u8>,
    /// Captured stderr (at most the output cap).
    pub stderr: Vec<u8>,
    /// Wall-clock time, ms.
    pub wall_ms: u64,
    /// User + system CPU time of the program and the children it waited for, ms.
    pub cpu_ms: u64,
    /// Peak resident memory (wait4 `ru_maxrss`), KiB.
    pub peak_memory_kb: u64,
    /// The limit that ended the run, if any.
    pub limit: Option<LimitHit>,
}

impl Outcome {
    /// Exited with code 0 and hit no limit.
    pub fn success(&self) -> bool {
        self.status == ExitStatus::Exited(0) && self.limit.is_none()
    }
}

/// `[stages.execute.sandbox]`: how runs are isolated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// First uid of the pool used when running as root (each concurrent run gets its own).
    pub uid_base: u32,
    /// Size of the uid pool = most concurrent runs.
    pub uid_count: u32,
    /// Host directories hidden behind an empty read-only mount (missing ones are skipped).
    pub hidden_paths: Vec<PathBuf>,
    /// World-writable host directories replaced by a private tmpfs (missing ones are skipped).
    pub scratch_paths: Vec<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            uid_base: 1_990_000_000,
            uid_count: 256,
            hidden_paths: ["/home", "/root", "/mnt", "/media", "/srv", "/work", "/var/log", "/var/mail", "/var/spool"]
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            scratch_paths: ["/dev/shm", "/var/tmp", "/run/lock"].into_iter().map(PathBuf::from).collect(),
        }
    }
}

/// The isolation a sandbox achieves on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Isolation {
    /// Running as root: new net/mount/IPC/UTS namespaces, a leased unprivileged uid per run,
    /// RLIMIT_NPROC binding, kill-by-uid cleanup.
    RootUidPool {
        /// First uid.
        uid_base: u32,
        /// Pool size.
        uid_count: u32,
    },
    /// Unprivileged: new user/net/mount/IPC/UTS namespaces; no process-count limit.
    UserNamespace,
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Isolation::RootUidPool { uid_base, uid_count } => write!(
                f,
                "namespaces net+mount+ipc+uts, uid {uid_base}..{} per run, RLIMIT_NPROC, private tmpfs",
                uid_base + uid_count - 1
            ),
            Isolation::UserNamespace => {
                f.write_str("namespaces user+net+mount+ipc+uts, private tmpfs; no process limit (not root)")
            }
        }
    }
}

/// The sandbox service: cheap to share across threads (`&Sandbox` is `Sync`).
pub struct Sandbox {
    isolation: Isolation,
    config: SandboxConfig,
}

/// The uids this process has claimed. A uid is claimed by holding an exclusive `flock` on
/// `<tmp>/coreb-sandbox-uid-<uid>.lock` for the life of the process, so that two judges on one
/// machine (parallel test binaries, two builds) never share one: killing "every process of my
/// uid" must never reach another judge's run.
struct UidPool {
    /// Claimed and idle.
    free: Vec<u32>,
    /// Claimed, idle, but processes of a past run (or their zombies) may remain.
    quarantine: Vec<u32>,
    /// Lock files held (never closed while the process lives).
    held: Vec<(u32, std::fs::File)>,
}

static POOL: Mutex<UidPool> = Mutex::new(UidPool { free: Vec::new(), quarantine: Vec::new(), held: Vec::new() });
static UID_RETURNED: Condvar = Condvar::new();

impl UidPool {
    /// Claim a new uid in `base..base+count` not held by this or any other process.
    fn claim(&mut self, base: u32, count: u32) -> Option<u32> {
        use std::os::fd::AsRawFd;
        for uid in (0..count).map(|i| base.saturating_add(i)) {
            if self.held.iter().any(|(u, _)| *u == uid) {
                continue;
            }
            let path = std::env::temp_dir().join(format!("coreb-sandbox-uid-{uid}.lock"));
            let Ok(file) = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path) else {
                continue;
            };
            // SAFETY: a valid open descriptor.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                self.held.push((uid, file));
                return Some(uid);
            }
        }
        None
    }
}

/// A leased uid, returned to the pool on drop (to quarantine when `dirty`).
struct UidLease {
    uid: u32,
    /// Processes of the run were still around after it ended.
    dirty: bool,
}

impl Drop for UidLease {
    fn drop(&mut self) {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if self.dirty {
            pool.quarantine.push(self.uid);
        } else {
            pool.free.push(self.uid);
        }
        UID_RETURNED.notify_all();
    }
}

fn cstring(s: &str) -> Result<CString, SandboxError> {
    CString::new(s).map_err(|_| SandboxError::Invalid(format!("NUL byte in `{s}`")))
}

fn path_cstring(p: &Path) -> Result<CString, SandboxError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| SandboxError::Invalid(format!("NUL byte in `{}`", p.display())))
}

impl Sandbox {
    /// A sandbox for this machine: root → uid pool, otherwise a user namespace. Runs a probe
    /// (`/bin/sh -c 'exit 0'`) so that a machine where namespaces are refused fails here,
    /// once, with a clear error.
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if config.uid_count == 0 {
            return Err(SandboxError::Invalid("`uid_count` must be at least 1".into()));
        }
        let isolation = if root {
            Isolation::RootUidPool { uid_base: config.uid_base, uid_count: config.uid_count }
        } else {
            Isolation::UserNamespace
        };
        let sandbox = Sandbox { isolation, config };
        let probe_dir = tempfile::Builder::new()
            .prefix("coreb-sandbox-probe-")
            .tempdir()
            .map_err(|source| SandboxError::Io { path: std::env::temp_dir(), source })?;
        let probe = Program {
            argv: vec!["/bin/sh".into(), "-c".into(), "exit 0".into()],
            env: vec![],
            stdin: vec![],
            dir: probe_dir.path().to_owned(),
            access: DirAccess::ReadOnly,
            cache: None,
        };
        let outcome = sandbox.run(&probe, &Limits::default())?;
        if !outcome.success() {
            return Err(SandboxError::Spawn {
                program: "/bin/sh".into(),
                source: std::io::Error::other(format!(
                    "sandbox probe failed: {:?}: {}",
                    outcome.status,
                    String::from_utf8_lossy(&outcome.stderr)
                )),
            });
        }
        Ok(sandbox)
    }

    /// The isolation this sandbox achieves.
    pub fn isolation(&self) -> &Isolation {
        &self.isolation
    }

    fn lease(&self) -> Result<UidLease, SandboxError> {
        let (base, count) = (self.config.uid_base, self.config.uid_count);
        let in_range = |u: &u32| (base..base.saturating_add(count)).contains(u);
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        // Other judges (parallel builds, test binaries) release their uids when they exit:
        // wait a while for one before giving up.
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(i) = pool.free.iter().position(in_range) {
                return Ok(UidLease { uid: pool.free.swap_remove(i), dirty: false });
            }
            // Reuse a quarantined uid once nothing of it is left (zombies count against
            // RLIMIT_NPROC until the machine's init reaps them) before claiming a new one, so
            // that one judge never holds more uids than it needs and starves the others.
            if let Some(i) = pool.quarantine.iter().position(|u| in_range(u) && !uid_has_processes(*u)) {
                return Ok(UidLease { uid: pool.quarantine.swap_remove(i), dirty: false });
            }
            if let Some(uid) = pool.claim(base, count) {
                return Ok(UidLease { uid, dirty: false });
            }
            if !pool.held.iter().any(|(u, _)| in_range(u)) && std::time::Instant::now() >= deadline {
                return Err(SandboxError::Invalid(format!(
                    "every uid in {base}..{} is held by other processes",
                    base.saturating_add(count)
                )));
            }
            pool = UID_RETURNED.wait_timeout(pool, Duration::from_millis(100)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    fn setup(&self, program: &Program, limits: &Limits, uid: Option<u32>) -> Result<ChildSetup, SandboxError> {
        let identity = match uid {
            Some(uid) => Identity::Root { uid },
            None => {
                // SAFETY: no preconditions.
                let (u, g) = unsafe { (libc::getuid(), libc::getgid()) };
                Identity::UserNamespace { uid_map: cstring(&format!("0 {u} 1"))?, gid_map: cstring(&format!("0 {g} 1"))? }
            }
        };
        let existing = |paths: &[PathBuf]| -> Result<Vec<CString>, SandboxError> {
            paths.iter().filter(|p| p.is_dir()).map(|p| path_cstring(p)).collect()
        };
        let mib = |n: u64| n.saturating_mul(1 << 20);
        let cpu_s = limits.cpu_time_ms.div_ceil(1000).max(1);
        let same = |resource, value: u64| (resource, value, value);
        // CPU: SIGXCPU at the soft limit, SIGKILL one second later for programs that catch it.
        let mut rlimits = vec![
            (libc::RLIMIT_CPU, cpu_s, cpu_s + 1),
            same(libc::RLIMIT_DATA, mib(limits.memory_mb)),
            same(libc::RLIMIT_NOFILE, limits.open_files),
            same(libc::RLIMIT_FSIZE, limits.file_size_bytes),
            same(libc::RLIMIT_STACK, mib(limits.stack_mb)),
            same(libc::RLIMIT_CORE, 0),
        ];
        if let Some(a) = limits.address_space_mb {
            rlimits.push(same(libc::RLIMIT_AS, mib(a)));
        }
        if uid.is_some() {
            rlimits.push(same(libc::RLIMIT_NPROC, limits.processes));
        }
        let mut binds = vec![Bind {
            host: path_cstring(&program.dir)?,
            fd: BOX_FD,
            source: cstring(&format!("/proc/self/fd/{BOX_FD}"))?,
            target: cstring(BOX_DIR)?,
            writable: program.access == DirAccess::Writable,
        }];
        if let Some(cache) = &program.cache {
            binds.push(Bind {
                host: path_cstring(cache)?,
                fd: BOX_FD + 1,
                source: cstring(&format!("/proc/self/fd/{}", BOX_FD + 1))?,
                target: cstring(CACHE_DIR)?,
                writable: true,
            });
        }
        let cwd = match program.access {
            DirAccess::Writable => BOX_DIR,
            DirAccess::ReadOnly => WORK_DIR,
        };
        Ok(ChildSetup {
            identity,
            binds,
            open_umask: program.cache.is_some(),
            work_dir: cstring(WORK_DIR)?,
            cwd: cstring(cwd)?,
            tmp: cstring("/tmp")?,
            tmp_options: cstring(&format!("size={}m,nr_inodes=16384,mode=1777", limits.tmp_size_mb.max(1)))?,
            scratch: existing(&self.config.scratch_paths)?,
            hidden: existing(&self.config.hidden_paths)?,
            hidden_options: cstring("size=4k,nr_inodes=16,mode=0755")?,
            tmpfs: cstring("tmpfs")?,
            root: cstring("/")?,
            deny: cstring("deny")?,
            proc_paths: [cstring("/proc/self/setgroups")?, cstring("/proc/self/uid_map")?, cstring("/proc/self/gid_map")?],
            rlimits,
        })
    }

    /// Run one program to completion (or to a limit) and report how it ended.
    ///
    /// Errors are failures of the sandbox itself (the program could not be started); a program
    /// that crashes, times out or floods its output is an `Ok(Outcome)`.
    pub fn run(&self, program: &Program, limits: &Limits) -> Result<Outcome, SandboxError> {
        // A uid still holding processes of an earlier run fails exec with EAGAIN; it is then
        // quarantined and the run retried under another.
        let mut attempt = 0;
        loop {
            match self.run_once(program, limits) {
                Err(SandboxError::Spawn { source, .. }) if source.raw_os_error() == Some(libc::EAGAIN) && attempt < 3 => {
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    fn run_once(&self, program: &Program, limits: &Limits) -> Result<Outcome, SandboxError> {
        let Some(argv0) = program.argv.first() else {
            return Err(SandboxError::Invalid("empty argv".into()));
        };
        let mut lease = match self.isolation {
            Isolation::RootUidPool { .. } => Some(self.lease()?),
            Isolation::UserNamespace => None,
        };
        let uid = lease.as_ref().map(|l| l.uid);
        let io_err = |source| SandboxError::Io { path: program.dir.clone(), source };
        if let (Some(uid), DirAccess::Writable) = (uid, program.access) {
            std::os::unix::fs::chown(&program.dir, Some(uid), Some(uid)).map_err(io_err)?;
        }
        for dir in std::iter::once(&program.dir).chain(&program.cache) {
            if !dir.is_dir() {
                let source = std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory");
                return Err(SandboxError::Io { path: dir.clone(), source });
            }
        }
        let setup = self.setup(program, limits, uid)?;

        let mut cmd = Command::new(argv0);
        cmd.args(&program.argv[1..])
            .env_clear()
            .envs(program.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // SAFETY: `apply` only makes async-signal-safe system calls on prepared data.
        unsafe {
            cmd.pre_exec(move || setup.apply());
        }
        let start = Instant::now();
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(source) => {
                // EAGAIN: the uid is over RLIMIT_NPROC (leftovers of a past run): quarantine it.
                if let Some(lease) = lease.as_mut() {
                    lease.dirty = source.raw_os_error() == Some(libc::EAGAIN);
                }
                return Err(SandboxError::Spawn { program: argv0.clone(), source });
            }
        };
        let pid = child.id() as libc::pid_t;

        let reaped = AtomicBool::new(false);
        let kill_all = || {
            if !reaped.load(Ordering::SeqCst) {
                // SAFETY: the group exists until the child is reaped, which has not happened.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
            if let Some(uid) = uid {
                let _ = kill_uid(uid);
            }
        };
        let output_hit = AtomicBool::new(false);
        // Set once the program is reaped: readers stop soon after even if a pipe stays open.
        let drain_until = OnceLock::<Instant>::new();
        let cap = limits.output_bytes;
        let (mut stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (tx, rx) = mpsc::channel();

        let result = std::thread::scope(|scope| {
            let input = &program.stdin;
            scope.spawn(move || {
                if let Some(mut w) = stdin.take() {
                    let _ = w.write_all(input);
                }
            });
            let read_capped = |stream: Option<Box<dyn ReadFd>>| {
                let mut kept = Vec::new();
                let Some(mut r) = stream else { return kept };
                let mut buf = [0u8; 64 * 1024];
                let mut total: u64 = 0;
                loop {
                    // Poll, so that a pipe held open by a straggler that escaped the kill
                    // (possible only without the uid pool) cannot block the judge.
                    let mut pfd = libc::pollfd { fd: r.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                    // SAFETY: one valid pollfd.
                    let ready = unsafe { libc::poll(&mut pfd, 1, 50) };
                    if ready == 0 {
                        if drain_until.get().is_some_and(|t| Instant::now() > *t) {
                            break;
                        }
                        continue;
                    }
                    match r.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            total += n as u64;
                            if total > cap {
                                let room = cap.saturating_sub(kept.len() as u64) as usize;
                                kept.extend_from_slice(&buf[..room.min(n)]);
                                if !output_hit.swap(true, Ordering::SeqCst) {
                                    kill_all();
                                }
                                // Keep draining so that nothing blocks on a full pipe.
                            } else {
                                kept.extend_from_slice(&buf[..n]);
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                kept
            };
            let out = scope.spawn(move || read_capped(stdout.map(|s| Box::new(s) as Box<dyn ReadFd>)));
            let err = scope.spawn(move || read_capped(stderr.map(|s| Box::new(s) as Box<dyn ReadFd>)));
            scope.spawn(move || {
                let mut status = 0;
                // SAFETY: an all-zero rusage is valid.
                let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
                let r = loop {
                    // SAFETY: valid pointers; `pid` is our unreaped child.
                    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
                    if r == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    break r;
                };
                let _ = tx.send((r, status, usage, std::io::Error::last_os_error()));
            });
            let wall = Duration::from_millis(limits.wall_time_ms);
            let (waited, timed_out) = match rx.recv_timeout(wall) {
                Ok(w) => (Some(w), false),
                Err(_) => {
                    kill_all();
                    (rx.recv().ok(), true)
                }
            };
            let wall_ms = start.elapsed().as_millis() as u64;
            reaped.store(true, Ordering::SeqCst);
            let _ = drain_until.set(Instant::now() + Duration::from_millis(250));
            // Stragglers (background children) would keep the pipes open.
            let dirty = uid.is_some_and(kill_uid);
            let stdout = out.join().unwrap_or_default();
            let stderr = err.join().unwrap_or_default();
            (waited, timed_out, wall_ms, stdout, stderr, dirty)
        });
        let (waited, timed_out, wall_ms, stdout, stderr, dirty) = result;
        if let Some(lease) = lease.as_mut() {
            lease.dirty = dirty;
        }
        let Some((r, status, usage, wait_err)) = waited else {
            return Err(SandboxError::Wait { program: argv0.clone(), source: std::io::Error::other("waiter thread vanished") });
        };
        if r == -1 {
            return Err(SandboxError::Wait { program: argv0.clone(), source: wait_err });
        }
        if let (Some(_), DirAccess::Writable) = (uid, program.access) {
            // Hand the directory (and what the program wrote) back to the judge, so a later
            // run that reuses this uid cannot change it.
            chown_tree(&program.dir).map_err(io_err)?;
        }
        drop(lease);

        let status = if libc::WIFSIGNALED(status) {
            ExitStatus::Signaled(libc::WTERMSIG(status))
        } else {
            ExitStatus::Exited(libc::WEXITSTATUS(status))
        };
        let ms = |t: libc::timeval| t.tv_sec as u64 * 1000 + t.tv_usec as u64 / 1000;
        let cpu_ms = ms(usage.ru_utime) + ms(usage.ru_stime);
        // RLIMIT_CPU counts in whole seconds on the kernel's tick; rusage is finer, so allow
        // a little slack when deciding that a SIGKILL came from the hard CPU limit.
        let cpu_limit_ms = limits.cpu_time_ms.div_ceil(1000).max(1) * 1000;
        let cpu_killed = matches!(status, ExitStatus::Signaled(s) if s == libc::SIGXCPU)
            || (matches!(status, ExitStatus::Signaled(s) if s == libc::SIGKILL) && cpu_ms + 100 >= cpu_limit_ms);
        let limit = if output_hit.load(Ordering::SeqCst) {
            Some(LimitHit::Output)
        } else if timed_out {
            Some(LimitHit::WallTime)
        } else if cpu_killed {
            Some(LimitHit::CpuTime)
        } else {
            None
        };
        Ok(Outcome { status, stdout, stderr, wall_ms, cpu_ms, peak_memory_kb: usage.ru_maxrss.max(0) as u64, limit })
    }
}

/// `chown -R root:root` (the judge's own uid) of a directory tree, without following links.
fn chown_tree(dir: &Path) -> std::io::Result<()> {
    // SAFETY: no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    std::os::unix::fs::lchown(dir, Some(uid), Some(gid))?;
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        std::os::unix::fs::lchown(&path, Some(uid), Some(gid))?;
        if entry.file_type()?.is_dir() {
            chown_tree(&path)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(sandbox: &Sandbox, dir: &Path, script: &str, limits: &Limits) -> Outcome {
        let program = Program {
            argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            stdin: b"hello\n".to_vec(),
            dir: dir.to_owned(),
            access: DirAccess::ReadOnly,
            cache: None,
        };
        sandbox.run(&program, limits).unwrap()
    }

    #[test]
    fn runs_reads_stdin_and_reports() {
        let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let out = sh(&sandbox, dir.path(), "cat; echo err >&2; exit 3", &Limits::default());
        assert_eq!(out.status, ExitStatus::Exited(3));
        assert_eq!(out.stdout, b"hello\n");
        assert_eq!(out.stderr, b"err\n");
        assert_eq!(out.limit, None);
    }

    #[test]
    fn wall_limit_kills_background_children_too() {
        let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits { wall_time_ms: 300, ..Limits::default() };
        let out = sh(&sandbox, dir.path(), "(setsid sleep 30 &) ; sleep 30", &limits);
        assert_eq!(out.limit, Some(LimitHit::WallTime));
        assert!(out.wall_ms < 5_000, "{}", out.wall_ms);
    }

    #[test]
    fn output_cap() {
        let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits { output_bytes: 1000, ..Limits::default() };
        let out = sh(&sandbox, dir.path(), "yes", &limits);
        assert_eq!(out.limit, Some(LimitHit::Output));
        assert_eq!(out.stdout.len(), 1000);
    }
}
