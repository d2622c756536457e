#!/usr/bin/python3
"""Plots the paper's figures and writes REPORT.md from what scripts/experiments.py had metronome
write under OUT/data/: each figure's plot() in scripts/paper_figures/figN_NAME.py, then the report
(scripts/paper_figures/report.py, its table rows from each figure's module). Reads only simulator
outputs (and the experiment files, for labels and the arrival schedule of the first-order curve in
figure 2).

    figures.py --out results [--quick] [--started EPOCH_SECONDS] [-j N]

Every headline number in REPORT.md sits in a table row beside the JSON pointer(s) it was read from
(file#/pointer, in the order the numbers appear; "x100" marks a fraction shown in percent), so
tests/figures/check_figures.py can re-read each one.
"""
import argparse
import concurrent.futures
import multiprocessing
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paper_figures import figure_numbers, report, selected  # noqa: E402
from paper_figures.plots import Data, DataError  # noqa: E402
from paper_figures.runs import EXP_DIR, ROOT, load  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "results"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--started", type=float, default=None,
                    help="epoch seconds when the whole command started (for the report's timing)")
    ap.add_argument("--only", type=figure_numbers, default=set(),
                    help="comma-separated figure numbers: plot only those (their data only is "
                         "read) and write no REPORT.md, which needs every figure's data")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="figures plotted at once, one process each (default: all cores); each "
                         "figure is drawn whole by one process, so its files are the same bytes "
                         "whatever N")
    a = ap.parse_args()
    if a.jobs < 1:
        ap.error(f"argument -j/--jobs: expected at least 1 process, not {a.jobs}")
    d = Data(os.path.abspath(a.out))
    w = load(os.path.join(EXP_DIR, "workloads.json"))
    plots = selected()  # as experiments.py ran them
    unknown = a.only - {f.NUMBER for f in plots}
    if unknown:
        ap.error(f"argument --only: figure {', '.join(map(str, sorted(unknown)))} is not plotted "
                 "here (METRONOME_FIGURES_NO_QUALITY leaves figure 8 out)")
    try:
        if a.only:
            done = [png for png, _ in plot_all([f for f in plots if f.NUMBER in a.only], d, w,
                                               a.quick, a.jobs)]
            print(f"figures: {', '.join(done)} in {os.path.relpath(a.out)} (no REPORT.md: it "
                  "needs every figure)", file=sys.stderr)
            return
        figs = plot_all(plots, d, w, a.quick, a.jobs)
        report.write(d, w, a.quick, plots, figs)
    except (FileNotFoundError, NotADirectoryError) as e:
        missing_data(e, d)
    except DataError as e:
        sys.stderr.write(f"figures: --out {d.out}: {e}\n")
        sys.exit(2)
    print(f"figures: {len(figs)} figures and REPORT.md in {os.path.relpath(a.out)}", file=sys.stderr)


_TODO = None  # what the forked plotting processes share: (modules, data, workloads, quick)


def _plot(i):
    plots, d, w, quick = _TODO
    return plots[i].plot(d, w, quick)


def plot_all(plots, d, w, quick, jobs):
    """Each module's plot() return value (png, caption), in the modules' order. With jobs > 1 the
    figures are drawn in forked processes that inherit the imports and matplotlib's settings (the
    plots use about 8 s of one core, which would otherwise leave the other idle)."""
    global _TODO
    if jobs == 1 or len(plots) < 2:
        return [f.plot(d, w, quick) for f in plots]
    _TODO = (plots, d, w, quick)
    ctx = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(min(jobs, len(plots)), mp_context=ctx) as ex:
        return list(ex.map(_plot, range(len(plots))))


def missing_data(e, d):
    """A data file that is not there: the user's error (no experiments.py run into this --out, or
    one for other figures), said as such instead of a traceback."""
    if e.filename and os.path.abspath(e.filename).startswith(d.root + os.sep):
        sys.stderr.write(f"figures: --out {d.out}: {e.filename} is missing; scripts/experiments.py "
                         "--out with the same folder writes it (scripts/make_figures.sh runs "
                         "both)\n")
        sys.exit(2)
    raise e


if __name__ == "__main__":
    main()
