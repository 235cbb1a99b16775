//! `cargo run --release -p coreb-sandbox --example overhead -- [RUNS] [BALLAST_MIB] [-- CMD ARGS...]`:
//! what one sandboxed run costs beyond the program, measured as the judge pays it: `RUNS`
//! runs of `CMD` (default `/bin/true`) one after another from a process holding
//! `BALLAST_MIB` MiB of touched memory (the judge's own heap, 0 by default), against the same
//! command run as a bare process. Prints wall per run and the whole machine's CPU per run
//! (from `/proc/stat`, so kernel work done outside the processes — namespace teardown, cgroup
//! removal — counts too; run it on an otherwise idle machine).
use std::process::Command;
use std::time::Instant;

use coreb_sandbox::{DirAccess, Limits, Program, Sandbox, SandboxConfig};

/// Busy jiffies (user, nice, system, irq, softirq, steal) of all CPUs.
fn busy_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let cpu: Vec<u64> = stat
        .lines()
        .next()
        .expect("cpu line")
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().expect("jiffies"))
        .collect();
    let busy = cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6] + cpu[7];
    busy as f64 * 1000.0 / 100.0
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|a| a == "--");
    let cmd: Vec<String> = match split {
        Some(i) => args.split_off(i).into_iter().skip(1).collect(),
        None => vec!["/bin/true".into()],
    };
    let runs: usize = args.first().map_or(200, |a| a.parse().expect("RUNS"));
    let ballast_mib: usize = args.get(1).map_or(0, |a| a.parse().expect("BALLAST_MIB"));
    let ballast: Vec<u8> = (0..ballast_mib << 20).map(|i| i as u8).collect();

    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    eprintln!(
        "isolation: {}; {runs} runs of {cmd:?}; ballast {ballast_mib} MiB",
        sandbox.isolation()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let program = Program {
        argv: cmd.clone(),
        env: vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())],
        stdin: b"",
        dir: dir.path(),
        access: DirAccess::ReadOnly,
        cache: None,
    };
    let limits = Limits::default();

    let measure = |label: &str, run: &dyn Fn()| {
        run();
        let (t, c) = (Instant::now(), busy_ms());
        for _ in 0..runs {
            run();
        }
        let (wall, cpu) = (t.elapsed().as_secs_f64() * 1000.0, busy_ms() - c);
        println!(
            "{label:<10} wall {:7.2} ms/run   machine CPU {:7.2} ms/run",
            wall / runs as f64,
            cpu / runs as f64
        );
    };
    measure("bare", &|| {
        let status = Command::new(&cmd[0]).args(&cmd[1..]).status().expect("bare run");
        assert!(status.success() || cmd[0] != "/bin/true");
    });
    measure("sandboxed", &|| {
        let out = sandbox.run(&program, &limits).expect("sandboxed run");
        assert!(out.success() || cmd[0] != "/bin/true", "{:?}", out.status);
    });
    std::hint::black_box(&ballast);
}
