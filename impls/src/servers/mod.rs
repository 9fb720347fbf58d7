//! The stores, by the database they run on, and the one place that knows per database what
//! a run needs: its name, the Cargo feature that compiles its client, how its throwaway server
//! starts, and how a store opens on it.
//!
//! Each database is a module here (the store, and under it the `launcher` of its throwaway
//! server) and a variant of [`StoreBackend`]. The conformance crate and the CLI reach a store
//! only through [`StoreBackend`], so a store on a new server is this folder, its feature in
//! this crate's manifest (forwarded by the workspace root's) and its `.ci/setup.d` script:
//! nothing above this crate changes.

use crate::store::{BackendError, CompoundGuards, SnapshotStore, StoreOptions};
use crate::trace::SharedTracer;

#[cfg(feature = "cassandra")]
pub mod cassandra;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod sqlite;

/// A database our snapshot store runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreBackend {
    /// Embedded SQLite, in a file of the temp dir (always built).
    Sqlite,
    /// A PostgreSQL server (feature `postgres`).
    Postgres,
    /// A Cassandra 5 node (feature `cassandra`), where a guarded first write is three LWTs.
    Cassandra,
}

impl StoreBackend {
    pub const ALL: [StoreBackend; 3] = [
        StoreBackend::Sqlite,
        StoreBackend::Postgres,
        StoreBackend::Cassandra,
    ];

    pub fn name(self) -> &'static str {
        match self {
            StoreBackend::Sqlite => "sqlite",
            StoreBackend::Postgres => "postgres",
            StoreBackend::Cassandra => "cassandra",
        }
    }

    /// The Cargo feature that compiles its client; `None` when it is always built.
    pub fn feature(self) -> Option<&'static str> {
        match self {
            StoreBackend::Sqlite => None,
            StoreBackend::Postgres => Some("postgres"),
            StoreBackend::Cassandra => Some("cassandra"),
        }
    }

    /// Whether it runs inside this process (no server to start, no address).
    pub fn embedded(self) -> bool {
        self == StoreBackend::Sqlite
    }

    /// Whether this build has its client.
    pub fn compiled_in(self) -> bool {
        match self {
            StoreBackend::Sqlite => true,
            StoreBackend::Postgres => cfg!(feature = "postgres"),
            StoreBackend::Cassandra => cfg!(feature = "cassandra"),
        }
    }

    /// Starts a throwaway server of this database, stopped when the value is dropped or the
    /// process ends (its guardian sees to that).
    pub fn start(self) -> Result<Box<dyn RunningServer>, StartError> {
        match self {
            #[cfg(feature = "postgres")]
            StoreBackend::Postgres => Ok(Box::new(postgres::launcher::PgServer::start()?)),
            #[cfg(feature = "cassandra")]
            StoreBackend::Cassandra => Ok(Box::new(cassandra::launcher::CassandraNode::start()?)),
            _ => Err(StartError::NoServer(self)),
        }
    }

    /// A fresh database named `spec.name` at `address` (a server's; an embedded database has
    /// none and makes its own file), on which every session is a new connection.
    pub fn database(
        self,
        address: Option<&str>,
        spec: &DatabaseSpec,
    ) -> Result<Box<dyn Database>, BackendError> {
        let address = || {
            address.ok_or(BackendError::Database {
                what: "opening a server database",
                reason: format!("{} needs a server address", self.name()),
            })
        };
        match self {
            StoreBackend::Sqlite => Ok(Box::new(sqlite::SqliteFile::temporary(&spec.name)?)),
            #[cfg(feature = "postgres")]
            StoreBackend::Postgres => Ok(Box::new(postgres::PostgresAt {
                conn: address()?.to_string(),
                table: spec.name.clone(),
                compound: spec.compound,
                guards: spec.guards,
            })),
            #[cfg(feature = "cassandra")]
            StoreBackend::Cassandra => Ok(Box::new(cassandra::CassandraCluster::connect(
                address()?,
                "loadbearing_conform",
                &spec.name,
            )?)),
            #[allow(unreachable_patterns)]
            _ => {
                let _ = address;
                Err(BackendError::Database {
                    what: "opening a database",
                    reason: format!(
                        "this build has no {} client (feature `{}`)",
                        self.name(),
                        self.feature().unwrap_or_default()
                    ),
                })
            }
        }
    }
}

/// What a fresh database is to be: its name (a table, a file), and for the stores that can be
/// either, whether a guarded first write is the one upsert or the three-statement compound,
/// with which of the compound's guards (turning one off is a planted mutant).
#[derive(Clone, Debug, Default)]
pub struct DatabaseSpec {
    /// A plain identifier, unique to the run.
    pub name: String,
    pub compound: bool,
    pub guards: CompoundGuards,
}

/// A database the stores open sessions on: each session its own connection, so concurrent
/// writers are concurrent sessions.
pub trait Database: Send + Sync {
    /// Which database it is (its name is the catalogue's).
    fn backend(&self) -> StoreBackend;
    fn session(
        &self,
        options: StoreOptions,
        tracer: SharedTracer,
    ) -> Result<Box<dyn SnapshotStore>, BackendError>;
}

/// A throwaway server a run started, until it is stopped.
pub trait RunningServer: Send {
    /// What a client connects to (a PostgreSQL connection string, a Cassandra `host:port`, a
    /// Kafka bootstrap address).
    fn address(&self) -> String;
    fn stop(&self);
}

/// Why a throwaway server did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{} is embedded or not compiled in: no server to start", .0.name())]
    NoServer(StoreBackend),
    #[cfg(feature = "postgres")]
    #[error(transparent)]
    Postgres(#[from] postgres::launcher::PgServerError),
    #[cfg(feature = "cassandra")]
    #[error(transparent)]
    Cassandra(#[from] cassandra::launcher::CassandraError),
}
