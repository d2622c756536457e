#!/usr/bin/env python3
"""A live run beside the simulation of the same scenario: the numbers the issue of a live engine asks
for, each measured on both sides by one definition.

  t_sat          predict's (whole blocks, and first-order continuous), simulate's first stall, and
                 the live engine's first refused allocation (vllm_live_hooks.py: allocate_slots()
                 returned None), on the run's clock
  frames         due (released before hang-up, at or before the horizon), served (output complete
                 by the horizon), silent (not complete within silence_after_s of release)
  latency        true latency (release to the frame's last output token) p50 / p99 of the frames
                 released before the cliff (the live stall, else the horizon); the simulation's
                 from a run cut at the same instant, so both quantiles cover the same frames
  after          tokens produced per frame due, over frames released after the cliff
  preemptions    vLLM's count (steps.jsonl; Prometheus' vllm:num_preemptions_total agrees) and the
                 simulation's

Usage:
  live_compare.py DIR                  DIR/live (the driver's records) against a simulation of
                                       DIR/sim/scenario.json -> DIR/compare.json, a table on stdout
  live_compare.py --check DIR ...      also exit 1 when an agreement is outside its tolerance
                                       (the ctest of the committed live runs)
  --metronome PATH                     the metronome binary (default build/metronome)
Exit: 0 done; 1 a check failed; 2 bad input.
"""

import argparse
import csv
import json
import math
import os
import subprocess
import sys

# Tolerances (the targets). t_sat: relative to the live engine's first refused
# allocation; frames served: relative; p50 / p99: relative, only on a run that kept real time.
TOL = {"t_sat": 0.02, "t_sat_recompute": 0.10, "frames_served": 0.02, "p50": 0.15, "p99": 0.30}


def quantile(xs, q):
    """Nearest-rank quantile (the simulator's histogram rounds to its bins; see docs/live.md)."""
    if not xs:
        return None
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, math.ceil(q * len(xs)) - 1))
    return xs[k]


def read_frames(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.append({k: (float(v) if v not in ("",) and k not in ("session", "frame", "tokens")
                             else (int(v) if v != "" else None)) for k, v in r.items()})
    return rows


def read_steps(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            out = [json.loads(line) for line in f if line.strip()]
    return out


def live_side(d, scenario, cliff_hint=None):
    run = json.load(open(os.path.join(d, "run.json")))
    frames = read_frames(os.path.join(d, "frames.csv"))
    steps = read_steps(os.path.join(d, "steps.jsonl"))
    origin = run.get("clock_origin_monotonic_s")
    horizon = scenario["horizon_s"]
    silence = scenario["engine"]["silence_after_s"]
    fails = [s for s in steps if s["fail"] > 0]
    first_fail = (fails[0]["t0"] - origin) if fails and origin is not None else None
    if first_fail is not None and first_fail < 0:
        first_fail = None  # the warm-up's, before the clock started
    preempt = [s for s in steps if s["pre"] > 0 and origin is not None and s["t0"] >= origin]
    cliff = first_fail if first_fail is not None else horizon
    due = [f for f in frames if f["release_s"] <= horizon]
    served = [f for f in due if f["done_s"] is not None and f["done_s"] <= horizon]
    on_time = [f for f in served if f["done_s"] - f["release_s"] <= silence]
    before = [f["done_s"] - f["release_s"] for f in served if f["release_s"] + silence <= cliff]
    after_due = [f for f in due if f["release_s"] > cliff]
    after_tokens = sum(f["tokens"] or 0 for f in after_due)
    step_ms = [1e3 * (s["t1"] - s["t0"]) for s in steps if origin is not None and s["t0"] >= origin
               and s["q"]]
    return {
        "first_refused_allocation_s": first_fail,
        "first_preemption_s": (preempt[0]["t0"] - origin) if preempt else None,
        "preemptions": sum(s["pre"] for s in steps if origin is not None and s["t0"] >= origin),
        "frames_due": len(due), "frames_served": len(served),
        "frames_silent": len(due) - len(on_time),
        "true_p50_ms_before_cliff": ms(quantile(before, 0.5)),
        "true_p99_ms_before_cliff": ms(quantile(before, 0.99)),
        "frames_before_cliff": len(before),
        "tokens_per_due_frame_after_cliff": (after_tokens / len(after_due)) if after_due else None,
        "engine_steps": len(step_ms),
        "step_p50_ms": quantile(step_ms, 0.5), "step_p99_ms": quantile(step_ms, 0.99),
        "real_time": run.get("real_time"), "verdict": run.get("verdict"),
        "release_lateness_p99_ms": run.get("release_lateness_p99_ms"),
        "load_average_before": run.get("load_average_before"),
        "vllm_version": run.get("vllm_version"), "date": run.get("date"),
        "machine": run.get("machine"),
    }


def ms(x):
    return None if x is None else 1e3 * x


def simulate(metronome, scenario_path, extra=()):
    out = subprocess.run([metronome, "simulate", "--scenario", scenario_path, "--json", *extra],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{metronome} simulate {scenario_path}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def sim_side(metronome, scenario_path, whole, cliff, horizon):
    r, p = whole["result"], whole["prediction"]
    cut = simulate(metronome, scenario_path, ["--set", f"horizon_s={cliff}"]) if cliff < horizon \
        else whole
    # Tokens per due frame after the cliff: the whole run less the run cut at the cliff.
    after_due = r["frames_due"] - cut["result"]["frames_due"]
    after_tok = r["tokens_produced"] - cut["result"]["tokens_produced"]
    return {
        "t_sat_predicted_blocks_s": p.get("t_sat_blocks_s"),
        "t_sat_predicted_continuous_s": p.get("t_sat_continuous_s"),
        "first_stall_s": r.get("first_stall_s"),
        "first_preempt_s": r.get("first_preempt_s"),
        "preemptions": r["preemptions"],
        "frames_due": r["frames_due"], "frames_served": r["frames_served"],
        "frames_silent": r["frames_silent"],
        "true_p50_ms_before_cliff": cut["result"]["true_p50_ms"],
        "true_p99_ms_before_cliff": cut["result"]["true_p99_ms"],
        "tokens_per_due_frame_after_cliff": (after_tok / after_due) if after_due > 0 else None,
        "engine_steps": r["engine_steps"],
        "cost_model": whole["cost_model"],
    }


def rel(a, b):
    if a is None or b is None or b == 0:
        return None
    return (a - b) / b


def compare(d, metronome, scenario_path):
    whole = simulate(metronome, scenario_path)
    scenario = whole["scenario"]
    live = live_side(os.path.join(d, "live"), scenario)
    cliff = live["first_refused_allocation_s"] or scenario["horizon_s"]
    sim = sim_side(metronome, scenario_path, whole, cliff, scenario["horizon_s"])
    t_live = live["first_refused_allocation_s"]
    recompute = live["preemptions"] > 0 or scenario["engine"].get("session_model") != "resumable"
    errors = {
        "t_sat_predicted_blocks": rel(sim["t_sat_predicted_blocks_s"], t_live),
        "t_sat_predicted_continuous": rel(sim["t_sat_predicted_continuous_s"], t_live),
        "t_sat_simulated": rel(sim["first_stall_s"], t_live),
        "frames_served": rel(sim["frames_served"], live["frames_served"]),
        "true_p50_before_cliff": rel(sim["true_p50_ms_before_cliff"],
                                     live["true_p50_ms_before_cliff"]),
        "true_p99_before_cliff": rel(sim["true_p99_ms_before_cliff"],
                                     live["true_p99_ms_before_cliff"]),
    }
    tol_t = TOL["t_sat_recompute"] if recompute else TOL["t_sat"]
    checks = []

    def check(name, err, tol, applies=True):
        if not applies:
            return
        ok = err is not None and abs(err) <= tol
        checks.append({"what": name, "error": err, "tolerance": tol, "ok": ok})

    both_stall = t_live is not None and sim["first_stall_s"] is not None
    no_stall = t_live is None and sim["first_stall_s"] is None
    checks.append({"what": "stall on both sides or neither", "ok": both_stall or no_stall,
                   "live": t_live, "simulated": sim["first_stall_s"]})
    check("t_sat simulated vs live", errors["t_sat_simulated"], tol_t, both_stall)
    if t_live is not None and not recompute:
        check("t_sat predicted (whole blocks) vs live", errors["t_sat_predicted_blocks"], tol_t)
    check("frames served", errors["frames_served"], TOL["frames_served"])
    rt = bool(live["real_time"])
    check("true p50 before the cliff", errors["true_p50_before_cliff"], TOL["p50"], rt)
    check("true p99 before the cliff", errors["true_p99_before_cliff"], TOL["p99"], rt)
    return {"scenario": scenario["name"], "case": os.path.basename(os.path.normpath(d)),
            "live": live, "simulated": sim, "relative_error": errors, "checks": checks,
            "real_time": rt}


def fmt(x, unit=""):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.4g}{unit}"
    return f"{x}{unit}"


def table(c):
    lv, sm, e = c["live"], c["simulated"], c["relative_error"]
    rows = [
        ("t_sat / first refused allocation (s)", lv["first_refused_allocation_s"],
         sm["first_stall_s"], e["t_sat_simulated"]),
        ("t_sat predicted, whole blocks (s)", None, sm["t_sat_predicted_blocks_s"],
         e["t_sat_predicted_blocks"]),
        ("frames due", lv["frames_due"], sm["frames_due"], None),
        ("frames served", lv["frames_served"], sm["frames_served"], e["frames_served"]),
        ("frames silent", lv["frames_silent"], sm["frames_silent"], None),
        ("true p50 before cliff (ms)", lv["true_p50_ms_before_cliff"],
         sm["true_p50_ms_before_cliff"], e["true_p50_before_cliff"]),
        ("true p99 before cliff (ms)", lv["true_p99_ms_before_cliff"],
         sm["true_p99_ms_before_cliff"], e["true_p99_before_cliff"]),
        ("tokens per due frame after cliff", lv["tokens_per_due_frame_after_cliff"],
         sm["tokens_per_due_frame_after_cliff"], None),
        ("preemptions", lv["preemptions"], sm["preemptions"], None),
        ("engine steps", lv["engine_steps"], sm["engine_steps"], None),
    ]
    lines = [f"{c['case']}: {c['scenario']} ({lv['verdict']})",
             f"  {'':40s} {'live':>10s} {'simulated':>10s} {'error':>8s}"]
    for name, a, b, err in rows:
        lines.append(f"  {name:40s} {fmt(a):>10s} {fmt(b):>10s} "
                     f"{(f'{100 * err:+.1f}%' if err is not None else ''):>8s}")
    for ch in c["checks"]:
        lines.append(f"  check {'ok  ' if ch['ok'] else 'FAIL'} {ch['what']}"
                     + (f" ({100 * ch['error']:+.1f}% vs +-{100 * ch['tolerance']:.0f}%)"
                        if ch.get("error") is not None else ""))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--metronome", default="build/metronome")
    ap.add_argument("--scenarios", help="simulate DIR's case from FOLDER/<case>.json instead of "
                    "DIR/sim/scenario.json (the committed runs: scenarios/live)")
    ap.add_argument("--write", action="store_true", default=None,
                    help="write DIR/compare.json (default unless --check)")
    args = ap.parse_args()
    failed = 0
    for d in args.dirs:
        case = os.path.basename(os.path.normpath(d))
        scen = (os.path.join(args.scenarios, case + ".json") if args.scenarios
                else os.path.join(d, "sim", "scenario.json"))
        if not os.path.isfile(scen):
            print(f"live_compare: {scen}: missing (the scenario of {d})", file=sys.stderr)
            return 2
        for sub in ("live/frames.csv", "live/run.json"):
            if not os.path.isfile(os.path.join(d, sub)):
                print(f"live_compare: {d}: {sub} missing (expected a scripts/vllm_live.sh --out "
                      "folder)", file=sys.stderr)
                return 2
        c = compare(d, args.metronome, scen)
        if args.write or (args.write is None and not args.check):
            with open(os.path.join(d, "compare.json"), "w") as f:
                json.dump(c, f, indent=2, sort_keys=True)
                f.write("\n")
        print(table(c))
        failed += sum(1 for ch in c["checks"] if not ch["ok"])
    if args.check and failed:
        print(f"live_compare: {failed} check(s) outside tolerance", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
