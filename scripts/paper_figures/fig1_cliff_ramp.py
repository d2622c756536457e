"""Figure 1: the memory cliff against the latency ramp. Per model, a sweep over the number of
sessions started at once, unbounded against windowed KV; p99 frame latency, true and reported."""
import math

import numpy as np

from .plots import (COLORS, censored_markers, column_figure, deadline_line, finish, handles_of,
                    num, panel, plain_log, strip_legend)
from .runs import model_scenario, spec, windowed

NUMBER = 1
SPEC = "fig1_cliff_ramp.json"


def model_dir(key):
    """Under data/: the model's composed scenario and its sweep/ (runs.csv, cost_model.json)."""
    return f"fig1/{key}"


def run(r, w, quick):
    sp = spec(SPEC, quick)
    for key, sessions in sp["sessions"].items():
        s = windowed(model_scenario(sp["scenario"], w, key), w, key)
        path = r.write_scenario(r.data(model_dir(key), "scenario.in.json"), s)
        r.sweep(path, r.data(model_dir(key), "sweep"),
                [("workload.arrival.sessions", sessions), ("kv_policy.type", sp["policies"])], "1")


def plot(d, w, quick):
    sp = spec(SPEC, quick)
    keys = list(sp["sessions"])
    rows = int(math.ceil(len(keys) / 2))
    fig, lax, axes = column_figure(1.45 * rows, rows, 2, legend_rows=2)
    flat = [a for r in axes for a in r]
    for n_ax, (ax, key) in enumerate(zip(flat, keys)):
        runs = d.csv(f"{model_dir(key)}/sweep/runs.csv")
        deadline_ms = 1e3 * w["models"][key]["workload"]["frame_period_s"]
        for pol in ("unbounded", "windowed"):
            rs = [r for r in runs if r["grid.kv_policy.type"] == pol]
            n = np.array([num(r["grid.workload.arrival.sessions"]) for r in rs])
            true = np.array([num(r["true_p99_ms"]) for r in rs])
            ax.plot(n, true, "-o", color=COLORS[pol], label=f"{pol}, true")
            censored_markers(ax, n, true, COLORS[pol], label=f"{pol}, censored")
            if pol == "unbounded":
                rep = np.array([num(r["reported_p99_ms"]) for r in rs])
                ax.plot(n, rep, ":s", color="0.45", mfc="none", label="unbounded, reported")
        ax.set_yscale("log")
        ax.set_xscale("log")
        lo, hi = ax.get_ylim()
        # Room for the censored row at the top, and a margin below and beside the lowest and
        # outermost points (a line on an axis edge is hidden by the frame).
        ax.set_ylim(lo / 1.6, max(hi, deadline_ms * 4) * 3)
        ns = [num(r["grid.workload.arrival.sessions"]) for r in runs]
        ax.set_xlim(min(ns) / 1.35, max(ns) * 1.35)
        deadline_line(ax, deadline_ms, where="left")
        plain_log(ax.yaxis, (1.0, 3.0))
        plain_log(ax.xaxis)
        panel(ax, "abcd"[n_ax], w["models"][key]["label"])
        if n_ax % 2 == 0:
            ax.set_ylabel("p99 frame latency (ms)")
        if n_ax >= len(keys) - 2:
            ax.set_xlabel("concurrent sessions N")
    strip_legend(lax, *handles_of(*flat), ncol=2)
    cost = d.cost_models([f"{model_dir(k)}/sweep/cost_model.json" for k in keys])
    return finish(fig, d.out, "fig1_cliff_vs_ramp", 1, sp["title"], cost,
                  "p99 per-frame latency over the whole run against the number of sessions "
                  "started at once (calls as long as the run), unbounded vs windowed KV, each "
                  "model's own H200 pool (scenarios/experiments/fig1_cliff_ramp.json). True "
                  "latency is the time to useful output; reported is what a health monitor sees "
                  "(silence counts as answered). Hollow triangles at the top: runs where more than "
                  "1% of frames never got output, so the true p99 is not defined (censored). "
                  "Windowed reported latency equals its true latency and is not drawn.")
