//! The one test list every backend runs, and the plumbing to run it against a backend.
#![allow(dead_code)]

// The test list is the crate's contract kit (`loadbearing_impls::kit`), so a user's own store
// runs the same cases.
#[allow(unused_imports)]
pub use loadbearing_impls::kit::{cases, reliability_row, say, stress, unique_key, Backend};

/// Run a case against a backend, or skip loudly when its server is unavailable: outside CI the
/// test prints `skipped: <reason>` and passes; in CI (`CI=true`) it fails instead.
pub fn run_or_skip(test: &str, backend: Result<&dyn Backend, String>, case: fn(&dyn Backend)) {
    if let Some(b) = loadbearing_test_support::or_skip(test, backend) {
        case(b)
    }
}

/// Expands to one `#[test]` per case of the list, each running against `$backend` (an
/// expression of type `Result<&dyn Backend, String>`, `Err` = the server is unavailable).
#[macro_export]
macro_rules! backend_tests {
    ($backend:expr) => {
        loadbearing_impls::store_contract_cases!(backend_tests!(@cases $backend));
    };
    (@cases $backend:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::common::run_or_skip(stringify!($case), $backend, $crate::common::cases::$case);
            }
        )*
    };
}
