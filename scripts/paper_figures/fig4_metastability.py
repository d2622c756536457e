"""Figure 4: metastability. Identical runs that differ only in the seed, how many crash per model
and KV policy; and Moshi's crash probability against load."""
import numpy as np

from .plots import (COLORS, MIN_PT, column_figure, finish, handles_of, integer_ticks, label,
                    panel, short, strip_legend)
from .runs import model_scenario, spec, windowed

NUMBER = 4
SPEC = "fig4_metastability.json"


def runs20_dir(key):
    """Under data/: the seeds sweep of one model (sweep/aggregate.json, sweep/scenario.json)."""
    return f"fig4/runs20/{key}"


def load_dir(key):
    """Under data/: the load sweep, one folder per KV policy (POLICY/aggregate.json)."""
    return f"fig4/load/{key}"


def run(r, w, quick):
    sp = spec(SPEC, quick)
    for key, nb in sp["num_blocks"].items():
        s = windowed(model_scenario(sp["scenario"], w, key), w, key)
        if nb is not None:
            s["engine"]["num_blocks"] = nb
        path = r.write_scenario(r.data(runs20_dir(key), "scenario.in.json"), s)
        r.sweep(path, r.data(runs20_dir(key), "sweep"),
                [("kv_policy.type", sp["policies"])], sp["seeds"])
    key = sp["load_model"]
    s = windowed(model_scenario(sp["scenario"], w, key), w, key)
    if sp["num_blocks"][key] is not None:
        s["engine"]["num_blocks"] = sp["num_blocks"][key]
    path = r.write_scenario(r.data(load_dir(key), "scenario.in.json"), s)
    for policy in sp["policies"]:
        r.sweep(path, r.dir(load_dir(key), policy),
                [("workload.arrival.rate_per_s", sp["load_rates_per_s"])],
                str(sp["load_seeds"][policy]), sets=[f"kv_policy.type={policy}"])


def plot(d, w, quick):
    sp = spec(SPEC, quick)
    keys = list(sp["num_blocks"])
    fig, lax, axes = column_figure(3.5, 2, 1, legend_rows=2)
    a = axes[0][0]
    x = np.arange(len(keys))
    width = 0.38
    totals = []
    for j, pol in enumerate(sp["policies"]):
        counts = []
        for key in keys:
            agg = d.json(f"{runs20_dir(key)}/sweep/aggregate.json")
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
    panel(a, "a", "identical runs, seeds differ")
    a = axes[1][0]
    key = sp["load_model"]
    for pol in sp["policies"]:
        agg = d.json(f"{load_dir(key)}/{pol}/aggregate.json")
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
    rels = [f"{runs20_dir(k)}/sweep/cost_model.json" for k in keys]
    return finish(fig, d.out, "fig4_metastability", 4, sp["title"], d.cost_models(rels),
                  "(a) Of identical five-minute runs that differ only in the seed (Poisson callers, "
                  "exponential call lengths; reasons in scenarios/experiments/"
                  "fig4_metastability.json), how many crashed, per model and KV policy; a bar at 0 "
                  "is drawn as a thick line on the axis. Dashed: the paper's 14 of 20, scaled to "
                  "these runs. (b) Moshi: crash probability within the run against the mean "
                  "arrival rate, with its 95% Wilson interval.")


def rows(t, w, quick):
    sp = spec(SPEC, quick)
    for pol, paper in (("unbounded", "14/20 crashed (unbounded KV, two batches)"),
                       ("windowed", "0/20 crashed (Metronome)")):
        for key in sp["num_blocks"]:
            rel = f"{runs20_dir(key)}/sweep/aggregate.json"
            idx = next(i for i, p in enumerate(t.d.json(rel)) if p["grid.kv_policy.type"] == pol)
            sc = f"{runs20_dir(key)}/sweep/scenario.json#/horizon_s"
            t.row(f"identical runs that crashed, {pol} KV, {label(w, key)}; run length", paper,
                  "{}/{} ({:g} s runs)", [f"{rel}#/{idx}/crashes", f"{rel}#/{idx}/runs", sc])
    key = sp["load_model"]
    for pol in sp["policies"]:
        rel = f"{load_dir(key)}/{pol}/aggregate.json"
        agg = t.d.json(rel)
        # the paper's load: the grid point nearest one caller every 2 s
        idx = min(range(len(agg)),
                  key=lambda i: abs(agg[i]["grid.workload.arrival.rate_per_s"] - 0.5))
        t.row(f"crash probability at the paper's load, {pol} KV, {label(w, key)}: callers/s; "
              "probability of runs [95% Wilson interval]",
              "14/20 (unbounded), 0/20 (Metronome)",
              "{:g}/s: {:.3f} of {} runs [{:.3f}, {:.3f}]",
              [f"{rel}#/{idx}/grid.workload.arrival.rate_per_s",
               f"{rel}#/{idx}/crash_probability", f"{rel}#/{idx}/runs",
               f"{rel}#/{idx}/crash_wilson95_lo", f"{rel}#/{idx}/crash_wilson95_hi"])
