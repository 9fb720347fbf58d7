//! `loadbearing bench --engines`: interleavings driven per second on each real engine this
//! build has, over the classic workloads (`expected/workloads/`, as `isolation --matrix` drives
//! them): an embedded engine runs thousands a second, a server a few hundred.

use std::path::Path;
use std::time::Instant;

use loadbearing_specs::ssi::workload::Workload;
use loadbearing_ssi_engine::interleave::{self, Drivable};

use crate::isolation::engines::{for_each_column, Column, Engine, OnColumn};
use crate::isolation::matrix::workload_files;
use crate::isolation::{with_postgres, Interleave, IsolationError};

/// One engine's column on one workload.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EngineRow {
    pub store: String,
    pub workload: String,
    /// Interleavings driven (every one, or the sample).
    pub interleavings: usize,
    /// Wall time of driving them, loading each run's data included.
    pub seconds: f64,
}

impl EngineRow {
    pub fn per_second(&self) -> f64 {
        self.interleavings as f64 / self.seconds.max(1e-9)
    }
}

/// Times a workload's interleavings on a column's engine.
struct Timed<'a> {
    workload: &'a Workload,
    interleave: Interleave,
}

impl OnColumn for Timed<'_> {
    type Out = EngineRow;

    fn run<D: Drivable>(
        &mut self,
        column: Column,
        tier: &mut D,
    ) -> Result<EngineRow, IsolationError>
    where
        IsolationError: From<D::Error>,
    {
        let started = Instant::now();
        let run = interleave::every(
            tier,
            column.store,
            self.workload,
            self.interleave.bound,
            self.interleave.seed,
        )?;
        Ok(EngineRow {
            store: column.store.to_string(),
            workload: self.workload.name.clone(),
            interleavings: run.interleavings.orders.len(),
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// Every engine this build has (PostgreSQL on a throwaway cluster when it is compiled in),
/// on every workload of `dir`, at most `interleave.bound` interleavings each.
pub fn measure(dir: &Path, interleave: Interleave) -> Result<Vec<EngineRow>, IsolationError> {
    let engines: Vec<Engine> = Engine::ALL
        .into_iter()
        .filter(|e| e.compiled_in())
        .collect();
    let mut workloads = Vec::new();
    for file in workload_files(dir)? {
        let parsed = loadbearing_specs::ssi::file::load_file(&file, crate::workload::VARIANTS)
            .map_err(|e| IsolationError::Workload(e.to_string()))?;
        workloads.push(parsed.workload);
    }
    with_postgres(engines.contains(&Engine::Postgres), |conn_str| {
        let mut rows = Vec::new();
        for workload in &workloads {
            let mut timed = Timed {
                workload,
                interleave: interleave.clone(),
            };
            rows.extend(for_each_column(&engines, conn_str, &mut timed)?);
        }
        Ok(rows)
    })
}

/// The table: a row per engine and workload, then each engine's rate over all its workloads.
pub fn table(rows: &[EngineRow]) -> String {
    let width = rows.iter().map(|r| r.store.len()).max().unwrap_or(6).max(6);
    let mut out = format!(
        "{:<width$}  {:<20} {:>13} {:>9} {:>16}\n",
        "engine", "workload", "interleavings", "seconds", "interleavings/s"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<width$}  {:<20} {:>13} {:>9.3} {:>16.0}\n",
            r.store,
            r.workload,
            r.interleavings,
            r.seconds,
            r.per_second()
        ));
    }
    // Each engine once, in the order of the rows (they go workload by workload).
    let mut stores: Vec<&str> = Vec::new();
    for r in rows {
        if !stores.contains(&r.store.as_str()) {
            stores.push(&r.store);
        }
    }
    out.push('\n');
    for store in stores {
        let (n, secs) = rows
            .iter()
            .filter(|r| r.store == store)
            .fold((0, 0.0), |(n, s), r| (n + r.interleavings, s + r.seconds));
        out.push_str(&format!(
            "{store:<width$}  {n} interleavings in {secs:.2} s: {:.0} a second\n",
            n as f64 / f64::max(secs, 1e-9)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(store: &str, workload: &str, interleavings: usize, seconds: f64) -> EngineRow {
        EngineRow {
            store: store.into(),
            workload: workload.into(),
            interleavings,
            seconds,
        }
    }

    /// A row per engine and workload, then one total per engine, in the rows' order, however
    /// the rows interleave the engines.
    #[test]
    fn the_table_totals_each_engine_once() {
        let rows = [
            row("sqlite", "lost_update", 70, 0.07),
            row("skipdb", "lost_update", 70, 0.035),
            row("sqlite", "write_skew", 70, 0.07),
            row("skipdb", "write_skew", 70, 0.035),
        ];
        let text = table(&rows);
        assert_eq!(text.matches("interleavings in").count(), 2, "{text}");
        assert!(
            text.contains("sqlite  140 interleavings in 0.14 s: 1000 a second"),
            "{text}"
        );
        assert!(
            text.contains("skipdb  140 interleavings in 0.07 s: 2000 a second"),
            "{text}"
        );
    }
}
