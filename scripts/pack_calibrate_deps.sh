#!/usr/bin/env bash
# Copies what the device machine lacks for scripts/gpu_calibrate.sh into an ignored folder that the
# device tool carries: Google Benchmark's headers and shared library (Debian 12's 1.7.1; it needs
# only glibc >= 2.32 and libstdc++ >= GLIBCXX_3.4.30, which an image with nvcc 13 and Python 3.12
# has). It replaces only DIR/benchmark: scripts/pack_device_deps.sh's DIR/usr and DIR/googletest
# (the full tree's deps, Google Benchmark included) stay, whichever runs first.
#   scripts/pack_calibrate_deps.sh [DIR]      default DIR: build-device-deps (ignored by /build*/)
set -euo pipefail
cd "$(dirname "$0")/.."
(($# <= 1)) || { echo "pack_calibrate_deps: one folder at most, got $#: $*" >&2; exit 2; }
dir=${1-build-device-deps}
# DIR/benchmark is deleted and rewritten: an empty DIR, or one that resolves to /, would make that
# /benchmark.
[[ -n $dir && $(realpath -m -- "$dir") != / ]] ||
  { echo "pack_calibrate_deps: DIR must be a non-empty folder path other than /, got '$dir'" >&2; exit 2; }
inc=${BENCHMARK_INCLUDE:-/usr/include/benchmark}
lib=${BENCHMARK_LIB:-/usr/lib/x86_64-linux-gnu}
if [[ ! -f $inc/benchmark.h ]] || ! ls "$lib"/libbenchmark.so.* >/dev/null 2>&1; then
  echo "pack_calibrate_deps: no Google Benchmark at $inc / $lib (apt-get install libbenchmark-dev)" >&2
  exit 1
fi
rm -rf "$dir/benchmark"
mkdir -p "$dir/benchmark/include" "$dir/benchmark/lib"
cp -r "$inc" "$dir/benchmark/include/benchmark"
# Real files, not links: the device tool carries links only as links.
for f in "$lib"/libbenchmark.so "$lib"/libbenchmark.so.*; do cp -L "$f" "$dir/benchmark/lib/"; done
echo "pack_calibrate_deps: $(du -sh "$dir/benchmark" | cut -f1) in $dir/benchmark; carry $dir:" \
     "run(carry=[\"$dir\"], command=\"scripts/gpu_calibrate.sh --model qwen2.5-omni-7b\")"
