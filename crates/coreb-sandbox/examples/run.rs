//! `cargo run -p coreb-sandbox --example run -- [--memory MB] -- CMD ARGS...`: run one command
//! in the sandbox and print its outcome (for trying programs by hand).
use coreb_sandbox::{DirAccess, Limits, Program, Sandbox, SandboxConfig};
fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut limits = Limits::default();
    while args.first().is_some_and(|a| a.starts_with("--")) {
        let flag = args.remove(0);
        if flag == "--" {
            break;
        }
        let v: u64 = args.remove(0).parse().expect("number");
        match flag.as_str() {
            "--memory" => limits.memory_mb = v,
            "--wall" => limits.wall_time_ms = v,
            "--cpu" => limits.cpu_time_ms = v,
            "--processes" => limits.processes = v,
            _ => panic!("{flag}"),
        }
    }
    let sandbox = Sandbox::new(SandboxConfig::default()).expect("sandbox");
    eprintln!("isolation: {}", sandbox.isolation());
    let dir = tempfile::tempdir().unwrap();
    let program = Program {
        argv: args,
        env: vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())],
        stdin: b"",
        dir: dir.path(),
        access: DirAccess::ReadOnly,
        cache: None,
    };
    let out = sandbox.run(&program, &limits).expect("run");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    eprintln!(
        "status {:?} limit {:?} wall {} ms cpu {} ms peak {} KiB (floor {}) bound {}",
        out.status,
        out.limit,
        out.wall_ms,
        out.cpu_ms,
        out.peak_memory_kb,
        out.memory_floor_kb,
        out.memory_bound
    );
}
