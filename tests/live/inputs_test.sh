#!/usr/bin/env bash
# The live scripts refuse bad input with exit 2 and a message naming the file and field, before
# any engine: the driver's reading of a resolved scenario (vllm_live.py --check, which imports no
# vLLM), vllm_live.sh's arguments (checked before it would build the vLLM venv) and a damaged
# live run given to live_compare.py. No vLLM needed.
#   inputs_test.sh <metronome binary> <source dir>
set -u
source "$(dirname "$0")/../cli/cli_lib.sh"
py=/usr/bin/python3

# expect_exit2 <regex> <command...>: exit 2, stderr matching the regex, no traceback.
expect_exit2() {
  local want=$1
  shift
  cases=$((cases + 1))
  "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  if [[ $rc -ne 2 ]] || ! grep -Eq -- "$want" "$tmp/err" || grep -q Traceback "$tmp/err"; then
    fail "$* -> rc=$rc, want exit 2 and /$want/; stderr: $(head -c 600 "$tmp/err")"
  fi
}

"$bin" simulate --scenario "$src/scenarios/live/unbounded_stall.json" --out "$tmp/sim" \
  >/dev/null 2>&1 || fail "simulate unbounded_stall"
resolved=$tmp/sim/scenario.json
# edit <name> <python statement on s>: the resolved scenario, changed, as $tmp/<name>.json
edit() {
  "$py" -c 'import json, sys
s = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(s, open(sys.argv[3], "w"))' "$resolved" "$2" "$tmp/$1.json"
}
check() { "$py" "$src/scripts/vllm_live.py" --scenario "$1" --out "$tmp/live" --check; }

cases=$((cases + 1))
check "$resolved" 2>"$tmp/err" || fail "a resolved live scenario: $(head -c 400 "$tmp/err")"
edit period0 's["workload"]["frame_period_s"] = 0'
expect_exit2 "period0.json: field 'workload.frame_period_s': expected a finite number above 0" \
  check "$tmp/period0.json"
edit engine5 's["engine"] = 5'
expect_exit2 "engine5.json: field 'engine': expected an object, got 5" check "$tmp/engine5.json"
edit nan 's["horizon_s"] = float("nan")'
expect_exit2 "nan.json: field 'horizon_s': expected a finite number" check "$tmp/nan.json"
edit list 's = [s]'
expect_exit2 "list.json: expected a JSON object" check "$tmp/list.json"
edit noengine 'del s["engine"]'
expect_exit2 "noengine.json: field 'engine': missing" check "$tmp/noengine.json"

# vllm_live.sh stops at its arguments; were it to reach the venv, pip would find no index.
export PIP_NO_INDEX=1 PIP_INDEX_URL=http://127.0.0.1:9/
live=("$src/scripts/vllm_live.sh" --venv "$tmp/venv" --out "$tmp/out")
expect_exit2 "--scenario $tmp/nothing.json: no such readable file" \
  "${live[@]}" --scenario "$tmp/nothing.json"
expect_exit2 "--threads: expected a positive integer" \
  "${live[@]}" --scenario "$resolved" --threads 0
[ -e "$tmp/venv" ] && fail "vllm_live.sh began a venv before checking its arguments"

# A damaged live run: live_compare.py names the file, exit 2.
mkdir -p "$tmp/runs/unbounded_stall"
cp -r "$src/results/live/unbounded_stall/live" "$tmp/runs/unbounded_stall/"
echo '{"vllm_version": ' >"$tmp/runs/unbounded_stall/live/run.json"
compare=("$py" "$src/scripts/live_compare.py" --check --metronome "$bin"
  --scenarios "$src/scenarios/live" "$tmp/runs/unbounded_stall")
expect_exit2 "unbounded_stall/live/run.json: not JSON" "${compare[@]}"
finish inputs
