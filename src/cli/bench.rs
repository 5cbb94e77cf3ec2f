//! `conduct-walker bench`: end-to-end walk throughput against loopback sandbox agents.
//!
//! Starts N honest A2A 1.0 sandbox agents (each its own HTTPS server on 127.0.0.1 with its own
//! leaf certificate), then runs W walks (n0, n1, n3: three HTTPS requests each) round-robin over
//! them, C at a time, through one shared [`Transport`] whose policy admits exactly those origins.
//! The agents run in this process, so the figure includes their TLS and JSON work too: it is a
//! lower bound on what the walker alone sustains on this machine.

use crate::net::{NetPolicy, Transport, TransportConfig};
use crate::sandbox::{Behaviour, SandboxAgent, SandboxCa};
use crate::walk::{Mode, Privacy, RequestProfile, WalkOutcome, WalkRequest, Wire};
use crate::wire::Witness;
use anyhow::{Context, bail};
use clap::Args;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Distinct sandbox agents (HTTPS servers) to start.
    #[arg(long, default_value_t = 500)]
    pub agents: usize,
    /// Walks to run in total, round-robin over the agents.
    #[arg(long, default_value_t = 10_000)]
    pub walks: usize,
    /// Walks in flight at once.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// A short run for CI: 20 agents, 200 walks, concurrency 8 (overrides the sizes above).
    #[arg(long)]
    pub smoke: bool,
}

/// The sizes actually run.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    agents: usize,
    walks: usize,
    concurrency: usize,
}

impl BenchArgs {
    fn sizes(&self) -> anyhow::Result<Sizes> {
        let sizes = if self.smoke {
            Sizes {
                agents: 20,
                walks: 200,
                concurrency: 8,
            }
        } else {
            Sizes {
                agents: self.agents,
                walks: self.walks,
                concurrency: self.concurrency,
            }
        };
        if sizes.agents == 0 || sizes.walks == 0 || sizes.concurrency == 0 {
            bail!("--agents, --walks and --concurrency must each be at least 1");
        }
        Ok(sizes)
    }
}

/// One walk's result as the bench counts it.
struct WalkSample {
    latency: Duration,
    /// Why the walk counts as an error, if it does.
    error: Option<String>,
}

fn judge(outcome: &WalkOutcome) -> Option<String> {
    if let Some(node) = outcome.nodes.iter().find(|n| n.status() == 0) {
        return Some(format!(
            "n{} {} -> status 0: {}",
            node.n,
            node.exchange.request.url,
            node.exchange.transport_error.as_deref().unwrap_or("")
        ));
    }
    if !outcome.verdict.ok {
        let failed: Vec<&str> = outcome
            .assertions
            .iter()
            .filter(|a| a.result == Some(false))
            .map(|a| a.name)
            .collect();
        return Some(format!(
            "verdict {} {}/{} (failed: {})",
            outcome.verdict.outcome(),
            outcome.verdict.n_pass,
            outcome.verdict.n_total,
            failed.join(", ")
        ));
    }
    None
}

pub async fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let sizes = args.sizes()?;
    // Each agent holds a listening socket; each walk in flight holds a client and a server end.
    raise_fd_limit(sizes.agents + 4 * sizes.concurrency + 256)?;

    let setup_started = Instant::now();
    let ca = SandboxCa::generate();
    let mut agents = Vec::with_capacity(sizes.agents);
    for _ in 0..sizes.agents {
        agents.push(
            SandboxAgent::start(&ca, Behaviour::default())
                .await
                .context("cannot start a sandbox agent")?,
        );
    }
    let mut policy = NetPolicy::new(true);
    let requests: Vec<WalkRequest> = agents
        .iter()
        .map(|agent| {
            let origin = agent.origin();
            policy.allow_url(&origin);
            WalkRequest {
                origin,
                endpoint: None,
                mode: Mode::A2a,
                wire: Wire::V1_0,
                witness: Witness {
                    name: "conduct-walker bench".into(),
                    vantage: "loopback sandbox".into(),
                    key_url: None,
                },
                vantage_limitation: None,
                contract_sha256: None,
                privacy: Privacy::Full,
                profile: RequestProfile::Spec,
                caller_card: None,
            }
        })
        .collect();
    let mut config = TransportConfig::new(policy);
    config.extra_roots = vec![ca.cert_der()];
    let transport = Transport::new(config)?;
    let setup = setup_started.elapsed();
    crate::outln!(
        "conduct-walker bench: {} agents started in {:.2} s; {} walks (a2a 1.0, 3 HTTPS requests each), concurrency {}",
        sizes.agents,
        setup.as_secs_f64(),
        sizes.walks,
        sizes.concurrency
    );

    let requests = Arc::new(requests);
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    // C workers pull walk numbers from one counter: at most C walks in flight, none idle
    // while walks remain.
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..sizes.concurrency {
        let requests = requests.clone();
        let next = next.clone();
        let transport = transport.clone();
        let total = sizes.walks;
        workers.spawn(async move {
            let mut samples = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let request = &requests[i % requests.len()];
                let walk_started = Instant::now();
                // The walk exactly as `walk` runs it, card-signature and terms steps included.
                let outcome = crate::cli::walk::walk_once(&transport, request).await;
                samples.push(WalkSample {
                    latency: walk_started.elapsed(),
                    error: judge(&outcome),
                });
            }
            samples
        });
    }
    let mut samples = Vec::with_capacity(sizes.walks);
    while let Some(done) = workers.join_next().await {
        samples.extend(done.context("a bench worker panicked")?);
    }
    let elapsed = started.elapsed();
    let cpu = cpu_seconds()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    drop(agents);

    let errors: Vec<&str> = samples.iter().filter_map(|s| s.error.as_deref()).collect();
    let mut latencies: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
    latencies.sort_unstable();
    let secs = elapsed.as_secs_f64();
    let rows: Vec<(&str, String)> = vec![
        ("agents", sizes.agents.to_string()),
        ("concurrency", sizes.concurrency.to_string()),
        ("walks", samples.len().to_string()),
        ("seconds", format!("{secs:.2}")),
        ("walks/s", format!("{:.0}", samples.len() as f64 / secs)),
        ("p50 walk latency", ms(percentile(&latencies, 50))),
        ("p99 walk latency", ms(percentile(&latencies, 99))),
        ("errors", errors.len().to_string()),
        (
            "CPU per walk (user+sys, walker and agents)",
            cpu.map(|c| format!("{:.2} ms", c * 1000.0 / samples.len() as f64))
                .unwrap_or_else(|| "unknown".into()),
        ),
        (
            "peak RSS (VmHWM)",
            peak_rss_kib()
                .map(|k| format!("{:.1} MiB", k as f64 / 1024.0))
                .unwrap_or_else(|| "unknown".into()),
        ),
    ];
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    crate::outln!();
    crate::outln!("| {:width$} | {:>12} |", "what", "measured");
    crate::outln!("|{}|{}|", "-".repeat(width + 2), "-".repeat(14));
    for (k, v) in &rows {
        crate::outln!("| {k:width$} | {v:>12} |");
    }
    if !errors.is_empty() {
        // The first few are enough to see what went wrong; they are usually all alike.
        crate::errln!("\n{} walk(s) were errors; the first ones:", errors.len());
        for e in errors.iter().take(5) {
            crate::errln!("  {e}");
        }
        return Ok(ExitCode::from(super::EXIT_FINDING));
    }
    Ok(ExitCode::from(super::EXIT_OK))
}

fn percentile(sorted: &[Duration], pct: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // Nearest rank: the smallest value with at least pct% of samples at or below it.
    let rank = (sorted.len() * pct).div_ceil(100).max(1);
    sorted[rank - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// Peak resident set size of this process in KiB (`VmHWM`), where /proc exists.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// User plus system CPU time of this process so far, in seconds.
fn cpu_seconds() -> Option<f64> {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(tv(usage.ru_utime) + tv(usage.ru_stime))
}

/// Raise the soft open-file limit to at least `needed` (up to the hard limit): 500 listening
/// agents plus both ends of every connection in flight exceed the common default of 1024.
fn raise_fd_limit(needed: usize) -> anyhow::Result<()> {
    let needed = needed as libc::rlim_t;
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        bail!(
            "cannot read the open-file limit: {}",
            std::io::Error::last_os_error()
        );
    }
    if lim.rlim_cur >= needed {
        return Ok(());
    }
    if lim.rlim_max != libc::RLIM_INFINITY && lim.rlim_max < needed {
        bail!(
            "this run needs about {needed} open files but the hard limit is {}; raise it (ulimit -Hn {needed}) or use fewer --agents/--concurrency",
            lim.rlim_max
        );
    }
    lim.rlim_cur = needed;
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        bail!(
            "cannot raise the open-file limit to {needed}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}
