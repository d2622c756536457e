#!/bin/sh
# Sweep speed: N seeds (default 1000) of each scenario (default: figure 4's Poisson unbounded Moshi
# load scenario, bench/scenarios/fig4_poisson_unbounded.json) at -j1 and -j2. Prints CPU time
# (user + sys) per seed, wall time, the -j2 speed-up, the load average, whether both thread counts
# wrote identical rows, and the sha256 of runs.csv (equal before and after an exact optimisation).
# Run from the repository root after a build: scripts/bench_sweep.sh [seeds] [scenario...]
set -eu
seeds=${1:-1000}
case $seeds in '' | *[!0-9]* | 0)
  echo "bench_sweep.sh: seeds must be a positive integer, got '$seeds'" >&2
  exit 2
  ;;
esac
shift 2>/dev/null || true
[ $# -gt 0 ] || set -- bench/scenarios/fig4_poisson_unbounded.json
bin=${METRONOME:-build/metronome}
[ -x "$bin" ] || {
  echo "bench_sweep.sh: $bin is not built (scripts/setup.sh, or METRONOME=path)" >&2
  exit 2
}
for sc; do
  [ -f "$sc" ] || {
    echo "bench_sweep.sh: scenario '$sc' is not a file (run from the repository root)" >&2
    exit 2
  }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for sc; do
  for j in 1 2; do
    # stderr (progress) stays out of the timed terminal output but is shown if the sweep fails.
    /usr/bin/time -f "%U %S %e" -o "$tmp/time$j" \
      "$bin" sweep --scenario "$sc" --seeds "$seeds" -j "$j" --out "$tmp/j$j" 2>"$tmp/err$j" || {
      cat "$tmp/err$j" >&2
      echo "bench_sweep.sh: $bin sweep --scenario $sc -j $j failed" >&2
      exit 1
    }
    read -r user sys wall < "$tmp/time$j"
    eval "cpu$j=$(echo "$user + $sys" | bc)"
    eval "wall$j=$wall"
  done
  cmp -s "$tmp/j1/runs.csv" "$tmp/j2/runs.csv" && same=identical || same=DIFFERENT
  hash=$(sha256sum "$tmp/j1/runs.csv" | cut -c1-16)
  # time reports 0.00 s for a very short sweep: no ratio then, rather than a division by zero.
  speedup=$(awk -v a="$wall1" -v b="$wall2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }')
  echo "$sc: $seeds seeds on $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
  echo "  CPU $(echo "scale=2; 1000 * $cpu1 / $seeds" | bc) ms/seed  -j1 wall ${wall1} s  -j2 wall ${wall2} s  speed-up $speedup  rows $same  runs.csv sha256 $hash"
done
