//! The whole loadbearing CLI, for this design: `check`, `trace`, `mutate`, `conform --trace`,
//! `report`, with the built-in models beside it.

fn main() -> std::process::ExitCode {
    loadbearing::main_with(cas_register::design())
}
