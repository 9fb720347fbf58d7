# Toxiproxy, the fault-injection TCP proxy that impls/tests/postgres_faults.rs puts between the
# snapshot store and PostgreSQL (resets, cuts, stalls, latency). Built from source through the Go
# module proxy, pinned, and cached. Sourced by .ci/run (set -euo pipefail). Exports
# LOADBEARING_TOXIPROXY.
toxiproxy_version="v2.12.0"
toxiproxy_dir="${HOME}/.cache/loadbearing/toxiproxy-${toxiproxy_version}"
if [ ! -x "$toxiproxy_dir/toxiproxy-server" ]; then
  if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    export PATH="$PATH:/usr/local/go/bin"
  fi
  echo "building toxiproxy-server $toxiproxy_version (go install)"
  mkdir -p "$toxiproxy_dir"
  GOBIN="$toxiproxy_dir" go install "github.com/Shopify/toxiproxy/v2/cmd/server@${toxiproxy_version}"
  mv "$toxiproxy_dir/server" "$toxiproxy_dir/toxiproxy-server"
fi
export LOADBEARING_TOXIPROXY="$toxiproxy_dir/toxiproxy-server"
"$LOADBEARING_TOXIPROXY" -version 2>&1 | sed -n 1p
