#!/usr/bin/env bash
# End-to-end checks of the metronome executable: every bad-input class exits 2 with a message that
# names the field; good runs produce parseable JSON, CSV and a Perfetto trace.
#   cli_test.sh <metronome binary> <source dir>
set -u
source "$(dirname "$0")/cli_lib.sh"

printf '{ "model": "moshi", ' >"$tmp/malformed.json"
expect_error 'malformed.json: not valid JSON' simulate --scenario "$tmp/malformed.json"
expect_error 'cannot open the scenario file' simulate --scenario "$tmp/nope.json"
expect_error 'model: unknown model "gpt-17"' simulate --set model=gpt-17
expect_error 'gpu: unknown gpu "v100"' predict --set gpu=v100
expect_error 'workload.frame_period_s: expected' simulate --set workload.frame_period_s=-0.08
expect_error 'workload.frame_period_s: expected' predict --set workload.frame_period_s=0
expect_error 'kv_policy.window_tokens: expected an integer' simulate --set kv_policy.type=windowed --set kv_policy.window_tokens=-5
expect_error 'cannot hold one session' simulate --set engine.num_blocks=1 --set workload.prompt_tokens=64
expect_error 'holds no block' predict --set model.weight_bytes=5e11
expect_error 'workload.frame_perod_s: unknown field' simulate --set workload.frame_perod_s=0.08
expect_error 'expected key=value' simulate --set horizon_s
expect_error 'engine.exhaustion: expected one of' simulate --set engine.exhaustion=crash
expect_error 'policy "s4x256", expected full' quality --policy s4x256
expect_error 'give both or neither' quality --grid-windows 128
expect_error 'nope.gguf: cannot open the GGUF model file' quality --model "$tmp/nope.gguf"
printf 'GGUF\007\000\000\000' >"$tmp/v7.gguf"
expect_error 'v7.gguf: byte 8: version 7, expected 2 or 3' quality --model "$tmp/v7.gguf"

# A good run: JSON to stdout, files in --out, a trace.
"$bin" simulate --set horizon_s=120 --json --out "$tmp/run" --trace "$tmp/trace.json" >"$tmp/run.json" ||
  fail "simulate exited $?"
/usr/bin/python3 - "$tmp" <<'PY' || fail "the outputs do not parse"
import csv, json, math, sys
tmp = sys.argv[1]
run = json.load(open(f"{tmp}/run.json"))
assert run == json.load(open(f"{tmp}/run/summary.json")), "stdout and summary.json differ"
r, p = run["result"], run["prediction"]
assert r["crashed"] is True, "default scenario must hit the cliff"
assert abs(r["first_stall_s"] - p["t_sat_blocks_s"]) / p["t_sat_blocks_s"] < 0.01
assert run["scenario"]["model"]["name"] == "moshi"
assert r["frames_served"] <= r["frames_due"] and r["frames_silent"] > 0
rows = list(csv.DictReader(open(f"{tmp}/run/timeseries.csv")))
assert len(rows) == 120, len(rows)
for row in rows:
    for k, v in row.items():
        assert v == "" or math.isfinite(float(v)), (k, v)
    assert int(row["pool_used_blocks"]) <= p["num_blocks"]
trace = json.load(open(f"{tmp}/trace.json"))
kinds = {e["ph"] for e in trace["traceEvents"]}
assert {"X", "C", "i"} <= kinds, kinds
PY

# Same seed, same bytes.
a=$("$bin" simulate --set horizon_s=60 --json --seed 3 --set 'workload.arrival={"type":"poisson","rate_per_s":5}')
b=$("$bin" simulate --set horizon_s=60 --json --seed 3 --set 'workload.arrival={"type":"poisson","rate_per_s":5}')
[[ "$a" == "$b" ]] || fail "same seed differs"

# Help explains options with units and defaults.
"$bin" simulate --help | grep -q -- "--scenario" || fail "simulate --help"
"$bin" --help | grep -q "predict" || fail "--help lists predict"

# Every shipped scenario loads and predicts.
for f in "$src"/scenarios/default.json "$src"/scenarios/canonical/*.json; do
  "$bin" predict --scenario "$f" --json >/dev/null || fail "predict $f"
done

# predict under vLLM's scheduler: a resumable session that states no KV growth grows by n_in + n_out
# - 1, and the pool fills where simulate's vLLM model stalls (58.88 s, docs/vllm.md); with fewer
# max_num_seqs than callers it says the first-order t_sat counts callers vLLM leaves waiting.
"$bin" predict --set engine.scheduler=vllm_v1 --set engine.max_num_seqs=512 \
  --set workload.kv_tokens_per_frame=null >"$tmp/v.txt" 2>&1 || fail "predict vllm_v1"
grep -q '58.88 s (whole blocks)' "$tmp/v.txt" && ! grep -q 'max_num_seqs' "$tmp/v.txt" ||
  fail "predict vllm_v1 growth: $(grep -E 't_sat|warning' "$tmp/v.txt")"
"$bin" predict --set engine.scheduler=vllm_v1 >"$tmp/v.txt" 2>&1 || fail "predict vllm_v1 256"
grep -q 'warning    engine.max_num_seqs 256 is below the 300 callers live at once' "$tmp/v.txt" ||
  fail "predict vllm_v1 max_num_seqs: $(grep -E 't_sat|warning' "$tmp/v.txt")"
# Callers arriving over time: the engine is checked with those live when the pool fills (about 5/s
# x 86 s), not every caller of the horizon, and keeps up (simulate stalls at t_sat, 85.33 s).
"$bin" predict --set 'workload.arrival={"type":"poisson","rate_per_s":5}' --set horizon_s=600 \
  >"$tmp/p.txt" 2>&1 || fail "predict poisson"
grep -q 'one period.s frames of 414 sessions' "$tmp/p.txt" && ! grep -q 'cannot keep up' "$tmp/p.txt" ||
  fail "predict poisson keep-up: $(grep -E 'spread|warning' "$tmp/p.txt")"
# capacity under a context cap probes and paces the calls as they end, at the cap (600 tokens, 48 s)
"$bin" capacity --json --quiet --set engine.num_gpu_blocks=40000 --set horizon_s=100 \
  --set 'kv_policy={"type":"context_cap","cap_tokens":600}' >"$tmp/c.json" 2>/dev/null || fail "capacity context_cap"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["capacity"]
assert c["probe_s"] == 48 and c["pace_cap_sessions"] > 700 and c["memory_cap_sessions"] == 40000 // 38, c' \
  "$tmp/c.json" || fail "capacity context_cap: $(head -c 600 "$tmp/c.json")"

# A new user's review: --seed beside --set seed is refused, not one of them silently taken.
expect_error -- '--seed 5 and --set seed=7 both give the seed' simulate --seed 5 --set seed=7
# A typo of a field read under its alias is offered the field (it was offered nothing).
expect_error 'engine.max_num_seq: unknown field \(did you mean "max_num_seqs"' simulate --set engine.max_num_seq=8
# admit runs nothing: --json and --seed are not its options (they were accepted and did nothing).
expect_error 'not expected: --json' admit --json
# The memory guard under no controller shows its refusals (they were in sessions_rejected only).
"$bin" simulate --quiet --scenario "$src/scenarios/canonical/moshi_h200_windowed.json" \
  --set admission.memory_guard=on --set workload.arrival.sessions=600 --set horizon_s=5 >"$tmp/g.txt" 2>&1 ||
  fail "simulate with the memory guard alone"
grep -q 'admission  none with the memory guard: 160 of 600 callers rejected by the guard (memory cap 440)' \
  "$tmp/g.txt" || fail "memory guard alone: $(grep -E 'admission|load' "$tmp/g.txt")"
# Padding before the deadline: a padded frame is not on time (95% were padded, all "on time").
"$bin" simulate --quiet --json --set horizon_s=5 --set engine.silence_after_s=0.01 >"$tmp/pad.json" 2>/dev/null ||
  fail "simulate with silence_after_s under the deadline"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["result"]
assert r["frames_silent"] > r["frames_due"] // 2 and r["frames_on_time"] <= r["frames_due"] - r["frames_silent"], r' \
  "$tmp/pad.json" || fail "padded frames on time: $(head -c 400 "$tmp/pad.json")"
# The time series at the cliff: the frames left unanswered make its true quantiles censored, as the
# run's own are (the CSV showed 30 ms with 83% of the interval's frames never answered), and a
# monitor's misses count frames answered after the deadline.
"$bin" simulate --quiet --set horizon_s=62 --out "$tmp/cliff" >/dev/null 2>&1 || fail "simulate to the cliff"
python3 - "$tmp/cliff/timeseries.csv" <<'PY' || fail "time series at the cliff"
import csv, sys
rows = {r["t_s"]: r for r in csv.DictReader(open(sys.argv[1]))}
assert rows["60"]["true_p50_ms"] != "" and rows["61"]["true_p50_ms"] == "", (rows["60"], rows["61"])
PY
"$bin" simulate --quiet --set horizon_s=3 --set engine.max_num_seqs=16 --set engine.silence_after_s=0.2 \
  --out "$tmp/slow" >/dev/null 2>&1 || fail "simulate a slow engine"
python3 - "$tmp/slow/timeseries.csv" <<'PY' || fail "reported misses per interval"
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[0]
on_time, due = int(r["frames_on_time"]), int(r["frames_due"])
assert float(r["deadline_miss_rate_reported"]) > 0.5 and on_time < due / 2, r
PY

finish "CLI checks"
