//! One-shot walk cost (issue 17, target 1; issue 26): the CPU a whole `conduct-walker walk` process uses
//! to walk one loopback sandbox agent (consent read, two card fetches, one A2A request, each on a
//! fresh TLS connection), measured from outside: this bench starts the agent in its own process,
//! runs the release binary RUNS times one after another, and reads each child's user + system
//! CPU from `getrusage(RUSAGE_CHILDREN)` around its `wait`. `--version` (no network, no TLS) is
//! measured the same way as the process floor.
//!
//!     cargo bench --bench walk_oneshot
//!     WALK_ONESHOT_BIN=/path/to/other/conduct-walker cargo bench --bench walk_oneshot
//!     WALK_ONESHOT_SERVE=1 cargo bench --bench walk_oneshot   # only serve the agent, for perf
//!     WALK_ONESHOT_STRACE=1 cargo bench --bench walk_oneshot  # also `strace -c -f` one walk
//!
//! Prints the machine (CPU model, cores, load average before and after, where the trust roots
//! come from), then medians (and min, max) of CPU and wall time; the target is a median
//! ≤ 10 ms CPU (issue 26; issue 17 asked ≤ 20 ms).

use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 20;
/// Issue 26's target for the median CPU of one walk.
const TARGET_MS: f64 = 10.0;

fn children_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert_eq!(rc, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Run `cmd` RUNS times (after one unmeasured run); each run's (CPU, wall).
fn measure(mut cmd: impl FnMut() -> Command, what: &str) -> Vec<(Duration, Duration)> {
    let mut samples = Vec::new();
    for i in 0..=RUNS {
        let before = children_cpu();
        let started = Instant::now();
        let out = cmd()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let wall = started.elapsed();
        let cpu = children_cpu() - before;
        assert!(
            out.status.success(),
            "{what} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if i > 0 {
            samples.push((cpu, wall));
        }
    }
    samples
}

/// The CPU model as `/proc/cpuinfo` names it (what `lscpu` shows as "Model name").
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The median CPU in ms.
fn report(what: &str, samples: &[(Duration, Duration)]) -> f64 {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut cpu: Vec<f64> = samples.iter().map(|s| ms(s.0)).collect();
    let mut wall: Vec<f64> = samples.iter().map(|s| ms(s.1)).collect();
    cpu.sort_by(f64::total_cmp);
    wall.sort_by(f64::total_cmp);
    let median = |v: &[f64]| (v[(v.len() - 1) / 2] + v[v.len() / 2]) / 2.0;
    println!(
        "{what}: CPU median {:.1} ms (min {:.1}, max {:.1}); wall median {:.1} ms (min {:.1}, max {:.1}); {} runs",
        median(&cpu),
        cpu[0],
        cpu[cpu.len() - 1],
        median(&wall),
        wall[0],
        wall[wall.len() - 1],
        samples.len()
    );
    median(&cpu)
}

fn main() {
    // `cargo bench` passes `--bench`; this bench takes no arguments.
    let bin = std::env::var_os("WALK_ONESHOT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_conduct-walker")));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ca = SandboxCa::generate();
    let agent = rt
        .block_on(SandboxAgent::start(&ca, Behaviour::default()))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca_pem = dir.path().join("ca.pem");
    ca.write_pem(&ca_pem).unwrap();
    let out = dir.path().join("walk.json");
    let origin = agent.origin();
    if std::env::var_os("WALK_ONESHOT_SERVE").is_some() {
        // For profiling by hand (perf, valgrind): keep the agent up and say where it is.
        println!("origin {origin} ca {}", ca_pem.display());
        rt.block_on(std::future::pending::<()>());
    }
    println!(
        "machine: {} ({} cores); load average {}",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    let env = |name| std::env::var(name).unwrap_or_else(|_| "unset".into());
    println!(
        "binary {}; SSL_CERT_FILE {}, SSL_CERT_DIR {}",
        bin.display(),
        env("SSL_CERT_FILE"),
        env("SSL_CERT_DIR")
    );
    let floor = measure(
        || {
            let mut c = Command::new(&bin);
            c.arg("--version");
            c
        },
        "--version",
    );
    report("conduct-walker --version", &floor);
    let walk = || {
        let mut c = Command::new(&bin);
        c.args([
            "walk", "--origin", &origin, "--mode", "a2a", "--wire", "1.0",
        ])
        .args(["--witness-name", "oneshot bench", "--vantage", "loopback"])
        .arg("--allow-private-network")
        .arg("--ca-cert")
        .arg(&ca_pem)
        .arg("--out")
        .arg(&out);
        c
    };
    let walks = measure(walk, "walk");
    let median = report("conduct-walker walk (one loopback agent)", &walks);
    println!(
        "target: median <= {TARGET_MS} ms CPU: {}",
        if median <= TARGET_MS {
            "met"
        } else {
            "NOT met"
        }
    );
    println!("load average after {}", load_average());
    if std::env::var_os("WALK_ONESHOT_STRACE").is_some() {
        // The syscall table of one walk (BENCHMARKS.md), when strace is installed.
        let mut c = Command::new("strace");
        c.args(["-c", "-f", "-o", "/dev/stderr"]).arg(&bin);
        c.args(walk().get_args());
        match c.output() {
            Ok(o) => println!(
                "strace -c -f of one walk:\n{}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => println!("strace not run: {e}"),
        }
    }
}
