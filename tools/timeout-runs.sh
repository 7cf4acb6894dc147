#!/usr/bin/env bash
# Runs `cpals check --timeout LIMIT FILE` RUNS times, one after the other, and reports how many
# ended within BOUND seconds of wall time (issue 24: `--timeout 2` on a long-running program
# ends within 5 s in 100 runs out of 100), the slowest run, and the verdicts seen.
#
#   tools/timeout-runs.sh [CPALS] [FILE] [RUNS] [LIMIT] [BOUND]
#
# Defaults: target/release/cpals (or $CARGO_TARGET_DIR/release/cpals), a program whose proof
# needs a polynomial invariant (written to a temporary file), 100 runs, 2 s, 5 s.
set -euo pipefail
cd "$(dirname "$0")/.."
cpals="${1:-${CARGO_TARGET_DIR:-target}/release/cpals}"
file="${2:-}"
runs="${3:-100}"
limit="${4:-2}"
bound="${5:-5}"
if [ -z "$file" ]; then
  file="$(mktemp --suffix=.c)"
  trap 'rm -f "$file"' EXIT
  cat >"$file" <<'C'
extern short __VERIFIER_nondet_short(void);
extern void reach_error(void);

int main(void) {
  short n = __VERIFIER_nondet_short();
  if (n < 0 || n > 256) return 0;
  long long i = 0, s = 0;
  while (i < n) {
    i = i + 1;
    s = s + i * i * i;
    if (4 * s != i * i * (i + 1) * (i + 1)) reach_error();
  }
  return 0;
}
C
fi
within=0
max_ms=0
bound_ms=$(awk -v b="$bound" 'BEGIN { printf "%d", b * 1000 }')
times_file="$(mktemp)"
declare -A verdicts=()
for i in $(seq 1 "$runs"); do
  # Wall-clock and CPU time (user + system) of the run, from bash's `time`. A hard stop far
  # beyond the bound, so that a hang shows up as a long run instead of none.
  TIMEFORMAT='%R %U %S'
  { time timeout -s KILL 120 "$cpals" check --timeout "$limit" "$file" >"$times_file.out" 2>/dev/null; } 2>"$times_file" && code=0 || code=$?
  read -r real user sys <"$times_file"
  ms=$(awk -v r="$real" 'BEGIN { printf "%d", r * 1000 }')
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  verdict=$(sed -n 's/^Verification result: //p' "$times_file.out")
  key="${verdict:-none} (exit $code)"
  verdicts["$key"]=$(( ${verdicts["$key"]:-0} + 1 ))
  if [ "$ms" -le "$bound_ms" ]; then within=$((within + 1)); fi
  if [ "$ms" -gt "$max_ms" ]; then max_ms=$ms; fi
  printf 'run %3d: %6d ms wall, %s s CPU, %s\n' "$i" "$ms" "$cpu" "$key" >&2
done
rm -f "$times_file" "$times_file.out"
printf '%d of %d runs ended within %s s (limit %s s); slowest %d ms\n' "$within" "$runs" "$bound" "$limit" "$max_ms"
for v in "${!verdicts[@]}"; do printf '  %s: %d\n' "$v" "${verdicts[$v]}"; done
