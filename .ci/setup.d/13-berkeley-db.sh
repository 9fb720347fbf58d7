# Berkeley DB 5.3 for the `bdb` engine of `isolation` (impls/ssi, feature `bdb`): Debian's
# libdb5.3-dev (db.h and libdb-5.3.so); the engine's C face is compiled by its build script.
# Sourced by .ci/run (set -euo pipefail), as root.
if [ ! -f /usr/include/db.h ]; then
  echo "installing libdb5.3-dev"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends libdb5.3-dev >/dev/null
fi
grep -m1 'DB_VERSION_STRING' /usr/include/db.h
