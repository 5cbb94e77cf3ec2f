//! Versioned schema migrations. The schema version is SQLite's `PRAGMA user_version`, which is
//! transactional, so a migration and its version bump commit together or not at all.

use rusqlite::Connection;

/// One migration: a name (for messages) and the SQL it runs.
pub struct Migration {
    pub name: &'static str,
    pub sql: &'static str,
}

/// Every migration in order; migration `i` moves the schema from version `i` to `i + 1`.
/// Adding one is a one-line append here (plus its SQL file). Never edit or reorder past entries:
/// databases in the field were built by them.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "records",
        sql: include_str!("migrations/0001_records.sql"),
    },
    Migration {
        name: "outbox",
        sql: include_str!("migrations/0002_outbox.sql"),
    },
    Migration {
        name: "daemon",
        sql: include_str!("migrations/0003_daemon.sql"),
    },
    Migration {
        name: "mcp",
        sql: include_str!("migrations/0004_mcp.sql"),
    },
    Migration {
        name: "status_pages",
        sql: include_str!("migrations/0005_status_pages.sql"),
    },
    Migration {
        name: "mcp_store_only",
        sql: include_str!("migrations/0006_mcp_store_only.sql"),
    },
    Migration {
        name: "ledger",
        sql: include_str!("migrations/0007_ledger.sql"),
    },
    Migration {
        name: "archive_compress",
        sql: include_str!("migrations/0008_archive_compress.sql"),
    },
    Migration {
        name: "summaries",
        sql: include_str!("migrations/0009_summaries.sql"),
    },
    Migration {
        name: "alerts",
        sql: include_str!("migrations/0010_alerts.sql"),
    },
    Migration {
        name: "record_beside",
        sql: include_str!("migrations/0011_record_beside.sql"),
    },
    Migration {
        name: "task_bindings",
        sql: include_str!("migrations/0012_task_bindings.sql"),
    },
    Migration {
        name: "filing",
        sql: include_str!("migrations/0013_filing.sql"),
    },
    Migration {
        name: "alerts_ids",
        sql: include_str!("migrations/0014_alerts_ids.sql"),
    },
    Migration {
        name: "witness_requests",
        sql: include_str!("migrations/0015_witness_requests.sql"),
    },
    Migration {
        name: "record_beside_reciprocal",
        sql: include_str!("migrations/0016_record_beside_reciprocal.sql"),
    },
    Migration {
        name: "notifications",
        sql: include_str!("migrations/0017_notifications.sql"),
    },
    Migration {
        name: "reciprocal_walks",
        sql: include_str!("migrations/0018_reciprocal_walks.sql"),
    },
    Migration {
        name: "record_signatures",
        sql: include_str!("migrations/0019_record_signatures.sql"),
    },
    Migration {
        name: "key_events",
        sql: include_str!("migrations/0020_key_events.sql"),
    },
];

/// The schema version this binary writes and understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Whether the store has table `name`: a store opened read-only is never migrated, so a reader
/// of a later migration's table asks first.
pub fn has_table(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
    )?
    .query_row([name], |r| r.get(0))
}

/// Whether table `table` has column `column`: a store opened read-only is never migrated, so a
/// reader of a column a later migration added asks first.
pub fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2)")?
        .query_row([table, column], |r| r.get(0))
}

/// Read `PRAGMA user_version`.
pub fn current_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// What [`migrate`] found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migrated {
    /// Migrations `from..to` were applied.
    Applied { from: i64, to: i64 },
    /// The database was already at [`SCHEMA_VERSION`].
    UpToDate,
    /// The database is newer than this binary; nothing was changed.
    TooNew { found: i64 },
}

/// Apply every missing migration in one IMMEDIATE transaction (the write lock is taken before the
/// version is read, so two processes opening a new store cannot both migrate it).
pub fn migrate(conn: &Connection) -> rusqlite::Result<Migrated> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| {
        let found = current_version(conn)?;
        if found > SCHEMA_VERSION {
            return Ok(Migrated::TooNew { found });
        }
        if found == SCHEMA_VERSION {
            return Ok(Migrated::UpToDate);
        }
        for m in &MIGRATIONS[found as usize..] {
            conn.execute_batch(m.sql)?;
        }
        // PRAGMA takes no bound parameters; the value is our own integer constant.
        conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
        Ok(Migrated::Applied {
            from: found,
            to: SCHEMA_VERSION,
        })
    })();
    match result {
        Ok(Migrated::Applied { .. }) => conn.execute_batch("COMMIT")?,
        _ => {
            let _ = conn.execute_batch("ROLLBACK");
        }
    }
    result
}

/// Whether the store has the daemon's tables (migration 3).
pub fn has_daemon_walks(conn: &Connection) -> Result<bool, super::StoreError> {
    Ok(has_table(conn, "daemon_walks")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_names_are_unique_and_nonempty() {
        let mut names: Vec<_> = MIGRATIONS.iter().map(|m| m.name).collect();
        assert!(names.iter().all(|n| !n.is_empty()));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MIGRATIONS.len());
    }

    #[test]
    fn migrating_twice_is_a_no_op() {
        let conn = Connection::open_in_memory().unwrap();
        assert_eq!(
            migrate(&conn).unwrap(),
            Migrated::Applied {
                from: 0,
                to: SCHEMA_VERSION
            }
        );
        assert_eq!(migrate(&conn).unwrap(), Migrated::UpToDate);
        assert_eq!(current_version(&conn).unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn failed_migration_leaves_version_untouched() {
        let conn = Connection::open_in_memory().unwrap();
        // A table the first migration wants to create already exists: it must fail as a whole.
        conn.execute_batch("CREATE TABLE kept_full (x)").unwrap();
        assert!(migrate(&conn).is_err());
        assert_eq!(current_version(&conn).unwrap(), 0);
        let records: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'records'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(records, 0, "the partial migration was rolled back");
    }
}
