//! The test list against PostgreSQL: a throwaway cluster started once for this test binary.

mod common;

use std::sync::OnceLock;

use common::Backend;
use loadbearing_impls::harness::postgres::PgServer;
use loadbearing_impls::postgres::PostgresStore;
use loadbearing_impls::store::{SnapshotStore, StoreOptions};
use loadbearing_impls::trace::SharedTracer;

struct Postgres {
    server: PgServer,
}

impl Backend for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }
    fn open(&self, options: StoreOptions, tracer: SharedTracer) -> Box<dyn SnapshotStore> {
        Box::new(
            PostgresStore::connect_traced(&self.server.conn_str(), "snapshots", options, tracer)
                .expect("connect to PostgreSQL"),
        )
    }
}

fn postgres() -> Result<&'static dyn Backend, String> {
    static SERVER: OnceLock<Result<Postgres, String>> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            PgServer::start()
                .map(|server| Postgres { server })
                .map_err(|e| format!("PostgreSQL: {e}"))
        })
        .as_ref()
        .map(|p| p as &dyn Backend)
        .map_err(Clone::clone)
}

backend_tests!(postgres());
