//! The sandbox's contract on well-behaved and simply misbehaving programs: stdin in, stdout
//! and stderr out, exit codes, limits, multi-megabyte I/O, errors for missing programs.

use std::path::Path;
use std::time::Instant;

use coreb_sandbox::{
    BusySlots, DirAccess, ExitStatus, LimitHit, Limits, Outcome, Program, Sandbox, SandboxConfig,
    SandboxError,
};

fn sandbox() -> &'static Sandbox {
    static S: std::sync::OnceLock<Sandbox> = std::sync::OnceLock::new();
    S.get_or_init(|| {
        let s = Sandbox::new(SandboxConfig::default()).expect("sandbox");
        eprintln!("isolation: {} ({:?})", s.isolation(), s.isolation().note);
        s
    })
}

fn sh_in(dir: &Path, script: &str, stdin: &[u8], limits: &Limits) -> Outcome {
    let program = Program {
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        stdin,
        dir,
        access: DirAccess::ReadOnly,
        cache: None,
    };
    sandbox().run(&program, limits).unwrap()
}

fn sh(script: &str, stdin: &[u8], limits: &Limits) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    sh_in(dir.path(), script, stdin, limits)
}

#[test]
fn runs_reads_stdin_and_reports() {
    let out = sh("cat; echo err >&2; exit 3", b"hello\n", &Limits::default());
    assert_eq!(out.status, ExitStatus::Exited(3));
    assert_eq!(out.stdout, b"hello\n");
    assert_eq!(out.stderr, b"err\n");
    assert_eq!(out.limit, None);
    assert!(out.peak_memory_kb > 0);
}

#[test]
fn wall_limit_kills_background_children_too() {
    let limits = Limits { wall_time_ms: 300, ..Limits::default() };
    let out = sh("(setsid sleep 30 &) ; sleep 30", b"", &limits);
    assert_eq!(out.limit, Some(LimitHit::WallTime));
    assert!(out.wall_ms < 5_000, "{}", out.wall_ms);
}

#[test]
fn output_cap() {
    let limits = Limits { output_bytes: 1000, ..Limits::default() };
    let out = sh("yes", b"", &limits);
    assert_eq!(out.limit, Some(LimitHit::Output));
    assert_eq!(out.stdout.len(), 1000);
}

#[test]
fn cpu_limit() {
    let limits = Limits { cpu_time_ms: 1000, ..Limits::default() };
    let out = sh("while :; do :; done", b"", &limits);
    assert_eq!(out.limit, Some(LimitHit::CpuTime), "{out:?}");
}

#[test]
fn multi_megabyte_stdin_and_stdout_do_not_deadlock() {
    // 8 MiB in, 8 MiB out, through a program that writes before it has read everything.
    let input: Vec<u8> = (0..8u32 << 20).map(|i| b'a' + (i % 26) as u8).collect();
    let out = sh("cat", &input, &Limits { output_bytes: 64 << 20, ..Limits::default() });
    assert_eq!(out.status, ExitStatus::Exited(0));
    assert!(out.stdout == input, "got {} bytes", out.stdout.len());
    // A program that never reads its (large) stdin but writes a lot.
    let out = sh(
        "head -c 6000000 /dev/zero",
        &input,
        &Limits { output_bytes: 64 << 20, ..Limits::default() },
    );
    assert_eq!(out.stdout.len(), 6_000_000);
    assert_eq!(out.status, ExitStatus::Exited(0));
}

#[test]
fn a_missing_program_is_a_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let program = Program {
        argv: vec!["no-such-compiler".into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        stdin: b"",
        dir: dir.path(),
        access: DirAccess::ReadOnly,
        cache: None,
    };
    match sandbox().run(&program, &Limits::default()) {
        Err(SandboxError::Spawn { program, source }) => {
            assert_eq!(program, "no-such-compiler");
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_directory_is_read_only_for_tests_and_writable_for_compiles() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.txt"), "data").unwrap();
    let out = sh_in(
        dir.path(),
        "cat /tmp/box/in.txt; touch /tmp/box/x 2>/dev/null && echo wrote || echo refused; touch /tmp/work/y && echo scratch",
        b"",
        &Limits::default(),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "datarefused\nscratch\n");
    let program = Program {
        argv: vec!["/bin/sh".into(), "-c".into(), "echo built > /tmp/box/out && pwd".into()],
        env: vec![],
        stdin: b"",
        dir: dir.path(),
        access: DirAccess::Writable,
        cache: None,
    };
    let out = sandbox().run(&program, &Limits::default()).unwrap();
    assert_eq!(out.stdout, b"/tmp/box\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("out")).unwrap(), "built\n");
    // The judge owns what the compile wrote.
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(dir.path().join("out")).unwrap().uid(), unsafe_free_uid());
}

fn unsafe_free_uid() -> u32 {
    std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m)).unwrap()
}

#[test]
fn a_stray_holding_stdin_does_not_hold_up_the_judge() {
    // The program ends at once; a background child keeps its (full, unread) stdin open. The
    // stray dies with the run's namespace, so feeding the 8 MiB ends there.
    let input = vec![b'x'; 8 << 20];
    let out =
        sh("sleep 30 & exit 0", &input, &Limits { wall_time_ms: 20_000, ..Limits::default() });
    assert_eq!(out.status, ExitStatus::Exited(0), "{out:?}");
    assert_eq!(out.limit, None);
    assert!(out.wall_ms < 5_000, "{} ms", out.wall_ms);
}

/// `sh -c script` as one of the runs sharing `slots`; when it returned.
fn sh_sharing(script: &str, limits: &Limits, slots: &BusySlots) -> (Outcome, Instant) {
    let dir = tempfile::tempdir().unwrap();
    let program = Program {
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        stdin: b"",
        dir: dir.path(),
        access: DirAccess::ReadOnly,
        cache: None,
    };
    let out = sandbox().run_sharing(&program, limits, Some(slots)).unwrap();
    (out, Instant::now())
}

/// With one busy slot: `script` starts, then (300 ms later) a run that prints at once. Both
/// outcomes, with when each returned: `script`'s first.
fn first_then_quick(script: &str, limits: &Limits) -> ((Outcome, Instant), (Outcome, Instant)) {
    let slots = BusySlots::new(1);
    std::thread::scope(|s| {
        let first = s.spawn(|| sh_sharing(script, limits, &slots));
        std::thread::sleep(std::time::Duration::from_millis(300));
        let quick = sh_sharing("echo quick", limits, &slots);
        assert_eq!(quick.0.stdout, b"quick\n");
        (first.join().unwrap(), quick)
    })
}

/// With one busy slot, a run that sleeps gives way to the next run, and ends as it would
/// have (here: at its wall limit, hit by wall time).
#[test]
fn a_waiting_run_gives_its_slot_to_the_next() {
    let limits = Limits { wall_time_ms: 6_000, ..Limits::default() };
    let ((slept, slept_done), (quick, quick_done)) =
        first_then_quick("echo started; sleep 30", &limits);
    assert!(!quick.gave_way, "a run that ended at once never waited a whole window");
    assert!(slept.gave_way);
    assert_eq!(
        (slept.stdout.as_slice(), slept.limit),
        (&b"started\n"[..], Some(LimitHit::WallTime))
    );
    assert!(
        quick_done + std::time::Duration::from_secs(3) < slept_done,
        "the quick run waited for the sleeper's end"
    );
}

/// A run that computes keeps its slot until it ends: the next run starts only then.
#[test]
fn a_busy_run_keeps_its_slot() {
    let limits = Limits { cpu_time_ms: 1_500, wall_time_ms: 20_000, ..Limits::default() };
    let ((spun, spun_done), (_, quick_done)) = first_then_quick("while :; do :; done", &limits);
    assert_eq!((spun.limit, spun.gave_way), (Some(LimitHit::CpuTime), false));
    assert!(quick_done >= spun_done, "the quick run started while the busy one held the only slot");
}
