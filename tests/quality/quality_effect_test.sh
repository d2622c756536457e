#!/usr/bin/env bash
# quality_effect_test.sh METRONOME ASSET_DIR OUT_JSON
# The measured size of the window's effect on a real model and text (the paper's quality ablation):
# with W = 256 over tokens 256-2048 of Pride and Prejudice, a window alone is well above unbounded
# KV in perplexity, and 4 sinks + the window are within 15% of it. Skips (77) without the assets.
set -euo pipefail
metronome=$1 dir=$2 out=$3
model=$dir/smollm2-135m-instruct-q4_1.gguf text=$dir/prideprejudice.txt
if [[ ! -f $model || ! -f $text ]]; then
  echo "SKIP: $model or $text missing: run scripts/fetch_quality_assets.sh"
  exit 77
fi
start=$(date +%s)
"$metronome" quality --quick --model "$model" --text "$text" --generate 0 -j 2 --out "$out"
echo "quality_effect_test: metronome quality --quick --generate 0 took $(( $(date +%s) - start )) s"
/usr/bin/python3 - "$out" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
p = {x["name"]: x for x in r["perplexity"]}
full, win, sinks = p["full"]["ppl_from"], p["w256"]["ppl_from"], p["s4w256"]["ppl_from"]
print(f"tokens 256-2048: full {full:.2f}, window only {win:.2f} ({win / full:.2f}x), "
      f"4 sinks + window {sinks:.2f} ({sinks / full:.2f}x)")
ok = all(math.isfinite(v) and v > 1 for v in (full, win, sinks))
if not ok or win < 1.3 * full:
    sys.exit("FAIL: window-only perplexity is not well above (1.3x) full attention")
if sinks > 1.15 * full:
    sys.exit("FAIL: 4 sinks + W = 256 is not within 15% of full attention")
if abs(p["full"]["ppl"] - p["full"]["ppl_from"]) > 0.5 * p["full"]["ppl"]:
    sys.exit("FAIL: implausible full-attention perplexity")
PY
