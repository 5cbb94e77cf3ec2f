//! Issue 42: a signed card's `jku` is fetched only when the reference walker's HTTP client
//! (CPython 3.11's urllib) could send that request, and then at the URL urllib would request
//! (`card_signature::walk_block::jwks_request_url`). CPython itself is the judge here: every
//! generated `jku` goes through `urllib.request.Request` and `http.client`'s `putrequest` (which
//! refuses before connecting), and our rule must agree on refused/sent and on the request's
//! host and target. `python3` is on every machine this project supports (Debian's).

use conduct_walker::card_signature::walk_block::jwks_request_url;
use std::io::Write as _;
use std::process::{Command, Stdio};

/// urllib's request for each `jku` line: where it connects and what it asks for, or that it
/// refused. `HTTPConnection` with 443 as its default port validates exactly as `HTTPSConnection`
/// does, without building a TLS context per case.
const CPYTHON: &str = r#"
import json, sys, urllib.request, http.client
class Conn(http.client.HTTPConnection):
    default_port = 443
for line in sys.stdin:
    jku = json.loads(line)
    try:
        req = urllib.request.Request(jku)
        conn = Conn(req.host)
        conn.putrequest("GET", req.selector)
        # A port outside 0-65535 or a name with URL delimiters in it fails at connect
        # (getaddrinfo), before a request is written.
        name_ok = req.host.startswith("[") or not any(c in conn.host for c in "/?#@\\%[]:")
        sent = 0 <= conn.port <= 65535 and name_ok
        print(json.dumps({"sent": sent, "host": conn.host, "port": conn.port,
                          "target": req.selector or "/"}))
    except Exception as e:
        print(json.dumps({"sent": False, "why": type(e).__name__}))
"#;

/// Where a URL connects (host, port) as our HTTP stack reads it, and its request target as
/// written (the stack percent-encodes a few characters urllib sends raw, see the rule's doc).
fn endpoint_and_target(url: &str) -> (String, u16, String) {
    let parsed = url::Url::parse(url).unwrap_or_else(|e| panic!("{url:?}: {e}"));
    let host = match parsed.host() {
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        Some(h) => h.to_string(),
        None => String::new(),
    };
    let rest = url.split_once("//").map_or("", |(_, r)| r);
    let at = rest.find(['/', '?']).unwrap_or(rest.len());
    let target = &rest[at..];
    let target = if target.starts_with('?') {
        format!("/{target}")
    } else if target.is_empty() {
        "/".to_string()
    } else {
        target.to_string()
    };
    (host, parsed.port_or_known_default().unwrap(), target)
}

fn jkus() -> Vec<String> {
    let host = "agent.example:8443";
    let ports = [
        "",
        ":",
        ":443",
        ":8443",
        ": 8443",
        ":8443 ",
        ":+8443",
        ":8_443",
        ":8__443",
        ":-1",
        ":65536",
        ":0x10",
        ":%38443",
        ":8443%20",
        "%3A8443",
        ":8443@x",
        "[::1]:8443",
        "[::1]",
    ];
    let pieces = [
        "", " ", "\t", "\n", "\r", "\u{1}", "\u{1c}", "\u{1f}", "\u{7f}", "\u{a0}", "\u{85}",
        "\u{2003}", "\u{3000}", "é", "ü", "\u{2028}", "%20", "%C3%A9", "#", "#frag", "?", "?v=1",
        "?v=é", "/", "\\", "a b", ":", "@", "~",
    ];
    let mut out = Vec::new();
    for a in pieces {
        for b in pieces {
            out.push(format!("https://{host}/keys/{a}jwks{b}.json"));
            out.push(format!("https://{host}/jwks.json{a}{b}"));
            out.push(format!("{b}https://{host}/jwks.json{a}"));
        }
        out.push(format!("https://{host}{a}"));
        out.push(format!("https://{host}/x#{a}y#z"));
    }
    for port in ports {
        let name = if port.starts_with('[') {
            ""
        } else {
            "agent.example"
        };
        out.push(format!("https://{name}{port}/jwks.json"));
        out.push(format!("https://{name}{port}"));
    }
    out.push("https://agent.example".into());
    out.push("https://Agent.EXAMPLE/jwks.json".into());
    out.push("https://agent%2Eexample/jwks.json".into());
    out.push("https://agent%2Fexample/jwks.json".into());
    out.push("https://agent.example?x=1".into());
    out
}

#[test]
fn the_jwks_request_rule_agrees_with_cpython() {
    let cases: Vec<String> = jkus()
        .into_iter()
        .filter(|j| j.starts_with("https://"))
        .collect();
    let mut child = match Command::new("python3")
        .args(["-c", CPYTHON])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => panic!("python3 is needed as the oracle of urllib's rule: {e}"),
    };
    let mut input = String::new();
    for jku in &cases {
        input.push_str(&serde_json::to_string(jku).unwrap());
        input.push('\n');
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success());
    let answers: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), cases.len());
    let mut differ = Vec::new();
    let (mut sent, mut refused) = (0, 0);
    for (jku, cpython) in cases.iter().zip(&answers) {
        let ours = jwks_request_url(jku);
        let agrees = match (&ours, cpython["sent"].as_bool().unwrap()) {
            (Ok(url), true) => {
                sent += 1;
                // urllib sends `#` and `\` raw; ours are percent-encoded (see the rule's doc).
                let (host, port, target) = endpoint_and_target(url);
                let theirs = cpython["target"].as_str().unwrap();
                host.eq_ignore_ascii_case(cpython["host"].as_str().unwrap())
                    && cpython["port"] == port
                    && target == theirs.replace('#', "%23").replace('\\', "%5C")
            }
            (Err(_), false) => {
                refused += 1;
                true
            }
            _ => false,
        };
        if !agrees {
            differ.push(format!("{jku:?}: ours {ours:?}, CPython {cpython}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} differ:\n{}",
        differ.len(),
        cases.len(),
        differ.join("\n")
    );
    assert!(
        sent > 100 && refused > 100,
        "{sent} sent, {refused} refused"
    );
}
