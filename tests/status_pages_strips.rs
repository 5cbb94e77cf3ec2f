//! The overview's strips kept between requests (issue 27, `pages::strips`) give the same page,
//! byte for byte, as reading every strip afresh: after fires end, new fires start, a running
//! fire is aborted and more fires than a strip holds arrive. A real SQLite store with signed
//! records and the daemon's own fire rows.

mod store_support;
use conduct_walker::pages::Context;
use conduct_walker::pages::render::overview;
use conduct_walker::pages::strips::StripCache;
use conduct_walker::store::Store;
use conduct_walker::store::daemon_walks::{WalkEnd, WalkStart, begin_walk, finish_walk};
use store_support::*;

const TARGETS: [&str; 3] = ["alpha", "beta", "gamma"];

struct World {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    store: Store,
    next_record: u64,
    clock: u64,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("walker.db");
        let store = Store::open(&path).unwrap();
        World {
            _dir: dir,
            path,
            store,
            next_record: 0,
            clock: 0,
        }
    }

    fn tick(&mut self) -> String {
        self.clock += 1;
        walked_at(self.clock)
    }

    /// A fire of `target` left running; its id.
    fn start(&mut self, target: &str) -> i64 {
        let now = self.tick();
        begin_walk(
            self.store.connection(),
            &WalkStart {
                target,
                origin: &format!("https://{target}.example"),
                endpoint: None,
                scheduled_for: &now,
                now: &now,
            },
        )
        .unwrap()
    }

    /// End fire `id`: `done` with a new signed record (passing or not), or another state.
    fn end(&mut self, id: i64, state: &str, pass: bool) {
        let now = self.tick();
        let (record_id, sha) = if state == "done" {
            self.next_record += 1;
            let rec = signed(record_bytes(self.next_record, pass), &key(5));
            let sha = conduct_walker::digest::sha256_hex(&rec.canonical);
            self.store.insert_many(&[rec]).unwrap();
            let id: i64 = self
                .store
                .connection()
                .query_row("SELECT id FROM records WHERE sha256 = ?1", [&sha], |r| {
                    r.get(0)
                })
                .unwrap();
            (Some(id), Some(sha))
        } else {
            (None, None)
        };
        finish_walk(
            self.store.connection(),
            id,
            &WalkEnd {
                state,
                record_id,
                record_sha256: sha.as_deref(),
                submission: None,
                detail: (state != "done").then_some("cut off"),
            },
            &now,
        )
        .unwrap();
    }

    fn page(&self, strips: Option<&StripCache>) -> String {
        let ro = Store::open_read_only(&self.path).unwrap();
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-01T12:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let ctx = Context::default();
        let fresh = StripCache::default();
        let strips = strips.unwrap_or(&fresh);
        overview(
            ro.connection(),
            &ctx,
            &(None, false),
            1,
            now,
            "test",
            strips,
        )
        .unwrap()
    }
}

#[test]
fn kept_strips_give_the_page_a_fresh_read_gives_through_every_kind_of_change() {
    let mut w = World::new();
    let strips = StripCache::default();
    // Some history: done (passing and failing), declined, and one running fire per target.
    let mut running = Vec::new();
    for round in 0..4 {
        for t in TARGETS {
            let id = w.start(t);
            match round {
                3 => running.push(id),
                2 if t == "beta" => w.end(id, "declined", false),
                _ => w.end(id, "done", round != 1),
            }
        }
    }
    let first = w.page(Some(&strips));
    assert_eq!(first, w.page(None), "the first read is a fresh read");

    // Fires end (one done, one aborted, one still running), new ones start and end.
    w.end(running[0], "done", false);
    w.end(running[1], "aborted", false);
    let late = w.start("gamma");
    let fresh_done = w.start("alpha");
    w.end(fresh_done, "done", true);
    let second = w.page(Some(&strips));
    assert_ne!(second, first, "the changes show");
    assert_eq!(second, w.page(None), "after fires ended and started");

    // The last running fires end; then more fires than a strip holds (50) for one target.
    w.end(running[2], "done", true);
    w.end(late, "error", false);
    assert_eq!(
        w.page(Some(&strips)),
        w.page(None),
        "after the running ones ended"
    );
    for _ in 0..60 {
        let id = w.start("beta");
        w.end(id, "done", true);
    }
    let third = w.page(Some(&strips));
    assert_eq!(third, w.page(None), "after a strip's worth of new fires");
    // And kept strips are used again when nothing changed.
    assert_eq!(w.page(Some(&strips)), third);
}
