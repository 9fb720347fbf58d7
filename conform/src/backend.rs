//! Where an implementation runs: one type for what the backend is and how to reach it, and the
//! servers a run starts for the backends that need one.

// The kind lives below the errors (which name it); callers find it here, with the backend.
pub use crate::backend_kind::{BackendKind, UnknownBackend};
use crate::error::{Error, ServerError};

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
/// asks for its backend, unless the run was given the address of one already running
/// ([`Servers::attach`]).
#[derive(Default)]
pub struct Servers {
    /// Servers the run was pointed at (`conform --server`): used as they are, never started
    /// or stopped here.
    attached: Vec<(BackendKind, String)>,
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
        if let Some((_, address)) = self.attached.iter().find(|(k, _)| *k == kind) {
            return Ok(Backend::at(kind, address.clone()));
        }
        Ok(Backend::at(kind, self.start(kind)?))
    }

    /// Uses the server of `kind` already running at `address` (a PostgreSQL connection string,
    /// a Cassandra `host:port`, a Kafka bootstrap address) instead of starting one. An embedded
    /// kind has no server: that is an error.
    pub fn attach(&mut self, kind: BackendKind, address: impl Into<String>) -> Result<(), Error> {
        if kind.embedded() {
            return Err(Error::Unsupported {
                needs: "a server kind (postgres, cassandra or kafka) to attach to",
                backend: kind,
            });
        }
        self.attached.push((kind, address.into()));
        Ok(())
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
