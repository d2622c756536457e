#!/usr/bin/env bash
# `metronome book`: a live run's records booked by the simulator's ledger. Against an outside
# count of the committed records (served: last token by the horizon; due: served, or released by
# the horizon less silence_after_s, so that a frame still in time at the horizon is not yet due;
# silent: due without a last token within silence_after_s), the same bytes on a rerun,
# the folder written as simulate writes one, and records of another scenario refused (exit 2
# naming the file, line and field).
#   book_test.sh <metronome binary> <source dir>
set -u
source "$(dirname "$0")/../cli/cli_lib.sh"
py=/usr/bin/python3

for case in unbounded_stall per_frame_prefix aimd_unbounded; do
  rec="$src/results/live/$case/live" scen="$src/scenarios/live/$case.json"
  cases=$((cases + 1))
  if ! "$bin" book --scenario "$scen" --records "$rec" --out "$tmp/$case" >/dev/null 2>"$tmp/err"; then
    fail "book $case: $(head -c 400 "$tmp/err")"
    continue
  fi
  cases=$((cases + 1))
  for f in summary.json timeseries.csv scenario.json; do
    [ -s "$tmp/$case/$f" ] || fail "book $case: $f missing"
  done
  cases=$((cases + 1))
  "$bin" book --scenario "$scen" --records "$rec" --out "$tmp/${case}_again" >/dev/null 2>&1
  cmp -s "$tmp/$case/summary.json" "$tmp/${case}_again/summary.json" &&
    cmp -s "$tmp/$case/timeseries.csv" "$tmp/${case}_again/timeseries.csv" ||
    fail "book $case: a rerun wrote other bytes"
  cases=$((cases + 1))
  msg=$("$py" - "$tmp/$case/summary.json" "$rec/frames.csv" <<'PY'
import csv, json, sys
j = json.load(open(sys.argv[1]))
s, r = j["scenario"], j["result"]
h, silence = s["horizon_s"], s["engine"]["silence_after_s"]
rows = list(csv.DictReader(open(sys.argv[2])))
done = [x for x in rows if float(x["release_s"]) <= h and x["done_s"] != "" and float(x["done_s"]) <= h]
due = done + [x for x in rows if x not in done and float(x["release_s"]) + silence <= h]
silent = [x for x in due if x["done_s"] == "" or float(x["done_s"]) - float(x["release_s"]) > silence]
want = {"frames_due": len(due), "frames_served": len(done), "frames_silent": len(silent)}
bad = [f"{k} {r[k]} (counted {v})" for k, v in want.items() if r[k] != v]
print("; ".join(bad))
PY
)
  [ -z "$msg" ] || fail "book $case: $msg"
done

# Records of another scenario, or damaged ones, are refused.
rec="$src/results/live/unbounded_stall/live" scen="$src/scenarios/live/unbounded_stall.json"
# (another scenario of the same name: the file's field changed, as --set may not)
other() {  # other FIELD VALUE: the scenario with workload.FIELD = VALUE, as $tmp/other.json
  $py -c 'import json, os, sys; j = json.load(open(sys.argv[1])); w = j["workload"]
*path, last = sys.argv[2].split("."); [w := w[p] for p in path]; w[last] = json.loads(sys.argv[3])
c = j["cost_model"]; c["file"] = os.path.join(os.path.dirname(sys.argv[1]), c["file"])
json.dump(j, open(sys.argv[4], "w"))' "$scen" "$1" "$2" "$tmp/other.json"
}
other frame_period_s 0.2
expect_error 'frames.csv:[0-9]+: release_s .* expected .*not a recording of this scenario' \
  book --scenario "$tmp/other.json" --records "$rec"
other arrival.sessions 4
expect_error 'frames.csv:[0-9]+: session [4-7]: expected a caller of the scenario \(0 to 3\)' \
  book --scenario "$tmp/other.json" --records "$rec"
# --set changes how the run is read, never what ran: the pool the usage is a fraction of is vLLM's
expect_error -- '--set engine.num_gpu_blocks: book reads a run as it was recorded' \
  book --scenario "$scen" --set engine.num_gpu_blocks=5 --records "$rec"
expect_error -- '--set workload.arrival.sessions: book reads a run as it was recorded' \
  book --scenario "$scen" --set workload.arrival.sessions=4 --records "$rec"
# A recording that says what vLLM was started with is checked against the scenario's pool.
mkdir -p "$tmp/said"
cp "$rec"/* "$tmp/said/"
said() {  # said BLOCKS: the run.json of $rec with engine_config.num_gpu_blocks = BLOCKS
  $py -c 'import json, sys; j = json.load(open(sys.argv[1]))
j["engine_config"] = {"num_gpu_blocks": int(sys.argv[2]), "block_size": 32}
json.dump(j, open(sys.argv[3], "w"))' "$rec/run.json" "$1" "$tmp/said/run.json"
}
said 161
expect_error 'said/run.json: engine_config.num_gpu_blocks: vLLM ran with 161, the scenario.s is 160' \
  book --scenario "$scen" --records "$tmp/said"
said 160
cases=$((cases + 1))
"$bin" book --scenario "$scen" --records "$tmp/said" >/dev/null 2>"$tmp/err" ||
  fail "book with a matching engine_config: $(head -c 300 "$tmp/err")"
mkdir -p "$tmp/cut"
cp "$rec/run.json" "$tmp/cut/"
grep -v '^3,7,' "$rec/frames.csv" >"$tmp/cut/frames.csv"
expect_error 'session 3 frame 7 \(released at .*\) is missing' book --scenario "$scen" --records "$tmp/cut"
sed 's/^3,7,\([^,]*\),\([^,]*\),\([^,]*\),[^,]*,/3,7,\1,\2,\3,-1,/' "$rec/frames.csv" >"$tmp/cut/frames.csv"
expect_error 'frames.csv:[0-9]+: done_s .*expected at or after release_s' book --scenario "$scen" --records "$tmp/cut"
# Values no recording holds: negative tokens, a finish 1e300 s into the run.
sed 's/^3,7,\(.*\),[^,]*$/3,7,\1,-5/' "$rec/frames.csv" >"$tmp/cut/frames.csv"
expect_error 'frames.csv:[0-9]+: tokens: expected 0 to 1e9, got -5' book --scenario "$scen" --records "$tmp/cut"
sed 's/^3,7,\([^,]*\),\([^,]*\),\([^,]*\),[^,]*,/3,7,\1,\2,\3,1e300,/' "$rec/frames.csv" >"$tmp/cut/frames.csv"
expect_error 'frames.csv:[0-9]+: done_s: expected 0 to 1e9, got 1e\+300' book --scenario "$scen" --records "$tmp/cut"
expect_error 'frames.csv.*(missing|No such file|not found)' book --scenario "$scen" --records "$tmp/nothing"
# A frames.csv a spreadsheet saved (a byte-order mark first) books as the plain one
mkdir -p "$tmp/bom"
cp "$rec"/* "$tmp/bom/"
{ printf '\xef\xbb\xbf'; cat "$rec/frames.csv"; } >"$tmp/bom/frames.csv"
cases=$((cases + 1))
"$bin" book --scenario "$scen" --records "$tmp/bom" --out "$tmp/bom_out" >/dev/null 2>"$tmp/err" &&
  cmp -s "$tmp/bom_out/timeseries.csv" "$tmp/unbounded_stall/timeseries.csv" ||
  fail "book: a frames.csv with a byte-order mark: $(head -c 300 "$tmp/err")"
# Another scenario's recording with the same callers (a window changes no release)
expect_error 'run.json: scenario: the run drove "live-sliding-window", not the scenario given \("live-unbounded-stall"\)' \
  book --scenario "$scen" --records "$src/results/live/sliding_window/live"
# Damaged controller and metrics logs: a cap below -1, a negative signal, time going back, negative
# waiting requests
arec="$src/results/live/aimd_windowed/live" ascen="$src/scenarios/live/aimd_windowed.json"
mkdir -p "$tmp/adm"
cp "$arec"/* "$tmp/adm/"
damage() {  # FILE SED-EXPRESSION: the recording with one line of FILE changed
  cp "$arec/$1" "$tmp/adm/$1" && sed -i "$2" "$tmp/adm/$1"
}
damage admission.csv '3s/^\([^,]*\),\([^,]*\),\([^,]*\),\([^,]*\),[^,]*,/\1,\2,\3,\4,-6,/'
expect_error 'admission.csv:3: cap: expected -1 \(none\) or >= 0, got -6' book --scenario "$ascen" --records "$tmp/adm"
damage admission.csv '3s/^\([^,]*\),[^,]*,/\1,-4,/'
expect_error 'admission.csv:3: signal_ms: expected a latency >= 0' book --scenario "$ascen" --records "$tmp/adm"
damage admission.csv '3s/^[^,]*,/0.5,/'
expect_error 'admission.csv:3: t_s: expected 1 to 1e9 \(rows in time order\), got 0.5' book --scenario "$ascen" --records "$tmp/adm"
cp "$arec/admission.csv" "$tmp/adm/"
damage metrics.csv '3s/^\(\([^,]*,\)\{4\}\)[^,]*,/\1-1,/'
expect_error 'metrics.csv:3: num_requests_waiting: expected >= 0, got -1' book --scenario "$ascen" --records "$tmp/adm"
finish book
