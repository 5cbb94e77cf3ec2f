//! One-shot walk cost (issue 17, target 1; issue 26; issue 47): the CPU a whole `conduct-walker
//! walk` process uses to walk one loopback sandbox agent (consent read, two card fetches, one A2A
//! request, each on a fresh TLS connection), measured from outside and paired with the reference
//! walker: this bench starts the agent in its own process, then runs our release binary and the
//! reference (`a2a-conduct-walk` in `target/reference-venv`, as the oracle tests provision it)
//! alternately, PAIRS times, reading each child's user + system CPU from
//! `getrusage(RUSAGE_CHILDREN)` around its `wait`.
//!
//! Each walker runs as a user runs it: the system's trust store plus the agent's CA (ours with
//! `--ca-cert`, the reference with `SSL_CERT_FILE` naming the system bundle with the CA appended,
//! the way Python's `ssl` takes an extra CA), ours with its trust roots cache in a directory of
//! the bench's own (`XDG_CACHE_HOME`), warmed by one unmeasured walk. `--version` (no network, no
//! TLS) is measured as the process floor, and a walk with an empty cache each time as the cost of
//! a cache miss (the first walk after the bundle changes).
//!
//!     cargo bench --bench walk_oneshot
//!     WALK_ONESHOT_PAIRS=41 cargo bench --bench walk_oneshot
//!     WALK_ONESHOT_BIN=/path/to/other/conduct-walker cargo bench --bench walk_oneshot
//!     WALK_ONESHOT_SERVE=1 cargo bench --bench walk_oneshot   # only serve the agent, for perf
//!     WALK_ONESHOT_STRACE=1 cargo bench --bench walk_oneshot  # also `strace -c -f` one walk
//!
//! Prints the machine (CPU model, cores, load average before and after, where the trust roots
//! come from), medians (and min, max) of CPU and wall time, and the ratio of the medians
//! (reference / ours); issue 47's target is ≥ 25×. Without the reference venv it says so and
//! measures ours alone.

use conduct_walker::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs of `--version` and of the cache-miss walk.
const RUNS: usize = 20;
/// Pairs (ours, reference) by default.
const PAIRS: usize = 21;
/// Issue 47's target: the reference's median CPU over ours.
const TARGET_RATIO: f64 = 25.0;

fn children_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert_eq!(rc, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// One run of `cmd` to its end: (CPU, wall). Panics, with its output, if it fails.
fn sample(mut cmd: Command, what: &str) -> (Duration, Duration) {
    let before = children_cpu();
    let started = Instant::now();
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let wall = started.elapsed();
    let cpu = children_cpu() - before;
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (cpu, wall)
}

/// Run `cmd` RUNS times (after one unmeasured run); each run's (CPU, wall).
fn measure(mut cmd: impl FnMut() -> Command, what: &str) -> Vec<(Duration, Duration)> {
    sample(cmd(), what);
    (0..RUNS).map(|_| sample(cmd(), what)).collect()
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
    let pairs = std::env::var("WALK_ONESHOT_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(PAIRS);
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
    let cache_home = dir.path().join("cache");
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
    let walk = |cache: &Path| {
        let mut c = Command::new(&bin);
        c.args([
            "walk", "--origin", &origin, "--mode", "a2a", "--wire", "1.0",
        ])
        .args(["--witness-name", "oneshot bench", "--vantage", "loopback"])
        .arg("--allow-private-network")
        .arg("--ca-cert")
        .arg(&ca_pem)
        .arg("--out")
        .arg(&out)
        .env("XDG_CACHE_HOME", cache);
        c
    };
    let reference = reference_walk(&origin, &ca_pem, dir.path());
    // Warm both (ours fills its cache; the reference's imports reach the page cache).
    sample(walk(&cache_home), "walk");
    if let Some(reference) = &reference {
        sample(reference(), "the reference walker");
    }
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for i in 0..pairs {
        // Which goes first alternates, so a drift in the machine's load falls on both.
        let mut one = |ours_turn: bool| {
            if ours_turn {
                ours.push(sample(walk(&cache_home), "walk"));
            } else if let Some(reference) = &reference {
                theirs.push(sample(reference(), "the reference walker"));
            }
        };
        one(i % 2 == 0);
        one(i % 2 == 1);
    }
    let median = report("conduct-walker walk (one loopback agent)", &ours);
    match theirs.is_empty() {
        true => println!(
            "the reference walker: not run (no {}; the oracle tests provision it)",
            reference_bin().display()
        ),
        false => {
            let theirs_median = report("a2a-conduct-walk (the same agent, alternating)", &theirs);
            let ratio = theirs_median / median;
            println!(
                "ratio of median CPU, reference / ours: {ratio:.1}x over {pairs} pairs (target >= {TARGET_RATIO}x: {})",
                if ratio >= TARGET_RATIO {
                    "met"
                } else {
                    "NOT met"
                }
            );
        }
    }
    let cold = measure(
        || walk(&dir.path().join(format!("cold-{}", unique()))),
        "walk with an empty cache",
    );
    report(
        "conduct-walker walk, trust roots cache empty each time",
        &cold,
    );
    println!("load average after {}", load_average());
    if std::env::var_os("WALK_ONESHOT_STRACE").is_some() {
        // The syscall table of one walk (BENCHMARKS.md), when strace is installed.
        let mut c = Command::new("strace");
        c.args(["-c", "-f", "-o", "/dev/stderr"]).arg(&bin);
        let w = walk(&cache_home);
        c.args(w.get_args()).env("XDG_CACHE_HOME", &cache_home);
        match c.output() {
            Ok(o) => println!(
                "strace -c -f of one walk:\n{}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => println!("strace not run: {e}"),
        }
    }
}

/// A number no earlier call returned (a fresh cache directory per cold walk).
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The reference walker's command, as the oracle tests provision it.
fn reference_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/reference-venv/bin/a2a-conduct-walk")
}

/// A walk of `origin` by the reference walker, when its venv exists: the same flags as ours,
/// the system bundle with the agent's CA appended as `SSL_CERT_FILE`.
fn reference_walk(origin: &str, ca_pem: &Path, dir: &Path) -> Option<impl Fn() -> Command> {
    let bin = reference_bin();
    if !bin.exists() {
        return None;
    }
    let system = std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/ssl/certs/ca-certificates.crt"));
    let mut bundle = std::fs::read(&system).unwrap_or_default();
    bundle.extend(std::fs::read(ca_pem).unwrap());
    let bundle_path = dir.join("system-plus-agent-ca.pem");
    std::fs::write(&bundle_path, bundle).unwrap();
    let out = dir.join("reference.json");
    let origin = origin.to_string();
    Some(move || {
        let mut c = Command::new(&bin);
        c.args(["--origin", &origin, "--mode", "a2a", "--wire", "1.0"])
            .args(["--witness-name", "oneshot bench", "--vantage", "loopback"])
            .arg("--out")
            .arg(&out)
            .env("SSL_CERT_FILE", &bundle_path)
            .env_remove("SSL_CERT_DIR");
        c
    })
}
