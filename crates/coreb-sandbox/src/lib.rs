//! `coreb-sandbox`: runs one untrusted program with limits and no way out, and reports how it
//! ended. [`Sandbox::run`] takes a [`Program`] (argv, environment, stdin, one host directory)
//! and [`Limits`], and returns an [`Outcome`] (exit status, captured output, wall and CPU time,
//! peak memory, which limit was hit, which memory bound held).
//!
//! Every run gets (the README beside this crate states the threat model and what each layer
//! stops):
//! - fresh PID, mount, network, IPC and UTS namespaces (and a user namespace when the judge is
//!   not root). The PID namespace's init is the sandbox's own: it reaps every orphan, and when
//!   the program ends — or the judge dies — it exits and the kernel kills everything left;
//! - a filesystem built as an allowlist ([`SandboxConfig::visible_paths`], read-only) on an
//!   empty root, plus its own `/dev`, `/proc` and `/tmp` (its directory at [`BOX_DIR`], a
//!   scratch directory at [`WORK_DIR`]);
//! - as root, a uid of its own from a validated pool; the program runs with no capabilities,
//!   `no_new_privs`, in a new session (no controlling terminal);
//! - a memory bound for the run as a whole — a cgroup (v2 where delegated, else v1) — or,
//!   where no cgroup may be used, the documented fallback: RLIMIT_AS per process times the
//!   process cap ([`MemoryBound`]);
//! - rlimits (CPU, data, processes, files, file size, stack, no core dumps), a wall-clock timer
//!   and an output cap.
//!
//! stdin is fed and stdout/stderr are read by one poll loop on the calling thread, so
//! multi-megabyte input and output neither deadlock nor need helper threads.
//!
//! What it does NOT do: decide verdicts or compare outputs (the caller does), filter system
//! calls (no seccomp), or hide the kernel itself: a kernel exploit is out of scope.
//!
//! All `unsafe` code of the crate is in the `sys` module.
//!
//! ```no_run
//! use coreb_sandbox::{DirAccess, Limits, Program, Sandbox, SandboxConfig};
//! let sandbox = Sandbox::new(SandboxConfig::default())?;
//! let dir = tempfile::tempdir()?;
//! let program = Program {
//!     argv: vec!["/bin/sh".into(), "-c".into(), "cat".into()],
//!     env: vec![("PATH".into(), "/usr/bin:/bin".into())],
//!     stdin: b"hello\n",
//!     dir: dir.path(),
//!     access: DirAccess::ReadOnly,
//!     cache: None,
//! };
//! let outcome = sandbox.run(&program, &Limits::default())?;
//! assert_eq!(outcome.stdout, b"hello\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]
#![deny(unsafe_code)]

mod busy;
mod cgroup;
mod config;
#[allow(unsafe_code)]
mod hook;
mod plan;
#[allow(unsafe_code)]
mod sys;
mod uid;
mod view;

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use thiserror::Error;

pub use busy::BusySlots;
pub use config::{Accounts, CgroupMode, Limits, SandboxConfig};

use busy::IdleWatch;
use cgroup::{CgroupReport, Cgroups};
use sys::{Exec, Init, Reexec, Report, UserMaps};
use view::View;

/// Where the program's own directory appears inside the sandbox.
pub const BOX_DIR: &str = "/tmp/box";
/// Where [`Program::cache`] appears inside the sandbox.
pub const CACHE_DIR: &str = "/tmp/cache";
/// The program's private scratch directory inside the sandbox (its cwd for read-only runs).
pub const WORK_DIR: &str = "/tmp/work";

/// The uid (and gid) a program has inside the user namespace of unprivileged runs.
const INSIDE_UID: u32 = 1000;

/// Errors of the sandbox itself (not of the judged program, whose failures are [`Outcome`]s).
#[derive(Debug, Error)]
pub enum SandboxError {
    /// The program could not be started (`execve` failed: missing interpreter, …).
    #[error("starting `{program}` in the sandbox")]
    Spawn {
        /// argv\[0\].
        program: String,
        /// The cause (`NotFound` for a missing program).
        #[source]
        source: std::io::Error,
    },
    /// A step of building the sandbox failed (namespaces refused, a mount, …).
    #[error("setting up the sandbox: {step}")]
    Setup {
        /// What was being done.
        step: String,
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
    /// The configuration would weaken the sandbox, or is unusable.
    #[error("sandbox configuration: {0}")]
    Config(String),
    /// The program description is unusable.
    #[error("invalid program: {0}")]
    Invalid(String),
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
pub struct Program<'a> {
    /// The command; paths inside the sandbox (the directory is at [`BOX_DIR`]). A name
    /// without `/` is looked up along the `PATH` of `env`.
    pub argv: Vec<String>,
    /// The whole environment (nothing is inherited).
    pub env: Vec<(String, String)>,
    /// Bytes fed on stdin (borrowed: a test's input is never copied).
    pub stdin: &'a [u8],
    /// The host directory shown at [`BOX_DIR`].
    pub dir: &'a Path,
    /// Read-only or writable; writable runs start in [`BOX_DIR`], others in [`WORK_DIR`].
    pub access: DirAccess,
    /// A host directory shared between runs, shown writable at [`CACHE_DIR`] (a compiler
    /// cache such as Go's `GOCACHE`). Runs with a cache create files world-writable (umask 0)
    /// so that the next run, under another uid, can use them. Never give one to test runs.
    pub cache: Option<&'a Path>,
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
    /// The run's cgroup ran out of memory and the kernel killed it.
    Memory,
}

/// What held the memory of a run.
pub use coreb_base::bound::MemoryBound;

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
    /// User + system CPU time of every process of the run, ms.
    pub cpu_ms: u64,
    /// Peak memory, KiB: of the whole run from its cgroup, else the largest `ru_maxrss` of
    /// its processes (never below [`memory_floor_kb`](Self::memory_floor_kb)).
    pub peak_memory_kb: u64,
    /// Without a cgroup, `ru_maxrss` counts the resident memory the program's process had
    /// before `execve` (a copy of the judge's): a peak at or below this says only "at most
    /// this". 0 with a cgroup.
    pub memory_floor_kb: u64,
    /// The limit that ended the run, if any.
    pub limit: Option<LimitHit>,
    /// What bounded the run's memory.
    pub memory_bound: MemoryBound,
    /// Whether the run gave its busy slot back before it ended, having waited for a whole
    /// window ([`Sandbox::run_sharing`]); always false for [`Sandbox::run`].
    pub gave_way: bool,
}

impl Outcome {
    /// Exited with code 0 and hit no limit.
    pub fn success(&self) -> bool {
        self.status == ExitStatus::Exited(0) && self.limit.is_none()
    }
}

/// Who the program runs as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Identity {
    /// The judge is root: each run gets a uid of the pool.
    UidPool {
        /// First uid.
        uid_base: u32,
        /// Last uid.
        uid_last: u32,
    },
    /// The judge is not root: a user namespace maps its uid to an unprivileged one inside.
    UserNamespace,
}

/// The isolation a sandbox achieves on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Isolation {
    /// Who programs run as.
    pub identity: Identity,
    /// What bounds a run's memory.
    pub memory: MemoryBound,
    /// Whether RLIMIT_NPROC bounds a run's processes (root, or a user namespace on Linux ≥
    /// 5.14, where the count is kept per namespace).
    pub process_limit: bool,
    /// Why a cgroup is not used, when it is not.
    pub note: Option<String>,
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("namespaces pid+mount+net+ipc+uts")?;
        match self.identity {
            Identity::UidPool { uid_base, uid_last } => {
                write!(f, ", uid {uid_base}..={uid_last} per run")?
            }
            Identity::UserNamespace => f.write_str("+user (not root)")?,
        }
        f.write_str(", filesystem allowlist, memory bound ")?;
        match self.memory {
            MemoryBound::CgroupV2 => f.write_str("cgroup v2")?,
            MemoryBound::CgroupV1 => f.write_str("cgroup v1")?,
            MemoryBound::Rlimit => f.write_str("rlimit per process (no cgroup)")?,
        }
        if !self.process_limit {
            f.write_str(", no process limit")?;
        }
        if let (MemoryBound::Rlimit, Some(note)) = (self.memory, &self.note) {
            write!(f, " [{note}]")?;
        }
        Ok(())
    }
}

/// The sandbox service: cheap to share across threads (`&Sandbox` is `Sync`).
#[derive(Debug)]
pub struct Sandbox {
    config: SandboxConfig,
    isolation: Isolation,
    cgroups: Option<Cgroups>,
    view: View,
    /// The (empty) host directory every run assembles its root at, in its own mount namespace.
    _stage: tempfile::TempDir,
}

fn cstring(s: &str) -> Result<CString, SandboxError> {
    CString::new(s).map_err(|_| SandboxError::Invalid(format!("NUL byte in `{s}`")))
}

fn path_cstring(p: &Path) -> Result<CString, SandboxError> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| SandboxError::Invalid(format!("NUL byte in `{}`", p.display())))
}

impl Sandbox {
    /// A sandbox for this machine: root → uid pool, otherwise a user namespace; a cgroup per
    /// run where one may be used. Checks the configuration ([`SandboxConfig::validate`]) and
    /// runs a probe (`/bin/sh -c 'exit 0'`) so that a machine where namespaces are refused
    /// fails here, once, with a clear error; a cgroup that does not work is left out (the
    /// reason is in [`Isolation::note`]).
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        config.validate(&Accounts::from_system())?;
        // The hook a re-executed init starts from must be in this binary.
        std::hint::black_box(hook::init_hook_linked());
        let root = sys::effective_uid() == 0;
        if root {
            uid::prepare_lock_dir(&config.lock_dir)?;
        }
        let stage = tempfile::Builder::new()
            .prefix("coreb-sandbox-root-")
            .tempdir()
            .map_err(|source| SandboxError::Io { path: std::env::temp_dir(), source })?;
        let view = View::new(stage.path(), &config.visible_paths)?;
        let identity = if root {
            Identity::UidPool { uid_base: config.uid_base, uid_last: config.uid_last() }
        } else {
            Identity::UserNamespace
        };
        let process_limit = root || sys::kernel_at_least(5, 14);
        let cgroups = match config.cgroup {
            CgroupMode::Auto => Cgroups::discover(config.cgroup_parent.as_deref(), root),
            CgroupMode::None => None,
        };
        let mut sandbox = Sandbox {
            isolation: Isolation {
                identity,
                memory: MemoryBound::Rlimit,
                process_limit,
                note: None,
            },
            config,
            cgroups: None,
            view,
            _stage: stage,
        };
        if let Some(cgroups) = cgroups {
            let bound = cgroups.bound();
            sandbox.cgroups = Some(cgroups);
            sandbox.isolation.memory = bound;
            if let Err(e) = sandbox.probe() {
                let mut chain = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    chain.push_str(&format!(": {s}"));
                    source = s.source();
                }
                sandbox.cgroups = None;
                sandbox.isolation.memory = MemoryBound::Rlimit;
                sandbox.isolation.note = Some(format!("{bound} unusable ({chain})"));
            }
        } else if sandbox.config.cgroup == CgroupMode::Auto {
            sandbox.isolation.note = Some(if root {
                "no delegated cgroup v2 and no cgroup v1 memory hierarchy".into()
            } else {
                "no delegated cgroup v2 (cgroup v1 needs root)".into()
            });
        }
        if sandbox.cgroups.is_none() {
            sandbox.probe()?;
        }
        Ok(sandbox)
    }

    fn probe(&self) -> Result<(), SandboxError> {
        let dir = tempfile::Builder::new()
            .prefix("coreb-sandbox-probe-")
            .tempdir()
            .map_err(|source| SandboxError::Io { path: std::env::temp_dir(), source })?;
        let probe = Program {
            argv: vec!["/bin/sh".into(), "-c".into(), "exit 0".into()],
            env: vec![],
            stdin: b"",
            dir: dir.path(),
            access: DirAccess::ReadOnly,
            cache: None,
        };
        let outcome = self.run(&probe, &Limits::default())?;
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
        Ok(())
    }

    /// The isolation this sandbox achieves.
    pub fn isolation(&self) -> &Isolation {
        &self.isolation
    }

    /// What bounds the memory of its runs.
    pub fn memory_bound(&self) -> MemoryBound {
        self.isolation.memory
    }

    /// The resource limits a run's process gets.
    fn rlimits(&self, limits: &Limits) -> Vec<(libc::__rlimit_resource_t, u64, u64)> {
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
        let address_space = match (limits.address_space_mb, self.cgroups.is_some()) {
            (Some(a), _) => Some(a),
            (None, true) => None,
            (None, false) => Some(limits.memory_mb.saturating_mul(2).saturating_add(1024)),
        };
        if let Some(a) = address_space {
            rlimits.push(same(libc::RLIMIT_AS, mib(a)));
        }
        if self.isolation.process_limit {
            rlimits.push(same(libc::RLIMIT_NPROC, limits.processes));
        }
        rlimits
    }

    /// Run one program to completion (or to a limit) and report how it ended.
    ///
    /// Errors are failures of the sandbox itself (the program could not be started); a program
    /// that crashes, times out, runs out of memory or floods its output is an `Ok(Outcome)`.
    pub fn run(&self, program: &Program<'_>, limits: &Limits) -> Result<Outcome, SandboxError> {
        self.run_sharing(program, limits, None)
    }

    /// [`run`](Self::run), as one of at most `slots.capacity()` busy runs: wait for a slot,
    /// start, and give the slot back as soon as the run has been idle for a whole window, or
    /// when it ends ([`BusySlots`]). The run itself is [`run`](Self::run)'s.
    pub fn run_sharing(
        &self,
        program: &Program<'_>,
        limits: &Limits,
        slots: Option<&BusySlots>,
    ) -> Result<Outcome, SandboxError> {
        let Some(argv0) = program.argv.first() else {
            return Err(SandboxError::Invalid("empty argv".into()));
        };
        for dir in std::iter::once(program.dir).chain(program.cache) {
            if !dir.is_dir() {
                let source = std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory");
                return Err(SandboxError::Io { path: dir.to_owned(), source });
            }
        }
        let lease = match self.isolation.identity {
            Identity::UidPool { uid_base, uid_last } => {
                Some(uid::lease(&self.config.lock_dir, uid_base, uid_last)?)
            }
            Identity::UserNamespace => None,
        };
        let uid = lease.as_ref().map(|l| l.uid);
        let writable = program.access == DirAccess::Writable;
        let io_err = |source| SandboxError::Io { path: program.dir.to_owned(), source };
        if let (Some(uid), true) = (uid, writable) {
            sys::lchown(program.dir, uid, uid).map_err(io_err)?;
        }
        let result = self.run_as(program, limits, argv0, uid, slots);
        if let (Some(_), true) = (uid, writable) {
            // Hand the directory (and what the program wrote) back to the judge, so a later
            // run that reuses this uid cannot change it.
            chown_tree(program.dir).map_err(io_err)?;
        }
        drop(lease);
        result
    }

    fn run_as(
        &self,
        program: &Program<'_>,
        limits: &Limits,
        argv0: &str,
        uid: Option<u32>,
        slots: Option<&BusySlots>,
    ) -> Result<Outcome, SandboxError> {
        let cgroup = match &self.cgroups {
            Some(c) => {
                let bytes =
                    limits.memory_mb.saturating_add(limits.tmp_size_mb).saturating_mul(1 << 20);
                Some(c.create(bytes, limits.processes).map_err(|source| SandboxError::Setup {
                    step: "creating the run's cgroup".into(),
                    source,
                })?)
            }
            None => None,
        };
        let pipe = || {
            sys::pipe()
                .map_err(|source| SandboxError::Setup { step: "creating pipes".into(), source })
        };
        let (stdin_r, stdin_w) = pipe()?;
        let (stdout_r, stdout_w) = pipe()?;
        let (stderr_r, stderr_w) = pipe()?;
        let (report_r, report_w) = pipe()?;
        let (sync_r, sync_w) = pipe()?;
        for fd in [&stdin_w, &stdout_r] {
            sys::grow_pipe(fd, 1 << 20);
        }

        let writable = program.access == DirAccess::Writable;
        let run_steps =
            self.view.run_steps(program.dir, writable, program.cache, limits.tmp_size_mb, uid)?;
        let paths = exec_paths(argv0, program)?;
        let cgroup_fds = cgroup.as_ref().map(|c| c.procs_fds()).unwrap_or_default();
        let exec = Exec::new(
            [stdin_r.as_raw_fd(), stdout_w.as_raw_fd(), stderr_w.as_raw_fd()],
            cgroup_fds.clone(),
            self.rlimits(limits),
            uid,
            program.cache.is_some(),
            cstring(if writable { BOX_DIR } else { WORK_DIR })?,
            paths,
            program.argv.iter().map(|a| cstring(a)).collect::<Result<_, _>>()?,
            program
                .env
                .iter()
                .map(|(k, v)| cstring(&format!("{k}={v}")))
                .collect::<Result<_, _>>()?,
        );
        let user = if uid.is_some() { None } else { Some(user_maps()?) };
        let sysctls = ipc_sysctls(limits)?;
        let mut keep: Vec<i32> = [
            stdin_r.as_raw_fd(),
            stdout_w.as_raw_fd(),
            stderr_w.as_raw_fd(),
            report_w.as_raw_fd(),
            sync_r.as_raw_fd(),
        ]
        .into_iter()
        .chain(cgroup_fds)
        .collect();
        keep.sort_unstable();
        let mut namespaces = libc::CLONE_NEWPID
            | libc::CLONE_NEWNS
            | libc::CLONE_NEWNET
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS;
        if user.is_some() {
            namespaces |= libc::CLONE_NEWUSER;
        }
        // As root, init re-executes this binary rather than living on in a copy of the judge
        // (`sys::Reexec`). In a user namespace it cannot: the capabilities it holds there as
        // the namespace's creator would not survive its `execve` (it is not uid 0 inside).
        let plan = if user.is_none() { Some(pipe()?) } else { None };
        let init = Init {
            namespaces,
            user,
            reexec: plan.as_ref().map(|(plan_r, _)| Reexec::new(plan_r.as_raw_fd())),
            keep,
            sync: sync_r.as_raw_fd(),
            report: report_w.as_raw_fd(),
            steps: [self.view.steps(), &run_steps],
            stage: path_cstring(self.view.stage())?,
            sysctls,
            slash: cstring("/")?,
            dot: cstring(".")?,
            statm: cstring("/proc/self/statm")?,
            exec,
        };

        let plan_bytes = plan.as_ref().map(|_| plan::encode(&init));
        let slot = slots.map(BusySlots::take);
        let start = Instant::now();
        let pid = sys::spawn(&init).map_err(|source| SandboxError::Setup {
            step: "creating the run's namespaces (clone)".into(),
            source,
        })?;
        if let Some(errno) = init.reexec.as_ref().and_then(Reexec::failed) {
            let _ = sys::wait(pid);
            return Err(SandboxError::Setup {
                step: self.describe_step(sys::step::INIT_EXEC, &init),
                source: std::io::Error::from_raw_os_error(errno),
            });
        }
        // The child's ends live on in init only.
        drop((stdin_r, stdout_w, stderr_w, report_w, sync_r));
        // A re-executed init reads its plan first (to its end: our end closes here).
        let sent = match (plan, plan_bytes) {
            (Some((plan_r, plan_w)), Some(bytes)) => {
                drop(plan_r);
                sys::write_all(&plan_w, &bytes)
            }
            _ => Ok(()),
        };
        let go = sent.and_then(|_| sys::write(&sync_w, b"g"));
        drop(sync_w);
        let mut watch = slot.map(|slot| IdleWatch::new(slot, pid, start));
        let io = go.and_then(|_| {
            pump(
                pid,
                program.stdin,
                [stdin_w, stdout_r, stderr_r, report_r],
                limits,
                start,
                watch.as_mut(),
            )
        });
        let gave_way = watch.as_ref().is_some_and(IdleWatch::gave_back);
        drop(watch);
        if io.is_err() {
            // Never wait for a run nobody is watching any more.
            sys::kill(pid);
        }
        let waited = sys::wait(pid);
        let wall_ms = start.elapsed().as_millis() as u64;
        let io = io.map_err(|source| SandboxError::Setup {
            step: "feeding and reading the program".into(),
            source,
        })?;
        let (init_status, init_usage) = waited
            .map_err(|source| SandboxError::Setup { step: "waiting for the run".into(), source })?;
        let cg: CgroupReport = cgroup.as_ref().map(|c| c.report()).unwrap_or_default();
        drop(cgroup);

        let report = Report::from_bytes(&io.report);
        if let Some(r) = report.filter(|r| r.kind == Report::FAILED) {
            let source = std::io::Error::from_raw_os_error(r.errno);
            if r.step == sys::step::EXEC {
                return Err(SandboxError::Spawn { program: argv0.to_owned(), source });
            }
            return Err(SandboxError::Setup { step: self.describe_step(r.step, &init), source });
        }
        Ok(Outcome {
            gave_way,
            ..self.outcome(report, (init_status, init_usage), cg, io, limits, wall_ms)
        })
    }

    /// The outcome of a run that started: how the program ended (from init's report, or from
    /// init's own status when the run's group was killed), its CPU time and peak memory, and
    /// which limit ended it.
    fn outcome(
        &self,
        report: Option<Report>,
        (init_status, init_usage): (i32, libc::rusage),
        cg: CgroupReport,
        io: Pumped,
        limits: &Limits,
        wall_ms: u64,
    ) -> Outcome {
        let ms = |us: u64| us / 1000;
        let tv_ms =
            |t: libc::timeval| t.tv_sec.max(0) as u64 * 1000 + t.tv_usec.max(0) as u64 / 1000;
        let (status, cpu_ms, maxrss_kb, floor_kb) = match report.filter(|r| r.kind == Report::ENDED)
        {
            Some(r) => (
                decode_status(r.status),
                ms(r.utime_us) + ms(r.stime_us),
                r.maxrss_kb,
                r.baseline_kb,
            ),
            // Init was killed (by the timer, the output cap, or an out-of-memory kill of the
            // whole group): the program died with it.
            None => {
                let status = match decode_status(init_status) {
                    ExitStatus::Exited(_) => ExitStatus::Signaled(libc::SIGKILL),
                    s => s,
                };
                (
                    status,
                    tv_ms(init_usage.ru_utime) + tv_ms(init_usage.ru_stime),
                    init_usage.ru_maxrss.max(0) as u64,
                    0,
                )
            }
        };
        let (peak_memory_kb, memory_floor_kb) = match cg.peak_bytes {
            Some(bytes) => (bytes / 1024, 0),
            None => (maxrss_kb, floor_kb),
        };
        // RLIMIT_CPU counts in whole seconds on the kernel's tick; rusage is finer, so allow
        // a little slack when deciding that a SIGKILL came from the hard CPU limit.
        let cpu_limit_ms = limits.cpu_time_ms.div_ceil(1000).max(1) * 1000;
        let cpu_killed = matches!(status, ExitStatus::Signaled(s) if s == libc::SIGXCPU)
            || (matches!(status, ExitStatus::Signaled(s) if s == libc::SIGKILL)
                && cpu_ms + 100 >= cpu_limit_ms);
        let limit = match io.killed {
            Some(hit) => Some(hit),
            None if cg.oom_killed => Some(LimitHit::Memory),
            None if cpu_killed => Some(LimitHit::CpuTime),
            None => None,
        };
        Outcome {
            status,
            stdout: io.stdout,
            stderr: io.stderr,
            wall_ms,
            cpu_ms,
            peak_memory_kb,
            memory_floor_kb,
            limit,
            memory_bound: self.isolation.memory,
            gave_way: false,
        }
    }

    fn describe_step(&self, step: u32, init: &Init<'_>) -> String {
        let all = init.steps[0].iter().chain(init.steps[1]);
        match step {
            sys::step::USER_MAPS => "writing the user namespace's uid/gid maps".into(),
            sys::step::INIT_EXEC => "starting the run's init (execve of /proc/self/exe)".into(),
            sys::step::PRIVATE => "making the mounts private".into(),
            sys::step::PIVOT => "switching root into the new filesystem".into(),
            sys::step::ROOT => "making the new root read-only".into(),
            sys::step::CLONE => "starting the program's process".into(),
            sys::step::CGROUP => "joining the run's cgroup".into(),
            sys::step::STDIO => "redirecting stdin/stdout/stderr".into(),
            sys::step::SETSID => "starting a new session".into(),
            sys::step::RLIMIT => "setting resource limits".into(),
            sys::step::SETUID => "dropping to the run's uid".into(),
            sys::step::CHDIR => "entering the working directory".into(),
            n => all
                .clone()
                .nth(n as usize)
                .map_or_else(|| format!("step {n}"), view::Step::describe),
        }
    }
}

/// Where `execve` looks for `argv0`: the path itself when it has a `/`, else each directory of
/// the program's `PATH` (default `/usr/local/bin:/usr/bin:/bin`).
fn exec_paths(argv0: &str, program: &Program<'_>) -> Result<Vec<CString>, SandboxError> {
    if argv0.contains('/') {
        return Ok(vec![cstring(argv0)?]);
    }
    let env_path = program
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map_or("/usr/local/bin:/usr/bin:/bin", |(_, v)| v.as_str());
    env_path
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| cstring(&format!("{d}/{argv0}")))
        .collect()
}

/// The user namespace's maps when the judge is not root: the judge's own uid and gid become
/// [`INSIDE_UID`] inside, nothing else is mapped.
fn user_maps() -> Result<UserMaps, SandboxError> {
    let (u, g) = sys::real_ids();
    Ok(UserMaps {
        setgroups: cstring("/proc/self/setgroups")?,
        deny: cstring("deny")?,
        uid_map_path: cstring("/proc/self/uid_map")?,
        uid_map: cstring(&format!("{INSIDE_UID} {u} 1"))?,
        gid_map_path: cstring("/proc/self/gid_map")?,
        gid_map: cstring(&format!("{INSIDE_UID} {g} 1"))?,
    })
}

/// The run's IPC namespace limits (System V shared memory within the memory limit, few
/// segments and queues), as `(path, value)` pairs for init to write.
fn ipc_sysctls(limits: &Limits) -> Result<Vec<(CString, CString)>, SandboxError> {
    let shm_pages = limits.memory_mb.saturating_mul(256).max(1);
    [
        ("/proc/sys/kernel/shmmax", limits.memory_mb.saturating_mul(1 << 20).to_string()),
        ("/proc/sys/kernel/shmall", shm_pages.to_string()),
        ("/proc/sys/kernel/shmmni", "64".to_owned()),
        ("/proc/sys/kernel/msgmni", "16".to_owned()),
    ]
    .into_iter()
    .map(|(p, v)| Ok((cstring(p)?, cstring(&v)?)))
    .collect()
}

fn decode_status(status: i32) -> ExitStatus {
    if libc::WIFSIGNALED(status) {
        ExitStatus::Signaled(libc::WTERMSIG(status))
    } else {
        ExitStatus::Exited(libc::WEXITSTATUS(status))
    }
}

/// What the poll loop collected.
struct Pumped {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    report: Vec<u8>,
    killed: Option<LimitHit>,
}

/// Feed stdin and read stdout, stderr and init's report (`pipes`, in that order) on this
/// thread until init has exited and the output pipes are drained; kill the run at the wall
/// limit or the output cap; let `watch` look at the run once a window.
fn pump(
    pid: libc::pid_t,
    input: &[u8],
    pipes: [OwnedFd; 4],
    limits: &Limits,
    start: Instant,
    mut watch: Option<&mut IdleWatch<'_>>,
) -> std::io::Result<Pumped> {
    let [stdin, stdout, stderr, report] = pipes;
    let cap = usize::try_from(limits.output_bytes).unwrap_or(usize::MAX);
    let deadline = start + Duration::from_millis(limits.wall_time_ms);
    for fd in [&stdin, &stdout, &stderr, &report] {
        sys::set_nonblocking(fd)?;
    }
    let mut stdin = (!input.is_empty()).then_some(stdin);
    let mut fed = 0usize;
    let mut streams: [(Option<OwnedFd>, Vec<u8>); 3] =
        [(Some(stdout), Vec::new()), (Some(stderr), Vec::new()), (Some(report), Vec::new())];
    let mut stopper = Stopper { pid, killed: None, hard_kill_at: None };
    // Once init is gone, every writer of the pipes is gone too; this only guards against a
    // descriptor that leaked to another process anyway.
    let mut drain_until: Option<Instant> = None;
    loop {
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(4);
        let mut who: Vec<usize> = Vec::with_capacity(4);
        if let Some(fd) = &stdin {
            fds.push(libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLOUT, revents: 0 });
            who.push(3);
        }
        for (i, (fd, _)) in streams.iter().enumerate() {
            if let Some(fd) = fd {
                fds.push(libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 });
                who.push(i);
            }
        }
        if streams.iter().all(|(fd, _)| fd.is_none()) {
            break;
        }
        let now = Instant::now();
        if streams[2].0.is_none() {
            let until = *drain_until.get_or_insert(now + Duration::from_millis(500));
            if now >= until {
                break;
            }
        }
        if let Some(t) = stopper.hard_kill_at
            && now >= t
            && streams[2].0.is_some()
        {
            sys::kill(pid);
            stopper.hard_kill_at = None;
        }
        let mut wake = match (stopper.killed, drain_until) {
            (_, Some(t)) => t,
            (None, None) => deadline,
            (Some(_), None) => stopper.hard_kill_at.unwrap_or(now + Duration::from_secs(3600)),
        };
        if let Some(at) = watch.as_ref().and_then(|w| w.wake_at()) {
            wake = wake.min(at);
        }
        let timeout = wake.saturating_duration_since(now).as_millis().min(i32::MAX as u128) as i32;
        match sys::poll(&mut fds, timeout) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if stopper.killed.is_none() && Instant::now() >= deadline {
            stopper.stop(LimitHit::WallTime);
        }
        if let Some(w) = watch.as_mut() {
            w.look(Instant::now());
        }
        for (pfd, &w) in fds.iter().zip(&who) {
            if pfd.revents == 0 {
                continue;
            }
            if w == 3 {
                feed_stdin(&mut stdin, input, &mut fed);
                continue;
            }
            let (fd, buf) = &mut streams[w];
            // Only stdout and stderr count towards the output cap (not init's report).
            if read_stream(fd, buf) && w < 2 && buf.len() > cap {
                buf.truncate(cap);
                stopper.stop(LimitHit::Output);
            }
        }
    }
    let [(_, stdout), (_, stderr), (_, report)] = streams;
    Ok(Pumped { stdout, stderr, report, killed: stopper.killed })
}

/// Bytes written to stdin or read from an output pipe at a time, at most.
const PUMP_CHUNK: usize = 1 << 20;

/// Write the next chunk of `input` (from `fed`) to the program's stdin; `stdin` becomes
/// `None` once all of it is fed or the program has closed its end.
fn feed_stdin(stdin: &mut Option<OwnedFd>, input: &[u8], fed: &mut usize) {
    let Some(fd) = stdin.as_ref() else { return };
    let end = (*fed + PUMP_CHUNK).min(input.len());
    match sys::write(fd, &input[*fed..end]) {
        Ok(n) => {
            *fed += n;
            if *fed == input.len() {
                *stdin = None;
            }
        }
        Err(e)
            if e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::Interrupted => {}
        // EPIPE: the program closed its stdin (or ended); it has what it wanted.
        Err(_) => *stdin = None,
    }
}

/// Append what a ready pipe holds to `buf`; `fd` becomes `None` at its end (or on an error).
/// Whether bytes were read.
fn read_stream(fd: &mut Option<OwnedFd>, buf: &mut Vec<u8>) -> bool {
    let Some(f) = fd.as_ref() else { return false };
    // Grow with the output: small reads for small outputs, 1 MiB at a time for big ones.
    let want = buf.len().clamp(16 << 10, PUMP_CHUNK);
    match sys::read_append(f, buf, want) {
        Ok(0) => *fd = None,
        Ok(_) => return true,
        Err(e)
            if e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::Interrupted => {}
        Err(_) => *fd = None,
    }
    false
}

/// Stops a run at a limit: asks its init to kill, reap and report, and kills init itself
/// if it has not reported two seconds later.
struct Stopper {
    pid: libc::pid_t,
    killed: Option<LimitHit>,
    hard_kill_at: Option<Instant>,
}

impl Stopper {
    fn stop(&mut self, why: LimitHit) {
        if self.killed.is_none() {
            sys::stop(self.pid);
            self.hard_kill_at = Some(Instant::now() + Duration::from_secs(2));
            self.killed = Some(why);
        }
    }
}

/// `chown -R` to the judge's own uid of a directory tree, without following links.
fn chown_tree(dir: &Path) -> std::io::Result<()> {
    let (uid, gid) = sys::real_ids();
    sys::lchown(dir, uid, gid)?;
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        sys::lchown(&path, uid, gid)?;
        if entry.file_type()?.is_dir() {
            chown_tree(&path)?;
        }
    }
    Ok(())
}
