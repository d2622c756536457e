"""Figure 11: the replicas a fleet of Moshi on H200 needs against the call rate, with unbounded and
with windowed KV. Each count is one `metronome plan` (its search and tests, one candidate), so the
figure restates no sizing rule."""
import os

import numpy as np

from .plots import COLORS, column_figure, finish, handles_of, integer_ticks, panel, strip_legend
from .runs import EXP_DIR, load, merge, spec

NUMBER = 11
SPEC = "fig11_fleet_size.json"
BASE = "fig11/scenario.json"  # the plans' scenario but the rate
COST = "fig11/cost_model.json"  # a 1 s simulate of it: the cost model's label


def plan_out(kv, rate):
    """Under data/: one `plan --json` (a single candidate) of a KV policy at a call rate."""
    return f"fig11/{kv}/rate_{rate:g}.json"


def run(r, w, quick):
    sp = spec(SPEC, quick)
    fleet = load(os.path.normpath(os.path.join(EXP_DIR, sp["scenario"])))
    base = {k: v for k, v in fleet.items() if k not in ("fleet", "kv_policy")}
    base = merge(base, {"name": "fig11-fleet-size", "comment": f"{SPEC}: {sp['comment']}",
                        "workload": {"duration": sp["duration"]}, "horizon_s": sp["horizon_s"]})
    path = r.write_scenario(r.data(BASE), base)
    calls = []
    for kv, k in sp["kv_policies"].items():
        for rate in sp["rates_per_s"]:
            calls.append((["plan", "--scenario", path, "--set",
                           f'workload.arrival={{"type":"poisson","rate_per_s":{rate:g}}}',
                           "--gpus", sp["gpu"], "--tp", "1", "--max-replicas",
                           str(sp["max_replicas"]), "-j", "1", "--json"] + k["args"],
                          r.data(plan_out(kv, rate))))
    r.parallel(calls)
    r.cost_model_probe(path, r.data(COST))


def best(d, kv, rate):
    """The plan's one candidate (null fleet: none met the tests within max_replicas)."""
    return d.json(plan_out(kv, rate))["candidates"][0]


def plot(d, w, quick):
    sp = spec(SPEC, quick)
    rates = np.array(sp["rates_per_s"], dtype=float)
    fig, lax, axes = column_figure(2.6, 2, 1, legend_rows=1, sharex=True)
    axes = [a[0] for a in axes]
    for kv, k in sp["kv_policies"].items():
        c = [best(d, kv, rate) for rate in sp["rates_per_s"]]
        n = [x["fleet"]["replicas"] if x["fleet"] else np.nan for x in c]
        per = [x["cost_per_call_hour"] if x["fleet"] else np.nan for x in c]
        axes[0].plot(rates, n, "o-", color=COLORS[kv], label=f"{k['label']} KV")
        axes[1].plot(rates, per, "o-", color=COLORS[kv], label=f"{k['label']} KV")
    panel(axes[0], "a", "replicas needed")
    axes[0].set_ylabel("replicas")
    axes[0].set_ylim(bottom=0)
    integer_ticks(axes[0].yaxis)
    panel(axes[1], "b", "cost per call-hour")
    axes[1].set_ylabel("$ per call-hour")
    axes[1].set_ylim(bottom=0)
    axes[1].set_xscale("log", base=2)
    axes[1].set_xticks(rates, [f"{x:g}" for x in rates])
    axes[1].set_xlabel("callers arriving per second")
    axes[0].tick_params(labelbottom=False)
    strip_legend(lax, *handles_of(axes[0]), ncol=2)
    return finish(fig, d.out, "fig11_fleet_size", NUMBER, sp["title"],
                  [d.json(COST)["cost_model"]],
                  f"Moshi on H200 (TP 1) behind a least_sessions router; callers arriving as a "
                  f"Poisson stream at each rate (x axis), talking {sp['duration']['mean_s']:g} s "
                  f"on average (exponential), over {sp['horizon_s']:g} s. (a) the fewest "
                  "replicas whose simulated fleet has no stalled replica, no call turned away and "
                  "its true p99 within the 80 ms frame (`metronome plan`'s search); (b) that "
                  "fleet's cost per call-hour at the GPU file's example price.")


def rows(t, w, quick):
    sp = spec(SPEC, quick)
    rates = sp["rates_per_s"]
    for kv, k in sp["kv_policies"].items():
        refs = [f"{plan_out(kv, rate)}#/candidates/0/fleet/replicas" for rate in rates]
        t.row(f"Moshi H200 replicas a fleet needs (no stall, no call turned away, true p99 within "
              f"the frame; `plan`'s search), {k['label']} KV, at "
              + ", ".join(f"{x:g}" for x in rates) + " callers/s "
              f"({sp['duration']['mean_s']:g} s calls, {sp['horizon_s']:g} s)",
              "- (fleet sizing is ours)",
              " / ".join(["{}"] * len(rates)) + " replicas", refs)
