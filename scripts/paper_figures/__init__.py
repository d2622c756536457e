"""The paper's figures, one module per figure, each named like its experiment file
(scenarios/experiments/figN_NAME.json). A figure's module holds all of it: run(r, w, quick)
composes its scenarios and has metronome write its data under OUT/data/ (runs.py's Runner);
plot(d, w, quick) draws that data (plots.py) and returns (PNG path, caption); its REPORT rows are
functions that report.py calls in the table's order. Each module spells its data paths once, at
its top, and run, plot and rows use them from there."""
import argparse
import os

from . import (fig1_cliff_ramp, fig2_pool_fill, fig3_silent_failure, fig4_metastability,
               fig5_admission, fig6_prediction, fig7_capacity, fig8_quality, fig9_exhaustion,
               fig10_fleet_admission, fig11_fleet_size)

FIGURES = [fig1_cliff_ramp, fig2_pool_fill, fig3_silent_failure, fig4_metastability,
           fig5_admission, fig6_prediction, fig7_capacity, fig8_quality, fig9_exhaustion,
           fig10_fleet_admission, fig11_fleet_size]


def selected(only=()):
    """The figures to run and plot: those numbered in `only` (all if empty), less figure 8 where
    METRONOME_FIGURES_NO_QUALITY is set (sanitized test builds: its real model takes minutes)."""
    return [f for f in FIGURES if (not only or f.NUMBER in only) and
            not (f is fig8_quality and os.environ.get("METRONOME_FIGURES_NO_QUALITY"))]


def figure_numbers(text):
    """--only/--reuse: comma-separated figure numbers, each one of FIGURES. An argparse type, so a
    bad value is a usage error (exit 2) that names the option."""
    known = [f.NUMBER for f in FIGURES]
    span = f"{known[0]}-{known[-1]}"
    try:
        numbers = {int(x) for x in text.split(",") if x.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated figure numbers {span}, e.g. 1,4, not {text!r}")
    unknown = numbers - set(known)
    if unknown:
        raise argparse.ArgumentTypeError(
            f"no figure {', '.join(map(str, sorted(unknown)))} (figures are {span})")
    return numbers
