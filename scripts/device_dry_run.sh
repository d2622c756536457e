#!/usr/bin/env bash
# The dry run of the device command (scripts/device_run.sh) on this GPU-less machine, as the device machine
# sees the build: our Debian dev packages hidden (scripts/hide_dev_packages.sh, a private mount
# namespace) and CMake 4 from PyPI (a venv in build-cmake4-venv/). It checks, in order:
#   1. both pack scripts compose: either order leaves DIR/usr, DIR/googletest and DIR/benchmark;
#   2. without the carried tree, configuring the full tree FAILS (so the hiding is real);
#   3. with it, scripts/device_run.sh --dry-run passes: full configure and build (CUDA compile
#      included), every stage run, the GPU ones skipping with their reason; the results tarball
#      holds every stage's log.
#   scripts/device_dry_run.sh [--budget S]     (default 5400: a cold build on 2 cores is slow)
# Exit 0 all held; 1 a check failed; 2 bad arguments.
# ctest: device_prep.dry_run (-DMETRONOME_DEVICE_PREP_TEST=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
budget=5400
# Checked before the venv and the pack scripts: anything else used to be ignored.
if (($# == 2)) && [[ $1 == --budget && $2 =~ ^[0-9]+$ ]]; then
  budget=$2
elif (($#)); then
  echo "device_dry_run: usage: device_dry_run.sh [--budget S] (S whole seconds), got '$*'" >&2
  exit 2
fi
fail() { echo "device_dry_run: FAIL: $*" >&2; exit 1; }
t0=$(date +%s)

venv=$root/build-cmake4-venv
if ! "$venv/bin/cmake" --version 2>/dev/null | grep -q 'version 4\.'; then
  python3 -m venv "$venv" && "$venv/bin/pip" install -q 'cmake>=4,<5'
fi
export PATH=$venv/bin:$PATH
echo "device_dry_run: $(cmake --version | head -1)" >&2
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-/work} CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
fi

# 1. Composition.
deps=build-device-deps
scripts/pack_device_deps.sh "$deps" >&2
scripts/pack_calibrate_deps.sh "$deps" >&2
scripts/pack_device_deps.sh "$deps" >&2
for f in usr/include/fmt/core.h usr/include/nlohmann/json.hpp usr/include/CLI/CLI.hpp \
         usr/include/eigen3/Eigen/Dense usr/lib/x86_64-linux-gnu/libgtest.a usr/NEEDS.txt \
         googletest/CMakeLists.txt benchmark/include/benchmark/benchmark.h; do
  [[ -f $deps/$f ]] || fail "$deps/$f missing after packing both ways"
done
echo "device_dry_run: carried tree $(du -sm "$deps" | cut -f1) MB ($deps)" >&2

# 2. Hidden packages, no carried tree: configure must fail.
rm -rf build-device-nocarry; mkdir -p out
if scripts/hide_dev_packages.sh cmake -S . -B build-device-nocarry -DCMAKE_CUDA_ARCHITECTURES=90 \
     >out/nocarry.log 2>&1; then
  fail "the full tree configured with the Debian packages hidden and nothing carried"
fi
grep -m1 'Could not find a package configuration file provided by' out/nocarry.log >&2 ||
  { cat out/nocarry.log >&2; fail "configure failed, but not for a missing package"; }
rm -rf build-device-nocarry out/nocarry.log
echo "device_dry_run: without the carried tree the configure fails, as it must" >&2

# 3. Hidden packages, carried tree: the device command's dry run.
out=$root/out/device_dry_run_out
rm -rf "$out"
mkdir -p "$out"
rc=0
OUT=$out scripts/hide_dev_packages.sh scripts/device_run.sh --dry-run --budget "$budget" || rc=$?
[[ -f $out/device_results.tar.gz && -f $out/summary.txt ]] || fail "no results tarball or summary under \$OUT"
n=$(find "$out" -type f | wc -l)
((n <= 8)) || fail "$n files under \$OUT (the device tool returns 8)"
listing=$(tar -tzf "$out/device_results.tar.gz")
for s in env configure build tests memcheck kernels torch calib fit replay calib_torch fit_all; do
  grep -qx "device_run/logs/$s.log" <<<"$listing" || fail "no logs/$s.log in the tarball"
done
((rc == 0)) || { cat "$out/summary.txt" >&2; fail "device_run.sh --dry-run exited $rc"; }
echo "device_dry_run: ok in $(($(date +%s) - t0)) s" >&2
