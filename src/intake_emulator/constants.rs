//! The exact strings and numbers of spec §6. Clients match on these texts (`error`,
//! `reason_code`, `count_reason`), so they live in one place and are never re-typed.

/// §6.1: largest `record_canonical`, measured in UTF-16 code units (JavaScript string length).
pub const MAX_RECORD_LEN: usize = 65_536;
/// §6.1: records stored per UTC day in total.
pub const DAILY_GLOBAL: u64 = 500;
/// §6.1: records per address per UTC day (unsigned and address-signed).
pub const DAILY_PER_IP: u64 = 5;
/// §6.1: records per signed domain per UTC day.
pub const DAILY_PER_DOMAIN: u64 = 50;
/// §6.1 / §6.6: most pending records bundled into one batch entry.
pub const BATCH_MAX: usize = 200;
/// §6.1: key_url fetch timeout.
pub const KEY_FETCH_TIMEOUT_SECS: u64 = 5;

/// The host the real intake runs on; a key served there is never a witness key (§6.2 step 6).
pub const DEFAULT_LEDGER_HOST: &str = "ledger.horizonshield.dev";

// Response framing (§6, preamble).
pub const CONTENT_TYPE_JSON: &str = "application/json; charset=utf-8";
pub const CORS_ALLOW_ORIGIN: &str = "*";
pub const CORS_ALLOW_METHODS: &str = "GET,POST,OPTIONS";

// §6.2 answers.
pub const ERR_RECORD_REQUIRED: &str = "record_canonical (string) required";
pub const ERR_TOO_LARGE: &str = "too_large";
pub const ERR_INVALID_RECORD: &str = "invalid_witness_record";
pub const ERR_GLOBAL_CAP: &str = "daily_global_cap_reached";
pub const ERR_DOMAIN_CAP: &str = "daily_per_domain_cap_reached";
pub const ERR_IP_CAP: &str = "daily_per_ip_cap_reached";
pub const NOTE_CAP: &str = "stated at GET /witness; try tomorrow";
pub const ERR_SIG_TOGETHER: &str = "signature_and_public_key_must_come_together";
pub const ERR_SIG_INVALID: &str = "signature_invalid";
pub const NOTE_SIG_INVALID: &str = "a present signature must verify; omit it to submit unsigned";
pub const ERR_KEY_URL_WITHOUT_SIG: &str = "key_url_without_signature";
pub const NOTE_KEY_URL_WITHOUT_SIG: &str =
    "witness.key_url only means something on a signed record";
pub const ERR_SELF_WITNESS: &str = "self_witness";
pub const NOTE_SELF_WITNESS_AGENT: &str =
    "a key served from the walked agent's own domain cannot witness that agent";
pub const NOTE_SELF_WITNESS_LEDGER: &str = "the ledger's own domain is not a witness domain";
pub const ERR_KEY_URL_UNREACHABLE: &str = "key_url_unreachable";
pub const NOTE_KEY_URL_UNREACHABLE: &str =
    "retry later, or omit key_url to file as an address-lane record";
pub const ERR_KEY_URL_MISMATCH: &str = "key_url_mismatch";
pub const NOTE_KEY_URL_MISMATCH: &str =
    "the key served at witness.key_url is not the key that signed this record";
pub const COUNT_REASON_SAME_DAY: &str =
    "same witness, same endpoint, same day; stored, not counted";
pub const ANCHOR_POLICY: &str = "pending submissions are bundled into a nenrin-witness-batch-v1 ledger entry daily at 00:30 UTC by the ledger's schedule when the pool is not empty; the batch anchor fixes the existence time of every record in it; the Bitcoin stamp follows on the operator's stamping run";
pub const STATUS_PENDING: &str = "pending";
pub const STATUS_ANCHORED: &str = "anchored";
pub const ERR_NOT_FOUND: &str = "not found";

// §6.3 reason codes.
pub const REASON_SCHEMA: &str = "schema";
pub const REASON_BAD_MODE: &str = "bad_mode";
pub const REASON_DISCLAIMER_MISSING: &str = "disclaimer_missing";
pub const REASON_BAD_COMMITMENT: &str = "bad_commitment";
pub const REASON_PATH_LEAKS_TOOL: &str = "path_leaks_tool";
pub const REASON_BAD_KEY_URL: &str = "bad_key_url";

// §6.3 texts the spec states word for word.
pub const WHY_NOT_JSON: &str = "record_canonical is not JSON";
pub const WHY_NOT_OBJECT: &str = "record must be a JSON object";
pub const WHY_SCHEMA: &str = "schema must be jidec-path-v1";
pub const WHY_MISSING_STRING_FIELD: &str = "missing string field: ";
pub const WHY_BAD_KEY_URL: &str =
    "witness.key_url must be an https URL under the witness's own domain";

pub const SCHEMA_PATH: &str = "jidec-path-v1";
pub const SCHEMA_BATCH: &str = "nenrin-witness-batch-v1";
/// §6.5: the purpose prefix that names the walked endpoint.
pub const PURPOSE_PREFIX: &str = "a2a-conduct-walk-v1:";
/// §6.3 step 8: the only method a hash-only node may show.
pub const REDACTED_METHOD: &str = "REDACTED";
pub const MODE_FULL: &str = "full";
pub const MODE_HASH_ONLY: &str = "hash-only";
pub const MODE_COMMITMENT: &str = "commitment";

// §6.6 self-description.
pub const SERVICE: &str = "NENRIN witness intake (JIDEC ledger)";
pub const SPEC: &str = "NENRIN v1, anchored as ledger entry #19";
/// §6.6: `conduct_v1_1.refusals`, in the order the intake lists them.
pub const REFUSALS: [&str; 9] = [
    "disclaimer_missing",
    "bad_mode",
    "bad_commitment",
    "path_leaks_tool",
    "bad_key_url",
    "key_url_mismatch",
    "key_url_unreachable",
    "self_witness",
    "signature_invalid",
];
