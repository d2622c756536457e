#!/usr/bin/env bash
# Installs the Debian packages Metronome needs (only those missing), then configures and builds.
# Idempotent: a second run installs nothing and rebuilds only what changed.
#   scripts/setup.sh            build the metronome executable
#   scripts/setup.sh --tests    also build the test suite and benchmarks
set -euo pipefail
cd "$(dirname "$0")/.."
# Checked before anything is installed: a typo such as --test used to build without the tests.
tests=OFF
if (($# == 1)) && [[ $1 == --tests ]]; then
  tests=ON
elif (($#)); then
  echo "setup: unknown arguments '$*'; usage: scripts/setup.sh [--tests]" >&2
  exit 2
fi

packages=(build-essential cmake ninja-build pkg-config
  libeigen3-dev nlohmann-json3-dev libfmt-dev libcli11-dev libgtest-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev libopenmpi-dev openmpi-bin python3 python3-matplotlib python3-numpy
  python3-venv)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# nvcc is optional (CUDA Toolkit); put the usual install location on PATH when it is not already.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

cmake --preset default -DMETRONOME_BUILD_TESTS=$tests -DMETRONOME_BUILD_BENCH=$tests >/dev/null
cmake --build --preset default
