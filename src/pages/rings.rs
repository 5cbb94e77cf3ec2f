//! The endpoint page's rings (issue 37): the monthly rings a rings folder holds for the
//! endpoint (`records serve --rings DIR`, laid out as the register's `rings/`), each with its
//! counts and their denominators, never a rate or a score (rings.md §1), its link to the
//! previous ring, and whether its signed Statement verified with the folder's `jwks.json`.

use crate::ring_files;
use crate::rings::audit::{self, Audited, Held, Link, Signed};
use maud::{Markup, html};
use std::path::Path;

/// The section, for `dir` (None: no rings folder was given).
pub fn section(dir: Option<&Path>, endpoint: &str) -> Markup {
    let Some(dir) = dir else {
        return html! {
            section id="rings" {
                h2 { "Rings" }
                p { "No rings folder given: " code { "conduct-walker records serve --rings DIR" } " shows the monthly rings of DIR/<slug>/<YYYY-MM>.json (the register's rings/ folder) here." }
            }
        };
    };
    let (held, jwks) = match ring_files::held_rings(dir, endpoint) {
        Ok(h) => h,
        Err(e) => {
            return html! { section id="rings" { h2 { "Rings" } p class="bad" { "Cannot read " code { (dir.display()) } ": " (e) } } };
        }
    };
    let views: Vec<Held<'_>> = held
        .iter()
        .map(|h| Held {
            name: h
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            bytes: &h.bytes,
            envelope: h.envelope.as_deref(),
        })
        .collect();
    let audited = audit::audit(&views, jwks.as_deref());
    let folder = dir.join(crate::rings::slug(endpoint));
    html! {
        section id="rings" {
            h2 { "Rings" }
            @if audited.is_empty() {
                p { "No ring of this endpoint in " code { (folder.display()) } "." }
            } @else {
                p { "Monthly rings held in " code { (folder.display()) } ": counts with their denominators, as each ring states them. "
                    "A ring never states a rate, a score or a rank. To rebuild one from its inputs: "
                    code { "conduct-walker ring verify RING --history H" } "." }
                table class="rings" {
                    thead { tr { th { "month" } th { "instants reached" } th { "by status" } th { "witnesses" } th { "discrepancies" } th { "v1.1 columns" } th { "chain" } th { "signed Statement" } th { "sha256" } } }
                    tbody { @for a in &audited { (row(a)) } }
                }
            }
        }
    }
}

fn row(a: &Audited) -> Markup {
    if let Some(why) = &a.unreadable {
        return html! { tr class="ring" { td { (a.name) } td colspan="7" class="bad" { (why) } td { code { (short(&a.sha256)) } } } };
    }
    let c = &a.counts;
    html! {
        tr class="ring" {
            td { (a.month) }
            td class="n" { (c.instants_reached) " of " (c.instants_sampled) }
            td { @for (i, (s, n)) in c.by_status.iter().enumerate() { @if i > 0 { ", " } (s) " " (n) } }
            td class="n" { (c.witnesses) }
            td class="n" { (c.discrepancies) }
            td { @if let Some(v) = &c.v11 {
                "witnesses: " (v.witnesses_signed) " signed, " (v.witnesses_unsigned) " unsigned; "
                "discrepancies: " (v.discrepancies_signed) " signed, " (v.discrepancies_unsigned) " unsigned; "
                (v.commitments_unrevealed) " commitments unrevealed; walked as witness " (v.walked_as_witness) "; "
                "coordinates: " (v.instants_derived) " derived, " (v.instants_legacy) " legacy, " (v.instants_no_coordinate_block) " without, of " (c.instants_sampled)
            } @else { "(v1 month)" } }
            td { (link(&a.link)) }
            td { (signed(&a.signed)) }
            td { code title=(a.sha256) { (short(&a.sha256)) } }
        }
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

fn link(l: &Link) -> Markup {
    match l {
        Link::Starts => html! { "starts a chain" },
        Link::Linked(m) => html! { span class="ok" { "links to " (m) } },
        Link::Broken { month, held, named } => html! {
            span class="bad" { "broken: names " code { (short(named)) } ", the held " (month) " is " code { (short(held)) } }
        },
        Link::NotHeld { month, named } => html! {
            "names " (month.as_deref().unwrap_or("a ring")) " (" code { (short(named)) } "), not held here"
        },
    }
}

fn signed(s: &Signed) -> Markup {
    match s {
        Signed::NoEnvelope => html! { "no envelope" },
        Signed::NoKey => html! { "envelope, no jwks.json to check it" },
        Signed::Verified { keyid } => html! { span class="ok" { "verified (" (keyid) ")" } },
        Signed::NotVerified { check, reason } => {
            html! { span class="bad" { "not verified: " (check) ": " (reason) } }
        }
    }
}
