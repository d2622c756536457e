"""Figure 5: AIMD admission on Moshi, windowed against unbounded KV: live sessions, the cap, and the
latency signal the controller reads."""
import os

import matplotlib.pyplot as plt
import numpy as np

from .plots import (COLORS, censored_markers, column_figure, deadline_line, finish, handles_of,
                    integer_ticks, num, panel, strip_legend)
from .runs import EXP_DIR, load, spec

NUMBER = 5
SPEC = "fig5_admission.json"


def run_dir(name):
    """Under data/: one variant's simulate run (summary.json, timeseries.csv)."""
    return f"fig5/{name}"


def run(r, w, quick):
    sp = spec(SPEC, quick)
    calls = []
    for name, rel in sp["variants"].items():
        out_dir = r.dir(run_dir(name))
        path = r.write_scenario(os.path.join(out_dir, "scenario.in.json"),
                                load(os.path.normpath(os.path.join(EXP_DIR, rel))))
        calls.append((["simulate", "--scenario", path, "--out", out_dir], None))
    r.parallel(calls)


def plot(d, w, quick):
    sp = spec(SPEC, quick)
    names = list(sp["variants"])
    fig, lax, axes = column_figure(3.2, 2, len(names), legend_rows=4, sharex=True)
    signal_in_data = True
    for j, name in enumerate(names):
        summ = d.json(f"{run_dir(name)}/summary.json")
        ts = d.csv(f"{run_dir(name)}/timeseries.csv")
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
    rels = [f"{run_dir(n)}/summary.json" for n in names]
    sig = ("the latency signal the controller reads each control interval (the reported p95 of "
           "that interval's frames; hollow triangles: censored)" if signal_in_data else
           "the reported p99 per sample (this data predates the controller-signal column)")
    return finish(fig, d.out, "fig5_admission", 5, sp["title"], d.cost_models(rels),
                  "AIMD admission on Moshi, one H200 (scenarios/admission/moshi_h200_aimd_"
                  "{windowed,unbounded}.json). Top: admitted live sessions and the admission cap "
                  "(N*: the median live count over the last half of the run). Bottom: " + sig +
                  ", with the hold band between the controller's low and high fractions of the "
                  "deadline. Dotted red: the pool is exhausted.")


def rows(t, w, quick):
    windowed = f"{run_dir('windowed')}/summary.json"
    unbounded = f"{run_dir('unbounded')}/summary.json"
    t.row("N*: AIMD admission, windowed KV, Moshi on H200", "about 209 sessions",
          "{:g} sessions", [windowed + "#/result/admission/n_star"])
    t.row("first stall under AIMD, windowed KV", "none", "{}",
          [windowed + "#/result/first_stall_s"])
    t.row("AIMD with unbounded KV: sessions live at the first stall; its time",
          "over-admits, then stalls", "{} sessions; stall at {:.1f} s",
          [unbounded + "#/result/admission/live_at_first_stall",
           unbounded + "#/result/first_stall_s"])
