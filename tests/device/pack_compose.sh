#!/bin/sh
# Both pack scripts into one folder, in both orders: neither may delete the other's output, and a
# rerun replaces its own. Usage: pack_compose.sh SOURCE_DIR WORK_DIR
set -eu
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
check() {
  for f in usr/include/fmt/core.h usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake \
           usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake usr/NEEDS.txt \
           googletest/CMakeLists.txt benchmark/include/benchmark/benchmark.h; do
    [ -f "$work/$1/$f" ] || { echo "pack_compose: $1: $f missing" >&2; exit 1; }
  done
}
"$src/scripts/pack_calibrate_deps.sh" "$work/a" >/dev/null
"$src/scripts/pack_device_deps.sh" "$work/a" >/dev/null
check a
"$src/scripts/pack_device_deps.sh" "$work/b" >/dev/null
"$src/scripts/pack_calibrate_deps.sh" "$work/b" >/dev/null
check b
# A stale file inside its own entry goes on a rerun; the other script's entry stays.
touch "$work/b/usr/include/stale.h"
"$src/scripts/pack_device_deps.sh" "$work/b" >/dev/null
[ ! -e "$work/b/usr/include/stale.h" ] || { echo "pack_compose: stale file survived a repack" >&2; exit 1; }
check b
# The carried shared libraries' glibc needs are recorded, and do not exceed what they came from.
grep -q 'libfmt.so.*GLIBC_2\.' "$work/b/usr/NEEDS.txt"
rm -rf "$work"
echo "pack_compose: ok"
