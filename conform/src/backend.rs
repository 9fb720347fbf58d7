//! Where an implementation runs: one type for what the backend is and how to reach it, and the
//! servers a run starts for the backends that need one.

// The kind lives below the errors (which name it); callers find it here, with the backend.
pub use crate::backend_kind::{BackendKind, UnknownBackend};
use crate::error::{Error, ServerError};
use loadbearing_impls::servers::RunningServer;
pub use loadbearing_impls::servers::StoreBackend;

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
        kind: BackendKind::SQLITE,
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
    /// Servers this run started, stopped when it ends.
    started: Vec<(BackendKind, Box<dyn RunningServer>)>,
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
        if let Some((_, server)) = self.started.iter().find(|(k, _)| *k == kind) {
            return Ok(Backend::at(kind, server.address()));
        }
        let server = start(kind)?;
        let address = server.address();
        self.started.push((kind, server));
        Ok(Backend::at(kind, address))
    }

    /// Uses the server of `kind` already running at `address` (a PostgreSQL connection string,
    /// a Cassandra `host:port`, a Kafka bootstrap address) instead of starting one. An embedded
    /// kind has no server: that is an error.
    pub fn attach(&mut self, kind: BackendKind, address: impl Into<String>) -> Result<(), Error> {
        if kind.embedded() {
            return Err(Error::Unsupported {
                needs: "a server kind to attach to",
                backend: kind,
            });
        }
        self.attached.push((kind, address.into()));
        Ok(())
    }
}

/// Starts a throwaway server of `kind`.
fn start(kind: BackendKind) -> Result<Box<dyn RunningServer>, Error> {
    eprintln!("conform: starting {kind}");
    let failed = |e: ServerError| Error::ServerStart(kind, e);
    match kind {
        BackendKind::Store(store) => store.start().map_err(|e| failed(e.into())),
        #[cfg(feature = "kafka")]
        BackendKind::Kafka => loadbearing_impls_kafka::harness::KafkaBroker::start()
            .map(|broker| Box::new(broker) as Box<dyn RunningServer>)
            .map_err(|e| failed(e.into())),
        _ => Err(Error::NotCompiled(kind)),
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        // Their guardians would remove them at exit anyway; stopping now frees the machine.
        for (_, server) in self.started.iter().rev() {
            server.stop();
        }
    }
}
