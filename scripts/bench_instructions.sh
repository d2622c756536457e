#!/bin/sh
# Simulator work in instructions, counted by valgrind's callgrind: unlike CPU time, the count is the
# same on a busy shared machine as on an idle one, so a change's effect shows even where timings
# move 10% between runs. Prints instructions per served frame of the distinct-caller case (one
# `metronome simulate` of bench/scenarios/distinct_windowed.json: 6.74 million frames, the
# command's start-up included), of bench_sim's 10k Poisson-session case (one iteration: arrivals
# throughout, windows that never settle), and per seed of a sweep of figure 4's Poisson unbounded
# scenario.
# After a build: scripts/bench_instructions.sh [seeds (default 20)]
# (METRONOME and BENCH_SIM name other binaries; callgrind runs about 50 times slower than native.)
set -eu
seeds=${1:-20}
case $seeds in '' | *[!0-9]* | 0)
  echo "bench_instructions.sh: seeds must be a positive integer, got '$seeds'" >&2
  exit 2
  ;;
esac
# Scenarios (and the default binaries) are found from the script's own checkout, so a run from
# another directory measures the same files instead of failing steps that still print a result.
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${METRONOME:-$root/build-cpu/metronome}
bench=${BENCH_SIM:-$root/build-cpu/bench/bench_sim}
command -v valgrind > /dev/null || {
  echo "bench_instructions.sh: valgrind is missing (apt-get install valgrind)" >&2
  exit 2
}
for f in "$bin" "$bench"; do
  [ -x "$f" ] || {
    echo "bench_instructions.sh: $f is not built (cmake --preset cpu && cmake --build build-cpu)" >&2
    exit 2
  }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "bench_instructions.sh: $*" >&2
  exit 1
}
# A count is only a result if it is a positive number: 0 frames or no "I refs" line means a step
# printed nothing useful, and dividing by it would print inf.
positive() {
  awk -v v="$2" 'BEGIN { exit !(v ~ /^[0-9]+(\.[0-9]*)?([eE]\+?[0-9]+)?$/ && v + 0 > 0) }' ||
    fail "$1: expected a positive number, got '$2'"
}
# Total instructions of a callgrind run: its "I refs" line. Outputs go to files, not a pipe, so the
# command's exit status is checked (sh has no pipefail); on failure its own messages are shown.
count() {
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$@" > /dev/null 2> "$tmp/cg.log" || {
    grep -v '^==' "$tmp/cg.log" >&2
    fail "failed under callgrind: $*"
  }
  sed -n 's/.*I *refs: *//p' "$tmp/cg.log" | tr -d ,
}
# Served frames of one bench_sim case, as its frames_per_run counter reports them.
frames_of() {
  "$bench" --benchmark_filter="$1" --benchmark_min_time=0.001 --benchmark_format=json \
    > "$tmp/bench.json" 2> "$tmp/bench.log" || {
    cat "$tmp/bench.log" >&2
    fail "$bench --benchmark_filter=$1 failed"
  }
  sed -n 's/.*"frames_per_run": *\([0-9.e+]*\).*/\1/p' "$tmp/bench.json"
}
# bench_sim's distinct-caller case runs as many iterations as its minimum time takes, so the
# count comes from one run of the command on the same scenario.
distinct_scenario=$root/bench/scenarios/distinct_windowed.json
sweep_scenario=$root/bench/scenarios/fig4_poisson_unbounded.json
"$bin" simulate --scenario "$distinct_scenario" --json > "$tmp/distinct.json" ||
  fail "$bin simulate --scenario $distinct_scenario failed"
frames=$(sed -n 's/.*"frames_served": *\([0-9]*\).*/\1/p' "$tmp/distinct.json")
positive "frames_served of $distinct_scenario" "$frames"
distinct=$(count "$bin" simulate --scenario "$distinct_scenario")
positive "instructions of $bin simulate" "$distinct"
poisson_frames=$(frames_of 'BM_PoissonSessions/10000/')
positive "frames_per_run of $bench BM_PoissonSessions/10000/" "$poisson_frames"
poisson=$(count "$bench" --benchmark_filter='BM_PoissonSessions/10000/')
positive "instructions of $bench BM_PoissonSessions/10000/" "$poisson"
sweep=$(count "$bin" sweep --scenario "$sweep_scenario" --seeds "$seeds" -j 1 --out "$tmp/sweep" --quiet)
positive "instructions of $bin sweep" "$sweep"
awk -v i="$distinct" -v f="$frames" -v p="$poisson" -v pf="$poisson_frames" -v s="$sweep" \
  -v n="$seeds" 'BEGIN {
  printf "distinct callers: %.1f instructions per served frame (%d frames)\n", i / f, f
  printf "10k Poisson sessions: %.1f instructions per served frame (%d frames)\n", p / pf, pf
  printf "fig 4 sweep: %.1f M instructions per seed (%d seeds)\n", s / n / 1e6, n
}'
