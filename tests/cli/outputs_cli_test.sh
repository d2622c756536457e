#!/usr/bin/env bash
# Consistent outputs (docs/outputs.md): durations against a frame in ms and run-clock
# times in s, numbers at 6 significant digits, one name per quantity across summary.json,
# timeseries.csv, sweep rows and the trace, goodput as frames on time per second; vLLM's names
# max_num_seqs and kv_cache_dtype with their aliases, conflicts and bad values (exit 2).
#   outputs_cli_test.sh <metronome binary> <source dir>
set -u
source "$(dirname "$0")/cli_lib.sh"
py=/usr/bin/python3

# --- Rounding: the default scenario's t_sat printed 55.040000000000006 before the rule (on the
# 13,053-block pool that the H200's datasheet 141e9 B gave; the device-reported memory gives more).
"$bin" predict --json --set engine.num_gpu_blocks=13053 >"$tmp/predict.json" || fail "predict --json exited $?"
grep -q '"t_sat_blocks_s": 55.04,' "$tmp/predict.json" ||
  fail "predict --json: t_sat_blocks_s is not 55.04: $(grep t_sat_blocks_s "$tmp/predict.json")"

# --- Runs whose outputs the checks below read.
"$bin" simulate --set horizon_s=120 --out "$tmp/run" --trace "$tmp/run/trace.json" --json \
  >"$tmp/simulate.json" || fail "simulate exited $?"
"$bin" simulate --scenario "$src/scenarios/canonical/moshi_h200_windowed.json" --set horizon_s=60 \
  --set output.sample_period_s=1.6 --out "$tmp/windowed" >/dev/null || fail "windowed simulate exited $?"
"$bin" sweep --set horizon_s=60 --seeds 2 --grid workload.arrival.sessions=100,200 --out "$tmp/sweep" \
  --quiet >/dev/null || fail "sweep exited $?"
"$bin" capacity --scenario "$src/scenarios/canonical/moshi_h200_windowed.json" --json --quiet \
  >"$tmp/capacity.json" || fail "capacity exited $?"

$py - "$tmp" <<'PY' || fail "output rules (units, rounding, names) are broken; see above"
import csv, json, math, os, sys
tmp = sys.argv[1]
bad = []
# Times on the run's clock: the only names that may end in _s (rates end in _per_s).
RUN_CLOCK = {"t_s", "t_sat_continuous_s", "t_sat_blocks_s", "t_sat_service_limited_s",
             "first_stall_s", "first_preempt_s", "first_decrease_s", "probe_s",
             "memory_cap_call_s", "busy_s", "t_sat_predicted_s", "t_sat_mean_s", "t_sat_p5_s",
             "t_sat_p95_s", "t_sat_predicted_mean_s"}

def walk(x, where):
    """Every (key, value) of an output outside its scenario echo."""
    if isinstance(x, dict):
        for k, v in x.items():
            if k == "scenario":
                continue
            yield k, v, where + "/" + k
            yield from walk(v, where + "/" + k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from walk(v, f"{where}/{i}")

def check_doc(doc, name):
    for k, v, where in walk(doc, name):
        if k.endswith("_s") and not k.endswith("_per_s") and k not in RUN_CLOCK:
            bad.append(f"{where}: a duration in seconds; expected _ms (docs/outputs.md)")
        if isinstance(v, float):
            if not math.isfinite(v):
                bad.append(f"{where}: {v}")
            elif float(f"{v:.6g}") != v:
                bad.append(f"{where}: {v!r} has more than 6 significant digits")

def check_csv_cells(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for k in rows[0]:
        if k.endswith("_s") and not k.endswith("_per_s") and k not in RUN_CLOCK:
            bad.append(f"{path}: column {k} is a duration in seconds")
    for r in rows:
        for k, v in r.items():
            if v and any(c in v for c in ".e") and not v.startswith('"'):
                try:
                    x = float(v)
                except ValueError:
                    continue
                if float(f"{x:.6g}") != x or v.lower() in ("nan", "inf", "-inf"):
                    bad.append(f"{path}: {k}={v}")
    return rows

docs = {n: json.load(open(os.path.join(tmp, n))) for n in
        ("predict.json", "simulate.json", "capacity.json", "run/summary.json",
         "sweep/aggregate.json", "sweep/sweep.json")}
for n, d in docs.items():
    check_doc(d, n)
series = check_csv_cells(os.path.join(tmp, "run", "timeseries.csv"))
windowed = check_csv_cells(os.path.join(tmp, "windowed", "timeseries.csv"))
runs = check_csv_cells(os.path.join(tmp, "sweep", "runs.csv"))
for line in open(os.path.join(tmp, "sweep", "runs.jsonl")):
    check_doc(json.loads(line), "runs.jsonl")

# One name per quantity: what the whole run, each interval and each sweep run share.
result = docs["run/summary.json"]["result"]
header = set(series[0])
SHARED = ["frames_due", "frames_served", "frames_on_time", "goodput_frames_per_s",
          "tokens_produced", "silent_frame_fraction", "deadline_miss_rate_reported",
          "reported_p50_ms", "reported_p99_ms", "true_p50_ms", "true_p99_ms", "sessions_rejected"]
for k in SHARED:
    if k not in result:
        bad.append(f"summary.json result lacks {k}")
    if k not in header:
        bad.append(f"timeseries.csv lacks {k}")
for k in ("goodput_frames_per_s", "silent_frame_fraction", "reported_p50_ms", "reported_p99_ms",
          "true_p50_ms", "true_p99_ms", "frames_due", "sessions_rejected"):
    if k not in runs[0]:
        bad.append(f"runs.csv lacks {k}")
for old in ("silent_fraction", "reported_miss_rate", "latency_reported", "latency_true"):
    if old in header or old in result or old in runs[0]:
        bad.append(f"old name {old} still written")
if docs["simulate.json"]["result"] != result:
    bad.append("simulate --json and summary.json differ")
# The trace's counters use the CSV's names.
trace = json.load(open(os.path.join(tmp, "run", "trace.json")))
arg_names = {k for e in trace["traceEvents"] if e.get("ph") == "C" for k in e["args"]}
if not arg_names <= header:
    bad.append(f"trace counter names {sorted(arg_names - header)} are not timeseries.csv columns")
if not {"pool_used_blocks", "live_sessions", "stalled_sessions"} <= arg_names:
    bad.append(f"trace counters {sorted(arg_names)}")

# Goodput is frames on time per second: over the run, and over each interval.
for name, rows, summary, horizon in (("run", series, result, 120.0),
        ("windowed", windowed, json.load(open(os.path.join(tmp, "windowed", "summary.json")))["result"], 60.0)):
    g = summary["goodput_frames_per_s"]
    if not math.isclose(g, summary["frames_on_time"] / horizon, rel_tol=1e-5):
        bad.append(f"{name}: goodput {g} != frames_on_time / horizon")
    prev = 0.0
    for r in rows:
        t = float(r["t_s"])
        want = int(r["frames_on_time"]) / (t - prev)
        if not math.isclose(float(r["goodput_frames_per_s"]), want, rel_tol=1e-5, abs_tol=1e-9):
            bad.append(f"{name} t={t}: goodput {r['goodput_frames_per_s']} != {want}")
        prev = t
if windowed and not float(windowed[-1]["goodput_frames_per_s"]) > 0:
    bad.append("the windowed run serves frames on time: its goodput is not 0")
# Units: the deadline is the frame period (80 ms for Moshi), a latency is below a second.
if docs["run/summary.json"]["deadline_ms"] != 80:
    bad.append(f"deadline_ms {docs['run/summary.json']['deadline_ms']}")
if docs["capacity.json"]["capacity"]["deadline_ms"] != 80:
    bad.append("capacity deadline_ms")
if not 1 < float(windowed[-1]["reported_p99_ms"]) < 80:
    bad.append(f"windowed reported_p99_ms {windowed[-1]['reported_p99_ms']} is not in ms")
svc = docs["predict.json"]["prediction"].get("service")
if svc and not math.isclose(svc["frame_period_ms"], 80):
    bad.append(f"service frame_period_ms {svc['frame_period_ms']}")
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY

# --- vLLM's names: max_num_seqs, with max_sessions_per_step as its alias.
echo_field() { "$bin" predict --json "${@:2}" | $py -c "import json,sys; e=json.load(sys.stdin)['scenario']['engine']; print(e.get('$1'), 'max_sessions_per_step' in e)"; }
[[ $(echo_field max_num_seqs --set engine.max_sessions_per_step=8) == "8 False" ]] ||
  fail "the alias max_sessions_per_step=8 is not echoed as max_num_seqs 8"
[[ $(echo_field max_num_seqs --set engine.max_num_seqs=9) == "9 False" ]] || fail "max_num_seqs=9 not echoed"
$py - "$src/tests/sim/golden/tiny_unbounded_stall.scenario.json" "$tmp/both.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s["engine"]["max_num_seqs"] = s["engine"]["max_sessions_per_step"] + 1
json.dump(s, open(sys.argv[2], "w"))
PY
expect_error "both.json.*max_num_seqs.*max_sessions_per_step" predict --scenario "$tmp/both.json"
expect_error "max_num_seqs.*already given.*max_sessions_per_step" predict \
  --set engine.max_num_seqs=4 --set engine.max_sessions_per_step=4
# A --set of either name replaces the file's, whichever name the file used.
[[ $(echo_field max_num_seqs --scenario "$tmp/both.json" --set engine.max_num_seqs=5) == "5 False" ]] ||
  fail "--set engine.max_num_seqs does not replace the file's max_sessions_per_step"
[[ $(echo_field max_num_seqs --scenario "$src/tests/sim/golden/tiny_unbounded_stall.scenario.json") == "8 False" ]] ||
  fail "a file's max_sessions_per_step (8) is not echoed as max_num_seqs"

# --- kv_cache_dtype: vLLM's values; model.kv_bytes_per_element as the older way.
blocks() { "$bin" predict --json "$@" | $py -c 'import json,sys; print(json.load(sys.stdin)["prediction"]["num_blocks"])'; }
b2=$(blocks)
b1=$(blocks --set model.kv_bytes_per_element=1)
for d in fp8 fp8_e4m3 fp8_e5m2; do
  [[ $(blocks --set engine.kv_cache_dtype=$d) == "$b1" ]] || fail "kv_cache_dtype=$d: not the 1-byte pool ($b1)"
done
for d in bfloat16 float16 auto; do
  [[ $(blocks --set engine.kv_cache_dtype=$d) == "$b2" ]] || fail "kv_cache_dtype=$d: not the 2-byte pool ($b2)"
done
[[ $b1 -gt $b2 ]] || fail "fp8 KV ($b1 blocks) is not a bigger pool than bf16 ($b2)"
[[ $(blocks --set engine.kv_cache_dtype=fp8 --set model.kv_bytes_per_element=1) == "$b1" ]] ||
  fail "an agreeing kv_cache_dtype and kv_bytes_per_element are refused"
# A model swap keeps the dtype (vLLM's flag is the engine's, not the model's).
[[ $(blocks --set engine.kv_cache_dtype=fp8 --set model=llama-3-8b) == \
   $(blocks --set model=llama-3-8b --set model.kv_bytes_per_element=1) ]] ||
  fail "kv_cache_dtype=fp8 does not survive model=llama-3-8b"
expect_error 'engine.kv_cache_dtype.*"auto".*"fp8".*"fp8_e4m3".*"fp8_e5m2".*"bfloat16".*"float16"' \
  predict --set engine.kv_cache_dtype=fp4
expect_error 'engine.kv_cache_dtype' predict --set engine.kv_cache_dtype=8
expect_error 'kv_bytes_per_element=1.*scenarios/default.json.*engine.kv_cache_dtype "bfloat16" stores 2 bytes' \
  predict --set engine.kv_cache_dtype=bfloat16 --set model.kv_bytes_per_element=1
$py - "$src/scenarios/canonical/moshi_h200_windowed.json" "$tmp/fp8.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
s.setdefault("engine", {})["kv_cache_dtype"] = "fp8"
json.dump(s, open(sys.argv[2], "w"))
PY
expect_error "fp8.json.*engine.kv_cache_dtype \"fp8\" stores 1 byte " \
  predict --scenario "$tmp/fp8.json" --set model.kv_bytes_per_element=2
# The resolved scenario of an fp8 run reloads as the same pool.
"$bin" simulate --scenario "$tmp/fp8.json" --set horizon_s=1 --out "$tmp/fp8run" >/dev/null || fail "fp8 simulate"
[[ $(blocks --scenario "$tmp/fp8run/scenario.json") == $(blocks --scenario "$tmp/fp8.json") ]] ||
  fail "the resolved scenario of an fp8 run does not reload to the same pool"

finish "outputs"
