#!/usr/bin/env bash
# The PyTorch device path's dry run on this machine's CPU: calibrate/torch/torch_bench.py --dry-run
# (tiny model, grid ci), `metronome calibrate fit` on its JSON, and a fit of the faster per
# shape of it and our CPU reference kernels on the same grid. Uses the first python that has
# torch: $METRONOME_TORCH_PYTHON, the venv scripts/torch_venv.sh makes (build-torch-venv/), then
# python3. Exits 77 (ctest: skipped) with a message where none has torch.
#   scripts/torch_dry_run.sh METRONOME_BINARY OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
metronome=${1:?usage: torch_dry_run.sh METRONOME OUT_DIR}
out=${2:?usage: torch_dry_run.sh METRONOME OUT_DIR}
py=""
for c in "${METRONOME_TORCH_PYTHON:-}" "$root/build-torch-venv/bin/python" python3; do
  if [[ -n "$c" ]] && "$c" -c 'import torch' 2>/dev/null; then py=$c; break; fi
done
if [[ -z "$py" ]]; then
  echo "torch_dry_run: SKIP: no python with torch (set METRONOME_TORCH_PYTHON, or run" \
       "scripts/torch_venv.sh: a large download)"
  exit 77
fi
mkdir -p "$out"
"$py" "$root/calibrate/torch/torch_bench.py" --dry-run --out "$out/bench_torch_dry.json"
"$metronome" calibrate fit --bench "$out/bench_torch_dry.json" --out "$out/torch_dry_cal.json"
# The same grid on our CPU reference kernels, and the fit of the faster per shape of the two.
"$metronome" calibrate run --model tiny --backend cpu --grid ci --out "$out/bench_cpu_ci.json" \
  --benchmark-arg=--benchmark_format=json > /dev/null
"$metronome" calibrate fit --bench "$out/bench_cpu_ci.json" --bench "$out/bench_torch_dry.json" \
  --out "$out/faster_dry_cal.json"
echo "torch_dry_run: ok ($py)"
