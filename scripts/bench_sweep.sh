#!/bin/sh
# Sweep speed: N seeds (default 1000) of the canonical scenarios at -j1 and -j2, wall time and
# scaling; checks that both thread counts write identical rows. Run from the repository root after
# a build: scripts/bench_sweep.sh [seeds] [scenario...]
set -eu
seeds=${1:-1000}
shift 2>/dev/null || true
scenarios=${*:-"scenarios/canonical/moshi_h200_unbounded.json scenarios/canonical/moshi_h200_windowed.json"}
bin=${METRONOME:-build/metronome}
tmp=$(mktemp -d)
for sc in $scenarios; do
  for j in 1 2; do
    start=$(date +%s.%N)
    "$bin" sweep --scenario "$sc" --seeds "$seeds" -j "$j" --out "$tmp/j$j" 2>/dev/null
    end=$(date +%s.%N)
    eval "t$j=$(echo "$end - $start" | bc)"
  done
  cmp -s "$tmp/j1/runs.csv" "$tmp/j2/runs.csv" && same=identical || same=DIFFERENT
  echo "$sc: $seeds seeds  -j1 ${t1} s  -j2 ${t2} s  speed-up $(echo "scale=2; $t1 / $t2" | bc)  rows $same"
done
rm -rf "$tmp"
