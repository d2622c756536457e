"""Figure 6: the first-order prediction of t_sat against the simulated first stall, per model and
load, in its continuous and whole-block forms."""
import math

import numpy as np

from .plots import (MODEL_COLORS, column_figure, finish, handles_of, label, panel, plain_log,
                    strip_legend)
from .runs import model_scenario, spec

NUMBER = 6
SPEC = "fig6_prediction.json"


def run_stem(key, interval_s):
    """Under data/: one simulate run, STEM.scenario.json and STEM.summary.json."""
    return f"fig6/{key}/interval_{interval_s:g}s"


def run(r, w, quick):
    sp = spec(SPEC, quick)
    calls = []
    for key in w["models"]:
        for d in sp["intervals_s"]:
            s = model_scenario(sp["scenario"], w, key)
            s["workload"]["arrival"]["interval_s"] = d
            s["workload"]["arrival"]["sessions"] = int(math.ceil(s["horizon_s"] / d)) + 1
            base = r.data(run_stem(key, d) + ".scenario.json")
            path = r.write_scenario(base, s)
            calls.append((["simulate", "--scenario", path, "--json"],
                          base.replace(".scenario.json", ".summary.json")))
    r.parallel(calls)


def plot(d, w, quick):
    sp = spec(SPEC, quick)
    keys = list(w["models"])
    fig, lax, axes = column_figure(3.6, 2, 1, legend_rows=3)
    top, bot = axes[0][0], axes[1][0]
    rels = []
    for k, key in enumerate(keys):
        pred, predb, sim, load_ = [], [], [], []
        for iv in sp["intervals_s"]:
            rel = run_stem(key, iv) + ".summary.json"
            rels.append(rel)
            s = d.json(rel)
            if s["result"]["first_stall_s"] is None:
                continue
            pred.append(s["prediction"]["t_sat_continuous_s"])
            predb.append(s["prediction"]["t_sat_blocks_s"])
            sim.append(s["result"]["first_stall_s"])
            load_.append(1.0 / iv)
        pred, predb, sim, load_ = map(np.array, (pred, predb, sim, load_))
        c = MODEL_COLORS[k % len(MODEL_COLORS)]
        lab = w["models"][key]["label"]
        top.plot(pred, sim, "o", color=c, mfc="none", label=lab)
        bot.plot(load_, 100 * (sim - pred) / pred, "o-", color=c)
        bot.plot(load_, 100 * (sim - predb) / predb, "x:", color=c)
    lo = min(top.get_xlim()[0], top.get_ylim()[0])
    hi = max(top.get_xlim()[1], top.get_ylim()[1])
    top.plot([lo, hi], [lo, hi], "k-", lw=0.5, label="simulated = predicted", zorder=0)
    top.set_xscale("log")
    top.set_yscale("log")
    plain_log(top.xaxis, (1.0, 2.0, 5.0))
    plain_log(top.yaxis, (1.0, 2.0, 5.0))
    top.set_xlabel("predicted t_sat, first-order continuous (s)")
    top.set_ylabel("simulated first stall (s)")
    panel(top, "a", "predicted vs simulated")
    bot.plot([], [], "ko-", label="continuous form")
    bot.plot([], [], "kx:", label="whole-block form")
    bot.axhline(0, color="k", lw=0.5)
    bot.set_xscale("log")
    plain_log(bot.xaxis, (1.0, 2.0, 5.0))
    bot.set_xlabel("load (callers per second)")
    bot.set_ylabel("(sim. - pred.) / pred. (%)")
    panel(bot, "b", "error by load")
    strip_legend(lax, *handles_of(top, bot), ncol=2)
    return finish(fig, d.out, "fig6_prediction", 6, sp["title"], d.cost_models(rels[:1] + rels),
                  "(a) Simulated time of the first stall against the first-order prediction of "
                  "t_sat, per model (colour) and load (one caller every Delta s); the line is "
                  "simulated = predicted. (b) The prediction's error by load, for the continuous "
                  "form (circles) and the whole-block form (crosses). The paper reports a few "
                  "percent for Qwen3-Omni and about 13% for MiniCPM-o on a real engine. Unbounded "
                  "KV, staggered arrivals, each model's own H200 pool.")


def rows(t, w, quick):
    sp = spec(SPEC, quick)
    paper = {"qwen3-omni-30b-a3b": "within a few percent", "minicpm-o-4.5": "about 13%"}
    iv = sp["headline_interval_s"]
    for key in w["models"]:
        rel = run_stem(key, iv) + ".summary.json#/"
        t.row(f"t_sat at the paper's load, {label(w, key)}: one caller every Delta; predicted "
              "(first-order, continuous); simulated first stall; error of the continuous and of "
              "the whole-block prediction [whole blocks: by construction]", paper.get(key, "-"),
              "Delta = {:g} s: {:.1f} s predicted, {:.1f} s simulated; error {:+.2f}% "
              "(continuous), {:+.2f}% (whole blocks)",
              [rel + "scenario/workload/arrival/interval_s",
               rel + "prediction/t_sat_continuous_s", rel + "result/first_stall_s",
               rel + "result/t_sat_error_vs_continuous", rel + "result/t_sat_error_vs_blocks"],
              scales=[None, None, None, 100, 100])
