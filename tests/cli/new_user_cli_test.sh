#!/usr/bin/env bash
# A new user's first hour: bring your own model (a model file, a HuggingFace
# config.json), overrides that survive a model swap, errors that name their file and suggest the
# nearest valid name, exit status 2 for every usage error, replay that needs --scenario.
#   new_user_cli_test.sh <metronome binary> <source dir>
set -u
source "$(dirname "$0")/cli_lib.sh"
# expect_no <regex> <args...>: stderr must not match (after the command ran, whatever its status).
expect_not() {
  local bad=$1
  shift
  "$bin" "$@" >/dev/null 2>"$tmp/err"
  if grep -Eq -- "$bad" "$tmp/err"; then fail "metronome $*: stderr matches $bad: $(cat "$tmp/err")"; fi
}
blocks() { "$bin" predict --json "$@" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["prediction"]["num_blocks"])'; }

hf=$src/tests/sim/hf_configs

# --- Bring your own model
# Llama-3.1-8B on the default H200 (143,771 MiB as the device reports it):
# floor((0.9 x 143771 x 2^20 - 2 x 8,030,261,248 - 2e9) / (16 x 131072)).
want=$(/usr/bin/python3 -c 'print(int((0.9*143771*1048576 - 2*8030261248 - 2e9) // (16*131072)))')
got=$(blocks --set "model=hf:$hf/llama-3.1-8b/config.json")
[[ "$got" == "$want" ]] || fail "hf llama-3.1-8b: $got blocks, expected $want"
# Without hf: a config.json is recognised by its field names.
got=$(blocks --set "model=$hf/llama-3.1-8b/config.json")
[[ "$got" == "$want" ]] || fail "plain path to config.json: $got blocks, expected $want"
"$bin" predict --set "model=hf:$hf/qwen2.5-14b/config.json" >"$tmp/q.txt" || fail "predict qwen2.5-14b"
grep -q "derived  model_type qwen2: bias on q, k and v" "$tmp/q.txt" || fail "qwen2 bias not reported: $(cat "$tmp/q.txt")"
grep -q "derived  weight_bytes = 2.954e+10 B" "$tmp/q.txt" || fail "qwen2.5-14b weights: $(cat "$tmp/q.txt")"
"$bin" predict --json --set "model=hf:$hf/mixtral-8x7b/config.json" >"$tmp/m.json" || fail "predict mixtral"
/usr/bin/python3 - "$tmp/m.json" <<'PY' || fail "mixtral JSON"
import json, sys
m = json.load(open(sys.argv[1]))["scenario"]["model"]
assert m["experts"] == 8 and m["experts_active"] == 2 and m["ffn_size"] == 0, m
assert abs(m["weight_bytes"] / 2 / 46.7e9 - 1) < 0.001, m["weight_bytes"]
assert m["loaded_from"].startswith("hf:") and m["notes"], m
PY
# A model file by path, relative to the working directory, and a bare relative scenario that finds
# models/ beside it as ./x.json does.
mkdir -p "$tmp/proj/models"
sed 's/"name": "tiny"/"name": "mine"/' "$src/scenarios/models/tiny.json" >"$tmp/proj/models/mine.json"
sed 's/"model": "moshi"/"model": "mine"/' "$src/scenarios/default.json" >"$tmp/proj/x.json"
(cd "$tmp/proj" && "$bin" predict --scenario x.json >"$tmp/bare.txt" 2>&1) || fail "bare relative --scenario x.json: $(cat "$tmp/bare.txt")"
(cd "$tmp/proj" && "$bin" predict --scenario ./x.json >"$tmp/dot.txt" 2>&1) || fail "--scenario ./x.json"
cmp -s "$tmp/bare.txt" "$tmp/dot.txt" || fail "x.json and ./x.json differ"
(cd "$tmp/proj" && "$bin" predict --set model=models/mine.json >/dev/null) || fail "--set model=models/mine.json"

# --- Overrides survive the swap; the name and comment follow it
a=$(blocks --set model.kv_bytes_per_element=1 --set model=llama-3-8b)
b=$(blocks --set model=llama-3-8b --set model.kv_bytes_per_element=1)
c=$(blocks --set model=llama-3-8b)
[[ "$a" == "$b" && "$a" -gt $((2 * c - 2)) ]] || fail "fp8 KV before the swap: $a blocks, after: $b, bf16: $c"
"$bin" predict --json --set model=llama-3-8b --set gpu=h100 >"$tmp/swap.json"
/usr/bin/python3 - "$tmp/swap.json" <<'PY' || fail "name and comment after a swap"
import json, sys
s = json.load(open(sys.argv[1]))["scenario"]
assert s["name"] == "default: llama-3-8b-h100-300-unbounded", s["name"]
assert "moshi replaced by llama-3-8b" in s["comment"] and "h200 replaced by h100" in s["comment"], s["comment"]
assert "Moshi callers" not in s["comment"], s["comment"]
PY

# --- Errors name their file, suggest the nearest name, exit 2
printf '{"layers": 0, "hidden_size": 64, "attention_heads": 4, "kv_heads": 4, "head_dim": 16, "weight_bytes": 1e6}' >"$tmp/bad.json"
expect_error "^metronome: error: $tmp/bad.json: layers: expected an integer" predict --set "model=$tmp/bad.json"
expect_not 'default.json' predict --set "model=$tmp/bad.json"
printf '{"layers": 2, "hidden_size": 64, "attention_heads": 4, "kv_heads": 4, "head_dim": 16, "weight_bytes": 1e6, "hiden_size": 3}' >"$tmp/typo.json"
expect_error "$tmp/typo.json: hiden_size: unknown field \(did you mean \"hidden_size\"\?\)" predict --set "model=$tmp/typo.json"
expect_error 'unknown model "moshii" \(did you mean "moshi"\?\)' predict --set model=moshii
expect_error 'unknown gpu "h20" \(did you mean "h200"\?\)' predict --set gpu=h20
expect_error 'workload.frame_perod_s: unknown field \(did you mean "frame_period_s"\?\)' predict --set workload.frame_perod_s=0.08
expect_error "$tmp/nope.json: cannot open the model file" predict --set "model=$tmp/nope.json"
expect_not 'scenarios/models//|\.json\.json' predict --set "model=$tmp/nope.json"
expect_error "nope/config.json: cannot open the HuggingFace config.json" predict --set model=hf:nope/config.json
expect_error 'did you mean "simulate"' simulat
expect_error 'did you mean "--scenario"' predict --scenaro x.json
expect_error 'did you mean "report"' calibrate reprot
expect_error 'required' predict --set
expect_error 'not expected' predict extra
expect_error 'subcommand is required' 
expect_error 'replay: --scenario: expected a scenario file' replay
# Rates as users state them.
expect_error 'tokens_per_s_per_session: expected kv_tokens_per_frame / frame_period_s = 1 / 0.08 = 12.5' predict --set workload.tokens_per_s_per_session=25
got=$(blocks --set workload.tokens_per_s_per_session=12.5)
[[ "$got" == "$(blocks)" ]] || fail "tokens_per_s_per_session agreeing with the frame: $got"
"$bin" predict --json --set workload.tokens_per_s_per_session=25 --set workload.kv_tokens_per_frame=null |
  /usr/bin/python3 -c 'import json,sys; w=json.load(sys.stdin)["scenario"]["workload"]; assert w["kv_tokens_per_frame"] == 2, w' ||
  fail "tokens_per_s_per_session=25 at 80 ms is 2 tokens per frame"

finish "new-user CLI"
