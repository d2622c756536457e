#!/usr/bin/env bash
# The whole GPU run in one command: builds the CUDA tree, tests and sanitizes the kernels, times
# them and PyTorch's attention, fits the cost model's calibration and replays scenarios on the GPU.
# For the device machine (one H200; nvcc, cuBLAS, PyTorch, CMake, ninja, ncu, compute-sanitizer;
# none of our Debian dev packages; no network):
#
#   run(carry=["build-device-deps"], command="scripts/device_run.sh", timeout_s=570)
#
# after scripts/pack_device_deps.sh here (docs/device_run.md). Stages, each under `timeout`, all
# within --budget seconds (default 480: 8 minutes; a stage gets min(its own limit, what is left)):
#   env          nvidia-smi, nvcc, cmake, ninja, g++, glibc/libstdc++, libcublas, python, torch
#   configure    the full tree (METRONOME_CUDA=ON, sm_90) with CMAKE_PREFIX_PATH=DEPS/usr only
#   build        metronome-gpu, kernels_cpu_test, kernels_gpu_test, metronome_kernel_bench,
#                metronome_calibrate_bench
#   tests        kernels_cpu_test and kernels_gpu_test (the ctest label gpu), gtest JSON
#   memcheck     compute-sanitizer memcheck (and racecheck) on a few GPU test cases
#   kernels      metronome_kernel_bench: copy bandwidth, the 256 x 8k target, windows, grid
#   torch        kernels/bench/sdpa_compare.py: SDPA (backend probed and logged) and FlexAttention
#                (sinks + window block mask) on the shapes the kernel bench timed
#   calib        metronome_calibrate_bench --backend gpu, grid gpu-quick: tiny, qwen2.5-omni-7b, moshi
#   fit          metronome-gpu calibrate fit of each benchmark JSON (held-out every 4th point)
#   replay       metronome-gpu replay --backend gpu of scenarios/replay/*.json with tiny's GPU fit
#   calib_torch  calibrate/torch/torch_bench.py, grid gpu-quick: qwen2.5-omni-7b, moshi
#   fit_all      the fits again with PyTorch's, and of ours + PyTorch's (the faster per shape)
# After every stage the results folder (out/device_run/) is packed again into
# $OUT/device_results.tar.gz and its stage table copied to $OUT/summary.txt: a run stopped at its
# limit still returns what finished. Nothing else goes to $OUT (2 files, flat).
#
#   scripts/device_run.sh [--dry-run] [--deps DIR] [--build DIR] [--budget S] [--arch A] [--jobs N]
#   --dry-run   no GPU (CUDA_VISIBLE_DEVICES is emptied), tiny sizes: the CPU backend's ci grid of
#               tiny, 1 s replays; every stage runs, the GPU ones take their no-GPU path and say so
# Exit status: 0 every stage passed (GPU stages may skip only under --dry-run); 1 a stage failed,
# ran out of time, (without --dry-run) found no GPU, or its results could not be packed into $OUT;
# 2 bad arguments.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

dry=0 deps=build-device-deps build=build-device budget=480 arch=90 jobs=$(nproc 2>/dev/null || echo 4)
die() { echo "device_run: $*" >&2; exit 2; }
while (($#)); do
  case $1 in
    --deps|--build|--budget|--arch|--jobs)
      [[ $# -ge 2 && -n $2 && $2 != --* ]] || die "$1 needs a value (see --help)" ;;
  esac
  case $1 in
    --dry-run) dry=1; shift ;;
    --deps) deps=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $budget =~ ^[0-9]+$ ]] || die "--budget must be whole seconds, got '$budget'"
[[ $jobs =~ ^0*[1-9][0-9]*$ ]] || die "--jobs must be a whole number > 0, got '$jobs'"
[[ $arch =~ ^(native|all|all-major|[0-9]+[af]?(-real|-virtual)?(;[0-9]+[af]?(-real|-virtual)?)*)$ ]] ||
  die "--arch: expected CUDA architectures like 90 or '90;100', got '$arch'"
[[ $deps = /* ]] || deps=$root/$deps
[[ $build = /* ]] || build=$root/$build

out=${OUT:-$root/out/device_run_out}
res=$root/out/device_run
rm -rf "$res"
# A run whose results cannot reach $OUT must not go on to spend the budget and exit 0.
mkdir -p "$out" "$res/logs" || { echo "device_run: cannot create $out or $res/logs" >&2; exit 1; }
summary=$res/summary.txt
start=$(date +%s)
deadline=$((start + budget))
failed=0
printf '%-12s %6s %6s  %s\n' stage rc secs note >"$summary"

if ! command -v nvcc >/dev/null; then
  for c in /usr/local/cuda/bin /usr/local/cuda-*/bin; do [[ -x $c/nvcc ]] && { export PATH=$c:$PATH; break; }; done
fi
if ((dry)); then
  export CUDA_VISIBLE_DEVICES=""
  models=(tiny) torch_models=(tiny) grid=ci backend=cpu horizon=(--set horizon_s=1)
else
  models=(tiny qwen2.5-omni-7b moshi) torch_models=(qwen2.5-omni-7b moshi) grid=gpu-quick
  backend=gpu horizon=()
fi
gpu_bin=$build/metronome-gpu
export root res deps build arch jobs dry grid backend gpu_bin
export PYTHONUNBUFFERED=1

pack() {
  if ! { cp "$summary" "$out/summary.txt" &&
    tar -czf "$out/device_results.tar.gz.tmp" -C "$root/out" device_run &&
    mv "$out/device_results.tar.gz.tmp" "$out/device_results.tar.gz"; }; then
    echo "device_run: packing the results into $out FAILED" >&2
    failed=1
  fi
}

# stage NAME LIMIT FUNCTION: runs FUNCTION under timeout, logs to logs/NAME.log. The function's
# exit status: 0 passed, 3 skipped (no GPU; it writes why to logs/NAME.note), else failed.
stage() {
  local name=$1 limit=$2 fn=$3 now left rc t0 note=""
  now=$(date +%s)
  left=$((deadline - now - 10))
  if ((left < 5)); then
    printf '%-12s %6s %6s  %s\n' "$name" - 0 "not run: the ${budget} s budget is spent" >>"$summary"
    failed=1; pack; return
  fi
  ((limit > left)) && limit=$left
  echo "device_run: $name (limit $limit s)" >&2
  t0=$(date +%s)
  timeout -k 5 "$limit" bash -c "$fn" >"$res/logs/$name.log" 2>&1
  rc=$?
  [[ -f $res/logs/$name.note ]] && note=$(tr '\n' ' ' <"$res/logs/$name.note")
  case $rc in
    0) note=${note:-ok} ;;
    3) note="skipped: ${note:-no GPU}"; ((dry)) || failed=1 ;;
    124|137) note="TIMED OUT at $limit s; ${note}"; failed=1 ;;
    *) note="FAILED; ${note}see logs/$name.log"; failed=1 ;;
  esac
  printf '%-12s %6s %6s  %s\n' "$name" "$rc" "$(($(date +%s) - t0))" "$note" >>"$summary"
  echo "device_run: $name: rc $rc, $note" >&2
  pack
}

has_gpu() { [[ -z ${CUDA_VISIBLE_DEVICES-x} ]] && return 1; nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }
note() { echo "$*" >>"$res/logs/$STAGE.note"; }
export -f has_gpu note

env_log() {
  STAGE=env
  {
    for c in "date -u" "uname -a" "nvidia-smi" \
             "nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version --format=csv" \
             "nvcc --version" "cmake --version" "ninja --version" "g++ --version" "ldd --version" \
             "compute-sanitizer --version" "ncu --version" "python3 --version" \
             "python3 -c 'import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__, torch.cuda.is_available() and torch.cuda.get_device_name(0))'"; do
      echo "\$ $c"; timeout 10 bash -c "$c" 2>&1 | head -20; echo
    done
    echo "\$ libcublas"; ldconfig -p 2>/dev/null | grep -i cublas
    find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /opt -maxdepth 6 -name 'libcublas.so*' 2>/dev/null | head
    python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__))' 2>/dev/null
    echo; echo "\$ libstdc++ provides"; for l in $(ldconfig -p | awk '/libstdc\+\+\.so\.6 /{print $NF}'); do
      echo "$l: $(grep -ao 'GLIBCXX_[0-9.]*' "$l" | sort -Vu | tail -1)"; done
    echo; echo "\$ carried shared libraries need ($deps/usr/NEEDS.txt)"; cat "$deps/usr/NEEDS.txt" 2>&1
  } >"$res/env.txt"
  command -v nvcc >/dev/null || { note "no nvcc"; return 1; }
  has_gpu || { note "no GPU visible (nvidia-smi -L)"; return 3; }
  nvidia-smi -L | head -1 >>"$res/logs/env.note"
}

configure() {
  STAGE=configure
  [[ -d $deps/usr ]] || { note "no $deps/usr: run scripts/pack_device_deps.sh and carry it"; return 1; }
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DMETRONOME_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DCMAKE_PREFIX_PATH="$deps/usr" -DCMAKE_POLICY_VERSION_MINIMUM=3.5
}

build_all() {
  STAGE=build
  cmake --build "$build" -j "$jobs" --target metronome-gpu kernels_cpu_test kernels_gpu_test \
    metronome_kernel_bench metronome_calibrate_bench
}

gpu_tests() {
  STAGE=tests
  t=$build/tests/kernels
  "$t/kernels_cpu_test" --gtest_brief=1 --gtest_output="json:$res/gtest_kernels_cpu.json" || return 1
  "$t/kernels_gpu_test" --gtest_brief=1 --gtest_output="json:$res/gtest_kernels_gpu.json" | tee "$res/logs/tests_gpu.txt" || return 1
  if grep -q "GPU test skipped" "$res/logs/tests_gpu.txt"; then
    note "$(grep -m1 -o 'GPU test skipped: .*' "$res/logs/tests_gpu.txt")"; return 3
  fi
  note "$(grep -c '"result": "COMPLETED"' "$res/gtest_kernels_gpu.json") GPU tests ran"
}

memcheck() {
  STAGE=memcheck
  has_gpu || { note "no GPU: compute-sanitizer not run"; return 3; }
  command -v compute-sanitizer >/dev/null || { note "no compute-sanitizer on PATH"; return 1; }
  bin=$build/tests/kernels/kernels_gpu_test
  # Small shapes: the sanitizer slows kernels 10-100x. G = 7 and 8, forced splits, fused strides.
  cases='Grid/PagedAttentionGpu.MatchesReference/bs16_kv4_g8_d128_*:Grid/PagedAttentionGpu.MatchesReference/bs7_kv4_g7_d64_*:Grid/PagedAttentionGpu.MatchesReference/*_fused:LinearGpu.*:SiluMulGpu.*:LayerStepGpu.*'
  compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" --gtest_brief=1 --gtest_filter="$cases" || return 1
  compute-sanitizer --tool racecheck --error-exitcode 9 "$bin" --gtest_brief=1 \
    --gtest_filter='Grid/PagedAttentionGpu.MatchesReference/bs16_kv4_g8_d128_W40_S4_*' || return 1
  note "memcheck and racecheck clean"
}

kernels() {
  STAGE=kernels
  quick=(); ((dry)) && quick=(--quick)
  "$build/kernels/metronome_kernel_bench" "${quick[@]}" --json "$res/bench.json" | tee "$res/kernel_table.txt"
  rc=${PIPESTATUS[0]}
  ((rc == 2)) && { note "no CUDA device: nothing timed"; return 3; }
  return "$rc"
}

torch_cmp() {
  STAGE=torch
  [[ -s $res/bench.json ]] || printf '{"device": null, "copy_gbps": 0, "rows": [], "note": "no kernel timings"}\n' >"$res/bench.json"
  python3 "$root/kernels/bench/sdpa_compare.py" --bench "$res/bench.json" --json "$res/torch_attention.json" \
    --results "$res/results.json" --table "$res/results.txt" --flex-limit-s 30
  rc=$?
  ((rc == 3)) && note "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["note"])' "$res/torch_attention.json" 2>/dev/null)"
  return "$rc"
}

calib() {
  STAGE=calib
  st=0
  for m in $MODELS; do
    # A share of the stage's limit each, so one slow model leaves the next its time.
    lim=45; [[ $m == tiny ]] && lim=25
    timeout "$lim" "$build/calibrate/metronome_calibrate_bench" --model "$m" --backend "$backend" --grid "$grid" \
      --out "$res/bench_${m}_${backend}.json" --benchmark_counters_tabular=false
    rc=$?
    ((rc == 2)) && { note "no GPU: nothing timed"; return 3; }
    ((rc == 124)) && { note "$m: stopped at its $lim s share"; st=1; continue; }
    ((rc == 0)) || { note "$m: exit $rc"; st=1; }
  done
  return $st
}

calib_torch() {
  STAGE=calib_torch
  dryarg=(); ((dry)) && dryarg=(--dry-run)
  st=0
  for m in $TORCH_MODELS; do
    python3 "$root/calibrate/torch/torch_bench.py" --model "$m" --grid "$grid" --limit-s 40 \
      --out "$res/bench_${m}_torch.json" "${dryarg[@]}"
    rc=$?
    ((rc == 77)) && { note "no torch in this python"; return 3; }
    ((rc == 3)) && { note "torch sees no CUDA device"; return 3; }
    ((rc == 0)) || { note "$m: exit $rc"; st=1; }
    ((dry)) && break  # the dry run's grid is the same tiny one whatever the model
  done
  return $st
}

fit() {
  STAGE=fit
  st=0 n=0
  mkdir -p "$res/calibration"
  for b in "$res"/bench_*.json; do
    [[ -f $b ]] || continue
    name=$(basename "$b" .json); name=${name#bench_}
    "$gpu_bin" calibrate fit --bench "$b" --out "$res/calibration/$name.json" --heldout-every 4 || st=1
    n=$((n + 1))
  done
  for m in $TORCH_MODELS; do
    ours=$res/bench_${m}_${backend}.json theirs=$res/bench_${m}_torch.json
    [[ -f $ours && -f $theirs ]] &&
      { "$gpu_bin" calibrate fit --bench "$ours" --bench "$theirs" --out "$res/calibration/${m}_faster.json" --heldout-every 4 || st=1; }
  done
  ((n)) || { note "no benchmark JSON to fit"; return 1; }
  return $st
}

replay() {
  STAGE=replay
  cal=$res/calibration/tiny_${backend}.json
  [[ -f $cal ]] || { note "no tiny calibration from the calib stage"; return 1; }
  st=0
  for s in "$root"/scenarios/replay/*.json; do
    n=$(basename "$s" .json)
    "$gpu_bin" replay --backend gpu --scenario "$s" --calibration "$cal" --out "$res/replay/$n" $HORIZON
    rc=$?
    if ((rc == 3)); then
      [[ -f $res/logs/replay.note ]] || note "no GPU: the gpu backend refused (exit 3); ran the cpu backend"
      # The same scenarios on the CPU backend, so the command line and outputs are exercised.
      "$gpu_bin" replay --backend cpu --scenario "$s" --calibration "$cal" --out "$res/replay/${n}_cpu" $HORIZON || st=1
      continue
    fi
    ((rc == 0)) || { note "$n: exit $rc"; st=1; }
  done
  ((st == 0)) && [[ -f $res/logs/replay.note ]] && return 3
  return $st
}

export -f env_log configure build_all gpu_tests memcheck kernels torch_cmp calib calib_torch fit replay
export MODELS="${models[*]}" TORCH_MODELS="${torch_models[*]}" HORIZON="${horizon[*]}"

stage env 45 env_log
stage configure 90 configure
stage build 300 build_all
if [[ -x $gpu_bin && -x $build/tests/kernels/kernels_gpu_test ]]; then
  stage tests 60 gpu_tests
  stage memcheck 45 memcheck
  stage kernels 90 kernels
  stage torch 100 torch_cmp
  # Ours, its fits and the GPU replay before PyTorch's grids: if the budget runs out, the replay
  # (which needs tiny's GPU fit) is not what is lost. fit_all refits with PyTorch's benchmarks.
  stage calib 120 calib
  stage fit 30 fit
  stage replay 60 replay
  stage calib_torch 90 calib_torch
  stage fit_all 30 fit
else
  printf '%-12s %6s %6s  %s\n' rest - 0 "not run: the build did not produce the binaries" >>"$summary"
  failed=1
  pack
fi
echo "device_run: done in $(($(date +%s) - start)) s; $out/device_results.tar.gz" >&2
cat "$summary"
[[ -f $res/results.txt ]] && tail -25 "$res/results.txt"
exit $failed
