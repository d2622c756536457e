#!/usr/bin/env bash
# The device calibration: build the calibration benchmarks standalone (kernels + Google Benchmark,
# sm_90), time one model's grid on the GPU, and bring the benchmark JSON back under $OUT. The fit
# runs afterwards on any machine: metronome calibrate fit --bench bench_<model>.json --out ...
#
#   scripts/gpu_calibrate.sh --model NAME [--model NAME2] [--grid gpu|gpu-quick] [--out DIR]
#                            [--deps DIR] [--build DIR] [--arch 90] [--limit SECONDS] [--dry-run]
#
#   --model NAME  scenario model name (tiny, qwen2.5-omni-7b, moshi, minicpm-o-4.5,
#                 qwen3-omni-30b-a3b); repeatable, each gets its own file
#   --grid G      gpu (default; sized for under 4 minutes per model including the build) or gpu-quick
#   --out DIR     results folder (default: $OUT, else out/gpu_calibrate)
#   --deps DIR    folder from scripts/pack_calibrate_deps.sh (default build-device-deps)
#   --build DIR   build folder (default build-calib-device)
#   --arch A      CUDA architectures (default 90: the H200)
#   --limit S     stop timing one model after S seconds (default 200); what ran is kept
#   --dry-run     for a machine without a GPU: build, then time the CPU backend's "ci" grid of the
#                 tiny model so the whole script and its files are exercised
#
# Files under the results folder (flat, at most 8 for the device tool):
#   log.txt                 build output and the benchmark console table
#   bench_<model>.json      Google Benchmark JSON (context: model, backend gpu, device, driver)
#   device.txt              nvidia-smi query (name, memory, clocks, driver)
# Exit status: 0 all timed; 1 a build or run failed; 2 bad arguments; 3 no GPU (without --dry-run).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

out=${OUT:-out/gpu_calibrate}
deps=build-device-deps
build=build-calib-device
arch=90
grid=gpu
limit=200
dry=0
models=()
die() { echo "gpu_calibrate: $*" >&2; exit 2; }
while (($#)); do
  case $1 in
    --model|--grid|--out|--deps|--build|--arch|--limit)
      [[ $# -ge 2 && -n $2 && $2 != --* ]] || die "$1 needs a value (see --help)" ;;
  esac
  case $1 in
    --model) models+=("$2"); shift 2 ;;
    --grid) grid=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --deps) deps=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
((${#models[@]})) || die "--model NAME is required (see --help)"
# Checked here, not by the benchmark after a build of minutes. A model name is part of a file name.
for m in "${models[@]}"; do
  [[ $m =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "--model: expected a model name like moshi, got '$m'"
done
[[ $grid =~ ^(gpu|gpu-quick|ci|cpu)$ ]] || die "--grid: expected gpu, gpu-quick, ci or cpu, got '$grid'"
[[ $limit =~ ^0*[1-9][0-9]*$ ]] || die "--limit: expected whole seconds > 0, got '$limit'"
[[ $arch =~ ^(native|all|all-major|[0-9]+[af]?(-real|-virtual)?(;[0-9]+[af]?(-real|-virtual)?)*)$ ]] ||
  die "--arch: expected CUDA architectures like 90 or '90;100', got '$arch'"
# Without these checks a folder that cannot be made leaves out empty and the files go to /.
mkdir -p "$out" || die "--out: cannot create the folder '$out'"
out=$(cd "$out" && pwd) || die "--out: cannot enter the folder '$out'"
log=$out/log.txt
: >"$log" || die "--out: cannot write $log"
say() { echo "gpu_calibrate: $*" | tee -a "$log" >&2; }
start=$(date +%s)

bench_root=""
if [[ -f $deps/benchmark/include/benchmark/benchmark.h ]]; then
  bench_root=$root/$deps/benchmark
elif [[ ! -f /usr/include/benchmark/benchmark.h ]]; then
  say "no Google Benchmark: run scripts/pack_calibrate_deps.sh here and carry $deps"
  exit 1
fi
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH=/usr/local/cuda/bin:$PATH; fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
jobs=$(nproc 2>/dev/null || echo 4)

say "configure + build (arch $arch, Google Benchmark from ${bench_root:-the system})"
if ! { cmake -S calibrate -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_CUDA_ARCHITECTURES="$arch" ${bench_root:+-DMETRONOME_BENCHMARK_ROOT="$bench_root"} &&
       cmake --build "$build" -j "$jobs" --target metronome_calibrate_bench; } >>"$log" 2>&1; then
  say "build FAILED (see log.txt)"; tail -30 "$log" >&2; exit 1
fi
say "built in $(($(date +%s) - start)) s"
[[ -n $bench_root ]] && export LD_LIBRARY_PATH=$bench_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv >"$out/device.txt" 2>&1
fi

status=0
for model in "${models[@]}"; do
  file=$out/bench_${model}.json
  ((dry)) && file=$out/bench_tiny_cpu_dryrun.json
  t0=$(date +%s)
  if ((dry)); then
    say "dry run: CPU backend, grid ci, model tiny (standing in for $model)"
    args=(--model tiny --backend cpu --grid ci)
  else
    say "timing $model on grid $grid (limit $limit s)"
    args=(--model "$model" --backend gpu --grid "$grid")
  fi
  timeout "$limit" "$build/metronome_calibrate_bench" "${args[@]}" --out "$file" \
    --benchmark_counters_tabular=false 2>&1 | tee -a "$log" | grep -E "^(error|calibrate)|_median " >&2
  rc=${PIPESTATUS[0]}
  if ((rc == 2)); then
    say "no GPU: nothing timed"
    ((dry)) || exit 3
  elif ((rc == 124)); then
    say "$model: stopped at the $limit s limit; $file holds what finished (if anything)"; status=1
  elif ((rc != 0)); then
    say "$model: timing FAILED (exit $rc)"; status=1
  fi
  skipped=$(grep -c '"error_occurred": true' "$file" 2>/dev/null || true)
  say "$model: $(($(date +%s) - t0)) s, $(grep -c '"aggregate_name": "median"' "$file" 2>/dev/null || echo 0) medians, ${skipped:-0} skipped -> $(basename "$file")"
done
say "done in $(($(date +%s) - start)) s; results in $out"
exit $status
