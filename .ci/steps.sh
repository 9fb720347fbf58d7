# Step timing for .ci/run and scripts/test: `step NAME COMMAND...` runs COMMAND (a function or
# `source` works too: it runs in this shell) and records its wall time; the table of every step
# is printed when the shell exits, the failing step marked. It is how each change is held to the
# CI budget (30 minutes on a fresh clone): read the table before adding a step.
LB_STEP_NAMES=()
LB_STEP_SECS=()
LB_STEP_DETAILS=()
LB_STEP_CURRENT=""
LB_STEP_T0=""
# A step may break its time down (scripts/test: one line per test binary): lines of
# "SECONDS<TAB>NAME" appended to this file are shown under the step. A script run inside a step
# (LB_SUBSTEPS already set) only appends to it; the outermost shell prints the table.
if [ -n "${LB_SUBSTEPS:-}" ]; then
  LB_STEPS_NESTED=1
else
  LB_SUBSTEPS="$(mktemp)"
  export LB_SUBSTEPS
fi

lb_now() { printf '%s' "${EPOCHREALTIME/,/.}"; }

lb_elapsed() { awk -v a="$1" -v b="$(lb_now)" 'BEGIN { printf "%.1f", b - a }'; }

step() {
  local name="$1"
  shift
  echo "== $name"
  LB_STEP_CURRENT="$name"
  LB_STEP_T0="$(lb_now)"
  "$@"
  LB_STEP_NAMES+=("$name")
  LB_STEP_SECS+=("$(lb_elapsed "$LB_STEP_T0")")
  LB_STEP_DETAILS+=("$(awk -F '\t' '{ printf "%8s    %s\n", $1, $2 }' "$LB_SUBSTEPS")")
  : > "$LB_SUBSTEPS"
  LB_STEP_CURRENT=""
}

lb_step_table() {
  local rc=$?
  local total=0 i
  echo
  echo "== step times (wall clock, seconds)"
  for i in "${!LB_STEP_NAMES[@]}"; do
    printf '%8s  %s\n' "${LB_STEP_SECS[$i]}" "${LB_STEP_NAMES[$i]}"
    [ -z "${LB_STEP_DETAILS[$i]}" ] || printf '%s\n' "${LB_STEP_DETAILS[$i]}"
    total=$(awk -v t="$total" -v s="${LB_STEP_SECS[$i]}" 'BEGIN { print t + s }')
  done
  if [ -n "$LB_STEP_CURRENT" ]; then
    printf '%8s  %s  (FAILED, exit %s)\n' "$(lb_elapsed "$LB_STEP_T0")" "$LB_STEP_CURRENT" "$rc"
    awk -F '\t' '{ printf "%8s    %s\n", $1, $2 }' "$LB_SUBSTEPS"
  fi
  printf '%8s  total of the steps\n' "$total"
  return "$rc"
}
[ -n "${LB_STEPS_NESTED:-}" ] || trap lb_step_table EXIT
