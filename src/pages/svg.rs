//! Server-side SVG charts, built with the same template engine as the pages (every label is
//! escaped). Colours are presentation attributes, not inline styles, so the strict CSP holds.

use maud::{Markup, html};

/// How a fire ended, as the strip colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pass,
    Fail,
    TransportError,
    Declined,
    Aborted,
    Skipped,
    Error,
    Running,
    /// A stored record with no verdict (commitment mode).
    NoVerdict,
}

impl Kind {
    /// The label shown in tooltips, legends and tables (tests match on it).
    pub fn label(self) -> &'static str {
        match self {
            Kind::Pass => "PASS",
            Kind::Fail => "FAIL",
            Kind::TransportError => "transport error",
            Kind::Declined => "declined by consent",
            Kind::Aborted => "aborted",
            Kind::Skipped => "skipped: still running",
            Kind::Error => "error",
            Kind::Running => "running",
            Kind::NoVerdict => "no verdict (commitment)",
        }
    }

    /// A short class-safe name (`data-kind`).
    pub fn slug(self) -> &'static str {
        match self {
            Kind::Pass => "pass",
            Kind::Fail => "fail",
            Kind::TransportError => "transport",
            Kind::Declined => "declined",
            Kind::Aborted => "aborted",
            Kind::Skipped => "skipped",
            Kind::Error => "error",
            Kind::Running => "running",
            Kind::NoVerdict => "noverdict",
        }
    }

    pub fn colour(self) -> &'static str {
        match self {
            Kind::Pass => "#2e7d32",
            Kind::Fail => "#c62828",
            Kind::TransportError => "#ef6c00",
            Kind::Declined => "#6a1b9a",
            Kind::Aborted => "#546e7a",
            Kind::Skipped => "#b0bec5",
            Kind::Error => "#4e342e",
            Kind::Running => "#1565c0",
            Kind::NoVerdict => "#9e9d24",
        }
    }

    pub const ALL: [Kind; 9] = [
        Kind::Pass,
        Kind::Fail,
        Kind::TransportError,
        Kind::Declined,
        Kind::Aborted,
        Kind::Skipped,
        Kind::Error,
        Kind::Running,
        Kind::NoVerdict,
    ];
}

/// One strip cell: its kind, a tooltip, and the record it links to.
pub struct Cell {
    pub kind: Kind,
    pub title: String,
    pub href: Option<String>,
}

const CELL_W: usize = 9;
const CELL_GAP: usize = 2;
const CELL_H: usize = 18;

/// The verdict strip: oldest on the left, newest on the right; `capacity` slots wide so strips
/// of different targets line up.
pub fn strip(cells: &[Cell], capacity: usize) -> Markup {
    let width = capacity.max(cells.len()) * (CELL_W + CELL_GAP);
    let offset = capacity.saturating_sub(cells.len());
    html! {
        svg class="strip" xmlns="http://www.w3.org/2000/svg" width=(width) height=(CELL_H)
            viewBox={"0 0 " (width) " " (CELL_H)} role="img"
            aria-label={"last " (cells.len()) " walks, oldest first"} {
            @for (i, c) in cells.iter().enumerate() {
                @let x = (offset + i) * (CELL_W + CELL_GAP);
                @if let Some(href) = &c.href {
                    a href=(href) {
                        rect class="cell" data-kind=(c.kind.slug()) x=(x) y="0" width=(CELL_W)
                            height=(CELL_H) fill=(c.kind.colour()) { title { (c.title) } }
                    }
                } @else {
                    rect class="cell" data-kind=(c.kind.slug()) x=(x) y="0" width=(CELL_W)
                        height=(CELL_H) fill=(c.kind.colour()) { title { (c.title) } }
                }
            }
        }
    }
}

/// The colour legend for strips.
pub fn legend() -> Markup {
    html! {
        ul class="legend" {
            @for k in Kind::ALL {
                li {
                    svg xmlns="http://www.w3.org/2000/svg" width="10" height="10" {
                        rect width="10" height="10" fill=(k.colour()) {}
                    }
                    " " (k.label())
                }
            }
        }
    }
}

/// A stacked bar chart: one bar per label, segments `(kind, count)` bottom up.
pub fn stacked_bars(title: &str, bars: &[(String, Vec<(Kind, u64)>)]) -> Markup {
    let bar_w = 16;
    let gap = 4;
    let h: u64 = 120;
    let top: u64 = 14;
    let max = bars
        .iter()
        .map(|(_, segs)| segs.iter().map(|(_, n)| *n).sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let width = bars.len().max(1) * (bar_w + gap) + 40;
    // Segment geometry first: each segment sits on the one below it.
    // (x, label, [(kind, count, y, height)]) per bar.
    type Laid<'a> = (usize, &'a str, Vec<(Kind, u64, u64, u64)>);
    let laid: Vec<Laid> = bars
        .iter()
        .enumerate()
        .map(|(i, (label, segs))| {
            let mut bottom = top + h;
            let segs = segs
                .iter()
                .map(|(k, n)| {
                    let seg_h = n * h / max;
                    bottom -= seg_h;
                    (*k, *n, bottom, seg_h)
                })
                .collect();
            (30 + i * (bar_w + gap), label.as_str(), segs)
        })
        .collect();
    html! {
        figure class="chart" {
            svg xmlns="http://www.w3.org/2000/svg" width=(width) height=(h + top + 30)
                viewBox={"0 0 " (width) " " (h + top + 30)} role="img" aria-label=(title) {
                text x="0" y="10" font-size="10" fill="#333" { "max " (max) }
                @for (x, label, segs) in &laid {
                    g class="bar" data-day=(label) {
                        @for (k, n, y, seg_h) in segs {
                            rect x=(x) y=(y) width=(bar_w) height=(seg_h) fill=(k.colour())
                                data-kind=(k.slug()) data-count=(n) {
                                title { (label) ": " (n) " " (k.label()) }
                            }
                        }
                        text x=(x) y=(h + top + 12) font-size="8" fill="#333" { (label.get(8..).unwrap_or(label)) }
                    }
                }
            }
            figcaption { (title) }
        }
    }
}

/// Lane use per day against the cap: one bar per day, a line at the cap.
pub fn lane_bars(title: &str, days: &[(String, u64)], cap: u64) -> Markup {
    let bar_w = 16;
    let gap = 4;
    let h = 80;
    let top = 12;
    let max = days
        .iter()
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0)
        .max(cap)
        .max(1);
    let width = days.len().max(1) * (bar_w + gap) + 40;
    let cap_y = top as u64 + h as u64 - cap * h as u64 / max;
    html! {
        figure class="chart" {
            svg xmlns="http://www.w3.org/2000/svg" width=(width) height=(h + top + 24)
                viewBox={"0 0 " (width) " " (h + top + 24)} role="img" aria-label=(title) {
                @for (i, (day, n)) in days.iter().enumerate() {
                    @let x = 30 + i * (bar_w + gap);
                    @let bh = n * h as u64 / max;
                    rect class="lane-day" data-day=(day) data-count=(n) x=(x)
                        y=(top as u64 + h as u64 - bh) width=(bar_w) height=(bh)
                        fill=(if *n >= cap { "#c62828" } else { "#1565c0" }) {
                        title { (day) ": " (n) " of " (cap) }
                    }
                    text x=(x) y=(h + top + 12) font-size="8" fill="#333" { (day.get(8..).unwrap_or(day)) }
                }
                line x1="28" x2=(width) y1=(cap_y) y2=(cap_y) stroke="#c62828" stroke-dasharray="3,2" {}
                text x="0" y=(cap_y + 3) font-size="9" fill="#c62828" { "cap " (cap) }
            }
            figcaption { (title) }
        }
    }
}

/// Which assertion failed when: one row per assertion, one column per walk (oldest left).
/// A column is `None` when the fire stored no record.
/// One column of the assertion timeline: when, and for a walk with a record the names of its
/// failed and of its not-applicable assertions.
pub type TimelineColumn = (String, Option<(Vec<String>, Vec<String>)>);

/// The timeline's colours, with the words the legend and each cell's title use.
pub const TIMELINE_STATES: [(&str, &str); 4] = [
    ("#c62828", "FAILED"),
    ("#a5d6a7", "passed"),
    ("#ffffff", "n/a"),
    ("#cfd8dc", "no record"),
];

pub fn assertion_timeline(names: &[&str], columns: &[TimelineColumn]) -> Markup {
    let cw = 8;
    let ch = 14;
    let left = 230;
    let width = left + columns.len().max(1) * (cw + 1);
    let height = names.len() * (ch + 2);
    html! {
        svg class="timeline" xmlns="http://www.w3.org/2000/svg" width=(width) height=(height)
            viewBox={"0 0 " (width) " " (height)} role="img"
            aria-label="assertion results per walk, oldest first" {
            @for (row, name) in names.iter().enumerate() {
                @let y = row * (ch + 2);
                text x="0" y=(y + 11) font-size="11" fill="#333" { (name) }
                @for (col, (when, failed)) in columns.iter().enumerate() {
                    @let x = left + col * (cw + 1);
                    @let (fill, word) = match failed {
                        None => TIMELINE_STATES[3],
                        Some((f, _)) if f.iter().any(|n| n == name) => TIMELINE_STATES[0],
                        // Not applicable: white with a grey outline, not a lighter green.
                        Some((_, na)) if na.iter().any(|n| n == name) => TIMELINE_STATES[2],
                        Some(_) => TIMELINE_STATES[1],
                    };
                    rect class="tl" data-assertion=(name) data-state=(word) x=(x) y=(y)
                        width=(cw) height=(ch) fill=(fill) stroke="#90a4ae" stroke-width="1" {
                        title { (when) ": " (name) " " (word) }
                    }
                }
            }
        }
        p class="legend" {
            @for (fill, word) in TIMELINE_STATES {
                span class="key" data-state=(word) {
                    svg xmlns="http://www.w3.org/2000/svg" width="12" height="12" viewBox="0 0 12 12" {
                        rect x="0.5" y="0.5" width="11" height="11" fill=(fill) stroke="#90a4ae" {}
                    }
                    " " (word) " "
                }
            }
        }
    }
}
