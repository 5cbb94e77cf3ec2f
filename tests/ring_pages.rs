//! The endpoint page of `records serve --rings DIR` (issue 37 item 5): the rings held for the
//! endpoint, counts with their denominators (never a rate), the chain checked file against
//! file, and the signed Statement verified with the folder's jwks.json. Real HTTP on loopback
//! from the real binary; the published August ring and its envelope from the vectors.

use conduct_walker::store::Store;
use scraper::{Html, Selector};
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_conduct-walker");
const ENDPOINT: &str = "https://mcp.horizonshield.dev/mcp";

fn vectors() -> std::path::PathBuf {
    conduct_walker::sandbox::test_vectors("rings")
}

/// The register's layout: rings/<slug>/2026-08.json with its envelope, September (built by
/// the reference on the partial archive, chained to August), and jwks.json.
fn rings_folder(dir: &Path) -> std::path::PathBuf {
    let rings = dir.join("rings");
    let mcp = rings.join("mcp-horizonshield-dev-mcp");
    std::fs::create_dir_all(&mcp).unwrap();
    let real = vectors().join("real");
    for f in ["2026-08.json", "2026-08.intoto.dsse.json"] {
        std::fs::copy(
            real.join("rings/mcp-horizonshield-dev-mcp").join(f),
            mcp.join(f),
        )
        .unwrap();
    }
    std::fs::copy(
        real.join("expected/mcp-horizonshield-dev-mcp/2026-09.partial.json"),
        mcp.join("2026-09.json"),
    )
    .unwrap();
    std::fs::copy(real.join("rings/jwks.json"), rings.join("jwks.json")).unwrap();
    rings
}

fn page(db: &Path, rings: &Path) -> String {
    let mut child = Command::new(BIN)
        .args(["records", "serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(db)
        .arg("--rings")
        .arg(rings)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .rsplit(' ')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let url = format!(
        "{base}/endpoints?url={}",
        ENDPOINT.replace(':', "%3A").replace('/', "%2F")
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = rt.block_on(async { reqwest::get(&url).await.unwrap().text().await.unwrap() });
    child.kill().unwrap();
    let _ = child.wait();
    body
}

fn rows(body: &str) -> Vec<Vec<String>> {
    let doc = Html::parse_document(body);
    let tr = Selector::parse("section#rings tr.ring").unwrap();
    let td = Selector::parse("td").unwrap();
    doc.select(&tr)
        .map(|r| {
            r.select(&td)
                .map(|c| c.text().collect::<String>())
                .collect()
        })
        .collect()
}

#[test]
fn the_endpoint_page_shows_its_rings_the_chain_and_the_signed_statement() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("walker.db");
    drop(Store::open(&db).unwrap());
    let rings = rings_folder(dir.path());
    let body = page(&db, &rings);
    let r = rows(&body);
    assert_eq!(r.len(), 2, "{body}");
    // August: the published ring, its Statement verified with the register's key.
    assert_eq!(r[0][0], "2026-08");
    assert_eq!(r[0][1], "26 of 26");
    assert_eq!(r[0][5], "(v1 month)");
    assert_eq!(r[0][6], "starts a chain");
    assert_eq!(r[0][7], "verified (hs-2026-09)");
    assert!(r[0][8].starts_with("9ca61125dcb3"));
    // September: chained to August, v1.1 columns with their denominators, no envelope.
    assert_eq!(r[1][0], "2026-09");
    assert_eq!(r[1][6], "links to 2026-08");
    assert_eq!(r[1][7], "no envelope");
    assert!(r[1][5].contains(" of "), "{}", r[1][5]);
    // Counts only: no rate, no score.
    let section = body
        .split("id=\"rings\"")
        .nth(1)
        .unwrap()
        .split("</section>")
        .next()
        .unwrap();
    assert!(!section.contains('%'), "{section}");

    // August changed by one byte: its Statement no longer names it, and September's link breaks.
    let august = rings.join("mcp-horizonshield-dev-mcp/2026-08.json");
    let text = std::fs::read_to_string(&august).unwrap();
    std::fs::write(
        &august,
        text.replacen("\"instants_reached\": 26", "\"instants_reached\": 27", 1),
    )
    .unwrap();
    let r = rows(&page(&db, &rings));
    assert!(
        r[0][7].starts_with("not verified: ring_digest"),
        "{}",
        r[0][7]
    );
    assert_eq!(r[0][1], "27 of 26");
    assert!(
        r[1][6].starts_with("broken: names 9ca61125dcb3"),
        "{}",
        r[1][6]
    );
}

#[test]
fn without_a_rings_folder_the_page_says_how_to_give_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("walker.db");
    drop(Store::open(&db).unwrap());
    let empty = dir.path().join("none");
    std::fs::create_dir(&empty).unwrap();
    let body = page(&db, &empty);
    assert!(body.contains("No ring of this endpoint in"), "{body}");
    let o = Command::new(BIN)
        .args(["records", "serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .arg("--rings")
        .arg(dir.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a folder"));
}
