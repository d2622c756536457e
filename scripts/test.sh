#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this):
#   1. install what is missing, build everything (CUDA kernels too where nvcc exists), run ctest;
#   2. the CPU code again under AddressSanitizer + UndefinedBehaviorSanitizer, its tests with no report
#      (all but the GPU tests and the real-model quality tests, minutes each under ASan);
#   3. the golden summaries again from a Debug build: results must not depend on the build type;
#   4. a bounded libFuzzer run of each target: the scenario loader and --set, sweep specs, the
#      calibration reader and `calibrate report`, and the command-line options (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
# The model and text of the quality tests (ctest label "quality"; they skip without them).
scripts/fetch_quality_assets.sh
ctest --preset default

echo "== CPU tests under ASan + UBSan" >&2
cmake --preset asan >/dev/null
cmake --build --preset asan
ctest --preset asan

echo "== golden summaries from a Debug build" >&2
cmake --preset debug >/dev/null
cmake --build --preset debug --target metronome_sim_tests
build-debug/tests/sim/metronome_sim_tests --gtest_filter='Scenarios/Golden.*'

echo "== fuzzing the loaders and option parsing" >&2
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
scripts/fuzz.sh --runs "${METRONOME_FUZZ_RUNS:-3000}"
