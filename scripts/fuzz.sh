#!/usr/bin/env bash
# Runs the scenario-loader fuzzer (build preset `fuzz`) for a bounded number of executions, seeded with
# every shipped scenario and every past finding. Exits non-zero on any crash, sanitizer report,
# uncaught exception or timeout; the failing input is kept under build-fuzz/findings/.
#   scripts/fuzz.sh [--runs N] [--time SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5000
time_limit=0
while (($#)); do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --time) time_limit=$2; shift 2 ;;
    *) echo "fuzz.sh: unknown argument $1 (expected --runs N or --time SECONDS)" >&2; exit 2 ;;
  esac
done
fuzzer=build-fuzz/tests/fuzz/scenario_fuzzer
[[ -x $fuzzer ]] || { echo "fuzz.sh: $fuzzer missing; build it with: cmake --preset fuzz && cmake --build --preset fuzz" >&2; exit 2; }
corpus=build-fuzz/corpus
findings=build-fuzz/findings
mkdir -p "$corpus" "$findings"
i=0
for f in scenarios/*.json scenarios/*/*.json tests/sim/golden/*.scenario.json tests/fuzz/regressions/*; do
  [[ -f $f ]] && cp "$f" "$corpus/seed_$((i++))"
done
# Past findings must still pass on their own.
for f in tests/fuzz/regressions/*; do
  [[ -f $f ]] && "$fuzzer" "$f" >/dev/null 2>&1 || { [[ -f $f ]] && { echo "fuzz.sh: regression $f fails" >&2; "$fuzzer" "$f" 2>&1 | tail -20; exit 1; }; }
done
"$fuzzer" "$corpus" -runs="$runs" -max_total_time="$time_limit" -timeout=10 -max_len=4096 \
  -artifact_prefix="$findings/" -print_final_stats=1 2>&1 | grep -E "^(#[0-9]+.*(DONE|pulse)|stat::|SUMMARY|==[0-9]+==ERROR)" | tail -8
status=${PIPESTATUS[0]}
if [[ $status -ne 0 ]]; then
  echo "fuzz.sh: the fuzzer found a problem; input saved in $findings/" >&2
  exit 1
fi
echo "fuzz.sh: $runs executions, no finding"
