#!/usr/bin/env bash
# The PyTorch device path on the device machine (torch installed there; nothing to build): times the
# grid with SDPA and FlexAttention and writes $OUT/bench_torch_<model>.json for
# `metronome calibrate fit` here. Without a GPU it exits 3; --dry-run times the CPU instead.
#   run(command="scripts/gpu_calibrate_torch.sh --model moshi", timeout_s=300)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=moshi grid=gpu limit=200 dry=()
die() { echo "gpu_calibrate_torch: $*" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --model|--grid|--limit) [[ $# -ge 2 && -n $2 && $2 != --* ]] || die "$1 needs a value" ;;
  esac
  case $1 in
    --model) model=$2; shift 2 ;;
    --grid) grid=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --dry-run) dry=(--dry-run); shift ;;
    *) die "unknown argument $1" ;;
  esac
done
# The model name is part of two file names; torch_bench.py checks the rest of the arguments.
[[ $model =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "--model: expected a model name like moshi, got '$model'"
out=${OUT:-$root/out/torch}
mkdir -p "$out"
nvidia-smi > "$out/device.txt" 2>&1 || true
python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' >> "$out/device.txt" 2>&1 || true
python3 "$root/calibrate/torch/torch_bench.py" --model "$model" --grid "$grid" --limit-s "$limit" \
  --out "$out/bench_torch_$model.json" "${dry[@]}" 2>&1 | tee "$out/log_torch_$model.txt"
exit "${PIPESTATUS[0]}"
