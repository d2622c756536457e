#!/usr/bin/python3
"""Plots the paper's figures and writes REPORT.md from what scripts/experiments.py had metronome
write under OUT/data/: each figure's plot() in scripts/paper_figures/figN_NAME.py, then the report
(scripts/paper_figures/report.py, its table rows from each figure's module). Reads only simulator
outputs (and the experiment files, for labels and the arrival schedule of the first-order curve in
figure 2).

    figures.py --out results [--quick] [--started EPOCH_SECONDS]

Every headline number in REPORT.md sits in a table row beside the JSON pointer(s) it was read from
(file#/pointer, in the order the numbers appear; "x100" marks a fraction shown in percent), so
tests/figures/check_figures.py can re-read each one.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paper_figures import report, selected  # noqa: E402
from paper_figures.plots import Data  # noqa: E402
from paper_figures.runs import EXP_DIR, ROOT, load  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "results"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--started", type=float, default=None,
                    help="epoch seconds when the whole command started (for the report's timing)")
    ap.add_argument("--only", default="",
                    help="comma-separated figure numbers: plot only those (their data only is "
                         "read) and write no REPORT.md, which needs every figure's data")
    a = ap.parse_args()
    d = Data(os.path.abspath(a.out))
    w = load(os.path.join(EXP_DIR, "workloads.json"))
    plots = selected()  # as experiments.py ran them
    only = {int(x) for x in a.only.split(",") if x}
    if only:
        unknown = only - {f.NUMBER for f in plots}
        if unknown:
            sys.exit(f"figures: --only: no figure {', '.join(map(str, sorted(unknown)))}")
        done = [f.plot(d, w, a.quick)[0] for f in plots if f.NUMBER in only]
        print(f"figures: {', '.join(done)} in {os.path.relpath(a.out)} (no REPORT.md: it needs "
              "every figure)", file=sys.stderr)
        return
    figs = [f.plot(d, w, a.quick) for f in plots]
    report.write(d, w, a.quick, plots, figs)
    print(f"figures: {len(figs)} figures and REPORT.md in {os.path.relpath(a.out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
