#!/usr/bin/env bash
# A user's own model and traffic: the silent traps a user met with a Qwen2.5-7B-based
# speech model on one H200, 200 callers, 1 s frames of 30 input and 10 output tokens. Each check
# is one trap: the GPU's memory as the device reports it and vLLM's own block count, KV tokens per
# frame inherited from the default scenario, a token budget the frame scheduler ignores, units and
# meanings (a deadline in ms, a window longer than the call or the context, a missing KV-head
# count), and the printed statistics (late vs never answered).
#   user_model_cli_test.sh <metronome binary> <source dir>
set -u
source "$(dirname "$0")/cli_lib.sh"
py=/usr/bin/python3
# warns <regex> <args...>: exit 0 and a "metronome: warning:" on stderr matching the regex.
warns() {
  local want=$1
  shift
  cases=$((cases + 1))
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [[ $rc -ne 0 ]] || ! grep -Eq -- "^metronome: warning: .*$want" "$tmp/err"; then
    fail "metronome $* -> rc=$rc, want a warning /$want/; stderr: $(head -c 600 "$tmp/err")"
  fi
}
# quiet <args...>: exit 0 and no warning.
quiet() {
  cases=$((cases + 1))
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [[ $rc -ne 0 ]] || grep -q "warning" "$tmp/err"; then
    fail "metronome $* -> rc=$rc, want no warning; stderr: $(head -c 600 "$tmp/err")"
  fi
}
user=(--set model=qwen2.5-omni-7b --set workload.frame_period_s=1 --set workload.arrival.sessions=200
  --set workload.input_tokens_per_frame=30 --set workload.output_tokens_per_frame=10)

# --- 1. GPU memory as the device reports it, and vLLM's logged block count
"$bin" predict --json >"$tmp/p.json" || fail "predict --json"
$py - "$tmp/p.json" <<'PY' || fail "H200 memory is not the device-reported 143,771 MiB"
import json, sys
j = json.load(open(sys.argv[1]))
g = j["scenario"]["gpu"]
assert g["memory_bytes"] == 143771 * 2**20, g["memory_bytes"]
assert "143,771 MiB" in g["memory_source"], g
m = j["scenario"]["model"]
want = int((0.9 * 143771 * 2**20 - m["weight_bytes"] - 2e9) // (16 * 512 * 1024))
assert j["prediction"]["num_blocks"] == want, (j["prediction"]["num_blocks"], want)
PY
for gpu in h100 a100 b200; do
  "$bin" predict --json --set gpu=$gpu | $py -c '
import json, sys
g = json.load(sys.stdin)["scenario"]["gpu"]
assert g["memory_bytes"] % 2**20 == 0 and g["memory_source"], g
assert g["name"] != "b200" or g["memory_bandwidth_bytes_per_s"] == 7.672e12, g' ||
    fail "$gpu: memory not in MiB as reported, or no memory_source, or B200 bandwidth not 7.672e12"
done
"$bin" predict --set engine.num_gpu_blocks=5000 "${user[@]}" >"$tmp/nb.txt" 2>/dev/null || fail "num_gpu_blocks"
grep -q "^pool       5000 blocks" "$tmp/nb.txt" || fail "num_gpu_blocks not used: $(cat "$tmp/nb.txt")"
grep -q "engine.num_gpu_blocks = 5000 given" "$tmp/nb.txt" || fail "num_gpu_blocks not said: $(cat "$tmp/nb.txt")"
grep -q "^memory     h200 150.75 GB as the device reports it (143771 MiB)" <("$bin" predict) ||
  fail "the memory line does not say where the GPU's memory came from"
expect_error 'only one of num_gpu_blocks and its alias num_blocks' predict --set 'engine={"num_blocks": 5, "num_gpu_blocks": 6}'

# --- 2. Inherited fields: KV tokens per frame and the caller count in the name
warns 'workload.kv_tokens_per_frame 1 from the scenario file .* dropped: KV tokens per frame are now input \+ output \(30 \+ 10\)' predict "${user[@]}"
"$bin" predict --json "${user[@]}" 2>/dev/null >"$tmp/u.json"
$py - "$tmp/u.json" <<'PY' || fail "the user's scenario: KV tokens per frame or the name"
import json, sys
j = json.load(open(sys.argv[1]))
w = j["scenario"]["workload"]
assert w["kv_tokens_per_frame"] == 40, w
assert j["prediction"]["tokens_per_s_per_session"] == 40, j["prediction"]
assert j["prediction"]["t_sat_blocks_s"] is not None, j["prediction"]
assert "-200-" in j["scenario"]["name"] and "-300-" not in j["scenario"]["name"], j["scenario"]["name"]
assert any("kv_tokens_per_frame" in x for x in j["warnings"]), j
PY
# A whole arrival or a KV policy --set: the name says what runs, the comment what changed
"$bin" predict --json "${user[@]}" --set 'workload.arrival={"type":"poisson","rate_per_s":5}' \
  --set kv_policy.type=windowed --set kv_policy.window_tokens=480 2>/dev/null >"$tmp/u2.json"
$py - "$tmp/u2.json" <<'PY' || fail "a whole arrival or KV policy --set: the name"
import json, sys
s = json.load(open(sys.argv[1]))["scenario"]
assert s["name"].endswith("-poisson-windowed") and "300" not in s["name"], s["name"]
assert "callers 300 -> poisson, KV policy unbounded -> windowed" in s["comment"], s["comment"]
PY
warns 'kv_tokens_per_frame 1 is less than the input 30 tokens per frame' predict "${user[@]}" --set workload.kv_tokens_per_frame=1
quiet predict "${user[@]}" --set workload.kv_tokens_per_frame=40
quiet predict  # the default (Moshi: one KV position per step carries both streams) stays quiet

# --- 3. A token budget the frame scheduler does not use
warns 'engine.max_num_batched_tokens 2048 is ignored by engine.scheduler "frame"' predict --set engine.max_num_batched_tokens=2048
quiet predict --set engine.max_num_batched_tokens=2048 --set engine.scheduler=vllm_v1
warns 'engine.session_model "per_frame_request" is ignored by engine.scheduler "frame"' predict --set engine.session_model=per_frame_request
warns 'engine.enable_prefix_caching true is ignored by engine.scheduler "frame"' predict --set engine.enable_prefix_caching=true
quiet predict --set engine.enable_prefix_caching=true --set engine.scheduler=vllm_v1
warns 'engine.exhaustion is ignored by engine.scheduler "vllm_v1"' predict --set engine.scheduler=vllm_v1 --set engine.exhaustion=stall
quiet predict --set engine.exhaustion=preempt_recompute
# A resolved scenario.json states silence_after_s (its deadline): a new deadline moves it along.
"$bin" simulate --set horizon_s=5 --out "$tmp/resolved_run" >/dev/null 2>&1 || fail "simulate --out"
warns 'engine.silence_after_s 0.08 s from the scenario file was its deadline, and follows the new deadline \(0.06 s\)' simulate --scenario "$tmp/resolved_run/scenario.json" --set workload.deadline_s=0.06 --set horizon_s=5 --out "$tmp/resolved_rerun"
grep -q '"silence_after_s": 0.06' "$tmp/resolved_rerun/scenario.json" || fail "silence_after_s did not follow the deadline"
quiet simulate --scenario "$tmp/resolved_run/scenario.json" --set workload.deadline_s=0.06 --set engine.silence_after_s=0.08 --set horizon_s=5 --out "$tmp/resolved_rerun2"
# sweep says its grid's warnings once, naming the points where not all have them
warns 'engine.max_num_batched_tokens 100 is ignored by engine.scheduler "frame"' sweep --set engine.max_num_batched_tokens=100 --set horizon_s=5 --seeds 1 --quiet --out "$tmp/sweep_warn1"
warns 'kv_policy.window_tokens is ignored: .* \(grid point 0 of 2\)$' sweep --grid kv_policy.type=unbounded,windowed --set kv_policy.window_tokens=300 --set horizon_s=5 --seeds 1 --quiet --out "$tmp/sweep_warn2"
warns 'cost_model.file is ignored: the cost model is "corrected_roofline"' predict --set cost_model.type=corrected_roofline --set cost_model.file="$src/results/calibration/tiny_cpu.json"
# under "auto" a given file is the one run on
"$bin" predict --set model=tiny --set engine.num_gpu_blocks=256 --set cost_model.file="$src/results/calibration/tiny_cpu.json" \
  --json >"$tmp/auto_file.json" 2>/dev/null || fail "predict, auto with a file"
$py -c 'import json, sys; c = json.load(open(sys.argv[1]))["scenario"]["cost_model"]; assert c["type"] == "calibrated" and c["file"].endswith("tiny_cpu.json"), c' \
  "$tmp/auto_file.json" || fail "auto with a file did not run on it"
warns 'gpu.bf16_flops is ignored: the cost model is "calibrated", which does not price steps from it' predict --set gpu=h100 --set model=llama-2-7b --set gpu.bf16_flops=1e14
# A calibration of the model's own name is not scaled: a shape --set changes no step time, and says so
warns 'the step times do not follow model.ffn_size: the cost model is calibrated on .*llama-2-7b_h100_vidur.json, which measured model "llama-2-7b" and is taken as is' predict --set gpu=h100 --set model=llama-2-7b --set model.ffn_size=28000
quiet predict --set gpu=h100 --set model=llama-2-7b --set model.ffn_size=28000 --set model.name=llama-2-7b-wide
quiet predict --set gpu=h100 --set model=llama-2-7b --set model.ffn_size=11008  # the shape the file measured
quiet predict --set gpu=h100 --set model=llama-2-7b --set model.experts=0 --set model.weight_bytes_per_param=2  # defaults: nothing moved
quiet predict --set model.ffn_size=28000  # the roofline prices the shape
# ... and the rename it suggests has the file's scaling price the wider MLP: a slower step
for name in llama-2-7b llama-2-7b-wide; do
  "$bin" simulate --quiet --json --set gpu=h100 --set model=llama-2-7b --set model.ffn_size=28000 \
    --set model.name=$name --set horizon_s=5 >"$tmp/shape_$name.json" 2>/dev/null || fail "simulate, model.name=$name"
done
$py - "$tmp/shape_llama-2-7b.json" "$tmp/shape_llama-2-7b-wide.json" <<'PY' || fail "the renamed model's calibration was not scaled to its wider MLP"
import json, sys
same, renamed = (json.load(open(f))["result"]["reported_p50_ms"] for f in sys.argv[1:])
assert renamed > 1.3 * same, (same, renamed)
PY
cases=$((cases + 1))
warns 'gpu.roofline_correction.flops_fraction is ignored: the cost model is "roofline"' predict --set cost_model.type=roofline --set gpu.roofline_correction.flops_fraction=0.5
quiet predict --set gpu.bf16_flops=1e15
warns 'engine.gpu_memory_utilization is ignored: engine.num_gpu_blocks fixes the pool at 8000 blocks' predict --set engine.num_gpu_blocks=8000 --set engine.gpu_memory_utilization=0.5
quiet predict --set engine.gpu_memory_utilization=0.5
warns 'engine.num_gpu_blocks 20000 x 8.39 MB per block = 167.77 GB of KV is more than the 118.28 GB' predict --set engine.num_gpu_blocks=20000
quiet predict --set engine.num_gpu_blocks=14099  # what the sizing rule gives on this card
warns 'model.tie_word_embeddings is ignored: it counts weights only where they are derived from the shapes, and model moshi states weight_bytes' predict --set model.tie_word_embeddings=true
quiet predict --set model.tie_word_embeddings=true --set model.weight_bytes=null
warns 'the KV pool does not follow model.weight_bytes_per_param: model moshi states weight_bytes \(1.54e\+10 B\)' predict --set model.weight_bytes_per_param=1
quiet predict --set model.weight_bytes_per_param=1 --set model.weight_bytes=null
quiet predict --set model.weight_bytes_per_param=2  # the default: the pool is what it was
quiet predict --set model.weight_bytes_per_param=1 --set model.weight_bytes=7.7e9
# ... and null, as that warning says, drops a file's count: the pool is sized from memory again
"$bin" predict --scenario "$src/scenarios/calibrated/tiny_cpu.json" --set engine.num_gpu_blocks=null --json >"$tmp/nb.json" 2>/dev/null ||
  fail "--set engine.num_gpu_blocks=null"
grep -q '"num_blocks_overridden": false' "$tmp/nb.json" || fail "num_gpu_blocks=null kept the count: $(head -c 300 "$tmp/nb.json")"
cases=$((cases + 1))
"$bin" predict --scenario "$src/scenarios/calibrated/tiny_cpu.json" --set cost_model.file="$src/results/calibration/tiny_cpu.json" \
  >/dev/null 2>"$tmp/err" || fail "predict with a calibration file"
grep -q "cost_model.file is ignored" "$tmp/err" && fail "a calibration file a calibrated model runs on was called ignored"

# --- 4. Units and meanings
expect_error 'workload.deadline_s: expected at most 10 x frame_period_s \(10 s\), got 150: a deadline is in seconds' predict "${user[@]}" --set workload.deadline_s=150
expect_error 'workload.deadline_s: expected a number of seconds \(150 ms is 0.15\), got "150ms"' predict --set workload.deadline_s=150ms
expect_error 'frame_period_s: expected .*of seconds \(150 ms is 0.15\)' predict --set workload.frame_period_s=80ms
warns 'deadline_s 1.5 s is longer than the frame period 1 s' predict "${user[@]}" --set workload.deadline_s=1.5
win=(--set kv_policy.type=windowed --set kv_policy.window_tokens=200000 --set kv_policy.sink_tokens=4)
warns 'sinks \+ window = 200004 tokens is at least a whole call' predict "${user[@]}" "${win[@]}"
warns "longer than model qwen2.5-omni-7b's context of 32768 tokens" predict "${user[@]}" "${win[@]}"
quiet predict "${user[@]}" --set workload.kv_tokens_per_frame=40 --set kv_policy.type=windowed --set kv_policy.window_tokens=2048 --set kv_policy.sink_tokens=16
# A context cap, or the context before a periodic reset, past the trained context (32768 tokens
# at 40 per frame: 819 frames reach 32760, 820 reach 32800).
warns "positions reach 40000 tokens under context_cap 40000 tokens, past model qwen2.5-omni-7b's context of 32768" predict "${user[@]}" --set 'kv_policy={"type":"context_cap","cap_tokens":40000}'
quiet predict "${user[@]}" --set workload.kv_tokens_per_frame=40 --set 'kv_policy={"type":"context_cap","cap_tokens":32768}'
warns "positions reach 32800 tokens under periodic_reset every 820 frames" predict "${user[@]}" --set workload.kv_tokens_per_frame=40 --set 'kv_policy={"type":"periodic_reset","reset_frames":820}'
quiet predict "${user[@]}" --set workload.kv_tokens_per_frame=40 --set 'kv_policy={"type":"periodic_reset","reset_frames":819}'
# A --set of a field the section's policy type does not read does nothing: it says so (and the run
# records it). Fields a file keeps for a later `--set kv_policy.type=...` flip stay quiet.
warns '--set kv_policy.window_tokens=256: kv_policy.window_tokens is ignored: it belongs to kv_policy.type "windowed", and the type is "unbounded"' predict --set kv_policy.window_tokens=256
warns 'workload.arrival.rate_per_s is ignored: it belongs to workload.arrival.type "poisson", and the type is "all_at_once"' predict --set workload.arrival.rate_per_s=3
warns 'kv_policy.sink_tokens is ignored' predict --set 'kv_policy={"type":"unbounded","sink_tokens":4}'
quiet simulate --scenario "$src/scenarios/fleet/moshi_h200_fleet.json" --set horizon_s=2 --out "$tmp/fleet_flip0"
quiet simulate --scenario "$src/scenarios/fleet/moshi_h200_fleet.json" --set horizon_s=2 --set kv_policy.type=windowed --out "$tmp/fleet_flip1"
quiet predict --set kv_policy.type=windowed --set kv_policy.window_tokens=256
"$bin" simulate --set horizon_s=5 --set kv_policy.sink_tokens=4 --out "$tmp/ignored_run" >/dev/null 2>&1 ||
  fail "simulate with an ignored --set"
grep -q 'kv_policy.sink_tokens is ignored' "$tmp/ignored_run/summary.json" ||
  fail "summary.json does not record the ignored --set: $(head -c 600 "$tmp/ignored_run/summary.json")"
sed 's/"num_key_value_heads"/"num_key_value_head"/' "$src/tests/sim/hf_configs/qwen2.5-14b/config.json" >"$tmp/typo_config.json"
warns 'num_key_value_heads absent: 40 KV heads assumed .*the config has num_key_value_head: a misspelt num_key_value_heads\?' predict --set "model=hf:$tmp/typo_config.json"

# --- 6. Printed statistics: silent frames split into late and never answered
"$bin" simulate --set horizon_s=120 >"$tmp/sim.txt" 2>&1 || fail "simulate"
grep -Eq '^frames .* silent \([0-9.]+% answered late, [0-9.]+% never answered\)' "$tmp/sim.txt" ||
  fail "silent frames not split into late and never answered: $(cat "$tmp/sim.txt")"
grep -Eq '^latency .*p50 [0-9]+(\.[0-9]+)? ms' "$tmp/sim.txt" || fail "latency line: $(cat "$tmp/sim.txt")"

# --- 7. recommend: a cell whose N* is the offered load says so; W in seconds of conversation
"$bin" recommend --scenario "$src/scenarios/admission/moshi_h200_aimd_windowed.json" --windows 480 \
  --sinks 16 --seeds 2 --quiet --set workload.arrival.rate_per_s=0.1 >"$tmp/rec.txt" 2>&1 || fail "recommend"
grep -Eq '^FLAGGED    N\* [0-9]+ is the offered load \(nobody was turned away; 60 sessions at once' "$tmp/rec.txt" ||
  fail "recommend: no offered-load flag: $(cat "$tmp/rec.txt")"
grep -q "W = 480 tokens is 38.4 s of conversation" "$tmp/rec.txt" || fail "recommend: W in seconds: $(cat "$tmp/rec.txt")"

# --- 7a. recommend over a scenario with another bounded KV rule says each cell replaces it
"$bin" recommend --set 'kv_policy={"type":"periodic_reset","reset_frames":375}' --set horizon_s=30 \
  --windows 480 --sinks 16 --seeds 1 --quiet >"$tmp/rec_reset.txt" 2>&1 || fail "recommend (periodic_reset)"
grep -q "^kv_policy  the scenario's periodic_reset every 375 frames is replaced by each cell's window" \
  "$tmp/rec_reset.txt" || fail "recommend: no word of the replaced KV policy: $(head -c 400 "$tmp/rec_reset.txt")"

# --- 7b. recommend: callers all at once, most turned away by AIMD's starting cap, none after: the
# cap climbs with nobody to admit, and N* (its starting cap) is where the arrivals ran out
"$bin" recommend --set model=qwen2.5-omni-7b --set workload.frame_period_s=1 \
  --set workload.input_tokens_per_frame=30 --set workload.output_tokens_per_frame=10 \
  --set workload.arrival.sessions=200 --set horizon_s=120 --windows 480 --sinks 0 --seeds 2 --quiet \
  >"$tmp/rec_once.txt" 2>&1 || fail "recommend (all at once)"
grep -Eq '^FLAGGED    N\* 16 is where the arrivals ran out, not a capacity: in 2 of 2 runs' "$tmp/rec_once.txt" ||
  fail "recommend: no arrivals-ran-out flag: $(cat "$tmp/rec_once.txt")"

# --- 7c. recommend under Poisson callers who stay: latency read under the headroom bound right up
# to the line where the engine stops keeping full-step pace, so AIMD admitted past it and every
# cell missed deadlines (best: none). N* now stops at capacity's pace cap, with no flag.
poisson=("${user[@]}" --set 'workload.arrival={"type":"poisson","rate_per_s":5}' --set horizon_s=900)
"$bin" recommend "${poisson[@]}" --windows 480 --sinks 0 --seeds 2 --quiet --json \
  >"$tmp/rec_poisson.json" 2>/dev/null || fail "recommend (Poisson callers who stay)"
"$bin" capacity "${poisson[@]}" --set kv_policy.type=windowed --set kv_policy.window_tokens=480 \
  --set kv_policy.sink_tokens=0 --json --quiet >"$tmp/cap_poisson.json" 2>/dev/null || fail "capacity"
$py - "$tmp/rec_poisson.json" "$tmp/cap_poisson.json" <<'PY' || fail "recommend admitted past the pace line"
import json, sys
best = json.load(open(sys.argv[1]))["best"]
cap = json.load(open(sys.argv[2]))["capacity"]
assert best is not None and best["eligible"] and best["flagged_runs"] == 0, best
assert cap["pace_cap_sessions"] >= cap["deadline_cap_sessions"], cap
assert 0.97 * cap["pace_cap_sessions"] <= best["n_star_median"] <= cap["pace_cap_sessions"], (best, cap)
assert best["silent_frame_fraction_mean"] < 1e-3, best
PY

# --- 8. recommend: where the quality floor came from, runs too short to settle, the best quality
# within 5% of the best N*
q() {  # q <model file> <text file> <model name>: a quality output with ratios for W 240, 960
  cat <<JSON
{"config": {"model": "$1", "text": "$2"}, "model": {"name": "$3"},
 "perplexity": [{"window": null, "sinks": 0, "ppl_from": 10},
  {"window": 240, "sinks": 0, "ppl_from": 14}, {"window": 240, "sinks": 16, "ppl_from": 11},
  {"window": 960, "sinks": 0, "ppl_from": 12}, {"window": 960, "sinks": 16, "ppl_from": 10.5}]}
JSON
}
q ../.cache/quality/smollm2-135m-instruct-q4_1.gguf ../.cache/quality/prideprejudice.txt "Smollm2 135M" >"$tmp/fig8q.json"
q /models/my-7b.gguf /texts/calls.txt "My 7B" >"$tmp/myq.json"
rec=(recommend --scenario "$src/scenarios/admission/moshi_h200_aimd_windowed.json" --windows 240,960
  --sinks 0,16 --seeds 2 --quiet)
"$bin" "${rec[@]}" --quality "$tmp/fig8q.json" --max-ppl-ratio 2 >"$tmp/rq.txt" 2>&1 || fail "recommend --quality"
grep -q "^quality    perplexity ratios to full attention of SmolLM2-135M on Pride and Prejudice$" "$tmp/rq.txt" ||
  fail "recommend: the shipped quality file is not named: $(cat "$tmp/rq.txt")"
"$bin" "${rec[@]}" --quality "$tmp/myq.json" --max-ppl-ratio 2 --json >"$tmp/rq.json" 2>/dev/null || fail "recommend --json"
$py - "$tmp/rq.json" <<'PY' || fail "recommend --json: quality source, best quality within 5%"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["quality_floor"]["source"] == "My 7B [my-7b.gguf] on calls.txt", j["quality_floor"]
b, q = j["best"], j["best_quality_within"]
assert j["quality_within_fraction"] == 0.05 and q is not None, j
assert q["n_star_median"] >= 0.95 * b["n_star_median"] and q["ppl_ratio"] <= b["ppl_ratio"], (b, q)
for c in j["cells"]:
    if c["eligible"] and c["n_star_median"] >= 0.95 * b["n_star_median"]:
        assert c["ppl_ratio"] >= q["ppl_ratio"], (c, q)
PY
"$bin" "${rec[@]}" --set horizon_s=60 >"$tmp/short.txt" 2>&1 || fail "recommend (60 s)"
grep -Eq '^ +960 +76.8 .*run too short to settle' "$tmp/short.txt" ||
  fail "recommend: a window filling after half the run is not flagged: $(cat "$tmp/short.txt")"
grep -Eq '^FLAGGED    [0-9] of 2 runs too short to settle' "$tmp/short.txt" ||
  fail "recommend: the best cell's short runs are not flagged: $(cat "$tmp/short.txt")"

# A GPU's measured calibration that is not there: the analytic model runs, and says why on stderr
# (it was only in the chosen line: the same scenario gave other numbers outside the source tree).
warns 'gpu h100: measured_calibration .*nope.json cannot be read' predict --set gpu=h100 \
  --set gpu.measured_calibration="$tmp/nope.json"
quiet predict --set gpu=h100

# Frames of no token cost nothing and are always on time: accepted, and said.
warns 'are both 0: a frame carries no token' simulate --quiet --set horizon_s=2 \
  --set workload.input_tokens_per_frame=0 --set workload.output_tokens_per_frame=0 \
  --set workload.kv_tokens_per_frame=1

finish user_model_cli_test
