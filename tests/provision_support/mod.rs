//! Third-party components the tests install under `target/` on first use (the README's one test
//! command must pass on a fresh machine): a Python virtualenv from a pinned requirements file,
//! or an npm tree. Each is built once, under an exclusive `flock` (nextest runs a process per
//! test, and several may get here at once: one builds, the others wait and find it built), and
//! stamped with the SHA-256 of its inputs, so a changed pin rebuilds it.
#![allow(dead_code)]

use std::fs::{self, File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The target directory: `CARGO_TARGET_TMPDIR` is `<target>/tmp`.
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// `target/<name>`, built by `build` unless it was already built from the same `inputs` (the
/// stamp holds their SHA-256). A stale tree is removed first; `build` gets the empty directory.
pub fn once_under_target(name: &str, inputs: &[u8], build: impl FnOnce(&Path)) -> PathBuf {
    let target = target_dir();
    fs::create_dir_all(&target).expect("create the target directory");
    let dir = target.join(name);
    let stamp = dir.join(".inputs-sha256");
    let wanted = conduct_walker::digest::sha256_hex(inputs);
    let lock_path = target.join(format!("{name}.lock"));
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap_or_else(|e| panic!("open {}: {e}", lock_path.display()));
    let _guard = Flock::exclusive(&lock);
    if fs::read_to_string(&stamp).is_ok_and(|s| s.trim() == wanted) {
        return dir;
    }
    if dir.exists() {
        fs::remove_dir_all(&dir)
            .unwrap_or_else(|e| panic!("remove the stale {}: {e}", dir.display()));
    }
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let started = Instant::now();
    eprintln!("provisioning {} (first use)", dir.display());
    build(&dir);
    fs::write(&stamp, format!("{wanted}\n")).expect("write the stamp");
    eprintln!(
        "provisioned {} in {:.1} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    dir
}

/// The Python of `target/<name>`, a virtualenv with `requirements` installed by pip (plus
/// `pip_args`). Needs `python3` with its venv module and PyPI reachable through pip the first time.
pub fn python_venv(name: &str, requirements: &Path, pip_args: &[&str]) -> PathBuf {
    let pins =
        fs::read(requirements).unwrap_or_else(|e| panic!("read {}: {e}", requirements.display()));
    let venv = once_under_target(name, &pins, |venv| {
        let needs = format!(
            "target/{name} needs python3 (with venv) and PyPI reachable through pip, to install {}",
            requirements.display()
        );
        run_step(
            "create the virtualenv",
            Command::new("python3").args(["-m", "venv"]).arg(venv),
            &needs,
        );
        run_step(
            "pip install the pinned packages",
            Command::new(venv.join("bin/python"))
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--no-input",
                ])
                .args(pip_args)
                .arg("-r")
                .arg(requirements),
            &needs,
        );
    });
    venv.join("bin/python")
}

/// Run one provisioning step; on failure, panic with what it needs and the output's tail.
pub fn run_step(what: &str, command: &mut Command, needs: &str) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("could not {what}: {e} ({command:?}). {needs}."));
    if !output.status.success() {
        let tail = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(30)..].join("\n")
        };
        panic!(
            "could not {what}: {command:?} exited with {}. {needs}.\n--- stdout (tail)\n{}\n--- stderr (tail)\n{}",
            output.status,
            tail(&output.stdout),
            tail(&output.stderr)
        );
    }
}

/// An exclusive `flock` held until drop.
struct Flock<'a>(&'a File);

impl<'a> Flock<'a> {
    fn exclusive(file: &'a File) -> Self {
        // SAFETY: flock on a descriptor we own for the guard's lifetime.
        while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let e = std::io::Error::last_os_error();
            assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "flock: {e}");
        }
        Flock(file)
    }
}

impl Drop for Flock<'_> {
    fn drop(&mut self) {
        // SAFETY: unlocking the lock we hold.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}
