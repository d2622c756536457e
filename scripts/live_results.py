#!/usr/bin/python3
"""The live runs beside their simulations: results/live/live_vs_sim.png|pdf and REPORT.md.

For each case folder (results/live/<case>/, with live/ records and compare.json), two panels:
  top     pool in use: what vLLM's Prometheus endpoint said (vllm:kv_cache_usage_perc), the
          engine's own step log (1 - free blocks / usable blocks) and the simulation
          (timeseries.csv pool_fraction); the live first refused allocation and simulate's first
          stall marked
  bottom  frames answered within silence_after_s per second, in the interval of their silence
          deadline (timeseries.csv frames_served / interval): live, booked from frames.csv by
          `metronome book`, and simulated; under admission, sessions admitted and the cap
The simulation is run here (`metronome simulate --out`) from scenarios/live/<case>.json.
REPORT.md puts each case's compare.json (scripts/live_compare.py) in one table: the live engine,
the simulation with the live calibration, predict's t_sat, the relative errors and the checks.

Usage: live_results.py [--metronome build/metronome] [--out results/live] CASE_DIR ...
Every input (each case's records and compare.json, OUT/calibration/vllm_tiny_cpu.json) is read
and every metronome run made before anything is written; the figures and REPORT.md are written
under temporary names and renamed into place.
Exit: 0 done; 2 bad input (or a metronome that failed: its message is passed on).
"""

import argparse
import os
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def num(x):
    return float(x) if x not in ("", None) else None


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# One number format for the table and report, one reading of records and of metronome's failures.
from live_compare import fmt as cell  # noqa: E402
from live_compare import (InputError, read_csv, read_json, read_steps,  # noqa: E402
                          run_metronome, write_atomically)


def pct(x):
    return "-" if x is None else f"{100 * x:+.1f}%"


def read_calibration(path):
    cal = read_json(path)
    fit = cal.get("fit")
    if (not isinstance(cal.get("label"), str) or not isinstance(fit, dict)
            or not all(isinstance(fit.get(k), (int, float))
                       for k in ("r2", "heldout_median_ape", "heldout_max_ape"))):
        raise InputError(f"{path}: expected a calibration (`metronome calibrate fit --out`) with "
                         "label and fit.r2, fit.heldout_median_ape, fit.heldout_max_ape")
    return cal


def read_case(args, d):
    """What a case's panels and its report row read, checked, and its simulation and booking by
    metronome, before anything is drawn."""
    case = os.path.basename(os.path.normpath(d))
    scenario = os.path.join(args.scenarios, case + ".json")
    if not os.path.isfile(scenario):
        raise InputError(f"{scenario}: missing (the scenario of {d})")
    live = os.path.join(d, "live")
    for f in ("compare.json", "live/run.json", "live/metrics.csv"):
        if not os.path.isfile(os.path.join(d, f)):
            raise InputError(f"{d}: {f} missing (expected a case folder, results/live/<case>/, "
                             "compared by scripts/live_compare.py)")
    c = {"case": case, "comp": read_json(os.path.join(d, "compare.json")),
         "run": read_json(os.path.join(live, "run.json")),
         "metrics": read_csv(os.path.join(live, "metrics.csv"), ("t_s", "kv_cache_usage_perc")),
         "steps": read_steps(os.path.join(live, "steps.jsonl")),
         "admission": os.path.exists(os.path.join(live, "admission.csv"))}
    for k in ("live", "simulated", "relative_error", "checks", "case", "real_time"):
        if k not in c["comp"]:
            raise InputError(f"{d}/compare.json: field '{k}': missing (rerun "
                             "scripts/live_compare.py --write)")
    series = ("t_s", "pool_fraction", "live_sessions", "admission_cap", "frames_served")
    with tempfile.TemporaryDirectory() as tmp:
        run_metronome(args.metronome, ["simulate", "--scenario", scenario, "--out", tmp])
        c["ts"] = read_csv(os.path.join(tmp, "timeseries.csv"), series)
        c["scen"] = read_json(os.path.join(tmp, "scenario.json"))
        # The live run's time series, booked by the simulator's ledger (metronome book).
        run_metronome(args.metronome, ["book", "--scenario", scenario, "--records", live,
                                       "--out", tmp])
        c["lts"] = read_csv(os.path.join(tmp, "timeseries.csv"), series)
    return c


def write_report(args, cal, comps):
    fit = cal["fit"]
    lines = [
        "# Live runs: vLLM's CPU backend against the simulator",
        "",
        "Made by `scripts/live_results.py` from `results/live/<case>/compare.json`"
        " (`scripts/live_compare.py`); how the runs were made: `docs/live.md`. Simulated with the"
        " live calibration `calibration/vllm_tiny_cpu.json` (" + cal["label"] + "; R2 "
        f"{fit['r2']:.4f}, held-out median {100 * fit['heldout_median_ape']:.1f}%, max"
        f" {100 * fit['heldout_max_ape']:.1f}%). Errors are simulated (or predicted) against"
        " live. The live t_sat is the engine's first refused allocation, read in its scheduler.",
        "",
        "| case | t_sat live (s) | simulated | predicted (blocks) | frames served live / sim"
        " | silent live / sim | true p50 before cliff live / sim (ms) | p99 live / sim (ms)"
        " | tokens per due frame after cliff live / sim | preemptions live / sim | real time |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in comps:
        lv, sm, e = c["live"], c["simulated"], c["relative_error"]
        lines.append(
            f"| {c['case']} | {cell(lv['first_refused_allocation_s'])} "
            f"| {cell(sm['first_stall_s'])} ({pct(e['t_sat_simulated'])}) "
            f"| {cell(sm['t_sat_predicted_blocks_s'])} ({pct(e['t_sat_predicted_blocks'])}) "
            f"| {lv['frames_served']} / {sm['frames_served']} ({pct(e['frames_served'])}) "
            f"| {lv['frames_silent']} / {sm['frames_silent']} "
            f"| {cell(lv['true_p50_ms_before_cliff'])} / {cell(sm['true_p50_ms_before_cliff'])}"
            f" ({pct(e['true_p50_before_cliff'])}) "
            f"| {cell(lv['true_p99_ms_before_cliff'])} / {cell(sm['true_p99_ms_before_cliff'])}"
            f" ({pct(e['true_p99_before_cliff'])}) "
            f"| {cell(lv['tokens_per_due_frame_after_cliff'], digits=3)} / "
            f"{cell(sm['tokens_per_due_frame_after_cliff'], digits=3)} "
            f"| {lv['preemptions']} / {sm['preemptions']} "
            f"| {'yes' if c['real_time'] else 'no'} (lateness p99 "
            f"{cell(lv['release_lateness_p99_ms'])} ms, load {cell(lv['load_average_before'], digits=3)}) |")
    lines += ["", "Checks (the ctest `live.<case>` enforces all but the latency ones; latency is"
              " checked only on runs that kept real time):", ""]
    for c in comps:
        for ch in c["checks"]:
            err = ch.get("error")
            verdict = ("ok" if ch["ok"] else "**outside tolerance**" if ch.get("enforced", True)
                       else "**not met** (reported, not enforced)")
            lines.append(f"- {c['case']}: {verdict}: "
                         f"{ch['what']}" + (f" ({pct(err)} against +-{100 * ch['tolerance']:.0f}%)"
                                            if err is not None else ""))
    lines += ["", "Each run: " + "; ".join(
        f"{c['case']}: {c['live']['vllm_version']}, {c['live']['date']}, {c['live']['machine']}"
        for c in comps), ""]
    write_atomically(os.path.join(args.out, "REPORT.md"), lambda f: f.write("\n".join(lines)))


def plot(cases):
    plt.rcParams.update({"font.size": 7, "axes.titlesize": 7, "legend.fontsize": 6})
    n = len(cases)
    fig, axes = plt.subplots(2, n, figsize=(1.8 * n, 3.2), sharex="col", squeeze=False)
    for i, c in enumerate(cases):
        case, comp, run, scen, ts, lts = (c[k] for k in ("case", "comp", "run", "scen", "ts",
                                                          "lts"))
        horizon = scen["horizon_s"]
        usable = scen["engine"]["num_blocks"] - 1
        top, bot = axes[0][i], axes[1][i]
        m = c["metrics"]
        top.plot([num(r["t_s"]) for r in m], [num(r["kv_cache_usage_perc"]) for r in m],
                 color="C0", lw=1.2, label="vLLM Prometheus")
        origin = run.get("clock_origin_monotonic_s")
        st = [(s["t1"] - origin, 1 - s["free"] / usable) for s in c["steps"]
              if origin is not None and s["t0"] >= origin and "free" in s]
        # A stalled engine writes no step, so its last state holds until the next one (steps-post).
        top.step([t for t, _ in st], [u for _, u in st], where="post", color="C0", lw=0.5,
                 alpha=0.5, ls=":", label="vLLM step log")
        top.plot([num(r["t_s"]) for r in ts], [num(r["pool_fraction"]) for r in ts], color="C1",
                 lw=1.0, ls="--", label="simulated")
        t_live = comp["live"]["first_refused_allocation_s"]
        t_sim = comp["simulated"]["first_stall_s"]
        if t_live is not None:
            top.axvline(t_live, color="C0", lw=0.6)
        if t_sim is not None:
            top.axvline(t_sim, color="C1", lw=0.6, ls="--")
        top.set_ylim(0, 1.05)
        top.set_title(case.replace("_", " "))
        period = scen["output"]["sample_period_s"]
        if c["admission"]:
            # Admission runs: sessions admitted (and the controller's cap, thin) over time.
            bot.step([num(r["t_s"]) for r in lts], [num(r["live_sessions"]) for r in lts],
                     where="post", color="C0", lw=1.0, label="live")
            bot.step([num(r["t_s"]) for r in lts], [num(r["admission_cap"]) for r in lts],
                     where="post", color="C0", lw=0.5, alpha=0.6)
            bot.step([num(r["t_s"]) for r in ts], [num(r["live_sessions"]) for r in ts],
                     where="post", color="C1", lw=1.0, ls="--", label="simulated")
            bot.step([num(r["t_s"]) for r in ts], [num(r["admission_cap"]) for r in ts],
                     where="post", color="C1", lw=0.5, ls="--", alpha=0.6)
            bot.set_ylabel("sessions admitted (cap thin)")
        else:
            # Frames answered within silence_after_s, in the interval of their silence deadline
            # (the time series' frames_served), on both sides.
            bot.step([num(r["t_s"]) - period for r in lts],
                     [num(r["frames_served"]) / period for r in lts], where="post", color="C0",
                     lw=1.0, label="live")
            bot.step([num(r["t_s"]) - period for r in ts],
                     [num(r["frames_served"]) / period for r in ts], where="post", color="C1",
                     lw=1.0, ls="--", label="simulated")
        bot.set_xlabel("time (s)")
        bot.set_xlim(0, horizon)
        if i == 0:
            top.set_ylabel("pool in use")
            bot.set_ylabel("frames answered in time / s")
            top.legend(loc="upper left", frameon=False)
            bot.legend(loc="upper right", frameon=False)
    fig.tight_layout()
    return fig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--metronome", default="build/metronome")
    ap.add_argument("--scenarios", default="scenarios/live")
    ap.add_argument("--out", default="results/live")
    args = ap.parse_args()
    try:
        cal = read_calibration(os.path.join(args.out, "calibration", "vllm_tiny_cpu.json"))
        cases = [read_case(args, d) for d in args.cases]
        fig = plot(cases)
        os.makedirs(args.out, exist_ok=True)
        for ext in ("png", "pdf"):
            write_atomically(os.path.join(args.out, f"live_vs_sim.{ext}"), lambda f: fig.savefig(
                f, format=ext, dpi=200, metadata={"CreationDate": None} if ext == "pdf" else None),
                "wb")
        write_report(args, cal, [c["comp"] for c in cases])
    except InputError as e:
        print(f"live_results: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"live_results: {e.filename or args.out}: cannot write ({e.strerror})",
              file=sys.stderr)
        return 2
    print(f"live_results: {args.out}/live_vs_sim.png, {args.out}/REPORT.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
