#!/usr/bin/python3
"""Runs the paper's experiments (scenarios/experiments/*.json) through the metronome CLI.

Every number a figure or the report shows comes from a file this script asks metronome to write
under OUT/data/figN/ (summary.json, timeseries.csv, runs.csv, aggregate.json, capacity JSON,
prediction JSON). This script composes scenarios from the experiment files and the shipped model and
GPU files (by name), writes each composed scenario next to its outputs, and runs metronome; it
computes nothing itself.

    experiments.py --metronome build/metronome --out results [--quick] [-j 2]
"""
import argparse
import concurrent.futures
import copy
import json
import math
import os
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXP_DIR = os.path.join(ROOT, "scenarios", "experiments")
# Cost model of every composed scenario that names none: a measured calibration where its GPU has
# one (Vidur's public profiles, imported by scripts/import_vidur.py; the simulator scales it to the
# scenario's layer shape), the corrected roofline of the GPU file elsewhere. Dense models only: a
# dense profile says nothing about MoE experts.
MEASURED_CALIBRATION = {
    "h100": os.path.join(ROOT, "results", "calibration", "llama-2-7b_h100_vidur.json"),
    "a100": os.path.join(ROOT, "results", "calibration", "llama-3-8b_a100_vidur.json"),
}
VIDUR_PROFILES = [("meta-llama/Llama-2-7b-hf", "h100"), ("meta-llama/Meta-Llama-3-8B", "a100")]


def load(path):
    with open(path) as f:
        return json.load(f)


def merge(base, over):
    """Deep merge: objects merge key by key, anything else in `over` replaces."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def spec(name, quick):
    """An experiment file, with its "quick" section merged over it in --quick mode."""
    s = load(os.path.join(EXP_DIR, name))
    q = s.pop("quick", {})
    s = merge(s, q) if quick else s
    if "scenario" in s and isinstance(s["scenario"], dict):
        # Each composed scenario carries its figure's reasons, so its resolved copy beside the
        # outputs says why it was run.
        s["scenario"].setdefault("comment", f"{name}: {s['comment']}")
    return s


class Runner:
    def __init__(self, metronome, out, jobs):
        self.metronome = metronome
        self.out = out
        self.jobs = jobs
        self.log = []  # (seconds, command) per metronome call
        self.figure = ""  # "fig4": the prefix of what this script says on stderr
        self.planned = 0  # metronome calls the figure will make (a dry run counts them)
        self.started = 0
        self.dry = False
        self.lock = threading.Lock()

    def data(self, *parts):
        p = os.path.join(self.out, "data", *parts)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def dir(self, *parts):
        p = os.path.join(self.out, "data", *parts)
        os.makedirs(p, exist_ok=True)
        return p

    def write_scenario(self, path, scenario):
        if "cost_model" not in scenario:
            scenario = dict(scenario, cost_model=default_cost_model(scenario, path))
        with open(path, "w") as f:
            json.dump(scenario, f, indent=2)
            f.write("\n")
        return path

    def here(self, a):
        # Paths under the output folder are passed relative to it (metronome runs there), so the
        # outputs it records (sweep.json, resolved scenarios) name no path of this machine.
        a = str(a)
        if os.path.isabs(a) and a.startswith(self.out + os.sep):
            return os.path.relpath(a, self.out)
        return a

    def say(self, line):
        with self.lock:
            sys.stderr.write(f"[{self.figure}] {line}\n")
            sys.stderr.flush()

    def call(self, args, stdout_path=None):
        cmd = [os.path.abspath(self.metronome)] + [self.here(a) for a in args]
        if self.dry:
            self.planned += 1
            return ""
        with self.lock:
            self.started += 1
            n = self.started
        # What runs, by its output (or its scenario): "[fig4] running sweep 3/12: data/fig4/..."
        what = next((cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i] == "--out"), None)
        what = what or (os.path.relpath(stdout_path, self.out) if stdout_path else cmd[2])
        self.say(f"running {cmd[1]} {n}/{self.planned}: {what}")
        t0 = time.monotonic()
        # metronome's stderr is a pipe here, so its progress comes as a plain line every few
        # seconds; each is passed on with the figure's prefix as it arrives.
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=self.out)
        err = []

        def relay():
            for line in p.stderr:
                err.append(line)
                self.say("  " + line.rstrip("\n"))

        t = threading.Thread(target=relay)
        t.start()
        out = p.stdout.read()
        rc = p.wait()
        t.join()
        dt = time.monotonic() - t0
        shown = [os.path.relpath(cmd[0], ROOT) if cmd[0].startswith(ROOT + os.sep) else cmd[0]]
        self.log.append((dt, " ".join(shown + cmd[1:])))
        if rc != 0:
            sys.stderr.write(out)
            raise SystemExit(f"experiments: metronome failed ({rc}): {' '.join(cmd)}")
        if stdout_path:
            with open(stdout_path, "w") as f:
                f.write(out)
        return out

    def parallel(self, calls):
        """Independent single-run calls (simulate, predict, capacity), `jobs` at a time."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.jobs) as ex:
            for f in [ex.submit(self.call, a, p) for a, p in calls]:
                f.result()

    def sweep(self, scenario_path, out_dir, grid, seeds, sets=()):
        args = ["sweep", "--scenario", scenario_path, "--seeds", seeds, "-j", self.jobs,
                "--out", out_dir]
        for s in sets:
            args += ["--set", s]
        for key, values in grid:
            args += ["--grid", key + "=" + ",".join(json.dumps(v, separators=(",", ":"))
                                                    for v in values)]
        self.call(args)
        self.cost_model_probe(scenario_path, os.path.join(out_dir, "cost_model.json"), sets)

    def cost_model_probe(self, scenario_path, out_path, sets=()):
        """sweep and capacity outputs do not name the cost model; a 1 s simulate of the same
        scenario does (its "cost_model" label), so each figure's caption quotes the simulator."""
        args = ["simulate", "--scenario", scenario_path, "--json", "--set", "horizon_s=1"]
        for s in sets:
            args += ["--set", s]
        self.call(args, out_path)


COST_MODEL = {"choice": "auto"}  # --cost-model: auto (as above) or roofline (the raw datasheet)


def default_cost_model(scenario, path):
    if COST_MODEL["choice"] == "roofline":
        return {"type": "roofline"}
    gpu, model = scenario.get("gpu"), scenario.get("model")
    moe = isinstance(model, str) and load(os.path.join(ROOT, "scenarios", "models",
                                                       model + ".json")).get("experts", 0) > 0
    if isinstance(gpu, str) and gpu in MEASURED_CALIBRATION and not moe:
        return {"type": "calibrated",
                "file": os.path.relpath(MEASURED_CALIBRATION[gpu], os.path.dirname(path))}
    return {"type": "corrected_roofline"}


def cost_models(r, w, quick):
    """How much the cost model moves capacity: the Vidur imports (the corrected roofline's error
    before and after, per GPU) and Moshi's windowed admission scenario under each cost model."""
    for model, gpu in VIDUR_PROFILES:
        r.call(["calibrate", "import-vidur", os.path.relpath(os.path.join(ROOT, "results", "vidur"),
                                                            r.out), "--model", model,
                "--gpu", gpu, "--out", r.data("costmodel", f"{gpu}_vidur.calibration.json"),
                "--correction-out", r.data("costmodel", f"{gpu}_vidur.correction.json")],
               r.data("costmodel", f"{gpu}_vidur.txt"))
    src = load(os.path.join(ROOT, "scenarios", "admission", "moshi_h200_aimd_windowed.json"))
    calls = []
    for gpu, cost in (("h200", "roofline"), ("h200", "corrected_roofline"), ("h100", "roofline"),
                      ("h100", "corrected_roofline"), ("h100", "calibrated")):
        base = r.data("costmodel", f"moshi_{gpu}_{cost}.scenario.json")
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


def model_scenario(base, workloads, key, deadline_fraction=None):
    """base + the model (by name) + its workload from workloads.json."""
    m = workloads["models"][key]
    s = merge(base, {"model": m["model"], "workload": m["workload"]})
    if deadline_fraction is not None:
        s["workload"]["deadline_s"] = deadline_fraction * m["workload"]["frame_period_s"]
    return s


def windowed(scenario, workloads, key):
    return merge(scenario, {"kv_policy": dict(type="windowed", **workloads["models"][key]["window"])})


def aligned_period(frame_s, at_least, interval_s=None):
    """The shortest time-series sample period of at least `at_least` seconds that spans whole
    frames (and whole arrival intervals): each sample then holds the same number of due frames
    per session, so per-sample ratios do not zig-zag (12 then 13 Moshi frames per 1 s)."""
    k = max(1, math.ceil(at_least / frame_s - 1e-9))
    while True:
        p = k * frame_s
        if not interval_s or abs(p / interval_s - round(p / interval_s)) < 1e-6:
            return round(p, 9)
        k += 1


def fig1(r, w, quick):
    sp = spec("fig1_cliff_ramp.json", quick)
    for key, sessions in sp["sessions"].items():
        s = windowed(model_scenario(sp["scenario"], w, key), w, key)
        path = r.write_scenario(r.data("fig1", key, "scenario.in.json"), s)
        r.sweep(path, os.path.join(os.path.dirname(path), "sweep"),
                [("workload.arrival.sessions", sessions), ("kv_policy.type", sp["policies"])], "1")


def fig2(r, w, quick):
    sp = spec("fig2_pool_fill.json", quick)
    calls = []
    for key, intervals in sp["intervals_s"].items():
        for d in intervals:
            s = model_scenario(sp["scenario"], w, key)
            s["workload"]["arrival"]["interval_s"] = d
            s["workload"]["arrival"]["sessions"] = int(math.ceil(s["horizon_s"] / d)) + 1
            run_dir = r.dir("fig2", key, f"interval_{d:g}s")
            path = r.write_scenario(os.path.join(run_dir, "scenario.in.json"), s)
            calls.append((["simulate", "--scenario", path, "--out", run_dir], None))
    r.parallel(calls)


def fig3(r, w, quick):
    sp = spec("fig3_silent_failure.json", quick)
    s = model_scenario(sp["scenario"], w, sp["model_key"])
    arr = s["workload"]["arrival"]
    s["output"] = dict(s.get("output", {}), sample_period_s=aligned_period(
        s["workload"]["frame_period_s"], s.get("output", {}).get("sample_period_s", 1.0),
        arr.get("interval_s") if arr.get("type") == "fixed_interval" else None))
    run_dir = r.dir("fig3", "run")
    path = r.write_scenario(os.path.join(run_dir, "scenario.in.json"), s)
    r.call(["simulate", "--scenario", path, "--out", run_dir])


def fig4(r, w, quick):
    sp = spec("fig4_metastability.json", quick)
    for key, nb in sp["num_blocks"].items():
        s = windowed(model_scenario(sp["scenario"], w, key), w, key)
        if nb is not None:
            s["engine"]["num_blocks"] = nb
        path = r.write_scenario(r.data("fig4", "runs20", key, "scenario.in.json"), s)
        r.sweep(path, os.path.join(os.path.dirname(path), "sweep"),
                [("kv_policy.type", sp["policies"])], sp["seeds"])
    key = sp["load_model"]
    s = windowed(model_scenario(sp["scenario"], w, key), w, key)
    if sp["num_blocks"][key] is not None:
        s["engine"]["num_blocks"] = sp["num_blocks"][key]
    path = r.write_scenario(r.data("fig4", "load", key, "scenario.in.json"), s)
    for policy in sp["policies"]:
        r.sweep(path, r.dir("fig4", "load", key, policy),
                [("workload.arrival.rate_per_s", sp["load_rates_per_s"])],
                str(sp["load_seeds"][policy]), sets=[f"kv_policy.type={policy}"])


def fig5(r, w, quick):
    sp = spec("fig5_admission.json", quick)
    calls = []
    for name, rel in sp["variants"].items():
        run_dir = r.dir("fig5", name)
        path = r.write_scenario(os.path.join(run_dir, "scenario.in.json"),
                                load(os.path.normpath(os.path.join(EXP_DIR, rel))))
        calls.append((["simulate", "--scenario", path, "--out", run_dir], None))
    r.parallel(calls)


def fig6(r, w, quick):
    sp = spec("fig6_prediction.json", quick)
    calls = []
    for key in w["models"]:
        for d in sp["intervals_s"]:
            s = model_scenario(sp["scenario"], w, key)
            s["workload"]["arrival"]["interval_s"] = d
            s["workload"]["arrival"]["sessions"] = int(math.ceil(s["horizon_s"] / d)) + 1
            base = r.data("fig6", key, f"interval_{d:g}s.scenario.json")
            path = r.write_scenario(base, s)
            calls.append((["simulate", "--scenario", path, "--json"],
                          base.replace(".scenario.json", ".summary.json")))
    r.parallel(calls)


def fig7(r, w, quick):
    sp = spec("fig7_capacity.json", quick)
    calls = []
    for key in w["models"]:
        s = windowed(model_scenario(sp["scenario"], w, key, w["budget_fraction"]), w, key)
        base = r.data("fig7", "models", f"{key}.scenario.json")
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
    path = r.write_scenario(r.data("fig7", "window_sink", "scenario.in.json"), src)
    for wt in ws["window_tokens"]:
        for st in ws["sink_tokens"]:
            calls.append((["capacity", "--scenario", path, "--json",
                           "--set", f"kv_policy.window_tokens={wt}",
                           "--set", f"kv_policy.sink_tokens={st}"],
                          r.data("fig7", "window_sink", f"W{wt}_S{st}.capacity.json")))
    r.parallel(calls)
    r.sweep(path, r.dir("fig7", "window_sink", "sweep"),
            [("kv_policy.window_tokens", ws["window_tokens"]),
             ("kv_policy.sink_tokens", ws["sink_tokens"])], ws["seeds"])
    # The same at S = 16 with each caller's clock started on arrival (random phases): the band
    # the spread joins close.
    r.sweep(path, r.dir("fig7", "window_sink", "arrival_sweep"),
            [("kv_policy.window_tokens", ws["window_tokens"])], ws["seeds"],
            sets=["kv_policy.sink_tokens=16", "admission.join=arrival"])
    cost_models(r, w, quick)


def fig9(r, w, quick):
    sp = spec("fig9_exhaustion.json", quick)
    calls = []
    for key in sp["models"]:
        for mode, m in sp["modes"].items():
            s = merge(model_scenario(sp["scenario"], w, key), {"engine": m["engine"]})
            # Samples span whole frames (Omni chunks are 2 s; Moshi's 80 ms frames, 13 to a
            # sample), so a sample without a due frame does not read as one where nothing was
            # answered, and each holds the same number of frames.
            T = s["workload"]["frame_period_s"]
            s["output"] = {"sample_period_s": aligned_period(T, max(1.0, 2 * T))}
            run_dir = r.dir("fig9", key, mode)
            path = r.write_scenario(os.path.join(run_dir, "scenario.in.json"), s)
            calls.append((["simulate", "--scenario", path, "--out", run_dir], None))
    r.parallel(calls)



def fig8(r, w, quick):
    """The quality side of the window: `metronome quality` on a real model and text, fetched by
    scripts/fetch_quality_assets.sh into .cache/quality (make_figures.sh runs it first)."""
    sp = spec("fig8_quality.json", quick)
    # Relative to the output folder (where metronome runs), so the JSON names no path of this machine.
    assets = os.path.relpath(os.path.join(ROOT, ".cache", "quality"), r.out)
    args = ["quality", "--model", os.path.join(assets, sp["model"]),
            "--text", os.path.join(assets, sp["text"]), "--tokens", sp["tokens"],
            "--window", sp["window"], "--sinks", sp["sinks"], "--positions", sp["positions"],
            "--generate", sp["generate_tokens"], "--prompt-tokens", sp["prompt_tokens"],
            "--temperature", sp["temperature"], "--seed", sp["seed"],
            "--grid-windows"] + sp["grid_windows"] + ["--grid-sinks"] + sp["grid_sinks"] + [
            "-j", r.jobs, "--json"]
    r.call(args, r.data("fig8", "quality.json"))
    recommendations(r, w, sp)


def recommendations(r, w, sp):
    """`metronome recommend` per shipped model, with this figure's perplexity ratios as the quality
    floor: the admission scenario (Poisson demand above capacity, AIMD, the memory guard, spread
    joins) with the model's workload and compute budget, over the quality grid's W x S."""
    rec = sp["recommend"]
    src = load(os.path.join(ROOT, "scenarios", "admission", "moshi_h200_aimd_windowed.json"))
    src["workload"]["arrival"]["max_sessions"] = 0  # demand until the horizon, as figure 7
    quality = os.path.relpath(r.data("fig8", "quality.json"), r.out)
    calls = []
    for key in w["models"]:
        s = merge(model_scenario(dict(src, name=f"recommend-{key}"), w, key, w["budget_fraction"]),
                  rec["overrides"][key])
        # Demand above every cap within the first half of the run (caps run to a few thousand).
        s["workload"]["arrival"]["rate_per_s"] = 40
        base = r.data("fig8", "recommend", f"{key}.scenario.json")
        path = r.write_scenario(base, s)
        calls.append((["recommend", "--scenario", path, "--quality", quality,
                       "--max-ppl-ratio", rec["max_ppl_ratio"], "--seeds", rec["seeds"],
                       "--windows"] + sp["grid_windows"] + ["--sinks"] + sp["grid_sinks"] +
                      ["--json"], base.replace(".scenario.json", ".recommend.json")))
    r.parallel(calls)


FIGURES = [fig1, fig2, fig3, fig4, fig5, fig6, fig7, fig8, fig9]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--metronome", default=os.path.join(ROOT, "build", "metronome"))
    ap.add_argument("--out", default=os.path.join(ROOT, "results"))
    ap.add_argument("--quick", action="store_true", help="fewer points and seeds (CI)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default="", help="comma-separated figure numbers, e.g. 1,4")
    # The compute budgets (workloads.json budget_fraction, scenarios/admission/ deadline_s) are
    # chosen on the corrected roofline; REPORT's cost-model rows show how far the raw one moves
    # the answer.
    ap.add_argument("--cost-model", choices=["auto", "roofline"], default="auto",
                    help="auto (default): measured calibration where the GPU has one, else the "
                         "corrected roofline; roofline: the raw datasheet roofline everywhere")
    a = ap.parse_args()
    COST_MODEL["choice"] = a.cost_model
    w = load(os.path.join(EXP_DIR, "workloads.json"))
    r = Runner(os.path.abspath(a.metronome), os.path.abspath(a.out), a.jobs)
    only = {int(x) for x in a.only.split(",") if x}
    timing = {}
    for f in FIGURES:
        i = int(f.__name__[3:])  # figures are named by number; numbers may skip
        if only and i not in only:
            continue
        if f is fig8 and os.environ.get("METRONOME_FIGURES_NO_QUALITY"):
            continue  # sanitized test builds: the real model would take minutes
        # A dry pass counts the figure's metronome calls (the figure functions only compose
        # scenarios and call), so each call can say "3/12".
        r.figure, r.dry, r.planned, r.started = f"fig{i}", True, 0, 0
        f(r, w, a.quick)
        r.dry = False
        t0 = time.monotonic()
        f(r, w, a.quick)
        timing[f"fig{i}"] = round(time.monotonic() - t0, 2)
        r.say(f"figure {i} data in {timing[f'fig{i}']:.1f} s ({r.planned} metronome calls)")
    with open(os.path.join(a.out, "data", "runs_log.json"), "w") as f:
        json.dump({"quick": a.quick, "jobs": a.jobs, "seconds_per_figure": timing,
                   "metronome_calls": [{"seconds": round(t, 3), "command": c} for t, c in r.log]},
                  f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
