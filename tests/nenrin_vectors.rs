//! Byte conformance with `tests/vectors/nenrin-canonical.json` and the two reference walks
//! in `tests/vectors/walks/` (conduct-walk.md §2.6, §2.7, §3, §4.1, §7).

use conduct_walker::canonical::{self, python_pair_text};
use conduct_walker::digest::{headers_sha256, sha256_hex};
use conduct_walker::json::parse_lenient;
use conduct_walker::walk::declaration::Declaration;
use conduct_walker::walk::record::n2_output;
use conduct_walker::walk::spec::{BODY_A2A_0_3, BODY_A2A_1_0, BODY_MCP_INITIALIZE};
use conduct_walker::walk::{Mode, RequestProfile, Wire, n3_request};
use serde_json::Value;
use std::path::PathBuf;

fn shared(path: &str) -> PathBuf {
    conduct_walker::sandbox::test_vectors("").join(path)
}

fn vectors() -> Value {
    serde_json::from_slice(&std::fs::read(shared("nenrin-canonical.json")).unwrap()).unwrap()
}

fn list<'a>(v: &'a Value, key: &str) -> &'a Vec<Value> {
    v[key].as_array().unwrap_or_else(|| panic!("{key} missing"))
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn canonical_vectors_reproduce_byte_for_byte() {
    let v = vectors();
    let cases = list(&v, "canonical");
    assert_eq!(cases.len(), 8);
    for case in cases {
        let parsed = parse_lenient(s(case, "input_json").as_bytes())
            .unwrap_or_else(|e| panic!("{}: {e}", s(case, "id")));
        let bytes = canonical::to_bytes(&parsed);
        assert_eq!(
            hex::encode(&bytes),
            s(case, "expected_canonical_utf8_hex"),
            "{}",
            s(case, "id")
        );
        assert_eq!(
            sha256_hex(&bytes),
            s(case, "expected_sha256"),
            "{}",
            s(case, "id")
        );
    }
}

#[test]
fn request_bodies_are_the_exact_bytes() {
    let v = vectors();
    for case in list(&v, "request_bodies") {
        // The pre-v1.1 walker's body: only its hash is checked; v1.4 no longer sends it.
        if s(case, "id").starts_with("historical") {
            assert_eq!(sha256_hex(s(case, "body")), s(case, "sha256"));
            continue;
        }
        let (mode, wire) = (s(case, "mode"), case["wire"].as_str());
        let body = match (mode, wire) {
            ("mcp", _) => BODY_MCP_INITIALIZE,
            ("a2a", Some("0.3")) => BODY_A2A_0_3,
            ("a2a", _) => BODY_A2A_1_0,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(body, s(case, "body"), "{}", s(case, "id"));
        assert_eq!(body.len() as u64, case["byte_length"].as_u64().unwrap());
        assert_eq!(sha256_hex(body), s(case, "sha256"));
        // The request the walker actually builds carries those bytes.
        let m = Mode::parse(mode).unwrap();
        let w = Wire::parse(wire.unwrap_or("1.0"));
        for profile in [RequestProfile::Reference, RequestProfile::Spec] {
            let req = n3_request(m, w, profile, "https://a.example/mcp");
            assert_eq!(req.body.as_deref(), Some(body.as_bytes()));
        }
    }
}

#[test]
fn header_hashes_follow_the_recipe() {
    let v = vectors();
    let cases = list(&v, "headers_sha256");
    assert_eq!(cases.len(), 6);
    for case in cases {
        let pairs: Vec<(String, String)> = case["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap().to_string(),
                    p[1].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let got = headers_sha256(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        assert_eq!(got, s(case, "expected_sha256"), "{}", s(case, "id"));
        assert_eq!(sha256_hex(s(case, "joined_text")), got);
    }
}

#[test]
fn walker_request_headers_hash_like_the_vectors() {
    // The n3 requests we build under the reference profile hash to the §2.7 examples.
    let h = |m, w| {
        let req = n3_request(m, w, RequestProfile::Reference, "https://a.example/mcp");
        headers_sha256(req.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    };
    assert_eq!(
        h(Mode::A2a, Wire::V1_0),
        "bd88e3920f2cfa34ec68d6aafefa60fbeca168fd5a25b023cf112a229ec6e4d3"
    );
    assert_eq!(
        h(Mode::A2a, Wire::V0_3),
        "386af1803de9c6530ad35d2acf6e80a5cacb607c1513de652d93d8e2e50dcdaa"
    );
    assert_eq!(
        h(Mode::Mcp, Wire::V1_0),
        "7b46c49e340f41919f0b4a5c387861af306a10e74818ba12cc9785d4c476edd8"
    );
}

#[test]
fn spec_profile_differs_from_the_reference_only_in_mcp_accept() {
    // §2.6.1: a2a requests are the same under both profiles; mcp asks for SSE too, and that
    // Accept value is in the hashed request set.
    let h = |m, w, p| {
        let req = n3_request(m, w, p, "https://a.example/mcp");
        headers_sha256(req.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    };
    for wire in [Wire::V1_0, Wire::V0_3] {
        assert_eq!(
            h(Mode::A2a, wire, RequestProfile::Spec),
            h(Mode::A2a, wire, RequestProfile::Reference)
        );
    }
    let lines = [
        "a2a-extensions: https://gate.horizonshield.dev/ext/conduct/v1",
        "accept: application/json, text/event-stream",
        "content-type: application/json",
    ];
    assert_eq!(
        h(Mode::Mcp, Wire::V1_0, RequestProfile::Spec),
        sha256_hex(lines.join("\n"))
    );
    let spec = n3_request(
        Mode::Mcp,
        Wire::V1_0,
        RequestProfile::Spec,
        "https://a.example/mcp",
    );
    assert_eq!(
        spec.read,
        conduct_walker::net::BodyRead::SseUntilResponse(1),
        "the spec profile reads an SSE answer up to the response"
    );
    let reference = n3_request(
        Mode::Mcp,
        Wire::V1_0,
        RequestProfile::Reference,
        "https://a.example/mcp",
    );
    assert_eq!(reference.read, conduct_walker::net::BodyRead::Whole);
}

#[test]
fn python_text_pairs_render_exactly() {
    let v = vectors();
    let cases = list(&v, "python_text_pairs");
    assert_eq!(cases.len(), 12);
    for case in cases {
        let pair = case["pair"].as_array().unwrap();
        let text = python_pair_text(pair[0].as_str(), pair[1].as_str());
        assert_eq!(text, s(case, "text"), "{}", s(case, "id"));
        assert_eq!(sha256_hex(&text), s(case, "sha256"));
    }
}

#[test]
fn observed_inputs_hash_as_listed() {
    let v = vectors();
    let cases = list(&v, "observed_inputs");
    assert_eq!(cases.len(), 11);
    for case in cases {
        assert_eq!(
            sha256_hex(s(case, "observed_input")),
            s(case, "sha256"),
            "{}",
            s(case, "id")
        );
    }
}

#[test]
fn n2_outputs_reproduce() {
    let v = vectors();
    for case in list(&v, "n2_output") {
        let object: Value = parse_lenient(s(case, "output_object_canonical").as_bytes()).unwrap();
        let problems: Vec<String> = object["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect();
        let declared = object["extension_declared"].as_bool().unwrap();
        let declaration = Declaration {
            extension: declared.then(|| {
                conduct_walker::walk::declaration::Extension::parse(r#"{"uri":"x"}"#).unwrap()
            }),
            problems,
        };
        let (sha, preview) = n2_output(&declaration, object["target"].as_str());
        assert_eq!(sha, s(case, "output_sha256"), "{}", s(case, "id"));
        assert_eq!(preview, s(case, "output_preview"), "{}", s(case, "id"));
    }
}

const WALKS: [(&str, &str); 2] = [
    (
        "walk_97b7e4883e8b.json",
        "97b7e4883e8bba3d611314e0e6bee77d24cafce0626d08ff00e0ff498fc93e5d",
    ),
    (
        "walk_e667f3b369a9.json",
        "e667f3b369a9f0b3736b95bda37f8090f726dd1b2002a2eb30ed0b04afa1b342",
    ),
];

#[test]
fn reference_walks_recanonicalise_to_identical_bytes() {
    for (file, sha) in WALKS {
        let bytes = std::fs::read(shared("walks").join(file)).unwrap();
        assert_eq!(sha256_hex(&bytes), sha);
        let again = canonical::to_bytes(&parse_lenient(&bytes).unwrap());
        assert_eq!(again, bytes, "{file}");
    }
}

#[test]
fn reference_walk_internal_hashes_reproduce_from_recipes() {
    for (file, _) in WALKS {
        let record = parse_lenient(&std::fs::read(shared("walks").join(file)).unwrap()).unwrap();
        let nodes = record["nodes"].as_array().unwrap();
        let node = |n: u64| nodes.iter().find(|x| x["n"].as_u64() == Some(n)).unwrap();
        let wire = Wire::parse(record["conduct_ext"]["wire"].as_str().unwrap());
        let mode = Mode::parse(record["conduct_ext"]["mode"].as_str().unwrap()).unwrap();
        let target = node(3)["request"]["url"].as_str().unwrap();
        for n in [0, 1] {
            assert_eq!(
                node(n)["request"]["headers_sha256"],
                headers_sha256([("Accept", "application/json")]),
                "{file} n{n}"
            );
            assert!(node(n)["request"]["body_sha256"].is_null());
        }
        let n3 = n3_request(mode, wire, RequestProfile::Reference, target);
        assert_eq!(
            node(3)["request"]["headers_sha256"],
            headers_sha256(n3.headers.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
            "{file}"
        );
        assert_eq!(
            node(3)["request"]["body_sha256"],
            sha256_hex(n3.body.unwrap()),
            "{file}"
        );

        let declaration = Declaration {
            extension: Some(conduct_walker::walk::declaration::Extension::parse("{}").unwrap()),
            problems: vec![],
        };
        let (n2_sha, preview) = n2_output(&declaration, Some(target));
        assert_eq!(node(2)["output_sha256"], n2_sha);
        assert_eq!(node(2)["output_preview"], preview);

        let assertions = record["assertions"].as_array().unwrap();
        let observed = |prefix: &str| {
            assertions
                .iter()
                .find(|a| a["claim"].as_str().unwrap().starts_with(prefix))
                .unwrap()["observed_sha256"]
                .clone()
        };
        let body = |n: u64| {
            node(n)["response"]["body_sha256"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            observed("card_bytes_stable"),
            sha256_hex(format!("{}{}", body(0), body(1)))
        );
        assert_eq!(observed("compensation_well_formed"), sha256_hex("[]"));
        assert_eq!(
            observed("measured_endpoint_answered"),
            sha256_hex(format!("{}:True", body(3)))
        );
        let echo = python_pair_text(
            node(3)["response"]["a2a_extensions"].as_str(),
            node(3)["response"]["x_a2a_extensions"].as_str(),
        );
        assert_eq!(observed("extension_echoed"), sha256_hex(echo), "{file}");
    }
}
