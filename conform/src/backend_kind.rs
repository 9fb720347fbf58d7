//! What a backend is, without its connection details: the one name a target's table, the
//! CLI's `--backend` and the errors share. Its own module, below both the errors and the
//! servers (`backend`, whose failures are errors), so that an error can name a backend.

use std::fmt;
use std::str::FromStr;

use loadbearing_impls::servers::StoreBackend;
use serde::Serialize;

/// What a backend is, without its connection details: what a target can run on, and what the
/// CLI's `--backend` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// A database our snapshot store runs on (SQLite, the store family's default, PostgreSQL,
    /// Cassandra 5): everything about it is the implementations' catalogue's.
    Store(StoreBackend),
    /// The in-memory transactional producer (the Kafka family's default): one shared log that
    /// checks generations like the group coordinator; for SSI, the engine itself.
    Memory,
    /// A Kafka 4.4 broker.
    Kafka,
}

impl BackendKind {
    pub const SQLITE: BackendKind = BackendKind::Store(StoreBackend::Sqlite);

    /// Every backend: the stores' databases, then the in-memory producer and Kafka.
    pub fn all() -> impl Iterator<Item = BackendKind> {
        StoreBackend::ALL
            .into_iter()
            .map(BackendKind::Store)
            .chain([BackendKind::Memory, BackendKind::Kafka])
    }

    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Store(store) => store.name(),
            BackendKind::Memory => "memory",
            BackendKind::Kafka => "kafka",
        }
    }

    /// Whether it runs inside this process (no server to start, no address).
    pub fn embedded(self) -> bool {
        match self {
            BackendKind::Store(store) => store.embedded(),
            BackendKind::Memory => true,
            BackendKind::Kafka => false,
        }
    }

    /// Whether this build has its client (the server clients are cargo features).
    pub fn compiled_in(self) -> bool {
        match self {
            BackendKind::Store(store) => store.compiled_in(),
            BackendKind::Memory => true,
            BackendKind::Kafka => cfg!(feature = "kafka"),
        }
    }
}

impl Serialize for BackendKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend name that is none of [`BackendKind::all`].
#[derive(Debug, thiserror::Error)]
#[error("unknown backend `{0}`; backends are: {names}", names = BackendKind::all().map(BackendKind::name).collect::<Vec<_>>().join(", "))]
pub struct UnknownBackend(pub String);

impl FromStr for BackendKind {
    type Err = UnknownBackend;

    fn from_str(s: &str) -> Result<BackendKind, UnknownBackend> {
        BackendKind::all()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownBackend(s.to_string()))
    }
}
