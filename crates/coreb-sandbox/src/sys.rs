//! Every `unsafe` of the crate but the pre-`main` hook ([`crate::hook`]): thin wrappers of
//! the system calls the judge side makes, and the code of the sandbox's init process and of
//! the program's last steps before `execve`.
//!
//! A run is started by [`spawn`], with fresh PID, mount, network, IPC and UTS namespaces
//! (and a user namespace when unprivileged). As root, the child of `clone(CLONE_VM |
//! CLONE_VFORK)` re-executes the judge's own binary ([`Reexec`]), whose hook
//! ([`crate::hook`]) reads its plan ([`crate::plan`]) before `main`; unprivileged, it is a raw `clone` with
//! fork semantics of the judge (a re-executed init would lose the capabilities it holds in its
//! user namespace). Either way the child is the PID namespace's init ([`init_main`]); it
//! builds the filesystem view, switches root into it, then starts the program
//! ([`program_main`]) with `clone(CLONE_VM | CLONE_VFORK)` on a stack of its own, waits for it
//! while reaping every orphan, reports how it ended on a pipe, and exits — at which point the
//! kernel kills whatever else is left in the namespace.
//!
//! The code before an `execve` runs in a copy of a multi-threaded parent or in its very
//! memory, so it only makes raw system calls on data prepared beforehand ([`Init`] holds
//! every C string and pointer array): it never allocates, locks, logs or formats.

use std::ffi::{CString, c_char, c_int, c_void};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use crate::view::Step;

fn cvt(r: c_int) -> io::Result<c_int> {
    if r == -1 { Err(io::Error::last_os_error()) } else { Ok(r) }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Real uid and gid of this process.
pub(crate) fn real_ids() -> (u32, u32) {
    // SAFETY: no preconditions.
    unsafe { (libc::getuid(), libc::getgid()) }
}

/// Effective uid of this process.
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() }
}

/// Clock ticks per second of `/proc`'s CPU figures (100 where the system does not say).
pub(crate) fn clock_ticks_per_second() -> u64 {
    // SAFETY: no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as u64 } else { 100 }
}

/// The kernel release is at least `major.minor`.
pub(crate) fn kernel_at_least(major: u32, minor: u32) -> bool {
    // SAFETY: an all-zero utsname is valid; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer.
    if unsafe { libc::uname(&mut u) } != 0 {
        return false;
    }
    let release: String =
        u.release.iter().take_while(|&&c| c != 0).map(|&c| c as u8 as char).collect();
    let mut parts =
        release.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
    let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

/// A pipe, both ends close-on-exec, neither of them stdin/out/err.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: a valid two-element array.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    let high = |fd: c_int| -> io::Result<OwnedFd> {
        let fd = if fd < 3 {
            // SAFETY: `fd` is ours; the duplicate is at 3 or above, then the low one closes.
            let dup = cvt(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) });
            unsafe { libc::close(fd) };
            dup?
        } else {
            fd
        };
        // SAFETY: a fresh descriptor we own.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    };
    Ok((high(fds[0])?, high(fds[1])?))
}

/// Make a descriptor non-blocking.
pub(crate) fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: a valid descriptor.
    unsafe {
        let flags = cvt(libc::fcntl(fd.as_raw_fd(), libc::F_GETFL))?;
        cvt(libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK))?;
    }
    Ok(())
}

/// Ask for a larger pipe buffer (fewer wake-ups for multi-MB input and output); best effort.
pub(crate) fn grow_pipe(fd: &OwnedFd, bytes: c_int) {
    // SAFETY: a valid descriptor; failure is harmless.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, bytes) };
}

/// `poll(2)`, retried on EINTR by the caller's loop.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout_ms: c_int) -> io::Result<usize> {
    // SAFETY: a valid slice of pollfds.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if r == -1 { Err(io::Error::last_os_error()) } else { Ok(r as usize) }
}

/// Read once, appending at most `max` bytes to `out` (in place, no intermediate copy).
pub(crate) fn read_append(fd: &OwnedFd, out: &mut Vec<u8>, max: usize) -> io::Result<usize> {
    out.reserve(max);
    let spare = out.spare_capacity_mut();
    let len = spare.len().min(max);
    // SAFETY: reading into the vector's spare capacity; `set_len` covers only what was read.
    unsafe {
        let n = libc::read(fd.as_raw_fd(), spare.as_mut_ptr().cast(), len);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        out.set_len(out.len() + n as usize);
        Ok(n as usize)
    }
}

/// Write once.
pub(crate) fn write(fd: &OwnedFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: a valid descriptor and buffer.
    let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
    if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
}

/// Write all of `buf`, retrying short writes and EINTR.
pub(crate) fn write_all(fd: &OwnedFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match write(fd, buf) {
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// SIGKILL one process (our unreaped child, so the pid cannot have been reused).
pub(crate) fn kill(pid: libc::pid_t) {
    // SAFETY: no memory is involved; `pid` is our child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Ask a run's init to stop the run ([`STOP_SIGNAL`]): it kills every process of the run,
/// reaps them (so their CPU time and memory are counted) and reports.
pub(crate) fn stop(pid: libc::pid_t) {
    // SAFETY: no memory is involved; `pid` is our unreaped child.
    unsafe { libc::kill(pid, STOP_SIGNAL) };
}

/// The signal that asks init to stop the run.
const STOP_SIGNAL: c_int = libc::SIGUSR1;

/// Set in init by [`STOP_SIGNAL`].
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_stop(_: c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Wait for our child `pid`.
pub(crate) fn wait(pid: libc::pid_t) -> io::Result<(c_int, libc::rusage)> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers; `pid` is our unreaped child.
        let r = unsafe { libc::wait4(pid, &mut status, libc::__WALL, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Take an exclusive `flock` without waiting; `false` when another holder has it.
pub(crate) fn try_lock(file: &File) -> bool {
    // SAFETY: a valid open descriptor.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Hand a path (not following links) to `uid:gid`.
pub(crate) fn lchown(path: &std::path::Path, uid: u32, gid: u32) -> io::Result<()> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))
}

/// `/proc/self/uid_map` and friends, for the user-namespace (unprivileged) mode.
pub(crate) struct UserMaps {
    pub(crate) setgroups: CString,
    pub(crate) deny: CString,
    pub(crate) uid_map_path: CString,
    pub(crate) uid_map: CString,
    pub(crate) gid_map_path: CString,
    pub(crate) gid_map: CString,
}

/// The program's side of a run, prepared by the judge.
pub(crate) struct Exec {
    /// Descriptors that become its stdin, stdout and stderr.
    pub(crate) stdio: [RawFd; 3],
    /// `cgroup.procs` files it joins (writes `0` to) before anything else.
    pub(crate) cgroup_procs: Vec<RawFd>,
    /// (resource, soft, hard).
    pub(crate) rlimits: Vec<(libc::__rlimit_resource_t, u64, u64)>,
    /// Root mode: the uid (and gid) to become.
    pub(crate) uid: Option<u32>,
    /// Files created world-writable (compiles sharing a cache).
    pub(crate) open_umask: bool,
    /// Working directory.
    pub(crate) cwd: CString,
    /// Candidate paths of the executable (`argv[0]` itself, or along `PATH`).
    pub(crate) paths: Vec<CString>,
    /// Owners of the strings `argv_ptrs` and `env_ptrs` point into.
    pub(crate) argv: Vec<CString>,
    pub(crate) env: Vec<CString>,
    argv_ptrs: Vec<*const c_char>,
    env_ptrs: Vec<*const c_char>,
    /// Set by the program's process when it fails before or at `execve`.
    failed_errno: AtomicI32,
    failed_step: AtomicU32,
    /// The stack of the program's process until `execve`.
    stack: Vec<u8>,
}

impl Exec {
    /// Prepare the pointer arrays of `argv` and `env` (`KEY=value` strings).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        stdio: [RawFd; 3],
        cgroup_procs: Vec<RawFd>,
        rlimits: Vec<(libc::__rlimit_resource_t, u64, u64)>,
        uid: Option<u32>,
        open_umask: bool,
        cwd: CString,
        paths: Vec<CString>,
        argv: Vec<CString>,
        env: Vec<CString>,
    ) -> Exec {
        let ptrs = |v: &[CString]| {
            v.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect()
        };
        let (argv_ptrs, env_ptrs) = (ptrs(&argv), ptrs(&env));
        Exec {
            stdio,
            cgroup_procs,
            rlimits,
            uid,
            open_umask,
            cwd,
            paths,
            argv,
            env,
            argv_ptrs,
            env_ptrs,
            failed_errno: AtomicI32::new(0),
            failed_step: AtomicU32::new(0),
            stack: vec![0u8; 128 * 1024],
        }
    }
}

/// Everything the init process of a run needs.
pub(crate) struct Init<'a> {
    /// `CLONE_NEW*` flags.
    pub(crate) namespaces: c_int,
    /// Set in unprivileged mode.
    pub(crate) user: Option<UserMaps>,
    /// Set where init re-executes the judge's binary instead of living on in a copy of it
    /// (root mode; see [`spawn`]).
    pub(crate) reexec: Option<Reexec>,
    /// Descriptors init keeps (everything else it inherited from the judge is closed).
    pub(crate) keep: Vec<RawFd>,
    /// The judge writes one byte here once it is ready (EOF: the judge died).
    pub(crate) sync: RawFd,
    /// Where init writes its [`Report`].
    pub(crate) report: RawFd,
    /// The view's fixed steps, then the run's.
    pub(crate) steps: [&'a [Step]; 2],
    /// The directory the new root is assembled at.
    pub(crate) stage: CString,
    /// IPC limits of the run's IPC namespace (best effort): (path, value).
    pub(crate) sysctls: Vec<(CString, CString)>,
    /// `/`, `.` and `/proc/self/statm`.
    pub(crate) slash: CString,
    pub(crate) dot: CString,
    pub(crate) statm: CString,
    /// The program.
    pub(crate) exec: Exec,
}

/// Steps of init outside the view's list, reported by number.
pub(crate) mod step {
    /// Writing the user namespace's maps.
    pub(crate) const USER_MAPS: u32 = 10_000;
    /// Making every mount private.
    pub(crate) const PRIVATE: u32 = 10_001;
    /// Switching root.
    pub(crate) const PIVOT: u32 = 10_002;
    /// Making the new root read-only.
    pub(crate) const ROOT: u32 = 10_003;
    /// Starting the program's process.
    pub(crate) const CLONE: u32 = 10_004;
    /// The program's process: joining its cgroup.
    pub(crate) const CGROUP: u32 = 20_000;
    /// Redirecting stdio.
    pub(crate) const STDIO: u32 = 20_001;
    /// A new session.
    pub(crate) const SETSID: u32 = 20_002;
    /// Resource limits.
    pub(crate) const RLIMIT: u32 = 20_003;
    /// Dropping to the run's uid.
    pub(crate) const SETUID: u32 = 20_004;
    /// Changing directory.
    pub(crate) const CHDIR: u32 = 20_005;
    /// `execve` itself.
    pub(crate) const EXEC: u32 = 20_006;
    /// init's own `execve` of the judge's binary (root mode, [`super::Reexec`]).
    pub(crate) const INIT_EXEC: u32 = 10_005;
}

/// `argv[0]` of the judge's binary started again as a run's init ([`crate::hook`]).
pub(crate) const INIT_ARGV0: &std::ffi::CStr = c"coreb-sandbox-init";

/// How a run's init becomes a process of its own instead of a copy of the judge: the
/// child of `clone(CLONE_VM | CLONE_VFORK)` with the run's namespaces runs
/// [`reexec_main`] on `stack` in the judge's memory (the judge's thread waits meanwhile),
/// keeps init's descriptors and `plan_fd` open across `execve`, and executes
/// `/proc/self/exe` as [`INIT_ARGV0`] `plan_fd`; the hook ([`crate::hook`]) then reads the
/// plan before `main` and runs [`init_main`]. Copying the page tables of a
/// judge holding hundreds of MiB (a month's `execute`) cost every run tens of milliseconds
/// of CPU; an `execve` costs about one.
pub(crate) struct Reexec {
    exe: CString,
    /// Read end of the pipe the judge writes the plan into once init has started.
    plan_fd: RawFd,
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const c_char>,
    env_ptrs: Vec<*const c_char>,
    /// Set by the pre-exec child when it fails.
    failed_errno: AtomicI32,
    stack: Vec<u8>,
}

impl Reexec {
    pub(crate) fn new(plan_fd: RawFd) -> Reexec {
        let argv = vec![INIT_ARGV0.to_owned(), CString::new(plan_fd.to_string()).expect("digits")];
        let argv_ptrs =
            argv.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
        Reexec {
            exe: c"/proc/self/exe".to_owned(),
            plan_fd,
            _argv: argv,
            argv_ptrs,
            env_ptrs: vec![std::ptr::null()],
            failed_errno: AtomicI32::new(0),
            stack: vec![0u8; 64 * 1024],
        }
    }

    /// The errno of the pre-exec child's failure (clearing close-on-exec, `execve`), if it
    /// failed; read after [`spawn`] returned.
    pub(crate) fn failed(&self) -> Option<c_int> {
        Some(self.failed_errno.load(Ordering::SeqCst)).filter(|&e| e != 0)
    }
}

/// What init writes on its report pipe (one `write`, under `PIPE_BUF`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Report {
    /// [`Report::FAILED`] or [`Report::ENDED`].
    pub(crate) kind: u32,
    /// The step that failed.
    pub(crate) step: u32,
    /// Its errno.
    pub(crate) errno: i32,
    /// The program's wait status.
    pub(crate) status: i32,
    /// User and system CPU time of the program and every process init reaped, µs.
    pub(crate) utime_us: u64,
    pub(crate) stime_us: u64,
    /// Their largest resident set (`ru_maxrss`), KiB.
    pub(crate) maxrss_kb: u64,
    /// init's own resident set just before it started the program, KiB: `ru_maxrss` of a
    /// process started from init is never below it (see the crate README).
    pub(crate) baseline_kb: u64,
}

impl Report {
    /// A step failed before the program could run.
    pub(crate) const FAILED: u32 = 1;
    /// The program ran and ended.
    pub(crate) const ENDED: u32 = 2;
    /// Its size on the pipe.
    pub(crate) const SIZE: usize = std::mem::size_of::<Report>();

    /// Decode a report read from the pipe.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Option<Report> {
        if bytes.len() < Self::SIZE {
            return None;
        }
        // SAFETY: `Report` is plain old data of exactly SIZE bytes; any bit pattern is valid.
        Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<Report>()) })
    }
}

/// Start init. Returns its pid (in the judge's namespace). With [`Init::reexec`], init
/// re-executes the judge's binary ([`Reexec`]); check [`Reexec::failed`] afterwards.
pub(crate) fn spawn(init: &Init<'_>) -> io::Result<libc::pid_t> {
    if let Some(reexec) = &init.reexec {
        let flags = init.namespaces | libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
        let top = reexec.stack.as_ptr().wrapping_add(reexec.stack.len());
        let top = ((top as usize) & !15) as *mut c_void;
        // Every signal blocked until the child has left our memory (as posix_spawn does): no
        // handler of the judge may run in it. init unblocks them after its execve.
        // SAFETY: all-zero sigsets are valid; sigfillset fills one.
        let (mut all, mut before): (libc::sigset_t, libc::sigset_t) =
            unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
        // SAFETY: the child runs `reexec_main` on a stack of its own and leaves our memory
        // by `execve` or `_exit`; until then this thread waits (CLONE_VFORK), so the data it
        // reads (`init`, alive for this call) does not change, and its errno is ours.
        let result = unsafe {
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut before);
            let pid =
                libc::clone(reexec_main, top, flags, (init as *const Init<'_>).cast_mut().cast());
            let result = if pid == -1 { Err(io::Error::last_os_error()) } else { Ok(pid) };
            libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
            result
        };
        return result;
    }
    let flags = (init.namespaces | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: a raw clone with fork semantics (no new stack). The child runs only
    // `init_main`, which makes raw system calls on `init` (its copy, at the same address)
    // and never returns.
    let pid = unsafe { libc::syscall(libc::SYS_clone, flags, 0usize, 0usize, 0usize, 0usize) };
    if pid == -1 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: we are the freshly cloned child.
        unsafe { init_main(init) }
    }
    Ok(pid as libc::pid_t)
}

/// Write a whole small buffer to a file.
unsafe fn write_file(path: &CString, data: &CString) -> c_int {
    // SAFETY: NUL-terminated strings alive for the calls.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return errno();
        }
        let bytes = data.as_bytes();
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let e = errno();
        libc::close(fd);
        if n == bytes.len() as isize { 0 } else { e.max(libc::EIO) }
    }
}

unsafe fn mount(
    source: Option<&CString>,
    target: &CString,
    fstype: Option<&CString>,
    flags: libc::c_ulong,
    data: Option<&CString>,
) -> c_int {
    let ptr = |s: Option<&CString>| s.map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: pointers are null or NUL-terminated strings alive for the call.
    let r =
        unsafe { libc::mount(ptr(source), target.as_ptr(), ptr(fstype), flags, ptr(data).cast()) };
    if r == 0 { 0 } else { errno() }
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const AT_RECURSIVE: c_int = 0x8000;

/// Static strings init needs (no allocation in the child).
const TMPFS: &std::ffi::CStr = c"tmpfs";
const PROC: &std::ffi::CStr = c"proc";
const ZERO: &[u8] = b"0";

/// Add nosuid+nodev (and read-only) to a mount: `mount_setattr`, else a bind remount that
/// keeps the flags the kernel may have locked (kernels before 5.12).
unsafe fn seal(target: &CString, writable: bool, recursive: bool) -> c_int {
    let mut set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if !writable {
        set |= MOUNT_ATTR_RDONLY;
    }
    let attr = MountAttr { attr_set: set, attr_clr: 0, propagation: 0, userns_fd: 0 };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: valid pointers for the call.
    unsafe {
        let r = libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            target.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        );
        if r == 0 {
            return 0;
        }
        if errno() != libc::ENOSYS {
            return errno();
        }
        let mut st: libc::statvfs = std::mem::zeroed();
        let mut keep: libc::c_ulong = 0;
        if libc::statvfs(target.as_ptr(), &mut st) == 0 {
            let f = st.f_flag as libc::c_ulong;
            for (st_flag, ms) in [
                (libc::ST_NOEXEC, libc::MS_NOEXEC),
                (libc::ST_NOATIME, libc::MS_NOATIME),
                (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
                (libc::ST_RELATIME, libc::MS_RELATIME),
            ] {
                if f & st_flag as libc::c_ulong != 0 {
                    keep |= ms;
                }
            }
        }
        let ro = if writable { 0 } else { libc::MS_RDONLY };
        mount(
            None,
            target,
            None,
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_NOSUID | libc::MS_NODEV | ro | keep,
            None,
        )
    }
}

/// Perform one step of the view; 0 or an errno.
unsafe fn do_step(s: &Step) -> c_int {
    // SAFETY (whole body): raw system calls on prepared, NUL-terminated strings.
    unsafe {
        match s {
            Step::Tmpfs { target, options, noexec } => {
                let mut flags = libc::MS_NOSUID | libc::MS_NODEV;
                if *noexec {
                    flags |= libc::MS_NOEXEC;
                }
                let t = TMPFS.as_ptr();
                let r = libc::mount(t, target.as_ptr(), t, flags, options.as_ptr().cast());
                if r == 0 { 0 } else { errno() }
            }
            Step::Mkdir { path, mode } => {
                if libc::mkdir(path.as_ptr(), *mode) == 0 || errno() == libc::EEXIST {
                    // mkdir applies the umask; set the mode exactly.
                    if libc::chmod(path.as_ptr(), *mode) == 0 { 0 } else { errno() }
                } else {
                    errno()
                }
            }
            Step::Symlink { target, path } => {
                if libc::symlink(target.as_ptr(), path.as_ptr()) == 0 { 0 } else { errno() }
            }
            Step::File { path } => {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                    0o644,
                );
                if fd < 0 {
                    return errno();
                }
                libc::close(fd);
                0
            }
            Step::Bind { source, target } => {
                mount(Some(source), target, None, libc::MS_BIND | libc::MS_REC, None)
            }
            Step::Seal { target, writable, recursive } => seal(target, *writable, *recursive),
            Step::Proc { target } => {
                let p = PROC.as_ptr();
                let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
                if libc::mount(p, target.as_ptr(), p, flags, std::ptr::null()) == 0 {
                    0
                } else {
                    errno()
                }
            }
            Step::Chown { path, uid } => {
                if libc::chown(path.as_ptr(), *uid, *uid) == 0 {
                    0
                } else {
                    errno()
                }
            }
        }
    }
}

/// Report and leave (init).
unsafe fn finish(fd: RawFd, report: &Report) -> ! {
    // SAFETY: writing a plain struct; `_exit` never returns.
    unsafe {
        while libc::write(fd, (report as *const Report).cast(), Report::SIZE) < 0
            && errno() == libc::EINTR
        {}
        libc::_exit(0)
    }
}

unsafe fn fail(fd: RawFd, step: u32, errno: c_int) -> ! {
    // SAFETY: see `finish`.
    unsafe { finish(fd, &Report { kind: Report::FAILED, step, errno, ..Report::default() }) }
}

/// Close every descriptor but the sorted `keep` ones.
unsafe fn close_others(keep: &[RawFd]) {
    // SAFETY: closing descriptors of this (fresh) process only.
    unsafe {
        let mut from: u32 = 0;
        for &fd in keep {
            let fd = fd as u32;
            if fd > from && libc::syscall(libc::SYS_close_range, from, fd - 1, 0) != 0 {
                for f in from..fd {
                    libc::close(f as c_int);
                }
            }
            from = fd + 1;
        }
        if libc::syscall(libc::SYS_close_range, from, u32::MAX, 0) != 0 {
            for f in from..65_536 {
                libc::close(f as c_int);
            }
        }
    }
}

/// Resident set of this process, KiB (from `/proc/self/statm`, read without allocating).
unsafe fn resident_kb(statm: &CString) -> u64 {
    // SAFETY: raw reads into a stack buffer.
    unsafe {
        let fd = libc::open(statm.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return 0;
        }
        let mut buf = [0u8; 128];
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        if n <= 0 {
            return 0;
        }
        // "size resident shared ...": the second field, in pages.
        let mut fields = buf[..n as usize].split(|&b| b == b' ');
        let _ = fields.next();
        let pages = fields.next().map_or(0, |f| {
            f.iter()
                .take_while(|b| b.is_ascii_digit())
                .fold(0u64, |a, &b| a * 10 + u64::from(b - b'0'))
        });
        pages * (libc::sysconf(libc::_SC_PAGESIZE).max(4096) as u64) / 1024
    }
}

/// The init process of a run. Never returns.
///
/// Long on purpose: it runs in the child right after the raw `clone`, where only system calls
/// on data prepared before it are allowed (no allocation, lock or formatting), and its steps
/// (each a commented block) are one ordered sequence whose order is part of the containment:
/// death signal before waiting for the go, non-dumpable only after the id maps, mounts before
/// the root switch, then the reaping loop. Split into functions, that order would be spread
/// over several `unsafe fn`s that a reviewer must still read as one.
pub(crate) unsafe fn init_main(init: &Init<'_>) -> ! {
    // SAFETY (whole body): raw system calls on prepared data; see the module doc.
    unsafe {
        // Copies of other runs' pipes, inherited from the judge, must not stay open here.
        close_others(&init.keep);
        // Die with the judge (the thread that started us).
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        let mut go = [0u8; 1];
        loop {
            let n = libc::read(init.sync, go.as_mut_ptr().cast(), 1);
            if n == 1 {
                break;
            }
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            // The judge is gone.
            libc::_exit(1);
        }
        libc::close(init.sync);
        let report = init.report;
        if let Some(user) = &init.user {
            for (path, data) in [
                (&user.setgroups, &user.deny),
                (&user.uid_map_path, &user.uid_map),
                (&user.gid_map_path, &user.gid_map),
            ] {
                let e = write_file(path, data);
                if e != 0 {
                    fail(report, step::USER_MAPS, e);
                }
            }
        }
        // No one inside may read our memory (a copy of the judge's) or environment through
        // /proc (after the maps: a non-dumpable process's /proc files belong to root).
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        // Nothing mounted here propagates back to the host.
        let e = mount(None, &init.slash, None, libc::MS_REC | libc::MS_PRIVATE, None);
        if e != 0 {
            fail(report, step::PRIVATE, e);
        }
        let mut n = 0u32;
        for list in init.steps {
            for s in list {
                let e = do_step(s);
                if e != 0 {
                    fail(report, n, e);
                }
                n += 1;
            }
        }
        // Switch root: the stage becomes `/`, the host's tree is detached.
        if libc::chdir(init.stage.as_ptr()) != 0
            || libc::syscall(libc::SYS_pivot_root, init.dot.as_ptr(), init.dot.as_ptr()) != 0
            || libc::umount2(init.dot.as_ptr(), libc::MNT_DETACH) != 0
            || libc::chdir(init.slash.as_ptr()) != 0
        {
            fail(report, step::PIVOT, errno());
        }
        let e = mount(
            None,
            &init.slash,
            None,
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
            None,
        );
        if e != 0 {
            fail(report, step::ROOT, e);
        }
        for (path, value) in &init.sysctls {
            let _ = write_file(path, value);
        }
        let baseline_kb = resident_kb(&init.statm);
        // The judge's request to stop (wall time, output cap) interrupts the waiting below.
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_stop as extern "C" fn(c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(STOP_SIGNAL, &action, std::ptr::null_mut());
        let exec = &init.exec;
        let top = exec.stack.as_ptr().add(exec.stack.len()) as *mut c_void;
        let top = ((top as usize) & !15) as *mut c_void;
        let pid = libc::clone(
            program_main,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (exec as *const Exec).cast_mut().cast(),
        );
        if pid < 0 {
            fail(report, step::CLONE, errno());
        }
        for fd in exec.stdio.iter().chain(&exec.cgroup_procs) {
            libc::close(*fd);
        }
        let mut status = 0;
        let failed = exec.failed_errno.load(Ordering::SeqCst);
        if failed != 0 {
            libc::waitpid(pid, &mut status, libc::__WALL);
            fail(report, exec.failed_step.load(Ordering::SeqCst), failed);
        }
        // Reap everything until the program itself ends; orphans are re-parented to us. On a
        // stop request, kill every process of the namespace (only of it: we are its init)
        // and reap them all, so that their time and memory are counted.
        let mut program_status = None;
        let mut stopping = false;
        loop {
            if STOP.load(Ordering::SeqCst) && !stopping {
                stopping = true;
                libc::kill(-1, libc::SIGKILL);
            }
            let r = libc::waitpid(-1, &mut status, libc::__WALL);
            if r == pid {
                program_status = Some(status);
                if !stopping {
                    break;
                }
            } else if r == -1 && errno() != libc::EINTR {
                break;
            }
        }
        let status = program_status.unwrap_or(libc::SIGKILL);
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        let us = |t: libc::timeval| t.tv_sec.max(0) as u64 * 1_000_000 + t.tv_usec.max(0) as u64;
        finish(
            report,
            &Report {
                kind: Report::ENDED,
                step: 0,
                errno: 0,
                status,
                utime_us: us(usage.ru_utime),
                stime_us: us(usage.ru_stime),
                maxrss_kb: usage.ru_maxrss.max(0) as u64,
                baseline_kb,
            },
        )
    }
}

/// The run's init until it re-executes the judge's binary ([`Reexec`]): in the judge's
/// memory, on its own stack, while the judge's thread waits. Raw system calls only.
extern "C" fn reexec_main(arg: *mut c_void) -> c_int {
    // SAFETY (whole body): `arg` is the judge's `Init`, alive and unchanged while we run.
    unsafe {
        let init = &*(arg as *const Init<'_>);
        let Some(reexec) = &init.reexec else { libc::_exit(127) };
        let fail = |e: c_int| -> c_int {
            reexec.failed_errno.store(e.max(1), Ordering::SeqCst);
            libc::_exit(127)
        };
        // Die with the judge's thread (kept across execve).
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        // Only init's own descriptors stay open across execve (every other one of the
        // judge's is close-on-exec, and init closes any that is not).
        for &fd in init.keep.iter().chain(std::iter::once(&reexec.plan_fd)) {
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                fail(errno());
            }
        }
        libc::execve(reexec.exe.as_ptr(), reexec.argv_ptrs.as_ptr(), reexec.env_ptrs.as_ptr());
        fail(errno())
    }
}

/// The program's process until `execve`: runs on its own stack in init's memory (init waits
/// until it execs or exits); failures are left in `Exec::failed_*` for init to report.
extern "C" fn program_main(arg: *mut c_void) -> c_int {
    // SAFETY (whole body): `arg` is init's `Exec`, alive while init waits for us; raw
    // system calls only.
    unsafe {
        let exec = &*(arg as *const Exec);
        let fail = |step: u32, e: c_int| -> c_int {
            exec.failed_step.store(step, Ordering::SeqCst);
            exec.failed_errno.store(e.max(1), Ordering::SeqCst);
            libc::_exit(127)
        };
        for fd in &exec.cgroup_procs {
            if libc::write(*fd, ZERO.as_ptr().cast(), ZERO.len()) != ZERO.len() as isize {
                fail(step::CGROUP, errno());
            }
        }
        for (target, &fd) in exec.stdio.iter().enumerate() {
            if libc::dup2(fd, target as c_int) < 0 {
                fail(step::STDIO, errno());
            }
        }
        if libc::setsid() < 0 {
            fail(step::SETSID, errno());
        }
        // A clean signal state: nothing blocked, nothing ignored (the judge ignores SIGPIPE).
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        for sig in 1..32 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        for &(resource, soft, hard) in &exec.rlimits {
            let lim = libc::rlimit { rlim_cur: soft, rlim_max: hard };
            if libc::setrlimit(resource, &lim) != 0 {
                fail(step::RLIMIT, errno());
            }
        }
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if let Some(uid) = exec.uid {
            // Raw system calls: glibc's wrappers would try to signal threads that only exist
            // in the judge.
            let id = uid as libc::c_long;
            if libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) != 0
                || libc::syscall(libc::SYS_setresgid, id, id, id) != 0
                || libc::syscall(libc::SYS_setresuid, id, id, id) != 0
            {
                fail(step::SETUID, errno());
            }
        }
        libc::umask(if exec.open_umask { 0 } else { 0o022 });
        if libc::chdir(exec.cwd.as_ptr()) != 0 {
            fail(step::CHDIR, errno());
        }
        // Like execvp: the first candidate that runs; else the most telling error.
        let mut seen = libc::ENOENT;
        for path in &exec.paths {
            libc::execve(path.as_ptr(), exec.argv_ptrs.as_ptr(), exec.env_ptrs.as_ptr());
            let e = errno();
            if e != libc::ENOENT && e != libc::ENOTDIR {
                seen = e;
            }
        }
        fail(step::EXEC, seen)
    }
}
