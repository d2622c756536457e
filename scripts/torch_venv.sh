#!/usr/bin/env bash
# A virtual environment with PyTorch from PyPI for the PyTorch path's dry run on a CPU
# (build-torch-venv/, ignored by git). PyPI's Linux torch wheel brings its CUDA libraries: a
# download of several GB, which is why CI does not run this (scripts/torch_dry_run.sh skips
# without torch). The device machine has torch already and needs none of this.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/build-torch-venv
python3 -m venv "$venv"
"$venv/bin/pip" install --upgrade pip
"$venv/bin/pip" install torch numpy
"$venv/bin/python" -c 'import torch; print("torch_venv:", torch.__version__)'
