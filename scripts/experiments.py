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
from paper_figures import FIGURES, figure_numbers, selected  # noqa: E402
from paper_figures.runs import (COST_MODEL, EXP_DIR, ROOT, Runner, load,  # noqa: E402
                                replacing)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--metronome", default=os.path.join(ROOT, "build", "metronome"))
    ap.add_argument("--out", default=os.path.join(ROOT, "results"))
    ap.add_argument("--quick", action="store_true", help="fewer points and seeds (CI)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", type=figure_numbers, default=set(),
                    help="comma-separated figure numbers, e.g. 1,4")
    ap.add_argument("--reuse", type=figure_numbers, default=set(),
                    help="comma-separated figure numbers whose data in OUT are kept instead of run "
                         "again; each must come from a run of the same --quick and --cost-model, "
                         "as runs_log.json says per figure")
    # The compute budgets (workloads.json budget_fraction, scenarios/admission/ deadline_s) are
    # chosen on the corrected roofline; REPORT's cost-model rows show how far the raw one moves
    # the answer.
    ap.add_argument("--cost-model", choices=["auto", "roofline"], default="auto",
                    help="auto (default): measured calibration where the GPU has one, else the "
                         "corrected roofline; roofline: the raw datasheet roofline everywhere")
    a = ap.parse_args()
    if a.jobs < 1:
        ap.error(f"argument -j/--jobs: expected at least 1 run at once, not {a.jobs}")
    metronome = os.path.abspath(a.metronome)
    if not (os.path.isfile(metronome) and os.access(metronome, os.X_OK)):
        ap.error(f"argument --metronome: expected the metronome binary, {a.metronome} is no "
                 "executable file (cmake --build --preset default --target metronome)")
    out = os.path.abspath(a.out)
    log_path = os.path.join(out, "data", "runs_log.json")
    try:
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
    except OSError as e:
        ap.error(f"argument --out: expected a folder, cannot create {e.filename} ({e.strerror})")
    COST_MODEL["choice"] = a.cost_model
    w = load(os.path.join(EXP_DIR, "workloads.json"))
    r = Runner(metronome, out, a.jobs)
    figures = selected(a.only)
    reuse = {f.NUMBER for f in figures} & a.reuse
    last = read_log(log_path)
    if reuse:
        check_reusable(log_path, last, reuse, a.quick, a.cost_model)
    # The log says, per figure, which mode wrote its data and with which calls (--reuse trusts
    # it, the report counts the calls). Other figures' entries stay while their data does; the
    # entries of the figures about to run go before they start, so data left by an interrupted
    # or failed run is never taken for a finished one.
    kept = {k: v for k, v in (last or {"figures": {}})["figures"].items()
            if k in {f"fig{f.NUMBER}" for f in FIGURES} and
            os.path.isdir(os.path.join(out, "data", k))}
    for f in figures:
        if f.NUMBER not in reuse:
            kept.pop(f"fig{f.NUMBER}", None)
    log = {"jobs": a.jobs, "reused": sorted(f"fig{i}" for i in reuse), "figures": kept}
    calls = [c for c in (last or {"metronome_calls": []})["metronome_calls"] if c["figure"] in kept]
    write_log(log_path, log, calls)
    for f in figures:
        i = f.NUMBER
        if i in reuse:
            r.figure = f"fig{i}"
            r.say("data kept from the last run (--reuse)")
            continue
        # A dry pass counts the figure's metronome calls (a figure's run() only composes
        # scenarios and calls), so each call can say "3/12".
        r.figure, r.dry, r.planned, r.started = f"fig{i}", True, 0, 0
        f.run(r, w, a.quick)
        r.dry = False
        t0 = time.monotonic()
        f.run(r, w, a.quick)
        seconds = round(time.monotonic() - t0, 2)
        log["figures"][f"fig{i}"] = {"quick": a.quick, "cost_model": a.cost_model,
                                     "seconds": seconds}
        calls += [{"figure": f"fig{i}", "seconds": round(t, 3), "command": c} for t, c in r.log]
        r.log.clear()
        write_log(log_path, log, calls)
        r.say(f"figure {i} data in {seconds:.1f} s ({r.planned} metronome calls)")


def read_log(log_path):
    """The log of the runs into OUT, or None where there is none, it is unreadable or an older
    experiments.py wrote it (no mode per figure): then no figure's data there is known."""
    try:
        with open(log_path) as f:
            log = json.load(f)
    except (OSError, ValueError):
        return None
    ok = (isinstance(log, dict) and isinstance(log.get("figures"), dict) and
          all(isinstance(e, dict) for e in log["figures"].values()) and
          isinstance(log.get("metronome_calls"), list) and
          all(isinstance(c, dict) and "figure" in c for c in log["metronome_calls"]))
    return log if ok else None


def write_log(log_path, log, calls):
    """The figures' entries and calls in figure order, whichever run wrote them."""
    order = {f"fig{f.NUMBER}": n for n, f in enumerate(FIGURES)}
    log = dict(log, figures=dict(sorted(log["figures"].items(), key=lambda e: order[e[0]])),
               metronome_calls=sorted(calls, key=lambda c: order[c["figure"]]))
    with replacing(log_path) as tmp, open(tmp, "w") as f:
        json.dump(log, f, indent=1)
        f.write("\n")


def check_reusable(log_path, last, reuse, quick, cost_model):
    """Reused data must come from a run of the same mode: quick data plotted as a full run's (or
    the reverse) would put one experiment's numbers under another's labels."""
    def fail(why):
        print(f"experiments: --reuse {','.join(map(str, sorted(reuse)))}: {why}; run those "
              "figures without --reuse first", file=sys.stderr)
        sys.exit(2)

    def mode(q, c):
        return f"{'quick' if q else 'full'} mode, cost model {c}"
    if last is None:
        fail(f"{log_path} is missing, unreadable or from an older experiments.py (it must name "
             "the mode of each figure's data)")
    for i in sorted(reuse):
        data = os.path.join(os.path.dirname(log_path), f"fig{i}")
        entry = last["figures"].get(f"fig{i}")
        if not os.path.isdir(data) or entry is None:
            fail(f"{data}: no data of a finished run ({log_path} names none)")
        if entry.get("quick") != quick or entry.get("cost_model") != cost_model:
            fail(f"{data} came from a run in {mode(entry.get('quick'), entry.get('cost_model'))} "
                 f"(says {log_path}), not {mode(quick, cost_model)}")


if __name__ == "__main__":
    main()
