"""Figure 3: the silent failure. One Moshi run on unbounded KV past exhaustion: the health monitor's
latency and miss rate look fine while frames are answered with silence."""
import os

import matplotlib.pyplot as plt
import numpy as np

from .plots import (aligned_samples, censored_markers, column_figure, deadline_line, finish,
                    handles_of, num, panel, rebin, strip_legend)
from .runs import aligned_period, model_scenario, spec

NUMBER = 3
SPEC = "fig3_silent_failure.json"
RUN = "fig3/run"  # under data/: the one simulate run (summary.json, timeseries.csv)


def run(r, w, quick):
    sp = spec(SPEC, quick)
    s = model_scenario(sp["scenario"], w, sp["model_key"])
    arr = s["workload"]["arrival"]
    s["output"] = dict(s.get("output", {}), sample_period_s=aligned_period(
        s["workload"]["frame_period_s"], s.get("output", {}).get("sample_period_s", 1.0),
        arr.get("interval_s") if arr.get("type") == "fixed_interval" else None))
    run_dir = r.dir(RUN)
    path = r.write_scenario(os.path.join(run_dir, "scenario.in.json"), s)
    r.call(["simulate", "--scenario", path, "--out", run_dir])


def plot(d, w, quick):
    sp = spec(SPEC, quick)
    summ = d.json(f"{RUN}/summary.json")
    wl = summ["scenario"]["workload"]
    period = summ["scenario"]["output"]["sample_period_s"]
    k = aligned_samples(period, wl["frame_period_s"], wl["arrival"].get("interval_s"))
    ts = rebin(d.csv(f"{RUN}/timeseries.csv"), k)
    t = np.array([num(r["t_s"]) for r in ts])
    col = lambda c: np.array([num(r[c]) for r in ts])  # noqa: E731
    fig, lax, axes = column_figure(3.6, 3, 1, legend_rows=3, sharex=True)
    axes = [r[0] for r in axes]
    dl = summ["deadline_ms"]
    a = axes[0]
    a.plot(t, col("reported_p99_ms"), color="0.45", lw=1.6, label="reported")
    # The series' true p99 is over the frames answered in a window; where more than 1% of its due
    # frames got no output by silence_after_s, the p99 over its due frames is past that: censored.
    true = np.where(col("silent_frame_fraction") > 0.01, np.nan, col("true_p99_ms"))
    a.plot(t, true, color="tab:red", label="true")
    censored_markers(a, t, true, "tab:red", label="true: no output (censored)", most=30)
    lo, hi = a.get_ylim()
    a.set_ylim(0, max(hi, dl) * 1.35)
    deadline_line(a, dl, where="left")
    a.set_ylabel("p99 frame\nlatency (ms)")
    panel(a, "a", "per-frame latency")
    a = axes[1]
    a.plot(t, 100 * col("deadline_miss_rate_reported"), color="0.45", lw=1.6, ls="-")
    a.plot(t, 100 * col("silent_frame_fraction"), color="tab:purple",
           label="silent frames")
    a.set_ylim(-5, 105)
    a.set_ylabel("share of due\nframes (%)")
    panel(a, "b", "reported deadline misses (grey) vs silence")
    a = axes[2]
    a.plot(t, col("tokens_per_frame"), color="tab:green", label="tokens per due frame")
    a.set_ylabel("tokens per\ndue frame")
    a.set_xlabel("time (s)")
    a.set_ylim(-0.05, 1.15)
    b = a.twinx()
    b.plot(t, col("pool_fraction"), color="tab:blue", ls="--", label="KV pool fraction")
    b.set_ylabel("pool fraction")
    b.set_ylim(-0.05, 1.15)
    panel(a, "c", "output and memory")
    stall = summ["result"]["first_stall_s"]
    for a in axes:
        if stall is not None:
            a.axvline(stall, color="k", lw=0.6, ls=":", label="pool exhausted")
        plt.setp(a.get_xticklabels(), visible=a is axes[-1])
    strip_legend(lax, *handles_of(*axes, b), ncol=2)
    win = k * period
    return finish(fig, d.out, "fig3_silent_failure", 3, sp["title"],
                  d.cost_models([f"{RUN}/summary.json"]),
                  f"One Moshi run on one H200, unbounded KV, one caller every "
                  f"{wl['arrival'].get('interval_s', 0):g} s, calls longer than the run. Each point "
                  f"is a {win:g} s window ({win / wl['frame_period_s']:.0f} frames of each session, "
                  "a whole number of frames and arrivals, so every window holds the same frames "
                  "and the per-window ratios do not alias). (a) p99 frame latency as reported "
                  "and as true (censored, a triangle, where over 1% of a window's due frames never had output by the silence threshold); (b) reported deadline-miss rate (grey, 0 throughout) and the "
                  "share of frames answered with silence; (c) tokens produced per due frame and "
                  "the KV pool in use. Dotted vertical: the pool is exhausted.")


def rows(t, w, quick):
    f3 = f"{RUN}/summary.json#/"
    t.row("silent failure, Moshi, unbounded KV, one caller every Delta over the run: reported "
          "deadline-miss rate; frames answered with silence",
          "health metrics look fine while users hear silence",
          "Delta = {:g} s, {:g} s run: {:.1f}% reported misses; {:.1f}% of frames silent",
          [f3 + "scenario/workload/arrival/interval_s", f3 + "scenario/horizon_s",
           f3 + "result/deadline_miss_rate_reported", f3 + "result/silent_frame_fraction"],
          scales=[None, None, 100, 100])
