//! Our own stores as [`Backend`]s, for the test binaries of every crate that runs the kit or
//! its stress on them (the contract's cases here; the whole runs judged by the model in the
//! conformance crate).

use std::path::PathBuf;

use super::Backend;
use crate::sqlite::SqliteStore;
use crate::store::{SnapshotStore, StoreOptions};
use crate::trace::SharedTracer;

/// SQLite in a database file: each session its own connection.
pub struct SqliteFile {
    pub path: PathBuf,
}

impl SqliteFile {
    /// A fresh database at `path` (an earlier run's file and its journals removed).
    pub fn fresh(path: PathBuf) -> SqliteFile {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        SqliteFile { path }
    }
}

impl Backend for SqliteFile {
    fn name(&self) -> &'static str {
        "sqlite"
    }
    fn open(&self, options: StoreOptions, tracer: SharedTracer) -> Box<dyn SnapshotStore> {
        Box::new(
            SqliteStore::open_traced(&self.path, options, tracer)
                .expect("open the SQLite database"),
        )
    }
}

/// PostgreSQL at a connection string: each session its own connection, the guarded first
/// write as one upsert or (`compound`) as Cassandra's three statements.
#[cfg(feature = "postgres")]
pub struct PostgresAt {
    pub conn: String,
    pub compound: bool,
}

#[cfg(feature = "postgres")]
impl PostgresAt {
    /// The server of the test harness's local clusters listening on `port` of loopback.
    pub fn local(port: u16) -> PostgresAt {
        PostgresAt {
            conn: format!(
                "host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=5"
            ),
            compound: false,
        }
    }
}

#[cfg(feature = "postgres")]
impl Backend for PostgresAt {
    fn name(&self) -> &'static str {
        "postgres"
    }
    fn open(&self, options: StoreOptions, tracer: SharedTracer) -> Box<dyn SnapshotStore> {
        Box::new(
            crate::postgres::PostgresStore::connect_traced(
                &self.conn,
                "snapshots",
                options,
                tracer,
            )
            .expect("connect to PostgreSQL")
            .compound(self.compound),
        )
    }
}
