#!/usr/bin/env bash
# Fill docs/reliability.md's two tables from a real run of the fault tests: each test prints
# its row as `reliability[stores] | … |` or `reliability[kafka] | … |` (kit::reliability_row),
# and the rows replace what stands between the page's `<!-- reliability:TABLE -->` and
# `<!-- /reliability:TABLE -->` markers. The servers are started by the tests themselves;
# Toxiproxy must be built (.ci/setup.d/12-toxiproxy.sh). Exits non-zero if a test fails or a
# table got no row, and then leaves the page as it was.
#
#   reliability-table.sh            run the tests, fill the tables
#   reliability-table.sh --from LOG fill them from an earlier run's output
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--from" ]; then
  log="${2:?--from needs the log of a run}"
  keep_log=1
else
  log="$(mktemp)"
  keep_log=
  echo "running the fault tests (about five minutes); output in $log" >&2
  cargo test -p loadbearing-conform --features postgres,cassandra,kafka \
    --test postgres_kill --test postgres_faults --test cassandra_kill --test kafka_faults \
    -- --test-threads 1 >"$log" 2>&1
fi
# (A failed run keeps its output, for the message to point at.)
tmp="$(mktemp)"
trap 'rm -f "$tmp" "$tmp".*' EXIT

page=docs/reliability.md
cp "$page" "$tmp.page"
for table in stores kafka; do
  # Anywhere on a line: the test harness may have printed `test NAME ... ` before it.
  sed -n "s/.*reliability\[$table\] //p" "$log" >"$tmp.rows"
  if [ ! -s "$tmp.rows" ]; then
    echo "no $table row in the run's output ($log)" >&2
    exit 1
  fi
  begin="<!-- reliability:$table -->"
  end="<!-- /reliability:$table -->"
  grep -qF "$begin" "$tmp.page" || { echo "$page has no $begin marker" >&2; exit 1; }
  # Keep the header (the two lines after the begin marker), replace the rows.
  awk -v begin="$begin" -v end="$end" -v rows="$tmp.rows" '
    $0 == begin { print; inside = 1; header = 2; next }
    inside && header > 0 {
      print; header--
      if (header == 0) { while ((getline line < rows) > 0) print line; close(rows) }
      next
    }
    $0 == end { inside = 0 }
    !inside { print }
  ' "$tmp.page" >"$tmp.page.new"
  mv "$tmp.page.new" "$tmp.page"
done
cp "$tmp.page" "$page"
[ -n "$keep_log" ] || rm -f "$log"
echo "$page: tables filled from this run" >&2
