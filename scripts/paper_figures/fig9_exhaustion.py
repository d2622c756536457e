"""Figure 9: after exhaustion. Per model, 300 callers on unbounded KV under three engine behaviours
at exhaustion (stall, preempt and recompute, vLLM V1's scheduler)."""
import os

import matplotlib.pyplot as plt
import numpy as np

from .plots import (aligned_samples, censored_markers, column_figure, finish, handles_of, label,
                    num, panel, plain_log, rebin, strip_legend)
from .runs import aligned_period, merge, model_scenario, spec

NUMBER = 9
SPEC = "fig9_exhaustion.json"


def run_dir(key, mode):
    """Under data/: one simulate run (summary.json, timeseries.csv)."""
    return f"fig9/{key}/{mode}"


def run(r, w, quick):
    sp = spec(SPEC, quick)
    calls = []
    for key in sp["models"]:
        for mode, m in sp["modes"].items():
            s = merge(model_scenario(sp["scenario"], w, key), {"engine": m["engine"]})
            # Samples span whole frames (Omni chunks are 2 s; Moshi's 80 ms frames, 13 to a
            # sample), so a sample without a due frame does not read as one where nothing was
            # answered, and each holds the same number of frames.
            T = s["workload"]["frame_period_s"]
            s["output"] = {"sample_period_s": aligned_period(T, max(1.0, 2 * T))}
            out_dir = r.dir(run_dir(key, mode))
            path = r.write_scenario(os.path.join(out_dir, "scenario.in.json"), s)
            calls.append((["simulate", "--scenario", path, "--out", out_dir], None))
    r.parallel(calls)


def plot(d, w, quick):
    sp = spec(SPEC, quick)
    styles = {"frame_stall": ("tab:red", "-"), "frame_preempt_recompute": ("tab:orange", "--"),
              "vllm_v1": ("tab:blue", ":")}
    models = sp["models"]
    fig, lax, axes = column_figure(1.9 * len(models) * 1.0 + 0.6, 2 * len(models), 1,
                                   legend_rows=3, height_ratios=[1.3, 1] * len(models))
    axes = [r[0] for r in axes]
    rels = []
    for mi, key in enumerate(models):
        top, bottom = axes[2 * mi], axes[2 * mi + 1]
        bottom.sharex(top)
        for mode, m in sp["modes"].items():
            rel = run_dir(key, mode)
            rels.append(rel + "/summary.json")
            summ = d.json(rel + "/summary.json")
            ts = d.csv(rel + "/timeseries.csv")
            wl = summ["scenario"]["workload"]
            kk = aligned_samples(summ["scenario"]["output"]["sample_period_s"],
                                 wl["frame_period_s"])
            ts = rebin(ts, kk)
            t = np.array([num(r["t_s"]) for r in ts])
            p99 = np.array([num(r["true_p99_ms"]) for r in ts])
            # Past 1% of a window's due frames without output by the silence threshold, the p99
            # over its due frames is censored (as in figure 3).
            silent = np.array([num(r["silent_frame_fraction"]) for r in ts])
            p99[silent > 0.01] = np.nan
            due = np.array([num(r["frames_due"]) for r in ts])
            p99[due == 0] = -1  # nothing due: not censored, just nothing to show
            color, ls = styles[mode]
            shown = np.where(p99 < 0, np.nan, p99)
            top.plot(t, shown, color=color, ls=ls, lw=1.1, label=m["label"])
            censored_markers(top, t, np.where(p99 < 0, 0, p99), color,
                             label=f"{m['label']}: censored", most=25,
                             level=0.94 - 0.07 * list(sp["modes"]).index(mode))
            bottom.plot(t, [num(r["tokens_per_frame"]) for r in ts], color=color, ls=ls, lw=1.1)
            stall = summ["result"]["first_stall_s"]
            if stall is not None:
                for a in (top, bottom):
                    a.axvline(stall, color=color, lw=0.5, ls=":")
        top.set_yscale("log")
        plain_log(top.yaxis)
        lo, hi = top.get_ylim()
        top.set_ylim(lo, hi * 8)  # room for the censored rows
        top.set_ylabel("true p99 (ms)")
        panel(top, "ab"[mi], f"{w['models'][key]['label']}, 300 callers")
        plt.setp(top.get_xticklabels(), visible=False)
        bottom.set_ylabel("tokens per\ndue frame")
        bottom.set_ylim(-0.05, max(1.2, bottom.get_ylim()[1]))
        if mi == len(models) - 1:
            bottom.set_xlabel("time (s)")
    strip_legend(lax, *handles_of(*axes), ncol=2)
    return finish(fig, d.out, "fig9_exhaustion", 9, sp["title"], d.cost_models(rels),
                  "Per model, 300 callers on unbounded KV, under three engine behaviours at "
                  "exhaustion (colour and line style): the true p99 frame latency (log scale) and "
                  "the tokens produced per due frame, per window of whole frames. Hollow "
                  "triangles at the top, one row per behaviour: windows whose p99 is censored "
                  "(over 1% of their due frames had no output by the silence threshold). "
                  "Dotted verticals: the pool is exhausted, per behaviour.")


def rows(t, w, quick):
    sp = spec(SPEC, quick)
    for key in sp["models"]:
        for mode, m in sp["modes"].items():
            rel = f"{run_dir(key, mode)}/summary.json#/result/"
            t.row(f"after exhaustion, {label(w, key)}, 300 callers, {m['label']}: first stall; "
                  "true p50 latency over the run (null: more than half the frames never "
                  "answered); frames served of due; preemptions",
                  "latency flat, then a wall of about 1.6 s with no tokens",
                  "stall at {} s; true median {} ms; {} of {} frames; {} preemptions",
                  [rel + "first_stall_s", rel + "true_p50_ms", rel + "frames_served",
                   rel + "frames_due", rel + "preemptions"])
