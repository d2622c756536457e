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
# Other layers of the same GPU the shape-aware correction is fitted on with the profile above.
TRANSFER = {"h100": ["internlm/internlm-20b", "codellama/CodeLlama-34b-Instruct-hf"]}
SHAPE_AWARE_KEYS = ["gemm_memory", "gemm_compute", "gemm_overlap", "gemm_kernel_s", "norm", "rope",
                    "activation", "add", "pointwise_kernel_s"]
BLOCKS = ["roofline_correction", "shape_aware_correction"]


def rounded(x):
    return float(f"{x:.4g}")


def write_gpu(gpu, blocks):
    path = ROOT / "scenarios" / "gpus" / f"{gpu}.json"
    text = path.read_text()
    # Keep the hand-written part as written (141e9, not 141000000000.0): replace or append only
    # the fitted blocks, always the file's last fields, in BLOCKS order.
    cut = text.find(',\n  "roofline_correction"')
    head = text[:cut] if cut >= 0 else text.rstrip().rstrip("}").rstrip()
    for name in BLOCKS:
        if name in blocks:
            block = json.dumps(blocks[name], indent=2).replace("\n", "\n  ")
            head += f',\n  "{name}": {block}'
    path.write_text(head + "\n}\n")
    json.loads(path.read_text())  # still valid JSON
    for name in blocks:
        print(f"import_vidur: {path.relative_to(ROOT)}: {name} "
              f"(fitted on {blocks[name]['fitted_on']})")


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
        shape = f"/tmp/metronome_import_vidur_{gpu}_shape_aware.json"
        cmd = [a.metronome, "calibrate", "import-vidur", "results/vidur", "--model", model,
               "--gpu", gpu, "--date", "2024-11-19 (Vidur commit 7d47513)", "--out", out,
               "--correction-out", corr]
        for other in TRANSFER.get(gpu, []):
            cmd += ["--transfer-model", other]
        if gpu in TRANSFER:
            cmd += ["--transfer-out", shape]
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
        fitted[gpu] = {"roofline_correction": block}
        if gpu in TRANSFER:
            sa = json.loads(pathlib.Path(shape).read_text())
            fitted[gpu]["shape_aware_correction"] = {
                **{k: rounded(sa[k]) for k in SHAPE_AWARE_KEYS},
                **{k: sa[k] for k in ["fitted_on", "source", "held_out"]}}
        write_gpu(gpu, fitted[gpu])
    for gpu, (sibling, why) in ASSUMED.items():
        blocks = {}
        for name, theirs in fitted[sibling].items():
            keys = KEYS if name == "roofline_correction" else SHAPE_AWARE_KEYS
            blocks[name] = {k: theirs[k] for k in keys}
            blocks[name]["fitted_on"] = sibling
            blocks[name]["source"] = (f"assumed: the {sibling} fit ({why}); no measurements of "
                                      f"this GPU")
        write_gpu(gpu, blocks)


if __name__ == "__main__":
    main()
