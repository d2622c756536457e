#!/usr/bin/env bash
# The device check: build the kernels standalone (sm_90), run the GPU tests, time the kernels, compare
# with PyTorch SDPA, and write a results table to $OUT (JSON + text). Budget: under 8 minutes.
#
#   scripts/gpu_check.sh [--out DIR] [--deps DIR] [--build DIR] [--arch 90] [--quick] [--dry-run]
#
#   --out DIR    results folder (default: $OUT, else out/gpu_check)
#   --deps DIR   folder from scripts/pack_device_deps.sh (default build-device-deps, else
#                /usr/src/googletest is used directly)
#   --build DIR  build folder (default build-device)
#   --arch A     CUDA architectures (default 90: the H200; CI builds 90 and 100)
#   --quick      fewer repetitions and context lengths
#   --dry-run    for a machine without a GPU: build and run everything, accept that GPU tests skip
#                and that timing is refused; still write the output files
#
# Files written under the results folder (at most 8, flat, for the device tool):
#   log.txt            build and test output
#   gpu_tests.json     gtest results of kernels_gpu_test (and kernels_cpu_test.json)
#   bench.json         kernel timings (metronome_kernel_bench)
#   sdpa.json          PyTorch SDPA timings on the same shapes
#   results.json       merged table;  results.txt  the same, readable
# Exit status: 0 all ran and passed; 1 a build, test or check failed; 2 bad arguments; 3 no GPU
# (without --dry-run).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

out=${OUT:-out/gpu_check}
deps=build-device-deps
build=build-device
arch=90
quick=()
dry=0
die() { echo "gpu_check: $*" >&2; exit 2; }
while (($#)); do
  case $1 in
    --out|--deps|--build|--arch)
      [[ $# -ge 2 && -n $2 && $2 != --* ]] || die "$1 needs a value (see --help)" ;;
  esac
  case $1 in
    --out) out=$2; shift 2 ;;
    --deps) deps=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --dry-run) dry=1; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $arch =~ ^(native|all|all-major|[0-9]+[af]?(-real|-virtual)?(;[0-9]+[af]?(-real|-virtual)?)*)$ ]] ||
  die "--arch: expected CUDA architectures like 90 or '90;100', got '$arch'"
# Without these checks a folder that cannot be made leaves out empty and the files go to /.
mkdir -p "$out" || die "--out: cannot create the folder '$out'"
out=$(cd "$out" && pwd) || die "--out: cannot enter the folder '$out'"
log=$out/log.txt
: >"$log" || die "--out: cannot write $log"
say() { echo "gpu_check: $*" | tee -a "$log" >&2; }
start=$(date +%s)
status=0

if [[ -f $deps/googletest/CMakeLists.txt ]]; then
  gtest=$root/$deps/googletest
elif [[ -f /usr/src/googletest/CMakeLists.txt ]]; then
  gtest=/usr/src/googletest
else
  say "no googletest sources: run scripts/pack_device_deps.sh here and carry build-device-deps"
  exit 1
fi
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH=/usr/local/cuda/bin:$PATH; fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
jobs=$(nproc 2>/dev/null || echo 4)

say "configure + build (arch $arch, googletest from $gtest)"
if ! { cmake -S kernels -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_CUDA_ARCHITECTURES="$arch" -DMETRONOME_GTEST_SOURCE="$gtest" &&
       cmake --build "$build" -j "$jobs" --target kernels_cpu_test kernels_gpu_test metronome_kernel_bench; } \
       >>"$log" 2>&1; then
  say "build FAILED (see log.txt)"; tail -30 "$log" >&2; exit 1
fi
say "built in $(($(date +%s) - start)) s"

gpu=1
if command -v nvidia-smi >/dev/null; then nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem --format=csv >>"$log" 2>&1 || gpu=0; else gpu=0; fi

say "CPU tests"
"$build/tests_kernels/kernels_cpu_test" --gtest_brief=1 --gtest_output="json:$out/kernels_cpu_test.json" >>"$log" 2>&1 \
  || { say "CPU tests FAILED"; status=1; }
say "GPU tests"
"$build/tests_kernels/kernels_gpu_test" --gtest_brief=1 --gtest_output="json:$out/gpu_tests.json" >>"$log" 2>&1 \
  || { say "GPU tests FAILED"; status=1; }
grep -E "^\[  (PASSED|FAILED|SKIPPED) \]|tests? ran|skipped:" "$log" | sort | uniq -c | head -20 >&2
if grep -q "GPU test skipped" "$log"; then gpu=0; fi

say "timing kernels"
"$build/metronome_kernel_bench" "${quick[@]}" --json "$out/bench.json" 2>>"$log" | tee -a "$log" >/dev/null
rc=${PIPESTATUS[0]}
if ((rc == 2)); then
  gpu=0
  say "no GPU: nothing timed"
  printf '{"device": null, "copy_gbps": 0, "rows": [], "note": "no CUDA device; nothing timed"}\n' >"$out/bench.json"
elif ((rc != 0)); then
  say "timing FAILED (exit $rc)"; status=1
fi

say "PyTorch SDPA comparison and results table"
if [[ -s $out/bench.json ]]; then
  PYTHONUNBUFFERED=1 python3 kernels/bench/sdpa_compare.py --bench "$out/bench.json" --json "$out/sdpa.json" \
    --results "$out/results.json" --table "$out/results.txt" 2>>"$log"
  rc=$?
  # 3: no torch or no GPU there (said in the table); the kernel table is still written.
  if ((rc == 3)); then gpu=0; elif ((rc != 0)); then say "PyTorch comparison FAILED"; status=1; fi
fi
say "done in $(($(date +%s) - start)) s; results in $out"
# sdpa_compare.py printed the table last, so it ends the device tool's output tail.
if ((status == 0 && gpu == 0 && dry == 0)); then say "no GPU on this machine (use --dry-run to accept that)"; exit 3; fi
exit $status
