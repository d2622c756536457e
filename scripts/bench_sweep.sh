#!/bin/sh
# Sweep speed: N seeds (default 1000) of each scenario (default: figure 4's Poisson unbounded Moshi
# load scenario, bench/scenarios/fig4_poisson_unbounded.json) at -j1 and -j2. Prints CPU time
# (user + sys) per seed, wall time, the -j2 speed-up, the load average, whether both thread counts
# wrote identical rows, and the sha256 of runs.csv (equal before and after an exact optimisation).
# Run from the repository root after a build: scripts/bench_sweep.sh [seeds] [scenario...]
set -eu
seeds=${1:-1000}
shift 2>/dev/null || true
scenarios=${*:-"bench/scenarios/fig4_poisson_unbounded.json"}
bin=${METRONOME:-build/metronome}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for sc in $scenarios; do
  for j in 1 2; do
    /usr/bin/time -f "%U %S %e" -o "$tmp/time$j" \
      "$bin" sweep --scenario "$sc" --seeds "$seeds" -j "$j" --out "$tmp/j$j" 2>/dev/null
    read -r user sys wall < "$tmp/time$j"
    eval "cpu$j=$(echo "$user + $sys" | bc)"
    eval "wall$j=$wall"
  done
  cmp -s "$tmp/j1/runs.csv" "$tmp/j2/runs.csv" && same=identical || same=DIFFERENT
  hash=$(sha256sum "$tmp/j1/runs.csv" | cut -c1-16)
  echo "$sc: $seeds seeds on $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
  echo "  CPU $(echo "scale=2; 1000 * $cpu1 / $seeds" | bc) ms/seed  -j1 wall ${wall1} s  -j2 wall ${wall2} s  speed-up $(echo "scale=2; $wall1 / $wall2" | bc)  rows $same  runs.csv sha256 $hash"
done
