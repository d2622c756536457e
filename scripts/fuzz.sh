#!/usr/bin/env bash
# Runs the libFuzzer targets (build preset `fuzz`: those targets of the asan build) for a bounded
# number of executions each, seeded with every shipped input of their kind and every past finding:
#   scenario     the scenario loader, --set lines, then a short simulation (tests/fuzz/scenario_fuzzer.cpp)
#   sweep_spec   sweep files, --grid / --seeds / --shard arguments (sweep_spec_fuzzer.cpp)
#   hf_config    HuggingFace config.json files as model=hf: reads them, sized and predicted
#   calibration  the calibration reader, its cost model, step bounds and `calibrate report`
#   option       the predict/capacity command lines: option validators and --set (option_fuzzer.cpp)
# Exits non-zero on any crash, sanitizer report, uncaught exception, broken invariant or timeout;
# the failing input is kept under build-asan/findings/TARGET/.
#   scripts/fuzz.sh [--runs N] [--time SECONDS] [--target NAME]...
# --time runs each target for that long (executions unbounded unless --runs is also given).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=""
time_limit=""
targets=()
die() { echo "fuzz.sh: $*" >&2; exit 2; }
while (($#)); do
  case $1 in
    --runs|--time|--target) [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value" ;;
  esac
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --time) time_limit=$2; shift 2 ;;
    --target) targets+=("$2"); shift 2 ;;
    *) echo "fuzz.sh: unknown argument $1 (expected --runs N, --time SECONDS or --target NAME)" >&2; exit 2 ;;
  esac
done
# Bash arithmetic reads a non-number as 0, so --time abc quietly became the default 3000 runs.
[[ -z $runs || $runs =~ ^0*[1-9][0-9]*$ ]] || die "--runs: expected a whole number > 0, got '$runs'"
[[ -z $time_limit || $time_limit =~ ^0*[1-9][0-9]*$ ]] ||
  die "--time: expected whole seconds > 0, got '$time_limit'"
time_limit=${time_limit:-0}
((${#targets[@]})) || targets=(scenario sweep_spec hf_config calibration option)
for t in "${targets[@]}"; do
  [[ $t =~ ^(scenario|sweep_spec|hf_config|calibration|option)$ ]] ||
    die "--target: expected scenario, sweep_spec, hf_config, calibration or option, got '$t'"
done
[[ -n $runs ]] || { ((time_limit > 0)) && runs=-1 || runs=3000; }

# A value nested 60,000 levels deep crashed the loader once; too long for -max_len, so it
# is generated and run as a regression.
deep=build-asan/generated/deep_nesting.json
mkdir -p "$(dirname "$deep")"
/usr/bin/python3 -c 'print("{\"model\":" * 60000 + "1" + "}" * 60000)' >"$deep"

seeds_of() {
  case $1 in
    scenario) ls scenarios/*.json scenarios/*/*.json tests/sim/golden/*.scenario.json tests/fuzz/seeds/scenario/* ;;
    sweep_spec) ls tests/fuzz/seeds/sweep_spec/* ;;
    hf_config) ls tests/sim/hf_configs/*/config.json ;;
    calibration) ls results/calibration/*.json | grep -v _bench ;;
    option) ls tests/fuzz/seeds/option/* ;;
  esac
}
regressions_of() {
  case $1 in
    scenario) find tests/fuzz/regressions -maxdepth 1 -type f ;;
    *) find tests/fuzz/regressions/"$1" -maxdepth 1 -type f ;;
  esac
  [[ $1 == option ]] || echo "$deep"
}
max_len_of() {
  case $1 in
    calibration) echo 16384 ;;  # a shipped calibration file is 13 KB
    option) echo 1024 ;;
    *) echo 8192 ;;
  esac
}

for t in "${targets[@]}"; do
  fuzzer=build-asan/tests/fuzz/${t}_fuzzer
  [[ -x $fuzzer ]] || { echo "fuzz.sh: $fuzzer missing; build it with: cmake --preset asan && cmake --build --preset fuzz" >&2; exit 2; }
  corpus=build-asan/corpus/$t
  findings=build-asan/findings/$t
  mkdir -p "$corpus" "$findings"
  i=0
  for f in $(seeds_of "$t"); do cp "$f" "$corpus/seed_$((i++))"; done
  # Past findings must still pass on their own.
  while read -r f; do
    [[ -f $f ]] || continue
    if ! "$fuzzer" "$f" >/dev/null 2>&1; then
      echo "fuzz.sh: $t: regression $f fails" >&2
      "$fuzzer" "$f" 2>&1 | tail -20
      exit 1
    fi
  done < <(regressions_of "$t")
  set +e
  "$fuzzer" "$corpus" -runs="$runs" -max_total_time="$time_limit" -timeout=10 -rss_limit_mb=2048 \
    -max_len="$(max_len_of "$t")" -artifact_prefix="$findings/" -print_final_stats=1 \
    >"build-asan/$t.log" 2>&1
  status=$?
  set -e
  grep -E "^(#[0-9]+.*(DONE|pulse)|SUMMARY|==[0-9]+==ERROR|fuzz invariant)" "build-asan/$t.log" | tail -3
  if [[ $status -ne 0 ]]; then
    tail -40 "build-asan/$t.log" >&2
    echo "fuzz.sh: $t: the fuzzer found a problem; input saved in $findings/" >&2
    exit 1
  fi
  execs=$(grep -Eo "stat::number_of_executed_units: [0-9]+" "build-asan/$t.log" | grep -Eo "[0-9]+$" || echo "?")
  cov=$(grep -E "^#[0-9]+.*DONE" "build-asan/$t.log" | grep -Eo "cov: [0-9]+ ft: [0-9]+" | tail -1 || true)
  echo "fuzz.sh: $t: $execs executions, ${cov:-cov: ?}, no finding"
done
