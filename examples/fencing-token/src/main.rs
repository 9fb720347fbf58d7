//! The whole loadbearing CLI, for this design: `check`, `trace`, `explore`, `mutate`,
//! `conform --trace`, `report`, `bench`, with the built-in models beside it.

fn main() -> std::process::ExitCode {
    loadbearing::main_with(fencing_token::design())
}
