#!/usr/bin/env python3
"""The house rule for #include "folder/..." (and for a Python file's sys.path): each layer reaches
only itself and the layers below.

    core/  base/                 the shared rules (the KV visibility rule, block arithmetic, frame
                                 growth); the base library (JSON, output files, progress, rng,
                                 time, version). Neither includes anything of the project's else
    kernels/                     on core/ only
    sim/                         on core/ and base/; neither it nor kernels/ knows the other
    calibrate/ replay/           on core/, base/, kernels/ and sim/
    quality/                     on core/, base/ and kernels/ (no simulator)
    bench/                       the simulator's benchmarks, on core/, base/ and sim/
    app/                         the executable, on top of everything

Inside sim/ every file lives in a room, none at its root:

    config/ pool/ output/ policy/    the scenario and its catalog; block counting and pool sizing;
                                     run results and their writers; the policy registry
    admission/ cost/ exhaustion/     the policies, each kind behind one interface (admission also
                                     its gate: controller, forecast, memory guard, joins)
    kv_policy/ workload/
    closed_form/                     the first-order t_sat and the service-rate bounds
    engine/ scheduler/ vllm/         the engine core, its step schedulers (the frame scheduler, vLLM
                                     V1's) and vLLM's model: they know no fleet, sweep or analysis
                                     built on them
    analysis/ sweep/ fleet/          capacity, recommend, plan, the report; sweeps;
                                     fleets of engines

and the half of calibrate/ that the device machine builds standalone (no simulator, none of the
base library's packages there) includes neither sim/ nor base/. A Python file in a layer reaches
another folder's modules by putting it on sys.path (sys.path.insert(0, os.path.join(..., "core")));
a layer named there counts as an arrow too. Prints every arrow that breaks the rule, with file and
line, and exits 1 if there is one.

    include_graph.py ROOT          check the tree at ROOT
    include_graph.py --self-test   plant each kind of wrong arrow in a scratch tree: all must be found
"""
import pathlib
import re
import sys
import tempfile

ALLOWED = {
    "core": {"core"},
    "base": {"base"},
    "kernels": {"core", "kernels"},
    "sim": {"core", "base", "sim"},
    "calibrate": {"core", "base", "kernels", "sim", "calibrate"},
    "replay": {"core", "base", "kernels", "sim", "replay"},
    "quality": {"core", "base", "kernels", "quality"},
    "bench": {"core", "base", "sim", "quality", "bench"},  # benchmarks of the libraries they time
    "app": {"core", "base", "kernels", "sim", "calibrate", "replay", "quality", "app"},
}
# calibrate/CMakeLists.txt: metronome_calibrate_benchmarks, built on the device without sim/.
DEVICE_HALF = {"grid", "bench_model", "cpu_step", "benchmarks", "gpu_benchmarks", "bench_main"}
DEVICE_FORBIDS = {"sim", "base"}
SOURCES = {".h", ".cpp", ".cu", ".cuh"}
SIM_ROOMS = {"config", "pool", "output", "policy", "admission", "cost", "exhaustion", "kv_policy",
             "workload", "closed_form", "engine", "scheduler", "vllm", "analysis", "sweep", "fleet"}
ENGINE_ROOMS = {"engine", "scheduler", "vllm"}
ABOVE_ENGINE = {"analysis", "sweep", "fleet"}
SIM_INCLUDE = re.compile(r'^\s*#\s*include\s+"sim/([A-Za-z0-9_.]+)(/?)')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/')
SYS_PATH = re.compile(r"sys\.path\.(?:insert|append)\(")
QUOTED = re.compile(r'["\']([A-Za-z0-9_]+)["\']')


def cpp_arrows(text):
    for n, line in enumerate(text.splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield n, m.group(1)


def python_arrows(text):
    """The layers a Python file puts on sys.path: each quoted folder name in the call's arguments."""
    for m in SYS_PATH.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        line = text.count("\n", 0, m.start()) + 1
        for name in QUOTED.findall(text[m.end():i]):
            yield line, name


def sim_room_violations(root):
    """A sim/ file outside the rooms, an include of a room that is not one, and the engine's rooms
    reaching what is built on them."""
    found = []
    sim = root / "sim"
    for path in sorted(sim.rglob("*")):
        if not path.is_file() or path.suffix not in SOURCES:
            continue
        rel = path.relative_to(sim)
        room = rel.parts[0] if len(rel.parts) > 1 else None
        if room not in SIM_ROOMS:
            found.append(f"{path.relative_to(root)}: sim/ files live in a room "
                         f"({', '.join(sorted(SIM_ROOMS))})")
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = SIM_INCLUDE.match(line)
            if not m or m.group(1) == "embedded_scenarios.h":  # generated at build time
                continue
            target = m.group(1)
            if not m.group(2) or target not in SIM_ROOMS:
                found.append(f"{path.relative_to(root)}:{n}: includes sim/{target}, not in a room")
            elif room in ENGINE_ROOMS and target in ABOVE_ENGINE:
                found.append(f"{path.relative_to(root)}:{n}: sim/{room}/ reaches sim/{target}/, "
                             f"which is built on the engine")
    return found


def violations(root):
    found = sim_room_violations(root) if (root / "sim").is_dir() else []
    for layer, allowed in ALLOWED.items():
        for path in sorted((root / layer).rglob("*")):
            if not path.is_file():
                continue
            if path.suffix in SOURCES:
                arrows = cpp_arrows
            elif path.suffix == ".py":
                arrows = python_arrows
            else:
                continue
            device = layer == "calibrate" and path.parent == root / layer and path.stem in DEVICE_HALF
            ok = allowed - DEVICE_FORBIDS if device else allowed
            for n, target in arrows(path.read_text(errors="replace")):
                if target not in ALLOWED or target in ok:
                    continue
                why = "the device half of calibrate/" if device else layer + "/"
                found.append(f"{path.relative_to(root)}:{n}: {why} reaches {target}/ "
                             f"(allowed: {', '.join(sorted(ok))})")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        for layer in ALLOWED:
            (root / layer).mkdir()
        for room in ("config", "engine", "fleet"):
            (root / "sim" / room).mkdir()
        (root / "kernels" / "bench").mkdir()
        planted = {
            "sim/config/scenario.h": '#include "kernels/kv_window.h"',
            "sim/engine/engine.cpp": '  #  include "app/commands.h"',
            "sim/engine/session.h": '#include "sim/fleet/fleet.h"',
            "sim/loose.h": '#include "core/kv_window.h"',
            "sim/config/gpu.h": '#include "sim/scenario_parts.h"',
            "core/rule.h": '#include "sim/time.h"',
            "base/rng.h": '#include "core/kv_window.h"',
            "kernels/block_table.h": '#include "replay/clock.h"',
            "calibrate/cpu_step.cpp": '#include "sim/config/model.h"',
            "calibrate/grid.cpp": '#include "base/json_file.h"',
            "quality/quality_run.cpp": '#include "sim/analysis/report.h"',
            "bench/bench_sim.cpp": '#include "replay/replay.h"',
            "kernels/bench/compare.py": 'import os, sys\nsys.path.insert(0, os.path.join(\n    HERE, "..", "..", "calibrate", "torch"))',
        }
        fine = {
            "sim/config/ok.h": '#include "core/kv_window.h"\n#include "base/time.h"\n#include <vector>\n#include "local.h"',
            "sim/fleet/ok.h": '#include "sim/engine/engine.h"\n#include "sim/embedded_scenarios.h"',
            "calibrate/pipeline.cpp": '#include "sim/config/model.h"',
            "quality/gguf_file.cpp": '#include "base/json_file.h"',
            "app/main.cpp": '#include "quality/quality_run.h"',
            "bench/ok.cpp": '#include "sim/engine/engine.h"',
            "calibrate/torch_bench.py": 'sys.path.insert(0, os.path.join(ROOT, "core"))',
        }
        for name, text in {**planted, **fine}.items():
            (root / name).write_text(text + "\n")
        got = sorted(v.split(":")[0] for v in violations(root))
        want = sorted(planted)
        print(f"include_graph self-test: found {got}, planted {want}")
        return 0 if got == want else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 64
    root = pathlib.Path(sys.argv[1])
    missing = [layer for layer in ALLOWED if not (root / layer).is_dir()]
    if missing:
        print(f"include_graph: {root} has no {', '.join(missing)}/ folder", file=sys.stderr)
        return 1
    found = violations(root)
    for v in found:
        print(v)
    checked = sum(1 for layer in ALLOWED for p in (root / layer).rglob("*")
                  if p.suffix in SOURCES or p.suffix == ".py")
    print(f"include_graph: {checked} files, {len(found)} arrows against the layers")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
