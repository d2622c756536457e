#!/usr/bin/env bash
# Copies what the device machine lacks (it has nvcc, cuBLAS, cmake, ninja and PyTorch but none of
# our Debian dev packages, and no network) into an ignored folder that the device tool carries:
#
#   DIR/usr/         a prefix laid out as Debian's /usr, for CMAKE_PREFIX_PATH=DIR/usr (the full
#                    tree: metronome-gpu, tests, benchmarks): headers and CMake package files of
#                    nlohmann-json, CLI11, Eigen, fmt, Google Benchmark and googletest; googletest's
#                    static libraries; fmt's and Google Benchmark's shared libraries (Debian ships
#                    no static ones), whose glibc/libstdc++ needs go to DIR/usr/NEEDS.txt
#   DIR/googletest/  googletest sources (scripts/gpu_check.sh's standalone kernels build)
#
# It replaces only those two entries: what scripts/pack_calibrate_deps.sh wrote (DIR/benchmark)
# stays, in whichever order the two run.
#   scripts/pack_device_deps.sh [DIR]      default DIR: build-device-deps (ignored by /build*/)
# Environment: PACK_SYSROOT (default /) reads the packages from another root, for tests.
set -euo pipefail
cd "$(dirname "$0")/.."
(($# <= 1)) || { echo "pack_device_deps: one folder at most, got $#: $*" >&2; exit 2; }
dir=${1-build-device-deps}
# DIR/usr and DIR/googletest are deleted and rewritten: an empty DIR, or one that resolves to /,
# would make that /usr.
[[ -n $dir && $(realpath -m -- "$dir") != / ]] ||
  { echo "pack_device_deps: DIR must be a non-empty folder path other than /, got '$dir'" >&2; exit 2; }
sys=${PACK_SYSROOT:-}
sys=${sys%/}
arch=x86_64-linux-gnu
lib=$sys/usr/lib/$arch

# Each entry: a path under /usr that must exist (the Debian package it comes from, for the message).
need=(
  "include/nlohmann:nlohmann-json3-dev"
  "share/cmake/nlohmann_json:nlohmann-json3-dev"
  "include/CLI:libcli11-dev"
  "share/cmake/CLI11:libcli11-dev"
  "include/eigen3/Eigen:libeigen3-dev"
  "share/eigen3/cmake:libeigen3-dev"
  "include/fmt:libfmt-dev"
  "lib/$arch/cmake/fmt:libfmt-dev"
  "include/benchmark:libbenchmark-dev"
  "lib/$arch/cmake/benchmark:libbenchmark-dev"
  "include/gtest:libgtest-dev"
  "include/gmock:libgmock-dev"
  "lib/$arch/cmake/GTest:libgtest-dev"
  "src/googletest/CMakeLists.txt:googletest"
)
missing=()
for e in "${need[@]}"; do
  [[ -e $sys/usr/${e%%:*} ]] || missing+=("/usr/${e%%:*} (apt-get install ${e##*:})")
done
if ((${#missing[@]})); then
  printf 'pack_device_deps: missing %s\n' "${missing[@]}" >&2
  exit 1
fi

rm -rf "${dir:?}/usr" "${dir:?}/googletest"
mkdir -p "$dir/usr/include" "$dir/usr/share/cmake" "$dir/usr/share/eigen3" "$dir/usr/lib/$arch/cmake"
u=$dir/usr
for h in nlohmann CLI fmt benchmark gtest gmock; do cp -r "$sys/usr/include/$h" "$u/include/"; done
# Eigen's unsupported/ modules are not used (3 MB less to carry).
mkdir -p "$u/include/eigen3"
cp -r "$sys/usr/include/eigen3/Eigen" "$u/include/eigen3/"
cp -r "$sys/usr/share/cmake/nlohmann_json" "$sys/usr/share/cmake/CLI11" "$u/share/cmake/"
cp -r "$sys/usr/share/eigen3/cmake" "$u/share/eigen3/"
for c in fmt benchmark GTest; do cp -r "$lib/cmake/$c" "$u/lib/$arch/cmake/"; done
# Libraries as real files (the device tool carries links only as links), with the names the CMake
# package files and the dynamic loader (SONAME) use.
for f in "$lib"/libgtest.a "$lib"/libgtest_main.a "$lib"/libgmock.a "$lib"/libgmock_main.a \
         "$lib"/libfmt.so* "$lib"/libbenchmark.so* "$lib"/libbenchmark_main.a; do
  [[ -e $f ]] && cp -L "$f" "$u/lib/$arch/"
done

# The highest symbol versions the carried shared libraries need: the device's glibc and
# libstdc++ must provide them (scripts/device_run.sh logs both).
{
  echo "# symbol versions the carried shared libraries need (highest of each)"
  for f in "$u/lib/$arch"/*.so.*.*; do
    vers=$(objdump -T "$f" 2>/dev/null | grep -o '\(GLIBC\|GLIBCXX\|CXXABI\)_[0-9.]*' | sort -u)
    printf '%s' "$(basename "$f"):"
    for k in GLIBC GLIBCXX CXXABI; do
      printf ' %s' "$(grep "^${k}_[0-9]" <<<"$vers" | sort -V | tail -1)"
    done
    echo
  done
} >"$u/NEEDS.txt"

cp -r "$sys/usr/src/googletest" "$dir/googletest"
rm -rf "$dir/googletest/googletest/test" "$dir/googletest/googlemock/test" "$dir/googletest/googletest/docs" \
       "$dir/googletest/docs"
echo "pack_device_deps: $(du -sh "$dir/usr" | cut -f1) in $dir/usr, $(du -sh "$dir/googletest" | cut -f1) in" \
     "$dir/googletest; carry $dir: run(carry=[\"$dir\"], command=\"scripts/device_run.sh\", timeout_s=570)"
