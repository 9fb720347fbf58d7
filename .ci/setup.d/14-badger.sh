# Badger for the `badger` engine of `isolation` (impls/ssi, feature `badger`): the machine's Go
# builds our driver (impls/ssi/go/badger-driver) in the crate's build script; its modules come
# from the Go module proxy, pinned by its go.sum. Fetched here so that a proxy that does not
# answer is a setup failure, named, not a build failure deep in cargo's output.
# Sourced by .ci/run (set -euo pipefail).
go version
(cd impls/ssi/go/badger-driver && go mod download)
