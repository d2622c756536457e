#!/usr/bin/python3
"""experiments_test.py METRONOME SOURCE_DIR WORK_DIR: the figure drivers' handling of bad input.

- A bad argument to experiments.py, figures.py or make_figures.sh exits 2 with a message naming
  the option, never a traceback; make_figures.sh deletes no data before it has checked them all.
- --reuse keeps a figure's data only where runs_log.json says a run of the same mode wrote it: a
  full run's figure 1 is refused to a --quick run, even after a --quick --only run of another
  figure rewrote the log; a figure whose run failed is not reusable.
- The first failed call of a figure's parallel runs stops those not yet started.
- Figure 7's capacity files that disagree on the deadline are an error, not "deadline nan ms".
About 20 s, most of it Python starting 20 times (figures 1 and 2 run in a second). Exit 77
(skip) when /usr/bin/python3 lacks matplotlib (the drivers import it)."""
import json
import os
import shutil
import subprocess
import sys

metronome, src, work = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    import matplotlib  # noqa: F401
except ImportError:
    print("SKIP: no matplotlib")
    sys.exit(77)
scripts = os.path.join(src, "scripts")
errors = []


def fail(msg):
    errors.append(msg)
    print("FAIL: " + msg)


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    return p.returncode, p.stderr


def experiments(*args):
    return run(["/usr/bin/python3", os.path.join(scripts, "experiments.py"),
                "--metronome", metronome] + list(args))


def figures(*args):
    return run(["/usr/bin/python3", os.path.join(scripts, "figures.py")] + list(args))


def load(path):
    with open(path) as f:
        return json.load(f)


def expect_error(what, result, *words):
    """Exit 2, every word in the message, no traceback."""
    rc, err = result
    if rc != 2 or "Traceback" in err or not all(w in err for w in words):
        fail(f"{what}: exit {rc}, expected 2 and a message with {words}: {err.strip()[-300:]!r}")


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
out = os.path.join(work, "out")
a_file = os.path.join(work, "a_file")
open(a_file, "w").close()

expect_error("experiments --only abc", experiments("--only", "abc", "--out", out), "--only", "abc")
expect_error("experiments --reuse x", experiments("--reuse", "x", "--out", out), "--reuse")
expect_error("experiments --only 99", experiments("--only", "99", "--out", out), "--only", "99")
expect_error("experiments -j 0", experiments("--only", "5", "-j", "0", "--out", out), "-j")
expect_error("experiments --metronome missing",
             run(["/usr/bin/python3", os.path.join(scripts, "experiments.py"), "--metronome",
                  os.path.join(work, "none"), "--out", out]), "--metronome")
expect_error("experiments --out under a file",
             experiments("--only", "1", "--out", os.path.join(a_file, "out")), "--out")
if os.path.exists(out):
    fail(f"experiments.py wrote {out} on bad arguments")
expect_error("figures --only abc", figures("--only", "abc", "--out", out), "--only")
expect_error("figures -j 0", figures("-j", "0", "--out", out), "-j")
expect_error("figures, no data", figures("--only", "3", "--out", out), "is missing",
             "experiments.py")

# --reuse: figure 1 from a full run, then figure 2 from a quick one (which rewrites the log).
rc1, err1 = experiments("--only", "1", "--out", out)
rc2, err2 = experiments("--only", "2", "--quick", "--out", out)
if rc1 or rc2:
    fail(f"experiments --only 1, then --only 2 --quick: exit {rc1}, {rc2}: {(err1 + err2)[-300:]}")
expect_error("--quick --reuse 1 of a full run's figure 1",
             experiments("--quick", "--reuse", "1", "--only", "1", "--out", out),
             "--reuse 1", "full mode")
rc, err = experiments("--quick", "--reuse", "2", "--only", "2", "--out", out)
if rc:
    fail(f"--quick --reuse 2 of a quick run's figure 2: exit {rc}: {err[-300:]}")
# A run of figure 1 that fails (metronome exits 2) leaves no claim on its data, and passes the 2 on.
bad = os.path.join(work, "bad_metronome")
with open(bad, "w") as f:
    f.write("#!/bin/sh\necho 'metronome: error: a bad scenario' >&2\nexit 2\n")
os.chmod(bad, 0o755)
expect_error("metronome exits 2",
             run(["/usr/bin/python3", os.path.join(scripts, "experiments.py"), "--metronome", bad,
                  "--only", "1", "--out", out]), "a bad scenario", "metronome failed")
expect_error("--reuse 1 after a failed run of figure 1",
             experiments("--reuse", "1", "--only", "1", "--out", out), "--reuse 1", "fig1")
log = load(os.path.join(out, "data", "runs_log.json"))
calls = {c.get("figure") for c in log.get("metronome_calls", [])}
if sorted(log.get("figures", {})) != ["fig2"] or calls != {"fig2"}:
    fail(f"runs_log.json after a failed figure 1 names figures {sorted(log.get('figures', {}))}, "
         f"calls of {sorted(calls)}: expected fig2 alone")

# The first failed call of a figure's parallel runs stops the queued ones: at -j 1, figure 2's
# several simulate runs stop at the first.
counted = os.path.join(work, "counted_metronome")
calls_file = os.path.join(work, "calls")
with open(counted, "w") as f:
    f.write(f"#!/bin/sh\necho x >> '{calls_file}'\necho 'metronome: error: fails' >&2\nexit 1\n")
os.chmod(counted, 0o755)
rc, err = run(["/usr/bin/python3", os.path.join(scripts, "experiments.py"), "--metronome", counted,
               "--only", "2", "-j", "1", "--out", os.path.join(work, "failfast")])
made = open(calls_file).read().count("x") if os.path.exists(calls_file) else 0
if rc != 1 or made != 1:
    fail(f"figure 2 with a failing metronome at -j 1: exit {rc}, {made} calls; expected exit 1 "
         f"after 1 call: {err[-300:]!r}")

# make_figures.sh: every argument is checked before anything is deleted.
make = os.path.join(scripts, "make_figures.sh")
expect_error("make_figures --out", run([make, "--out"]), "--out needs a value")
expect_error("make_figures --only 2 -j abc",
             run([make, "--only", "2", "-j", "abc", "--quick", "--out", out,
                  "--metronome", metronome]), "-j")
expect_error("make_figures --metronome missing",
             run([make, "--metronome", os.path.join(work, "none"), "--out", out]), "--metronome")
if not os.path.isdir(os.path.join(out, "data", "fig2")):
    fail("make_figures.sh deleted data/fig2 before rejecting its arguments")

# Figure 7: one capacity file with another deadline.
fig7 = os.path.join(work, "fig7")
shutil.copytree(os.path.join(src, "results", "data", "fig7", "window_sink"),
                os.path.join(fig7, "data", "fig7", "window_sink"))
shutil.copytree(os.path.join(src, "results", "data", "fig7", "models"),
                os.path.join(fig7, "data", "fig7", "models"))
path = os.path.join(fig7, "data", "fig7", "window_sink", "W480_S4.capacity.json")
cap = load(path)
cap["capacity"]["deadline_ms"] += 1
with open(path, "w") as f:
    json.dump(cap, f)
rc, err = figures("--only", "7", "--out", fig7)
expect_error("figure 7, capacity files that disagree", (rc, err), "deadline_ms", "W480_S4")
if "nan" in err:
    fail(f"figure 7: {err.strip()!r}")

print(f"experiments_test: {len(errors)} problems")
sys.exit(1 if errors else 0)
