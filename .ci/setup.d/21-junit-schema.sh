# xmllint and a published JUnit schema, for the test that validates `--format junit`
# (tests/it/junit.rs; under CI=true it fails without them). The schema is the JUnit 10 XSD that
# pytest ships in its source distribution (testing/example_scripts/junit-10.xsd, the schema of
# Jenkins' xUnit plugin), taken from PyPI so that our output is held to a schema we did not write.
# Sourced by .ci/run (set -euo pipefail), as root. Exports LOADBEARING_JUNIT_XSD.
if ! command -v xmllint >/dev/null 2>&1; then
  echo "installing xmllint"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends libxml2-utils >/dev/null
fi
junit_cache="${HOME}/.cache/loadbearing/junit-schema"
junit_pytest="pytest-8.3.4"
if [ ! -f "$junit_cache/junit-10.xsd" ]; then
  mkdir -p "$junit_cache"
  pip download --quiet --no-binary :all: --no-deps -d "$junit_cache" "${junit_pytest/-/==}"
  tar -xzf "$junit_cache/$junit_pytest.tar.gz" -C "$junit_cache" --strip-components=3 \
    "$junit_pytest/testing/example_scripts/junit-10.xsd"
fi
export LOADBEARING_JUNIT_XSD="$junit_cache/junit-10.xsd"
# sed, not head: head closing the pipe early kills xmllint with SIGPIPE, which pipefail turns into a failed setup
xmllint --version 2>&1 | sed -n 1p
echo "JUnit schema: $LOADBEARING_JUNIT_XSD"
