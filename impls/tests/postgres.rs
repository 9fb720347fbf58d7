//! The test list against PostgreSQL: a throwaway cluster started once for this test binary.

mod common;

use std::sync::OnceLock;

use common::Backend;
use loadbearing_impls::servers::postgres::launcher::PgServer;
use loadbearing_impls::servers::postgres::PostgresStore;
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

static SERVER: OnceLock<Result<Postgres, String>> = OnceLock::new();

fn postgres() -> Result<&'static dyn Backend, String> {
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

/// The same list with guarded writes as the three-statement first-write compound (the
/// CasFirstWrite model's Update1 / Insert / RetryUpdate), on the same server.
mod compound {
    use super::*;

    struct Compound(&'static PgServer);

    impl Backend for Compound {
        fn name(&self) -> &'static str {
            "postgres-compound"
        }
        fn open(&self, options: StoreOptions, tracer: SharedTracer) -> Box<dyn SnapshotStore> {
            let store = PostgresStore::connect_traced(
                &self.0.conn_str(),
                "snapshots_compound",
                options,
                tracer,
            )
            .expect("connect to PostgreSQL");
            Box::new(store.compound(true))
        }
        fn reap_row(&self, key: &str) -> Result<(), String> {
            let mut c = postgres::Client::connect(&self.0.conn_str(), postgres::NoTls)
                .map_err(|e| e.to_string())?;
            c.execute("DELETE FROM snapshots_compound WHERE key = $1", &[&key])
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
    }

    fn postgres_compound() -> Result<&'static dyn Backend, String> {
        static B: OnceLock<Result<Compound, String>> = OnceLock::new();
        B.get_or_init(|| {
            postgres()?; // starts the shared server, or says why not
            let server = &SERVER
                .get()
                .and_then(|r| r.as_ref().ok())
                .ok_or("no server")?
                .server;
            Ok(Compound(server))
        })
        .as_ref()
        .map(|c| c as &dyn Backend)
        .map_err(Clone::clone)
    }

    backend_tests!(postgres_compound());

    #[test]
    fn forced_interleavings_lost_insert_race_and_spurious_conflict() {
        crate::common::run_or_skip(
            "forced_interleavings_lost_insert_race_and_spurious_conflict",
            postgres_compound(),
            crate::common::cases::forced_interleavings_lost_insert_race_and_spurious_conflict,
        );
    }

    #[test]
    fn first_write_compound_follows_the_model_paths() {
        crate::common::run_or_skip(
            "first_write_compound_follows_the_model_paths",
            postgres_compound(),
            crate::common::cases::first_write_compound_follows_the_model_paths,
        );
    }
}
