#!/usr/bin/env bash
# Fleets from the command line: a one-replica fleet writes the single engine's run
# folder byte for byte; a fleet run's files agree with each other and do not depend on -j; bad
# fleet input exits 2 naming the file and field.
#   fleet_cli_test.sh <metronome binary> <source dir>
set -u
source "$(dirname "$0")/cli_lib.sh"
py=/usr/bin/python3

# --- One replica is the single engine: summary.json, timeseries.csv and scenario.json
for policy in unbounded windowed; do
  common=(--set horizon_s=60 --set kv_policy.type=$policy --set kv_policy.window_tokens=480
          --set kv_policy.sink_tokens=16
          --set 'workload.arrival={"type":"poisson","rate_per_s":8}'
          --set 'workload.duration={"type":"exponential","mean_s":40}')
  "$bin" simulate "${common[@]}" --out "$tmp/one_$policy" >"$tmp/one_$policy.txt" 2>/dev/null ||
    fail "simulate $policy"
  "$bin" simulate "${common[@]}" --set 'fleet={"groups":[{"count":1}]}' \
    --out "$tmp/fleet_$policy" >"$tmp/fleet_$policy.txt" 2>/dev/null || fail "simulate fleet $policy"
  for f in summary.json timeseries.csv scenario.json; do
    cases=$((cases + 1))
    cmp -s "$tmp/one_$policy/$f" "$tmp/fleet_$policy/replicas/0/$f" ||
      fail "$policy: a one-replica fleet's replicas/0/$f differs from the single engine's"
  done
done

# --- A fleet: summary, replicas.csv and the replica folders agree; -j changes no byte
fleet='fleet={"groups":[{"name":"big","count":3},{"name":"small","count":2,"engine":{"num_gpu_blocks":400}}],"router":{"type":"least_sessions"},"gateway":{"type":"shed"}}'
run=(simulate --set horizon_s=40 --set 'workload.arrival={"type":"poisson","rate_per_s":20}'
     --set 'workload.duration={"type":"exponential","mean_s":30}' --set "$fleet")
"$bin" "${run[@]}" --out "$tmp/f1" >"$tmp/f1.txt" 2>/dev/null || fail "fleet -j1"
"$bin" "${run[@]}" --out "$tmp/f4" -j 4 >"$tmp/f4.txt" 2>/dev/null || fail "fleet -j4"
cases=$((cases + 1))
diff -r "$tmp/f1" "$tmp/f4" >/dev/null && cmp -s "$tmp/f1.txt" "$tmp/f4.txt" || fail "-j 4 changed the outputs"
grep -q '^calls      [0-9]* offered, [0-9]* placed, [0-9]* rejected' "$tmp/f1.txt" || fail "no calls line: $(cat "$tmp/f1.txt")"
$py - "$tmp/f1" <<'PY' || fail "fleet files disagree"
import csv, json, sys, os
d = sys.argv[1]
s = json.load(open(f"{d}/summary.json"))
f = s["fleet"]
assert f["replicas"] == 5 and len(s["replicas"]) == 5, f
assert f["calls_offered"] == f["calls_placed"] + f["calls_rejected"], f
assert f["calls_rejected"] == sum(f["rejected_by_reason"].values()), f
rows = list(csv.DictReader(open(f"{d}/replicas.csv")))
assert [int(r["placed"]) for r in rows] == [r["placed"] for r in s["replicas"]], rows
assert sum(int(r["frames_due"]) for r in rows) == f["frames_due"], rows
for i, r in enumerate(s["replicas"]):
    one = json.load(open(f"{d}/replicas/{i}/summary.json"))
    assert one["result"]["frames_due"] == r["frames_due"], (i, one["result"], r)
    assert one["result"]["sessions_arrived"] == r["routed"] - r["gateway_rejected"], (i, r)
    assert "prediction" not in one  # a replica's share is not the stream a prediction is for
assert s["scenario"]["fleet"]["groups"][1]["engine"]["num_blocks"] == 400, s["scenario"]["fleet"]
PY

# --- The shipped example says what docs/fleet.md says: with unbounded KV the KV-usage shedder
# refuses callers and replicas still stall; with windowed KV every caller is placed, none stalls.
ex="$src/scenarios/fleet/moshi_h200_fleet.json"
"$bin" simulate --scenario "$ex" --json >"$tmp/ex_u.json" 2>/dev/null || fail "example unbounded"
"$bin" simulate --scenario "$ex" --set kv_policy.type=windowed --json >"$tmp/ex_w.json" 2>/dev/null ||
  fail "example windowed"
$py - "$tmp/ex_u.json" "$tmp/ex_w.json" <<'PY' || fail "the example no longer shows the fleet-scale argument"
import json, sys
u = json.load(open(sys.argv[1]))["fleet"]
w = json.load(open(sys.argv[2]))["fleet"]
assert u["rejected_by_reason"].get("kv_usage", 0) > 0 and u["replicas_stalled"] > 0, u
assert u["silent_fraction"] > 0, u
# (a few frames are still in flight at the horizon: counted silent, as one engine counts them)
assert w["calls_rejected"] == 0 and w["replicas_stalled"] == 0 and w["silent_fraction"] < 1e-4, w
assert w["calls_offered"] == u["calls_offered"], (w, u)  # the same traffic
PY

# --- Autoscaling under a traffic profile: replica_counts.csv integrates to the summary's
# replica-seconds, new replicas take calls only once ready, drained ones take none after, and -j
# changes no byte.
auto=(simulate --scenario "$src/scenarios/traffic/moshi_h200_short.json" --set horizon_s=300
      --set 'fleet={"groups":[{"count":1}],"router":{"type":"least_sessions"},"autoscale":{"signal":"sessions","scale_up_above":60,"scale_down_below":20,"max_replicas":10,"startup_s":15,"interval_s":5}}')
"$bin" "${auto[@]}" --out "$tmp/a1" >"$tmp/a1.txt" 2>/dev/null || fail "autoscale -j1"
"$bin" "${auto[@]}" --out "$tmp/a4" -j 4 >"$tmp/a4.txt" 2>/dev/null || fail "autoscale -j4"
cases=$((cases + 1))
diff -r "$tmp/a1" "$tmp/a4" >/dev/null && cmp -s "$tmp/a1.txt" "$tmp/a4.txt" || fail "autoscale: -j 4 changed the outputs"
grep -q '^autoscale  signal sessions' "$tmp/a1.txt" || fail "no autoscale line: $(cat "$tmp/a1.txt")"
$py - "$tmp/a1" <<'PY' || fail "autoscale files disagree"
import csv, json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/summary.json"))
f = s["fleet"]
a = f["autoscale"]
assert a["replicas_started"] > 0 and a["replicas_drained"] > 0, a
rows = list(csv.DictReader(open(f"{d}/replica_counts.csv")))
h = s["scenario"]["horizon_s"]
t = [float(r["time_s"]) for r in rows] + [h]
area = sum(int(r["provisioned"]) * (t[i + 1] - t[i]) for i, r in enumerate(rows))
assert abs(area - f["replica_seconds"]) < 1e-6 * f["replica_seconds"], (area, f["replica_seconds"])
assert len(s["replicas"]) == f["replicas"] == 1 + a["replicas_started"], f
for i, r in enumerate(s["replicas"]):
    if r["first_call_s"] is not None:
        assert r["first_call_s"] >= r["ready_s"], r
    if r["drained_s"] is not None and r["last_call_s"] is not None:
        assert r["last_call_s"] < r["drained_s"], r
    one = json.load(open(f"{d}/replicas/{i}/summary.json"))
    assert one["result"]["sessions_arrived"] == r["routed"] - r["gateway_rejected"], (i, r)
PY

# --- One AIMD over the fleet: gateway_control.csv is the cap over time the summary sums up; the
# live count never climbs past the cap in force
"$bin" simulate --scenario "$src/scenarios/fleet/moshi_h200_fleet.json" --set horizon_s=300 \
  --set 'fleet.gateway={"type":"aimd","initial_cap":128,"increase":16}' --out "$tmp/ga" \
  >/dev/null 2>&1 || fail "fleet aimd --out"
cases=$((cases + 1))
$py - "$tmp/ga" <<'PY' || fail "gateway_control.csv disagrees with the summary"
import csv, json, sys
d = sys.argv[1]
g = json.load(open(f"{d}/summary.json"))["fleet"]["gateway_control"]
rows = list(csv.DictReader(open(f"{d}/gateway_control.csv")))
assert list(rows[0]) == ["time_s", "cap", "live_sessions", "signal_ms"], rows[0]
assert len(rows) == g["readings"] > 0, (len(rows), g)
caps = [int(r["cap"]) for r in rows]
assert caps[-1] == g["cap_final"] and min(caps + [g["cap_initial"]]) == g["cap_min"], g
assert max(caps + [g["cap_initial"]]) == g["cap_max"], g
prev, live = g["cap_initial"], 0
for r in rows:
    assert int(r["live_sessions"]) <= max(prev, live), r
    prev, live = int(r["cap"]), int(r["live_sessions"])
assert [float(r["time_s"]) for r in rows] == [float(k + 1) for k in range(len(rows))]
PY

# --- plan: the cheapest fleet that meets the tests; -j changes no byte; an unpriced GPU is refused
plan_text=(plan --scenario "$src/scenarios/traffic/moshi_h200_short.json" --gpus h100,h200 --tp 1,2
           --windows 480 --max-replicas 4)
plan=("${plan_text[@]}" --json)
"$bin" "${plan[@]}" >"$tmp/p1.json" 2>"$tmp/p1.err" || fail "plan"
"$bin" "${plan[@]}" -j 3 >"$tmp/p3.json" 2>/dev/null || fail "plan -j 3"
cases=$((cases + 1))
cmp -s "$tmp/p1.json" "$tmp/p3.json" || fail "plan: -j 3 changed the answer"
$py - "$tmp/p1.json" <<'PY' || fail "plan's answer is not the cheapest that meets the tests"
import json, sys
p = json.load(open(sys.argv[1]))
c = p["candidates"]
assert p["best"] == 0 and c[0]["fleet"]["meets"], c[0]
costs = [x["cost_per_hour"] for x in c if x["fleet"]]
assert costs == sorted(costs) and len(costs) == 4, costs
for x in c:
    f = x["fleet"]
    assert f["replicas"] * x["tensor_parallel"] * x["price_per_gpu_hour"] == x["cost_per_hour"], x
    assert f["true_p99_ms"] <= 80 and f["replicas_stalled"] == 0 and f["calls_rejected"] == 0, x
    assert x["one_fewer"] is None or not x["one_fewer"]["meets"], x
PY
# A scenario with another bounded KV rule: the plan says each candidate's KV replaces it.
"$bin" plan --scenario "$src/scenarios/traffic/moshi_h200_short.json" --gpus h200 --tp 1 --windows 480 \
  --max-replicas 2 --quiet --set 'kv_policy={"type":"context_cap","cap_tokens":2000}' >"$tmp/plan_cap.txt" 2>&1 ||
  fail "plan over a context_cap scenario"
grep -q "^kv_policy  the scenario's context_cap 2000 tokens is replaced by each candidate's KV (--kv)" \
  "$tmp/plan_cap.txt" || fail "plan: no word of the replaced KV policy: $(head -c 400 "$tmp/plan_cap.txt")"
# Over machines: shards merged print the single process's plan byte for byte (JSON and text)
"$bin" "${plan[@]}" --kv windowed,unbounded >"$tmp/pk.json" 2>/dev/null || fail "plan --kv"
"$bin" "${plan_text[@]}" --kv windowed,unbounded >"$tmp/pk.txt" 2>/dev/null || fail "plan --kv text"
for i in 0 1 2; do
  "$bin" "${plan[@]}" --kv windowed,unbounded --shard $i/3 >"$tmp/ps$i.json" 2>/dev/null ||
    fail "plan --shard $i/3"
done
"$bin" "${plan[@]}" --kv windowed,unbounded --merge "$tmp/ps2.json" "$tmp/ps0.json" "$tmp/ps1.json" \
  >"$tmp/pm.json" 2>/dev/null || fail "plan --merge"
"$bin" "${plan_text[@]}" --kv windowed,unbounded --merge "$tmp"/ps?.json >"$tmp/pm.txt" 2>/dev/null ||
  fail "plan --merge text"
cases=$((cases + 1))
cmp -s "$tmp/pk.json" "$tmp/pm.json" || fail "plan --merge: the merged JSON differs from one process's"
cmp -s "$tmp/pk.txt" "$tmp/pm.txt" || fail "plan --merge: the merged text differs from one process's"
grep -q 'unbounded KV' "$tmp/pk.txt" || fail "plan --kv unbounded: no unbounded candidate in the table"
expect_error '--shard 3/2: need N >= 1 and 0 <= I < N' "${plan[@]}" --shard 3/2
expect_error 'shard 1 of 3 is missing' "${plan[@]}" --kv windowed,unbounded --merge "$tmp/ps0.json" "$tmp/ps2.json"
expect_error 'ps0.json: search: this shard searched other candidates' "${plan[@]}" --kv windowed,unbounded --sinks 8 --merge "$tmp"/ps?.json
expect_error -- '--merge: .*/ps0.json is given twice' "${plan[@]}" --kv windowed,unbounded --merge "$tmp/ps0.json" "$tmp/ps0.json"
cp "$tmp/ps0.json" "$tmp/ps0_copy.json"
expect_error 'ps0_copy.json: shard 0 of 3 given twice' "${plan[@]}" --kv windowed,unbounded --merge "$tmp/ps0.json" "$tmp/ps0_copy.json"
expect_error '--shard excludes --merge' "${plan[@]}" --shard 0/2 --merge "$tmp/ps0.json"
# A shard edited by hand: shard 0's first searched fleet (that meets the tests, with "meets"), with
# EDIT (Python on it, `f`) applied, must be refused with the error PATTERN.
mkdir -p "$tmp/bad"
bad_shard() {  # PATTERN EDIT [meets]
  $py -c 'import json, sys; s = json.load(open(sys.argv[1])); f = [r["best"] for r in s["candidates"] if r["best"] and (sys.argv[4] != "meets" or r["best"]["meets"])][0]; exec(sys.argv[3]); json.dump(s, open(sys.argv[2], "w"))' \
    "$tmp/ps0.json" "$tmp/bad/ps0.json" "$2" "${3:-}"
  expect_error "$1" "${plan[@]}" --kv windowed,unbounded --merge "$tmp/bad/ps0.json" "$tmp/ps1.json" "$tmp/ps2.json"
}
bad_shard 'ps0.json: candidates\[[0-9]+\].best.replicas: expected a count >= 0, got -3' 'f["replicas"] = -3'
bad_shard 'ps0.json: candidates\[[0-9]+\].best.replicas: expected a whole number, got "3"' 'f["replicas"] = "3"'
# ... a fleet said to meet the tests whose p99 is past the deadline, or one failed for a made-up reason
bad_shard 'ps0.json: candidates\[[0-9]+\].best: meets true, why_not "": not the verdict of its numbers \(meets false, why_not "true p99 .* ms over the 80.0 ms deadline"\)' \
  'f["true_p99_ms"] = 1e308' meets
bad_shard 'ps0.json: candidates\[[0-9]+\].best: meets false, why_not "made up": not the verdict of its numbers \(meets true, why_not ""\)' \
  'f["meets"] = False; f["why_not"] = "made up"' meets
$py -c 'import json, sys; g = json.load(open(sys.argv[1])); g.pop("price_per_gpu_hour"); g.pop("price_source"); json.dump(g, open(sys.argv[2], "w"))' \
  "$src/scenarios/gpus/h200.json" "$tmp/unpriced.json"
expect_error 'unpriced.json: price_per_gpu_hour: expected the price of one GPU-hour' plan --scenario "$src/scenarios/traffic/moshi_h200_short.json" --gpus "$tmp/unpriced.json" --tp 1 --windows 480
expect_error '--tp: ' plan --tp 3
# A list's empty item is refused, not dropped; a lone comma does not take the next flag as a GPU.
expect_error -- '--gpus: expected comma-separated items, none of them empty, got "h100,"' plan --gpus h100,
expect_error -- '--windows: .*got "240,,480"' plan --windows 240,,480
expect_error -- '--gpus: .*got ","' plan --gpus , --tp 1
expect_error -- '--tp: 3 not in' plan --tp 1,3
expect_error -- '--kv: foo not in' plan --kv windowed,foo
expect_error -- '--sinks: .*got ",16"' recommend --sinks ,16
expect_error -- '--windows: expected a non-negative decimal integer.*"0x10"' recommend --windows 240,0x10
expect_error -- '--autoscale: startup_s: duplicate key' plan --scenario "$src/scenarios/traffic/moshi_h200_short.json" --gpus h200 --tp 1 --windows 480 --autoscale '{"signal":"sessions","startup_s":5,"startup_s":6}'
# --autoscale: each candidate also autoscaled, priced by the GPU-hours it ran
"$bin" plan --scenario "$src/scenarios/traffic/moshi_h200_short.json" --gpus h200 --tp 1 --windows 480 \
  --max-replicas 4 --autoscale '{"signal":"sessions","scale_up_above":150,"scale_down_below":50,"startup_s":5,"interval_s":2}' \
  --json >"$tmp/pa.json" 2>/dev/null || fail "plan --autoscale"
cases=$((cases + 1))
$py - "$tmp/pa.json" <<'PY' || fail "plan --autoscale: the autoscaled candidate is not priced by its GPU-hours"
import json, sys
p = json.load(open(sys.argv[1]))
c = p["candidates"]
assert sorted(x["autoscaled"] for x in c) == [False, True], c
for x in c:
    if x["fleet"] and x["autoscaled"]:
        f = x["fleet"]
        # JSON numbers carry 6 significant digits
        want = f["gpu_hours"] / (p["scenario"]["horizon_s"] / 3600) * x["price_per_gpu_hour"]
        assert abs(x["cost_per_hour"] - want) < 1e-5 * want, x
        assert f["gpu_hours"] <= f["replicas"] * p["scenario"]["horizon_s"] / 3600 * (1 + 1e-5), x
PY
expect_error '--autoscale: expected a fleet.autoscale object without max_replicas' plan --scenario "$src/scenarios/traffic/moshi_h200_short.json" --gpus h200 --tp 1 --windows 480 --autoscale '{"signal":"sessions","max_replicas":3}'
expect_error '--autoscale: expected a JSON object' plan --autoscale 'sessions'
expect_error 'plan --autoscale: fleet.autoscale.startup_s' plan --scenario "$src/scenarios/traffic/moshi_h200_short.json" --gpus h200 --tp 1 --windows 480 --autoscale '{"signal":"sessions","scale_up_above":150,"scale_down_below":50}'

# --- Bad input: exit 2, the file and the field named
echo '{"model": "moshi", "gpu": "h200", "horizon_s": 10,
  "workload": {"arrival": {"type": "all_at_once", "sessions": 3}, "duration": {"type": "fixed", "seconds": 10}},
  "fleet": {"groups": [{"count": 1}], "router": {"type": "randm"}}}' >"$tmp/bad_router.json"
expect_error 'bad_router.json: fleet.router.type: expected one of "round_robin"' simulate --scenario "$tmp/bad_router.json"
expect_error 'fleet.groups\[0\].count' simulate --set 'fleet={"groups":[{"count":0}]}'
expect_error 'fleet.groups: expected a non-empty array' simulate --set 'fleet={"groups":[]}'
expect_error 'fleet.gateway.max_kv_usage: expected a fraction in \(0, 1\]' simulate --set 'fleet={"groups":[{"count":1}],"gateway":{"type":"shed","max_kv_usage":1.2}}'
expect_error '--trace: not for a fleet scenario' simulate --set 'fleet={"groups":[{"count":1}]}' --trace "$tmp/t.json"
expect_error 'fleet.autoscale.scale_down_below: expected less than scale_up_above' simulate --set 'fleet={"groups":[{"count":1}],"autoscale":{"signal":"sessions","scale_up_above":5,"scale_down_below":9,"max_replicas":3,"startup_s":1}}'
printf 'time_s,calls_per_s\n0,1\n10,-3\n' >"$tmp/neg.csv"
expect_error "workload.arrival.profile_file: .*neg.csv:3: calls_per_s: expected 0 to 1e9" simulate --set "workload.arrival={\"type\":\"profile\",\"profile_file\":\"$tmp/neg.csv\"}"
expect_error 'workload.arrival.profile\[1\]: time_s: expected times in increasing order' simulate --set 'workload.arrival={"type":"profile","profile":[[0,1],[0,2]]}'
expect_error 'engine.tensor_parallel: expected a degree that divides model.attention_heads' simulate --set model=llama-3-70b --set engine.tensor_parallel=8 --set model.attention_heads=36 --set model.kv_heads=4
expect_error 'engine.tensor_parallel: expected one of 1, 2, 4, 8' simulate --set engine.tensor_parallel=3
expect_error 'fleet.gateway.type: expected a gateway without a control loop where the replicas run their own admission.type "aimd" .*, got "aimd"' simulate --set 'fleet={"groups":[{"count":2}],"gateway":{"type":"aimd"}}' --set admission.type=aimd
# recommend runs AIMD where the scenario has no controller: a user's admission.* fields are its own
cases=$((cases + 1))
"$bin" recommend --json --quiet --set horizon_s=5 --seeds 1 --windows 240 --sinks 0 \
  --set admission.initial_cap=7 >"$tmp/rec.json" 2>"$tmp/err" || fail "recommend with admission.initial_cap"
$py -c 'import json, sys; a = json.load(open(sys.argv[1]))["scenario"]["admission"]
assert (a["type"], a["initial_cap"]) == ("aimd", 7), a' "$tmp/rec.json" && ! grep -q 'ignored' "$tmp/err" ||
  fail "recommend dropped admission.initial_cap=7: $(cat "$tmp/err")"
# Commands that answer for one engine refuse a fleet rather than answer for one replica
for cmd in capacity recommend predict "sweep --out $tmp/sweep"; do
  # shellcheck disable=SC2086
  expect_error "moshi_h200_fleet.json: fleet: .metronome ${cmd%% *}. answers for one engine, and this scenario is a fleet of 8 replicas.*metronome plan" \
    $cmd --scenario "$src/scenarios/fleet/moshi_h200_fleet.json"
done
# A --set that cannot reach the replicas says so: a router or gateway field of another type, or a
# field a group sets for its own replicas.
cases=$((cases + 1))
fleet=(--scenario "$src/scenarios/fleet/moshi_h200_fleet.json" --set horizon_s=2)
"$bin" simulate "${fleet[@]}" --set fleet.router.by=free_blocks --set fleet.gateway.rate_per_s=0.1 \
  --out "$tmp/fleet_ignored" >/dev/null 2>"$tmp/err" || fail "simulate with ignored fleet --sets"
grep -q 'fleet.router.by is ignored: it belongs to fleet.router.type "p2c", and the type is "least_sessions"' "$tmp/err" &&
  grep -q 'fleet.gateway.rate_per_s is ignored: it belongs to fleet.gateway.type "token_bucket"' "$tmp/err" ||
  fail "ignored router/gateway --sets unsaid: $(cat "$tmp/err")"
$py -c 'import json, sys; s = json.load(open(sys.argv[1])); s["fleet"]["groups"][0]["kv_policy"] = {"type": "windowed", "window_tokens": 480, "sink_tokens": 16}; s["fleet"]["groups"][0]["engine"] = {"num_gpu_blocks": 3000}; json.dump(s, open(sys.argv[2], "w"))' \
  "$src/scenarios/fleet/moshi_h200_fleet.json" "$tmp/fleet_group.json"
cases=$((cases + 1))
"$bin" simulate --scenario "$tmp/fleet_group.json" --set horizon_s=2 --set engine.num_blocks=500 \
  --set kv_policy.type=unbounded --set engine.block_size=32 --out "$tmp/fleet_shadow" >/dev/null 2>"$tmp/err" ||
  fail "simulate with shadowed --sets"
grep -q 'engine.num_blocks=500: fleet.groups\[0\] (h200) sets its own engine.num_blocks, which its replicas run instead' "$tmp/err" &&
  grep -q 'kv_policy.type=unbounded: fleet.groups\[0\] (h200) sets its own kv_policy' "$tmp/err" &&
  ! grep -q 'block_size' "$tmp/err" || fail "shadowed --sets: $(cat "$tmp/err")"
# --set fleet=null, as that message says, runs it on one engine: the fleet's traffic on one H200.
"$bin" predict --scenario "$src/scenarios/fleet/moshi_h200_fleet.json" --set fleet=null --json >"$tmp/one.json" ||
  fail "predict --set fleet=null"
grep -q '"num_blocks": 14099' "$tmp/one.json" || fail "predict --set fleet=null: $(head -c 300 "$tmp/one.json")"
"$bin" simulate --scenario "$src/scenarios/fleet/moshi_h200_fleet.json" --set fleet=null --set horizon_s=5 \
  --out "$tmp/one_engine" >/dev/null 2>&1 || fail "simulate --set fleet=null"
[[ -f $tmp/one_engine/summary.json && ! -d $tmp/one_engine/replicas ]] ||
  fail "simulate --set fleet=null did not run one engine: $(ls "$tmp/one_engine")"

# --- A folder reused: an earlier, larger fleet's replicas are not left beside a smaller fleet's,
# nor beside one engine's (the f1 fleet has 5 replicas)
cp -r "$tmp/f1" "$tmp/reuse"
touch "$tmp/reuse/replicas/4/mine.txt"
"$bin" simulate --set horizon_s=10 --set 'workload.arrival={"type":"poisson","rate_per_s":5}' \
  --set 'fleet={"groups":[{"name":"big","count":2}],"router":{"type":"least_sessions"}}' \
  --out "$tmp/reuse" >/dev/null 2>&1 || fail "a 2-replica fleet into a 5-replica fleet's folder"
cases=$((cases + 1))
[[ "$(ls "$tmp/reuse/replicas")" == $'0\n1\n4' && "$(ls "$tmp/reuse/replicas/4")" == mine.txt ]] ||
  fail "stale replica folders: $(ls -R "$tmp/reuse/replicas" | tr '\n' ' ')"
"$bin" simulate --set horizon_s=5 --out "$tmp/reuse" >/dev/null 2>&1 || fail "one engine into a fleet's folder"
cases=$((cases + 1))
[[ ! -e $tmp/reuse/replicas.csv && ! -e $tmp/reuse/replicas/0 && -f $tmp/reuse/replicas/4/mine.txt ]] ||
  fail "one engine left the fleet's outputs: $(ls -R "$tmp/reuse" | tr '\n' ' ')"

finish fleet_cli_test
