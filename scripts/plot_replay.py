#!/usr/bin/python3
"""Overlay a real run and its simulation from `metronome replay --out DIR`.

    scripts/plot_replay.py DIR [--out FIGURE.png] [--title TEXT]

Reads DIR/summary.json, DIR/measured.csv, DIR/simulated.csv (one row per output.sample_period_s,
the simulator's TimeSeriesWriter columns) and DIR/frames.csv (every measured frame). Three panels
sharing the time axis:
  1. true latency: every measured frame (dots), and the per-interval p99 of both runs (lines);
     each measured step's thread CPU time (crosses: what the calibration measures);
  2. reported latency p99 (what a health monitor sees: silent frames padded at silence_after_s) and
     the fraction of due frames that were silent, both runs;
  3. pool occupancy (fraction of blocks in use), both runs, with the saturation times: measured,
     simulated and first-order (whole blocks and continuous).
"""
import argparse
import csv
import json
import os

from atomic_file import replacing

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def col(rows, name, scale=1.0):
    out = []
    for r in rows:
        v = r.get(name, "")
        out.append(float(v) * scale if v not in ("", None) else float("nan"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="output directory of metronome replay --out")
    ap.add_argument("--out", help="figure to write (default DIR/replay.png)")
    ap.add_argument("--title", help="figure title (default: scenario name and backend)")
    a = ap.parse_args()

    # A folder that is not a replay's output is bad input: a message and exit 2, not a traceback.
    def load(name, reader, fields):
        path = os.path.join(a.dir, name)
        try:
            data = reader(path)
            for field in fields:
                item = data[0] if isinstance(data, list) else data
                for key in field.split("."):
                    item = item[key]
            return data
        except (OSError, ValueError, LookupError, TypeError) as e:
            ap.error(f"{path}: {type(e).__name__}: {e} (DIR must be the folder of `metronome replay "
                     f"--out DIR`)")

    def read_json(path):
        with open(path) as f:
            return json.load(f)

    summary = load("summary.json", read_json,
                   ["saturation", "scenario.engine", "scenario.workload.frame_period_s", "scenario.name",
                    "backend.name", "measured.silent_frame_fraction", "simulated.silent_frame_fraction"])
    meas = load("measured.csv", read_csv, [])
    sim = load("simulated.csv", read_csv, [])
    frames = load("frames.csv", read_csv, [])
    sat = summary["saturation"]
    pad_s = summary["scenario"]["engine"].get("silence_after_s") or summary["scenario"]["workload"].get(
        "deadline_s") or summary["scenario"]["workload"]["frame_period_s"]

    fig, ax = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    c_meas, c_sim = "tab:blue", "tab:orange"

    served = [f for f in frames if f["served_s"]]
    ax[0].scatter([float(f["release_s"]) for f in served], [float(f["latency_ms"]) for f in served],
                  s=4, color=c_meas, alpha=0.35, label="measured, each frame")
    ax[0].plot(col(meas, "t_s"), col(meas, "true_p99_ms"), color=c_meas, lw=1.5,
               label="measured p99 (per interval)")
    ax[0].plot(col(sim, "t_s"), col(sim, "true_p99_ms"), color=c_sim, lw=1.5, ls="--",
               label="simulated p99 (per interval)")
    steps_path = os.path.join(a.dir, "steps.csv")
    if os.path.exists(steps_path):
        steps = read_csv(steps_path)
        if steps and "cpu_ms" in steps[0]:
            # A step's thread CPU time is what the calibration measures; wall minus it is time the
            # machine gave to other work.
            ax[0].scatter(col(steps, "start_s"), col(steps, "cpu_ms"), s=4, marker="x",
                          color="grey", alpha=0.6, label="measured step, thread CPU time")
    ax[0].set_ylabel("true latency (ms)\n(served frames)")
    ax[0].set_ylim(bottom=0)
    ax[0].legend(loc="upper left", fontsize=8)

    ax[1].plot(col(meas, "t_s"), col(meas, "reported_p99_ms"), color=c_meas, lw=1.5,
               label="measured reported p99")
    ax[1].plot(col(sim, "t_s"), col(sim, "reported_p99_ms"), color=c_sim, lw=1.5, ls="--",
               label="simulated reported p99")
    ax[1].set_ylabel("reported latency (ms)")
    ax[1].set_ylim(0, pad_s * 1e3 * 1.15)
    tw = ax[1].twinx()
    tw.plot(col(meas, "t_s"), col(meas, "silent_frame_fraction"), color=c_meas, lw=1, ls=":",
            label="measured silent fraction")
    tw.plot(col(sim, "t_s"), col(sim, "silent_frame_fraction"), color=c_sim, lw=1, ls="-.",
            label="simulated silent fraction")
    tw.set_ylabel("silent fraction of due frames")
    tw.set_ylim(-0.02, 1.05)
    h1, l1 = ax[1].get_legend_handles_labels()
    h2, l2 = tw.get_legend_handles_labels()
    ax[1].legend(h1 + h2, l1 + l2, loc="upper left", fontsize=8)

    ax[2].plot(col(meas, "t_s"), col(meas, "pool_fraction"), color=c_meas, lw=2, label="measured")
    ax[2].plot(col(sim, "t_s"), col(sim, "pool_fraction"), color=c_sim, lw=1.5, ls="--",
               label="simulated")
    marks = [("measured_s", "measured t_sat", c_meas, "-"), ("simulated_s", "simulated t_sat", c_sim, "--"),
             ("first_order_blocks_s", "first-order (whole blocks)", "tab:green", ":"),
             ("first_order_continuous_s", "first-order (continuous)", "tab:red", "-.")]
    for key, label, color, ls in marks:
        t = sat.get(key)
        if t is not None:
            for x in ax:
                x.axvline(t, color=color, ls=ls, lw=1, alpha=0.8)
            ax[2].plot([], [], color=color, ls=ls, lw=1, label=f"{label} {t:.2f} s")
    ax[2].set_ylabel("pool occupancy")
    ax[2].set_ylim(0, 1.05)
    ax[2].set_xlabel("time since start (s)")
    ax[2].legend(loc="lower right", fontsize=8)

    m, s = summary["measured"], summary["simulated"]
    err = sat.get("simulated_vs_measured")
    title = a.title or "{}: {} backend, measured vs simulated".format(summary["scenario"]["name"],
                                                                    summary["backend"]["name"])
    sub = "saturation {} (measured) vs {} (simulated){}; silent {:.1%} vs {:.1%}".format(
        f"{sat['measured_s']:.2f} s" if sat.get("measured_s") is not None else "never",
        f"{sat['simulated_s']:.2f} s" if sat.get("simulated_s") is not None else "never",
        f", error {err:+.1%}" if err is not None else "", m["silent_frame_fraction"], s["silent_frame_fraction"])
    fig.suptitle(title + "\n" + sub, fontsize=10)
    fig.tight_layout()
    out = a.out or os.path.join(a.dir, "replay.png")
    try:
        with replacing(out) as tmp:
            fig.savefig(tmp, dpi=120)
    except (OSError, ValueError) as e:
        ap.error(f"--out {out}: cannot write ({e})")
    print(out)


if __name__ == "__main__":
    main()
