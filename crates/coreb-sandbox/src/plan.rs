//! A run's [`Init`] as bytes, for an init that is not a copy of the judge: where the judge
//! runs as root, a run's init re-executes the judge's own binary (`/proc/self/exe`, see
//! [`sys`](crate::sys)) instead of living on in a `fork` of the judge, whose page tables —
//! hundreds of MiB of them once a month's judge has grown — every run used to copy. The new
//! image reads its plan from a pipe before `main` and becomes the run's init.
//!
//! The format is private to one binary talking to itself: fields in a fixed order, integers
//! little-endian, strings and lists length-prefixed. Decoding checks every length, so a
//! short or garbled plan is refused (`None`) rather than read past its end.

use std::ffi::CString;
use std::os::fd::RawFd;

use crate::sys::{Exec, Init};
use crate::view::Step;

/// Encode what init needs of `init` (not the namespaces or user maps: those are the
/// pre-exec child's, before init exists).
pub(crate) fn encode(init: &Init<'_>) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(4096));
    w.fds(&init.keep);
    w.i32(init.sync);
    w.i32(init.report);
    w.u32(init.steps.iter().map(|s| s.len() as u32).sum());
    for step in init.steps.iter().flat_map(|s| s.iter()) {
        w.step(step);
    }
    w.str(&init.stage);
    w.u32(init.sysctls.len() as u32);
    for (path, value) in &init.sysctls {
        w.str(path);
        w.str(value);
    }
    w.str(&init.slash);
    w.str(&init.dot);
    w.str(&init.statm);
    let e = &init.exec;
    w.fds(&e.stdio);
    w.fds(&e.cgroup_procs);
    w.u32(e.rlimits.len() as u32);
    for &(resource, soft, hard) in &e.rlimits {
        w.u32(resource);
        w.u64(soft);
        w.u64(hard);
    }
    w.i64(e.uid.map_or(-1, i64::from));
    w.u8(u8::from(e.open_umask));
    w.str(&e.cwd);
    w.strs(&e.paths);
    w.strs(&e.argv);
    w.strs(&e.env);
    w.0
}

/// A decoded plan: owns what the [`Init`] it lends ([`Plan::init`]) points into.
pub(crate) struct Plan {
    keep: Vec<RawFd>,
    sync: RawFd,
    report: RawFd,
    steps: Vec<Step>,
    stage: CString,
    sysctls: Vec<(CString, CString)>,
    slash: CString,
    dot: CString,
    statm: CString,
    exec: Option<Exec>,
}

impl Plan {
    /// The init this plan describes (its steps as one list; step numbers are unchanged).
    /// Callable once: the program's part moves into it.
    pub(crate) fn init(&mut self) -> Option<Init<'_>> {
        Some(Init {
            namespaces: 0,
            user: None,
            reexec: None,
            keep: self.keep.clone(),
            sync: self.sync,
            report: self.report,
            steps: [&self.steps, &[]],
            stage: self.stage.clone(),
            sysctls: self.sysctls.clone(),
            slash: self.slash.clone(),
            dot: self.dot.clone(),
            statm: self.statm.clone(),
            exec: self.exec.take()?,
        })
    }
}

/// Decode a plan written by [`encode`]; `None` when it is short, too long or garbled.
pub(crate) fn decode(bytes: &[u8]) -> Option<Plan> {
    let mut r = Reader(bytes);
    let keep = r.fds()?;
    let (sync, report) = (r.i32()?, r.i32()?);
    let steps = (0..r.u32()?).map(|_| r.step()).collect::<Option<Vec<_>>>()?;
    let stage = r.str()?;
    let sysctls = (0..r.u32()?).map(|_| Some((r.str()?, r.str()?))).collect::<Option<Vec<_>>>()?;
    let (slash, dot, statm) = (r.str()?, r.str()?, r.str()?);
    let stdio: [RawFd; 3] = r.fds()?.try_into().ok()?;
    let cgroup_procs = r.fds()?;
    let rlimits =
        (0..r.u32()?).map(|_| Some((r.u32()?, r.u64()?, r.u64()?))).collect::<Option<Vec<_>>>()?;
    let uid = match r.i64()? {
        -1 => None,
        u => Some(u32::try_from(u).ok()?),
    };
    let open_umask = r.u8()? != 0;
    let cwd = r.str()?;
    let (paths, argv, env) = (r.strs()?, r.strs()?, r.strs()?);
    if !r.0.is_empty() {
        return None;
    }
    let exec = Exec::new(stdio, cgroup_procs, rlimits, uid, open_umask, cwd, paths, argv, env);
    Some(Plan { keep, sync, report, steps, stage, sysctls, slash, dot, statm, exec: Some(exec) })
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn fds(&mut self, fds: &[RawFd]) {
        self.u32(fds.len() as u32);
        for &fd in fds {
            self.i32(fd);
        }
    }
    fn str(&mut self, s: &CString) {
        let b = s.as_bytes();
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn strs(&mut self, v: &[CString]) {
        self.u32(v.len() as u32);
        for s in v {
            self.str(s);
        }
    }
    fn step(&mut self, s: &Step) {
        match s {
            Step::Tmpfs { target, options, noexec } => {
                self.u8(0);
                self.str(target);
                self.str(options);
                self.u8(u8::from(*noexec));
            }
            Step::Mkdir { path, mode } => {
                self.u8(1);
                self.str(path);
                self.u32(*mode);
            }
            Step::Symlink { target, path } => {
                self.u8(2);
                self.str(target);
                self.str(path);
            }
            Step::File { path } => {
                self.u8(3);
                self.str(path);
            }
            Step::Bind { source, target } => {
                self.u8(4);
                self.str(source);
                self.str(target);
            }
            Step::Seal { target, writable, recursive } => {
                self.u8(5);
                self.str(target);
                self.u8(u8::from(*writable));
                self.u8(u8::from(*recursive));
            }
            Step::Proc { target } => {
                self.u8(6);
                self.str(target);
            }
            Step::Chown { path, uid } => {
                self.u8(7);
                self.str(path);
                self.u32(*uid);
            }
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn fds(&mut self) -> Option<Vec<RawFd>> {
        let n = self.u32()? as usize;
        // Each takes 4 bytes: a count beyond what is left is garbage, not an allocation.
        if n > self.0.len() / 4 {
            return None;
        }
        (0..n).map(|_| self.i32()).collect()
    }
    fn str(&mut self) -> Option<CString> {
        let n = self.u32()? as usize;
        CString::new(self.take(n)?).ok()
    }
    fn strs(&mut self) -> Option<Vec<CString>> {
        let n = self.u32()? as usize;
        if n > self.0.len() / 4 {
            return None;
        }
        (0..n).map(|_| self.str()).collect()
    }
    fn step(&mut self) -> Option<Step> {
        Some(match self.u8()? {
            0 => Step::Tmpfs { target: self.str()?, options: self.str()?, noexec: self.u8()? != 0 },
            1 => Step::Mkdir { path: self.str()?, mode: self.u32()? },
            2 => Step::Symlink { target: self.str()?, path: self.str()? },
            3 => Step::File { path: self.str()? },
            4 => Step::Bind { source: self.str()?, target: self.str()? },
            5 => Step::Seal {
                target: self.str()?,
                writable: self.u8()? != 0,
                recursive: self.u8()? != 0,
            },
            6 => Step::Proc { target: self.str()? },
            7 => Step::Chown { path: self.str()?, uid: self.u32()? },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> CString {
        CString::new(s).unwrap()
    }

    fn init<'a>(fixed: &'a [Step], run: &'a [Step]) -> Init<'a> {
        Init {
            namespaces: libc::CLONE_NEWPID,
            user: None,
            reexec: None,
            keep: vec![3, 5, 9],
            sync: 9,
            report: 5,
            steps: [fixed, run],
            stage: c("/tmp/coreb-sandbox-root-x/stage"),
            sysctls: vec![(c("/proc/sys/kernel/shmmni"), c("64"))],
            slash: c("/"),
            dot: c("."),
            statm: c("/proc/self/statm"),
            exec: Exec::new(
                [3, 4, 6],
                vec![11, 12],
                vec![(libc::RLIMIT_CPU, 4, 5), (libc::RLIMIT_NPROC, 32, 32)],
                Some(1_991_000_007),
                false,
                c("/box"),
                vec![c("/usr/bin/python3"), c("/bin/python3")],
                vec![c("python3"), c("main.py"), c("")],
                vec![c("PATH=/usr/bin:/bin"), c("LANG=C.UTF-8")],
            ),
        }
    }

    fn steps() -> (Vec<Step>, Vec<Step>) {
        let fixed = vec![
            Step::Tmpfs { target: c("/stage"), options: c("size=1m,mode=755"), noexec: false },
            Step::Mkdir { path: c("/stage/usr"), mode: 0o755 },
            Step::Bind { source: c("/usr"), target: c("/stage/usr") },
            Step::Seal { target: c("/stage/usr"), writable: false, recursive: true },
            Step::Symlink { target: c("usr/bin"), path: c("/stage/bin") },
            Step::File { path: c("/stage/dev/null") },
            Step::Proc { target: c("/stage/proc") },
        ];
        let run = vec![
            Step::Chown { path: c("/stage/tmp/box"), uid: 1_991_000_007 },
            Step::Tmpfs { target: c("/stage/tmp"), options: c("size=64m"), noexec: true },
        ];
        (fixed, run)
    }

    #[test]
    fn a_plan_comes_back_as_it_was_sent() {
        let (fixed, run) = steps();
        let sent = init(&fixed, &run);
        let bytes = encode(&sent);
        let mut plan = decode(&bytes).expect("decodes");
        let got = plan.init().expect("an init");
        // Same fields (the two step lists become one, numbered as before) ...
        assert_eq!(got.steps[0], [fixed.clone(), run.clone()].concat());
        assert!(got.steps[1].is_empty());
        assert_eq!((got.keep.clone(), got.sync, got.report), (vec![3, 5, 9], 9, 5));
        assert_eq!(
            (got.exec.stdio, got.exec.uid, got.exec.rlimits.clone()),
            (sent.exec.stdio, sent.exec.uid, sent.exec.rlimits.clone())
        );
        assert_eq!(
            (&got.exec.argv, &got.exec.env, &got.exec.paths),
            (&sent.exec.argv, &sent.exec.env, &sent.exec.paths)
        );
        // ... so the same bytes again.
        assert_eq!(encode(&got), bytes);
        // The program's part moves out once.
        assert!(plan.init().is_none());
    }

    #[test]
    fn a_short_long_or_garbled_plan_is_refused() {
        let (fixed, run) = steps();
        let bytes = encode(&init(&fixed, &run));
        for n in 0..bytes.len() {
            assert!(
                decode(&bytes[..n]).is_none(),
                "a plan cut at {n} of {} bytes was accepted",
                bytes.len()
            );
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(decode(&long).is_none(), "a trailing byte was accepted");
        // The first step's tag (after keep: 4 + 3×4, sync, report, the step count).
        let mut garbled = bytes.clone();
        garbled[4 + 12 + 8 + 4] = 99;
        assert!(decode(&garbled).is_none(), "an unknown step was accepted");
        // A count far beyond the bytes left is refused, not allocated.
        let mut huge = bytes;
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&huge).is_none());
    }
}
