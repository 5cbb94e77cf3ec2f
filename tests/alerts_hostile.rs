//! Hostile alert receivers: one that never answers, one that streams a gigabyte, one that
//! redirects, one whose certificate is not trusted, one that drips a byte a second. Each send is
//! bounded in time (the 10 s deadline) and memory (the 64 KiB answer cap), none counts as
//! delivered, no redirect is followed, and each is retried later with backoff.

use conduct_walker::alerts::config::{self, AlertsSection};
use conduct_walker::alerts::deliver::{self, ANSWER_CAP, Answer, DEADLINE};
use conduct_walker::alerts::payload::{AlertPayload, Data};
use conduct_walker::sandbox::SandboxCa;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Clone, Copy)]
enum Hostile {
    Hang,
    Gigabyte,
    /// A gigabyte with no length announced: the cap stops the reading.
    Stream,
    Redirect,
    Drip,
}

/// A TLS server on loopback doing `how` to every request; counts the requests it read.
async fn serve(ca: &SandboxCa, how: Hostile) -> (u16, Arc<AtomicUsize>) {
    let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(&[]));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let count = count.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = vec![0u8; 65536];
                let _ = tls.read(&mut buf).await;
                count.fetch_add(1, Ordering::SeqCst);
                match how {
                    Hostile::Hang => tokio::time::sleep(Duration::from_secs(3600)).await,
                    Hostile::Gigabyte | Hostile::Stream => {
                        let head: &[u8] = if matches!(how, Hostile::Gigabyte) {
                            b"HTTP/1.1 200 OK\r\ncontent-length: 1073741824\r\n\r\n"
                        } else {
                            b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n"
                        };
                        let _ = tls.write_all(head).await;
                        let chunk = vec![b'x'; 1 << 16];
                        for _ in 0..(1 << 14) {
                            if tls.write_all(&chunk).await.is_err() {
                                return;
                            }
                        }
                    }
                    Hostile::Redirect => {
                        let _ = tls
                            .write_all(
                                b"HTTP/1.1 302 Found\r\nlocation: https://127.0.0.1:1/elsewhere\r\ncontent-length: 0\r\n\r\n",
                            )
                            .await;
                    }
                    Hostile::Drip => {
                        let _ = tls.write_all(b"HTTP/1.1 200 OK\r\n").await;
                        for _ in 0..3600 {
                            if tls.write_all(b"x-drip: 1\r\n").await.is_err() {
                                return;
                            }
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                    }
                }
            });
        }
    });
    (port, seen)
}

fn webhook(
    ca_pem: &Path,
    port: u16,
    dir: &Path,
) -> (deliver::Sender, conduct_walker::net::Transport) {
    std::fs::write(dir.join("s"), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
    let section: AlertsSection = toml::from_str(&format!(
        r#"
allow_hosts = ["127.0.0.1:{port}"]
[[channel]]
name = "h"
kind = "webhook"
url = "https://127.0.0.1:{port}/hook"
secret_file = "s"
"#
    ))
    .unwrap();
    let cfg = config::validate(&section, dir, &[]).unwrap();
    let roots = conduct_walker::net::load_pem_certs(ca_pem).unwrap();
    let deliver::Delivery {
        mut senders,
        transport,
    } = deliver::delivery(&cfg, roots).unwrap();
    let sender = Arc::try_unwrap(senders.remove(0)).unwrap();
    (sender, transport)
}

fn payload() -> AlertPayload {
    AlertPayload {
        schema_version: 1,
        id: "cwa_0123456789abcdef0123456789abcdef".into(),
        kind: "incident.opened".into(),
        timestamp: "2026-12-01T00:00:00Z".into(),
        data: Data::default(),
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_receivers_are_bounded_in_time_and_memory_and_never_count_as_delivered() {
    let ca = SandboxCa::generate();
    let dir = tempfile::tempdir().unwrap();
    let ca_pem = dir.path().join("ca.pem");
    ca.write_pem(&ca_pem).unwrap();
    let bound = DEADLINE + Duration::from_secs(3);
    for (name, how) in [
        ("hang", Hostile::Hang),
        ("gigabyte", Hostile::Gigabyte),
        ("stream", Hostile::Stream),
        ("redirect", Hostile::Redirect),
        ("drip", Hostile::Drip),
    ] {
        let (port, seen) = serve(&ca, how).await;
        let (sender, transport) = webhook(&ca_pem, port, dir.path());
        let rss0 = rss_kib();
        let t0 = Instant::now();
        let answer = sender.send(&transport, &payload()).await;
        let took = t0.elapsed();
        let grew = rss_kib().saturating_sub(rss0);
        eprintln!("{name}: {took:?}, RSS +{grew} KiB, {}", answer.describe());
        assert!(took <= bound, "{name}: took {took:?}");
        assert!(
            matches!(answer, Answer::Retry { .. }),
            "{name}: {answer:?} must be retried, never delivered or settled"
        );
        assert_eq!(seen.load(Ordering::SeqCst), 1, "{name}: one request");
        // The answer is read to the cap at most: memory does not follow the receiver.
        assert!(
            grew < 32 * 1024,
            "{name}: RSS grew {grew} KiB (cap {ANSWER_CAP} bytes)"
        );
        if let Answer::Retry { status, .. } = &answer
            && matches!(how, Hostile::Redirect)
        {
            assert_eq!(
                *status,
                Some(302),
                "the redirect is an answer, not followed"
            );
        }
        // The row's next attempt backs off (30 s and up), after its answer.
        let a = deliver::attempt_of(&answer, 1, chrono::Utc::now(), 0.5);
        assert_eq!(a.state, "queued");
        assert!(a.next_attempt_at.unwrap() > chrono::Utc::now() + chrono::TimeDelta::seconds(20));
    }

    // A certificate no configured root signs: a TLS failure, retried.
    let other = SandboxCa::generate();
    let (port, seen) = serve(&other, Hostile::Redirect).await;
    let (sender, transport) = webhook(&ca_pem, port, dir.path());
    let t0 = Instant::now();
    let answer = sender.send(&transport, &payload()).await;
    assert!(t0.elapsed() <= bound);
    assert!(
        matches!(answer, Answer::Retry { status: None, .. }),
        "{answer:?}"
    );
    assert_eq!(
        seen.load(Ordering::SeqCst),
        0,
        "no request over an untrusted TLS session"
    );

    // Retry-After is honoured: a 503 asking for an hour waits an hour, not 30 s.
    let a = deliver::attempt_of(
        &Answer::Retry {
            status: Some(503),
            text: String::new(),
            retry_after: conduct_walker::filing::answer::RetryAfter::parse("3600"),
        },
        1,
        chrono::Utc::now(),
        0.0,
    );
    assert!(a.next_attempt_at.unwrap() >= chrono::Utc::now() + chrono::TimeDelta::seconds(3590));
}
