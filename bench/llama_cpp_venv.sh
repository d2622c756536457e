#!/usr/bin/env bash
# Builds llama.cpp, the reference CPU implementation, into a virtual environment of ours through
# PyPI's llama-cpp-python (it compiles llama.cpp from source: several minutes on 2 cores), for
# bench/quality_forward.sh. Idempotent: an environment that already imports llama_cpp is kept.
#   bench/llama_cpp_venv.sh [DIR]     (default .cache/llama-cpp-venv, git-ignored)
# The build is for x86-64-v3 (AVX2, FMA, F16C), the instruction set metronome's forward pass is
# built for, not the build machine's (GGML_NATIVE=OFF): the comparison is then one ISA against one
# ISA, whatever machine runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.cache/llama-cpp-venv}
version=0.3.36
if [[ -x $dir/bin/python ]] && "$dir/bin/python" -c 'import llama_cpp' 2>/dev/null; then
  echo "llama_cpp_venv: $dir (llama-cpp-python $("$dir/bin/python" -c \
    'import llama_cpp; print(llama_cpp.__version__)'))" >&2
  exit 0
fi
python3 -m venv "$dir" ||
  { echo "llama_cpp_venv: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 2; }
"$dir/bin/pip" install --quiet --upgrade pip
# Two compile jobs at most: the machine is shared. LLAVA_BUILD=OFF: the multimodal library (45 more
# files, a third of the build) is not needed for a text model.
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_AVX512=OFF -DGGML_OPENMP=ON -DLLAMA_CURL=OFF -DLLAVA_BUILD=OFF" \
  "$dir/bin/pip" install --quiet --no-cache-dir "llama-cpp-python==$version"
echo "llama_cpp_venv: $dir (llama-cpp-python $version)" >&2
