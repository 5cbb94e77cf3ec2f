//! The pages themselves: each a function from a read-only connection (and what the face knows)
//! to HTML text, so handlers, tests and the benchmark call the same code.

use super::svg::{self, Cell, Kind};
use super::{Context, TargetInfo, VerifySummary, WitnessInfo};
use crate::store::outbox::{self, Submission};
use crate::store::status::{self, Fire, FireRecord};
use crate::store::{Store, StoreError};
use crate::witness::lanes::{Lane, Limits};
use chrono::{DateTime, Duration, NaiveDate, Utc};
use maud::{DOCTYPE, Markup, html};
use rusqlite::OptionalExtension as _;
use std::collections::{BTreeMap, BTreeSet};

/// Strip length: the last this many fires of a target.
pub const STRIP: usize = 50;
/// Targets per overview page.
pub const TARGETS_PER_PAGE: usize = 100;
/// Walks in a target page's history when no day is chosen.
const HISTORY: usize = 100;
/// Days in the per-target bar chart and the lane chart.
const DAYS: i64 = 30;
const LANE_DAYS: i64 = 14;
/// At most this many fires are read for a target's bar chart.
const CHART_MAX_FIRES: usize = 5000;
/// Records of one endpoint read by the endpoints page.
const ENDPOINT_RECORDS: usize = 500;

fn layout(title: &str, served_by: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                title { (title) " · conduct-walker" }
                link rel="stylesheet" href="/assets/style.css";
            }
            body {
                header {
                    nav { a href="/" { "Overview" } " · " a href="/endpoints" { "Endpoints" } }
                }
                main { (body) }
                footer {
                    "Read-only view of the store, served by " (served_by)
                    ". Every string on these pages was received from the servers walked or from "
                    "the intakes; it is shown as text."
                }
            }
        }
    }
    .into_string()
}

/// How a fire ended.
pub fn kind_of(f: &Fire) -> Kind {
    match f.state.as_str() {
        "done" => match &f.record {
            Some(r) if r.facts.transport_error => Kind::TransportError,
            Some(r) => match r.outcome.as_deref() {
                Some("PASS") => Kind::Pass,
                Some("FAIL") => Kind::Fail,
                _ => Kind::NoVerdict,
            },
            None => Kind::Error,
        },
        "declined" => Kind::Declined,
        "aborted" => Kind::Aborted,
        "skipped_overlap" => Kind::Skipped,
        "running" => Kind::Running,
        _ => Kind::Error,
    }
}

pub(super) fn record_href(sha: &str) -> String {
    format!("/records/{sha}")
}

pub(super) fn target_href(name: &str) -> String {
    format!("/targets/{}", url_component(name))
}

fn endpoint_href(url: &str) -> String {
    format!("/endpoints?url={}", url_component(url))
}

/// Percent-encode everything but unreserved characters (RFC 3986), for our own links.
fn url_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Names of a record's not-applicable assertions (`result: null`).
fn not_applicable(canonical: &[u8]) -> Vec<String> {
    let v = crate::json::parse_lenient(canonical).unwrap_or(serde_json::Value::Null);
    v["assertions"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter(|a| a["result"].is_null())
                .filter_map(|a| a["claim"].as_str())
                .map(|c| c.split(':').next().unwrap_or(c).trim().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A JSON scalar as a cell shows it: strings bare, absent or null as a dash.
fn shown(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "—".into(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn verdict_text(r: &FireRecord) -> String {
    match (&r.outcome, r.n_pass, r.n_total) {
        (Some(o), Some(p), Some(t)) => format!("{o} {p}/{t}"),
        (Some(o), _, _) => o.clone(),
        _ => "no verdict".into(),
    }
}

/// How a fire ended, once: "PASS 4/4", not "PASS PASS 4/4"; the kind is named beside the
/// verdict only when it says more (a transport error behind a FAIL).
fn fire_text(f: &Fire) -> String {
    let kind = kind_of(f);
    match &f.record {
        Some(r) if r.outcome.as_deref() == Some(kind.label()) => verdict_text(r),
        Some(r) => format!("{} ({})", kind.label(), verdict_text(r)),
        None => kind.label().to_string(),
    }
}

fn cells(fires: &[Fire]) -> Vec<Cell> {
    // Fires arrive newest first; the strip reads left to right, oldest first.
    fires
        .iter()
        .rev()
        .map(|f| {
            let kind = kind_of(f);
            let mut title = format!("{} {}", f.at, fire_text(f));
            if let Some(d) = &f.detail
                && f.record.is_none()
            {
                title.push_str(": ");
                title.push_str(d);
            }
            Cell {
                kind,
                title,
                href: f.record.as_ref().map(|r| record_href(&r.sha256)),
            }
        })
        .collect()
}

/// How the intake took a record, in the words an operator uses.
pub fn filing(subs: &[Submission]) -> String {
    if subs.is_empty() {
        return "not filed (no submission)".into();
    }
    subs.iter()
        .map(|s| s.summary().short)
        // Each wording once (several answers for one record often say the same).
        .fold(Vec::<String>::new(), |mut seen, text| {
            if !seen.contains(&text) {
                seen.push(text);
            }
            seen
        })
        .join("; ")
}

/// A short fingerprint of a base64 public key: the first 16 hex of its sha256.
pub fn key_fingerprint(public_key_b64: &str) -> String {
    use base64::Engine as _;
    match base64::engine::general_purpose::STANDARD.decode(public_key_b64) {
        Ok(raw) => {
            let hex = crate::digest::sha256_hex(&raw);
            format!("sha256:{}", &hex[..16])
        }
        Err(_) => "(not base64)".into(),
    }
}

/// The witness block: from the config, else from the newest record.
fn witness_of(
    conn: &rusqlite::Connection,
    ctx: &Context,
) -> Result<Option<WitnessInfo>, StoreError> {
    let newest = status::newest_record_id(conn)?;
    if let Some(w) = &ctx.witness {
        let mut w = w.clone();
        // The config's key may be a credential only the service can read: then the newest
        // record this witness signed tells its key, rather than calling it unsigned.
        if w.public_key_b64.is_none()
            && let Some(id) = newest
        {
            let (canonical, key): (Vec<u8>, Option<String>) = conn.query_row(
                "SELECT canonical, public_key_b64 FROM records WHERE id = ?1",
                [id],
                |r| Ok((crate::store::codec::decode(conn, r.get(0)?)?, r.get(1)?)),
            )?;
            let v = crate::json::parse_lenient(&canonical).unwrap_or(serde_json::Value::Null);
            if v["witness"]["name"].as_str() == Some(w.name.as_str()) {
                w.public_key_b64 = key;
            }
        }
        return Ok(Some(w));
    }
    let Some(id) = newest else {
        return Ok(None);
    };
    let (canonical, key): (Vec<u8>, Option<String>) = conn.query_row(
        "SELECT canonical, public_key_b64 FROM records WHERE id = ?1",
        [id],
        |r| Ok((crate::store::codec::decode(conn, r.get(0)?)?, r.get(1)?)),
    )?;
    let v = crate::json::parse_lenient(&canonical).unwrap_or(serde_json::Value::Null);
    let text = |k: &str| v["witness"][k].as_str().map(str::to_string);
    Ok(Some(WitnessInfo {
        name: text("name").unwrap_or_default(),
        vantage: text("vantage").unwrap_or_default(),
        key_url: text("key_url"),
        public_key_b64: key,
    }))
}

/// One overview row.
struct Row {
    name: String,
    /// Configured or walked target (else an endpoint of a store without a daemon).
    is_target: bool,
    endpoint: String,
    schedule: Option<String>,
    next_fire: Option<String>,
    fires: Vec<Fire>,
}

fn iso(t: DateTime<Utc>) -> String {
    crate::clock::walked_at(t)
}

fn configured<'a>(ctx: &'a Context, name: &str) -> Option<&'a TargetInfo> {
    ctx.targets.iter().find(|t| t.name == name)
}

/// The overview page. `strips` keeps each target's strip between calls (the served pages keep
/// one for the process; `&StripCache::default()` reads every strip afresh).
pub fn overview(
    conn: &rusqlite::Connection,
    ctx: &Context,
    verify: &(Option<VerifySummary>, bool),
    page: usize,
    now: DateTime<Utc>,
    served_by: &str,
    strips: &super::strips::StripCache,
) -> Result<String, StoreError> {
    strips.begin(conn)?;
    let today = now.format("%Y-%m-%d").to_string();
    let witness = witness_of(conn, ctx)?;
    // Rows: configured targets and every target the daemon fired; a store without a daemon
    // (walks with --db, merged imports) has one row per endpoint instead.
    let mut names: BTreeSet<String> = ctx.targets.iter().map(|t| t.name.clone()).collect();
    names.extend(status::walked_targets(conn, 100_000)?);
    // Endpoints whose records no daemon fire stands for (walks with --db, records imported
    // from other daemons): a row each, also beside configured targets (`records serve
    // --config` over a merged store), so nothing in the store is hidden.
    let fired: BTreeSet<String> = crate::store::summary::fired_endpoints(conn)?;
    let configured_endpoints: BTreeSet<&str> = ctx
        .targets
        .iter()
        .filter_map(|t| t.endpoint.as_deref())
        .collect();
    let bare: Vec<String> = status::stored_endpoints(conn, 100_000)?
        .into_iter()
        .filter(|e| !fired.contains(e) && !configured_endpoints.contains(e.as_str()))
        .collect();
    let all: Vec<(bool, String)> = names
        .into_iter()
        .map(|n| (false, n))
        .chain(bare.into_iter().map(|e| (true, e)))
        .collect();
    let by_endpoint = all.iter().all(|(e, _)| *e);
    let pages = all.len().div_ceil(TARGETS_PER_PAGE).max(1);
    let page = page.min(pages);
    let mut rows = Vec::new();
    for (is_endpoint, name) in all
        .iter()
        .skip((page - 1) * TARGETS_PER_PAGE)
        .take(TARGETS_PER_PAGE)
    {
        if *is_endpoint {
            rows.push(Row {
                name: name.clone(),
                is_target: false,
                endpoint: name.clone(),
                schedule: None,
                next_fire: None,
                fires: status::endpoint_records(conn, name, STRIP)?,
            });
            continue;
        }
        let conf = configured(ctx, name);
        let mut fires = strips.latest_fires(conn, name, STRIP)?;
        // A configured target this store has no fires of (a merged store served with the
        // config): the records of its endpoint, when the config names one.
        if fires.is_empty()
            && let Some(e) = conf.and_then(|t| t.endpoint.as_deref())
        {
            fires = status::endpoint_records(conn, e, STRIP)?;
        }
        let endpoint = conf
            .map(|t| t.endpoint.clone().unwrap_or_else(|| t.origin.clone()))
            .or_else(|| {
                fires.iter().find_map(|f| {
                    f.record
                        .as_ref()
                        .map(|r| r.endpoint.clone())
                        .or(f.endpoint.clone())
                        .or(f.origin.clone())
                })
            })
            .unwrap_or_default();
        rows.push(Row {
            name: name.clone(),
            is_target: true,
            endpoint,
            schedule: conf.map(|t| t.schedule.pattern.clone()),
            next_fire: conf.and_then(|t| t.schedule.next_after(now)).map(iso),
            fires,
        });
    }
    // How each row's last record was filed.
    let mut filed: Vec<String> = Vec::with_capacity(rows.len());
    for r in &rows {
        filed.push(match r.fires.iter().find_map(|f| f.record.as_ref()) {
            Some(rec) => filing(&outbox::for_record(conn, rec.id)?),
            None => String::new(),
        });
    }
    let lanes_today = outbox::lanes_used(conn, &today)?;
    let from_day = (now - Duration::days(LANE_DAYS - 1))
        .format("%Y-%m-%d")
        .to_string();
    let lane_days = status::lanes_by_day(conn, &from_day)?;
    let outbox_states = status::outbox_by_state(conn)?;
    let size = status::size_bytes(conn)?;
    let records = status::newest_record_id(conn)?.unwrap_or(0);
    // The charts' caps: what the one intake stated, else the spec's.
    let chart_limits = match ctx.limits.as_slice() {
        [(_, l)] => *l,
        _ => Limits::default(),
    };
    let limits_of = |intake: &str| -> (Limits, bool) {
        match ctx.limits.iter().find(|(u, _)| u == intake) {
            Some((_, l)) => (*l, true),
            None => (Limits::default(), false),
        }
    };

    let ledger_box = super::ledger::overview_box(conn)?;
    let alerts_box = super::alerts::overview_section(conn)?;
    let body = html! {
        h1 { "What the walker saw" }
        (alerts_box)
        section class="grid" {
            div class="box" id="witness" {
                h2 { "Witness" }
                @match &witness {
                    Some(w) => dl {
                        dt { "name" } dd class="witness-name" { (w.name) }
                        dt { "vantage" } dd { (w.vantage) }
                        dt { "key" } dd {
                            @match &w.public_key_b64 {
                                Some(k) => code title=(k) { (key_fingerprint(k)) },
                                None => "unsigned (address lane)",
                            }
                        }
                        dt { "key_url" } dd { @match &w.key_url { Some(u) => code { (u) }, None => "none" } }
                    },
                    None => p { "No record stored yet and no config given." },
                }
            }
            div class="box" id="lanes" {
                h2 { "Lanes today (" (today) ", UTC)" }
                @if lanes_today.is_empty() {
                    p { "Nothing accepted by an intake today." }
                } @else {
                    table {
                        tr { th { "intake" } th { "lane" } th { "accepted" } th { "cap" } }
                        @for (intake, lane, used) in &lanes_today {
                            @let (limits, stated) = limits_of(intake);
                            @let cap = limits.lane_cap(&Lane::from_key(lane));
                            tr class="lane" {
                                td { code { (intake) } } td { (lane) }
                                td class="used" { (used) }
                                td { (cap) @if !stated { " (spec default)" } }
                            }
                        }
                    }
                }
                // One chart per lane, each under its own cap: a domain lane's 9 of 50 is not an
                // address lane's 9 of 5.
                @let lanes: BTreeSet<&str> = lane_days.iter().map(|(_, l, _)| l.as_str()).collect();
                @let lanes: Vec<&str> = if lanes.is_empty() { vec!["address"] } else { lanes.into_iter().collect() };
                @for lane in lanes {
                    @let per_day = lane_day_series(&lane_days, lane, now);
                    @let cap = chart_limits.lane_cap(&Lane::from_key(lane)) as u64;
                    (svg::lane_bars(&format!("lane {lane}: records accepted per UTC day (cap {cap})"),
                        &per_day, cap))
                }
            }
            div class="box" id="outbox" {
                h2 { "Outbox" }
                @if outbox_states.is_empty() { p { "No submissions." } }
                @else {
                    table {
                        @for (state, n) in &outbox_states {
                            tr class="outbox-state" data-state=(state) { td { (state) } td class="n" { (n) } }
                        }
                    }
                }
            }
            (ledger_box)
            div class="box" id="store" {
                h2 { "Store" }
                dl {
                    dt { "records" } dd id="record-count" { (records) }
                    dt { "size" } dd { (size / 1024) " KiB" }
                    dt { "last verify" } dd id="verify" {
                        @match &verify.0 {
                            None => @if verify.1 { "running…" } @else { "not run yet" },
                            Some(v) => {
                                @if v.problems.is_empty() {
                                    span class="ok" { "OK" }
                                } @else {
                                    span class="bad" { (v.problems.len()) " problem(s)" }
                                }
                                " at " (v.finished_at) ": " (v.rows) " rows, " (v.signed) " signatures"
                                @if v.full_at != v.finished_at { " (every row read at " (v.full_at) ", the rows added since checked after)" }
                                @if let Some((id, head)) = &v.head { ", head row " (id) " " code { (head.get(..16).unwrap_or(head)) } }
                                @if verify.1 { " (re-running)" }
                                @if !v.problems.is_empty() {
                                    ul { @for p in v.problems.iter().take(5) { li { (p) } } }
                                }
                            }
                        }
                    }
                }
            }
        }
        section id="targets" {
            h2 { @if by_endpoint { "Endpoints (" (all.len()) ")" } @else { "Targets (" (all.len()) ")" } }
            (svg::legend())
            table class="targets" {
                thead { tr {
                    th { @if by_endpoint { "endpoint" } @else { "target" } }
                    @if !by_endpoint { th { "endpoint" } th { "schedule · next fire (UTC)" } }
                    th { "last verdict" } th { "last " (STRIP) " walks (oldest → newest)" }
                    th { "failed most recently" } th { "last record filed as" }
                } }
                tbody {
                    @for (r, filed) in rows.iter().zip(&filed) {
                        @let last = r.fires.iter().find_map(|f| f.record.as_ref());
                        @let failed = r.fires.iter().find_map(|f| f.record.as_ref().filter(|x| !x.facts.failed.is_empty()));
                        tr class="target" data-name=(r.name) {
                            td class="name" {
                                @if r.is_target { a href=(target_href(&r.name)) { (r.name) } }
                                @else { a href=(endpoint_href(&r.name)) { (r.name) } }
                            }
                            @if !by_endpoint {
                                td class="endpoint" { a href=(endpoint_href(&r.endpoint)) { (r.endpoint) } }
                                td { @if let Some(s) = &r.schedule { code { (s) } br; (r.next_fire.as_deref().unwrap_or("none")) } @else { "not configured" } }
                            }
                            td class="verdict" {
                                @match last {
                                    Some(rec) => {
                                        a href=(record_href(&rec.sha256)) class={"v " (kind_of(r.fires.iter().find(|f| f.record.as_ref().map(|x| x.id) == Some(rec.id)).unwrap_or(&r.fires[0])).slug())} { (verdict_text(rec)) }
                                        br; small { (rec.walked_at) }
                                    },
                                    None => "no record",
                                }
                            }
                            td { (svg::strip(&cells(&r.fires), STRIP)) }
                            td class="failed" {
                                @if let Some(rec) = failed {
                                    (rec.facts.failed.join(", ")) br; small { (rec.walked_at) }
                                }
                            }
                            td class="filing" { (filed) }
                        }
                    }
                }
            }
            @if pages > 1 {
                nav class="pages" {
                    "page " (page) " of " (pages) ": "
                    @for p in 1..=pages {
                        @if p == page { strong { (p) } " " } @else { a href={"/?page=" (p)} { (p) } " " }
                    }
                }
            }
        }
    };
    Ok(layout("Overview", served_by, body))
}

/// Accepted per day over the lane chart's days, zeros included.
fn lane_day_series(
    rows: &[(String, String, u64)],
    lane: &str,
    now: DateTime<Utc>,
) -> Vec<(String, u64)> {
    let mut by_day: BTreeMap<String, u64> = BTreeMap::new();
    for d in 0..LANE_DAYS {
        by_day.insert(
            (now - Duration::days(LANE_DAYS - 1 - d))
                .format("%Y-%m-%d")
                .to_string(),
            0,
        );
    }
    for (day, _, n) in rows.iter().filter(|(_, l, _)| l == lane) {
        if let Some(v) = by_day.get_mut(day) {
            *v += n;
        }
    }
    by_day.into_iter().collect()
}

/// A target's page; `None` when no such target is configured or has fired.
pub fn target(
    conn: &rusqlite::Connection,
    ctx: &Context,
    name: &str,
    day: Option<NaiveDate>,
    now: DateTime<Utc>,
    served_by: &str,
) -> Result<Option<String>, StoreError> {
    let conf = configured(ctx, name);
    let fires = match day {
        Some(d) => {
            let from = format!("{}T00:00:00", d.format("%Y-%m-%d"));
            let to = format!("{}T00:00:00", (d + Duration::days(1)).format("%Y-%m-%d"));
            status::fires_between(conn, name, &from, &to, 2000)?
        }
        None => status::latest_fires(conn, name, HISTORY)?,
    };
    let latest = if day.is_some() {
        status::latest_fires(conn, name, STRIP)?
    } else {
        fires.iter().take(STRIP).cloned().collect()
    };
    if conf.is_none() && latest.is_empty() {
        return Ok(None);
    }
    let from = (now - Duration::days(DAYS - 1))
        .format("%Y-%m-%d")
        .to_string();
    let daily = status::daily_outcomes(conn, name, &from, CHART_MAX_FIRES)?;
    let bars = daily_bars(&daily, now);
    let mut filed = Vec::with_capacity(fires.len());
    for f in &fires {
        filed.push(match &f.record {
            Some(r) => filing(&outbox::for_record(conn, r.id)?),
            None => String::new(),
        });
    }
    // Not-applicable assertions are not among the stored facts: read from each record shown.
    let mut timeline: Vec<svg::TimelineColumn> = Vec::with_capacity(fires.len());
    for f in fires.iter().rev() {
        let column = match &f.record {
            Some(r) => {
                // An archived record (records archive) keeps its facts but not its bytes.
                let canonical: Option<Vec<u8>> = conn
                    .query_row(
                        "SELECT canonical FROM records WHERE id = ?1",
                        [r.id],
                        |row| Ok(crate::store::codec::decode(conn, row.get(0)?)?),
                    )
                    .optional()?;
                let not_applicable = canonical.map(|c| not_applicable(&c)).unwrap_or_default();
                Some((r.facts.failed.clone(), not_applicable))
            }
            None => None,
        };
        timeline.push((f.at.clone(), column));
    }
    let body = html! {
        h1 { "Target " span class="target-name" { (name) } }
        dl class="box" {
            @if let Some(t) = conf {
                dt { "origin" } dd { code { (t.origin) } }
                dt { "endpoint" } dd { code { (t.endpoint.as_deref().unwrap_or("the card's first measured endpoint")) } }
                dt { "schedule" } dd { code { (t.schedule.pattern) } " (UTC), next fire " (t.schedule.next_after(now).map(iso).unwrap_or_else(|| "none".into())) }
            } @else {
                dt { "configuration" } dd { "not in the configuration this server was given; history from the store" }
            }
        }
        h2 { "Last " (latest.len()) " walks" }
        (svg::strip(&cells(&latest), STRIP))
        (svg::legend())
        h2 { "Per UTC day, last " (DAYS) " days" }
        (svg::stacked_bars("walks per day by outcome", &bars))
        h2 { "History" @if let Some(d) = day { " of " (d.format("%Y-%m-%d")) } }
        form method="get" action=(target_href(name)) {
            label { "day " input type="date" name="day" value=(day.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_default()); }
            " " button type="submit" { "show" }
            @if day.is_some() { " " a href=(target_href(name)) { "latest walks" } }
        }
        h3 { "Which assertion failed when (oldest → newest)" }
        (svg::assertion_timeline(&crate::walk::spec::ASSERTION_NAMES, &timeline))
        table class="history" {
            thead { tr { th { "fired (UTC)" } th { "outcome" } th { "record" } th { "failed assertions" } th { "filed as" } th { "detail" } } }
            tbody {
                @for (f, filed) in fires.iter().zip(&filed) {
                    @let k = kind_of(f);
                    tr class="fire" data-kind=(k.slug()) {
                        td { (f.at) }
                        td class={"v " (k.slug())} { (fire_text(f)) }
                        td { @if let Some(r) = &f.record { a href=(record_href(&r.sha256)) { code { (r.sha256.get(..12).unwrap_or(&r.sha256)) } } } }
                        td class="failed" { @if let Some(r) = &f.record { (r.facts.failed.join(", ")) } }
                        td { (filed) }
                        td { (f.detail.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
    };
    Ok(Some(layout(&format!("Target {name}"), served_by, body)))
}

fn daily_bars(
    rows: &[(String, String, u64)],
    now: DateTime<Utc>,
) -> Vec<(String, Vec<(Kind, u64)>)> {
    let mut by_day: BTreeMap<String, BTreeMap<&'static str, (Kind, u64)>> = BTreeMap::new();
    for d in 0..DAYS {
        by_day.insert(
            (now - Duration::days(DAYS - 1 - d))
                .format("%Y-%m-%d")
                .to_string(),
            BTreeMap::new(),
        );
    }
    for (day, kind, n) in rows {
        let k = match kind.as_str() {
            "PASS" => Kind::Pass,
            "FAIL" => Kind::Fail,
            "none" => Kind::NoVerdict,
            "declined" => Kind::Declined,
            "aborted" => Kind::Aborted,
            "skipped_overlap" => Kind::Skipped,
            "running" => Kind::Running,
            _ => Kind::Error,
        };
        if let Some(m) = by_day.get_mut(day) {
            m.entry(k.slug()).or_insert((k, 0)).1 += n;
        }
    }
    by_day
        .into_iter()
        .map(|(d, m)| {
            let mut segs: Vec<(Kind, u64)> = m.into_values().collect();
            // PASS at the bottom, FAIL on it, the rest above.
            segs.sort_by_key(|(k, _)| Kind::ALL.iter().position(|x| x == k));
            (d, segs)
        })
        .collect()
}

/// A record's page.
/// `verified` of a card-signature block in words.
fn verified_word(block: &serde_json::Value) -> &'static str {
    match block.get("verified").and_then(serde_json::Value::as_bool) {
        Some(true) => "verified",
        Some(false) => "does not verify",
        None => "not established",
    }
}

/// A signed card's two checks: the record's (the reference walker's, §4.3) and conduct-walker's
/// own, kept beside the record. Nothing for an unsigned card.
fn card_signature_section(
    in_record: &serde_json::Value,
    own: Option<&serde_json::Value>,
) -> Markup {
    if in_record.get("present") != Some(&serde_json::Value::Bool(true)) {
        return html! {};
    }
    let reason = |b: &serde_json::Value| {
        b["verified_reason"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    html! {
        section class="box" id="card-signature" {
            h2 { "Card signature" }
            p id="card-signature-record" {
                "In the record (the reference walker's check: ES256 in two forms, key at the jku): "
                strong { (verified_word(in_record)) } ". " (reason(in_record))
            }
            @if let Some(own) = own {
                p id="card-signature-own" {
                    "conduct-walker's own check (every algorithm, pinned keys, canonicalisation profiles; not in the record): "
                    strong { (verified_word(own)) } ". " (reason(own))
                    @if let Some(p) = own["profile"].as_str() { " Profile: " code { (p) } "." }
                    @if let Some(n) = own["uncovered_count"].as_u64() { " Members the signature does not cover: " (n) "." }
                }
            }
        }
    }
}

pub fn record(store: &Store, prefix: &str, served_by: &str) -> Result<String, StoreError> {
    let rec = store.get_by_prefix(prefix)?;
    let conn = store.connection();
    let row = &rec.row;
    let sha_ok = crate::digest::sha256_hex(&rec.canonical) == row.sha256;
    let signature: Result<Option<()>, String> = match (&rec.signature_b64, &rec.public_key_b64) {
        (Some(s), Some(k)) => crate::store::check_signature(&rec.canonical, s, k)
            .map(Some)
            .map_err(|e| e.to_string()),
        _ => Ok(None),
    };
    let (prev, next) = status::neighbours(conn, row.id)?;
    let prev_chain = match &prev {
        Some((_, _, c)) => crate::store::verify::decode_hex32(c),
        None => Some(crate::store::CHAIN_GENESIS),
    };
    let sha_raw = crate::store::verify::decode_hex32(&row.sha256);
    let chain_ok = match (prev_chain, sha_raw) {
        (Some(p), Some(s)) => {
            hex::encode(crate::store::verify::chain_next(&p, &s)) == row.chain_hash
        }
        _ => false,
    };
    let subs = outbox::for_record(conn, row.id)?;
    let mut answers = Vec::new();
    for s in &subs {
        answers.push(status::attempts(conn, s.id)?);
    }
    let revealed = match &rec.kept_full {
        Some(k) => {
            let sha = crate::digest::sha256_hex(&k.canonical);
            let stored = store.get_by_sha256(&sha)?;
            Some((sha, stored))
        }
        None => None,
    };
    let opens = status::commitment_opened_by(conn, &row.sha256)?;
    let fire = status::fire_of_record(conn, row.id)?;
    let value = crate::json::parse_lenient(&rec.canonical).unwrap_or(serde_json::Value::Null);
    let pretty = serde_json::to_string_pretty(&value).unwrap_or_default();
    let v = row.meta.verdict.as_ref();
    let ledger_life = super::ledger::record_life(conn, row.id, &row.sha256)?;
    let own_card_check = crate::store::beside::get(conn, row.id)?.card_verification;
    let binding = crate::store::task_bindings::for_record(conn, row.id)?;
    let body = html! {
        h1 { "Record " code { (row.sha256.get(..12).unwrap_or(&row.sha256)) } }
        p class="links" {
            a id="raw" href={"/records/" (row.sha256) "/raw"} { "the exact bytes (" (rec.canonical.len()) " bytes, application/json)" }
        }
        section class="grid" {
            div class="box" {
                h2 { "Walk" }
                dl {
                    dt { "sha256" } dd { code id="sha" { (row.sha256) } }
                    dt { "walked at" } dd { (row.meta.walked_at) }
                    dt { "endpoint" } dd { a href=(endpoint_href(&row.meta.endpoint)) { (row.meta.endpoint) } }
                    dt { "origin" } dd { code { (row.meta.origin) } }
                    dt { "mode · privacy" } dd { (row.meta.walker_mode.as_deref().unwrap_or("?")) " · " (row.meta.privacy_mode) }
                    dt { "verdict" } dd id="verdict" { @match v { Some(v) => { (v.outcome) " " (v.n_pass) "/" (v.n_total) }, None => "none (commitment)" } }
                    dt { "stored at" } dd { (row.inserted_at) }
                    @if let Some(u) = value["conduct_ext"]["witness_intake"].as_str() { dt { "intake the card names" } dd { code { (u) } } }
                    @if let Some(u) = value["conduct_ext"]["conduct_record"].as_str() { dt { "conduct record the card names" } dd { code { (u) } } }
                    @if let Some((t, at)) = &fire { dt { "fired by" } dd { a href=(target_href(t)) { (t) } " at " (at) } }
                }
            }
            div class="box" id="checks" {
                h2 { "Checks" }
                dl {
                    dt { "sha256 of the bytes" } dd { @if sha_ok { span class="ok" { "matches" } } @else { span class="bad" { "DOES NOT MATCH" } } }
                    dt { "signature" } dd id="signature" {
                        @match &signature {
                            Ok(Some(())) => span class="ok" { "valid Ed25519 signature over the exact bytes" },
                            Ok(None) => "unsigned",
                            Err(e) => span class="bad" { "INVALID: " (e) },
                        }
                        @if let Some(k) = &rec.public_key_b64 { br; "key " code title=(k) { (key_fingerprint(k)) } }
                    }
                    dt { "chain position" } dd id="chain" {
                        "row " (row.id) ", chain hash " code { (row.chain_hash.get(..16).unwrap_or(&row.chain_hash)) } " "
                        @if chain_ok { span class="ok" { "follows from the previous row" } } @else { span class="bad" { "does not follow from the previous row" } }
                    }
                    dt { "previous" } dd { @match &prev { Some((id, sha, _)) => { "row " (id) " " a class="prev" href=(record_href(sha)) { code { (sha.get(..12).unwrap_or(sha)) } } }, None => "none (first row)" } }
                    dt { "next" } dd { @match &next { Some((id, sha, _)) => { "row " (id) " " a class="next" href=(record_href(sha)) { code { (sha.get(..12).unwrap_or(sha)) } } }, None => "none (last row)" } }
                }
            }
        }
        (card_signature_section(&value["card_signature"], own_card_check.as_ref()))
        @if let Some((sha, stored)) = &revealed {
            section class="box" id="commitment" {
                h2 { "Commitment" }
                p { "The full record (sha256 " code { (sha) } ") is kept in this store. "
                    @match stored {
                        Some(s) => { "Revealed: stored as its own record at " (s.row.inserted_at) " (" a href=(record_href(sha)) { "row " (s.row.id) } ")." },
                        None => "Not revealed.",
                    }
                }
            }
        }
        @if let Some((sha, id)) = &opens {
            section class="box" id="reveals" {
                h2 { "Reveal" }
                p { "This is the full record of the commitment " a href=(record_href(sha)) { "row " (id) } "." }
            }
        }
        (super::alerts::record_section(conn, &row.sha256, fire.as_ref().map(|(t, _)| t.as_str()))?)
        section id="intake" {
            h2 { "Intake answers" }
            @if subs.is_empty() { p { "Never planned for an intake." } }
            @for (s, tries) in subs.iter().zip(&answers) {
                div class="box submission" {
                    p { code { (s.intake_url) } " · lane " (s.lane) " · " strong { (filing(std::slice::from_ref(s))) } " · state " (s.state) " · " (s.attempts) " attempt(s)" }
                    @if s.state == crate::witness::filing::SubmissionState::Sending {
                        // Why the row waits and for what (issue 34): a lookup, never a blind resend.
                        p class="lookup" { (s.summary().text) }
                    }
                    @if !tries.is_empty() {
                        table class="attempts" {
                            tr { th { "at" } th { "answer" } th { "status" } th { "body" } }
                            @for a in tries {
                                tr class="attempt" { td { (a.attempted_at) } td { (a.answer) } td { (a.status) } td { pre { (a.body.chars().take(2000).collect::<String>()) } } }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(b) = &binding { (task_binding_section(b)) }
        (ledger_life)
        @if let Some(list) = value["assertions"].as_array() {
            section {
                h2 { "Assertions" }
                table class="assertions" {
                    tr { th { "result" } th { "claim" } th { "note" } }
                    @for a in list {
                        @let word = match a["result"].as_bool() { Some(true) => "pass", Some(false) => "FAIL", None => "n/a" };
                        tr class={"assertion " (word)} { td { (word) } td { (a["claim"].as_str().unwrap_or("")) } td { (a["note"].as_str().unwrap_or("")) } }
                    }
                }
            }
        }
        @if let Some(list) = value["nodes"].as_array() {
            section {
                h2 { "Nodes" }
                table class="nodes" {
                    tr { th { "id" } th { "kind" } th { "request" } th { "status" } }
                    @for n in list {
                        tr {
                            // A compute node has no id of its own and no response.
                            td { (shown(&n["id"])) }
                            td { (n["kind"].as_str().unwrap_or("")) }
                            td { (n["request"]["method"].as_str().unwrap_or("")) " " code { (n["request"]["url"].as_str().or(n["label"].as_str()).unwrap_or("")) } }
                            td { (shown(&n["response"]["status"])) }
                        }
                    }
                }
            }
        }
        section {
            h2 { "The record, pretty-printed" }
            pre class="json" { (pretty) }
        }
    };
    Ok(layout(
        &format!("Record {}", row.sha256.get(..12).unwrap_or(&row.sha256)),
        served_by,
        body,
    ))
}

/// The record's task binding (spec §5.1): skipped and why, or the observation's identities and
/// what the task-delegation ledger answered.
fn task_binding_section(b: &crate::store::task_bindings::TaskBinding) -> Markup {
    let answer = b
        .answer_json()
        .map(|a| serde_json::to_string_pretty(&a).unwrap_or_default());
    html! {
        section class="box" id="task-binding" {
            h2 { "Task binding" }
            p { code { (b.ledger_url) } " · " strong { (b.describe()) } }
            dl {
                @if let Some(t) = &b.task_id { dt { "task id" } dd { code { (t) } } }
                @if let Some(e) = &b.evidence_id { dt { "evidence_id" } dd { code { (e) } } }
                @if let Some(w) = &b.witness_id { dt { "witness (W)" } dd { code { (w) } } }
                @if let Some(p) = &b.requester_id { dt { "requester (P, a key made for this binding)" } dd { code { (p) } } }
                @if let Some(at) = &b.sent_at { dt { "sent at" } dd { (at) } }
                @if let Some(at) = &b.answered_at { dt { "settled at" } dd { (at) } }
            }
            @if let Some(a) = &answer { pre class="json" { (a) } }
        }
    }
}

/// Each witness's last outcome (and failed assertions) on one UTC day.
type DaySeen = BTreeMap<WitnessKey, (Kind, String)>;

/// Who saw one endpoint: a witness as name, vantage and key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct WitnessKey {
    name: String,
    vantage: String,
    key: String,
}

/// The endpoints page: the list, or one endpoint across every witness in the store.
pub fn endpoints(
    conn: &rusqlite::Connection,
    url: Option<&str>,
    served_by: &str,
) -> Result<String, StoreError> {
    endpoints_with(conn, url, served_by, Markup::default())
}

/// [`endpoints`] with a section the face adds after the ledger's (the rings).
pub fn endpoints_with(
    conn: &rusqlite::Connection,
    url: Option<&str>,
    served_by: &str,
    extra: Markup,
) -> Result<String, StoreError> {
    let Some(url) = url else {
        let list = status::endpoints(conn, 5000)?;
        let body = html! {
            h1 { "Endpoints (" (list.len()) ")" }
            ul class="endpoints" { @for e in &list { li { a href=(endpoint_href(e)) { (e) } } } }
        };
        return Ok(layout("Endpoints", served_by, body));
    };
    let recs = status::endpoint_records(conn, url, ENDPOINT_RECORDS)?;
    let key_of = |f: &Fire| {
        let r = f.record.as_ref();
        WitnessKey {
            name: r
                .and_then(|r| r.facts.witness_name.clone())
                .unwrap_or_default(),
            vantage: r.and_then(|r| r.facts.vantage.clone()).unwrap_or_default(),
            key: f
                .public_key_b64
                .as_deref()
                .map(key_fingerprint)
                .unwrap_or_else(|| "unsigned".into()),
        }
    };
    // Per witness: records, newest first (recs are newest first).
    let mut witnesses: BTreeMap<WitnessKey, Vec<&Fire>> = BTreeMap::new();
    for f in &recs {
        witnesses.entry(key_of(f)).or_default().push(f);
    }
    // Per UTC day: each witness's last outcome that day; a day where they differ is shown.
    let mut days: BTreeMap<String, DaySeen> = BTreeMap::new();
    for f in recs.iter().rev() {
        let day = f.at.get(..10).unwrap_or(&f.at).to_string();
        let failed = f
            .record
            .as_ref()
            .map(|r| r.facts.failed.join(", "))
            .unwrap_or_default();
        days.entry(day)
            .or_default()
            .insert(key_of(f), (kind_of(f), failed));
    }
    let disagreements: Vec<(&String, &DaySeen)> = days
        .iter()
        .rev()
        .filter(|(_, m)| {
            m.len() > 1
                && m.values()
                    .map(|(k, f)| (k.slug(), f.as_str()))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
        })
        .collect();
    let foreign = super::ledger::endpoint_foreign(conn, url)?;
    let body = html! {
        h1 { "Endpoint " code class="endpoint-url" { (url) } }
        p { (recs.len()) " most recent record(s) of this endpoint in the store, from "
            (witnesses.len()) " witness(es)." }
        h2 { "Who saw what" }
        table class="witnesses" {
            thead { tr { th { "witness" } th { "vantage" } th { "key" } th { "records" } th { "first · last walk" } th { "last verdict" } th { "failed then" } th { "strip" } } }
            tbody {
                @for (w, fs) in &witnesses {
                    @let last = fs[0];
                    tr class="witness" {
                        td { (w.name) } td { (w.vantage) } td { code { (w.key) } }
                        td class="n" { (fs.len()) }
                        td { (fs[fs.len() - 1].at) br; (last.at) }
                        td { @if let Some(r) = &last.record { a href=(record_href(&r.sha256)) { (verdict_text(r)) } } }
                        td { @if let Some(r) = &last.record { (r.facts.failed.join(", ")) } }
                        td { @let owned: Vec<Fire> = fs.iter().take(STRIP).map(|f| (*f).clone()).collect(); (svg::strip(&cells(&owned), STRIP)) }
                    }
                }
            }
        }
        (foreign)
        (extra)
        h2 { "Where witnesses disagree" }
        @if disagreements.is_empty() {
            p id="agreement" { "No UTC day on which two witnesses of this endpoint saw different outcomes." }
        } @else {
            table class="disagreements" {
                thead { tr { th { "day (UTC)" } th { "witness (vantage): last outcome that day, failed assertions" } } }
                tbody {
                    @for (day, m) in &disagreements {
                        tr class="disagreement" {
                            td { (day) }
                            td { ul { @for (w, (k, failed)) in m.iter() { li { (w.name) " (" (w.vantage) "): " span class={"v " (k.slug())} { (k.label()) } @if !failed.is_empty() { " — " (failed) } } } } }
                        }
                    }
                }
            }
        }
        h2 { "Records" }
        table class="records" {
            thead { tr { th { "walked at" } th { "witness" } th { "vantage" } th { "outcome" } th { "failed" } th { "record" } } }
            tbody {
                @for f in &recs {
                    @if let Some(r) = &f.record {
                        tr { td { (r.walked_at) } td { (r.facts.witness_name.as_deref().unwrap_or("")) } td { (r.facts.vantage.as_deref().unwrap_or("")) }
                             td { (fire_text(f)) } td { (r.facts.failed.join(", ")) }
                             td { a href=(record_href(&r.sha256)) { code { (r.sha256.get(..12).unwrap_or(&r.sha256)) } } } }
                    }
                }
            }
        }
    };
    Ok(layout(&format!("Endpoint {url}"), served_by, body))
}
