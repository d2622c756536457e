#!/usr/bin/env bash
# Hostile input and failing disks, end to end: every case is a clear error (exit 2
# naming the file or option, the field and what was expected; nothing on stdout) or a correct run;
# a full disk (/dev/full) is never exit 0; a killed rerun never leaves a folder that looks
# complete; two writers never share a folder; sweeps are sized before they are expanded and stop
# on SIGTERM while expanding; replay checks its inputs before the wall-clock run.
#   hostile_cli_test.sh <metronome binary> <source dir>
set -u
source "$(dirname "$0")/cli_lib.sh"

# expect_full_disk <regex> <args...> with stdout to /dev/full: exit 1 (not 0, not a crash).
expect_full_disk() {
  local want=$1
  shift
  cases=$((cases + 1))
  "$bin" "$@" >/dev/full 2>"$tmp/err"
  local rc=$?
  if [[ $rc -ne 1 ]] || ! grep -Eq -- "$want" "$tmp/err"; then
    fail "metronome $* >/dev/full -> rc=$rc, stderr: $(head -c 600 "$tmp/err")"
  fi
}

# --- Malformed and extreme JSON
/usr/bin/python3 -c 'print("{\"model\":" * 60000 + "1" + "}" * 60000)' >"$tmp/deep.json"
expect_error 'deep.json: model(\.model)+.*: nested deeper than 64 levels' simulate --scenario "$tmp/deep.json"
/usr/bin/python3 -c 'print("{\"workload\": {\"arrival\": " + "[" * 60000 + "]" * 60000 + "}}")' >"$tmp/deep2.json"
expect_error 'deep2.json: workload.arrival\[0\].*nested deeper' predict --scenario "$tmp/deep2.json"
printf '{"model": "moshi", "gpu": "h200", "horizon_s": 1e309}' >"$tmp/big.json"
expect_error 'big.json: horizon_s: number 1e309 is out of range \(expected a finite number' simulate --scenario "$tmp/big.json"
expect_error -- '--set horizon_s=1e309: number 1e309 is out of range' simulate --set horizon_s=1e309
printf '{"model": "moshi", "gpu": "h200", "horizon_s": 1e-400}' >"$tmp/tiny.json"
expect_error 'tiny.json: horizon_s: number 1e-400 is too small for a double and would read as 0' simulate --scenario "$tmp/tiny.json"
expect_error -- '--set workload.deadline_s=1e-999: number 1e-999 is too small' simulate --set workload.deadline_s=1e-999
expect_error -- '--set workload=\{"frame_period_s": -1e999\}: frame_period_s: number -1e999' predict --set 'workload={"frame_period_s": -1e999}'
expect_error '/dev/zero: is a character device, expected the scenario file as a regular file' simulate --scenario /dev/zero
expect_error 'is a directory, expected the scenario file' simulate --scenario "$tmp"
printf '{"model": "moshi", "gpu": "h200", "horizon_s": 60, "horizon_s": 6}' >"$tmp/dup.json"
expect_error 'dup.json: horizon_s: duplicate key' simulate --scenario "$tmp/dup.json"
expect_error -- 'workload.arrival=.*: sessions: duplicate key' predict --set 'workload.arrival={"type":"all_at_once","sessions":3,"sessions":4}'
/usr/bin/python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s["horizon_s"] = list(range(100000)); print(json.dumps(s))' \
  "$src/scenarios/default.json" >"$tmp/wide.json"
expect_error 'wide.json: horizon_s: expected .*got an array of 100000 values$' predict --scenario "$tmp/wide.json"

# --- Derived quantities out of range: the field that caused it
expect_error 'gpu.memory_bandwidth_bytes_per_s = 1 B/s.*expected at most 3600 s' simulate --set gpu.memory_bandwidth_bytes_per_s=1
expect_error 'gpu.bf16_flops = 1 FLOP/s' sweep --out "$tmp/sw_flops" --set gpu.bf16_flops=1 --set horizon_s=10
# Unit slips: a figure in GB or TB where bytes are meant
expect_error 'model.weight_bytes: expected bytes: at least 0.125 per parameter its shapes count \(6.839e\+09 parameters: 8.55e\+08 B.*got 15.4$' predict --set model.weight_bytes=15.4
expect_error 'engine.activation_reserve_bytes: expected bytes: 0, or at least 1e6 \(2 GB is 2e9\), got 2$' predict --set engine.activation_reserve_bytes=2
# A null field is absent, the inline profile read (not "unknown field")
"$bin" predict --set 'workload.arrival={"type":"profile","profile":[[0,1],[10,2]],"profile_file":null}' >"$tmp/out" 2>&1 ||
  fail "profile_file null beside an inline profile: $(tail -1 "$tmp/out")"
cal="$src/results/calibration/tiny_cpu.json"
/usr/bin/python3 - "$cal" "$tmp" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["fit"]["terms"][0]["coefficient"] = 1e308
json.dump(c, open(sys.argv[2] + "/cal_1e308.json", "w"))
s = json.dumps(json.load(open(sys.argv[1])))
open(sys.argv[2] + "/cal_1e309.json", "w").write(s.replace('"r2": ', '"r2": 1e309, "x": ', 1))
PY
expect_error 'cal_1e308.json: fit.terms\[0\].coefficient: expected a number in \[-3600' calibrate report --calibration "$tmp/cal_1e308.json"
expect_error 'cal_1e309.json: fit.r2: number 1e309 is out of range' calibrate report --calibration "$tmp/cal_1e309.json"
expect_error 'cal_1e308.json: fit.terms\[0\].coefficient' simulate --set model=tiny --set cost_model.type=calibrated --set cost_model.file="$tmp/cal_1e308.json"
cases=$((cases + 1))
"$bin" calibrate report --calibration "$cal" >"$tmp/report.txt" 2>&1 || fail "calibrate report exited $?"
"$bin" calibrate report --calibration "$cal" --json >"$tmp/report.json" 2>/dev/null
if tail -n +3 "$tmp/report.txt" | grep -Eqiw 'inf|nan|-inf'; then fail "calibrate report prints inf/nan"; fi
/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]), parse_constant=lambda c: sys.exit("non-finite " + c))' "$tmp/report.json" || fail "calibrate report --json is not finite JSON"

# --- Numeric options: NaN, inf, octal, hex, empty, negative
for v in nan NaN inf -inf 1e999 0x1p3 ''; do
  expect_error -- "--probe-s: expected a finite decimal number" capacity --probe-s "$v"
  expect_error -- "--fraction: expected a finite decimal number" capacity --fraction "$v"
done
for v in 010 0x10 '' -1 +1 1e3 ' 1' 18446744073709551616999; do
  expect_error -- "--seed: expected a non-negative decimal integer" predict --seed "$v"
done
expect_error -- "--jobs: expected a non-negative decimal integer" sweep --out "$tmp/sw_j" -j nan
expect_error -- "--num-blocks: expected a non-negative decimal integer" replay --num-blocks nan
expect_error -- '--seeds 010: "010" is not a non-negative decimal integer without leading zeros' sweep --out "$tmp/sw_s" --seeds 010
expect_error -- '--seeds 18446744073709551616: 18446744073709551616 is out of range' sweep --out "$tmp/sw_s" --seeds 18446744073709551616
expect_error -- '--seeds 1,1,1: seed 1 is given twice' sweep --out "$tmp/sw_s" --seeds 1,1,1
# --seed 10 is seed 10 (not octal 8, not the default).
cases=$((cases + 1))
"$bin" predict --seed 10 --json | grep -q '"seed": 10' || fail "--seed 10 is not seed 10"

# --- An empty sample has no percentiles: null, never 0.0
cases=$((cases + 1))
"$bin" simulate --set horizon_s=1 --set workload.arrival.sessions=0 --json >"$tmp/empty.json" || fail "empty run exited $?"
/usr/bin/python3 - "$tmp/empty.json" <<'PY' || fail "percentiles of an empty sample are not null"
import json, sys
r = json.load(open(sys.argv[1]))["result"]
assert r["frames_due"] == 0, r["frames_due"]
for side in ("reported", "true"):
    for q in ("p50_ms", "p95_ms", "p99_ms"):
        assert r[f"{side}_{q}"] is None, (side, q, r[f"{side}_{q}"])
PY

# --- Output paths that are user errors: exit 2 with the path
touch "$tmp/afile"
expect_error -- "--trace $tmp: is a directory, expected a file path" simulate --set horizon_s=5 --trace "$tmp"
expect_error -- "--trace $tmp/no/such/dir/t.json: cannot open for writing" simulate --set horizon_s=5 --trace "$tmp/no/such/dir/t.json"
expect_error -- "--out $tmp/afile: is a file, expected a folder" simulate --set horizon_s=5 --out "$tmp/afile"
expect_error -- "--out /dev/full/x: cannot create the folder" simulate --set horizon_s=5 --out /dev/full/x
expect_error -- "--out $tmp/afile: is a file" sweep --set horizon_s=5 --out "$tmp/afile"
expect_error -- "--out $tmp/afile: is a file" replay --scenario "$src/scenarios/replay/tiny_cpu_windowed.json" --out "$tmp/afile"

# --- A full disk is an error, on every output
expect_full_disk 'cannot write standard output: No space left on device' simulate --set horizon_s=5 --json
expect_full_disk 'cannot write standard output' simulate --set horizon_s=5
expect_full_disk 'cannot write standard output' predict --json
expect_full_disk 'cannot write standard output' --help
expect_full_disk 'cannot write standard output' --version
expect_full_disk 'cannot write standard output' simulate --help
expect_full_disk 'cannot write standard output' capacity --set horizon_s=30 --probe-s 5
cases=$((cases + 1))
"$bin" simulate --set horizon_s=5 --trace /dev/full >/dev/null 2>"$tmp/err"
rc=$?
[[ $rc -eq 1 ]] && grep -q "cannot write /dev/full: No space left on device" "$tmp/err" || fail "--trace /dev/full -> rc=$rc $(cat "$tmp/err")"
# A time series on a full disk: exit 1, and no summary.json (the folder is not complete).
cases=$((cases + 1))
mkdir -p "$tmp/full_run"
"$bin" simulate --set horizon_s=30 --out "$tmp/full_run" >/dev/null 2>&1 || fail "simulate --out exited $?"
rm "$tmp/full_run/timeseries.csv"
ln -s /dev/full "$tmp/full_run/timeseries.csv"
"$bin" simulate --set horizon_s=30 --out "$tmp/full_run" >/dev/null 2>"$tmp/err"
rc=$?
[[ $rc -eq 1 && ! -e "$tmp/full_run/summary.json" ]] || fail "simulate --out on a full disk -> rc=$rc, summary.json $(ls "$tmp/full_run")"
# The sweep's rows and its summary files: exit 1, the previous sweep.json not left claiming completion.
cases=$((cases + 1))
"$bin" sweep --set horizon_s=10 --seeds 2 --out "$tmp/full_sweep" 2>/dev/null || fail "sweep exited $?"
rm "$tmp/full_sweep/runs.jsonl"
ln -s /dev/full "$tmp/full_sweep/runs.jsonl"
"$bin" sweep --set horizon_s=10 --seeds 2 --out "$tmp/full_sweep" 2>"$tmp/err"
rc=$?
[[ $rc -eq 1 && ! -e "$tmp/full_sweep/sweep.json" ]] && grep -q "No space left on device" "$tmp/err" ||
  fail "sweep rows on a full disk -> rc=$rc $(cat "$tmp/err")"
cases=$((cases + 1))
rm -rf "$tmp/full_sweep2"
"$bin" sweep --set horizon_s=10 --seeds 2 --out "$tmp/full_sweep2" 2>/dev/null || fail "sweep exited $?"
ln -s /dev/full "$tmp/full_sweep2/aggregate.json.tmp"
"$bin" sweep --set horizon_s=10 --seeds 2 --out "$tmp/full_sweep2" 2>"$tmp/err"
rc=$?
[[ $rc -eq 1 && ! -e "$tmp/full_sweep2/sweep.json" && ! -e "$tmp/full_sweep2/aggregate.json" ]] ||
  fail "sweep aggregate on a full disk -> rc=$rc, files: $(ls "$tmp/full_sweep2")"
cases=$((cases + 1))
ln -s /dev/full "$tmp/cal_out.json.tmp"
"$bin" calibrate roofline --set model=tiny --out "$tmp/cal_out.json" >/dev/null 2>"$tmp/err"
rc=$?
[[ $rc -eq 1 && ! -e "$tmp/cal_out.json" ]] || fail "calibrate roofline on a full disk -> rc=$rc $(cat "$tmp/err")"

# --- A killed rerun never looks complete; two writers never share a folder
slow=(sweep --set 'workload.arrival={"type":"poisson","rate_per_s":5}' --set horizon_s=300 --seeds 400 -j 1)
"$bin" sweep --set horizon_s=10 --seeds 2 --out "$tmp/rerun" 2>/dev/null || fail "first sweep exited $?"
grep -q '"complete": true' "$tmp/rerun/sweep.json" || fail "first sweep not complete"
cases=$((cases + 1))
"$bin" "${slow[@]}" --out "$tmp/rerun" 2>/dev/null &
pid=$!
bg+=("$pid")
# Running: new rows are arriving (the first sweep wrote 2; a third row is the rerun's).
for _ in $(seq 300); do
  [[ -s "$tmp/rerun/runs.jsonl" ]] && (($(wc -l <"$tmp/rerun/runs.jsonl") >= 3)) && break
  sleep 0.1
done
# While it runs, a second writer is refused.
expect_error "--out $tmp/rerun: another metronome process is writing this folder" "${slow[@]}" --out "$tmp/rerun"
expect_error "--out $tmp/rerun: another metronome process is writing this folder" simulate --set horizon_s=5 --out "$tmp/rerun"
kill -9 "$pid"
wait "$pid" 2>/dev/null
for f in sweep.json aggregate.json aggregate.csv; do
  [[ -e "$tmp/rerun/$f" ]] && fail "a killed rerun left the previous $f"
done
rows=$(wc -l <"$tmp/rerun/runs.jsonl")
((rows >= 3 && rows < 400)) || fail "the killed rerun wrote $rows rows (expected some, not all)"
expect_error "no sweep.json" sweep-merge "$tmp/rerun" --out "$tmp/merged"
# The lock died with the process: the next run takes the folder.
cases=$((cases + 1))
"$bin" sweep --set horizon_s=10 --seeds 2 --out "$tmp/rerun" 2>/dev/null && grep -q '"complete": true' "$tmp/rerun/sweep.json" ||
  fail "a run after the killed one could not take the folder"
[[ -e "$tmp/rerun/.metronome.lock" ]] && fail "the lock file outlived its run"
expect_error -- '--out .*: is the shard directory' sweep-merge "$tmp/rerun" --out "$tmp/rerun/."
[[ -s "$tmp/rerun/runs.csv" ]] || fail "a refused sweep-merge into its shard touched the shard"
# The same for simulate: its summary.json is removed first and written last.
cases=$((cases + 1))
"$bin" simulate --set horizon_s=30 --out "$tmp/sim_rerun" >/dev/null || fail "simulate exited $?"
# Several seconds of simulation (500,000 distinct callers, 250 million frames), killed once it has
# opened the folder (the old summary.json is gone) and begun its time series.
"$bin" simulate --set 'workload.arrival={"type":"poisson","rate_per_s":5}' \
  --set 'workload.duration={"type":"exponential","mean_s":40}' --set kv_policy.type=windowed \
  --set kv_policy.window_tokens=480 --set horizon_s=100000 --out "$tmp/sim_rerun" >/dev/null 2>&1 &
pid=$!
bg+=("$pid")
for _ in $(seq 600); do [[ -e "$tmp/sim_rerun/summary.json" ]] || break; sleep 0.1; done
sleep 0.5
kill -0 "$pid" 2>/dev/null || fail "the simulate rerun finished before it could be killed"
kill -9 "$pid"
wait "$pid" 2>/dev/null
[[ -e "$tmp/sim_rerun/summary.json" ]] && fail "a killed simulate rerun left the previous summary.json"

# --- Sweeps: sized before expansion, unknown keys, signals while expanding
axes=()
for i in $(seq 63); do axes+=(--grid "k$i=1,2"); done
expect_error 'sweep grid: 2 \(k1\) x 2 \(k2\).*expected at most 100000 points' sweep --out "$tmp/sw_big" "${axes[@]}"
axes=()
for i in $(seq 16); do axes+=(--grid "k$i=$(seq -s, 0 15)"); done
expect_error 'expected at most 100000 points' sweep --out "$tmp/sw_big" "${axes[@]}"
[[ -e "$tmp/sw_big" ]] && fail "a refused sweep created its folder"
expect_error 'expected at most 1000000 runs' sweep --out "$tmp/sw_big" --grid horizon_s=1,2 --seeds 600000
printf '{"grid": {"horizon_s": [1, 2]}, "seed": 3}' >"$tmp/spec.json"
expect_error 'spec.json: unknown key "seed" \(expected scenario, set, grid, seeds\)' sweep --sweep "$tmp/spec.json" --out "$tmp/sw_spec"
printf '{"grid": [{"key": "horizon_s", "values": [1], "value": [2]}]}' >"$tmp/spec2.json"
expect_error 'spec2.json: grid: expected' sweep --sweep "$tmp/spec2.json" --out "$tmp/sw_spec"
expect_error 'grid point 0 \(horizn_s=1\).*horizn_s: unknown field' sweep --grid horizn_s=1,2 --out "$tmp/sw_spec"
expect_error -- '--grid seed: a sweep.s runs take their seeds from --seeds' sweep --grid seed=1,2 --out "$tmp/sw_spec"
expect_error -- '--set seed=7: a sweep.s runs take their seeds from --seeds' sweep --set seed=7 --out "$tmp/sw_spec"
expect_error -- '--grid horizon_s: the same key is given twice' sweep --grid horizon_s=1,2 --grid horizon_s=3 --out "$tmp/sw_spec"
# SIGTERM while 100,000 points are being loaded: a prompt stop, files that say "not complete".
cases=$((cases + 1))
"$bin" sweep --out "$tmp/sw_term" --grid "workload.arrival.sessions=$(seq -s, 1 2000)" --grid "engine.block_size=$(seq -s, 1 50)" \
  --set horizon_s=0.001 -j 1 2>/dev/null &
pid=$!
bg+=("$pid")
# Once its SIGTERM handler is installed (SigCgt bit 15), it is expanding the grid.
for _ in $(seq 200); do
  mask=$(awk '/^SigCgt/ {print $2}' "/proc/$pid/status" 2>/dev/null)
  [[ -n $mask ]] && (((16#$mask >> 14) & 1)) && break
  sleep 0.02
done
sleep 0.3
start=$(date +%s%N)
kill -TERM "$pid"
wait "$pid"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
[[ $rc -eq 130 ]] && ((ms < 5000)) && grep -q '"complete": false' "$tmp/sw_term/sweep.json" ||
  fail "SIGTERM during expansion -> rc=$rc after $ms ms"

# --- Replay: bounded, and every input checked before the wall clock starts
rs="$src/scenarios/replay/tiny_cpu_windowed.json"
timed_error() {  # like expect_error, and within 5 s (the replays below would run 60 s)
  local start=$(date +%s%N)
  expect_error "$@"
  local ms=$((($(date +%s%N) - start) / 1000000))
  ((ms < 5000)) || fail "replay took $ms ms to refuse: $*"
}
timed_error 'workload.frame_period_s: expected at least 0.001 s for a real-time run' replay --scenario "$rs" --set workload.frame_period_s=1e-6 --set horizon_s=60
timed_error 'workload.arrival: 1e\+07 callers; expected at most 100000' replay --scenario "$rs" --set workload.arrival.sessions=10000000 --set horizon_s=60
timed_error 'up to 6e\+07 frames' replay --scenario "$rs" --set workload.arrival.sessions=1000 --set workload.frame_period_s=0.001 --set horizon_s=60
timed_error 'calibrates model "tiny", the scenario runs "moshi"' replay --scenario "$rs" --set model=moshi --set horizon_s=2
timed_error 'cannot open the calibration file' replay --scenario "$rs" --calibration "$tmp/nope.json" --set horizon_s=60
timed_error 'cal_1e308.json: fit.terms\[0\].coefficient' replay --scenario "$rs" --calibration "$tmp/cal_1e308.json" --set horizon_s=60
timed_error -- "--out $tmp/afile: is a file" replay --scenario "$rs" --set horizon_s=60 --out "$tmp/afile"

# --- Hostile inputs, output safety, wrong numbers (an outside audit)
# timed_error_32 <regex> <args...>: expect_error within 20 s (a FIFO used to block open() forever).
timed_error_32() {
  local start=$(date +%s%N)
  expect_error "$@"
  local ms=$((($(date +%s%N) - start) / 1000000))
  ((ms < 20000)) || fail "took $ms ms to refuse: $*"
}
mkfifo "$tmp/fifo"
mkdir -p "$tmp/shard"
mkfifo "$tmp/shard/sweep.json"
fifo_msg='fifo: is a FIFO \(named pipe\), expected the'
timed_error_32 "$fifo_msg scenario file as a regular file" simulate --scenario "$tmp/fifo"
timed_error_32 "$fifo_msg HuggingFace config.json" predict --set "model=hf:$tmp/fifo"
timed_error_32 "$fifo_msg model file" predict --set "model=$tmp/fifo"
timed_error_32 "$fifo_msg sweep file" sweep --sweep "$tmp/fifo" --out "$tmp/sw_fifo"
timed_error_32 "$fifo_msg benchmark JSON" calibrate fit --bench "$tmp/fifo" --out "$tmp/fit_fifo.json"
timed_error_32 "$fifo_msg calibration file" calibrate report --calibration "$tmp/fifo"
timed_error_32 "$fifo_msg calibration file" simulate --set model=tiny --set cost_model.type=calibrated --set cost_model.file="$tmp/fifo"
timed_error_32 "$fifo_msg quality file" recommend --quality "$tmp/fifo" --windows 240 --sinks 0
timed_error_32 "$fifo_msg GGUF model file" quality --model "$tmp/fifo"
timed_error_32 "$fifo_msg text \(--text\)" quality --text "$tmp/fifo"
timed_error_32 "$fifo_msg calibration file" replay --scenario "$src/scenarios/replay/tiny_cpu_windowed.json" --calibration "$tmp/fifo"
timed_error_32 "sweep.json: is a FIFO \(named pipe\), expected the sweep summary" sweep-merge "$tmp/shard" --out "$tmp/merged32"
timed_error_32 "--trace $tmp/fifo: a FIFO \(named pipe\) that no process is reading" simulate --set horizon_s=5 --trace "$tmp/fifo"
timed_error_32 '/dev/zero: is a character device, expected the text \(--text\) as a regular file' quality --text /dev/zero
timed_error_32 "$tmp: is a directory, expected the GGUF model file" quality --model "$tmp"

# Memory stays bounded by the horizon, not by silence_after_s (1e9 s reached 10 GB). A deadline of
# 1e9 s did the same; it is now refused at load (more than 10 frame periods: docs/scenarios.md).
cases=$((cases + 1))
"$bin" simulate --set workload.deadline_s=1e9 --set horizon_s=100 --json >/dev/null 2>"$tmp/err"
rc=$?
{ [ $rc -eq 2 ] && grep -q "workload.deadline_s: expected at most 10 x frame_period_s" "$tmp/err"; } ||
  fail "simulate --set workload.deadline_s=1e9 -> rc=$rc (want 2) $(head -c 300 "$tmp/err")"
# Under ASan (METRONOME_ASAN=1) ulimit -v stops the sanitizer itself, so these run in the default build.
mem_sets=engine.silence_after_s=1e9
[ -n "${METRONOME_ASAN:-}" ] && { echo "skip: memory bounds under ulimit -v (AddressSanitizer build)" >&2; mem_sets=; }
for set in $mem_sets; do
  cases=$((cases + 1))
  (ulimit -v 1500000; "$bin" simulate --set "$set" --set horizon_s=100 --json >"$tmp/mem.json" 2>"$tmp/err") ||
    fail "simulate --set $set --set horizon_s=100 under 1.5 GB -> rc=$? $(head -c 300 "$tmp/err")"
  cases=$((cases + 1))
  (ulimit -v 1500000; "$bin" sweep --set "$set" --set horizon_s=100 --seeds 2 -j 1 --out "$tmp/sw_mem" 2>"$tmp/err") ||
    fail "sweep --set $set under 1.5 GB -> rc=$? $(head -c 300 "$tmp/err")"
  cases=$((cases + 1))
  (ulimit -v 1500000; "$bin" capacity --set "$set" --set horizon_s=100 --probe-s 5 >/dev/null 2>"$tmp/err") ||
    fail "capacity --set $set under 1.5 GB -> rc=$? $(head -c 300 "$tmp/err")"
done

# Calls that end before the horizon split and rejoin their cohort once a period: each left a stale
# departure in the event queue (520 MB at a horizon of 9.75e5 s, 8 MB at 9.25e5 s).
if [ -z "${METRONOME_ASAN:-}" ]; then
  cases=$((cases + 1))
  (ulimit -v 400000; "$bin" simulate --scenario "$src/scenarios/canonical/moshi_h200_windowed.json" --set horizon_s=9.75e5 \
    --set workload.duration.seconds=9.5e5 --json >/dev/null 2>"$tmp/err") || fail "a 9.75e5 s run under 400 MB -> rc=$? $(head -c 300 "$tmp/err")"
fi
timed_error_32 'horizon_s: expected at most 1e8 frame periods over the horizon' simulate --set horizon_s=1e9 --set output.sample_period_s=1000

# calibrate run: --out is replaced only by a complete run; devices, foreign formats and --help refused.
printf '{"good": true}\n' >"$tmp/bench_good.json"
timed_error_32 'no benchmark ran' calibrate run --model tiny --grid ci --out "$tmp/bench_good.json" --benchmark-arg=--benchmark_filter=zzz
cases=$((cases + 1))
grep -q '"good": true' "$tmp/bench_good.json" || fail "a failed calibrate run replaced the earlier --out"
ls "$tmp"/bench_good.json.* >/dev/null 2>&1 && fail "a failed calibrate run left its temporary file"
timed_error_32 -- '--out /dev/full: is not a regular file' calibrate run --model tiny --grid ci --out /dev/full
timed_error_32 -- '--benchmark_out_format is set by calibrate run' calibrate run --model tiny --grid ci --out "$tmp/b.json" --benchmark-arg=--benchmark_out_format=csv
timed_error_32 -- '--benchmark-arg --help: expected a Google Benchmark --benchmark_\* flag' calibrate run --model tiny --grid ci --out "$tmp/b.json" --benchmark-arg=--help
[[ -e "$tmp/b.json" ]] && fail "a refused calibrate run wrote --out"

# Single-file outputs: never renamed over something that is not a regular file; one writer.
timed_error_32 -- "--out $tmp: is a directory, expected a regular file path" calibrate grids --out "$tmp"
timed_error_32 -- "--out $tmp/fifo: is a FIFO \(named pipe\), expected a regular file path" calibrate roofline --set model=tiny --out "$tmp/fifo"
timed_error_32 -- "--out /dev/null: is a character device" calibrate grids --out /dev/null
timed_error_32 -- "--out /dev/full: is a character device" quality --out /dev/full
cases=$((cases + 1))
[[ -p "$tmp/fifo" ]] || fail "the FIFO was replaced"
flock "$tmp/g.json.tmp" sleep 5 &
lock_pid=$!
bg+=("$lock_pid")
for _ in $(seq 50); do [[ -e "$tmp/g.json.tmp" ]] && break; sleep 0.1; done
sleep 0.3
timed_error_32 -- "--out $tmp/g.json: another process is writing this file" calibrate grids --out "$tmp/g.json"
kill "$lock_pid" 2>/dev/null
wait "$lock_pid" 2>/dev/null
# import-vidur checks both outputs before writing either.
vidur="$src/results/vidur"
timed_error_32 -- "--correction-out $tmp/afile/c.json: cannot write into $tmp/afile" calibrate import-vidur "$vidur" --model meta-llama/Llama-2-7b-hf --gpu h100 --out "$tmp/vid.json" --correction-out "$tmp/afile/c.json"
[[ -e "$tmp/vid.json" ]] && fail "import-vidur wrote --out, then failed on --correction-out"
# The shape-aware block: only with profiles to fit it on, never over another output, and a GPU
# file's block whose coefficients are not a roofline's is refused by field.
timed_error_32 -- "--transfer-out $tmp/sa.json: nothing to write without --transfer-model" calibrate import-vidur "$vidur" --model meta-llama/Llama-2-7b-hf --gpu h100 --out "$tmp/vid.json" --transfer-out "$tmp/sa.json"
timed_error_32 -- "--transfer-out $tmp/vid.json: the same file as --out" calibrate import-vidur "$vidur" --model meta-llama/Llama-2-7b-hf --gpu h100 --out "$tmp/vid.json" --transfer-model internlm/internlm-20b --transfer-model codellama/CodeLlama-34b-Instruct-hf --transfer-out "$tmp/vid.json"
[[ -e "$tmp/vid.json" || -e "$tmp/sa.json" ]] && fail "a refused import-vidur wrote a file"
/usr/bin/python3 - "$src/scenarios/gpus/h100.json" "$tmp/h100_overlap.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
g.pop("measured_calibration")
g["shape_aware_correction"]["gemm_overlap"] = 2
json.dump(g, open(sys.argv[2], "w"))
PY
timed_error_32 'shape_aware_correction.gemm_overlap: expected a number in \[0.0, 1.0\], got 2' predict --set gpu="$tmp/h100_overlap.json" --set model=moshi --set cost_model.type=shape_aware_roofline
timed_error_32 'prices dense layers only' predict --set model=qwen3-omni-30b-a3b --set cost_model.type=shape_aware_roofline
timed_error_32 '"a100": cost_model.type "shape_aware_roofline" needs the GPU file.s shape_aware_correction' predict --set gpu=a100 --set model=llama-3-8b --set cost_model.type=shape_aware_roofline
# A profile whose mlp_up_proj is 0 in every row crashed Eigen's QR.
mkdir -p "$tmp/zero_up"
/usr/bin/python3 - "$vidur/h100/meta-llama/Llama-2-7b-hf/mlp.csv" "$tmp/zero_up/mlp.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
k = rows[0].index("time_stats.mlp_up_proj.median")
for r in rows[1:]:
    r[k] = "0"
csv.writer(open(sys.argv[2], "w", newline="")).writerows(rows)
PY
timed_error_32 'zero_up/mlp.csv: column "time_stats.mlp_up_proj.median": 0 ms in every row' calibrate import-vidur "$tmp/zero_up" --model meta-llama/Llama-2-7b-hf --gpu h100 --out "$tmp/o.json"
# The trace never overwrites the run's input.
cp "$src/scenarios/canonical/moshi_h200_windowed.json" "$tmp/in.json"
timed_error_32 -- "--trace $tmp/in.json: is $tmp/in.json, the scenario file this run reads" simulate --scenario "$tmp/in.json" --set horizon_s=5 --trace "$tmp/in.json"
cmp -s "$tmp/in.json" "$src/scenarios/canonical/moshi_h200_windowed.json" || fail "--trace overwrote the input scenario"
# No output replaces a file the run reads (base/input_files.h): --metrics, a model file, a sweep's
# folder holding its own scenario or sweep file (cleared before it was read again).
expect_error -- "--metrics $tmp/in.json: is $tmp/in.json, the scenario file this run reads" simulate --scenario "$tmp/in.json" --set horizon_s=1 --metrics "$tmp/in.json"
cp "$src/scenarios/models/moshi.json" "$tmp/model_in.json"
expect_error -- "--trace $tmp/model_in.json: is $tmp/model_in.json, the model file this run reads" simulate --set model="$tmp/model_in.json" --set horizon_s=1 --trace "$tmp/model_in.json"
cmp -s "$tmp/in.json" "$src/scenarios/canonical/moshi_h200_windowed.json" &&
  cmp -s "$tmp/model_in.json" "$src/scenarios/models/moshi.json" || fail "an output replaced an input"
"$bin" simulate --scenario "$tmp/in.json" --set horizon_s=1 --out "$tmp/prev" >/dev/null 2>&1 || fail "simulate --out prev"
expect_error -- "--out $tmp/prev \\(its scenario.json\\): is $tmp/prev/scenario.json, the scenario file this run reads" sweep --scenario "$tmp/prev/scenario.json" --seeds 1 --out "$tmp/prev"
expect_error -- "--out $tmp/prev \\(its scenario.json\\): is $tmp/prev/scenario.json" simulate --scenario "$tmp/prev/scenario.json" --out "$tmp/prev"
[[ -s "$tmp/prev/scenario.json" ]] || fail "a refused run removed the scenario it reads"
printf '{"scenario": "%s", "seeds": [1], "grid": [{"key": "horizon_s", "values": [1]}]}' "$tmp/in.json" >"$tmp/prev/sweep.json"
expect_error -- "\\(its sweep.json\\): is $tmp/prev/sweep.json, the sweep file this run reads" sweep --sweep "$tmp/prev/sweep.json" --out "$tmp/prev"
# A sweep file's relative scenario is the one beside it, though the current folder has one too.
mkdir -p "$tmp/spec_dir"
cp "$src/scenarios/canonical/moshi_h200_windowed.json" "$tmp/spec_dir/sc.json"
echo '{"not": "a scenario"}' >"$tmp/sc.json"
printf '{"scenario": "sc.json", "seeds": [1], "grid": [{"key": "horizon_s", "values": [1]}]}' >"$tmp/spec_dir/s.json"
cases=$((cases + 1))
(cd "$tmp" && "$bin" sweep --sweep spec_dir/s.json --out sw_beside --quiet) >/dev/null 2>"$tmp/err" &&
  grep -q '"sessions": 300' "$tmp/sw_beside/scenario.json" ||
  fail "a sweep file's relative scenario read from the current folder: $(head -c 300 "$tmp/err")"
# Two outputs on one path are found before the --out folder exists (relative to it), and the
# folder's lock file is one of its files.
cases=$((cases + 1))
(cd "$tmp" && "$bin" simulate --set horizon_s=1 --out fresh_run --trace "$tmp/fresh_run/summary.json") >/dev/null 2>"$tmp/err"
rc=$?
[[ $rc -eq 2 ]] && grep -q -- '--out fresh_run (its summary.json): the same file' "$tmp/err" ||
  fail "--trace into a new --out folder's summary.json -> rc=$rc $(head -c 300 "$tmp/err")"
expect_error -- '--trace .*/lk/.metronome.lock and --out .*lk \(its lock file\): the same file' simulate --set horizon_s=1 --out "$tmp/lk" --trace "$tmp/lk/.metronome.lock"
# A closed pipe: exit 1 with a message, not death by SIGPIPE.
cases=$((cases + 1))
"$bin" capacity --set horizon_s=30 --probe-s 5 --quiet 2>"$tmp/err" | true  # the reader is gone first
rc=${PIPESTATUS[0]}
[[ $rc -eq 1 ]] && grep -q 'Broken pipe' "$tmp/err" || fail "stdout to a closed pipe -> rc=$rc $(cat "$tmp/err")"

# Wrong numbers refused, never printed.
/usr/bin/python3 - "$cal" "$tmp/cal_neg.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
for t in c["fit"]["terms"]:
    if t["name"] == "query_tokens":
        t["coefficient"], t["dropped"] = -1.0, False
json.dump(c, open(sys.argv[2], "w"))
PY
timed_error_32 'cal_neg.json: fit.terms: the calibration gives a pass of .* a time of -.* expected a time >= 0' simulate --set model=tiny --set cost_model.type=calibrated --set cost_model.file="$tmp/cal_neg.json" --set horizon_s=5
printf '{"perplexity": [{"window": null, "sinks": 0, "ppl_from": 1e-300}, {"window": 240, "sinks": 0, "ppl_from": 12}]}' >"$tmp/q_tiny.json"
timed_error_32 'q_tiny.json: perplexity\[\].ppl_from: 1e-300; a perplexity is a finite number >= 1' recommend --quality "$tmp/q_tiny.json" --max-ppl-ratio 1.1 --windows 240 --sinks 0
printf '{"perplexity": [{"window": null, "sinks": 0, "ppl_from": 10}, {"window": 240, "sinks": 0, "ppl_from": 12}, {"window": 240, "sinks": 0, "ppl_from": 11}]}' >"$tmp/q_dup.json"
timed_error_32 'q_dup.json: perplexity: window 240, sinks 0 given twice' recommend --quality "$tmp/q_dup.json" --max-ppl-ratio 1.1 --windows 240 --sinks 0
timed_error_32 'workload.frame_period_s: expected a whole number of nanoseconds' simulate --set workload.frame_period_s=1.5e-9 --set horizon_s=1
timed_error_32 -- 'capacity probe of 0.05 s \(--probe-s, or the horizon\): its second half, where the steady latency is measured, is shorter than a frame period' capacity --set horizon_s=30 --probe-s 0.05
timed_error_32 -- '--seeds 9223372036854775808: 9223372036854775808 is out of range' sweep --seeds 9223372036854775808 --out "$tmp/sw_seed"
timed_error_32 -- '--seeds 1,9999999999999999999: 9999999999999999999 is out of range' sweep --seeds 1,9999999999999999999 --out "$tmp/sw_seed"
timed_error_32 'engine.scheduler: "vllm_v1" is not what the real engine runs' replay --scenario "$src/scenarios/replay/tiny_cpu_windowed.json" --set engine.scheduler=vllm_v1

# Frames that cost nothing: no deadline cap to search for (the search used to run for hours).
expect_error 'no deadline cap to find' capacity --quiet --set workload.input_tokens_per_frame=0 \
  --set workload.output_tokens_per_frame=0 --set workload.kv_tokens_per_frame=0
expect_error -- '--quality-within: expected a finite decimal number' recommend --quality-within nan
expect_error -- '--max-ppl-ratio: expected a finite decimal number' recommend --max-ppl-ratio nan
expect_error -- '--trace .*/same.out and --metrics .*/same.out: the same file' simulate --trace "$tmp/same.out" --metrics "$tmp/same.out"
expect_error -- '--trace .*/col/summary.json and --out .* \(its summary.json\): the same file' simulate --out "$tmp/col" --trace "$tmp/col/summary.json"
expect_error -- '--gpus nosuch: .*unknown gpu "nosuch"' plan --gpus h200,nosuch
expect_error 'leave none to test the fit' calibrate fit --bench "$src/results/calibration/tiny_cpu_bench.json" \
  --out "$tmp/fit_none.json" --heldout-every 1000
[[ -e "$tmp/fit_none.json" ]] && fail "a refused fit wrote its output"
expect_error -- '--terms: "fixed" is given twice' calibrate fit --bench "$src/results/calibration/tiny_cpu_bench.json" \
  --out "$tmp/fit_twice.json" --terms fixed,sessions,fixed
/usr/bin/python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); j["context"]["metronome_model"] = "nosuch"; json.dump(j, open(sys.argv[2], "w"))' \
  "$src/results/calibration/tiny_cpu_bench.json" "$tmp/bench_nosuch.json"
expect_error 'bench_nosuch.json: context.metronome_model: .*unknown model "nosuch"' calibrate fit \
  --bench "$tmp/bench_nosuch.json" --out "$tmp/fit_nosuch.json"
expect_error 'workload.arrival.start_s: 100 s is past horizon_s 30 s' simulate --set horizon_s=30 \
  --set 'workload.arrival={"type":"all_at_once","sessions":5,"start_s":100}'
# A bench timing no kernel takes (1e200 ms) is refused, not fitted to an R2 of -nan.
/usr/bin/python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); b = next(b for b in j["benchmarks"] if "real_time" in b); b["real_time"] = 1e200; json.dump(j, open(sys.argv[2], "w"))' \
  "$src/results/calibration/tiny_cpu_bench.json" "$tmp/bench_huge.json"
expect_error 'bench_huge.json: .*real_time: expected a time > 0 and at most 1 hour' calibrate fit \
  --bench "$tmp/bench_huge.json" --out "$tmp/fit_huge.json"
# An empty value is no value (it used to read as the option left out), for any option.
expect_error -- '--out: expected a value, got an empty string' simulate --set horizon_s=1 --out ""
expect_error -- '--shard: expected a value, got an empty string' plan --shard ""
expect_error -- '--out: expected a value, got an empty string' calibrate run --model tiny --backend cpu --grid ci --out ""
# A list names each value once: a repeated one would run (and rank) the same candidate twice.
expect_error -- '--windows: 240 is given twice \(expected each value once\)' recommend --windows 240 480 240
expect_error -- '--gpus: h200 is given twice' plan --gpus h200,h100,h200
expect_error -- '--grid engine.num_blocks: 100.0 is given twice' sweep --grid engine.num_blocks=100,1e2 --out "$tmp/grid_twice"
# Seeds seed, seed + 1, ... past the largest scenario seed (it used to run them regardless).
expect_error -- '--seeds 3 from seed 9223372036854775807: the last seed is past 9223372036854775807' recommend --seed 9223372036854775807 --seeds 3
expect_error -- '--shard 0/18446744073709551616: .* is out of range \(expected at most 9223372036854775807, the largest shard count\)' sweep --shard 0/18446744073709551616 --out "$tmp/shard_big"
# A quality file with a negative window is no metronome quality output.
printf '{"perplexity":[{"window":null,"sinks":0,"ppl_from":10},{"window":-256,"sinks":-4,"ppl_from":11}]}' >"$tmp/q_neg.json"
expect_error 'q_neg.json: perplexity\[\]: window -256, sinks -4: a window is >= 1 token and sinks >= 0' recommend --quality "$tmp/q_neg.json" --windows 240 --sinks 0
# A word that is no command, and near none, is named (it only said a subcommand was required).
cases=$((cases + 1))
"$bin" bogus >/dev/null 2>"$tmp/err"
rc=$?
[[ $rc -eq 2 ]] && grep -q '"bogus" is not a command of metronome' "$tmp/err" || fail "metronome bogus -> rc=$rc: $(head -c 300 "$tmp/err")"
expect_error -- '--benchmark_repetitions is set by the grid for each benchmark' calibrate run --model tiny --backend cpu --grid ci --out "$tmp/bench_rep.json" --benchmark-arg=--benchmark_repetitions=0
expect_error 'the cpu backend would allocate 32768.0 GiB of host memory for 1073741824 blocks of tiny; expected at most 4 GiB \(fewer blocks with --num-blocks\)$' replay --scenario "$src/scenarios/replay/tiny_cpu_unbounded.json" --num-blocks 1073741824
expect_error -- '--windows: expected a non-negative decimal integer' recommend --windows 0x1E0,480  # 480 twice, spelled two ways
# --set is the one option that may repeat (the last value wins, as in a file edited twice).
cases=$((cases + 1))
"$bin" predict --set horizon_s=10 --set horizon_s=10 >/dev/null 2>"$tmp/err" || fail "a repeated --set was refused: $(head -c 300 "$tmp/err")"
# A CPU-only build refuses the GPU backend (exit 3) before it reads anything, a scenario included.
cases=$((cases + 1))
"$bin" replay --backend gpu >/dev/null 2>"$tmp/err"
rc=$?
[[ $rc -eq 3 ]] && grep -q 'gpu backend: .metronome. runs the CPU backend only' "$tmp/err" ||
  fail "replay --backend gpu without a scenario -> rc=$rc: $(head -c 300 "$tmp/err")"
# capacity: 0 s is no probe (it used to mean the default); phase draws need drawn phases.
expect_error -- '--probe-s: Value 0 not in range' capacity --probe-s 0
cases=$((cases + 1))
"$bin" capacity --set horizon_s=10 --phase-draws 7 --quiet >/dev/null 2>"$tmp/err" &&
  grep -q 'warning: --phase-draws is ignored: the scenario.s arrivals (all_at_once)' "$tmp/err" ||
  fail "capacity --phase-draws without drawn phases: no warning; stderr: $(head -c 300 "$tmp/err")"
# capacity's probes get a pool their callers cannot fill, sized to them: a 2^40-block pool made
# vLLM's scheduler allocate until bad_alloc and a preempting engine price a recompute of all of
# it. Under a pool that never binds, the exhaustion behaviour cannot move the deadline cap; the
# vLLM scheduler, which no pace bounds, is refused.
cases=$((cases + 1))
stall_cap=$("$bin" capacity --quiet --json --set horizon_s=30 | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["capacity"]["deadline_cap_sessions"])')
preempt_cap=$("$bin" capacity --quiet --json --set horizon_s=30 --set engine.exhaustion=preempt_recompute 2>"$tmp/err" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["capacity"]["deadline_cap_sessions"])')
[[ -n $stall_cap && $stall_cap == "$preempt_cap" ]] ||
  fail "capacity under preempt_recompute: cap '$preempt_cap' against '$stall_cap' under stall; $(head -c 300 "$tmp/err")"
expect_error 'engine.scheduler "vllm_v1": the deadline search probes the frame scheduler' capacity --quiet --set engine.scheduler=vllm_v1 --set horizon_s=30
expect_error 'engine.scheduler "vllm_v1": the deadline search probes the frame scheduler' recommend --quiet --seeds 1 --scenario "$src/scenarios/live/aimd_windowed.json"
# A probe longer than the calls measures contexts no call reaches: said, not silent.
cases=$((cases + 1))
"$bin" capacity --set horizon_s=10 --probe-s 12 --quiet >/dev/null 2>"$tmp/err" &&
  grep -q 'warning: --probe-s 12 s is longer than the calls (10 s)' "$tmp/err" ||
  fail "capacity --probe-s past the calls: no warning; stderr: $(head -c 300 "$tmp/err")"
# sweep-merge copies no row a sweep could not have written (a hand-edited shard).
for i in 0 1; do "$bin" sweep --set horizon_s=5 --seeds 4 --shard $i/2 --out "$tmp/sm$i" 2>/dev/null; done
sed -i '1s/"frames_due":[0-9]*/"frames_due":-5/' "$tmp/sm0/runs.jsonl"
expect_error 'sweep-merge: run 0: frames_due: expected null or a number >= 0, got -5' sweep-merge "$tmp/sm0" "$tmp/sm1" --out "$tmp/sm_merged"
sed -i '1s/"seed":[0-9]*/"seed":9/' "$tmp/sm0/runs.jsonl"
expect_error 'sweep-merge: run 0: point or seed is not that run.s' sweep-merge "$tmp/sm0" "$tmp/sm1" --out "$tmp/sm_merged"
# Shards of a scenario file that changed between them are two sweeps; unchanged ones merge from
# any folder, with the scenario they ran (not the file read again, relative to the merge's folder).
cp "$src/scenarios/canonical/moshi_h200_windowed.json" "$tmp/shard_in.json"
(cd "$tmp" && "$bin" sweep --scenario shard_in.json --set horizon_s=2 --seeds 1..2 --shard 0/2 --out ch0 --quiet &&
  "$bin" sweep --scenario shard_in.json --set horizon_s=2 --seeds 1..2 --shard 1/2 --out ch1 --quiet) >/dev/null 2>&1 ||
  fail "sweep shards of shard_in.json"
cases=$((cases + 1))
(cd "$src" && "$bin" sweep-merge "$tmp/ch0" "$tmp/ch1" --out "$tmp/ch_merged") >/dev/null 2>"$tmp/err" &&
  cmp -s "$tmp/ch_merged/scenario.json" "$tmp/ch0/scenario.json" ||
  fail "sweep-merge from another folder: $(head -c 300 "$tmp/err")"
sed -i 's/"sessions": 300/"sessions": 200/' "$tmp/shard_in.json"
(cd "$tmp" && "$bin" sweep --scenario shard_in.json --set horizon_s=2 --seeds 1..2 --shard 1/2 --out ch1 --quiet) >/dev/null 2>&1
expect_error 'ch1/scenario.json: another scenario than .*ch0/scenario.json \(the file changed between shards\)' sweep-merge "$tmp/ch0" "$tmp/ch1" --out "$tmp/ch_merged2"
# admit answers for one engine: a fleet's gateway would be ignored, so a fleet scenario is refused.
expect_error '`metronome admit` answers for one engine, and this scenario is a fleet' admit --scenario "$src/scenarios/fleet/moshi_h200_fleet.json" --set fleet.gateway.type=aimd
# The summary says the horizon it ran, not a rounding of it ("5 s" for 4.8 s, "0 s" for 0.3 s).
cases=$((cases + 1))
"$bin" simulate --set horizon_s=0.3 2>/dev/null | grep -q '^simulated  0.3 s, seed 1' || fail "simulate's summary misstates a 0.3 s horizon"
# admit's line protocol: a number past a double, a count that is not whole, an unknown field and a
# clock that goes back are errors (exit 2) after the first cap, never an internal error.
admit_scenario="$src/scenarios/live/aimd_windowed.json"  # the live driver's: its memory guard is off
for bad in '{"now_s":1,"latency_ms":1e400,"frames":100,"live":16}|line 1: latency_ms: number 1e400 is out of range' \
  '{"now_s":1,"latency_ms":1,"frames":1.5,"live":16}|frames.: expected a whole number' \
  '{"now_s":1,"latency_ms":1,"frames":1,"live":1e300}|live.: expected a whole number' \
  '{"now_s":1,"latency_ms":1,"frames":1,"live":1,"x":2}|unknown field .x.' \
  '{"now_s":1,"now_s":9,"latency_ms":1,"frames":1,"live":1}|line 1: now_s: duplicate key' \
  '[1,2,3]|line 1: expected a JSON object' \
  $'{"now_s":2,"latency_ms":1,"frames":1,"live":1}\n{"now_s":1,"latency_ms":1,"frames":1,"live":1}|line 2: field .now_s.: expected at least'; do
  cases=$((cases + 1))
  printf '%s\n' "${bad%|*}" | "$bin" admit --scenario "$admit_scenario" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [[ $rc -eq 2 ]] && grep -Eq -- "${bad##*|}" "$tmp/err" ||
    fail "admit on ${bad%|*} -> rc=$rc, want exit 2 and /${bad##*|}/; stderr: $(head -c 300 "$tmp/err")"
done
# A stdin that cannot be read (a directory, a descriptor open for writing only) is no driver's
# goodbye: it read as an empty stream, exit 0.
for redirect in "<$tmp" "0>$tmp/write_only"; do
  cases=$((cases + 1))
  eval '"$bin" admit --scenario "$admit_scenario" >"$tmp/out" 2>"$tmp/err"' "$redirect"
  rc=$?
  [[ $rc -eq 2 ]] && grep -q "stdin: cannot read the driver's lines" "$tmp/err" ||
    fail "admit with stdin $redirect -> rc=$rc: $(head -c 300 "$tmp/err")"
done
cases=$((cases + 1))
printf '   \n{"now_s":1,"latency_ms":1,"frames":1,"live":1}\n' | "$bin" admit --scenario "$admit_scenario" >"$tmp/out" 2>"$tmp/err" &&
  [[ $(wc -l <"$tmp/out") -eq 2 ]] || fail "admit: a line of spaces: $(head -c 300 "$tmp/err")"

finish "hostile-input checks"
