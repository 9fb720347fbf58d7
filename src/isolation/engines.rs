//! The real engines `isolation` drives a workload's interleavings on: one list, what each
//! claims, what it needs compiled in, and how it opens. A workload file (`--workload`), the
//! suite's counterexamples (`--replay-suite`) and the matrix (`--matrix`) all reach the engines
//! through [`for_each_column`], so an engine is added here and nowhere else.

use loadbearing_ssi_engine::interleave::Drivable;
#[cfg(any(feature = "postgres", feature = "mariadb"))]
use loadbearing_ssi_engine::level::Level;
use serde::Serialize;

use super::IsolationError;

/// An engine from a registry (or the server we start), driven step by step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// PostgreSQL at SERIALIZABLE (SSI) and at REPEATABLE READ (snapshot isolation): a
    /// throwaway cluster of Debian's server.
    Postgres,
    /// SQLite (serializable by locking), in a database file of its own.
    Sqlite,
    /// skipdb's `serializable_write` transactions (crates.io; they promise serializable
    /// snapshot isolation), in memory.
    Skipdb,
    /// Berkeley DB 5.3 with `DB_TXN_SNAPSHOT` (snapshot isolation; Debian's libdb5.3-dev).
    Bdb,
    /// Badger v4 (a Go module; its transactions promise serializable snapshot isolation), in
    /// memory, through our Go driver of it.
    Badger,
    /// MariaDB (InnoDB) at READ COMMITTED, REPEATABLE READ and SERIALIZABLE: a throwaway server
    /// of Debian's mariadb-server.
    Mariadb,
}

impl Engine {
    pub const ALL: [Engine; 6] = [
        Engine::Postgres,
        Engine::Sqlite,
        Engine::Skipdb,
        Engine::Bdb,
        Engine::Badger,
        Engine::Mariadb,
    ];

    /// How a workload file's `[expect]` names its columns (one per level, PostgreSQL's in
    /// `Level::ALL`'s order): exactly `ssi::file::STORES`, over every engine.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            Engine::Postgres => &[
                "postgres.serializable",
                "postgres.repeatable_read",
                "postgres.read_committed",
            ],
            Engine::Sqlite => &["sqlite"],
            Engine::Skipdb => &["skipdb"],
            Engine::Bdb => &["bdb"],
            Engine::Badger => &["badger"],
            Engine::Mariadb => &[
                "mariadb.serializable",
                "mariadb.repeatable_read",
                "mariadb.read_committed",
            ],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Engine::Postgres => "postgres",
            Engine::Sqlite => "sqlite",
            Engine::Skipdb => "skipdb",
            Engine::Bdb => "bdb",
            Engine::Badger => "badger",
            Engine::Mariadb => "mariadb",
        }
    }

    /// The Cargo feature that compiles it in, and what installs what that feature links or
    /// starts; `None` when it is always built.
    pub fn needs(self) -> Option<(&'static str, &'static str)> {
        match self {
            Engine::Postgres => Some((
                "postgres",
                ".ci/setup.d/10-postgres.sh (Debian's postgresql)",
            )),
            Engine::Bdb => Some((
                "bdb",
                ".ci/setup.d/13-berkeley-db.sh (Debian's libdb5.3-dev)",
            )),
            Engine::Badger => Some(("badger", ".ci/setup.d/14-badger.sh (Go, Badger's modules)")),
            Engine::Mariadb => Some((
                "mariadb",
                ".ci/setup.d/15-mariadb.sh (Debian's mariadb-server)",
            )),
            Engine::Sqlite | Engine::Skipdb => None,
        }
    }

    /// Whether this build has it.
    pub fn compiled_in(self) -> bool {
        match self {
            Engine::Postgres => cfg!(feature = "postgres"),
            Engine::Bdb => cfg!(feature = "bdb"),
            Engine::Badger => cfg!(feature = "badger"),
            Engine::Mariadb => cfg!(feature = "mariadb"),
            Engine::Sqlite | Engine::Skipdb => true,
        }
    }

    /// An error naming the feature and the setup script when this build lacks `self`.
    pub fn check_compiled_in(self) -> Result<(), IsolationError> {
        match self.needs() {
            Some((feature, setup)) if !self.compiled_in() => Err(IsolationError::NotCompiledIn {
                engine: self.name(),
                feature,
                setup,
            }),
            _ => Ok(()),
        }
    }
}

/// What an engine promises, and so what it must do with a workload or a counterexample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Claim {
    /// Commit no anomaly.
    Serializable,
    /// Commit what snapshot isolation commits (the `plainsi` model), write skew among it.
    SnapshotIsolation,
    /// Commit nothing dirty: no G0 (dirty write) and no G1 (a read of an aborted or
    /// intermediate version, or a cycle of write and read dependencies); G-single and G2 may
    /// commit.
    ReadCommitted,
}

impl Claim {
    /// How a list of allowed anomalies reads in a table: a class whose every label is allowed
    /// reads `any G-single`, the other labels as themselves (`none` when there are none).
    pub fn allowed_text(allowed: &[String], none: &str) -> String {
        use loadbearing_specs::ssi::anomaly::Class;
        if allowed.is_empty() {
            return none.to_string();
        }
        let mut parts = Vec::new();
        let mut whole = Vec::new();
        for class in Class::ALL {
            let labels = class.labels();
            if labels.iter().all(|l| allowed.contains(l)) {
                parts.push(format!("any {}", class.name()));
                whole.extend(labels);
            }
        }
        parts.extend(allowed.iter().filter(|l| !whole.contains(l)).cloned());
        parts.join(", ")
    }

    /// The anomalies READ COMMITTED may commit: every label of G-single, G2-item and G2.
    pub fn read_committed_allows() -> Vec<String> {
        use loadbearing_specs::ssi::anomaly::Class;
        [Class::GSingle, Class::G2Item, Class::G2]
            .into_iter()
            .flat_map(Class::labels)
            .collect()
    }

    /// The anomalies snapshot isolation may commit by Adya's definition (PL-SI: no G-single),
    /// every label of G2-item and G2: what a snapshot-isolation column is held to for a
    /// workload outside the model, where the `plainsi` model cannot say.
    pub fn snapshot_isolation_allows() -> Vec<String> {
        use loadbearing_specs::ssi::anomaly::Class;
        [Class::G2Item, Class::G2]
            .into_iter()
            .flat_map(Class::labels)
            .collect()
    }
}

/// One column of the tables: an engine at one level (PostgreSQL brings two).
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// The store's name in the results (`sqlite (serializable by locking)`).
    pub store: &'static str,
    /// How a workload file's `[expect]` names it (`sqlite`, `postgres.read_committed`: one of
    /// `ssi::file::STORES`).
    pub key: &'static str,
    pub claim: Claim,
    /// The claim in the engine's own words (`SERIALIZABLE`, `serializable (its claim: SSI)`).
    pub claimed: &'static str,
}

/// Something to do on each column's engine, opened fresh for it.
pub trait OnColumn {
    type Out;
    /// Whether it runs on a column held to `claim` (the others are left out).
    fn takes(&self, _claim: Claim) -> bool {
        true
    }
    fn run<D: Drivable>(
        &mut self,
        column: Column,
        tier: &mut D,
    ) -> Result<Self::Out, IsolationError>
    where
        IsolationError: From<D::Error>;
}

/// Runs `on` on every column of `engines`, in the order given (PostgreSQL on the server at
/// `postgres`, which the caller started); each engine is opened once for its columns.
pub fn for_each_column<O: OnColumn>(
    engines: &[Engine],
    postgres: Option<&str>,
    on: &mut O,
) -> Result<Vec<O::Out>, IsolationError> {
    let mut out = Vec::new();
    for engine in engines {
        engine.check_compiled_in()?;
        match engine {
            Engine::Sqlite => {
                use loadbearing_ssi_engine::sqlite::{SqliteTier, STORE};
                let path = std::env::temp_dir()
                    .join(format!("loadbearing-isolation-{}.db", std::process::id()));
                let column = Column {
                    store: STORE,
                    key: Engine::Sqlite.keys()[0],
                    claim: Claim::Serializable,
                    claimed: "serializable (its claim)",
                };
                out.push(on.run(column, &mut SqliteTier::create(path)?)?);
            }
            Engine::Skipdb => {
                use loadbearing_ssi_engine::skipdb::{SkipTier, STORE};
                let column = Column {
                    store: STORE,
                    key: Engine::Skipdb.keys()[0],
                    claim: Claim::Serializable,
                    claimed: "serializable (its claim: SSI)",
                };
                out.push(on.run(column, &mut SkipTier::new())?);
            }
            Engine::Bdb => out.extend(bdb(on)?),
            Engine::Badger => out.extend(badger(on)?),
            Engine::Postgres => out.extend(postgres_levels(postgres, on)?),
            Engine::Mariadb => out.extend(mariadb_levels(on)?),
        }
    }
    Ok(out)
}

#[cfg(feature = "bdb")]
fn bdb<O: OnColumn>(on: &mut O) -> Result<Option<O::Out>, IsolationError> {
    use loadbearing_ssi_engine::bdb::{BdbTier, STORE};
    let column = Column {
        store: STORE,
        key: Engine::Bdb.keys()[0],
        claim: Claim::SnapshotIsolation,
        claimed: "snapshot isolation (its claim; the plainsi model)",
    };
    Ok(Some(on.run(column, &mut BdbTier::create()?)?))
}

#[cfg(not(feature = "bdb"))]
fn bdb<O: OnColumn>(_: &mut O) -> Result<Option<O::Out>, IsolationError> {
    Engine::Bdb.check_compiled_in().map(|()| None)
}

#[cfg(feature = "badger")]
fn badger<O: OnColumn>(on: &mut O) -> Result<Option<O::Out>, IsolationError> {
    use loadbearing_ssi_engine::badger::{BadgerTier, STORE};
    let column = Column {
        store: STORE,
        key: Engine::Badger.keys()[0],
        claim: Claim::Serializable,
        claimed: "serializable (its claim: SSI)",
    };
    Ok(Some(on.run(column, &mut BadgerTier::start()?)?))
}

#[cfg(not(feature = "badger"))]
fn badger<O: OnColumn>(_: &mut O) -> Result<Option<O::Out>, IsolationError> {
    Engine::Badger.check_compiled_in().map(|()| None)
}

/// A server's columns, one a level: what each is held to, in the engine's words, and how the
/// tier moves to it.
#[cfg(any(feature = "postgres", feature = "mariadb"))]
struct Levels<D> {
    engine: Engine,
    store: fn(Level) -> &'static str,
    claim: fn(Level) -> (Claim, &'static str),
    at: fn(D, Level) -> D,
}

/// Runs `on` on each level of `levels` (in `Level::ALL`'s order, the order of the engine's
/// `[expect]` keys) that it takes, on one tier: its table and connections serve every level.
#[cfg(any(feature = "postgres", feature = "mariadb"))]
fn each_level<O: OnColumn, D: Drivable>(
    levels: Levels<D>,
    mut tier: D,
    on: &mut O,
) -> Result<Vec<O::Out>, IsolationError>
where
    IsolationError: From<D::Error>,
{
    let mut out = Vec::new();
    for (i, level) in Level::ALL.into_iter().enumerate() {
        let (claim, claimed) = (levels.claim)(level);
        if !on.takes(claim) {
            continue;
        }
        let column = Column {
            store: (levels.store)(level),
            key: levels.engine.keys()[i],
            claim,
            claimed,
        };
        tier = (levels.at)(tier, level);
        out.push(on.run(column, &mut tier)?);
    }
    Ok(out)
}

/// MariaDB's three levels on a throwaway server started here (and stopped, whatever happens).
#[cfg(feature = "mariadb")]
fn mariadb_levels<O: OnColumn>(on: &mut O) -> Result<Vec<O::Out>, IsolationError> {
    use loadbearing_ssi_engine::mariadb::{store, MariaServer, MariaTier};
    let server = MariaServer::start().map_err(|e| IsolationError::EngineStart {
        engine: "mariadb",
        why: e.to_string(),
    })?;
    let levels = Levels {
        engine: Engine::Mariadb,
        store,
        claim: |level| match level {
            Level::Serializable => (Claim::Serializable, "SERIALIZABLE"),
            // InnoDB's REPEATABLE READ reads a snapshot but writes the latest version: it
            // promises nothing dirty, not snapshot isolation (lost updates commit).
            Level::RepeatableRead => (
                Claim::ReadCommitted,
                "REPEATABLE READ (InnoDB: no G0 or G1; G-single and G2 allowed)",
            ),
            Level::ReadCommitted => (
                Claim::ReadCommitted,
                "READ COMMITTED (no G0 or G1; G-single and G2 allowed)",
            ),
        },
        at: MariaTier::at,
    };
    let result = MariaTier::connect(&server)
        .map_err(IsolationError::from)
        .and_then(|tier| each_level(levels, tier, on));
    server.stop();
    result
}

#[cfg(not(feature = "mariadb"))]
fn mariadb_levels<O: OnColumn>(_: &mut O) -> Result<Vec<O::Out>, IsolationError> {
    Engine::Mariadb.check_compiled_in().map(|()| Vec::new())
}

/// PostgreSQL's three levels on the server at `conn_str`, which the caller started.
#[cfg(feature = "postgres")]
fn postgres_levels<O: OnColumn>(
    conn_str: Option<&str>,
    on: &mut O,
) -> Result<Vec<O::Out>, IsolationError> {
    use loadbearing_ssi_engine::postgres::{store, PgTier};
    let conn_str = conn_str.ok_or(IsolationError::NoPostgresServer)?;
    let levels = Levels {
        engine: Engine::Postgres,
        store,
        claim: |level| match level {
            Level::Serializable => (Claim::Serializable, "SERIALIZABLE"),
            Level::RepeatableRead => (
                Claim::SnapshotIsolation,
                "snapshot isolation (the plainsi model)",
            ),
            Level::ReadCommitted => (
                Claim::ReadCommitted,
                "READ COMMITTED (no G0 or G1; G-single and G2 allowed)",
            ),
        },
        at: PgTier::at,
    };
    each_level(levels, PgTier::connect(conn_str)?, on)
}

#[cfg(not(feature = "postgres"))]
fn postgres_levels<O: OnColumn>(_: Option<&str>, _: &mut O) -> Result<Vec<O::Out>, IsolationError> {
    Engine::Postgres.check_compiled_in().map(|()| Vec::new())
}

#[cfg(test)]
mod tests {
    use super::{Claim, Engine};

    /// Every column's `[expect]` key is one the file format accepts, and every key it accepts
    /// names a column: an expectation is never read for nothing.
    #[test]
    fn the_columns_keys_are_the_file_formats_engines() {
        let mut keys: Vec<&str> = Engine::ALL.iter().flat_map(|e| e.keys().to_vec()).collect();
        let mut stores = loadbearing_specs::ssi::file::STORES.to_vec();
        keys.sort_unstable();
        stores.sort_unstable();
        assert_eq!(keys, stores);
    }

    /// READ COMMITTED is held to nothing dirty: every G-single and G2 label may commit, no G0
    /// or G1 one may (a judge that allowed everything would pass every engine).
    #[test]
    fn read_committed_allows_g_single_and_g2_and_nothing_dirty() {
        let allowed = Claim::read_committed_allows();
        for label in [
            "G-single",
            "G-single (lost update)",
            "G2-item",
            "G2-item (write skew)",
            "G2-item (read-only anomaly)",
        ] {
            assert!(allowed.contains(&label.to_string()), "{label}: {allowed:?}");
        }
        for dirty in ["G0", "G1a", "G1b", "G1c"] {
            assert!(!allowed.iter().any(|a| a.starts_with(dirty)), "{dirty}");
        }
    }

    /// A class allowed whole reads as the class; a label alone reads as itself.
    #[test]
    fn allowed_anomalies_read_by_class_where_a_class_is_allowed_whole() {
        let rc = Claim::allowed_text(&Claim::read_committed_allows(), "none");
        assert_eq!(rc, "any G-single, any G2-item, any G2");
        let pl_si = Claim::allowed_text(&Claim::snapshot_isolation_allows(), "none");
        assert_eq!(pl_si, "any G2-item, any G2");
        let si = Claim::allowed_text(&["G2-item (write skew)".to_string()], "none");
        assert_eq!(si, "G2-item (write skew)");
        assert_eq!(Claim::allowed_text(&[], "serializable"), "serializable");
    }
}
