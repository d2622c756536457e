"""What every figure's experiment shares: the experiment files (spec), scenario composition, and
the Runner that calls the metronome CLI and records each call. Every number a figure or the report
shows comes from a file metronome writes under OUT/data/figN/; nothing here computes one."""
import concurrent.futures
import copy
import json
import math
import os
import subprocess
import sys
import threading
import time

from atomic_file import replacing  # noqa: F401 (report, plots and experiments take it from here)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXP_DIR = os.path.join(ROOT, "scenarios", "experiments")
# Cost model of every composed scenario that names none: a measured calibration where its GPU has
# one (Vidur's public profiles, imported by scripts/import_vidur.py; the simulator scales it to the
# scenario's layer shape), the corrected roofline of the GPU file elsewhere. Dense models only: a
# dense profile says nothing about MoE experts.
MEASURED_CALIBRATION = {
    "h100": os.path.join(ROOT, "results", "calibration", "llama-2-7b_h100_vidur.json"),
    "a100": os.path.join(ROOT, "results", "calibration", "llama-3-8b_a100_vidur.json"),
}
# Moshi's windowed AIMD admission scenario: figure 7's cost-model runs and figure 8's recommend
# runs start from it.
ADMISSION_SCENARIO = os.path.join(ROOT, "scenarios", "admission", "moshi_h200_aimd_windowed.json")


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
            sys.stderr.write(f"experiments: metronome failed ({rc}): {' '.join(cmd)}\n")
            # metronome's 2 is a bad scenario or option (its message is relayed above): the
            # user's error, passed on as such; anything else is this run's failure.
            raise SystemExit(2 if rc == 2 else 1)
        if stdout_path:
            with open(stdout_path, "w") as f:
                f.write(out)
        return out

    def parallel(self, calls):
        """Independent single-run calls (simulate, predict, capacity), `jobs` at a time. The first
        failure stops the calls not yet started (those running finish) and is raised: a figure
        whose run failed is not made, and minutes of queued runs would only delay saying so."""
        failed = threading.Event()

        def one(args, stdout_path):
            if failed.is_set():  # set before the failed call's worker takes the next
                return
            try:
                self.call(args, stdout_path)
            except BaseException:
                failed.set()
                raise

        with concurrent.futures.ThreadPoolExecutor(max_workers=self.jobs) as ex:
            futures = [ex.submit(one, a, p) for a, p in calls]
        for f in futures:
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


