# Headless Chromium for the explorer's browser test (tests/it/browser.rs, which fails under CI=true
# without it) and Graphviz's `dot` for `loadbearing trace --format svg` and docs/tower.svg.
# Sourced by .ci/run (set -euo pipefail), as root.
if ! command -v chromium >/dev/null 2>&1 || ! command -v dot >/dev/null 2>&1; then
  echo "installing chromium and graphviz"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium graphviz fonts-dejavu-core >/dev/null
fi
chromium --version
dot -V 2>&1
