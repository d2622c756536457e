#!/usr/bin/env bash
# quality_deterministic_test.sh METRONOME ASSET_DIR WORK_DIR
# `metronome quality` as figure 8 runs it (the three default policies on a grid, their shared
# prefix, sampled free-running generation, the JSON), small: two runs, on one thread and on two,
# must write the same bytes. figures.quick reruns figure 8's plot and report but not its model run,
# so this is where a run-to-run or thread-count dependence of the command would show.
# Skips (77) without the assets.
set -euo pipefail
metronome=$1 dir=$2 work=$3
model=$dir/smollm2-135m-instruct-q4_1.gguf text=$dir/prideprejudice.txt
if [[ ! -f $model || ! -f $text ]]; then
  echo "SKIP: $model or $text missing: run scripts/fetch_quality_assets.sh"
  exit 77
fi
mkdir -p "$work"
# W = 64 with S = 4 leaves the sinks behind at token 65, well before the end: the windowed policies
# start from full attention's KV (shared prefix), and their sinks are scored at their cache slots.
args=(quality --model "$model" --text "$text" --tokens 256 --window 64 --sinks 4
      --grid-windows 64 --grid-sinks 0 4 --generate 48 --prompt-tokens 32 --temperature 0.8
      --seed 3 --json)
"$metronome" "${args[@]}" -j 1 > "$work/j1.json"
"$metronome" "${args[@]}" -j 2 > "$work/j2.json"
if ! cmp "$work/j1.json" "$work/j2.json"; then
  diff "$work/j1.json" "$work/j2.json" | head -20
  echo "FAIL: metronome quality wrote other bytes on two threads than on one"
  exit 1
fi
/usr/bin/python3 - "$work/j1.json" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
names = sorted(p["name"] for p in r["perplexity"])
gen = sorted(g["name"] for g in r["generation"])
if names != ["full", "s4w64", "w64"] or gen != names:
    sys.exit(f"FAIL: expected policies full, w64, s4w64 scored and generating, got {names}, {gen}")
if not all(math.isfinite(p["ppl"]) and p["ppl"] > 1 for p in r["perplexity"]):
    sys.exit("FAIL: a perplexity is not finite and above 1")
print(f"quality_deterministic_test: the same bytes on 1 and 2 threads ({len(names)} policies, "
      f"{len(gen)} generations)")
PY
