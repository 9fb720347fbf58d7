# PostgreSQL server binaries for the impls tests (impls/tests/postgres*.rs). The tests start and
# remove their own throwaway cluster (initdb + pg_ctl as the `postgres` user on a free loopback
# port), so this only installs Debian's package. Sourced by .ci/run under `set -euo pipefail`.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "installing PostgreSQL (Debian package postgresql)"
  # No default cluster on 5432: the tests make their own.
  mkdir -p /etc/postgresql-common
  if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi
ls -d /usr/lib/postgresql/*/bin/initdb
id postgres >/dev/null
command -v runuser setsid >/dev/null
