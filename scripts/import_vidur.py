#!/usr/bin/env python3
"""Imports the shipped Vidur profiles (results/vidur/) and writes what the cost models read.

For each profile: `metronome calibrate import-vidur` -> results/calibration/<model>_<gpu>_vidur.json
(measured token-level terms, analytic attention terms) and the GPU's fitted roofline correction,
which this script writes into scenarios/gpus/<gpu>.json. GPUs without a profile of their own get
the correction of their nearest profiled sibling, marked as assumed (fitted_on names the sibling).

Usage: scripts/import_vidur.py [--metronome build-cpu/metronome]
"""
import argparse
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROFILES = [  # (Vidur model, GPU)
    ("meta-llama/Llama-2-7b-hf", "h100"),
    ("meta-llama/Meta-Llama-3-8B", "a100"),
]
# GPUs with no profile: whose correction they borrow, and why that one.
ASSUMED = {
    "h200": ("h100", "same Hopper SM and tensor cores as the H100, HBM3e instead of HBM3"),
    "b200": ("h100", "no Blackwell profile exists here; the newest profiled GPU is the H100"),
}
KEYS = ["bandwidth_fraction", "pointwise_bandwidth_fraction", "flops_fraction",
        "layer_overhead_s", "pass_overhead_s"]


def rounded(x):
    return float(f"{x:.4g}")


def write_gpu(gpu, correction):
    path = ROOT / "scenarios" / "gpus" / f"{gpu}.json"
    text = path.read_text()
    # Keep the hand-written part as written (141e9, not 141000000000.0): replace or append only
    # the roofline_correction block, always the file's last field.
    cut = text.find(',\n  "roofline_correction"')
    head = text[:cut] if cut >= 0 else text.rstrip().rstrip("}").rstrip()
    block = json.dumps(correction, indent=2).replace("\n", "\n  ")
    path.write_text(f'{head},\n  "roofline_correction": {block}\n}}\n')
    json.loads(path.read_text())  # still valid JSON
    print(f"import_vidur: {path.relative_to(ROOT)}: roofline_correction "
          f"(fitted on {correction['fitted_on']})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metronome", default=str(ROOT / "build-cpu" / "metronome"))
    a = ap.parse_args()
    fitted = {}
    for model, gpu in PROFILES:
        short = model.split("/")[-1].lower()
        name = {"llama-2-7b-hf": "llama-2-7b", "meta-llama-3-8b": "llama-3-8b"}.get(short, short)
        out = f"results/calibration/{name}_{gpu}_vidur.json"
        corr = f"/tmp/metronome_import_vidur_{gpu}.json"
        cmd = [a.metronome, "calibrate", "import-vidur", "results/vidur", "--model", model,
               "--gpu", gpu, "--date", "2024-11-19 (Vidur commit 7d47513)", "--out", out,
               "--correction-out", corr]
        print("import_vidur:", " ".join(cmd))
        r = subprocess.run(cmd, cwd=ROOT)
        if r.returncode != 0:
            sys.exit(r.returncode)
        c = json.loads(pathlib.Path(corr).read_text())
        block = {k: rounded(c[k]) for k in KEYS}
        block["fitted_on"] = gpu
        block["source"] = (f"fitted by `metronome calibrate import-vidur` to Vidur's measured {gpu} "
                           f"profile of {model} (results/vidur/, MIT; torch profiler kernel "
                           f"times, not measured by this project)")
        block["error"] = c["error"]
        fitted[gpu] = block
        write_gpu(gpu, block)
    for gpu, (sibling, why) in ASSUMED.items():
        block = {k: fitted[sibling][k] for k in KEYS}
        block["fitted_on"] = sibling
        block["source"] = (f"assumed: the {sibling} fit ({why}); no measurements of this GPU")
        write_gpu(gpu, block)


if __name__ == "__main__":
    main()
