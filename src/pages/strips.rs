//! The overview's strips (each target's last 50 fires), kept between requests (issue 27).
//!
//! Reading a strip costs a page of the store per fire: a target's fires are interleaved with
//! every other target's, and so are their records' facts. 100 strips of 50 fires are ~10,000
//! page reads, 30 ms of the overview's 36 ms on a store of 10,000,000 fires. A fire's row stops
//! changing once it has ended (`running` is its only mutable state), and a record's facts never
//! change, so a strip read once is kept and brought up to date by reading only the fires after
//! its newest one and re-reading the fires still running. Archiving or restoring records (a cut
//! added or removed) drops everything kept. What is kept is bounded by the targets shown.

use crate::store::StoreError;
use crate::store::status::{self, Fire};
use rusqlite::Connection;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub struct StripCache {
    state: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    /// The archive cuts when the strips were read (count, highest id).
    cuts: Option<(usize, Option<i64>)>,
    /// Shared with the pages being rendered: a request copies no fire.
    strips: HashMap<String, Arc<Vec<Fire>>>,
}

/// `kept` (newest first) brought up to date: `newer` are the fires after its newest (newest
/// first), `reread` the fires of `kept` that were running, as they are now (absent: the row is
/// gone). At most `n`, newest first.
pub fn merge(kept: Vec<Fire>, newer: Vec<Fire>, reread: &[Option<Fire>], n: usize) -> Vec<Fire> {
    let mut reread = reread.iter();
    let updated = kept.into_iter().filter_map(|f| {
        if f.state == "running" {
            reread.next().cloned().flatten()
        } else {
            Some(f)
        }
    });
    newer.into_iter().chain(updated).take(n).collect()
}

/// The archive cuts now: how many, and the highest id (a cut added or removed changes it).
fn cuts(conn: &Connection) -> Result<(usize, Option<i64>), StoreError> {
    let cuts = crate::store::archive::cuts(conn)?;
    Ok((cuts.len(), cuts.iter().map(|c| c.id).max()))
}

impl StripCache {
    /// Call once per page, before its strips: forgets every strip if records were archived
    /// or restored since.
    pub fn begin(&self, conn: &Connection) -> Result<(), StoreError> {
        let now = Some(cuts(conn)?);
        let mut kept = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if kept.cuts != now {
            kept.strips.clear();
            kept.cuts = now;
        }
        Ok(())
    }

    /// `target`'s last `n` fires, newest first, as [`status::latest_fires`] reads them.
    pub fn latest_fires(
        &self,
        conn: &Connection,
        target: &str,
        n: usize,
    ) -> Result<Arc<Vec<Fire>>, StoreError> {
        // Taken out while it is brought up to date (a request meanwhile reads afresh), so the
        // fires are moved, not copied, unless a page still being rendered holds them.
        let kept = self
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .strips
            .remove(target);
        let fires = match kept {
            // Kept, and full or as long as the target's history.
            Some(kept) if !kept.is_empty() && kept.len() <= n => {
                let newest = kept[0].walk_id;
                let newer = status::fires_after(conn, target, newest, n)?;
                let reread = kept
                    .iter()
                    .filter(|f| f.state == "running")
                    .map(|f| status::fire_by_id(conn, f.walk_id))
                    .collect::<Result<Vec<_>, _>>()?;
                if newer.is_empty() && reread.is_empty() {
                    kept
                } else {
                    let kept = Arc::try_unwrap(kept).unwrap_or_else(|shared| (*shared).clone());
                    Arc::new(merge(kept, newer, &reread, n))
                }
            }
            _ => Arc::new(status::latest_fires(conn, target, n)?),
        };
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .strips
            .insert(target.to_string(), fires.clone());
        Ok(fires)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fire(id: i64, state: &str) -> Fire {
        Fire {
            walk_id: id,
            state: state.into(),
            ..Fire::default()
        }
    }

    fn ids(f: &[Fire]) -> Vec<(i64, &str)> {
        f.iter().map(|f| (f.walk_id, f.state.as_str())).collect()
    }

    #[test]
    fn new_fires_go_first_running_ones_are_replaced_and_the_strip_keeps_n() {
        let kept = vec![
            fire(9, "running"),
            fire(7, "done"),
            fire(4, "running"),
            fire(2, "done"),
        ];
        let newer = vec![fire(12, "running"), fire(11, "done")];
        let reread = [Some(fire(9, "done")), Some(fire(4, "aborted"))];
        let merged = merge(kept.clone(), newer.clone(), &reread, 5);
        assert_eq!(
            ids(&merged),
            [
                (12, "running"),
                (11, "done"),
                (9, "done"),
                (7, "done"),
                (4, "aborted")
            ]
        );
        // A running fire whose row is gone leaves the strip.
        let merged = merge(kept, Vec::new(), &[None, Some(fire(4, "done"))], 50);
        assert_eq!(ids(&merged), [(7, "done"), (4, "done"), (2, "done")]);
        // More new fires than the strip holds: only they remain.
        let many: Vec<Fire> = (20..25).rev().map(|i| fire(i, "done")).collect();
        assert_eq!(merge(vec![fire(1, "done")], many, &[], 3).len(), 3);
    }
}
