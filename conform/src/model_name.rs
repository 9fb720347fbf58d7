//! A model named by its type: what a target declares it is validated against, and what its
//! result reports. A leaf module, so that both the targets and their records can name one.

use loadbearing_specs::Configured;
use serde::Serialize;

/// A model, named by its type: what a target declares it is validated against, and what its
/// result reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct ModelName(&'static str);

impl ModelName {
    /// The name of model `M`.
    pub fn of<M: Configured>() -> ModelName {
        ModelName(M::NAME)
    }

    pub fn name(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for ModelName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}
