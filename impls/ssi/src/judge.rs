//! Someone else's verdict on an engine trace. The tier and the race count, per scenario, how
//! many engine traces a judge accepted; the engine knows nothing of what the judge checks
//! against. The SSI model's judge (every trace replayed in the model of the engine's variant)
//! is the conformance adapter's (`loadbearing_conform::ssi_engine::ModelJudge`).

use std::fmt;

use loadbearing_workload::workload::Workload;

use crate::engine::Variant;
use crate::trace::EngineEvent;

/// Judges one engine trace of `variant` running `workload` (a workload the model can express:
/// the tier does not ask about predicate scripts).
pub trait Judge: Sync {
    fn judge(
        &self,
        variant: Variant,
        workload: &Workload,
        trace: &[EngineEvent],
    ) -> Result<(), Divergence>;
}

/// Why a trace was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Events matched before this one.
    pub matched: usize,
    pub event: String,
    pub why: String,
    /// The actions the judge allowed where the event could not be matched.
    pub allowed: Vec<String>,
    /// The judge's path of the matched prefix.
    pub prefix: Vec<String>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "event {} `{}` does not fit the model: {}",
            self.matched + 1,
            self.event,
            self.why
        )?;
        writeln!(f, "  the model allowed: {}", self.allowed.join(", "))?;
        write!(f, "  matched prefix: {}", self.prefix.join(", "))
    }
}
