//! What a backend is, without its connection details: the one name a target's table, the
//! CLI's `--backend` and the errors share. Its own module, below both the errors and the
//! servers (`backend`, whose failures are errors), so that an error can name a backend.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

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
