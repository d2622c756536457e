#!/usr/bin/env bash
# Answers a user can act on: the cost model chosen by default and why,
# TTFT and time per output token beside frame latency, a run's time series under vLLM's
# Prometheus names, `metronome list`, and `make_figures.sh --only N`.
#   serving_cli_test.sh <metronome binary> <source dir>
set -u
source "$(dirname "$0")/cli_lib.sh"
py=/usr/bin/python3

# --- Item 5: the best cost model the GPU has, printed
"$bin" predict >"$tmp/p.txt" 2>&1 || fail "predict"
grep -q '^chosen     cost model corrected_roofline (the best h200 has: no measured calibration; its roofline_correction, fitted on h100)' "$tmp/p.txt" ||
  fail "h200 default is not the corrected roofline, or not said: $(cat "$tmp/p.txt")"
grep -q '^spread .*corrected_roofline [0-9.]* ms (used)' "$tmp/p.txt" || fail "spread does not mark the corrected roofline used"
"$bin" predict --set gpu=h100 --set model=llama-2-7b >"$tmp/h.txt" 2>&1 || fail "predict h100"
grep -q '^chosen     cost model calibrated (the best h100 has: its measured calibration llama-2-7b_h100_vidur.json' "$tmp/h.txt" ||
  fail "h100 default is not its measured calibration: $(cat "$tmp/h.txt")"
grep -q 'calibrated [0-9.]* ms (used)' "$tmp/h.txt" || fail "spread does not mark the calibration used: $(cat "$tmp/h.txt")"
"$bin" predict --set gpu=h100 --set model=qwen3-omni-30b-a3b >"$tmp/moe.txt" 2>&1 || fail "predict moe"
grep -q 'chosen     cost model corrected_roofline (the best h100 has: its measured calibration .* does not apply (its per-op scaling does not cover experts' "$tmp/moe.txt" ||
  fail "an MoE model on h100 does not fall back to the corrected roofline, saying why: $(cat "$tmp/moe.txt")"
"$bin" predict --set cost_model.type=roofline >"$tmp/r.txt" 2>&1 || fail "predict roofline"
! grep -q '^chosen' "$tmp/r.txt" || fail "an explicit cost model is reported as chosen"
grep -q 'roofline [0-9.]* ms (used)' "$tmp/r.txt" || fail "explicit roofline not used"
"$bin" simulate --set horizon_s=5 --json >"$tmp/s.json" 2>/dev/null || fail "simulate --json"
$py - "$tmp/s.json" <<'PY' || fail "simulate --json: the chosen cost model"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["scenario"]["cost_model"]["type"] == "corrected_roofline", j["scenario"]["cost_model"]
assert j["cost_model"].startswith("analytic: corrected roofline"), j["cost_model"]
assert "corrected_roofline (the best h200 has" in j["cost_model_chosen"], j
PY

# --- Item 8a: TTFT and time per output token beside frame latency
user=(--set model=qwen2.5-omni-7b --set workload.frame_period_s=1 --set workload.arrival.sessions=200
  --set workload.input_tokens_per_frame=30 --set workload.output_tokens_per_frame=10)
"$bin" predict "${user[@]}" >"$tmp/t.txt" 2>/dev/null || fail "predict (user)"
grep -Eq '^per frame  TTFT [0-9.]+ ms, then 9 x [0-9.]+ ms per output token = [0-9.]+ ms once its step starts \(a step of 200 sessions' "$tmp/t.txt" ||
  fail "predict: no TTFT / TPOT line: $(cat "$tmp/t.txt")"
"$bin" predict --json "${user[@]}" 2>/dev/null | $py -c '
import json, sys
c = json.load(sys.stdin)["prediction"]["service"]
assert c["ttft_ms"] > 0 and c["tpot_ms"] > 0 and c["decode_passes"] == 9, c
assert c["tpot_ms"] < c["ttft_ms"], c  # one token per session against 30' || fail "predict --json: ttft_ms, tpot_ms"
"$bin" predict --json 2>/dev/null | $py -c '
import json, sys
c = json.load(sys.stdin)["prediction"]["service"]
assert c["tpot_ms"] is None and c["decode_passes"] == 0, c' || fail "one output token: tpot_ms is not null"
"$bin" simulate --set horizon_s=20 "${user[@]}" >"$tmp/st.txt" 2>/dev/null || fail "simulate (user)"
grep -A1 '^latency ' "$tmp/st.txt" | grep -q '^per frame  TTFT' || fail "simulate: TTFT line not beside latency: $(cat "$tmp/st.txt")"

# --- Item 8b: Prometheus text under vLLM's names
"$bin" simulate --set horizon_s=120 --set engine.exhaustion=preempt_recompute --metrics "$tmp/m.prom" >/dev/null 2>&1 ||
  fail "simulate --metrics"
$py - "$tmp/m.prom" <<'PY' || fail "metrics file"
import re, sys
text = open(sys.argv[1]).read()
names = ["vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting",
         "vllm:num_preemptions_total"]
types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
assert types == {n: ("counter" if n.endswith("_total") else "gauge") for n in names}, types
series = {}
for line in text.splitlines():
    if line.startswith("#"):
        continue
    m = re.fullmatch(r'(vllm:[a-z_]+)\{model_name="moshi"\} (\S+) (\d+)', line)
    assert m, line
    series.setdefault(m[1], []).append((int(m[3]), float(m[2])))
for n in names:
    ts = [t for t, _ in series[n]]
    assert ts == [1000 * (i + 1) for i in range(120)], (n, ts[:3], len(ts))
usage = [v for _, v in series["vllm:kv_cache_usage_perc"]]
assert 0 < usage[0] < usage[30] <= max(usage) <= 1, usage[:31]  # the pool fills
pre = [v for _, v in series["vllm:num_preemptions_total"]]
assert pre == sorted(pre) and pre[-1] > 0, pre[-3:]  # past t_sat (about 59 s) it preempts
assert series["vllm:num_requests_running"][0][1] == 300, series["vllm:num_requests_running"][0]
PY
expect_error 'metrics' simulate --set horizon_s=1 --metrics "$tmp"

# --- Item 8d: metronome list
"$bin" list >"$tmp/list.txt" 2>&1 || fail "list"
for want in '^models' '^  moshi ' '^  qwen3-omni-30b-a3b .* 8 of 128' '^gpus' '^  h200 .*150.75 GB .*corrected_roofline' \
  '^  h100 .*calibrated' '^scenarios' '^  canonical/moshi_h200_windowed.json' '^fields' \
  '^  workload.deadline_s +s +period'; do
  grep -Eq -- "$want" "$tmp/list.txt" || fail "list lacks /$want/"
done
# The figures' experiment specs are not scenarios (--scenario refuses them), even one that has a
# horizon_s of its own.
! grep -q '^  experiments/' "$tmp/list.txt" || fail "list shows an experiment spec as a scenario"
# unlisted.py LIST KIND:FILE...: the fields of each JSON file that `metronome list` (LIST) does not
# name. KIND "scenario": a predict --json output's resolved scenario; "gpu" or "model": a shipped
# description file, its notes (comment, the file's source, a fit's error tables) left out.
cat >"$tmp/unlisted.py" <<'PY'
import json, re, sys
listed = set(re.findall(r"^  ([a-z_][a-z_0-9.]*) +\S+ +\S+", open(sys.argv[1]).read().split("\nfields")[1], re.M))
missing = set()
def walk(p, v, notes):
    if isinstance(v, dict):
        for k, x in v.items():
            walk(p + [k], x, notes)
    elif not (notes and ({"comment", "error", "held_out"} & set(p) or p[1:] == ["source"])):
        if ".".join(p) not in listed:
            missing.add(".".join(p))
for arg in sys.argv[2:]:
    kind, path = arg.split(":", 1)
    doc = json.load(open(path))
    if kind == "scenario":
        walk([], doc["scenario"], False)
    else:
        walk([kind], doc, True)
assert not missing, sorted(missing)
PY
# Every field of a resolved scenario (several shapes of one) is listed, with a unit and a default.
for args in "" "--scenario $src/scenarios/admission/moshi_h200_aimd_windowed.json --set engine.scheduler=vllm_v1" \
  "--set admission.type=gradient --set workload.arrival={\"type\":\"poisson\",\"rate_per_s\":1} --set workload.duration={\"type\":\"lognormal\",\"median_s\":60,\"sigma\":1}" \
  "--set model=hf:$src/tests/sim/hf_configs/qwen2.5-14b/config.json --set admission.type=static --set admission.cap=5" \
  "--scenario $src/scenarios/calibrated/tiny_cpu_windowed.json" \
  "--set engine.num_gpu_blocks=5000 --set kv_policy.type=windowed --set kv_policy.window_tokens=480" \
  "--set kv_policy={\"type\":\"periodic_reset\",\"reset_frames\":375}" \
  "--set kv_policy={\"type\":\"context_cap\",\"cap_tokens\":3000}" \
  "--set kv_policy={\"type\":\"segment_eviction\",\"segment_tokens\":160,\"segments\":3}"; do
  # shellcheck disable=SC2086
  "$bin" predict --json $args 2>/dev/null >"$tmp/f.json" || fail "predict $args"
  $py "$tmp/unlisted.py" "$tmp/list.txt" "scenario:$tmp/f.json" || fail "list misses fields of predict $args"
done
# ... and every field of every shipped GPU and model file, even those a resolved scenario never
# writes (a GPU's price, a correction its cost model does not read)
shipped=()
for f in "$src"/scenarios/gpus/*.json; do shipped+=("gpu:$f"); done
for f in "$src"/scenarios/models/*.json; do shipped+=("model:$f"); done
$py "$tmp/unlisted.py" "$tmp/list.txt" "${shipped[@]}" || fail "list misses fields of the shipped GPU or model files"

# --- Item 8c: make_figures.sh --only N runs and plots figure N only
if $py -c 'import matplotlib, numpy' 2>/dev/null; then
  "$src/scripts/make_figures.sh" --only 3 --quick --out "$tmp/figs" --metronome "$bin" -j 2 >"$tmp/mf.txt" 2>&1 ||
    fail "make_figures.sh --only 3: $(tail -5 "$tmp/mf.txt")"
  [[ -f $tmp/figs/figures/fig3_silent_failure.png && -f $tmp/figs/figures/fig3_silent_failure.pdf ]] ||
    fail "make_figures.sh --only 3: no figure 3"
  [[ $(ls "$tmp/figs/figures" | grep -vc '^fig3_') == 0 && ! -e $tmp/figs/REPORT.md ]] ||
    fail "make_figures.sh --only 3 made other figures or a report: $(ls "$tmp/figs" "$tmp/figs/figures")"
  [[ $(ls "$tmp/figs/data" | grep -v runs_log.json) == fig3 ]] || fail "make_figures.sh --only 3 ran other figures: $(ls "$tmp/figs/data")"
  grep -q '^make_figures: figure 3 (PNG + PDF) in .*no REPORT.md (--only)' "$tmp/mf.txt" || fail "make_figures.sh --only 3: $(tail -3 "$tmp/mf.txt")"
else
  echo "serving_cli_test: /usr/bin/python3 lacks matplotlib: make_figures.sh --only not checked"
fi
cases=$((cases + 1))
"$src/scripts/make_figures.sh" --only 12 >/dev/null 2>"$tmp/mf.err"
[[ $? == 2 ]] && grep -q -- "--only takes figure numbers 1-11" "$tmp/mf.err" || fail "make_figures.sh --only 12 not refused"

finish serving_cli_test
