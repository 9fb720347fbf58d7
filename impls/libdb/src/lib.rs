//! The real libdb — release 5.3.34 of the Berkeley DB fork whose `DB_TXN_SNAPSHOT` is
//! serializable snapshot isolation — built from its source (build.rs) as released (`prefix`),
//! with the #151 fix (`fix`), and with the fix at the writer site only (`readerunfixed`), and
//! put under the checks our own SSI engine meets (docs/libdb.md):
//!
//! - [`db`]: safe handles on one flavour's environment, btrees and transactions.
//! - [`hooks`]: the points inside `DB_TXN->commit` the link-time wraps reach.
//! - [`store`]: a script's keys on one flavour, and the tier's connection over it, each step
//!   recorded as the SSI model's trace event.
//! - [`tier`]: the isolation tier's scenarios on each flavour, and what each must show.
//! - `ffi`: the harness's C calls, once per flavour.

pub mod db;
mod ffi;
pub mod hooks;
pub mod replay;
pub mod store;
pub mod tier;
