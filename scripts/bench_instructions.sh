#!/bin/sh
# Simulator work in instructions, counted by valgrind's callgrind: unlike CPU time, the count is the
# same on a busy shared machine as on an idle one, so a change's effect shows even where timings
# move 10% between runs. Prints instructions per served frame of the distinct-caller case (one
# `metronome simulate` of bench/scenarios/distinct_windowed.json: 6.74 million frames, the
# command's start-up included), of bench_sim's 10k Poisson-session case (one iteration: arrivals
# throughout, windows that never settle), and per seed of a sweep of figure 4's Poisson unbounded
# scenario.
# Run from the repository root after a build: scripts/bench_instructions.sh [seeds (default 20)]
# (METRONOME and BENCH_SIM name other binaries; callgrind runs about 50 times slower than native.)
set -eu
seeds=${1:-20}
case $seeds in '' | *[!0-9]* | 0)
  echo "bench_instructions.sh: seeds must be a positive integer, got '$seeds'" >&2
  exit 2
  ;;
esac
bin=${METRONOME:-build-cpu/metronome}
bench=${BENCH_SIM:-build-cpu/bench/bench_sim}
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
# Total instructions of a callgrind run: its "I refs" line.
count() { valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$@" 2>&1 > /dev/null |
  sed -n 's/.*I *refs: *//p' | tr -d ,; }
# Served frames of one bench_sim case, as its frames_per_run counter reports them.
frames_of() { "$bench" --benchmark_filter="$1" --benchmark_min_time=0.001 --benchmark_format=json \
  2> /dev/null | sed -n 's/.*"frames_per_run": *\([0-9.e+]*\).*/\1/p'; }
# bench_sim's distinct-caller case runs as many iterations as its minimum time takes, so the
# count comes from one run of the command on the same scenario.
distinct_scenario=bench/scenarios/distinct_windowed.json
frames=$("$bin" simulate --scenario "$distinct_scenario" --json |
  sed -n 's/.*"frames_served": *\([0-9]*\).*/\1/p')
distinct=$(count "$bin" simulate --scenario "$distinct_scenario")
poisson_frames=$(frames_of 'BM_PoissonSessions/10000/')
poisson=$(count "$bench" --benchmark_filter='BM_PoissonSessions/10000/')
sweep=$(count "$bin" sweep --scenario bench/scenarios/fig4_poisson_unbounded.json --seeds "$seeds" \
  -j 1 --out "$tmp/sweep" --quiet)
awk -v i="$distinct" -v f="$frames" -v p="$poisson" -v pf="$poisson_frames" -v s="$sweep" \
  -v n="$seeds" 'BEGIN {
  printf "distinct callers: %.1f instructions per served frame (%d frames)\n", i / f, f
  printf "10k Poisson sessions: %.1f instructions per served frame (%d frames)\n", p / pf, pf
  printf "fig 4 sweep: %.1f M instructions per seed (%d seeds)\n", s / n / 1e6, n
}'
