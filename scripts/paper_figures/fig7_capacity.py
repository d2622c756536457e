"""Figure 7: capacity. Memory and deadline caps per model; Moshi's caps and AIMD's N* over window W
and sinks S; and how far the cost model moves them (the Vidur imports, data/costmodel/)."""
import os

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np

from .plots import (COLUMN_IN, MIN_PT, DataError, finish, handles_of, label, panel, plain_log,
                    short, strip_legend)
from .runs import (ADMISSION_SCENARIO, EXP_DIR, MEASURED_CALIBRATION, ROOT, load, model_scenario,
                   spec, windowed)

NUMBER = 7
SPEC = "fig7_capacity.json"
# Under data/: per model MODELS/KEY.{scenario,capacity,cost_model}.json; Moshi over W x S in
# WINDOW_SINK (scenario.in.json, W{W}_S{S}.capacity.json, sweep/, arrival_sweep/); the cost-model
# runs in COSTMODEL.
MODELS = "fig7/models"
WINDOW_SINK = "fig7/window_sink"
COSTMODEL = "costmodel"
VIDUR_PROFILES = [("meta-llama/Llama-2-7b-hf", "h100"), ("meta-llama/Meta-Llama-3-8B", "a100")]
# Moshi's windowed admission scenario on each GPU under each cost model: (gpu, cost model type).
COST_RUNS = (("h200", "roofline"), ("h200", "corrected_roofline"), ("h100", "roofline"),
             ("h100", "corrected_roofline"), ("h100", "calibrated"))


def run(r, w, quick):
    sp = spec(SPEC, quick)
    calls = []
    for key in w["models"]:
        s = windowed(model_scenario(sp["scenario"], w, key, w["budget_fraction"]), w, key)
        base = r.data(MODELS, f"{key}.scenario.json")
        path = r.write_scenario(base, s)
        calls.append((["capacity", "--scenario", path, "--json"],
                      base.replace(".scenario.json", ".capacity.json")))
        calls.append((["simulate", "--scenario", path, "--json", "--set", "horizon_s=1"],
                      base.replace(".scenario.json", ".cost_model.json")))
    ws = sp["window_sink"]
    src = load(os.path.normpath(os.path.join(EXP_DIR, ws["scenario"])))
    # Demand lasts the whole run (the admission scenario stops its callers at 3000, 300 s in): N*
    # is read over the last half, and a window as long as W = 3000 (240 s) settles only then.
    src["workload"]["arrival"]["max_sessions"] = 0
    path = r.write_scenario(r.data(WINDOW_SINK, "scenario.in.json"), src)
    for wt in ws["window_tokens"]:
        for st in ws["sink_tokens"]:
            calls.append((["capacity", "--scenario", path, "--json",
                           "--set", f"kv_policy.window_tokens={wt}",
                           "--set", f"kv_policy.sink_tokens={st}"],
                          r.data(WINDOW_SINK, f"W{wt}_S{st}.capacity.json")))
    r.parallel(calls)
    r.sweep(path, r.dir(WINDOW_SINK, "sweep"),
            [("kv_policy.window_tokens", ws["window_tokens"]),
             ("kv_policy.sink_tokens", ws["sink_tokens"])], ws["seeds"])
    # The same at S = 16 with each caller's clock started on arrival (random phases): the band
    # the spread joins close.
    r.sweep(path, r.dir(WINDOW_SINK, "arrival_sweep"),
            [("kv_policy.window_tokens", ws["window_tokens"])], ws["seeds"],
            sets=["kv_policy.sink_tokens=16", "admission.join=arrival"])
    cost_models(r, w, quick)


def cost_models(r, w, quick):
    """How much the cost model moves capacity: the Vidur imports (the corrected roofline's error
    before and after, per GPU) and Moshi's windowed admission scenario under each cost model."""
    for model, gpu in VIDUR_PROFILES:
        r.call(["calibrate", "import-vidur", os.path.relpath(os.path.join(ROOT, "results", "vidur"),
                                                            r.out), "--model", model,
                "--gpu", gpu, "--out", r.data(COSTMODEL, f"{gpu}_vidur.calibration.json"),
                "--correction-out", r.data(COSTMODEL, f"{gpu}_vidur.correction.json")],
               r.data(COSTMODEL, f"{gpu}_vidur.txt"))
    src = load(ADMISSION_SCENARIO)
    calls = []
    for gpu, cost in COST_RUNS:
        base = r.data(COSTMODEL, f"moshi_{gpu}_{cost}.scenario.json")
        s = dict(src, gpu=gpu)
        s["cost_model"] = ({"type": "calibrated", "file": os.path.relpath(
            MEASURED_CALIBRATION[gpu], os.path.dirname(base))} if cost == "calibrated"
            else {"type": cost})
        path = r.write_scenario(base, s)
        # Given again relative to the output folder (metronome's cwd): a file named inside a
        # scenario is made absolute, and the outputs would name this machine's paths.
        sets = (["--set", "cost_model.file=" + os.path.relpath(MEASURED_CALIBRATION[gpu], r.out)]
                if cost == "calibrated" else [])
        calls.append((["capacity", "--scenario", path, "--json"] + sets,
                      base.replace(".scenario.json", ".capacity.json")))
        calls.append((["simulate", "--scenario", path, "--json"] + sets,
                      base.replace(".scenario.json", ".summary.json")))
    r.parallel(calls)


def plot(d, w, quick):
    sp = spec(SPEC, quick)
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
    mem = [d.json(f"{MODELS}/{k}.capacity.json")["capacity"]["memory_cap_sessions"] for k in keys]
    dl = [d.json(f"{MODELS}/{k}.capacity.json")["capacity"]["deadline_cap_sessions"] for k in keys]
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
    agg = d.json(f"{WINDOW_SINK}/sweep/aggregate.json")
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
    budgets = {}  # (deadline_ms, deadline_fraction): the cells' files that say so
    for i, s_ in enumerate(S):
        for j, w_ in enumerate(W):
            rel = f"{WINDOW_SINK}/W{w_}_S{s_}.capacity.json"
            cap = d.json(rel)["capacity"]
            memcap[i, j] = cap["memory_cap_sessions"]
            dlcap[i, j] = cap["deadline_cap_sessions"]
            budgets.setdefault((cap["deadline_ms"], cap["deadline_fraction"]), []).append(rel)
    # Panel (d) and the caption name one deadline for every cell; files that disagree come from
    # different runs, and no one number describes them.
    if len(budgets) != 1:
        raise DataError(
            f"{d.path(WINDOW_SINK)}: capacity/deadline_ms and capacity/deadline_fraction must be "
            "the same in every W*_S*.capacity.json, but they are " +
            "; ".join(f"{ms:g} ms x {fr:g} in " + (", ".join(os.path.basename(p) for p in rels)
                                                     if len(rels) <= 3 else f"{len(rels)} files")
                      for (ms, fr), rels in budgets.items()) +
            " (scripts/experiments.py --only 7 writes them anew)")
    (deadline_ms, fraction), = budgets
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
    rels = [f"{MODELS}/{k}.cost_model.json" for k in keys] + [
        f"{WINDOW_SINK}/sweep/cost_model.json"]
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


def capacity_rows(t, w, quick):
    """Moshi's caps, then AIMD's N* across seeds against the caps of the same W x S cell."""
    moshi = f"{MODELS}/moshi.capacity.json#/"
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
    ws = spec(SPEC, quick)["window_sink"]
    agg = f"{WINDOW_SINK}/sweep/aggregate.json"
    points = t.d.json(agg)
    for wt in ws["window_tokens"]:
        st = 16 if 16 in ws["sink_tokens"] else ws["sink_tokens"][0]
        idx = next(i for i, p in enumerate(points) if p["grid.kv_policy.window_tokens"] == wt
                   and p["grid.kv_policy.sink_tokens"] == st)
        cap = f"{WINDOW_SINK}/W{wt}_S{st}.capacity.json#/capacity/"
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
    agg = f"{WINDOW_SINK}/arrival_sweep/aggregate.json"
    points = t.d.json(agg)
    for wt in ws["window_tokens"]:
        idx = next(i for i, p in enumerate(points) if p["grid.kv_policy.window_tokens"] == wt)
        t.row(f"Moshi AIMD N* across seeds with joins on arrival (random phases), W = {wt}, "
              "S = 16: median (min to max); runs flagged of runs", "-",
              "{:g} ({:g} to {:g}); {} of {}",
              [f"{agg}#/{idx}/n_star_median", f"{agg}#/{idx}/n_star_min",
               f"{agg}#/{idx}/n_star_max", f"{agg}#/{idx}/admission_flagged_runs",
               f"{agg}#/{idx}/runs"])


def other_model_rows(t, w, quick):
    """The caps of every model but Moshi (whose rows come first)."""
    for key in w["models"]:
        if key == "moshi":
            continue
        rel = f"{MODELS}/{key}.capacity.json#/capacity/"
        t.row(f"{label(w, key)}, windowed KV: memory cap / deadline cap", "-",
              "{} / {} sessions ({} binds)",
              [rel + "memory_cap_sessions", rel + "deadline_cap_sessions", rel + "binding"])


def cost_model_rows(t, w, quick):
    """The roofline's error on each imported Vidur profile, and how far the cost model moves
    Moshi's capacity."""
    for gpu, model in (("h100", "Llama-2-7B"), ("a100", "Llama-3-8B")):
        e = f"{COSTMODEL}/{gpu}_vidur.correction.json#/error/"
        for when, name in (("before", "datasheet roofline"), ("after", "corrected roofline")):
            t.row(f"cost model error, {name}, on Vidur's measured {gpu.upper()} {model} layer "
                  "(token-level ops), held out: median; p90; max abs. error; rows", "-",
                  "{:.1f}%; {:.1f}%; {:.1f}%; {} rows",
                  [e + f"{when}_heldout/median", e + f"{when}_heldout/p90",
                   e + f"{when}_heldout/max", e + f"{when}_heldout/points"],
                  scales=[100, 100, 100, None])
    names = {"roofline": "raw datasheet roofline", "corrected_roofline": "corrected roofline",
             "calibrated": "measured (Vidur H100 profile of Llama-2-7B, scaled to Moshi)"}
    for gpu, cost in COST_RUNS:
        rel = f"{COSTMODEL}/moshi_{gpu}_{cost}."
        t.row(f"capacity, Moshi windowed (W 480, S 16, 13 ms budget [tuned]) on {gpu.upper()}, "
              f"{names[cost]}: deadline cap; AIMD N*",
              "about 209 sessions" if cost == "corrected_roofline" and gpu == "h200" else "-",
              "{} sessions; N* {}",
              [rel + "capacity.json#/capacity/deadline_cap_sessions",
               rel + "summary.json#/result/admission/n_star"])
