#!/usr/bin/env bash
# Copies what the device machine lacks (it has nvcc, cmake and PyTorch but none of our Debian
# packages) into an ignored folder that the device tool carries: the googletest sources.
# The kernels' standalone build needs nothing else (no nlohmann-json, CLI11, Eigen or benchmark).
#   scripts/pack_device_deps.sh [DIR]      default DIR: build-device-deps (ignored by /build*/)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-device-deps}
src=${GTEST_SOURCE:-/usr/src/googletest}
if [[ ! -f $src/CMakeLists.txt ]]; then
  echo "pack_device_deps: no googletest sources at $src (apt-get install libgtest-dev, or set GTEST_SOURCE)" >&2
  exit 1
fi
rm -rf "$dir"
mkdir -p "$dir"
cp -r "$src" "$dir/googletest"
rm -rf "$dir/googletest/googletest/test" "$dir/googletest/googlemock/test" "$dir/googletest/googletest/docs"
echo "pack_device_deps: $(du -sh "$dir" | cut -f1) in $dir; carry it: run(carry=[\"$dir\"], command=\"scripts/gpu_check.sh\")"
