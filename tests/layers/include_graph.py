#!/usr/bin/env python3
"""The house rule for #include "folder/...": each layer includes only itself and the layers below.

    core/                        the shared rules (the KV visibility rule, block arithmetic)
    kernels/  sim/               build on core/ only; neither knows the other
    calibrate/ replay/ quality/  build on core/, kernels/ and sim/
    app/                         the executable, on top of everything

and the half of calibrate/ that the device machine builds standalone (no simulator there) includes no
sim/. Prints every arrow that breaks the rule, with file and line, and exits 1 if there is one.

    include_graph.py ROOT          check the tree at ROOT
    include_graph.py --self-test   plant each kind of wrong arrow in a scratch tree: all must be found
"""
import pathlib
import re
import sys
import tempfile

ALLOWED = {
    "core": {"core"},
    "kernels": {"core", "kernels"},
    "sim": {"core", "sim"},
    "calibrate": {"core", "kernels", "sim", "calibrate"},
    "replay": {"core", "kernels", "sim", "replay"},
    "quality": {"core", "kernels", "sim", "quality"},
    "app": {"core", "kernels", "sim", "calibrate", "replay", "quality", "app"},
}
# calibrate/CMakeLists.txt: metronome_calibrate_benchmarks, built on the device without sim/.
DEVICE_HALF = {"grid", "bench_model", "cpu_step", "benchmarks", "gpu_benchmarks", "bench_main"}
SOURCES = {".h", ".cpp", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/')


def violations(root):
    found = []
    for layer, allowed in ALLOWED.items():
        for path in sorted((root / layer).rglob("*")):
            if path.suffix not in SOURCES or not path.is_file():
                continue
            device = layer == "calibrate" and path.parent == root / layer and path.stem in DEVICE_HALF
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m or m.group(1) not in ALLOWED:
                    continue
                target = m.group(1)
                if target not in allowed or (device and target == "sim"):
                    why = "the device half of calibrate/" if device and target == "sim" else layer + "/"
                    found.append(f"{path.relative_to(root)}:{n}: {why} includes {target}/ "
                                 f"(allowed: {', '.join(sorted(allowed - ({'sim'} if device else set())))})")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        for layer in ALLOWED:
            (root / layer).mkdir()
        planted = {
            "sim/scenario.h": '#include "kernels/kv_window.h"',
            "sim/engine.cpp": '  #  include "app/commands.h"',
            "core/rule.h": '#include "sim/time.h"',
            "kernels/block_table.h": '#include "replay/clock.h"',
            "calibrate/cpu_step.cpp": '#include "sim/model.h"',
        }
        fine = {
            "sim/ok.h": '#include "core/kv_window.h"\n#include <vector>\n#include "local.h"',
            "calibrate/pipeline.cpp": '#include "sim/model.h"',
            "app/main.cpp": '#include "quality/quality_run.h"',
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
    checked = sum(1 for layer in ALLOWED for p in (root / layer).rglob("*") if p.suffix in SOURCES)
    print(f"include_graph: {checked} files, {len(found)} arrows against the layers")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
