//! Where an implementation runs: one type for what the backend is and how to reach it, and the
//! servers a run starts for the backends that need one.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::{Error, ServerError};

/// What a backend is, without its connection details: what a target can run on, and what the
/// CLI's `--backend` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Embedded SQLite (the store family's default).
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
    /// A Cassandra 5 node.
    Cassandra,
    /// The in-memory transactional producer (the Kafka family's default): one shared log that
    /// checks generations like the group coordinator; for SSI, the engine itself.
    Memory,
    /// A Kafka 4.4 broker.
    Kafka,
}

impl BackendKind {
    pub const ALL: [BackendKind; 5] = [
        BackendKind::Sqlite,
        BackendKind::Postgres,
        BackendKind::Cassandra,
        BackendKind::Memory,
        BackendKind::Kafka,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Sqlite => "sqlite",
            BackendKind::Postgres => "postgres",
            BackendKind::Cassandra => "cassandra",
            BackendKind::Memory => "memory",
            BackendKind::Kafka => "kafka",
        }
    }

    /// Whether it runs inside this process (no server to start, no address).
    pub fn embedded(self) -> bool {
        matches!(self, BackendKind::Sqlite | BackendKind::Memory)
    }

    /// Whether this build has its client (the server clients are cargo features).
    pub fn compiled_in(self) -> bool {
        match self {
            BackendKind::Sqlite | BackendKind::Memory => true,
            BackendKind::Postgres => cfg!(feature = "postgres"),
            BackendKind::Cassandra => cfg!(feature = "cassandra"),
            BackendKind::Kafka => cfg!(feature = "kafka"),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend name that is none of [`BackendKind::ALL`].
#[derive(Debug, thiserror::Error)]
#[error("unknown backend `{0}`; backends are: sqlite, postgres, cassandra, memory, kafka")]
pub struct UnknownBackend(pub String);

impl FromStr for BackendKind {
    type Err = UnknownBackend;

    fn from_str(s: &str) -> Result<BackendKind, UnknownBackend> {
        BackendKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownBackend(s.to_string()))
    }
}

/// Where an implementation runs: the kind of backend, and for a server the address of the one
/// this run started (a PostgreSQL connection string, a Cassandra `host:port`, a Kafka
/// bootstrap address).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backend {
    kind: BackendKind,
    address: Option<String>,
}

impl Backend {
    pub const SQLITE: Backend = Backend {
        kind: BackendKind::Sqlite,
        address: None,
    };
    pub const MEMORY: Backend = Backend {
        kind: BackendKind::Memory,
        address: None,
    };

    /// A server backend at `address`. An embedded kind has no address: it is ignored.
    pub fn at(kind: BackendKind, address: impl Into<String>) -> Backend {
        Backend {
            kind,
            address: (!kind.embedded()).then(|| address.into()),
        }
    }

    /// The backend for an embedded kind; a server kind needs [`Backend::at`] (or
    /// [`Servers::backend`], which starts the server).
    pub fn embedded(kind: BackendKind) -> Option<Backend> {
        kind.embedded().then_some(Backend {
            kind,
            address: None,
        })
    }

    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// The server's address. An embedded backend has none.
    pub fn address(&self) -> Result<&str, Error> {
        self.address.as_deref().ok_or(Error::Unsupported {
            needs: "a server address",
            backend: self.kind,
        })
    }
}

/// The servers a run started, kept until it ends; each is started the first time a target
/// asks for its backend.
#[derive(Default)]
pub struct Servers {
    #[cfg(feature = "postgres")]
    postgres: Option<loadbearing_impls::harness::postgres::PgServer>,
    #[cfg(feature = "cassandra")]
    cassandra: Option<loadbearing_impls::harness::cassandra::CassandraNode>,
    #[cfg(feature = "kafka")]
    kafka: Option<loadbearing_impls_kafka::harness::KafkaBroker>,
}

impl Servers {
    /// The backend of `kind`, starting its server if it is the first to need one. A kind this
    /// build has no client for is [`Error::NotCompiled`].
    pub fn backend(&mut self, kind: BackendKind) -> Result<Backend, Error> {
        if !kind.compiled_in() {
            return Err(Error::NotCompiled(kind));
        }
        if let Some(embedded) = Backend::embedded(kind) {
            return Ok(embedded);
        }
        Ok(Backend::at(kind, self.start(kind)?))
    }

    /// The address of `kind`'s server, started on first use.
    fn start(&mut self, kind: BackendKind) -> Result<String, Error> {
        #[cfg_attr(
            not(any(feature = "postgres", feature = "cassandra", feature = "kafka")),
            allow(unused_variables)
        )]
        let failed = |e: ServerError| Error::ServerStart(kind, e);
        match kind {
            #[cfg(feature = "postgres")]
            BackendKind::Postgres => {
                if self.postgres.is_none() {
                    eprintln!("conform: starting PostgreSQL");
                    self.postgres = Some(
                        loadbearing_impls::harness::postgres::PgServer::start()
                            .map_err(|e| failed(e.into()))?,
                    );
                }
                Ok(self.postgres.as_ref().expect("started").conn_str())
            }
            #[cfg(feature = "cassandra")]
            BackendKind::Cassandra => {
                if self.cassandra.is_none() {
                    eprintln!("conform: starting Cassandra 5");
                    self.cassandra = Some(
                        loadbearing_impls::harness::cassandra::CassandraNode::start()
                            .map_err(|e| failed(e.into()))?,
                    );
                }
                Ok(self.cassandra.as_ref().expect("started").node())
            }
            #[cfg(feature = "kafka")]
            BackendKind::Kafka => {
                if self.kafka.is_none() {
                    eprintln!("conform: starting Kafka 4.4");
                    self.kafka = Some(
                        loadbearing_impls_kafka::harness::KafkaBroker::start()
                            .map_err(|e| failed(e.into()))?,
                    );
                }
                Ok(self.kafka.as_ref().expect("started").bootstrap())
            }
            _ => Err(Error::NotCompiled(kind)),
        }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        // Their guardians would remove them at exit anyway; stopping now frees the machine.
        #[cfg(feature = "kafka")]
        if let Some(kafka) = &self.kafka {
            kafka.stop();
        }
        #[cfg(feature = "cassandra")]
        if let Some(cassandra) = &self.cassandra {
            cassandra.stop();
        }
        #[cfg(feature = "postgres")]
        if let Some(postgres) = &self.postgres {
            postgres.stop();
        }
    }
}
