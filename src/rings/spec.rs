//! Every exact string and number of rings.md, once (data, copied exactly).

/// `schema` of every ring.
pub const SCHEMA: &str = "nenrin-ring-v1";
/// The first month with the v1.1 columns (compared as a string, §4.4).
pub const V11_FROM: &str = "2026-09";
/// The gate, witness 1 of every ring (§4.4).
pub const GATE_NAME: &str = "gate.horizonshield.dev";
pub const GATE_VANTAGE: &str = "cloudflare-worker";
/// `recompute` (§5.1): a constant naming the reference builder, whoever builds (§7 item 10).
pub const RECOMPUTE: &str = "python3 make_ring.py --verify <this file> --history <the /history export> [--prev <previous ring>]. Same bytes in, same sha256 out. Anyone can.";

/// `limits` sentences (§5.3), in their order.
pub const LIMIT_ONE_WITNESS: &str = "one witness only, so no discrepancy could have been recorded this month; a single witness can be wrong and nobody was positioned to say so";
pub const LIMIT_V11_COLUMNS: &str = "witnesses_signed and witnesses_unsigned count third parties only; the gate is the measurer, counted once under witnesses as before";
pub const LIMIT_UNSIGNED_BY_NAME: &str = "unsigned witnesses are counted by the name they gave";
pub const LIMIT_NO_MEASUREMENT: &str = "no measurement this month; a ring with zero instants is a recorded gap, not an absence of a ring";
/// Sentence 5: `determinism was not measured on <u> of <n> instants (…)`.
pub fn limit_unmeasured(u: u64, n: u64) -> String {
    format!(
        "determinism was not measured on {u} of {n} instants (no owner consent to call a tool); unmeasured is not failed"
    )
}
pub const LIMIT_COUNTS_ONLY: &str = "counts only; the ring never states a rate, a score or a rank, and any reader who computes one has left the record";

/// The 20 keys of every ring (§5.1): the Statement copies exactly these (§8.1).
pub const V1_KEYS: [&str; 20] = [
    "schema",
    "ring",
    "endpoint",
    "witnesses",
    "witness_identities",
    "instants_sampled",
    "instants_reached",
    "instants_by_status",
    "instants_by_consent_source",
    "manifest_hashes_observed",
    "surface_changes",
    "discrepancies",
    "first_instant",
    "last_instant",
    "record_sha256_first",
    "record_sha256_last",
    "prev_ring_sha256",
    "prev_ring",
    "limits",
    "recompute",
];

/// In-toto Statement and DSSE (§8).
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const PREDICATE_TYPE: &str = "https://gate.horizonshield.dev/ext/conduct/v1";
pub const RING_URL_BASE: &str =
    "https://raw.githubusercontent.com/ogasurfproject-jpg/mcp-conduct-register/main/rings/";
pub const RING_SPEC: &str =
    "NENRIN_SPEC_v1.md (sha256 9ccba2e325fd2a555fcdb2dec519b8c6bf7a669064674846aea98ecfff824e3d)";
pub const LEDGER_URL: &str = "https://ledger.horizonshield.dev/ledger";
pub const NO_SCORE: &str =
    "counts with denominators only; the ring never states a rate, a score or a rank";
pub const EMITTED_BY: &str = "ring_to_intoto.py (workers/hs-ledger/nenrin/ring-v1)";
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
