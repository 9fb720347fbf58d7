# MariaDB for the `mariadb` engine of `isolation` (impls/ssi, feature `mariadb`): Debian's
# mariadb-server. The engine starts and removes its own throwaway server (mariadb-install-db
# into a fresh folder, mariadbd on a free loopback port), so this only installs the package;
# Debian's own service is not started (no init system here, and none is needed).
# Sourced by .ci/run (set -euo pipefail), as root.
if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  echo "installing MariaDB (Debian package mariadb-server)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Its postinst tries to start the service; policy-rc.d refuses where there is no init.
  apt-get install -y -qq --no-install-recommends mariadb-server >/dev/null
fi
/usr/sbin/mariadbd --version
command -v mariadb-install-db >/dev/null
