//! The uid pool (root only): every run executes as a uid of its own, which no account and no
//! concurrent run uses, so that RLIMIT_NPROC bounds exactly that run's processes and nothing
//! of the host is writable or signalable by it.
//!
//! A uid is claimed machine-wide by holding an exclusive `flock` on
//! `<lock_dir>/uid-<uid>.lock` for the life of the process (two judges on one machine —
//! parallel test binaries, two builds — never share one), and only when no process of that
//! uid exists (`/proc` is checked before the claim). The lock directory must belong to root
//! and be writable by nobody else, so no other user can take or fake claims. Within a process,
//! claimed uids go back to a free list after each run: a run's processes all die with its PID
//! namespace, so a returned uid is empty.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::SandboxError;
use crate::sys;

/// The uids this process has claimed.
struct Pool {
    /// Claimed and idle.
    free: Vec<u32>,
    /// Lock files held (never closed while the process lives).
    held: Vec<(u32, File)>,
}

static POOL: Mutex<Pool> = Mutex::new(Pool { free: Vec::new(), held: Vec::new() });
static RETURNED: Condvar = Condvar::new();

/// Make sure the lock directory exists, is a real directory owned by root, and is writable by
/// root only.
pub(crate) fn prepare_lock_dir(dir: &Path) -> Result<(), SandboxError> {
    let io = |source| SandboxError::Io { path: dir.to_owned(), source };
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io)?;
    }
    let meta = std::fs::symlink_metadata(dir).map_err(io)?;
    let unsafe_dir = |why: &str| {
        Err(SandboxError::Config(format!(
            "uid lock directory `{}` {why}: it must be a directory owned by root and writable by root only (`lock_dir`)",
            dir.display()
        )))
    };
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return unsafe_dir("is not a directory");
    }
    if meta.uid() != 0 {
        return unsafe_dir(&format!("belongs to uid {}", meta.uid()));
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return unsafe_dir("is writable by group or others");
    }
    Ok(())
}

/// Does any process (zombies included) have `uid` as a real, effective or saved uid?
pub(crate) fn uid_in_use(uid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        if !name.as_encoded_bytes().iter().all(u8::is_ascii_digit) {
            return false;
        }
        std::fs::read_to_string(e.path().join("status")).is_ok_and(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .is_some_and(|l| l.split_whitespace().take(3).any(|u| u.parse::<u32>() == Ok(uid)))
        })
    })
}

impl Pool {
    /// Claim a uid in `base..=last` not held by this or any other process and not in use.
    fn claim(&mut self, lock_dir: &Path, base: u32, last: u32) -> Option<u32> {
        for uid in base..=last {
            if self.held.iter().any(|(u, _)| *u == uid) {
                continue;
            }
            let path = lock_dir.join(format!("uid-{uid}.lock"));
            let Ok(file) = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&path)
            else {
                continue;
            };
            if sys::try_lock(&file) && !uid_in_use(uid) {
                self.held.push((uid, file));
                return Some(uid);
            }
        }
        None
    }
}

/// A leased uid, returned to the pool on drop.
#[derive(Debug)]
pub(crate) struct UidLease {
    pub(crate) uid: u32,
}

impl Drop for UidLease {
    fn drop(&mut self) {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        pool.free.push(self.uid);
        RETURNED.notify_all();
    }
}

/// Lease a uid of `base..=last`, waiting up to two minutes for one when other judges hold
/// them all.
pub(crate) fn lease(lock_dir: &Path, base: u32, last: u32) -> Result<UidLease, SandboxError> {
    let in_range = |u: &u32| (base..=last).contains(u);
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(i) = pool.free.iter().position(in_range) {
            return Ok(UidLease { uid: pool.free.swap_remove(i) });
        }
        if let Some(uid) = pool.claim(lock_dir, base, last) {
            return Ok(UidLease { uid });
        }
        if !pool.held.iter().any(|(u, _)| in_range(u)) && Instant::now() >= deadline {
            return Err(SandboxError::Config(format!(
                "every uid in {base}..={last} is held by other processes or in use (see `{}`)",
                lock_dir.display()
            )));
        }
        pool = RETURNED
            .wait_timeout(pool, Duration::from_millis(100))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uid_with_processes_is_in_use() {
        // This process's own uid has a process (this one); a pool uid has none.
        assert!(uid_in_use(sys::real_ids().0));
        assert!(!uid_in_use(1_991_999_999));
    }

    #[test]
    fn lock_dirs_writable_by_others_are_refused() {
        if sys::real_ids().0 != 0 {
            eprintln!("not root: the lock directory check needs root-owned directories; skipped");
            return;
        }
        let base = tempfile::tempdir().unwrap();
        let good = base.path().join("locks");
        prepare_lock_dir(&good).unwrap();
        assert_eq!(std::fs::metadata(&good).unwrap().permissions().mode() & 0o777, 0o700);
        std::fs::set_permissions(&good, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let err = prepare_lock_dir(&good).unwrap_err().to_string();
        assert!(err.contains("writable by group or others"), "{err}");
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&good, &link).unwrap();
        assert!(prepare_lock_dir(&link).unwrap_err().to_string().contains("not a directory"));
    }
}
