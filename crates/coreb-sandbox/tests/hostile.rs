//! Hostile programs against the sandbox, each the attack of a hole in issue #14: shared-memory,
//! memfd and multi-process memory bombs, host unix sockets, the judge's environment and
//! memory through /proc, processes that outlive their run (and their judge), host files
//! such as a build directory's expected outputs, and uid pools that would run code as root.
//!
//! They run as whatever user runs the tests; as root, `runs_unprivileged_too` also runs the
//! whole file again as `nobody` (user-namespace mode). A check that cannot apply to the
//! isolation at hand (a cgroup-only bound without a cgroup) says so on stderr and is skipped.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use coreb_sandbox::{
    BusySlots, DirAccess, LimitHit, Limits, MemoryBound, Outcome, Program, Sandbox, SandboxConfig,
};

fn sandbox() -> &'static Sandbox {
    static S: std::sync::OnceLock<Sandbox> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        let s = Sandbox::new(SandboxConfig::default()).expect("sandbox");
        eprintln!("isolation: {}; note: {:?}", s.isolation(), s.isolation().note);
        s
    })
}

/// Every run of this file shares the busy slots of a judge that lets waiting runs give way
/// (`Sandbox::run_sharing`): the containment is the same whether or not a run is watched.
fn run(program: &Program<'_>, limits: &Limits) -> Result<Outcome, coreb_sandbox::SandboxError> {
    static SLOTS: std::sync::OnceLock<BusySlots> = std::sync::OnceLock::new();
    sandbox().run_sharing(program, limits, Some(SLOTS.get_or_init(|| BusySlots::new(4))))
}

fn python(script: &str, stdin: &[u8], limits: &Limits) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let program = Program {
        argv: vec!["python3".into(), "-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        stdin,
        dir: dir.path(),
        access: DirAccess::ReadOnly,
        cache: None,
    };
    run(&program, limits).unwrap()
}

/// `/bin/sh -c script` in `dir`, with no stdin.
fn shell<'a>(dir: &'a Path, script: &str) -> Program<'a> {
    Program {
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        stdin: b"",
        dir,
        access: DirAccess::ReadOnly,
        cache: None,
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// Limits for memory bombs: 256 MiB (+ a 32 MiB tmpfs) for the run.
fn bomb_limits() -> Limits {
    Limits {
        memory_mb: 256,
        tmp_size_mb: 32,
        wall_time_ms: 30_000,
        cpu_time_ms: 20_000,
        processes: 16,
        ..Limits::default()
    }
}

/// The run's memory stayed within the bound (with a little slack for accounting granularity).
fn assert_bounded(out: &Outcome, what: &str) {
    let cap_kb = (256 + 32 + 16) * 1024;
    assert!(!out.success(), "{what}: the bomb finished: {out:?}");
    if out.memory_bound != MemoryBound::Rlimit {
        assert!(
            out.peak_memory_kb <= cap_kb,
            "{what}: peak {} KiB over the bound",
            out.peak_memory_kb
        );
    }
    eprintln!(
        "{what}: {:?} {:?}, peak {} KiB, bound {}",
        out.status, out.limit, out.peak_memory_kb, out.memory_bound
    );
}

#[test]
fn shared_memory_bomb_is_stopped_by_the_runs_bound() {
    // 3 GiB of MAP_SHARED|MAP_ANONYMOUS memory, touched page by page: RLIMIT_DATA does not
    // count it; a cgroup does, and the fallback's RLIMIT_AS refuses the mapping.
    let out = python(
        "import mmap\nm = mmap.mmap(-1, 3 << 30)\nfor i in range(0, 3 << 30, 4096):\n    m[i] = 1\nprint('survived')",
        b"",
        &bomb_limits(),
    );
    assert_bounded(&out, "shared-memory bomb");
    match out.memory_bound {
        MemoryBound::Rlimit => {
            assert!(text(&out.stderr).contains("Cannot allocate memory"), "{}", text(&out.stderr))
        }
        _ => assert_eq!(out.limit, Some(LimitHit::Memory), "{}", text(&out.stderr)),
    }
}

#[test]
fn memfd_bomb_is_stopped_by_the_runs_bound() {
    if sandbox().memory_bound() == MemoryBound::Rlimit {
        eprintln!(
            "skipped: memfd pages are no process's memory; only a cgroup bounds them, and this run has none ({:?})",
            sandbox().isolation().note
        );
        return;
    }
    // File size limit out of the way: the memory bound alone must stop it.
    let limits = Limits { file_size_bytes: 8 << 30, ..bomb_limits() };
    let out = python(
        "import os\nfd = os.memfd_create('bomb')\nchunk = b'x' * (1 << 20)\nfor _ in range(3072):\n    os.write(fd, chunk)\nprint('survived')",
        b"",
        &limits,
    );
    assert_bounded(&out, "memfd bomb");
}

#[test]
fn multi_process_bomb_is_stopped_by_the_runs_bound() {
    if sandbox().memory_bound() == MemoryBound::Rlimit {
        eprintln!(
            "skipped: without a cgroup memory is bounded per process (RLIMIT_AS x processes), not per run ({:?})",
            sandbox().isolation().note
        );
        return;
    }
    // Eight processes of 200 MiB each: every one is within its RLIMIT_DATA (256 MiB).
    let out = python(
        "import os, time\nkids = []\nfor _ in range(8):\n    pid = os.fork()\n    if pid == 0:\n        b = bytearray(200 << 20)\n        time.sleep(3)\n        os._exit(0)\n    kids.append(pid)\nfor k in kids:\n    os.waitpid(k, 0)\nprint('survived')",
        b"",
        &bomb_limits(),
    );
    assert_bounded(&out, "multi-process bomb");
    assert_eq!(out.limit, Some(LimitHit::Memory));
}

#[test]
fn host_unix_sockets_are_unreachable() {
    let me = std::process::id();
    let mut places: Vec<PathBuf> = vec![
        std::env::temp_dir().join(format!("coreb-hostile-{me}.sock")),
        PathBuf::from(format!("/var/tmp/coreb-hostile-{me}.sock")),
    ];
    if root() {
        places.push(PathBuf::from(format!("/run/coreb-hostile-{me}.sock")));
    }
    let listeners: Vec<UnixListener> = places
        .iter()
        .map(|p| {
            let _ = std::fs::remove_file(p);
            let l = UnixListener::bind(p).unwrap();
            l.set_nonblocking(true).unwrap();
            l
        })
        .collect();
    // An abstract socket lives in the network namespace.
    let abstract_name = format!("coreb-hostile-{me}");
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        let l = UnixListener::bind_addr(&addr).unwrap();
        l.set_nonblocking(true).unwrap();
        l
    };
    let input: String = places
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .chain([format!("@{abstract_name}\n")])
        .collect();
    let out = python(
        "import socket, sys\nfor line in sys.stdin.read().split():\n    s = socket.socket(socket.AF_UNIX)\n    addr = '\\0' + line[1:] if line.startswith('@') else line\n    try:\n        s.connect(addr)\n        print('connected', line)\n    except OSError as e:\n        print('refused', line, e.errno)",
        input.as_bytes(),
        &Limits::default(),
    );
    let stdout = text(&out.stdout);
    assert!(out.success(), "{out:?}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("refused")).count(),
        places.len() + 1,
        "{stdout}"
    );
    for l in listeners.iter().chain([&abstract_listener]) {
        assert!(l.accept().is_err(), "a sandboxed program reached a host socket: {stdout}");
    }
    for p in &places {
        let _ = std::fs::remove_file(p);
    }
}

#[test]
fn the_judges_environment_and_memory_are_unreadable() {
    // The judge's (this test's) environment holds CARGO_MANIFEST_DIR; where init is a copy of
    // the judge (unprivileged), its /proc/1/environ and /proc/1/mem would show it, as would
    // the judge's own. As root, init is the judge's binary started again, with an empty
    // environment and none of the judge's memory.
    let secret = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let script = "import os, sys\njudge = sys.stdin.read().strip()\nfound = []\nfor pid in sorted(set(os.listdir('/proc')) | {judge, '1'}):\n    if not pid.isdigit():\n        continue\n    for f in ('environ', 'mem', 'cmdline'):\n        try:\n            with open('/proc/%s/%s' % (pid, f), 'rb') as h:\n                data = h.read(1 << 20) if f != 'mem' else b'readable'\n            found.append('%s/%s:%s' % (pid, f, data.decode('latin-1')))\n        except OSError as e:\n            found.append('%s/%s:denied %d' % (pid, f, e.errno))\nprint('\\n'.join(found))";
    let out = python(script, std::process::id().to_string().as_bytes(), &Limits::default());
    let stdout = text(&out.stdout);
    assert!(out.success(), "{out:?}");
    assert!(!stdout.contains(&secret), "the judge's environment leaked:\n{stdout}");
    assert!(stdout.contains("1/environ:denied"), "{stdout}");
    assert!(stdout.contains("1/mem:denied"), "{stdout}");
    assert!(
        stdout.contains(&format!("{}/environ:denied 2", std::process::id())),
        "the judge's pid is visible:\n{stdout}"
    );
    if root() {
        assert!(
            stdout.contains("1/cmdline:coreb-sandbox-init\0"),
            "init is not the re-executed judge binary:\n{stdout}"
        );
    }
}

/// Host processes whose command line is exactly `argv`.
fn processes_running(argv: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            (cmdline == want).then_some(pid)
        })
        .collect()
}

#[test]
fn a_setsid_double_forked_process_dies_with_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = "61.4242";
    let program =
        shell(dir.path(), &format!("setsid sh -c 'sleep {marker} &' ; sleep 0.3; echo started"));
    let out = run(&program, &Limits::default()).unwrap();
    assert_eq!(text(&out.stdout), "started\n", "{out:?}");
    assert!(out.wall_ms < 5_000, "the run waited for its stray: {} ms", out.wall_ms);
    assert_eq!(
        processes_running(&["sleep", marker]),
        Vec::<u32>::new(),
        "the double-forked sleep outlived its run"
    );
}

/// Not a test by itself: the judge that `a_killed_judge_takes_its_runs_with_it` kills.
#[test]
#[ignore = "helper: run by a_killed_judge_takes_its_runs_with_it"]
fn helper_judge_with_a_long_run() {
    let Ok(marker) = std::env::var("COREB_SANDBOX_HELPER_MARKER") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let program = shell(dir.path(), &format!("setsid sh -c 'sleep {marker} &' ; sleep {marker}1"));
    let _ = run(&program, &Limits { wall_time_ms: 120_000, ..Limits::default() });
}

#[test]
fn a_killed_judge_takes_its_runs_with_it() {
    let marker = format!("62.{}", std::process::id());
    let mut judge = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "helper_judge_with_a_long_run", "--ignored", "--nocapture"])
        .env("COREB_SANDBOX_HELPER_MARKER", &marker)
        .env_remove("COREB_SANDBOX_NESTED")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let stray = ["sleep", marker.as_str()];
    let main = format!("{marker}1");
    while processes_running(&stray).is_empty() || processes_running(&["sleep", &main]).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the helper judge never started its run"
        );
        assert!(judge.try_wait().unwrap().is_none(), "the helper judge ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SIGKILL: no destructor, no cleanup in the judge.
    judge.kill().unwrap();
    judge.wait().unwrap();
    let killed = Instant::now();
    while !(processes_running(&stray).is_empty() && processes_running(&["sleep", &main]).is_empty())
    {
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "processes of a killed judge's run are still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Not a test by itself: the judge that `a_judge_that_is_pid_1_collects_no_zombies` runs as
/// PID 1 of a namespace of its own.
#[test]
#[ignore = "helper: run by a_judge_that_is_pid_1_collects_no_zombies"]
fn helper_judge_as_pid_1() {
    if std::env::var_os("COREB_SANDBOX_HELPER_PID1").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..20 {
        // Each run leaves an orphan that exits right after its parent.
        let program = shell(dir.path(), "(sleep 0.05 &) ; exit 0");
        assert!(run(&program, &Limits::default()).unwrap().success());
    }
    // A control: one child of our own that we do not wait for is one zombie.
    #[allow(clippy::zombie_processes)]
    let _control = Command::new("/bin/true").spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let me = std::process::id().to_string();
    let zombies = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
            let field = |k: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(k))
                    .map(str::trim)
                    .unwrap_or("")
                    .to_owned()
            };
            field("PPid:") == me && field("State:").starts_with('Z')
        })
        .count();
    println!("pid {me}, zombies {zombies}");
}

#[test]
fn a_judge_that_is_pid_1_collects_no_zombies() {
    if !root() {
        eprintln!(
            "skipped: making the judge PID 1 of a namespace needs root here (the uid pool's lock directory belongs to root)"
        );
        return;
    }
    let Ok(unshare) = which("unshare") else {
        eprintln!("skipped: no `unshare`");
        return;
    };
    let out = Command::new(unshare)
        .args(["--pid", "--fork", "--mount-proc", "--"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "helper_judge_as_pid_1", "--ignored", "--nocapture"])
        .env("COREB_SANDBOX_HELPER_PID1", "1")
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    // Only the helper's own control child: nothing of the runs.
    assert!(stdout.contains("pid 1, zombies 1"), "{stdout}");
}

#[test]
fn host_files_outside_the_allowlist_are_invisible() {
    // A build directory with expected outputs, outside /tmp, and one in the host's /tmp.
    let build =
        tempfile::Builder::new().prefix("coreb-hostile-build-").tempdir_in("/var/tmp").unwrap();
    let expected = build.path().join("artifacts/rewrite/expected.txt");
    std::fs::create_dir_all(expected.parent().unwrap()).unwrap();
    std::fs::write(&expected, "the answer is 42").unwrap();
    let host_tmp = tempfile::tempdir().unwrap();
    let in_tmp = host_tmp.path().join("expected.txt");
    std::fs::write(&in_tmp, "the answer is 42").unwrap();
    let input = format!("{}\n{}\n", expected.display(), in_tmp.display());
    let script = "import os, sys\nfor p in sys.stdin.read().split():\n    try:\n        print('read', open(p).read())\n    except OSError as e:\n        print('missing', e.errno)\nprint('root', ' '.join(sorted(os.listdir('/'))))\nfor p in ('/etc/coreb-escape', '/usr/coreb-escape', '/coreb-escape', '/tmp/box/x'):\n    try:\n        open(p, 'w').write('x')\n        print('wrote', p)\n    except OSError as e:\n        print('refused', e.errno)";
    let out = python(script, input.as_bytes(), &Limits::default());
    let stdout = text(&out.stdout);
    assert!(out.success(), "{out:?}");
    assert!(!stdout.contains("answer"), "{stdout}");
    assert_eq!(stdout.lines().filter(|l| l.starts_with("missing 2")).count(), 2, "{stdout}");
    let listed: Vec<&str> =
        stdout.lines().find_map(|l| l.strip_prefix("root ")).unwrap().split(' ').collect();
    for name in &listed {
        assert!(
            ["bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp", "usr"]
                .contains(name),
            "`/{name}` is visible: {stdout}"
        );
    }
    assert_eq!(stdout.lines().filter(|l| l.starts_with("refused")).count(), 4, "{stdout}");
}

#[test]
fn uid_pools_that_would_run_code_as_root_are_refused() {
    for (base, count, says) in [
        (0, 16, "contains uid 0"),
        (65_530, 5, "`nobody`"),
        (u32::MAX - 2, 5, "wraps around"),
        (u32::MAX, 1, "4294967295"),
    ] {
        let err = Sandbox::new(SandboxConfig {
            uid_base: base,
            uid_count: count,
            ..SandboxConfig::default()
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains(says), "{base}+{count}: {err}");
    }
}

#[test]
fn runs_unprivileged_too() {
    if std::env::var_os("COREB_SANDBOX_NESTED").is_some() {
        return;
    }
    if !root() {
        eprintln!("skipped: not root, this run is the unprivileged one");
        return;
    }
    let Ok(setpriv) = which("setpriv") else {
        eprintln!("skipped: no `setpriv` to run the tests as nobody");
        return;
    };
    let userns = Command::new(&setpriv)
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "unshare",
            "--user",
            "true",
        ])
        .output();
    if !userns.is_ok_and(|o| o.status.success()) {
        eprintln!(
            "skipped: this kernel refuses user namespaces to unprivileged users, so the sandbox cannot run unprivileged here"
        );
        return;
    }
    let exe = std::env::current_exe().unwrap();
    // The nested tests start this binary again as nobody (the killed-judge helper): every
    // directory above it must let nobody through (a checkout under a 0700 `mktemp -d` does not).
    let reachable = Command::new(&setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", "test", "-x"])
        .arg(&exe)
        .status();
    if !reachable.is_ok_and(|s| s.success()) {
        eprintln!(
            "skipped: nobody cannot reach this test binary ({}): a directory above it is closed to other users",
            exe.display()
        );
        return;
    }
    let out = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe)
        .args(["--skip", "runs_unprivileged_too", "--test-threads", "2", "--nocapture"])
        .env("COREB_SANDBOX_NESTED", "1")
        .env("TMPDIR", "/tmp")
        .current_dir("/")
        .output()
        .unwrap();
    let report = format!("{}{}", text(&out.stdout), text(&out.stderr));
    eprintln!("--- as nobody ---\n{report}--- end ---");
    assert!(out.status.success(), "as nobody:\n{report}");
    assert!(report.contains("test result: ok"), "{report}");
}

fn which(name: &str) -> Result<PathBuf, ()> {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .ok_or(())
}
