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
    /// Where the written config's witness face listens (plain HTTP): the sandbox's caller agent
    /// asks it to be walked back (§11.6) once the daemon runs.
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:9466")]
    pub face_listen: std::net::SocketAddr,
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

    // The witness's own domain: a key the daemon signs with, its key document served over
    // HTTPS (the key_url the intake fetches for every record), the origin of the witness face.
    let witness = WitnessDomain::start(&ca, &dir).await?;
    // The emulator may fetch that key_url, and nothing else private.
    let mut emulator_policy = NetPolicy::new(true);
    emulator_policy.allow_url(&witness.origin);
    let mut emulator_net = TransportConfig::new(emulator_policy);
    emulator_net.extra_roots = vec![ca.cert_der()];
    let emulator_config = EmulatorConfig {
        clock: Arc::new(SystemClock),
        ..EmulatorConfig::new(
            dir.join("intake-emulator.sqlite"),
            Transport::new(emulator_net)?,
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
    // An origin that asks to be told of its measurements (§11.5), and where it is told.
    let receiver = crate::sandbox::notify::NotifyReceiver::start(&ca).await?;
    let asking =
        crate::sandbox::notify::asking_agent(&ca, honest_behaviour(&all)?, &receiver.url()).await?;
    targets.push(Target {
        name: ASKS_NOTIFY.to_string(),
        origin: asking.origin(),
        endpoint: None,
        mode: "a2a",
        wire: "1.0",
        expect: "PASS, and a notification at its first walk (then at most one an hour)".into(),
        about: format!(
            "an A2A agent whose consent file declares notify = {}",
            receiver.url()
        ),
    });
    // A caller that asks the daemon's face to walk it back (§11.6), filed to the emulator.
    let caller = SandboxAgent::start(
        &ca,
        crate::sandbox::Behaviour {
            witness_intake: Some(emulator.url()),
            ..honest_behaviour(&all)?
        },
    )
    .await?;
    let pool_member = crate::sandbox::pool::PoolMember::start(&ca).await?;
    let snippet = config_snippet(&ca_path, &emulator.url(), &targets, &args.schedule);
    let config_path = write_config(&dir, &emulator.url(), &witness, &args, &snippet)?;

    announce(&Announced {
        ca_path: &ca_path,
        emulator: &emulator,
        args: &args,
        targets: &targets,
        config_path: &config_path,
        pool_a2a: &pool_member.a2a_url(),
        snippet: &snippet,
        caller: &caller.origin(),
        face: args.face_listen,
    });
    let asking_face = tokio::spawn(ask_to_be_walked_back(caller.origin(), args.face_listen));
    let telling = tokio::spawn(print_notifications(receiver));

    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = sigterm.recv() => {}
    }
    asking_face.abort();
    telling.abort();
    drop(agents);
    drop(changing);
    drop((asking, caller, witness));
    drop(pool_member);
    drop(emulator);
    Ok(ExitCode::from(super::EXIT_OK))
}

/// Write the daemon config that walks the sandbox (`walker.toml` in `dir`): our witness with
/// its key and face, the emulator as intake, and `snippet`'s network and targets.
fn write_config(
    dir: &Path,
    intake: &str,
    witness: &WitnessDomain,
    args: &SandboxArgs,
    snippet: &str,
) -> anyhow::Result<PathBuf> {
    let config_path = dir.join("walker.toml");
    let whole = format!(
        "# Written by `conduct-walker sandbox`: a daemon config that walks the sandbox's agents.\n\
         # Run it with: conduct-walker run --config {}\n\
         [witness]\n\
         name = \"sandbox trial\"\n\
         vantage = \"loopback sandbox on this machine\"\n\
         intake = \"{}\"\n\
         key = {}\n\
         key_url = \"{}/keys/witness.json\"\n\n\
         [witness_face]\n\
         listen = \"{}\"\n\
         origin = \"{}\"\n\
         reciprocal = true\n\
         reciprocal_within = \"5m\"\n\n\
         [daemon]\n\
         database = \"{}\"\n\
         listen = \"127.0.0.1:9464\"\n\
         jitter_secs = 0\n\
         drain_interval_secs = 10\n\n{snippet}",
        config_path.display(),
        intake,
        toml::Value::String(witness.key_path.display().to_string()),
        witness.origin,
        args.face_listen,
        witness.origin,
        dir.join("walker.db").display(),
    );
    std::fs::write(&config_path, &whole)
        .with_context(|| format!("cannot write {}", config_path.display()))?;

    Ok(config_path)
}

/// The sandbox's agent whose consent file asks for notifications.
pub const ASKS_NOTIFY: &str = "asks-notify";

fn honest_behaviour(all: &[crate::sandbox::Scenario]) -> anyhow::Result<crate::sandbox::Behaviour> {
    all.iter()
        .find(|s| s.name == "honest-a2a")
        .map(|s| s.behaviour.clone())
        .context("sandbox scenario missing")
}

/// The witness's domain on loopback: its key (kept in the out dir, mode 0600, made once) and
/// an HTTPS server at [`crate::sandbox::WITNESS_ADDRESS`] serving the key document, whose origin the face claims.
struct WitnessDomain {
    key_path: PathBuf,
    origin: String,
    _server: crate::sandbox::HttpsServer,
}

impl WitnessDomain {
    async fn start(ca: &SandboxCa, dir: &Path) -> anyhow::Result<WitnessDomain> {
        use crate::witness::keys;
        let key_path = dir.join("witness.pem");
        let key = if key_path.exists() {
            keys::load_signing_key(&key_path)?
        } else {
            keys::generate_key_file(&key_path)?
        };
        let document = crate::witness_pool::publish::key_document(
            &keys::public_key_b64(&key),
            crate::sandbox::WITNESS_ADDRESS,
        );
        let server = crate::sandbox::HttpsServer::start_on(
            std::net::SocketAddr::new(crate::sandbox::WITNESS_ADDRESS.parse()?, 0),
            ca,
            &[crate::sandbox::WITNESS_ADDRESS],
            crate::sandbox::handler(move |req| match req.path.as_str() {
                crate::witness_pool::publish::KEY_PATH => {
                    crate::sandbox::Resp::json(200, &document)
                }
                _ => crate::sandbox::Resp::json(404, &serde_json::json!({"error": "not found"})),
            }),
        )
        .await?;
        Ok(WitnessDomain {
            key_path,
            origin: server.base(),
            _server: server,
        })
    }
}

/// The caller agent's side of §11.6: ask the face to walk it back, every few seconds until a
/// daemon on the written config answers, and print the answer.
async fn ask_to_be_walked_back(caller: String, face: std::net::SocketAddr) {
    let card = format!("{caller}/.well-known/agent-card.json");
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": "sandbox-caller", "method": "message/send",
        "params": {"message": {
            "role": "user", "messageId": "sandbox-caller",
            "parts": [{"kind": "text", "text": "please walk me back"}],
            "metadata": {format!("{}/caller_card", crate::walk::spec::EXT): card},
        }},
    });
    let client = reqwest::Client::new();
    loop {
        let sent = client
            .post(format!("http://{face}/a2a"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .timeout(std::time::Duration::from_secs(30))
            .send()
            .await;
        if let Ok(answer) = sent
            && let Ok(bytes) = answer.bytes().await
            && let Ok(answer) = serde_json::from_slice::<serde_json::Value>(&bytes)
            && let Some(text) = answer["result"]["parts"][0]["text"].as_str()
        {
            crate::outln!("caller {caller}: asked the witness face at {face}: {text}");
            return;
        }
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    }
}

/// Print each notification the asking origin receives, as it arrives.
async fn print_notifications(receiver: crate::sandbox::notify::NotifyReceiver) {
    let mut seen = 0;
    loop {
        let received = receiver.received();
        for body in &received[seen..] {
            crate::outln!(
                "{ASKS_NOTIFY}: notification received: event {}, status {}, record_sha256 {}, changed {}",
                body["event"],
                body["status"],
                body["record_sha256"],
                body["changed"]
            );
        }
        seen = received.len();
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
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
    caller: &'a str,
    face: std::net::SocketAddr,
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
        "\nWith that config the daemon's witness face listens at http://{}/a2a and walks callers back:",
        a.face
    );
    crate::outln!(
        "  caller agent            {}  (asks the face to walk it back once the daemon answers; filed to the intake emulator)",
        a.caller
    );
    crate::outln!(
        "  {ASKS_NOTIFY} is told of its scheduled walks (at most once an hour); what it receives is printed here"
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
