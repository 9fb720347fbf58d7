//! Conformance of the group commit targets (placeholder until its module lands).

use super::{Settings, Target, TargetResult};

pub fn run(target: Target, _settings: &Settings, _result: &mut TargetResult) -> Result<(), String> {
    Err(format!("{}: not implemented yet", target.name()))
}
