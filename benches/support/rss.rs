//! A one-shot `conduct-walker` run's peak memory, as the kernel counts it.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::process::{Command, Stdio};

/// (exit code, peak RSS KiB, first line of stdout) of `conduct-walker args…`.
///
/// Forked from python3, not from the bench: `getrusage(RUSAGE_CHILDREN).ru_maxrss` keeps the
/// high-water mark a process had before `exec`, so a walker forked straight from a bench that
/// holds hundreds of MiB would report the bench's size, not its own. Forked from python3 (about
/// 10 MiB), the figure is the walker's.
pub fn run_measured<S: AsRef<OsStr>>(args: &[S]) -> (i32, i64, String) {
    const LAUNCHER: &str = "import resource, subprocess, sys\n\
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n\
first = (r.stdout.decode('utf-8', 'replace').splitlines() or [''])[0]\n\
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, first)\n";
    let out = Command::new("python3")
        .args(["-c", LAUNCHER])
        .arg(env!("CARGO_BIN_EXE_conduct-walker"))
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut parts = text.trim_end().splitn(3, ' ');
    let code = parts.next().unwrap_or("-1").parse().unwrap_or(-1);
    let rss = parts.next().unwrap_or("0").parse().unwrap_or(0);
    (code, rss, parts.next().unwrap_or_default().to_string())
}
