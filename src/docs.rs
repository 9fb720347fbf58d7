//! Generated docs.

use crate::suite::Config;

pub fn write(_configs: &[Config], _check: bool) -> Result<Vec<String>, String> {
    Ok(Vec::new())
}
