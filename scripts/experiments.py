#!/usr/bin/python3
"""Runs the paper's experiments (scenarios/experiments/*.json) through the metronome CLI: each
figure's run() in scripts/paper_figures/figN_NAME.py, in figure order.

Every number a figure or the report shows comes from a file this script asks metronome to write
under OUT/data/figN/ (summary.json, timeseries.csv, runs.csv, aggregate.json, capacity JSON,
prediction JSON). The figure modules compose scenarios from the experiment files and the shipped
model and GPU files (by name), write each composed scenario next to its outputs, and run metronome;
nothing here computes a number itself.

    experiments.py --metronome build/metronome --out results [--quick] [-j 2] [--reuse 8]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paper_figures import selected  # noqa: E402
from paper_figures.runs import COST_MODEL, EXP_DIR, ROOT, Runner, load  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--metronome", default=os.path.join(ROOT, "build", "metronome"))
    ap.add_argument("--out", default=os.path.join(ROOT, "results"))
    ap.add_argument("--quick", action="store_true", help="fewer points and seeds (CI)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default="", help="comma-separated figure numbers, e.g. 1,4")
    ap.add_argument("--reuse", default="",
                    help="comma-separated figure numbers whose data in OUT, from the last run "
                         "(same --quick and --cost-model, as its runs_log.json says), are kept "
                         "instead of run again")
    # The compute budgets (workloads.json budget_fraction, scenarios/admission/ deadline_s) are
    # chosen on the corrected roofline; REPORT's cost-model rows show how far the raw one moves
    # the answer.
    ap.add_argument("--cost-model", choices=["auto", "roofline"], default="auto",
                    help="auto (default): measured calibration where the GPU has one, else the "
                         "corrected roofline; roofline: the raw datasheet roofline everywhere")
    a = ap.parse_args()
    COST_MODEL["choice"] = a.cost_model
    w = load(os.path.join(EXP_DIR, "workloads.json"))
    r = Runner(os.path.abspath(a.metronome), os.path.abspath(a.out), a.jobs)
    only = {int(x) for x in a.only.split(",") if x}
    reuse = {int(x) for x in a.reuse.split(",") if x}
    log_path = os.path.join(a.out, "data", "runs_log.json")
    last = check_reusable(log_path, reuse, a.quick, a.cost_model) if reuse else {}
    timing, calls = {}, []
    for f in selected(only):
        i = f.NUMBER
        if i in reuse:
            # The log keeps the calls that wrote the reused data (the report counts them).
            r.figure = f"fig{i}"
            timing[r.figure] = last.get("seconds_per_figure", {}).get(r.figure)
            calls += [c for c in last["metronome_calls"] if c["figure"] == r.figure]
            r.say("data kept from the last run (--reuse)")
            continue
        # A dry pass counts the figure's metronome calls (a figure's run() only composes
        # scenarios and calls), so each call can say "3/12".
        r.figure, r.dry, r.planned, r.started = f"fig{i}", True, 0, 0
        f.run(r, w, a.quick)
        r.dry = False
        t0 = time.monotonic()
        f.run(r, w, a.quick)
        timing[f"fig{i}"] = round(time.monotonic() - t0, 2)
        calls += [{"figure": f"fig{i}", "seconds": round(t, 3), "command": c} for t, c in r.log]
        r.log.clear()
        r.say(f"figure {i} data in {timing[f'fig{i}']:.1f} s ({r.planned} metronome calls)")
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    with open(log_path, "w") as f:
        json.dump({"quick": a.quick, "cost_model": a.cost_model, "jobs": a.jobs,
                   "reused": sorted(f"fig{i}" for i in reuse), "seconds_per_figure": timing,
                   "metronome_calls": calls},
                  f, indent=1)
        f.write("\n")


def check_reusable(log_path, reuse, quick, cost_model):
    """Reused data must come from a run of the same mode: quick data plotted as a full run's (or
    the reverse) would put one experiment's numbers under another's labels."""
    def fail(why):
        print(f"experiments: --reuse {','.join(map(str, sorted(reuse)))}: {why}; run without "
              "--reuse first", file=sys.stderr)
        sys.exit(2)
    try:
        with open(log_path) as f:
            last = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{log_path} unreadable ({e})")
    if last.get("quick") != quick or last.get("cost_model") != cost_model:
        fail(f"{log_path} says the last run had quick={last.get('quick')}, cost model "
             f"{last.get('cost_model')}, not quick={quick}, cost model {cost_model}")
    calls = last.get("metronome_calls")
    if not isinstance(calls, list) or not all(isinstance(c, dict) and "figure" in c for c in calls):
        fail(f"{log_path} names no figure per metronome call (an older experiments.py wrote it)")
    for i in reuse:
        if not os.path.isdir(os.path.join(os.path.dirname(log_path), f"fig{i}")):
            fail(f"no data/fig{i} in {os.path.dirname(os.path.dirname(log_path))}")
    return last


if __name__ == "__main__":
    main()
