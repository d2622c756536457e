#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this):
#   1. install what is missing, build everything (CUDA kernels too where nvcc exists), run ctest;
#   2. the CPU code again, built by clang at -O1 with its asserts on, under AddressSanitizer +
#      UndefinedBehaviorSanitizer: its tests with no report (all but the GPU tests, the real-model
#      quality tests and the figure scripts, minutes each there). The golden summaries among them
#      must come out the same from a second compiler at another optimisation level;
#   3. a bounded libFuzzer run of each target: the scenario loader and --set, sweep specs, the
#      calibration reader and `calibrate report`, and the command-line options (scripts/fuzz.sh).
# Stages 2 and 3 share one build (build-asan), libFuzzer's coverage hooks in all of it: a fuzzing
# build of its own took as long again, and a Debug build's one check beyond these, the asserts, is
# on in this one.
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

echo "== fuzzing the loaders and option parsing" >&2
scripts/fuzz.sh --runs "${METRONOME_FUZZ_RUNS:-3000}"
