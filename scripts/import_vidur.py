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
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from atomic_file import write_atomically

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


def gpu_text(gpu, blocks):
    """The GPU file with its fitted blocks replaced, checked to be valid JSON before any write."""
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
    text = head + "\n}\n"
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        sys.exit(f"import_vidur: {path.relative_to(ROOT)} would not be valid JSON ({e}); "
                 f"nothing written")
    return path, text


def replace(path, text):
    write_atomically(path, lambda f: f.write(text))


def staged_writes(exe, tmp):
    """Runs every import into tmp; returns (committed path, new text, GPU blocks or None) for each
    file to replace. Exits, having written nothing, if an import fails."""
    writes = []
    fitted = {}
    for model, gpu in PROFILES:
        short = model.split("/")[-1].lower()
        name = {"llama-2-7b-hf": "llama-2-7b", "meta-llama-3-8b": "llama-3-8b"}.get(short, short)
        out = f"results/calibration/{name}_{gpu}_vidur.json"
        staged = tmp / pathlib.Path(out).name
        corr = tmp / f"{gpu}_correction.json"
        shape = tmp / f"{gpu}_shape_aware.json"
        cmd = [exe, "calibrate", "import-vidur", "results/vidur", "--model", model,
               "--gpu", gpu, "--date", "2024-11-19 (Vidur commit 7d47513)", "--out", str(staged),
               "--correction-out", str(corr)]
        for other in TRANSFER.get(gpu, []):
            cmd += ["--transfer-model", other]
        if gpu in TRANSFER:
            cmd += ["--transfer-out", str(shape)]
        print("import_vidur:", " ".join(cmd))
        r = subprocess.run(cmd, cwd=ROOT)
        if r.returncode != 0:
            print(f"import_vidur: {model} on {gpu} failed (exit {r.returncode}); nothing written",
                  file=sys.stderr)
            sys.exit(r.returncode)
        writes.append((ROOT / out, staged.read_text(), None))
        c = json.loads(corr.read_text())
        block = {k: rounded(c[k]) for k in KEYS}
        block["fitted_on"] = gpu
        block["source"] = (f"fitted by `metronome calibrate import-vidur` to Vidur's measured {gpu} "
                           f"profile of {model} (results/vidur/, MIT; torch profiler kernel "
                           f"times, not measured by this project)")
        block["error"] = c["error"]
        fitted[gpu] = {"roofline_correction": block}
        if gpu in TRANSFER:
            sa = json.loads(shape.read_text())
            fitted[gpu]["shape_aware_correction"] = {
                **{k: rounded(sa[k]) for k in SHAPE_AWARE_KEYS},
                **{k: sa[k] for k in ["fitted_on", "source", "held_out"]}}
        writes.append((*gpu_text(gpu, fitted[gpu]), fitted[gpu]))
    for gpu, (sibling, why) in ASSUMED.items():
        blocks = {}
        for name, theirs in fitted[sibling].items():
            keys = KEYS if name == "roofline_correction" else SHAPE_AWARE_KEYS
            blocks[name] = {k: theirs[k] for k in keys}
            blocks[name]["fitted_on"] = sibling
            blocks[name]["source"] = (f"assumed: the {sibling} fit ({why}); no measurements of "
                                      f"this GPU")
        writes.append((*gpu_text(gpu, blocks), blocks))
    return writes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metronome", default=str(ROOT / "build-cpu" / "metronome"))
    a = ap.parse_args()
    # It runs with cwd=ROOT, so a relative path is found from there (a bare name on PATH).
    exe = shutil.which(a.metronome) if "/" not in a.metronome else ROOT / a.metronome
    if not exe or not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        ap.error(f"--metronome: {a.metronome} is not an executable "
                 f"(cmake --preset cpu && cmake --build build-cpu)")
    # The committed files are replaced only once every import succeeded and every GPU file is
    # valid JSON, so a failure leaves them all as they were.
    with tempfile.TemporaryDirectory(prefix="metronome_import_vidur_") as tmp:
        writes = staged_writes(str(exe), pathlib.Path(tmp))
    for path, text, blocks in writes:
        replace(path, text)
        for name in blocks or []:
            print(f"import_vidur: {path.relative_to(ROOT)}: {name} "
                  f"(fitted on {blocks[name]['fitted_on']})")


if __name__ == "__main__":
    main()
