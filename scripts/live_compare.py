#!/usr/bin/env python3
"""A live run beside the simulation of the same scenario: the numbers the issue of a live engine asks
for, each measured on both sides by one definition.

  t_sat          predict's (whole blocks, and first-order continuous), simulate's first stall, and
                 the live engine's first refused allocation (vllm_live_hooks.py: allocate_slots()
                 returned None), on the run's clock
  frames         due (released before hang-up, at or before the horizon), served (output complete
                 by the horizon), silent (not complete within silence_after_s of release)
  latency        true latency (release to the frame's last output token) p50 / p99 before the
                 cliff: of the run as if it ended at H0, just before the last release at or before
                 cliff - silence_after_s (the horizon where there is no cliff), frames released by
                 H0 and censored when not answered by H0, on both sides (the simulation is run again with horizon_s = H0), so both
                 quantiles cover the same frames by the simulator's own accounting
  after          tokens produced per frame due, over frames released after the cliff
  preemptions    vLLM's count (steps.jsonl; Prometheus' vllm:num_preemptions_total agrees) and the
                 simulation's
  seeds          the simulation over 20 seeds (the delivery spread's random stream): past a cliff
                 a run is metastable, and the live run is one draw; where the seeds' frames served
                 spread over more than 4%, the check is that the live count is among them

Usage:
  live_compare.py DIR                  DIR/live (the driver's records) against a simulation of
                                       DIR/sim/scenario.json -> DIR/compare.json, a table on stdout
  live_compare.py --check DIR ...      also exit 1 when an agreement is outside its tolerance
                                       (the ctest of the committed live runs)
  --metronome PATH                     the metronome binary (default build/metronome of this
                                       checkout)
The latency checks are reported, not enforced ("miss" where outside tolerance): see docs/live.md.
Exit: 0 done; 1 a check failed; 2 bad input (damaged or missing records, a run whose calls ended
in errors, a metronome that failed: its message is passed on).
"""

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys

from atomic_file import write_atomically

# Tolerances (the targets). t_sat: relative to the live engine's first refused
# allocation; frames served: relative; p50 / p99: relative, only on a run that kept real time.
TOL = {"t_sat": 0.02, "t_sat_recompute": 0.10, "frames_served": 0.02, "p50": 0.15, "p99": 0.30}
SEEDS = 20


class InputError(Exception):
    pass


def read_json(path):
    """A JSON object from `path`, or InputError naming the file."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})")
    except ValueError as e:
        raise InputError(f"{path}: not JSON ({e})")
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a JSON object, got a {type(doc).__name__}")
    return doc


def read_csv(path, numbers, ints=()):
    """Rows of `path` with the columns `numbers` as finite floats (None where empty) and `ints` as
    integers; InputError naming the file, line and column of anything else."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in (*numbers, *ints) if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"{path}: expected columns {', '.join(missing)} in its header")
            rows = []
            for r in reader:
                row = dict(r)
                for c in (*numbers, *ints):
                    v = r[c]
                    try:
                        if v in ("", None) and c in numbers:
                            row[c] = None
                        elif c in ints:
                            row[c] = int(v)
                        else:
                            row[c] = float(v)
                            if not math.isfinite(row[c]):
                                raise ValueError
                    except (TypeError, ValueError):
                        raise InputError(f"{path}:{reader.line_num}: column '{c}': expected "
                                         f"{'an integer' if c in ints else 'a finite number'}, "
                                         f"got {v!r}")
                rows.append(row)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not text ({e})")
    return rows


def quantile(xs, q):
    """Nearest-rank quantile (the simulator's histogram rounds to its bins; see docs/live.md)."""
    if not xs:
        return None
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, math.ceil(q * len(xs)) - 1))
    return xs[k]


def read_frames(path):
    return read_csv(path, ("release_s", "submit_s", "first_token_s", "done_s"),
                    ("session", "frame", "tokens"))


def read_steps(path):
    """The engine's step log (absent in endpoint mode): the fields read here, checked."""
    out = []
    if not os.path.exists(path):
        return out
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                st = json.loads(line)
                if (not isinstance(st, dict) or not all(
                        isinstance(st.get(k), (int, float)) and not isinstance(st.get(k), bool)
                        and math.isfinite(st[k]) for k in ("t0", "t1"))
                        or not isinstance(st.get("q"), list)):
                    raise InputError(f"{path}:{n}: expected an object with numbers t0, t1 and a "
                                     "list q (a step of vllm_live_hooks.py)")
                out.append(st)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})")
    except ValueError as e:
        raise InputError(f"{path}:{n}: not JSON ({e})")
    return out


def before_cliff(cliff, scenario, releases):
    """H0: the end of the stretch whose frames had their whole silence window before the cliff,
    moved to just before the last release instant at or before it, so that frames released at H0
    itself (which no run cut there could have answered) are not counted."""
    if cliff is None:
        return scenario["horizon_s"]
    h0 = max(0.0, cliff - scenario["engine"]["silence_after_s"])
    last = max((r for r in releases if r <= h0), default=0.0)
    return max(0.0, round(last - 1e-6, 6))


def latency_parts(frames, steps, origin, scenario, until):
    """Where a frame's time went, from the step log's request ids (vllm_live_hooks.py): input
    (release to the start of the first step that computes it), engine (that step's start to the
    end of the step that samples its last token), output (that end to the driver's receipt).
    Medians over frames released by `until` and answered, in ms; None without ids."""
    if not steps or "id" not in steps[0] or origin is None:
        return None
    n_in = scenario["workload"]["input_tokens_per_frame"]
    n_out = scenario["workload"]["output_tokens_per_frame"]
    per_frame = scenario["engine"].get("session_model") != "resumable"
    by_req = {}
    for st in steps:
        for rid, q in zip(st["id"], st["q"]):
            by_req.setdefault(rid, []).append((st["t0"] - origin, st["t1"] - origin, q))
    parts = []
    for f in frames:
        if f["done_s"] is None or f["release_s"] > until:
            continue
        if per_frame:
            seq = by_req.get(f"s{f['session']}f{f['frame']}")
            if not seq:
                continue
            first, last = seq[0][0], seq[-1][1]
        else:
            # A resumable session's k-th frame: its k-th ingest step (n_in new tokens, plus the
            # prompt on frame 0), then n_out - 1 one-token steps.
            seq = by_req.get(f"s{f['session']}", [])
            ingest = [i for i, x in enumerate(seq) if x[2] >= n_in]
            if f["frame"] >= len(ingest) or ingest[f["frame"]] + n_out - 1 >= len(seq):
                continue
            i = ingest[f["frame"]]
            first, last = seq[i][0], seq[i + n_out - 1][1]
        parts.append((first - f["release_s"], last - first, f["done_s"] - last))
    if not parts:
        return None
    return {name: 1e3 * statistics.median(p[k] for p in parts)
            for k, name in enumerate(("input_ms", "engine_ms", "output_ms"))} | {
            "frames": len(parts)}


def book(metronome, scenario_path, records, extra=()):
    """The live run booked by the simulator's own ledger (metronome book): due, served, silent,
    latency and N* by the definitions simulate uses."""
    return metronome_json(metronome, ["book", "--scenario", scenario_path, "--records", records,
                                      "--json", *extra])["result"]


def run_metronome(metronome, argv):
    """metronome's stdout; where it fails, InputError with its own message."""
    try:
        out = subprocess.run([metronome, *argv], capture_output=True, text=True)
    except OSError as e:
        raise InputError(f"--metronome {metronome}: cannot run ({e.strerror})")
    if out.returncode != 0:
        raise InputError(f"metronome {' '.join(argv)} exited {out.returncode}:\n"
                         f"{out.stderr.strip()}")
    return out.stdout


def metronome_json(metronome, argv):
    out = run_metronome(metronome, argv)
    try:
        return json.loads(out)
    except ValueError as e:
        raise InputError(f"metronome {' '.join(argv)}: expected JSON on stdout ({e})")


def live_side(d, scenario, metronome, scenario_path):
    path = os.path.join(d, "run.json")
    run = read_json(path)
    if run.get("call_errors"):
        # vllm_live.py failed this run: its unanswered frames are errors, not the engine's load.
        raise InputError(f"{path}: field 'call_errors': {run['call_errors']} call(s) ended in an "
                         f"error: not a run to compare ({run.get('verdict')})")
    frames = read_frames(os.path.join(d, "frames.csv"))
    steps = read_steps(os.path.join(d, "steps.jsonl"))
    origin = run.get("clock_origin_monotonic_s")
    if origin is not None and (isinstance(origin, bool) or not isinstance(origin, (int, float))
                               or not math.isfinite(origin)):
        raise InputError(f"{path}: field 'clock_origin_monotonic_s': expected a finite number, "
                         f"got {origin!r}")
    horizon = scenario["horizon_s"]
    whole = book(metronome, scenario_path, d)
    first_fail = whole["first_stall_s"]
    cliff = first_fail if first_fail is not None else horizon
    h0 = before_cliff(first_fail, scenario, [f["release_s"] for f in frames])
    cut = book(metronome, scenario_path, d, ["--set", f"horizon_s={h0!r}"]) if h0 < horizon \
        else whole
    at = book(metronome, scenario_path, d, ["--set", f"horizon_s={cliff!r}"]) if cliff < horizon \
        else whole
    after_due = whole["frames_due"] - at["frames_due"]
    after_tok = whole["tokens_produced"] - at["tokens_produced"]
    parts = latency_parts(frames, steps, origin, scenario, h0)
    # What a monitor of the engine saw after the cliff (vLLM's own Prometheus metrics).
    gauges = ("kv_cache_usage_perc", "num_requests_running", "num_requests_waiting")
    after = [r for r in read_csv(os.path.join(d, "metrics.csv"), ("t_s", *gauges))
             if first_fail is not None and r["t_s"] is not None
             and r["t_s"] > first_fail + scenario["engine"]["silence_after_s"]]

    def med(key):
        v = [r[key] for r in after if r[key] is not None]
        return statistics.median(v) if v else None

    monitor = {"samples": len(after), "kv_cache_usage_perc_median": med("kv_cache_usage_perc"),
               "num_requests_running_median": med("num_requests_running"),
               "num_requests_waiting_median": med("num_requests_waiting")}
    step_ms = [1e3 * (s["t1"] - s["t0"]) for s in steps if origin is not None and s["t0"] >= origin
               and s["q"]]
    a = whole["admission"]
    return {
        "admission": {"n_star": a.get("n_star"), "cap_final": a.get("final_cap"),
                      "sessions_rejected": whole["sessions_rejected"],
                      "control_intervals": a.get("control_intervals"),
                      "flags": a.get("flags")} if a.get("capped") else None,
        "first_refused_allocation_s": first_fail,
        "first_preemption_s": whole["first_preempt_s"],
        "preemptions": whole["preemptions"],
        "frames_due": whole["frames_due"], "frames_served": whole["frames_served"],
        "frames_silent": whole["frames_silent"],
        "true_p50_ms_before_cliff": cut["true_p50_ms"],
        "true_p99_ms_before_cliff": cut["true_p99_ms"],
        "before_cliff_until_s": h0,
        "frames_before_cliff": cut["frames_due"],
        "latency_parts_median_ms_before_cliff": parts,
        "prometheus_after_cliff": monitor,
        "tokens_per_due_frame_after_cliff": (after_tok / after_due) if after_due > 0 else None,
        "engine_steps": whole["engine_steps"],
        "step_p50_ms": quantile(step_ms, 0.5), "step_p99_ms": quantile(step_ms, 0.99),
        "real_time": run.get("real_time"), "verdict": run.get("verdict"),
        "release_lateness_p99_ms": run.get("release_lateness_p99_ms"),
        "load_average_before": run.get("load_average_before"),
        "vllm_version": run.get("vllm_version"), "date": run.get("date"),
        "machine": run.get("machine"),
    }


def ms(x):
    return None if x is None or math.isinf(x) else 1e3 * x  # censored: None, as in summaries


def simulate(metronome, scenario_path, extra=()):
    return metronome_json(metronome, ["simulate", "--scenario", scenario_path, "--json", *extra])


def sim_side(metronome, scenario_path, whole, h0, cliff, horizon):
    r, p = whole["result"], whole["prediction"]
    cut = simulate(metronome, scenario_path, ["--set", f"horizon_s={h0!r}"]) if h0 < horizon \
        else whole
    # Tokens per due frame after the cliff: the whole run less the run cut at the cliff.
    at = simulate(metronome, scenario_path, ["--set", f"horizon_s={cliff!r}"]) if cliff < horizon \
        else whole
    after_due = r["frames_due"] - at["result"]["frames_due"]
    after_tok = r["tokens_produced"] - at["result"]["tokens_produced"]
    # The simulation's own spread: the same scenario over SEEDS seeds (only the delivery spread's
    # random stream differs). Past a cliff a run is metastable (which request is preempted first
    # decides the rest), and one live run is one draw.
    runs = [whole["result"]] + [simulate(metronome, scenario_path, ["--seed", str(k)])["result"]
                                for k in range(2, SEEDS + 1)]

    def spread(key):
        v = sorted(x[key] for x in runs if x[key] is not None)
        return {"min": v[0], "median": v[len(v) // 2], "max": v[-1], "seeds": len(v)} if v else None

    a = r.get("admission", {})
    return {
        "admission": {"n_star": a.get("n_star"), "cap_final": a.get("final_cap"),
                      "sessions_rejected": r.get("sessions_rejected"),
                      "flags": a.get("flags")} if a.get("capped") else None,
        "seeds": {k: spread(k) for k in ("frames_served", "preemptions", "first_stall_s")},
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
        # Paths relative to the working folder, so a committed comparison names no machine's.
        "cost_model": whole["cost_model"].replace(os.getcwd() + os.sep, ""),
    }


def rel(a, b):
    if a is None or b is None or b == 0:
        return None
    return (a - b) / b


def compare(d, metronome, scenario_path):
    whole = simulate(metronome, scenario_path)
    scenario = whole["scenario"]
    live = live_side(os.path.join(d, "live"), scenario, metronome, scenario_path)
    cliff = live["first_refused_allocation_s"]
    sim = sim_side(metronome, scenario_path, whole, live["before_cliff_until_s"],
                   cliff if cliff is not None else scenario["horizon_s"], scenario["horizon_s"])
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

    def check(name, err, tol, applies=True, enforced=True):
        if not applies:
            return
        ok = err is not None and abs(err) <= tol
        checks.append({"what": name, "error": err, "tolerance": tol, "ok": ok,
                       "enforced": enforced})

    both_stall = t_live is not None and sim["first_stall_s"] is not None
    no_stall = t_live is None and sim["first_stall_s"] is None
    if live["engine_steps"] > 0:
        checks.append({"what": "stall on both sides or neither", "ok": both_stall or no_stall,
                       "live": t_live, "simulated": sim["first_stall_s"]})
    # else: endpoint mode, whose server has no step log: its allocations are not seen, so t_sat is
    # not observed (the Prometheus samples still are).
    check("t_sat simulated vs live", errors["t_sat_simulated"], tol_t, both_stall)
    # The first-order model counts every caller that arrives; under admission control it is not a
    # prediction of this run.
    if t_live is not None and not recompute and not sim.get("admission"):
        check("t_sat predicted (whole blocks) vs live", errors["t_sat_predicted_blocks"], tol_t)
    fs = sim["seeds"]["frames_served"]
    metastable = (fs["max"] - fs["min"]) > 2 * TOL["frames_served"] * fs["median"]
    if live.get("admission") and sim.get("admission"):
        # Under admission control the frames due follow the callers admitted, which follow the
        # latency signal: N* is the comparison (reported), not frames served.
        check("N* (median live sessions over the last half)",
              rel(sim["admission"]["n_star"], live["admission"]["n_star"]), 0.15, True, False)
    elif metastable:
        # The seeds split into outcomes: the live run must be one of them (within 2% of the range).
        lo, hi = fs["min"] * (1 - TOL["frames_served"]), fs["max"] * (1 + TOL["frames_served"])
        checks.append({"what": f"frames served inside the {fs['seeds']} simulated seeds' range "
                       f"({fs['min']}-{fs['max']}, metastable)",
                       "ok": lo <= live["frames_served"] <= hi})
    else:
        check("frames served", errors["frames_served"], TOL["frames_served"])
    rt = bool(live["real_time"])
    # Reported, not enforced: the simulation leaves out the serving process's own per-request path
    # (docs/live.md, "Where they disagree"), and measures latency 20-30% short of the live engine's.
    check("true p50 before the cliff", errors["true_p50_before_cliff"], TOL["p50"], rt, False)
    check("true p99 before the cliff", errors["true_p99_before_cliff"], TOL["p99"], rt, False)
    return {"scenario": scenario["name"], "case": os.path.basename(os.path.normpath(d)),
            "live": live, "simulated": sim, "relative_error": errors, "checks": checks,
            "real_time": rt}


def fmt(x, unit="", digits=4):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}g}{unit}"
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
        (f"frames served, {sm['seeds']['frames_served']['seeds']} seeds min-max", None,
         f"{sm['seeds']['frames_served']['min']}-{sm['seeds']['frames_served']['max']}", None),
        ("preemptions, seeds min-max", None,
         f"{sm['seeds']['preemptions']['min']}-{sm['seeds']['preemptions']['max']}", None),
        ("engine steps", lv["engine_steps"], sm["engine_steps"], None),
    ]
    if lv.get("admission") and sm.get("admission"):
        la, sa = lv["admission"], sm["admission"]
        rows += [("N* (median live, last half)", la["n_star"], sa["n_star"],
                  rel(sa["n_star"], la["n_star"])),
                 ("callers turned away", la["sessions_rejected"], sa["sessions_rejected"], None)]
    lines = [f"{c['case']}: {c['scenario']} ({lv['verdict']})",
             f"  {'':40s} {'live':>10s} {'simulated':>10s} {'error':>8s}"]
    for name, a, b, err in rows:
        lines.append(f"  {name:40s} {fmt(a):>10s} {fmt(b):>10s} "
                     f"{(f'{100 * err:+.1f}%' if err is not None else ''):>8s}")
    for ch in c["checks"]:
        mark = "ok  " if ch["ok"] else ("FAIL" if ch.get("enforced", True) else "miss")
        lines.append(f"  check {mark} {ch['what']}"
                     + (f" ({100 * ch['error']:+.1f}% vs +-{100 * ch['tolerance']:.0f}%)"
                        if ch.get("error") is not None else ""))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--metronome", default=os.path.normpath(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "metronome")))
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
        for sub in ("live/frames.csv", "live/metrics.csv", "live/run.json"):
            if not os.path.isfile(os.path.join(d, sub)):
                print(f"live_compare: {d}: {sub} missing (expected a scripts/vllm_live.sh --out "
                      "folder)", file=sys.stderr)
                return 2
        try:
            c = compare(d, args.metronome, scen)
            if args.write or (args.write is None and not args.check):
                path = os.path.join(d, "compare.json")
                try:
                    write_atomically(path, lambda f: f.write(
                        json.dumps(c, indent=2, sort_keys=True) + "\n"))
                except OSError as e:
                    raise InputError(f"{path}: cannot write ({e.strerror})")
        except InputError as e:
            print(f"live_compare: {e}", file=sys.stderr)
            return 2
        print(table(c))
        failed += sum(1 for ch in c["checks"] if not ch["ok"] and ch.get("enforced", True))
    if args.check and failed:
        print(f"live_compare: {failed} check(s) outside tolerance", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
