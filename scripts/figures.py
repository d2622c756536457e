#!/usr/bin/python3
"""Plots the paper's figures and writes REPORT.md from what scripts/experiments.py had metronome
write under OUT/data/. Reads only simulator outputs (and the experiment files, for labels and the
arrival schedule of the first-order curve in figure 2).

    figures.py --out results [--quick] [--started EPOCH_SECONDS]

Every headline number in REPORT.md sits in a table row beside the JSON pointer(s) it was read from
(file#/pointer, in the order the numbers appear; "x100" marks a fraction shown in percent), so
tests/figures/check_figures.py can re-read each one.
"""
import argparse
import csv
import json
import math
import os
import string
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXP_DIR = os.path.join(ROOT, "scenarios", "experiments")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiments import spec, load  # noqa: E402

COLORS = {"unbounded": "tab:red", "windowed": "tab:blue"}
# No creation date or tool version in the files: a rerun that changes nothing leaves them alone.
STABLE = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Producer": None, "Creator": None}}
MODEL_COLORS = ["tab:purple", "tab:orange", "tab:green", "tab:brown"]
INTERVAL_COLORS = ["#440154", "#31688e", "#35b779", "#b5a300"]  # viridis, the last darkened
# One paper column: 3.5 in wide, no text under 7 pt. Titles and captions live in REPORT.md.
COLUMN_IN = 3.5
MIN_PT = 7
plt.rcParams.update({
    "font.size": MIN_PT, "axes.titlesize": MIN_PT, "axes.labelsize": MIN_PT,
    "xtick.labelsize": MIN_PT, "ytick.labelsize": MIN_PT, "legend.fontsize": MIN_PT,
    "legend.title_fontsize": MIN_PT, "figure.titlesize": MIN_PT,
    "lines.linewidth": 1.0, "lines.markersize": 3, "axes.linewidth": 0.6,
    "xtick.major.width": 0.6, "ytick.major.width": 0.6, "xtick.minor.width": 0.4,
    "ytick.minor.width": 0.4, "legend.handlelength": 1.8, "legend.borderaxespad": 0.2,
    "legend.columnspacing": 1.0, "legend.handletextpad": 0.4, "legend.labelspacing": 0.25,
    "axes.titlepad": 3, "savefig.dpi": 300,
})
# Figures rendered by this process (name, figure) instead of closed, when a test asks for them.
KEEP = None


class Data:
    def __init__(self, out):
        self.out = out
        self.root = os.path.join(out, "data")

    def path(self, rel):
        return os.path.join(self.root, rel)

    def json(self, rel):
        return load(self.path(rel))

    def csv(self, rel):
        with open(self.path(rel)) as f:
            return list(csv.DictReader(f))

    def cost_models(self, rels):
        labels = []
        for rel in rels:
            lab = self.json(rel)["cost_model"]
            if lab not in labels:
                labels.append(lab)
        return labels


def num(x):
    return float(x) if x not in ("", None) else math.nan


def pointer(doc, ptr):
    for part in ptr.strip("/").split("/"):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def column_figure(height_in, rows, cols=1, legend_rows=0, height_ratios=None, **kw):
    """A figure one column wide: an optional legend strip on top (legend_rows lines of legend
    text), then a rows x cols grid of axes. Returns (fig, legend axes or None, axes[rows][cols])."""
    legend_in = 0.13 * legend_rows + 0.04 if legend_rows else 0
    fig = plt.figure(figsize=(COLUMN_IN, height_in + legend_in), layout="constrained")
    ratios = ([legend_in] if legend_rows else []) + (height_ratios or [1] * rows)
    scale = height_in / sum(height_ratios or [1] * rows)
    if legend_rows:
        ratios = [legend_in] + [r * scale for r in (height_ratios or [1] * rows)]
    gs = fig.add_gridspec(len(ratios), cols, height_ratios=ratios)
    off = 1 if legend_rows else 0
    lax = None
    if legend_rows:
        lax = fig.add_subplot(gs[0, :])
        lax.axis("off")
    axes = [[None] * cols for _ in range(rows)]
    for i in range(rows):
        for j in range(cols):
            share = {}
            if kw.get("sharex") and i > 0:
                share["sharex"] = axes[0][j]
            axes[i][j] = fig.add_subplot(gs[off + i, j], **share)
    return fig, lax, axes


def strip_legend(lax, handles, labels, ncol=2):
    """The figure's one legend, in its own strip above the data."""
    seen, hs, ls = set(), [], []
    for h, l in zip(handles, labels):
        if l and not l.startswith("_") and l not in seen:
            seen.add(l)
            hs.append(h)
            ls.append(l)
    # Two columns only where the labels fit beside each other in one column's width.
    ncol = ncol if max(len(x) for x in ls) <= 30 else 1
    lax.legend(hs, ls, loc="center", ncol=ncol, frameon=False, borderaxespad=0)


def handles_of(*axes):
    hs, ls = [], []
    for a in axes:
        h, l = a.get_legend_handles_labels()
        hs += h
        ls += l
    return hs, ls


def finish(fig, out, name, number, title, cost_labels, note=""):
    """Saves PNG and PDF; the caption (title, what is shown, cost model) goes to REPORT.md."""
    caption = (f"**Figure {number}. {title}.** " + (note + " " if note else "") +
               "Cost model: " + "; ".join(cost_labels) + ".")
    fig.get_layout_engine().set(w_pad=0.02, h_pad=0.02, hspace=0.02, wspace=0.02)
    os.makedirs(os.path.join(out, "figures"), exist_ok=True)
    for ext in ("png", "pdf"):
        fig.savefig(os.path.join(out, "figures", f"{name}.{ext}"), metadata=STABLE[ext])
    if KEEP is not None:
        KEEP.append((name, fig))
    else:
        plt.close(fig)
    return f"figures/{name}.png", caption


def plain_log(axis, subs=(1.0,)):
    """Log ticks read as numbers (1, 10, 100, 1000), not 10^k, with unlabelled minor ticks;
    subs=(1, 2, 5) labels 1-2-5 steps too, for an axis spanning about one decade."""
    axis.set_major_locator(mticker.LogLocator(base=10, subs=subs))
    axis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(mticker.NullFormatter())


def integer_ticks(axis):
    axis.set_major_locator(mticker.MaxNLocator(integer=True, nbins=5))


def deadline_line(ax, ms, where="right", color="k"):
    """The deadline, with its value written on it."""
    ax.axhline(ms, color=color, lw=0.7, ls="--", zorder=1)
    x = 0.99 if where == "right" else 0.01
    ax.text(x, ms, f"deadline {ms:g} ms", transform=ax.get_yaxis_transform(),
            ha="right" if where == "right" else "left", va="bottom", fontsize=MIN_PT, color=color)


def censored_markers(ax, x, y, color, label=None, level=0.96, most=None):
    """Points with no value (no output at all) as hollow triangles at the top of the axes; the
    real points' line is never drawn through them (NaN breaks it). most: thin a long run of them
    (a time series) to about that many markers."""
    x = np.asarray(x, float)
    gone = np.isnan(np.asarray(y, float))
    if gone.any():
        xs = x[gone]
        if most and len(xs) > most:
            xs = xs[::int(math.ceil(len(xs) / most))]
        ax.plot(xs, np.full(len(xs), level), "^", mfc="none", mec=color, ms=3.5, mew=0.7,
                ls="none", transform=ax.get_xaxis_transform(), clip_on=False, label=label)


def aligned_samples(period_s, frame_s, interval_s=None, limit=100):
    """Samples per plotted window: the fewest whole samples spanning whole frames (and whole
    arrival intervals), so each window holds the same number of due frames and no zig-zag."""
    for k in range(1, limit + 1):
        span = k * period_s
        ok = abs(span / frame_s - round(span / frame_s)) < 1e-6
        if interval_s:
            ok = ok and abs(span / interval_s - round(span / interval_s)) < 1e-6
        if ok:
            return k
    return 1


COUNTS = ("frames_due", "frames_served", "frames_on_time", "tokens_produced", "sessions_rejected")


def rebin(rows, k):
    """k consecutive samples as one: counts summed, tails (p99) the worst of the k, state
    (pool, live sessions, cap, the controller's last signal) as at the window's end."""
    if k <= 1:
        return rows
    out = []
    for g in range(0, len(rows) - k + 1, k):
        grp = rows[g:g + k]
        r = dict(grp[-1])
        for c in COUNTS:
            if c in r:
                r[c] = str(sum(int(x[c]) for x in grp))
        for c in ("reported_p99_ms", "true_p99_ms"):
            vals = [num(x[c]) for x in grp]
            # A window with any sample of no output is itself censored for the true tail.
            r[c] = "" if any(math.isnan(v) for v in vals) and c.startswith("true") else (
                str(np.nanmax(vals)) if not all(math.isnan(v) for v in vals) else "")
        due = max(1, int(r["frames_due"]))
        r["tokens_per_frame"] = str(int(r["tokens_produced"]) / due)
        silent = sum(num(x["silent_frame_fraction"]) * int(x["frames_due"]) for x in grp)
        r["silent_frame_fraction"] = str(silent / due if int(r["frames_due"]) else 0)
        miss = sum(num(x["deadline_miss_rate_reported"]) * int(x["frames_due"]) for x in grp)
        r["deadline_miss_rate_reported"] = str(miss / due if int(r["frames_due"]) else 0)
        out.append(r)
    return out


def short(label):
    """A model's label on two short lines, for category ticks in one column."""
    s = label.split(" (")[0]
    if " " in s:
        return s.replace(" ", "\n", 1)
    return s.replace("-", "-\n", 1) if "-" in s else s


def panel(ax, letter, text=""):
    ax.set_title(f"({letter}) {text}".rstrip(), loc="left")


# ----------------------------------------------------------------------------------------------

def fig1(d, w, quick):
    sp = spec("fig1_cliff_ramp.json", quick)
    keys = list(sp["sessions"])
    rows = int(math.ceil(len(keys) / 2))
    fig, lax, axes = column_figure(1.45 * rows, rows, 2, legend_rows=2)
    flat = [a for r in axes for a in r]
    for n_ax, (ax, key) in enumerate(zip(flat, keys)):
        runs = d.csv(f"fig1/{key}/sweep/runs.csv")
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
    cost = d.cost_models([f"fig1/{k}/sweep/cost_model.json" for k in keys])
    return finish(fig, d.out, "fig1_cliff_vs_ramp", 1, sp["title"], cost,
                  "p99 per-frame latency over the whole run against the number of sessions "
                  "started at once (calls as long as the run), unbounded vs windowed KV, each "
                  "model's own H200 pool (scenarios/experiments/fig1_cliff_ramp.json). True "
                  "latency is the time to useful output; reported is what a health monitor sees "
                  "(silence counts as answered). Hollow triangles at the top: runs where more than "
                  "1% of frames never got output, so the true p99 is not defined (censored). "
                  "Windowed reported latency equals its true latency and is not drawn.")


def first_order_rho(t, r, rho0, start, interval, sessions):
    """rho(t) = rho0 + r x (sum of the ages of the sessions arrived by t), staggered arrivals."""
    a = start + interval * np.arange(sessions)
    ages = np.clip(t[:, None] - a[None, :], 0, None)
    return rho0 + r * ages.sum(axis=1)


def fig2(d, w, quick):
    sp = spec("fig2_pool_fill.json", quick)
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
            rel = f"fig2/{key}/interval_{iv:g}s"
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


def fig3(d, w, quick):
    sp = spec("fig3_silent_failure.json", quick)
    summ = d.json("fig3/run/summary.json")
    wl = summ["scenario"]["workload"]
    period = summ["scenario"]["output"]["sample_period_s"]
    k = aligned_samples(period, wl["frame_period_s"], wl["arrival"].get("interval_s"))
    ts = rebin(d.csv("fig3/run/timeseries.csv"), k)
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
                  d.cost_models(["fig3/run/summary.json"]),
                  f"One Moshi run on one H200, unbounded KV, one caller every "
                  f"{wl['arrival'].get('interval_s', 0):g} s, calls longer than the run. Each point "
                  f"is a {win:g} s window ({win / wl['frame_period_s']:.0f} frames of each session, "
                  "a whole number of frames and arrivals, so every window holds the same frames "
                  "and the per-window ratios do not alias). (a) p99 frame latency as reported "
                  "and as true (censored, a triangle, where over 1% of a window's due frames never had output by the silence threshold); (b) reported deadline-miss rate (grey, 0 throughout) and the "
                  "share of frames answered with silence; (c) tokens produced per due frame and "
                  "the KV pool in use. Dotted vertical: the pool is exhausted.")


def fig4(d, w, quick):
    sp = spec("fig4_metastability.json", quick)
    keys = list(sp["num_blocks"])
    fig, lax, axes = column_figure(3.5, 2, 1, legend_rows=2)
    a = axes[0][0]
    x = np.arange(len(keys))
    width = 0.38
    totals = []
    for j, pol in enumerate(sp["policies"]):
        counts = []
        for key in keys:
            agg = d.json(f"fig4/runs20/{key}/sweep/aggregate.json")
            pt = next(p for p in agg if p["grid.kv_policy.type"] == pol)
            counts.append(pt["crashes"])
            totals.append(pt["runs"])
        xs = x + (j - 0.5) * width
        a.bar(xs, counts, width, color=COLORS[pol], edgecolor=COLORS[pol], label=f"{pol} KV")
        for xx, c, n in zip(xs, counts, totals[-len(keys):]):
            if c == 0:  # a zero-height bar: its outline on the axis, so it reads as 0, not missing
                a.plot([xx - width / 2, xx + width / 2], [0, 0], color=COLORS[pol], lw=2.5,
                       solid_capstyle="butt", clip_on=False, zorder=3)
            a.text(xx, c + 0.3, f"{c}/{n}", ha="center", va="bottom", fontsize=MIN_PT)
    paper = 14 / 20 * max(totals)
    a.axhline(paper, color="k", ls="--", lw=0.7, label="paper: 14/20 crashed")
    a.set_xticks(x)
    a.set_xticklabels([short(w["models"][k]["label"]) for k in keys])
    a.set_ylabel("crashed runs")
    a.set_ylim(0, max(totals) + 3)
    integer_ticks(a.yaxis)
    panel(a, "a", f"identical runs, seeds differ")
    a = axes[1][0]
    key = sp["load_model"]
    for pol in sp["policies"]:
        agg = d.json(f"fig4/load/{key}/{pol}/aggregate.json")
        lam = np.array([p["grid.workload.arrival.rate_per_s"] for p in agg])
        pr = np.array([p["crash_probability"] for p in agg])
        lo = np.array([p["crash_wilson95_lo"] for p in agg])
        hi = np.array([p["crash_wilson95_hi"] for p in agg])
        n = agg[0]["runs"]
        a.plot(lam, pr, "o-", color=COLORS[pol])
        a.fill_between(lam, lo, hi, color=COLORS[pol], alpha=0.25, lw=0,
                       label=f"{pol}: 95% CI, {n} seeds")
    a.set_xlabel("mean arrival rate (callers per second, Poisson)")
    a.set_ylabel("crash probability")
    a.set_ylim(-0.03, 1.03)
    panel(a, "b", f"{w['models'][key]['label']}: against load")
    strip_legend(lax, *handles_of(axes[0][0], axes[1][0]), ncol=2)
    rels = [f"fig4/runs20/{k}/sweep/cost_model.json" for k in keys]
    return finish(fig, d.out, "fig4_metastability", 4, sp["title"], d.cost_models(rels),
                  "(a) Of identical five-minute runs that differ only in the seed (Poisson callers, "
                  "exponential call lengths; reasons in scenarios/experiments/"
                  "fig4_metastability.json), how many crashed, per model and KV policy; a bar at 0 "
                  "is drawn as a thick line on the axis. Dashed: the paper's 14 of 20, scaled to "
                  "these runs. (b) Moshi: crash probability within the run against the mean "
                  "arrival rate, with its 95% Wilson interval.")


def fig5(d, w, quick):
    sp = spec("fig5_admission.json", quick)
    names = list(sp["variants"])
    fig, lax, axes = column_figure(3.2, 2, len(names), legend_rows=4, sharex=True)
    signal_in_data = True
    for j, name in enumerate(names):
        summ = d.json(f"fig5/{name}/summary.json")
        ts = d.csv(f"fig5/{name}/timeseries.csv")
        t = np.array([num(r["t_s"]) for r in ts])
        col = lambda k: np.array([num(r[k]) for r in ts])  # noqa: E731
        adm_cfg = summ["scenario"]["admission"]
        a = axes[0][j]
        a.plot(t, col("live_sessions"), color=COLORS[name], lw=1.6, alpha=0.7,
               label="live sessions")
        a.plot(t, col("admission_cap"), "k--", lw=0.8, label="admission cap")
        adm = summ["result"]["admission"]
        if adm.get("n_star") is not None and not summ["result"]["crashed"]:
            a.axhline(adm["n_star"], color="tab:green", ls="-.", lw=0.8,
                      label="N*")
        integer_ticks(a.yaxis)
        panel(a, "ab"[j], f"{name} KV")
        if j == 0:
            a.set_ylabel("sessions")
        a = axes[1][j]
        dl = summ["deadline_ms"]
        q = adm_cfg.get("quantile", 0.95)
        if "admission_signal_ms" in ts[0]:
            sig = col("admission_signal_ms")
            a.plot(t, sig, color=COLORS[name], lw=0.9,
                   label=f"signal ({adm_cfg.get('signal', 'reported')} p{100 * q:g})")
            censored_markers(a, t, sig, COLORS[name], label="signal censored", most=30)
        else:  # data from before the signal was written: the reported p99, said so
            signal_in_data = False
            a.plot(t, col("reported_p99_ms"), color=COLORS[name], lw=0.9,
                   label="reported p99")
        a.axhspan(adm_cfg["low_fraction"] * dl, adm_cfg["high_fraction"] * dl, color="tab:green",
                  alpha=0.2, lw=0, label="hold band")
        deadline_line(a, dl, where="left")
        lo, hi = a.get_ylim()
        a.set_ylim(0, max(hi, dl * 1.3))
        a.set_xlabel("time (s)")
        if j == 0:
            a.set_ylabel("frame latency (ms)")
        stall = summ["result"]["first_stall_s"]
        if stall is not None:
            for ax in (axes[0][j], axes[1][j]):
                ax.axvline(stall, color="tab:red", lw=0.7, ls=":", label="pool exhausted")
        plt.setp(axes[0][j].get_xticklabels(), visible=False)
    for j in range(1, len(names)):
        axes[0][j].sharey(axes[0][0])
        axes[1][j].sharey(axes[1][0])
    strip_legend(lax, *handles_of(*[a for r in axes for a in r]), ncol=2)
    rels = [f"fig5/{n}/summary.json" for n in names]
    sig = ("the latency signal the controller reads each control interval (the reported p95 of "
           "that interval's frames; hollow triangles: censored)" if signal_in_data else
           "the reported p99 per sample (this data predates the controller-signal column)")
    return finish(fig, d.out, "fig5_admission", 5, sp["title"], d.cost_models(rels),
                  "AIMD admission on Moshi, one H200 (scenarios/admission/moshi_h200_aimd_"
                  "{windowed,unbounded}.json). Top: admitted live sessions and the admission cap "
                  "(N*: the median live count over the last half of the run). Bottom: " + sig +
                  ", with the hold band between the controller's low and high fractions of the "
                  "deadline. Dotted red: the pool is exhausted.")


def fig6(d, w, quick):
    sp = spec("fig6_prediction.json", quick)
    keys = list(w["models"])
    fig, lax, axes = column_figure(3.6, 2, 1, legend_rows=3)
    top, bot = axes[0][0], axes[1][0]
    rels = []
    for k, key in enumerate(keys):
        pred, predb, sim, load_ = [], [], [], []
        for iv in sp["intervals_s"]:
            rel = f"fig6/{key}/interval_{iv:g}s.summary.json"
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


def heatmap(ax, mat, vmin, vmax, cmap, fmt, rows, cols, flags=None):
    im = ax.imshow(mat, origin="lower", cmap=cmap, aspect="auto", vmin=vmin, vmax=vmax)
    mid = 0.5 * (vmin + vmax)
    for i in range(mat.shape[0]):
        for j in range(mat.shape[1]):
            v = mat[i, j]
            txt = "-" if np.isnan(v) else fmt(v)
            if flags and flags[i][j]:
                txt += "*"
            dark = not np.isnan(v) and v < mid if cmap == "viridis" else not np.isnan(v) and v > mid
            ax.text(j, i, txt, ha="center", va="center", fontsize=MIN_PT,
                    color="w" if dark else "k")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels([str(v) for v in cols])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([str(v) for v in rows])
    return im


def fig7(d, w, quick):
    sp = spec("fig7_capacity.json", quick)
    keys = list(w["models"])
    ws = sp["window_sink"]
    W, S = ws["window_tokens"], ws["sink_tokens"]
    # Per model bars on top; the three W x S maps (N*, memory cap, deadline cap) stacked below,
    # one colour scale for all three so that a colour means the same number of sessions in each.
    fig = plt.figure(figsize=(COLUMN_IN, 6.4), layout="constrained")
    gs = fig.add_gridspec(5, 2, height_ratios=[0.14, 1.25, 1, 1, 1], width_ratios=[1, 0.04])
    lax = fig.add_subplot(gs[0, :])
    lax.axis("off")
    a = fig.add_subplot(gs[1, :])
    x = np.arange(len(keys))
    mem = [d.json(f"fig7/models/{k}.capacity.json")["capacity"]["memory_cap_sessions"] for k in keys]
    dl = [d.json(f"fig7/models/{k}.capacity.json")["capacity"]["deadline_cap_sessions"] for k in keys]
    for off, vals, color, lab in ((-0.2, mem, "tab:blue", "memory cap"),
                                  (0.2, dl, "tab:orange", "deadline cap")):
        a.bar(x + off, [max(v, 0.8) if v == 0 else v for v in vals], 0.4, color=color,
              label=lab)
        for xx, v in zip(x + off, vals):
            a.text(xx, max(v, 1) * 1.08, str(v), ha="center", va="bottom", fontsize=MIN_PT)
    a.set_yscale("log")
    plain_log(a.yaxis)
    a.set_ylim(1, max(mem + dl) * 4)
    a.set_xticks(x)
    a.set_xticklabels([short(w["models"][k]["label"]) for k in keys])
    a.set_ylabel("sessions")
    panel(a, "a", "per model, windowed KV")
    # N* per cell: the median over the sweep's seeds; flags: how many of them were flagged.
    agg = d.json("fig7/window_sink/sweep/aggregate.json")
    nstar = np.full((len(S), len(W)), np.nan)
    flags = [[0] * len(W) for _ in S]
    memcap = np.zeros((len(S), len(W)))
    dlcap = np.zeros((len(S), len(W)))
    for p in agg:
        i = S.index(int(p["grid.kv_policy.sink_tokens"]))
        j = W.index(int(p["grid.kv_policy.window_tokens"]))
        nstar[i, j] = np.nan if p["n_star_median"] is None else p["n_star_median"]
        flags[i][j] = p["admission_flagged_runs"] + p["crashes"]
    runs_per_cell = agg[0]["runs"]
    budgets = set()
    for i, s_ in enumerate(S):
        for j, w_ in enumerate(W):
            cap = d.json(f"fig7/window_sink/W{w_}_S{s_}.capacity.json")["capacity"]
            memcap[i, j] = cap["memory_cap_sessions"]
            dlcap[i, j] = cap["deadline_cap_sessions"]
            budgets.add((cap["deadline_ms"], cap["deadline_fraction"]))
    deadline_ms, fraction = budgets.pop() if len(budgets) == 1 else (float("nan"), float("nan"))
    vmin = np.nanmin([np.nanmin(m) for m in (nstar, memcap, dlcap)])
    vmax = np.nanmax([np.nanmax(m) for m in (nstar, memcap, dlcap)])
    norm = matplotlib.colors.LogNorm(vmin=max(vmin, 1), vmax=vmax)
    im = None
    for k, (mat, name) in enumerate(((nstar, "AIMD N*"), (memcap, "memory cap"),
                                     (dlcap, "deadline cap"))):
        ax = fig.add_subplot(gs[2 + k, 0])
        im = ax.imshow(mat, origin="lower", cmap="viridis", aspect="auto", norm=norm)
        for i in range(len(S)):
            for j in range(len(W)):
                v = mat[i, j]
                txt = "-" if np.isnan(v) else f"{v:.0f}" + ("*" if k == 0 and flags[i][j] else "")
                bright = not np.isnan(v) and norm(v) > 0.6
                ax.text(j, i, txt, ha="center", va="center", fontsize=MIN_PT,
                        color="k" if bright else "w")
        ax.set_xticks(range(len(W)))
        ax.set_xticklabels([str(v) for v in W] if k == 2 else [])
        ax.set_yticks(range(len(S)))
        ax.set_yticklabels([str(v) for v in S])
        ax.set_ylabel("sinks S")
        if k == 2:
            ax.set_xlabel("window W (tokens)")
        panel(ax, "bcd"[k],
              f"Moshi: {name}" + (f", deadline {deadline_ms:g} ms" if k == 2 else ""))
    cax = fig.add_subplot(gs[2:, 1])
    cb = fig.colorbar(im, cax=cax)
    cb.set_label("sessions (one scale for (b)-(d))")
    # Labelled ticks at 1-2-5 steps over the range (a log bar's decades alone left one tick).
    ticks = [m * 10 ** e for e in range(0, 7) for m in (1, 2, 5)
             if norm.vmin <= m * 10 ** e <= norm.vmax]
    cb.set_ticks(ticks)
    cb.ax.yaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
    cb.ax.yaxis.set_minor_formatter(mticker.NullFormatter())
    strip_legend(lax, *handles_of(a), ncol=2)
    rels = [f"fig7/models/{k}.cost_model.json" for k in keys] + [
        "fig7/window_sink/sweep/cost_model.json"]
    return finish(fig, d.out, "fig7_capacity", 7, sp["title"], d.cost_models(rels),
                  "(a) Memory cap and deadline cap per model under the windowed KV of "
                  "workloads.json (log scale; the deadline is a fixed fraction of the frame "
                  "period, budget_fraction). (b)-(d) Moshi over window W and sinks S, one colour "
                  "scale for all three: (b) N*, the sessions AIMD serves (median live count over "
                  f"the last half, median over {runs_per_cell} seeds per cell of scenarios/admission/"
                  "moshi_h200_aimd_windowed.json, with the memory guard, the settled-cost "
                  "forecast and spread joins, docs/admission.md); an asterisk marks a cell where some seeds were "
                  "flagged (stalled, collapsed or missed deadlines; REPORT.md gives the counts); "
                  "(c) the memory cap; (d) the deadline cap (callers evenly spread): the most "
                  f"sessions whose frames all finish within {fraction:g} x the "
                  f"{deadline_ms:g} ms deadline.")


def fig9(d, w, quick):
    sp = spec("fig9_exhaustion.json", quick)
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
            rel = f"fig9/{key}/{mode}"
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


def fig8(d, w, quick):
    sp = spec("fig8_quality.json", quick)
    q = d.json("fig8/quality.json")
    ppl = {p["name"]: p for p in q["perplexity"]}
    W, S = sp["window"], sp["sinks"]
    main = ["full", f"w{W}", f"s{S}w{W}"]
    colors = {"full": "tab:red", f"w{W}": "tab:blue", f"s{S}w{W}": "tab:green"}
    labels = {"full": "full attention", f"w{W}": f"window W = {W}",
              f"s{S}w{W}": f"{S} sinks + W = {W}"}
    gw, gs_ = sp["grid_windows"], sp["grid_sinks"]
    fig, lax, axes = column_figure(3.9, 2, 1, legend_rows=2, height_ratios=[1.2, 1])
    a = axes[0][0]
    bucket = q["config"]["bucket"]
    for name in main:
        b = ppl[name]["bucket_ppl"]
        x = [(i + 0.5) * bucket for i in range(len(b))]
        a.plot(x, b, "-o", ms=2, lw=0.8, color=colors[name], label=labels[name])
    # Key 0 leaves the window of the query at W + 1, which predicts token W + 2.
    a.axvline(W + 2, color="k", ls="--", lw=0.7)
    a.text(W + 2, 0.97, " window passes the\n session start", fontsize=MIN_PT, va="top",
           transform=a.get_xaxis_transform())
    a.set_yscale("log")
    plain_log(a.yaxis, (1.0, 2.0, 5.0))
    a.set_xlabel("token position in the text")
    a.set_ylabel(f"perplexity per {bucket} tokens")
    panel(a, "a", "perplexity along the text")
    a = axes[1][0]
    mat = np.full((len(gs_), len(gw)), np.nan)
    for i, s_ in enumerate(gs_):
        for j, w_ in enumerate(gw):
            name = (f"s{s_}" if s_ else "") + f"w{w_}"
            if name in ppl:
                mat[i, j] = ppl[name]["ppl_from"] / ppl["full"]["ppl_from"]
    im = a.imshow(mat, origin="lower", cmap="magma_r", aspect="auto")
    for i in range(len(gs_)):
        for j in range(len(gw)):
            name = (f"s{gs_[i]}" if gs_[i] else "") + f"w{gw[j]}"
            txt = f"{ppl[name]['ppl_from']:.1f} ({mat[i, j]:.2f}x)" if name in ppl else "-"
            dark = name in ppl and mat[i, j] > np.nanmean(mat)
            a.text(j, i, txt, ha="center", va="center", fontsize=MIN_PT,
                   color="w" if dark else "k")
    a.set_xticks(range(len(gw)))
    a.set_xticklabels([str(v) for v in gw])
    a.set_yticks(range(len(gs_)))
    a.set_yticklabels([str(v) for v in gs_])
    a.set_xlabel("window W (tokens)")
    a.set_ylabel("sinks S (0: window only)")
    panel(a, "b", "perplexity from token "
          f"{q['config']['from']} (ratio to full attention)")
    cb = fig.colorbar(im, ax=a, pad=0.02)
    cb.set_label("ratio to full attention")
    strip_legend(lax, *handles_of(axes[0][0]), ncol=2)
    caption_note = (
        f"SmolLM2-135M-Instruct (GGUF \"{q['model']['name']}\", Q4_1, dequantized to float) on "
        f"Pride and Prejudice ({q['config']['positions']} positions), run on the CPU by "
        f"`metronome quality` over the paged KV cache, {q['config']['chunk']} tokens per step; "
        "measured, not simulated. (a) Perplexity per bucket of tokens along the text under full "
        f"attention, a window alone and sinks + window; the dashed line is where the window "
        f"passes the session start (legend values: perplexity over tokens {q['config']['from']}-"
        f"{q['config']['tokens']}: " + ", ".join(
            f"{labels[n]} {ppl[n]['ppl_from']:.1f}" for n in main) + "). (b) Perplexity over "
        f"tokens [{q['config']['from']}, {q['config']['tokens']}) per window W and sinks S and "
        f"its ratio to full attention ({ppl['full']['ppl_from']:.1f}).")
    return finish(fig, d.out, "fig8_quality", 8, sp["title"], ["none (a measurement)"],
                  caption_note)


def quality_rows(t, quick):
    """REPORT rows of figure 8, beside the paper's (and StreamingLLM's) claim."""
    sp = spec("fig8_quality.json", quick)
    rel = "fig8/quality.json"
    q = t.d.json(rel)
    W, S = sp["window"], sp["sinks"]
    idx = {p["name"]: i for i, p in enumerate(q["perplexity"])}
    gen = {g["name"]: i for i, g in enumerate(q["generation"])}
    # The paper's claim is qualitative; the numbers beside it are a reference run of the same model
    # and text outside this project (N = 4096, W = 256).
    claims = {"full": "baseline (reference run elsewhere, N = 4096: 20.2)",
              f"w{W}": "a window alone degrades once it passes the session start (elsewhere: 39.0)",
              f"s{S}w{W}": "a few sinks keep it close to full attention (elsewhere: 22.2 with 4)"}
    for name in ("full", f"w{W}", f"s{S}w{W}"):
        i = idx[name]
        t.row(f"perplexity of Pride and Prejudice, {name}: all N tokens; tokens [W, N)",
              claims[name], "N = {}: {:.2f}; from token {}: {:.2f}",
              [f"{rel}#/config/tokens", f"{rel}#/perplexity/{i}/ppl", f"{rel}#/config/from",
               f"{rel}#/perplexity/{i}/ppl_from"])
    for name in ("full", f"w{W}", f"s{S}w{W}"):
        if name not in gen:
            continue
        i = gen[name]
        t.row(f"free-running generation, {name}: tokens; perplexity under full attention; "
              "share of letters and spaces",
              "sinks keep free-running generation coherent" if name != "full" else "baseline",
              "{} tokens: {:.2f}; {:.3f} (the text itself: {:.3f})",
              [f"{rel}#/config/generate_tokens", f"{rel}#/generation/{i}/ppl_full_model",
               f"{rel}#/generation/{i}/letter_space_share", f"{rel}#/text_letter_space_share"])


# ----------------------------------------------------------------------------------------------
# REPORT.md

class Table:
    """Rows of (quantity, paper's claim, this run's value(s), sources). Each value is read here
    from its source, so the text and the pointer cannot disagree."""

    def __init__(self, d):
        self.d = d
        self.rows = []

    def get(self, ref):
        rel, ptr = ref.split("#", 1)
        return pointer(self.d.json(rel), ptr)

    def row(self, quantity, paper, fmt, refs, scales=None):
        scales = scales or [None] * len(refs)
        vals = []
        for r, sc in zip(refs, scales):
            v = self.get(r)
            vals.append("none" if v is None else v * sc if sc else v)
        src = ", ".join(f"`{r}`" + (f" x{sc:g}" if sc else "") for r, sc in zip(refs, scales))
        # A null value prints "none" whatever its number format (e.g. no stall under a cost model).
        parts = list(string.Formatter().parse(fmt))
        fmt = "".join(lit + ("" if field is None else
                             "{" + ("" if vals[i] == "none" or not spec else ":" + spec) + "}")
                      for i, (lit, field, spec, _) in enumerate(parts))
        self.rows.append((quantity, paper, fmt.format(*vals), src))

    def markdown(self):
        out = ["| quantity | paper (typed from the brief) | this run (read from the simulator's "
               "output) | source (file under data/ # JSON pointer) |", "|---|---|---|---|"]
        out += [f"| {q} | {p} | {v} | {s} |" for q, p, v, s in self.rows]
        return "\n".join(out)


def report(d, w, quick, figs, started):
    t = Table(d)
    lab = lambda key: w["models"][key]["label"]  # noqa: E731
    sp4 = spec("fig4_metastability.json", quick)
    for pol, paper in (("unbounded", "14/20 crashed (unbounded KV, two batches)"),
                       ("windowed", "0/20 crashed (Metronome)")):
        for key in sp4["num_blocks"]:
            rel = f"fig4/runs20/{key}/sweep/aggregate.json"
            idx = next(i for i, p in enumerate(d.json(rel)) if p["grid.kv_policy.type"] == pol)
            sc = f"fig4/runs20/{key}/sweep/scenario.json#/horizon_s"
            t.row(f"identical runs that crashed, {pol} KV, {lab(key)}; run length", paper,
                  "{}/{} ({:g} s runs)", [f"{rel}#/{idx}/crashes", f"{rel}#/{idx}/runs", sc])
    key = sp4["load_model"]
    for pol in sp4["policies"]:
        rel = f"fig4/load/{key}/{pol}/aggregate.json"
        agg = d.json(rel)
        # the paper's load: the grid point nearest one caller every 2 s
        idx = min(range(len(agg)), key=lambda i: abs(agg[i]["grid.workload.arrival.rate_per_s"] - 0.5))
        t.row(f"crash probability at the paper's load, {pol} KV, {lab(key)}: callers/s; "
              "probability of runs [95% Wilson interval]",
              "14/20 (unbounded), 0/20 (Metronome)",
              "{:g}/s: {:.3f} of {} runs [{:.3f}, {:.3f}]",
              [f"{rel}#/{idx}/grid.workload.arrival.rate_per_s",
               f"{rel}#/{idx}/crash_probability", f"{rel}#/{idx}/runs",
               f"{rel}#/{idx}/crash_wilson95_lo", f"{rel}#/{idx}/crash_wilson95_hi"])
    t.row("N*: AIMD admission, windowed KV, Moshi on H200", "about 209 sessions",
          "{:g} sessions", ["fig5/windowed/summary.json#/result/admission/n_star"])
    t.row("first stall under AIMD, windowed KV", "none", "{}",
          ["fig5/windowed/summary.json#/result/first_stall_s"])
    t.row("AIMD with unbounded KV: sessions live at the first stall; its time",
          "over-admits, then stalls", "{} sessions; stall at {:.1f} s",
          ["fig5/unbounded/summary.json#/result/admission/live_at_first_stall",
           "fig5/unbounded/summary.json#/result/first_stall_s"])
    moshi = "fig7/models/moshi.capacity.json#/"
    t.row("Moshi, windowed KV: window; sinks; memory cap", "about 500 sessions",
          "W = {}, S = {}: {} sessions",
          [moshi + "scenario/kv_policy/window_tokens", moshi + "scenario/kv_policy/sink_tokens",
           moshi + "capacity/memory_cap_sessions"])
    t.row("Moshi, windowed KV: deadline cap (p95 within a fraction of the per-frame deadline)",
          "about 209 sessions", "{} sessions (tail latency <= {:g} x {:g} ms)",
          [moshi + "capacity/deadline_cap_sessions", moshi + "capacity/deadline_fraction",
           moshi + "capacity/deadline_ms"])
    t.row("Moshi: which cap binds", "the deadline", "{}", [moshi + "capacity/binding"])
    # Figure 7 (b)-(d): AIMD's N* across seeds against the caps of the same cell, S = 16.
    ws = spec("fig7_capacity.json", quick)["window_sink"]
    agg = "fig7/window_sink/sweep/aggregate.json"
    points = d.json(agg)
    for wt in ws["window_tokens"]:
        st = 16 if 16 in ws["sink_tokens"] else ws["sink_tokens"][0]
        idx = next(i for i, p in enumerate(points) if p["grid.kv_policy.window_tokens"] == wt
                   and p["grid.kv_policy.sink_tokens"] == st)
        cap = f"fig7/window_sink/W{wt}_S{st}.capacity.json#/capacity/"
        t.row(f"Moshi AIMD N* across seeds, W = {wt}, S = {st}: median (min to max); runs flagged "
              "of runs; memory cap; deadline cap evenly spread; under the scenario's Poisson "
              "arrivals and spread joins, median (min to max) of draws", "-",
              "{:g} ({:g} to {:g}); {} of {}; {}; {}; {} ({} to {})",
              [f"{agg}#/{idx}/n_star_median", f"{agg}#/{idx}/n_star_min",
               f"{agg}#/{idx}/n_star_max", f"{agg}#/{idx}/admission_flagged_runs",
               f"{agg}#/{idx}/runs", cap + "memory_cap_sessions", cap + "deadline_cap_sessions",
               cap + "deadline_cap_random_phases_sessions", cap + "deadline_cap_random_phases_min",
               cap + "deadline_cap_random_phases_max"])
    # The same at S = 16 with callers' clocks started on arrival: random phases, one draw a run.
    agg = "fig7/window_sink/arrival_sweep/aggregate.json"
    points = d.json(agg)
    for wt in ws["window_tokens"]:
        idx = next(i for i, p in enumerate(points) if p["grid.kv_policy.window_tokens"] == wt)
        t.row(f"Moshi AIMD N* across seeds with joins on arrival (random phases), W = {wt}, "
              "S = 16: median (min to max); runs flagged of runs", "-",
              "{:g} ({:g} to {:g}); {} of {}",
              [f"{agg}#/{idx}/n_star_median", f"{agg}#/{idx}/n_star_min",
               f"{agg}#/{idx}/n_star_max", f"{agg}#/{idx}/admission_flagged_runs",
               f"{agg}#/{idx}/runs"])
    if not os.environ.get("METRONOME_FIGURES_NO_QUALITY"):
        for key in w["models"]:
            rel = f"fig8/recommend/{key}.recommend.json"
            if d.json(rel)["best"] is None:
                t.row(f"recommend, {lab(key)}: best (W, S) meeting the quality floor", "-",
                      "none (max perplexity ratio {:g})",
                      [rel + "#/quality_floor/max_ppl_ratio"])
                continue
            b = rel + "#/best/"
            t.row(f"recommend, {lab(key)} (windowed KV, AIMD, spread joins; perplexity ratio to "
                  "full attention at most the floor): best W; S; N* median (p5 to p95) over "
                  "seeds; memory cap; deadline cap; perplexity ratio; silent frames", "-",
                  "W = {}, S = {}: N* {:g} ({:g} to {:g}); memory cap {}; deadline cap {}; "
                  "ppl x{:.3f}; {:.4f}% silent",
                  [b + "window_tokens", b + "sink_tokens", b + "n_star_median",
                   b + "n_star_p5", b + "n_star_p95", b + "memory_cap_sessions",
                   b + "deadline_cap_sessions", b + "ppl_ratio",
                   b + "silent_frame_fraction_mean"], scales=[None] * 8 + [100])
    for key in w["models"]:
        if key == "moshi":
            continue
        rel = f"fig7/models/{key}.capacity.json#/capacity/"
        t.row(f"{lab(key)}, windowed KV: memory cap / deadline cap", "-",
              "{} / {} sessions ({} binds)",
              [rel + "memory_cap_sessions", rel + "deadline_cap_sessions", rel + "binding"])
    sp6 = spec("fig6_prediction.json", quick)
    paper6 = {"qwen3-omni-30b-a3b": "within a few percent", "minicpm-o-4.5": "about 13%"}
    iv = sp6["headline_interval_s"]
    for key in w["models"]:
        rel = f"fig6/{key}/interval_{iv:g}s.summary.json#/"
        t.row(f"t_sat at the paper's load, {lab(key)}: one caller every Delta; predicted "
              "(first-order, continuous); simulated first stall; error of the continuous and of "
              "the whole-block prediction [whole blocks: by construction]", paper6.get(key, "-"),
              "Delta = {:g} s: {:.1f} s predicted, {:.1f} s simulated; error {:+.2f}% "
              "(continuous), {:+.2f}% (whole blocks)",
              [rel + "scenario/workload/arrival/interval_s",
               rel + "prediction/t_sat_continuous_s", rel + "result/first_stall_s",
               rel + "result/t_sat_error_vs_continuous", rel + "result/t_sat_error_vs_blocks"],
              scales=[None, None, None, 100, 100])
    f3 = "fig3/run/summary.json#/"
    t.row("silent failure, Moshi, unbounded KV, one caller every Delta over the run: reported "
          "deadline-miss rate; frames answered with silence",
          "health metrics look fine while users hear silence",
          "Delta = {:g} s, {:g} s run: {:.1f}% reported misses; {:.1f}% of frames silent",
          [f3 + "scenario/workload/arrival/interval_s", f3 + "scenario/horizon_s",
           f3 + "result/deadline_miss_rate_reported", f3 + "result/silent_frame_fraction"],
          scales=[None, None, 100, 100])
    sp9 = spec("fig9_exhaustion.json", quick)
    for key in sp9["models"]:
        for mode, m in sp9["modes"].items():
            rel = f"fig9/{key}/{mode}/summary.json#/result/"
            t.row(f"after exhaustion, {lab(key)}, 300 callers, {m['label']}: first stall; true "
                  "p50 latency over the run (null: more than half the frames never answered); "
                  "frames served of due; preemptions",
                  "latency flat, then a wall of about 1.6 s with no tokens",
                  "stall at {} s; true median {} ms; {} of {} frames; {} preemptions",
                  [rel + "first_stall_s", rel + "true_p50_ms", rel + "frames_served",
                   rel + "frames_due", rel + "preemptions"])
    # The cost model (data/costmodel/, scripts/experiments.py cost_models): the roofline's error on
    # each imported Vidur profile, and how far the cost model moves Moshi's capacity.
    for gpu, model in (("h100", "Llama-2-7B"), ("a100", "Llama-3-8B")):
        e = f"costmodel/{gpu}_vidur.correction.json#/error/"
        for when, name in (("before", "datasheet roofline"), ("after", "corrected roofline")):
            t.row(f"cost model error, {name}, on Vidur's measured {gpu.upper()} {model} layer "
                  "(token-level ops), held out: median; p90; max abs. error; rows", "-",
                  "{:.1f}%; {:.1f}%; {:.1f}%; {} rows",
                  [e + f"{when}_heldout/median", e + f"{when}_heldout/p90",
                   e + f"{when}_heldout/max", e + f"{when}_heldout/points"],
                  scales=[100, 100, 100, None])
    names = {"roofline": "raw datasheet roofline", "corrected_roofline": "corrected roofline",
             "calibrated": "measured (Vidur H100 profile of Llama-2-7B, scaled to Moshi)"}
    for gpu, cost in (("h200", "roofline"), ("h200", "corrected_roofline"), ("h100", "roofline"),
                      ("h100", "corrected_roofline"), ("h100", "calibrated")):
        rel = f"costmodel/moshi_{gpu}_{cost}."
        t.row(f"capacity, Moshi windowed (W 480, S 16, 13 ms budget [tuned]) on {gpu.upper()}, "
              f"{names[cost]}: deadline cap; AIMD N*",
              "about 209 sessions" if cost == "corrected_roofline" and gpu == "h200" else "-",
              "{} sessions; N* {}",
              [rel + "capacity.json#/capacity/deadline_cap_sessions",
               rel + "summary.json#/result/admission/n_star"])
    if not os.environ.get("METRONOME_FIGURES_NO_QUALITY"):
        quality_rows(t, quick)
    # Untracked (machine and clock dependent): absent where the data came with the checkout.
    log_path = d.path("runs_log.json")
    calls = len(load(log_path)["metronome_calls"]) if os.path.isfile(log_path) else None
    lines = [
        "# Metronome: the paper's figures and headline numbers",
        "",
        "Regenerated by `scripts/make_figures.sh" + (" --quick" if quick else "") + "` from the "
        "scenarios in `scenarios/experiments/` (one per figure; each says in its `comment` what claim "
        "it tests and why each number was chosen). Every number in the table below was read by "
        "`scripts/figures.py` from the file named beside it, which `metronome` wrote in this run "
        "(under `data/`); `tests/figures/` re-reads each one. The paper's column is typed from the "
        "project brief and is the paper's, not ours.",
        "",
        "Each step is priced by a measured calibration where the GPU has one (Vidur's public "
        "H100/A100 profiles, `results/vidur/`, imported as calibrations) and elsewhere by the "
        "corrected roofline, the datasheet roofline with achievable fractions and overheads "
        "fitted to those profiles (`roofline_correction` in `scenarios/gpus/`): every H200 figure "
        "runs on the corrected roofline (analytic, fitted on H100; each caption names its cost "
        "model). The cost-model rows give the raw roofline's error and how far the choice moves "
        "capacity (`experiments.py --cost-model roofline` reruns every figure on the raw one). The "
        "crash experiments' pools and loads are chosen in the experiment files; where they differ "
        "from a whole H200 the comment says why.",
        "",
        "## Headline numbers",
        "",
        t.markdown(),
        "",
        "## Tuned, measured and by construction",
        "",
        "Rows marked [tuned] rest on a parameter chosen for the experiment, [by construction] on "
        "an agreement that holds because both sides apply the same rule; neither is a "
        "prediction.",
        "",
        "- [tuned] The per-frame budget, 13 ms of Moshi's 80 ms frame (`budget_fraction` 0.1625 in "
        "`scenarios/experiments/workloads.json`, every model): chosen on the corrected roofline so "
        "that the deadline binds below the memory cap at W 480, as in the paper. Figures 5 and 7 "
        "and the capacity rows depend on it.",
        "- [tuned] The Omni models' pools in figure 4: sized to hold about the session-seconds of "
        "KV of a Moshi H200 pool (`fig4_metastability.json`), so that the crash counts compare "
        "races at one fill time, not models.",
        "- [tuned] The crash experiments' loads and horizons (figures 2, 3, 6, 9): chosen so the "
        "pool runs out inside the run; the experiment files say why for each.",
        "- [by construction] Figure 6's whole-block t_sat against the simulated first stall "
        "(+0.00%): the simulator allocates exactly the blocks the whole-block form counts. The "
        "continuous form's error is the rounding it leaves out.",
        "- [measured] The cost models' held-out errors (Vidur's H100 and A100 profiles), the live "
        "engine's comparison (`results/live/REPORT.md`) and the quality rows (a real model on a "
        "real text).",
        "",
        "## Reading the numbers",
        "",
        "- Prediction error: the simulator allocates whole blocks per frame exactly as the "
        "whole-block form of the first-order model counts them, so that form matches the first "
        "stall and the continuous form differs only by rounding. The paper's larger error for "
        "MiniCPM-o came from a real engine (allocator slack, preemption, encoder caches), which "
        "this simulator does not model; it cannot confirm or refute that number.",
        "- Crash counts: the Omni models' pools in the metastability experiment are sized to hold "
        "the same session-seconds of KV as Moshi's whole H200 pool (reasons in "
        "`scenarios/experiments/fig4_metastability.json`), and every model uses the same seeds, so "
        "their counts are close by construction; the race, not the model, decides each run.",
        "- Cost model: the datasheet roofline is optimistic (it predicted 0.59x and 0.66x the "
        "measured H100 and A100 layer times of Vidur's profiles; the cost-model rows give the "
        "held-out error before and after the correction). Under the corrected roofline a Moshi "
        "step has a floor near 5 ms on an H200 (weights read once, about 1 ms of kernel tails over "
        "32 layers, and the 1 ms scheduler overhead the scenarios assume), and a frame released "
        "during a step waits for it, so the p95 sits near two steps: the per-frame budget is 13 ms "
        "(0.1625 of the frame, `workloads.json`), where the deadline binds below the memory cap "
        "as in the paper; the raw roofline's 10 ms gave about the same caps.",
        "- AIMD's N* against the caps (figure 7 rows): the controller stops raising the cap once "
        "the signal or its forecast of the settled regime reaches low_fraction x D (0.88), below "
        "the probe's 0.9 x D, so N* sits under the deadline cap by that margin; the "
        "p95-vs-sessions curve is flat (two steps of a weight-bound pass), so a small latency "
        "margin is many sessions. Spread joins (`admission.join`) put callers' phases in "
        "bit-reversed slots, within a factor of two of evenly spread, which costs a little "
        "against the evenly spread probe; every seed then sees the same phases, so N* does not "
        "move across seeds. With joins on arrival (the rows that say so) each run's phases are "
        "one random draw that stays for the whole call: with long windows few sessions fit, a "
        "draw that bunches callers makes long steps once settled, and the controller, which "
        "never evicts, stops early (the low end of those ranges).",
        "- Capacity: with the windows of `workloads.json` the deadline binds for Moshi, as in the "
        "paper, while the Omni models (cheaper per session on the roofline) are bound by memory; "
        "figure 7 shows how the window and sinks move both caps.",
        "",
        "- Quality (figure 8): a real pretrained model (SmolLM2-135M-Instruct) and a real text "
        "(Pride and Prejudice), run by `metronome quality` on the CPU over the same paged KV "
        "cache and visibility rule as the kernels and the simulator. It is a 135M-parameter "
        "model, not the paper's backbones: it shows the mechanism (what a window alone loses "
        "once it passes the session start, what sinks give back), not the paper's numbers.",
        "",
        "## Figures",
        "",
    ]
    for i, (png, caption) in enumerate(figs, 1):
        pdf = png[:-4] + ".pdf"
        lines += [f"![{os.path.basename(png)[:-4]}]({png})", "", f"{caption} ([PDF]({pdf}))", ""]
    lines += ["## This run", ""]
    mode = "quick (CI) mode" if quick else "full mode"
    # Nothing here depends on the machine or the clock (jobs, wall time): those go to stderr and to
    # the untracked data/runs_log.json, so a rerun that changes nothing leaves the report alone.
    lines.append(f"- {mode}; " + (f"{calls} metronome calls (commands and " if calls is not None
                                   else "metronome calls: see (") +
                 "times of the last run in `data/runs_log.json`, not kept in git).")
    with open(os.path.join(d.out, "REPORT.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


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
    plots = [fig1, fig2, fig3, fig4, fig5, fig6, fig7, fig8, fig9]
    if os.environ.get("METRONOME_FIGURES_NO_QUALITY"):
        plots.remove(fig8)  # experiments.py did not run it either
    only = {int(x) for x in a.only.split(",") if x}
    if only:
        unknown = only - {int(f.__name__[3:]) for f in plots}
        if unknown:
            sys.exit(f"figures: --only: no figure {', '.join(map(str, sorted(unknown)))}")
        done = [f(d, w, a.quick)[0] for f in plots if int(f.__name__[3:]) in only]
        print(f"figures: {', '.join(done)} in {os.path.relpath(a.out)} (no REPORT.md: it needs "
              "every figure)", file=sys.stderr)
        return
    figs = [f(d, w, a.quick) for f in plots]
    report(d, w, a.quick, figs, a.started)
    print(f"figures: {len(figs)} figures and REPORT.md in {os.path.relpath(a.out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
