//! The pages' own URLs, built in one place: every page links to the others, so a link builder
//! inside one page's module made the pages import each other.

/// A record's page (`/records/<sha>`).
pub fn record_href(sha: &str) -> String {
    format!("/records/{sha}")
}

/// A record's exact bytes.
pub fn raw_href(sha: &str) -> String {
    format!("/records/{sha}/raw")
}

/// A target's page.
pub fn target_href(name: &str) -> String {
    format!("/targets/{}", url_component(name))
}

/// One endpoint across every witness.
pub fn endpoint_href(url: &str) -> String {
    format!("/endpoints?url={}", url_component(url))
}

/// One page of the overview's targets.
pub fn overview_page_href(page: usize) -> String {
    format!("/?page={page}")
}

/// Percent-encode everything but unreserved characters (RFC 3986), for our own links.
pub fn url_component(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_urls_are_percent_encoded_and_shas_are_not() {
        assert_eq!(target_href("a b/é"), "/targets/a%20b%2F%C3%A9");
        assert_eq!(
            endpoint_href("https://x.example/a2a?q=1"),
            "/endpoints?url=https%3A%2F%2Fx.example%2Fa2a%3Fq%3D1"
        );
        assert_eq!(record_href("ab12"), "/records/ab12");
        assert_eq!(raw_href("ab12"), "/records/ab12/raw");
        assert_eq!(overview_page_href(2), "/?page=2");
        assert_eq!(url_component("A-z._~0"), "A-z._~0");
    }
}
