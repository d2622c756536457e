#!/usr/bin/env bash
# A live run: a Metronome scenario driven in real time against a running vLLM, beside the
# simulation of the same scenario, and the two compared (docs/live.md).
#
#   scripts/vllm_live.sh --scenario FILE --out DIR [--set KEY=VALUE ...] [--endpoint URL]
#                        [--venv DIR] [--threads N]
#
#   --scenario FILE  a scenario with engine.scheduler vllm_v1 and an explicit engine.num_blocks
#                    (scenarios/live/ has the committed cases)
#   --out DIR        DIR/sim: `metronome simulate --out` of the scenario (its resolved
#                    scenario.json is what the driver runs); DIR/live: the live run's records
#                    (frames.csv, metrics.csv, steps.jsonl, run.json) and, booked from them by
#                    `metronome book`, summary.json and timeseries.csv as simulate writes them;
#                    DIR/compare.json: the two side by side (scripts/live_compare.py)
#   --set KEY=VALUE  passed to metronome (any scenario field)
#   --endpoint URL   drive a running vLLM server instead of starting one (per-frame requests)
#   --venv DIR       the vLLM CPU venv (created if missing: scripts/vllm_cpu_venv.sh)
#   --threads N      OpenMP threads of the engine (default 1: steady step times on 2 shared cores)
# Paths are relative to the current folder. The arguments, the scenario and the driver's reading of
# it (vllm_live.py --check) are checked before the venv is built.
# Exit status: 0 done (compare.json says whether the run kept real time); 2 bad input; 1 else
# (a call that ended in an error among them: DIR/live.log and DIR/live/run.json say which).
set -euo pipefail
here=$PWD
cd "$(dirname "$0")/.."

bad() {
  echo "vllm_live.sh: $* (see --help)" >&2
  exit 2
}
from_here() { case "$1" in /*) echo "$1" ;; *) echo "$here/$1" ;; esac; }
scenario="" out="" endpoint="" venv="" threads=1
sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --scenario | --out | --set | --endpoint | --venv | --threads)
      [ $# -ge 2 ] || bad "$1 needs a value" ;;
  esac
  case "$1" in
    --scenario) scenario=$(from_here "$2"); shift 2 ;;
    --out) out=$(from_here "$2"); shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    --endpoint) endpoint=$2; shift 2 ;;
    --venv) venv=$(from_here "$2"); shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) bad "unknown argument '$1'" ;;
  esac
done
# Every argument is checked, and the scenario simulated and checked as the driver reads it, before
# the 6 GB venv is built: bad input costs seconds, not an install.
if [ -z "$scenario" ] || [ -z "$out" ]; then
  bad "--scenario FILE and --out DIR are required"
fi
[ -f "$scenario" ] && [ -r "$scenario" ] || bad "--scenario $scenario: no such readable file"
[[ "$threads" =~ ^[1-9][0-9]*$ ]] || bad "--threads: expected a positive integer, got '$threads'"
if [ -n "$endpoint" ] && [[ ! "$endpoint" =~ ^https?:// ]]; then
  bad "--endpoint: expected an http:// or https:// URL, got '$endpoint'"
fi
mkdir -p "$out" 2>/dev/null && [ -w "$out" ] || bad "--out $out: cannot create or write it"
metronome=build/metronome
if [ ! -x "$metronome" ]; then
  echo "vllm_live.sh: $metronome missing: run scripts/setup.sh first" >&2
  exit 1
fi
echo "vllm_live.sh: simulating $scenario" >&2
"$metronome" simulate --scenario "$scenario" "${sets[@]}" --out "$out/sim" >/dev/null
/usr/bin/python3 scripts/vllm_live.py --scenario "$out/sim/scenario.json" --out "$out/live" \
  ${endpoint:+--endpoint "$endpoint"} --check
py=$(scripts/vllm_cpu_venv.sh ${venv:+"$venv"})
echo "vllm_live.sh: driving vLLM in real time ($(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["horizon_s"])' "$out/sim/scenario.json") s after start-up)" >&2
rm -rf "$out/live"
OMP_NUM_THREADS=$threads "$py" scripts/vllm_live.py --scenario "$out/sim/scenario.json" \
  --out "$out/live" ${endpoint:+--endpoint "$endpoint"} 2>"$out/live.log" || {
  rc=$?
  grep -v -e ' INFO ' -e ' WARNING ' "$out/live.log" | tail -n 20 >&2
  exit $rc
}
grep "^vllm_live:" "$out/live.log" >&2 || true
# The live run as simulate writes a run (summary.json, timeseries.csv, scenario.json), booked by
# the simulator's own ledger.
"$metronome" book --scenario "$out/sim/scenario.json" --records "$out/live" --out "$out/live" >/dev/null
/usr/bin/python3 scripts/live_compare.py "$out"
