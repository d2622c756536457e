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
# Exit status: 0 done (compare.json says whether the run kept real time); 2 bad input; 1 else.
set -euo pipefail
cd "$(dirname "$0")/.."

scenario="" out="" endpoint="" venv="" threads=1
sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --scenario) scenario=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    --endpoint) endpoint=$2; shift 2 ;;
    --venv) venv=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "vllm_live.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$scenario" ] || [ -z "$out" ]; then
  echo "vllm_live.sh: --scenario FILE and --out DIR are required (see --help)" >&2
  exit 2
fi
metronome=build/metronome
if [ ! -x "$metronome" ]; then
  echo "vllm_live.sh: $metronome missing: run scripts/setup.sh first" >&2
  exit 1
fi
py=$(scripts/vllm_cpu_venv.sh ${venv:+"$venv"})

mkdir -p "$out"
echo "vllm_live.sh: simulating $scenario" >&2
"$metronome" simulate --scenario "$scenario" "${sets[@]}" --out "$out/sim" >/dev/null
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
