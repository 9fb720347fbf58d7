//! Cassandra 5 backend (the `scylla` driver, CQL lightweight transactions at SERIAL).
//!
//! The guarded write is the real first-write compound of docs/models/casfirstwrite.md (`CasFirstWrite`), three
//! separate LWTs that other writers may interleave with:
//!
//! 1. `Update1`: `UPDATE … USING TTL ? SET value = ?, offset = ? WHERE key = ? IF offset <= ?`;
//!    applied → done; refused on a present row → [`Conflict`] with the stored offset; the row
//!    is absent → 2.
//! 2. `Insert`: `INSERT … VALUES (…) IF NOT EXISTS USING TTL ?`; applied → done; the row exists
//!    (a concurrent first writer won the insert race) → 3.
//! 3. `RetryUpdate`: the conditional UPDATE once more; applied → done; refused → conflict; the
//!    row vanished again (reaped by its TTL between 2 and 3: the model's spurious conflict) →
//!    [`WriteError::Failed`], never success.
//!
//! A delete runs the same compound with `value = null`: an offset-carrying tombstone. A write
//! timeout of type CAS (and any error after a statement was sent) is [`WriteError::Indeterminate`].
//! Last-write-wins mode is a plain `UPDATE … USING TTL ?` (no condition).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError, WriteType};
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::{Consistency, SerialConsistency};
use scylla::value::{CqlValue, Row};
use tokio::runtime::Runtime;

pub mod launcher;

use super::Database;
use crate::store::{
    check_offset, BackendError, Conflict, Mode, Offset, Payload, Read, ReadError, SnapshotStore,
    StoreOptions, WriteError,
};
use crate::trace::{no_trace, CompoundStep, SharedTracer, StatementOutcome, Step, WriteKind};

const BACKEND: &str = "cassandra";

/// A connection to a Cassandra cluster and the snapshot table: cheap to clone; open store
/// handles from it.
#[derive(Clone)]
pub struct CassandraCluster {
    rt: Arc<Runtime>,
    session: Arc<Session>,
    statements: Arc<Statements>,
}

struct Statements {
    read: PreparedStatement,
    update: PreparedStatement,
    insert: PreparedStatement,
    /// The retry on a row whose guard column expired while the row lives on (C-6).
    repair: PreparedStatement,
    lww: PreparedStatement,
    /// The [`Mode::HardDelete`] mutant's conditional row removal.
    hard_delete: PreparedStatement,
}

fn prepared(mut p: PreparedStatement, consistency: Consistency) -> PreparedStatement {
    p.set_consistency(consistency);
    p.set_serial_consistency(Some(SerialConsistency::Serial));
    p
}

/// How to reach the cluster, beyond its address.
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {
    /// Reach the node through this address (`host:port`, a proxy in front of it). The driver
    /// learns the nodes' addresses from the cluster and would go around the proxy, so the
    /// node's own address is translated to this one.
    pub proxy: Option<String>,
    /// How long the driver waits for a statement's answer (the driver's default otherwise):
    /// an LWT not answered in time is `Indeterminate`.
    pub request_timeout: Option<Duration>,
}

impl CassandraCluster {
    /// Connect to `node` (`host:port`), create the keyspace (SimpleStrategy, replication 1) and
    /// the table if needed, and prepare the statements. Names must be plain CQL identifiers.
    pub fn connect(node: &str, keyspace: &str, table: &str) -> Result<Self, BackendError> {
        Self::connect_with(node, keyspace, table, ConnectOptions::default())
    }

    /// [`CassandraCluster::connect`] with options (a proxy, a client timeout).
    pub fn connect_with(
        node: &str,
        keyspace: &str,
        table: &str,
        options: ConnectOptions,
    ) -> Result<Self, BackendError> {
        for name in [keyspace, table] {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(BackendError::NotAnIdentifier(name.to_string()));
            }
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(BackendError::while_::<std::io::Error>(
                "starting the tokio runtime",
            ))?;
        let mut builder = SessionBuilder::new().connection_timeout(Duration::from_secs(5));
        match &options.proxy {
            Some(proxy) => {
                let addr = |a: &str| {
                    a.parse::<std::net::SocketAddr>()
                        .map_err(|e| BackendError::Database {
                            what: "connecting",
                            reason: format!("{a}: {e}"),
                        })
                };
                // The node the control connection reached is known by the address it was
                // reached at (the proxy's), its peers by what they announce (the node's).
                let (node, proxy_addr) = (addr(node)?, addr(proxy)?);
                let translation: HashMap<_, _> =
                    [(node, proxy_addr), (proxy_addr, proxy_addr)].into();
                builder = builder
                    .known_node(proxy)
                    .address_translator(Arc::new(translation));
            }
            None => builder = builder.known_node(node),
        }
        if let Some(timeout) = options.request_timeout {
            builder = builder.default_execution_profile_handle(
                ExecutionProfile::builder()
                    .request_timeout(Some(timeout))
                    .build()
                    .into_handle(),
            );
        }
        let (session, statements) = rt.block_on(async {
            let session = builder
                .build()
                .await
                .map_err(|e| BackendError::Database {
                    what: "connecting",
                    reason: format!("{node}: {e}"),
                })?;
            let ddl = BackendError::while_::<ExecutionError>("creating the schema");
            session
                .query_unpaged(
                    format!(
                        "CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = \
                         {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
                    ),
                    &[],
                )
                .await
                .map_err(ddl)?;
            session
                .query_unpaged(
                    format!(
                        "CREATE TABLE IF NOT EXISTS {keyspace}.{table} \
                         (key text PRIMARY KEY, offset bigint, value blob)"
                    ),
                    &[],
                )
                .await
                .map_err(ddl)?;
            session
                .await_schema_agreement()
                .await
                .map_err(BackendError::while_("schema agreement"))?;
            let t = format!("{keyspace}.{table}");
            let prep = |cql: String| {
                let session = &session;
                async move {
                    session
                        .prepare(cql)
                        .await
                        .map_err(BackendError::while_("preparing the statements"))
                }
            };
            let statements = Statements {
                // A SERIAL read completes any in-flight Paxos round first: linearizable.
                read: prepared(prep(format!("SELECT offset, value FROM {t} WHERE key = ?")).await?, Consistency::Serial),
                update: prepared(
                    prep(format!("UPDATE {t} USING TTL ? SET value = ?, offset = ? WHERE key = ? IF offset <= ?")).await?,
                    Consistency::Quorum,
                ),
                insert: prepared(
                    prep(format!("INSERT INTO {t} (key, offset, value) VALUES (?, ?, ?) IF NOT EXISTS USING TTL ?"))
                        .await?,
                    Consistency::Quorum,
                ),
                repair: prepared(
                    prep(format!("UPDATE {t} USING TTL ? SET value = ?, offset = ? WHERE key = ? IF offset = null")).await?,
                    Consistency::Quorum,
                ),
                lww: prepared(
                    prep(format!("UPDATE {t} USING TTL ? SET value = ?, offset = ? WHERE key = ?")).await?,
                    Consistency::Quorum,
                ),
                hard_delete: prepared(
                    prep(format!("DELETE FROM {t} WHERE key = ? IF offset <= ?")).await?,
                    Consistency::Quorum,
                ),
            };
            Ok::<_, BackendError>((session, statements))
        })?;
        Ok(CassandraCluster {
            rt: Arc::new(rt),
            session: Arc::new(session),
            statements: Arc::new(statements),
        })
    }

    /// A store handle on this cluster.
    pub fn store(&self, options: StoreOptions) -> CassandraStore {
        self.store_traced(options, no_trace())
    }

    pub fn store_traced(&self, options: StoreOptions, tracer: SharedTracer) -> CassandraStore {
        CassandraStore {
            cluster: self.clone(),
            options,
            tracer,
        }
    }

    /// Run a CQL statement without parameters (for tests and set-up).
    pub fn execute(&self, cql: &str) -> Result<(), BackendError> {
        self.rt
            .block_on(self.session.query_unpaged(cql.to_string(), &[]))
            .map(|_| ())
            .map_err(BackendError::while_("running a statement"))
    }
}

/// A store handle: guarded (the three-LWT compound) or last-write-wins.
pub struct CassandraStore {
    cluster: CassandraCluster,
    options: StoreOptions,
    tracer: SharedTracer,
}

/// What one LWT said.
enum Lwt {
    Applied,
    /// Refused; `Some(offset)` when a row is present.
    NotApplied(Option<i64>),
}

/// Was the statement possibly executed? Errors that prove it was not are `Failed`; everything
/// else (timeouts, CAS write timeouts, lost connections) is `Indeterminate`.
fn classify(e: &ExecutionError) -> (bool, String) {
    let indeterminate = match e {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, _)) => match db {
            DbError::WriteTimeout {
                write_type: WriteType::Cas,
                ..
            } => {
                return (true, format!("LWT write timeout of type CAS: {e}"));
            }
            DbError::SyntaxError
            | DbError::Invalid
            | DbError::AlreadyExists { .. }
            | DbError::AuthenticationError
            | DbError::Unauthorized
            | DbError::ConfigError
            | DbError::Unavailable { .. }
            | DbError::Overloaded
            | DbError::IsBootstrapping
            | DbError::Unprepared { .. }
            | DbError::RateLimitReached { .. } => false,
            _ => true,
        },
        ExecutionError::BadQuery(_)
        | ExecutionError::EmptyPlan
        | ExecutionError::PrepareError(_)
        | ExecutionError::ConnectionPoolError(_)
        | ExecutionError::UseKeyspaceError(_) => false,
        _ => true,
    };
    (indeterminate, e.to_string())
}

impl CassandraStore {
    fn ttl_secs(&self) -> i32 {
        // CQL TTLs are whole seconds; 0 means none. Round a sub-second TTL up to 1 s.
        self.options
            .ttl
            .map_or(0, |t| t.as_secs_f64().ceil().max(1.0) as i32)
    }

    fn lwt_result(
        result: scylla::response::query_result::QueryResult,
    ) -> Result<Lwt, BackendError> {
        let rows = result
            .into_rows_result()
            .map_err(BackendError::while_("reading the LWT's result row"))?;
        let specs = rows.column_specs();
        let applied_at = specs
            .get_by_name("[applied]")
            .map(|(i, _)| i)
            .ok_or_else(|| BackendError::Database {
                what: "reading the LWT's result row",
                reason: "no [applied] column".into(),
            })?;
        let offset_at = specs.get_by_name("offset").map(|(i, _)| i);
        let row: Row = rows
            .first_row()
            .map_err(BackendError::while_("reading the LWT's result row"))?;
        let applied = matches!(
            row.columns.get(applied_at),
            Some(Some(CqlValue::Boolean(true)))
        );
        if applied {
            return Ok(Lwt::Applied);
        }
        let stored = offset_at.and_then(|i| match row.columns.get(i) {
            Some(Some(CqlValue::BigInt(o))) => Some(*o),
            _ => None,
        });
        Ok(Lwt::NotApplied(stored))
    }

    /// Run one LWT; report it under `action`.
    fn lwt(
        &self,
        action: CompoundStep,
        key: &str,
        offset: Offset,
        kind: WriteKind,
        run: impl std::future::Future<
            Output = Result<scylla::response::query_result::QueryResult, ExecutionError>,
        >,
    ) -> Result<Lwt, WriteError> {
        let result = self.cluster.rt.block_on(run);
        let (lwt, outcome) = match result {
            Ok(r) => match Self::lwt_result(r) {
                Ok(Lwt::Applied) => (Ok(Lwt::Applied), StatementOutcome::Applied),
                Ok(Lwt::NotApplied(Some(o))) => (
                    Ok(Lwt::NotApplied(Some(o))),
                    StatementOutcome::NotApplied { stored: o as u64 },
                ),
                // An insert finds no stored offset only on a row whose guard expired.
                Ok(Lwt::NotApplied(None)) if action == CompoundStep::Insert => {
                    (Ok(Lwt::NotApplied(None)), StatementOutcome::GuardExpired)
                }
                Ok(Lwt::NotApplied(None)) => {
                    (Ok(Lwt::NotApplied(None)), StatementOutcome::RowAbsent)
                }
                Err(e) => {
                    let reason = e.to_string();
                    (
                        Err(WriteError::Indeterminate {
                            key: key.into(),
                            attempted: offset,
                            reason: reason.clone(),
                        }),
                        StatementOutcome::Indeterminate(reason),
                    )
                }
            },
            Err(e) => {
                let (indeterminate, reason) = classify(&e);
                if indeterminate {
                    (
                        Err(WriteError::Indeterminate {
                            key: key.into(),
                            attempted: offset,
                            reason: reason.clone(),
                        }),
                        StatementOutcome::Indeterminate(reason),
                    )
                } else {
                    (
                        Err(WriteError::Failed {
                            key: key.into(),
                            attempted: offset,
                            reason: reason.clone(),
                        }),
                        StatementOutcome::Failed(reason),
                    )
                }
            }
        };
        self.tracer
            .step(&action.step(BACKEND, key.to_string(), offset, kind, outcome));
        lwt
    }

    fn write(&self, key: &str, offset: Offset, payload: Payload<'_>) -> Result<(), WriteError> {
        let signed = check_offset(key, offset)?;
        let s = &self.cluster.statements;
        let session = &self.cluster.session;
        let ttl = self.ttl_secs();
        let value: Option<Vec<u8>> = payload.bytes().map(<[u8]>::to_vec);
        let kind = payload.kind();
        let conflict = |stored: i64| {
            Err(WriteError::Conflict(Conflict {
                key: key.to_string(),
                attempted: offset,
                stored: stored as u64,
            }))
        };
        if self.options.mode == Mode::LastWriteWins {
            let result = self
                .cluster
                .rt
                .block_on(session.execute_unpaged(&s.lww, (ttl, &value, signed, key)));
            let outcome = match result {
                Ok(_) => Ok(()),
                Err(e) => {
                    let (indeterminate, reason) = classify(&e);
                    let (key, attempted) = (key.to_string(), offset);
                    Err(if indeterminate {
                        WriteError::Indeterminate {
                            key,
                            attempted,
                            reason,
                        }
                    } else {
                        WriteError::Failed {
                            key,
                            attempted,
                            reason,
                        }
                    })
                }
            };
            self.tracer.step(&Step::Persist {
                backend: BACKEND,
                key: key.to_string(),
                offset,
                kind,
                outcome: StatementOutcome::from(&outcome),
            });
            return outcome;
        }
        if self.options.mode == Mode::HardDelete && payload == Payload::Tombstone {
            // One LWT; on an absent row it does not apply, and there is nothing to remove.
            let delete = session.execute_unpaged(&s.hard_delete, (key, signed));
            return match self.lwt(CompoundStep::Update1, key, offset, kind, delete)? {
                Lwt::Applied | Lwt::NotApplied(None) => Ok(()),
                Lwt::NotApplied(Some(stored)) => conflict(stored),
            };
        }
        let update = || session.execute_unpaged(&s.update, (ttl, &value, signed, key, signed));
        match self.lwt(CompoundStep::Update1, key, offset, kind, update())? {
            Lwt::Applied => return Ok(()),
            Lwt::NotApplied(Some(stored)) => return conflict(stored),
            Lwt::NotApplied(None) => {}
        }
        let insert = session.execute_unpaged(&s.insert, (key, signed, &value, ttl));
        let retried = match self.lwt(CompoundStep::Insert, key, offset, kind, insert)? {
            Lwt::Applied => return Ok(()),
            // The row is there, its guard column expired (TTL is per cell: a row written
            // first without a TTL keeps its row marker when the cells of a later write with
            // one expire). It reads as absent, so any offset may claim it: the retry is
            // conditioned on the expired guard, else every write of the key ends here (C-6).
            Lwt::NotApplied(None) => {
                let repair = session.execute_unpaged(&s.repair, (ttl, &value, signed, key));
                self.lwt(CompoundStep::Repair, key, offset, kind, repair)?
            }
            Lwt::NotApplied(Some(_)) => {
                self.lwt(CompoundStep::RetryUpdate, key, offset, kind, update())?
            }
        };
        match retried {
            Lwt::Applied => Ok(()),
            Lwt::NotApplied(Some(stored)) => conflict(stored),
            Lwt::NotApplied(None) => Err(WriteError::Failed {
                key: key.to_string(),
                attempted: offset,
                reason: "the row vanished between the lost insert race and the retry (reaped by its TTL): \
                         a spurious conflict, nothing was written"
                    .into(),
            }),
        }
    }
}

impl SnapshotStore for CassandraStore {
    fn read(&self, key: &str) -> Result<Read, ReadError> {
        let err = |reason: String| ReadError {
            key: key.to_string(),
            reason,
        };
        let result = self
            .cluster
            .rt
            .block_on(
                self.cluster
                    .session
                    .execute_unpaged(&self.cluster.statements.read, (key,)),
            )
            .map_err(|e| err(e.to_string()))?;
        let rows = result.into_rows_result().map_err(|e| err(e.to_string()))?;
        let row: Option<(Option<i64>, Option<Vec<u8>>)> =
            rows.maybe_first_row().map_err(|e| err(e.to_string()))?;
        Ok(match row {
            None | Some((None, _)) => Read::Absent,
            Some((Some(offset), Some(value))) => Read::Live {
                offset: offset as u64,
                value,
            },
            Some((Some(offset), None)) => Read::Tombstone {
                offset: offset as u64,
            },
        })
    }

    fn persist(&self, key: &str, offset: Offset, value: &[u8]) -> Result<(), WriteError> {
        self.write(key, offset, Payload::Value(value))
    }

    fn delete(&self, key: &str, offset: Offset) -> Result<(), WriteError> {
        self.write(key, offset, Payload::Tombstone)
    }

    fn options(&self) -> StoreOptions {
        self.options
    }

    fn backend(&self) -> &'static str {
        BACKEND
    }
}

impl Database for CassandraCluster {
    fn backend(&self) -> super::StoreBackend {
        super::StoreBackend::Cassandra
    }
    fn session(
        &self,
        options: StoreOptions,
        tracer: SharedTracer,
    ) -> Result<Box<dyn SnapshotStore>, BackendError> {
        Ok(Box::new(self.store_traced(options, tracer)))
    }
}
