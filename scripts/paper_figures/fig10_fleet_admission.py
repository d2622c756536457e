"""Figure 10: a fleet of 8 Moshi replicas behind each gateway, unbounded against windowed KV: the
calls placed, the frames that went silent and the goodput. Its rows add `metronome plan` for each
shipped model on the same traffic (no figure: the plan is a table)."""
import os

import numpy as np

from .plots import COLORS, column_figure, finish, handles_of, panel, strip_legend
from .plots import label
from .runs import EXP_DIR, load, merge, model_scenario, spec

NUMBER = 10
SPEC = "fig10_fleet_admission.json"


def run_dir(kv, gateway):
    """Under data/: one fleet simulate run (summary.json, replicas.csv, replicas/)."""
    return f"fig10/{kv}/{gateway}"


def plan_out(key):
    """Under data/: one `plan --json` of a model."""
    return f"fig10/plan/{key}.json"


def plan_calls(r, w, sp, base):
    """One plan per shipped model on the fleet's traffic; its candidates are the experiment
    file's GPUs and degrees, the model's window from workloads.json and twice it. Each plan may
    use every job beside the figure's other runs: Qwen2.5-Omni's, the longest call, on one
    thread alone outlasted all the others together (33 s against 26 s on a 2-core machine)."""
    pl = sp["plan"]
    plan_base = {k: v for k, v in base.items() if k not in ("fleet", "kv_policy")}
    plan_base["cost_model"] = {"type": "auto"}  # chosen again for each candidate GPU
    calls = []
    for key in pl["models"]:
        s = dict(model_scenario(plan_base, w, key), name=f"plan-{key}")
        path = r.write_scenario(r.data(f"fig10/plan/{key}.in.json"), s)
        win = w["models"][key]["window"]["window_tokens"]
        args = ["plan", "--scenario", path, "--gpus", ",".join(pl["gpus"]),
                "--tp", ",".join(map(str, pl["tensor_parallel"])),
                "--windows", f"{win},{2 * win}", "--sinks", ",".join(map(str, pl["sinks"])),
                "--max-replicas", str(pl["max_replicas"]), "-j", r.jobs, "--json"]
        calls.append((args, r.data(plan_out(key))))
    return calls


def run(r, w, quick):
    sp = spec(SPEC, quick)
    base = load(os.path.normpath(os.path.join(EXP_DIR, sp["scenario"])))
    base["comment"] = f"{SPEC}: {sp['comment']}"
    # The figure reads the fleet's totals; each replica's time series only needs to exist.
    base["output"] = sp["output"]
    calls = []
    for kv, kv_over in sp["kv_policies"].items():
        for g, gw in sp["gateways"].items():
            out_dir = r.dir(run_dir(kv, g))
            s = merge(merge(base, kv_over), gw["override"])
            path = r.write_scenario(os.path.join(out_dir, "scenario.in.json"), s)
            calls.append((["simulate", "--scenario", path, "--out", out_dir], None))
    r.parallel(calls + plan_calls(r, w, sp, base))


def cost_labels(d, sp):
    """The cost model each fleet's replicas ran, from a replica's own summary."""
    rels = [f"{run_dir(kv, g)}/replicas/0/summary.json" for kv in sp["kv_policies"]
            for g in sp["gateways"]]
    return d.cost_models(rels)


def plot(d, w, quick):
    sp = spec(SPEC, quick)
    gateways = list(sp["gateways"])
    fig, lax, axes = column_figure(3.4, 3, 1, legend_rows=1, sharex=True)
    axes = [a[0] for a in axes]
    x = np.arange(len(gateways))
    width = 0.38
    for i, kv in enumerate(sp["kv_policies"]):
        f = [d.json(f"{run_dir(kv, g)}/summary.json")["fleet"] for g in gateways]
        placed = [100.0 * s["calls_placed"] / s["calls_offered"] for s in f]
        silent = [100.0 * s["silent_fraction"] for s in f]
        goodput = [s["goodput_frames_per_s"] / 1000.0 for s in f]
        off = (i - 0.5) * width
        for a, vals in zip(axes, (placed, silent, goodput)):
            a.bar(x + off, vals, width, color=COLORS[kv], label=f"{kv} KV")
        for j, s in enumerate(f):
            if s["replicas_stalled"]:
                axes[1].annotate(f"{s['replicas_stalled']}/{s['replicas']}", (x[j] + off, silent[j]),
                                 ha="center", va="bottom", fontsize=7)
    panel(axes[0], "a", "calls placed")
    axes[0].set_ylabel("% of offered")
    axes[0].set_ylim(0, 115)
    panel(axes[1], "b", "frames silent (n/8: replicas stalled)")
    axes[1].set_ylabel("% of due")
    axes[1].set_ylim(0, max(100, axes[1].get_ylim()[1] * 1.15))
    panel(axes[2], "c", "goodput")
    axes[2].set_ylabel("k frames/s\non time")
    axes[2].set_xticks(x, [sp["gateways"][g]["tick"] for g in gateways])
    for a in axes[:2]:
        a.tick_params(labelbottom=False)
    strip_legend(lax, *handles_of(axes[0]), ncol=2)
    return finish(fig, d.out, "fig10_fleet_admission", NUMBER, sp["title"], cost_labels(d, sp),
                  "8 Moshi replicas on H200 behind a least_sessions router, callers at 4 per "
                  "second for 5 minutes on average, 20 minutes; each gateway (x axis) with "
                  "unbounded and windowed (480 + 16 sinks) KV; AIMD per replica, or one AIMD "
                  "at the gateway capping the fleet's live sessions on the worst (or median) "
                  "replica's latency. (a) calls the gateway and the "
                  "replicas' own admission placed; (b) due frames that went silent, with the "
                  "number of replicas whose pool stalled; (c) frames answered within the "
                  "deadline per second over the run. A rejected call is not a silent one.")


def rows(t, w, quick):
    sp = spec(SPEC, quick)
    for kv in sp["kv_policies"]:
        for g, gw in sp["gateways"].items():
            rel = f"{run_dir(kv, g)}/summary.json#/fleet/"
            t.row(f"fleet of 8 Moshi H200 replicas, 4 callers/s: {kv} KV, gateway {gw['label']}: "
                  "calls placed of offered; replicas stalled; frames silent",
                  "a KV-usage shedder sees unbounded KV fill; a latency controller does not "
                  "(the paper's argument, at fleet scale)",
                  "{} of {}; {} of {} stalled; {:.1f}% silent",
                  [rel + "calls_placed", rel + "calls_offered", rel + "replicas_stalled",
                   rel + "replicas", rel + "silent_fraction"], [None, None, None, None, 100])


def plan_rows(t, w, quick):
    sp = spec(SPEC, quick)
    pl = sp["plan"]
    for key in pl["models"]:
        best = f"{plan_out(key)}#/candidates/0/"
        t.row(f"plan for {label(w, key)} at the fleet's traffic (4 callers/s, 5-minute calls, "
              "20 min; H100 or H200, TP 1 or 2, W its window or twice it, S 16): the cheapest "
              "fleet with no stall, no call turned away and true p99 within the frame; its cost "
              "per hour and per call-hour; its true p99",
              "- (fleet sizing is ours)",
              "{} x {}, TP {}, W {}; ${:.2f}/hour, ${:.4f}/call-hour; {:.1f} ms",
              [best + "fleet/replicas", best + "gpu", best + "tensor_parallel",
               best + "window_tokens", best + "cost_per_hour", best + "cost_per_call_hour",
               best + "fleet/true_p99_ms"])
