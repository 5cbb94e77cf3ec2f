//! `conduct-walker sandbox`: the demo's loopback agents and a local intake, kept running, so an
//! operator can try the daemon (or `walk`) without a real agent.

use crate::clock::SystemClock;
use crate::net::{NetPolicy, Transport, TransportConfig};
use crate::sandbox::{SandboxAgent, SandboxCa, scenarios};
use anyhow::Context as _;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// Directory for the sandbox's CA certificate (ca.pem), a ready config (walker.toml), the
    /// intake emulator's state and, with that config, the daemon's store (default: a fresh
    /// temporary directory).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Schedule of every target in the written config (cron in UTC, seconds first allowed).
    #[arg(long, value_name = "CRON", default_value = "*/30 * * * * *")]
    pub schedule: String,
    /// Make the local intake lose this share (0 to 1) of its answers to `POST /witness`: it
    /// stores the record, then closes the connection, so the daemon's lookups can be watched
    /// (`outbox list`, the record pages, `/metrics`).
    #[arg(long, value_name = "RATE", value_parser = super::intake::drop_rate)]
    pub drop_answers: Option<f64>,
    /// Seed of the choice of which answers --drop-answers loses.
    #[arg(long, value_name = "S", default_value_t = 0, requires = "drop_answers")]
    pub seed: u64,
    /// How long the `changes-conduct` agent keeps each conduct: honest for this many seconds,
    /// then failing as long, and so on (what an alert opens and resolves on).
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub conduct_period: u64,
}

/// The sandbox agent whose conduct changes on a schedule, walked beside the demo's.
pub const CHANGING_AGENT: &str = "changes-conduct";

/// Start the agents and the intake, write `ca.pem` and `walker.toml`, print where they are and
/// serve until SIGINT or SIGTERM.
pub async fn run(args: SandboxArgs) -> anyhow::Result<ExitCode> {
    use crate::intake_emulator::{Emulator, EmulatorConfig};
    let dir = match &args.out_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("conduct-walker-sandbox-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))?;
    let ca = SandboxCa::generate();
    let ca_path = dir.join("ca.pem");
    ca.write_pem(&ca_path)
        .with_context(|| format!("cannot write {}", ca_path.display()))?;

    // The emulator fetches no key_url here: records signed without one are checked by their
    // signature alone, and unsigned ones are taken on the address lane.
    let emulator_config = EmulatorConfig {
        clock: Arc::new(SystemClock),
        ..EmulatorConfig::new(
            dir.join("intake-emulator.sqlite"),
            Transport::new(TransportConfig::new(NetPolicy::new(false)))?,
        )
    };
    let emulator = Emulator::start(emulator_config, &ca, "127.0.0.1:0".parse()?).await?;
    if let Some(rate) = args.drop_answers {
        emulator.drop_answers(rate, args.seed);
    }

    let all = scenarios();
    let mut agents = Vec::new();
    for (name, pass_under_spec, _) in super::walk::DEMO {
        let (sc, agent) = super::walk::start_scenario(&all, name, &ca).await?;
        agents.push((sc, agent, *pass_under_spec));
    }

    let mut targets: Vec<Target> = agents
        .iter()
        .map(|(sc, agent, pass)| Target {
            name: sc.name.to_string(),
            origin: agent.origin(),
            endpoint: sc.endpoint_path.map(|p| format!("{}{p}", agent.origin())),
            mode: sc.mode.as_str(),
            wire: sc.wire.as_str(),
            expect: if *pass { "PASS" } else { "FAIL" }.to_string(),
            about: sc.about.to_string(),
        })
        .collect();
    // An honest A2A agent that stops echoing the request's metadata every other period: the
    // one to try alerts with (an incident opens, then resolves).
    let scenario = |name: &str| {
        all.iter()
            .find(|s| s.name == name)
            .context("sandbox scenario missing")
            .cloned()
    };
    let (honest, failing) = (scenario("honest-a2a")?, scenario("metadata-missing")?);
    let period = std::time::Duration::from_secs(args.conduct_period.max(1));
    let changing =
        SandboxAgent::start_alternating(&ca, honest.behaviour, failing.behaviour, period).await?;
    targets.push(Target {
        name: CHANGING_AGENT.to_string(),
        origin: changing.origin(),
        endpoint: None,
        mode: honest.mode.as_str(),
        wire: honest.wire.as_str(),
        expect: format!(
            "PASS for {} s, then FAIL as long, and so on",
            period.as_secs()
        ),
        about: "an A2A agent whose conduct changes on a schedule: try alerts with it".into(),
    });
    let pool_member = crate::sandbox::pool::PoolMember::start(&ca).await?;
    let snippet = config_snippet(&ca_path, &emulator.url(), &targets, &args.schedule);
    let config_path = dir.join("walker.toml");
    let whole = format!(
        "# Written by `conduct-walker sandbox`: a daemon config that walks the sandbox's agents.\n\
         # Run it with: conduct-walker run --config {}\n\
         [witness]\n\
         name = \"sandbox trial\"\n\
         vantage = \"loopback sandbox on this machine\"\n\
         intake = \"{}\"\n\n\
         [daemon]\n\
         database = \"{}\"\n\
         listen = \"127.0.0.1:9464\"\n\
         jitter_secs = 0\n\
         drain_interval_secs = 10\n\n{snippet}",
        config_path.display(),
        emulator.url(),
        dir.join("walker.db").display(),
    );
    std::fs::write(&config_path, &whole)
        .with_context(|| format!("cannot write {}", config_path.display()))?;

    announce(&Announced {
        ca_path: &ca_path,
        emulator: &emulator,
        args: &args,
        targets: &targets,
        config_path: &config_path,
        pool_a2a: &pool_member.a2a_url(),
        snippet: &snippet,
    });

    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = sigterm.recv() => {}
    }
    drop(agents);
    drop(changing);
    drop(pool_member);
    drop(emulator);
    Ok(ExitCode::from(super::EXIT_OK))
}

struct Target {
    name: String,
    origin: String,
    endpoint: Option<String>,
    mode: &'static str,
    wire: &'static str,
    expect: String,
    about: String,
}

/// `[network]` trusting the sandbox CA and one `[[target]]` per agent: what an existing config
/// needs to walk the sandbox.
fn config_snippet(ca: &Path, intake: &str, targets: &[Target], schedule: &str) -> String {
    let toml_str = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut s = format!(
        "[network]\n\
         # the sandbox's CA, and its loopback agents (and intake {intake}) admitted\n\
         extra_ca = [{}]\n\
         allow_private_network = true\n",
        toml_str(&ca.display().to_string())
    );
    for t in targets {
        s.push_str(&format!(
            "\n[[target]]\n# {} (expect {})\nname = {}\norigin = {}\n",
            t.about,
            t.expect,
            toml_str(&t.name),
            toml_str(&t.origin)
        ));
        if let Some(e) = &t.endpoint {
            s.push_str(&format!("endpoint = {}\n", toml_str(e)));
        }
        s.push_str(&format!("mode = \"{}\"\n", t.mode));
        if t.mode == "a2a" {
            s.push_str(&format!("wire = \"{}\"\n", t.wire));
        }
        s.push_str(&format!("schedule = {}\n", toml_str(schedule)));
    }
    s
}

/// Where everything `sandbox` started is, for [`announce`].
struct Announced<'a> {
    ca_path: &'a std::path::Path,
    emulator: &'a crate::intake_emulator::RunningEmulator,
    args: &'a SandboxArgs,
    targets: &'a [Target],
    config_path: &'a std::path::Path,
    pool_a2a: &'a str,
    snippet: &'a str,
}

/// Print what runs where, and the commands to try with it.
fn announce(a: &Announced) {
    crate::outln!("conduct-walker sandbox: loopback agents with a CA made for this run");
    crate::outln!("  CA certificate:   {}", a.ca_path.display());
    crate::outln!("  intake emulator:  {}", a.emulator.url());
    if let Some(rate) = a.args.drop_answers {
        crate::outln!(
            "  answers dropped:  {rate} of POST /witness (seed {}); POSTs per record at {}/emulator/posts",
            a.args.seed,
            a.emulator.base()
        );
    }
    crate::outln!("  agents:");
    for t in a.targets {
        crate::outln!(
            "    {:<24} {}  ({} mode; expect {}: {})",
            t.name,
            t.origin,
            t.mode,
            t.expect,
            t.about
        );
    }
    crate::outln!(
        "\nA daemon config that walks them all: {}",
        a.config_path.display()
    );
    crate::outln!("  conduct-walker run --config {}", a.config_path.display());
    crate::outln!(
        "  conduct-walker walk --origin {} --witness-name me --vantage here --ca-cert {} --allow-private-network",
        a.targets[0].origin,
        a.ca_path.display()
    );
    crate::outln!(
        "\nA witness pool member (answers nenrin-witness-request-v1 at its /a2a): {}",
        a.pool_a2a
    );
    crate::outln!(
        "  conduct-walker witness ask --endpoint {} --to {} --ca-cert {} --allow-private-network",
        a.targets[0].origin,
        a.pool_a2a,
        a.ca_path.display()
    );
    crate::outln!(
        "\nOr add these lines to your own walker.toml (and intake = \"{}\" under [witness] to file with the emulator):\n",
        a.emulator.url()
    );
    crate::out!("{}", a.snippet);
    crate::outln!(
        "\nServing until Ctrl-C (SIGINT) or SIGTERM; the agents' ports change at every start."
    );
    use std::io::Write as _;
    let _ = crate::output::stdout().flush();
}
