//! The part of a sandboxed run that happens in the forked child before `exec`: namespaces,
//! mounts, resource limits and the drop to an unprivileged uid.
//!
//! Everything here runs between `fork` and `exec` of a multi-threaded parent, so it only makes
//! raw system calls on data prepared beforehand ([`ChildSetup`] holds every C string); it
//! never allocates, locks or logs.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

/// How the child gets its privileges dropped.
pub(super) enum Identity {
    /// The judge runs as root: fresh namespaces as root, then `setresuid` to a uid that owns
    /// nothing on the machine (RLIMIT_NPROC binds it).
    Root {
        /// The uid (and gid) to become.
        uid: u32,
    },
    /// The judge is unprivileged: a user namespace maps the caller's uid to root inside it.
    UserNamespace {
        /// `0 <outer uid> 1`.
        uid_map: CString,
        /// `0 <outer gid> 1`.
        gid_map: CString,
    },
}

/// One host directory bound inside the sandbox.
pub(super) struct Bind {
    /// The host path.
    pub host: CString,
    /// The descriptor number the child holds it at while binding (`source` names it).
    pub fd: RawFd,
    /// `/proc/self/fd/<fd>`.
    pub source: CString,
    /// Where it appears inside (under the private `/tmp`).
    pub target: CString,
    /// Writable, or remounted read-only.
    pub writable: bool,
}

/// Everything the child needs, prepared in the parent.
pub(super) struct ChildSetup {
    pub identity: Identity,
    /// Host directories shown inside: the program's own (first), then shared caches.
    pub binds: Vec<Bind>,
    /// Whether files are created world-writable (umask 0: compiles sharing a cache).
    pub open_umask: bool,
    /// The private scratch directory (`/tmp/work`).
    pub work_dir: CString,
    /// Where the program starts.
    pub cwd: CString,
    /// `/tmp`.
    pub tmp: CString,
    /// Mount options of the private `/tmp` (size and inode caps).
    pub tmp_options: CString,
    /// Other world-writable places covered by a private tmpfs (`/dev/shm`, `/var/tmp`).
    pub scratch: Vec<CString>,
    /// Directories hidden behind an empty read-only tmpfs.
    pub hidden: Vec<CString>,
    /// Options of those empty mounts.
    pub hidden_options: CString,
    /// `tmpfs`.
    pub tmpfs: CString,
    /// `/`.
    pub root: CString,
    /// `deny`, written to `/proc/self/setgroups` in a user namespace.
    pub deny: CString,
    /// `/proc/self/setgroups`, `/proc/self/uid_map`, `/proc/self/gid_map`.
    pub proc_paths: [CString; 3],
    /// Resource limits (resource, soft, hard), applied last before the uid drop.
    pub rlimits: Vec<(libc::__rlimit_resource_t, u64, u64)>,
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
const AT_RECURSIVE: libc::c_int = 0x8000;

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

fn check_long(ret: libc::c_long) -> io::Result<()> {
    if ret == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Write a whole small buffer to a file (for `/proc/self/uid_map`).
unsafe fn write_file(path: &CString, data: &CString) -> io::Result<()> {
    // SAFETY: raw syscalls on NUL-terminated strings that live as long as the call.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let bytes = data.as_bytes();
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if n != bytes.len() as isize { Err(io::Error::last_os_error()) } else { Ok(()) }
    }
}

unsafe fn mount(source: Option<&CString>, target: &CString, fstype: Option<&CString>, flags: libc::c_ulong, data: Option<&CString>) -> io::Result<()> {
    let ptr = |s: Option<&CString>| s.map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: pointers are null or NUL-terminated strings alive for the call.
    check(unsafe { libc::mount(ptr(source), target.as_ptr(), ptr(fstype), flags, ptr(data).cast()) })
}

impl ChildSetup {
    /// Enter the sandbox. Called in the child between `fork` and `exec`.
    ///
    /// # Safety
    /// Only async-signal-safe calls; must run in a freshly forked child.
    pub(super) unsafe fn apply(&self) -> io::Result<()> {
        // SAFETY (whole body): raw system calls on prepared data; see the module doc.
        unsafe {
            // Die with the judge.
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0))?;
            let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWNET | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
            if let Identity::UserNamespace { uid_map, gid_map } = &self.identity {
                flags |= libc::CLONE_NEWUSER;
                check(libc::unshare(flags))?;
                write_file(&self.proc_paths[0], &self.deny)?;
                write_file(&self.proc_paths[1], uid_map)?;
                write_file(&self.proc_paths[2], gid_map)?;
            } else {
                check(libc::unshare(flags))?;
            }
            // Nothing mounted here propagates back to the host.
            mount(None, &self.root, None, libc::MS_REC | libc::MS_PRIVATE, None)?;
            // Take hold of the directory inside the new namespace (a handle opened before the
            // unshare belongs to the old one and cannot be bound), before /tmp is covered.
            for bind in &self.binds {
                let fd = libc::open(bind.host.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                if fd != bind.fd {
                    check(libc::dup3(fd, bind.fd, libc::O_CLOEXEC))?;
                    libc::close(fd);
                }
            }
            // The whole host tree read-only (and nosuid) for this namespace: nothing outside the
            // private mounts below is writable even where permissions would allow it.
            let attr = MountAttr { attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, attr_clr: 0, propagation: 0, userns_fd: 0 };
            let r = libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                self.root.as_ptr(),
                AT_RECURSIVE,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            );
            if r == -1 {
                // Kernels before 5.12: at least the root mount itself.
                mount(None, &self.root, None, libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY, None)?;
            }
            let nodev = libc::MS_NOSUID | libc::MS_NODEV;
            mount(Some(&self.tmpfs), &self.tmp, Some(&self.tmpfs), nodev, Some(&self.tmp_options))?;
            for dir in &self.scratch {
                mount(Some(&self.tmpfs), dir, Some(&self.tmpfs), nodev, Some(&self.tmp_options))?;
            }
            for dir in &self.hidden {
                mount(Some(&self.tmpfs), dir, Some(&self.tmpfs), nodev | libc::MS_RDONLY, Some(&self.hidden_options))?;
            }
            for bind in &self.binds {
                check(libc::mkdir(bind.target.as_ptr(), 0o755))?;
                mount(Some(&bind.source), &bind.target, None, libc::MS_BIND, None)?;
                // The bind inherits the read-only flag of the host mount; set it explicitly.
                let access = if bind.writable { 0 } else { libc::MS_RDONLY };
                mount(None, &bind.target, None, libc::MS_BIND | libc::MS_REMOUNT | access | nodev, None)?;
                libc::close(bind.fd);
            }
            check(libc::mkdir(self.work_dir.as_ptr(), 0o700))?;
            if let Identity::Root { uid } = self.identity {
                check(libc::chown(self.work_dir.as_ptr(), uid, uid))?;
            }
            for &(resource, soft, hard) in &self.rlimits {
                let lim = libc::rlimit { rlim_cur: soft, rlim_max: hard };
                check(libc::setrlimit(resource, &lim))?;
            }
            check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
            if let Identity::Root { uid } = self.identity {
                // Raw syscalls: glibc's wrappers would try to signal threads that do not exist
                // in the forked child.
                let (uid, gid) = (uid as libc::c_long, uid as libc::c_long);
                check_long(libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()))?;
                check_long(libc::syscall(libc::SYS_setresgid, gid, gid, gid))?;
                check_long(libc::syscall(libc::SYS_setresuid, uid, uid, uid))?;
            }
            if self.open_umask {
                libc::umask(0);
            }
            check(libc::chdir(self.cwd.as_ptr()))?;
        }
        Ok(())
    }
}

/// Kill every process owned by `uid` (root mode): fork a child that becomes `uid` and sends
/// SIGKILL to everything it may signal, until nothing is left. This reaches processes that
/// left the process group (`setsid`, double forks) as well.
///
/// Returns whether any process (or zombie) of `uid` was found: such a uid must not be reused
/// until they are gone, since zombies still count against RLIMIT_NPROC.
pub(super) fn kill_uid(uid: u32) -> bool {
    // SAFETY: the child makes raw syscalls only and leaves with `_exit`.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            let id = uid as libc::c_long;
            if libc::syscall(libc::SYS_setresgid, id, id, id) == -1 || libc::syscall(libc::SYS_setresuid, id, id, id) == -1 {
                libc::_exit(1);
            }
            // A killed process stays signalable as a zombie until reaped, so "until ESRCH" may
            // never come; a few rounds catch children forked while a round was under way (a
            // process with SIGKILL pending cannot fork, and RLIMIT_NPROC bounds the rest).
            for round in 0..8 {
                if libc::kill(-1, libc::SIGKILL) == -1 {
                    libc::_exit(if round == 0 { 0 } else { 3 });
                }
                let pause = libc::timespec { tv_sec: 0, tv_nsec: 2_000_000 };
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
            libc::_exit(3);
        }
        if pid < 0 {
            return true;
        }
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) == -1 && *libc::__errno_location() == libc::EINTR {}
        !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0)
    }
}

/// Does any process (zombies included) have `uid` as its real uid?
pub(super) fn uid_has_processes(uid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return true };
    entries.flatten().any(|e| {
        let name = e.file_name();
        if !name.as_encoded_bytes().iter().all(u8::is_ascii_digit) {
            return false;
        }
        std::fs::read_to_string(e.path().join("status")).is_ok_and(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next())
                .is_some_and(|u| u.parse::<u32>() == Ok(uid))
        })
    })
}
