"""Figure 2: the KV pool filling under staggered arrivals, simulated against the first-order model
rho(t) = rho0 + r x (sum of session ages), per model and arrival interval."""
import math
import os

import matplotlib.pyplot as plt
import numpy as np

from .plots import (INTERVAL_COLORS, aligned_samples, column_figure, finish, handles_of, num,
                    panel, strip_legend)
from .runs import model_scenario, spec

NUMBER = 2
SPEC = "fig2_pool_fill.json"


def run_dir(key, interval_s):
    """Under data/: one simulate run (scenario.in.json, summary.json, timeseries.csv)."""
    return f"fig2/{key}/interval_{interval_s:g}s"


def run(r, w, quick):
    sp = spec(SPEC, quick)
    calls = []
    for key, intervals in sp["intervals_s"].items():
        for d in intervals:
            s = model_scenario(sp["scenario"], w, key)
            s["workload"]["arrival"]["interval_s"] = d
            s["workload"]["arrival"]["sessions"] = int(math.ceil(s["horizon_s"] / d)) + 1
            out_dir = r.dir(run_dir(key, d))
            path = r.write_scenario(os.path.join(out_dir, "scenario.in.json"), s)
            calls.append((["simulate", "--scenario", path, "--out", out_dir], None))
    r.parallel(calls)


def first_order_rho(t, r, rho0, start, interval, sessions):
    """rho(t) = rho0 + r x (sum of the ages of the sessions arrived by t), staggered arrivals."""
    a = start + interval * np.arange(sessions)
    ages = np.clip(t[:, None] - a[None, :], 0, None)
    return rho0 + r * ages.sum(axis=1)


def plot(d, w, quick):
    sp = spec(SPEC, quick)
    keys = list(sp["intervals_s"])
    rows = int(math.ceil(len(keys) / 2))
    # Per model: the fill (tall) over its residual in blocks (short): the curves overlap exactly.
    fig, lax, axes = column_figure(2.0 * rows, 2 * rows, 2, legend_rows=2,
                                   height_ratios=[2.2, 1] * rows)
    rels = []
    all_iv = sorted({iv for key in keys for iv in sp["intervals_s"][key]})
    for n_ax, key in enumerate(keys):
        top = axes[2 * (n_ax // 2)][n_ax % 2]
        res = axes[2 * (n_ax // 2) + 1][n_ax % 2]
        res.sharex(top)
        for i, iv in enumerate(sp["intervals_s"][key]):
            rel = run_dir(key, iv)
            rels.append(rel + "/summary.json")
            summ = d.json(rel + "/summary.json")
            ts = d.csv(rel + "/timeseries.csv")
            t = np.array([num(r["t_s"]) for r in ts])
            used = np.array([num(r["pool_used_blocks"]) for r in ts])
            rho = np.array([num(r["pool_fraction"]) for r in ts])
            p = summ["prediction"]
            arr = summ["scenario"]["workload"]["arrival"]
            pred = np.minimum(first_order_rho(t, p["r_per_s"], p["rho0"], arr["start_s"],
                                              arr["interval_s"], arr["sessions"]), 1.0)
            c = INTERVAL_COLORS[all_iv.index(iv) % len(INTERVAL_COLORS)]
            top.plot(t, rho, color=c, lw=1.6, label=f"sim., 1 caller / {iv:g} s")
            top.plot(t, pred, "--", color="k", lw=0.6, label="first-order model")
            top.axvline(p["t_sat_continuous_s"], color=c, ls=":", lw=0.8)
            stall = summ["result"]["first_stall_s"]
            if stall is not None:
                top.plot([stall], [1.0], "v", color="k", mfc=c, ms=4, label="sim. first stall")
            # Blocks: the fraction is used/total, so total = used / fraction where it is defined.
            total = p.get("num_blocks") or summ["result"].get("pool_blocks")
            if not total:
                ok = rho > 0
                total = float(np.median(used[ok] / rho[ok])) if ok.any() else 1.0
            # Per session arrived: whole-block allocation rounds each session up by under a block.
            arrived = np.clip(np.floor((t - arr["start_s"]) / arr["interval_s"]) + 1, 1,
                              arr["sessions"])
            keep = (pred < 1.0) & (t < (stall if stall is not None else np.inf))
            # Only samples a whole number of frames and arrivals apart: in between, each
            # session's last block is part-filled at a different phase (a sawtooth, not an error).
            kk = aligned_samples(summ["scenario"]["output"]["sample_period_s"],
                                 summ["scenario"]["workload"]["frame_period_s"], arr["interval_s"])
            keep &= (np.arange(len(t)) % kk) == kk - 1
            res.plot(t[keep], (used[keep] - pred[keep] * total) / arrived[keep], color=c, lw=0.8)
        top.set_ylim(0, 1.08)
        panel(top, "abcd"[n_ax], w["models"][key]["label"])
        plt.setp(top.get_xticklabels(), visible=False)
        res.axhline(0, color="k", lw=0.5)
        res.set_ylim(-0.6, 1.6)
        if n_ax % 2 == 0:
            top.set_ylabel("pool fraction")
            res.set_ylabel("sim. - pred.\n(blocks/sess.)")
        if n_ax >= len(keys) - 2:
            res.set_xlabel("time (s)")
    strip_legend(lax, *handles_of(*[a for r in axes for a in r]), ncol=2)
    return finish(fig, d.out, "fig2_pool_fill", 2, sp["title"], d.cost_models(rels),
                  "Fraction of the KV pool in use over time, simulated (coloured, one caller every "
                  "Delta s) and the first-order prediction rho(t) = rho0 + r x (sum of session "
                  "ages) (dashed black), unbounded KV, calls longer than the run, each model's "
                  "own H200 pool. Dotted verticals: the predicted t_sat; triangles: the "
                  "simulated first stall. The small panels give the residual, simulated minus "
                  "predicted, in KV blocks, up to saturation: the curves overlap to within "
                  "whole-block rounding.")
