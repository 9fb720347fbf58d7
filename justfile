# The everyday recipes. `just` lists them.

default:
    @just --list

# Check every config against its expected outcome (exit 0: all as expected).
check *ARGS:
    cargo run --release -- check {{ARGS}}

# The configs, their models, constants and expected outcomes.
list:
    cargo run --release -- list

# Every test of every crate with every feature, as CI runs them: installs what the server-backed
# tests need first (.ci/setup.d), then prints the time of each test binary.
test *ARGS:
    scripts/test {{ARGS}}

# Larger constants: states per second and peak memory.
bench:
    cargo run --release -- bench

# What CI runs, start to end.
ci:
    bash .ci/run

lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets --all-features -- -D warnings
    cargo clippy --workspace --all-targets -- -D warnings

# Stateright's web explorer on one config; prints the link to its shortest counterexample.
explore CONFIG *ARGS:
    cargo run --release -- explore {{CONFIG}} {{ARGS}}

# The shortest counterexample of one config: --format text|json|dot|svg, --graph.
trace CONFIG *ARGS:
    cargo run --release -- trace {{CONFIG}} {{ARGS}}

# Accept changed counterexample snapshots and regenerate docs/; review with `git diff`.
docs:
    INSTA_UPDATE=always cargo test --test it snapshots::
    cargo run --release -- docs
    cargo run --release -- mutate --format markdown > docs/mutation.md

# Remove each guard in turn: which property catches it? (fails on an unexplained one)
mutate *ARGS:
    cargo run --release -- mutate {{ARGS}}

# The implementations against their models: traces in, model paths out (--backend postgres).
conform *ARGS:
    cargo run --release -- conform {{ARGS}}

# The SSI engine's isolation tier, our variants side by side (add --postgres).
isolation *ARGS:
    cargo run --release -- isolation {{ARGS}}

# Fill docs/reliability.md's tables from a run of the fault tests (servers started by the tests).
reliability:
    scripts/reliability-table.sh

# Group commit on a real Kafka broker: cap 256 vs cap 1 vs a plain producer.
kafka-bench:
    cargo run --release -p loadbearing-impls-kafka --features kafka --example group_commit_bench
