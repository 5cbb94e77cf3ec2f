//! `conduct-walker witness ...`: the witness pool from the command line (issue 43; the fixed
//! interface of the pool's §10). Answer one request, verify an observation, ask a witness, and
//! check an origin against the pool's four conditions.
//!
//! Exit codes: `answer` 0 answered, 1 declined, 2 unusable input or usage; `verify` 0 valid,
//! 1 invalid (the codes printed, the first decides), 2 unreadable; `ask` 0 answered and valid,
//! 1 declined, invalid or not judged (`key_url_unreachable`), 2 usage; `selfcheck` 0 when the
//! four conditions hold, 1 otherwise, 2 usage.

use super::{EXIT_FINDING, EXIT_OK};
use crate::clock::SystemClock;
use crate::net::{NetworkOptions, Transport};
use crate::witness_pool::request::{self, Acceptance, ReplyReading};
use crate::witness_pool::responder::{Answer, Responder};
use crate::witness_pool::{measure::Measurer, selfcheck, validate};
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum WitnessCommand {
    /// Answer one nenrin-witness-request-v1: measure the listed surfaces of its endpoint and
    /// print the JSON-RPC result (a signed observation, or a decline). Exit 0 answered,
    /// 1 declined, 2 unusable input (not JSON, no request part, another method) or usage.
    Answer(AnswerArgs),
    /// Verify a nenrin-witness-observation-v1 as a reader does (hash, Ed25519 signature over the
    /// canonical bytes, shape). Exit 0 valid, 1 invalid (the refusal codes, the first decides),
    /// 2 unreadable.
    Verify(VerifyArgs),
    /// Ask a witness: send a request for ENDPOINT to its /a2a, verify the answer, print it.
    /// Exit 0 answered and valid, 1 declined, invalid or not judged (key_url_unreachable),
    /// 2 usage.
    Ask(AskArgs),
    /// Check an origin against the witness pool's four conditions (conduct_v1_declared,
    /// witness_policy_reciprocal, domain_bound_key, answers_witness_request). Exit 0 when all
    /// four hold, 1 otherwise, 2 usage.
    Selfcheck(SelfcheckArgs),
}

/// The network flags of the witness commands: extra roots, and private networks for tests.
#[derive(Debug, Clone, Args)]
pub struct WitnessNet {
    /// Extra trust roots (PEM), added to the system roots. Repeatable.
    #[arg(long = "ca-cert", value_name = "PEM")]
    pub ca_cert: Vec<PathBuf>,
    /// Tests only: admit loopback and private addresses and any port (skips the pool's name
    /// screen and blocked-address table).
    #[arg(long)]
    pub allow_private_network: bool,
}

impl WitnessNet {
    /// What every other command's network flags map onto, with the default deadline and cap.
    fn options(&self) -> NetworkOptions {
        NetworkOptions {
            allow_private_network: self.allow_private_network,
            allow_hosts: Vec::new(),
            extra_ca: self.ca_cert.clone(),
            deadline: crate::net::REQUEST_DEADLINE,
            body_cap: crate::net::BODY_CAP_BYTES,
        }
    }

    fn roots(&self) -> anyhow::Result<Vec<rustls_pki_types::CertificateDer<'static>>> {
        Ok(self.options().roots()?)
    }

    /// The transport of a requester: the URLs the operator named, private addresses at those
    /// hosts only under `--allow-private-network`.
    fn requester(&self, named: &[&str]) -> anyhow::Result<Transport> {
        let mut config = self.options().transport_config(named)?;
        config.user_agent = request::REQUESTER_USER_AGENT.to_string();
        Ok(Transport::new(config)?)
    }
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("signer").required(true).args(["config", "key"])))]
pub struct AnswerArgs {
    /// A whole message/send body, or a bare request object; `-` for standard input.
    #[arg(long, value_name = "FILE")]
    pub request: PathBuf,
    /// Sign with this config's [witness] key and key_url (its [network] roots and
    /// allow_private_network apply too).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Sign with this key (PKCS#8 PEM, mode 0600); needs --key-url.
    #[arg(long, value_name = "PEM", requires = "key_url")]
    pub key: Option<PathBuf>,
    /// The https URL serving the key; its host is the observation's signed_domain.
    #[arg(long, value_name = "URL")]
    pub key_url: Option<String>,
    /// The observation's witness.vantage (default: the config's [witness] vantage, else
    /// "<host name> (witness network, <domain>)").
    #[arg(long, value_name = "TEXT")]
    pub vantage: Option<String>,
    /// The observation's recorded_at, as written (YYYY-MM-DDTHH:MM:SSZ); default now.
    #[arg(long, value_name = "RFC3339")]
    pub recorded_at: Option<String>,
    #[command(flatten)]
    pub net: WitnessNet,
    /// Print the result as one line of JSON (default: indented).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("expect").args(["public_key", "key_doc"])))]
pub struct VerifyArgs {
    /// The observation (`-` for standard input).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The key expected to have signed it (standard base64 of the 32 bytes).
    #[arg(long, value_name = "B64")]
    pub public_key: Option<String>,
    /// The witness's key document ({"public_key_ed25519_b64": ...}) as a file.
    #[arg(long, value_name = "FILE")]
    pub key_doc: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The origin to have measured (https).
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// The witness's A2A endpoint (its card's url, e.g. https://witness.example/a2a).
    #[arg(long, value_name = "A2A_URL")]
    pub to: String,
    /// The surfaces to ask for, comma-separated (default: the first eight the pool knows).
    #[arg(long, value_name = "a,b,...", value_delimiter = ',')]
    pub surfaces: Vec<String>,
    /// Where the witness's key document is (default: the observation's source.key_url).
    #[arg(long, value_name = "URL")]
    pub key_doc: Option<String>,
    #[command(flatten)]
    pub net: WitnessNet,
    /// Print the observation alone, as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SelfcheckArgs {
    /// The origin to check (https, no path).
    #[arg(long, value_name = "URL")]
    pub origin: String,
    /// The endpoint the probe request asks to have measured.
    #[arg(long, value_name = "URL", default_value = selfcheck::DEFAULT_PROBE_TARGET)]
    pub probe_target: String,
    #[command(flatten)]
    pub net: WitnessNet,
}

pub async fn run(command: WitnessCommand) -> anyhow::Result<ExitCode> {
    match command {
        WitnessCommand::Answer(args) => answer(args).await,
        WitnessCommand::Verify(args) => verify(args),
        WitnessCommand::Ask(args) => ask(args).await,
        WitnessCommand::Selfcheck(args) => self_check(args).await,
    }
}

/// A file's bytes, or standard input's for `-`, capped as the face caps a body.
fn read_input(path: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    let cap = request::MAX_BODY_BYTES;
    if path == std::path::Path::new("-") {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::io::stdin()
            .take(cap as u64 + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() > cap {
            bail!("standard input holds more than {cap} bytes");
        }
        return Ok(bytes);
    }
    crate::net::read_file_capped(path, cap)
        .with_context(|| format!("cannot read {}", path.display()))
}

/// The responder `answer` signs with: from `--config`, or `--key` and `--key-url`.
fn responder(args: &AnswerArgs) -> anyhow::Result<Responder> {
    let mut vantage = args.vantage.clone();
    let (key, key_url, allow_private, mut roots) = match &args.config {
        Some(path) => {
            let cfg = crate::config::load(path)?;
            // The face's vantage: the witness's own, as every walk record names it.
            vantage.get_or_insert_with(|| cfg.witness.vantage.clone());
            let key = crate::app::signing_key(&cfg)?
                .context("the config names no signing key ([witness] key or key_credential)")?;
            let key_url = cfg
                .witness
                .key_url
                .clone()
                .context("the config names no [witness] key_url")?;
            let roots = crate::app::extra_roots(&cfg)?;
            (key, key_url, cfg.allow_private_network, roots)
        }
        None => {
            let path = args.key.as_ref().expect("clap requires --config or --key");
            let key = crate::witness::keys::load_signing_key(path)?;
            let key_url = args
                .key_url
                .clone()
                .expect("clap requires --key-url with --key");
            (key, key_url, false, Vec::new())
        }
    };
    roots.extend(args.net.roots()?);
    let measurer = Measurer::new(allow_private || args.net.allow_private_network, roots)?;
    Responder::new(key, &key_url, vantage, measurer).map_err(anyhow::Error::msg)
}

async fn answer(args: AnswerArgs) -> anyhow::Result<ExitCode> {
    let bytes = read_input(&args.request)?;
    let request = match request::read_answer_file(&bytes) {
        Ok(request) => request,
        Err(rpc) => bail!("unusable input: {} (JSON-RPC {})", rpc.message, rpc.code),
    };
    if let Some(at) = &args.recorded_at
        && !validate::is_recorded_at(at)
    {
        bail!("--recorded-at {at:?} is not YYYY-MM-DDTHH:MM:SSZ");
    }
    let responder = responder(&args)?;
    let answered = responder
        .answer(
            &request,
            None,
            &SystemClock,
            args.recorded_at.as_deref(),
            None,
        )
        .await
        .map_err(|e| anyhow::anyhow!("no answer: {e:?}"))?;
    let message = answered.message();
    if args.json {
        crate::outln!("{}", serde_json::to_string(message)?);
    } else {
        crate::outln!("{}", serde_json::to_string_pretty(message)?);
    }
    Ok(ExitCode::from(match answered {
        Answer::Answered { .. } => EXIT_OK,
        Answer::Declined { .. } => EXIT_FINDING,
    }))
}

fn verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let bytes = read_input(&args.file)?;
    let record = request::parse_json(&bytes)
        .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", args.file.display()))?;
    let key_doc = match &args.key_doc {
        Some(path) => {
            let bytes = read_input(path)?;
            Some(
                request::parse_json(&bytes)
                    .map_err(|e| anyhow::anyhow!("{} is not JSON: {e}", path.display()))?,
            )
        }
        None => None,
    };
    let refusals = validate::validate(
        &record,
        &validate::Options {
            public_key: args.public_key.as_deref(),
            key_doc: key_doc.as_ref(),
        },
    );
    if refusals.is_empty() {
        crate::outln!(
            "valid: record_sha256 {} signed by {} for {}",
            record["record_sha256"].as_str().unwrap_or("(not given)"),
            record["source"]["signed_domain"]
                .as_str()
                .unwrap_or_default(),
            record["endpoint"].as_str().unwrap_or_default()
        );
        return Ok(ExitCode::from(EXIT_OK));
    }
    let codes: Vec<&str> = refusals.iter().map(|r| r.as_str()).collect();
    crate::outln!("invalid: {}", codes.join(", "));
    Ok(ExitCode::from(EXIT_FINDING))
}

async fn ask(args: AskArgs) -> anyhow::Result<ExitCode> {
    crate::net::https_url(&args.endpoint).map_err(|why| anyhow::anyhow!("--endpoint {why}"))?;
    crate::net::https_url(&args.to).map_err(|why| anyhow::anyhow!("--to {why}"))?;
    let mut named = vec![args.to.as_str()];
    named.extend(args.key_doc.as_deref());
    // The key document is on the witness's host, which --to names.
    let transport = args.net.requester(&named)?;
    let surfaces = if args.surfaces.is_empty() {
        request::default_surfaces()
    } else {
        args.surfaces.clone()
    };
    let now = crate::clock::walked_at(chrono::Utc::now());
    let drawn = request::Drawn::ad_hoc(rand::random());
    let sent = request::build_request(&args.endpoint, &surfaces, &now, &drawn);
    let asked =
        crate::witness_pool::ask::ask(&transport, &args.to, sent, None, args.key_doc.as_deref())
            .await;
    let observation = match &asked.reading {
        ReplyReading::Observation(o) => o,
        ReplyReading::Declined { reason, text } => {
            crate::outln!("declined: {reason}: {text}");
            return Ok(ExitCode::from(EXIT_FINDING));
        }
        ReplyReading::Failed(why) => {
            crate::outln!("no observation: {why}");
            return Ok(ExitCode::from(EXIT_FINDING));
        }
    };
    let verdict = match &asked.acceptance {
        Some(Acceptance::Accepted) => Ok(()),
        Some(Acceptance::Refused(codes)) => Err(format!("refused: {}", codes.join(", "))),
        Some(Acceptance::CannotJudge(code)) => Err(format!(
            "{code}: the key document could not be fetched, so nothing was confirmed"
        )),
        None => Err("not judged".into()),
    };
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(observation)?);
    } else {
        crate::outln!(
            "{}: {} observed {} surface(s) of {}; record_sha256 {}",
            if verdict.is_ok() {
                "answered and valid"
            } else {
                "answered"
            },
            observation["source"]["signed_domain"]
                .as_str()
                .unwrap_or_default(),
            observation["observed"].as_object().map_or(0, |o| o.len()),
            observation["endpoint"].as_str().unwrap_or_default(),
            observation["record_sha256"].as_str().unwrap_or_default()
        );
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&observation["observed"])?
        );
    }
    match verdict {
        Ok(()) => Ok(ExitCode::from(EXIT_OK)),
        Err(why) => {
            crate::outln!("{why}");
            Ok(ExitCode::from(EXIT_FINDING))
        }
    }
}

async fn self_check(args: SelfcheckArgs) -> anyhow::Result<ExitCode> {
    let origin = args.origin.trim_end_matches('/').to_string();
    let parsed = crate::net::https_url(&origin).map_err(|why| anyhow::anyhow!("--origin {why}"))?;
    if parsed.path() != "/" || parsed.query().is_some() {
        bail!("--origin is an origin: scheme, host and port, no path or query");
    }
    crate::net::https_url(&args.probe_target)
        .map_err(|why| anyhow::anyhow!("--probe-target {why}"))?;
    let transport = args.net.requester(&[&origin])?;
    let checks = selfcheck::selfcheck(&transport, &origin, &args.probe_target).await;
    for c in &checks {
        crate::outln!(
            "{} {}: {}",
            if c.holds { "PASS" } else { "FAIL" },
            c.name,
            c.detail
        );
    }
    let all = checks.iter().all(|c| c.holds);
    crate::outln!(
        "{}",
        if all {
            "the four conditions hold (which says nothing of trust: the pool's draw only removes the requester's choice)"
        } else {
            "not every condition holds"
        }
    );
    Ok(ExitCode::from(if all { EXIT_OK } else { EXIT_FINDING }))
}
