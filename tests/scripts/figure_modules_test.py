#!/usr/bin/python3
"""figure_modules_test.py SOURCE_DIR: the layout of scripts/paper_figures/, one module per figure.

- FIGURES holds figures 1..10 in order; each module is named like its experiment file
  (figN_NAME.py for scenarios/experiments/figN_NAME.json, its SPEC), which exists, and has run()
  and plot().
- Every function of report.ROWS belongs to a figure module, and every figure module's *rows
  function is in report.ROWS exactly once (a row group cannot drop out of the report unseen).
- Data paths are spelled once: a string literal naming a figure's data folder ("figN/...", "figN",
  "costmodel") appears only in that figure's module (costmodel/ is figure 7's), never in the
  drivers (experiments.py, figures.py) or the shared modules. A planted literal must be found.
Exit 77 (skip) when /usr/bin/python3 lacks matplotlib (the modules import it)."""
import ast
import os
import re
import sys

src = sys.argv[1]
try:
    import matplotlib  # noqa: F401
except ImportError:
    print("SKIP: no matplotlib")
    sys.exit(77)
scripts = os.path.join(src, "scripts")
sys.path.insert(0, scripts)
import paper_figures  # noqa: E402
from paper_figures import report  # noqa: E402

DATA_DIR = re.compile(r"^(fig(\d)(?:/|$)|costmodel(?:/|$))")
errors = []


def fail(msg):
    errors.append(msg)
    print("FAIL: " + msg)


def data_literals(text):
    """(figure number, literal) for each string literal (f-string parts too) naming a data folder;
    costmodel/ counts as figure 7's."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = DATA_DIR.match(node.value)
            if m:
                found.append((int(m.group(2)) if m.group(2) else 7, node.value))
    return found


planted = data_literals('a = r.data("fig3", "run")\nb = f"fig4/{key}/x"\nc = "costmodel/m.json"')
if sorted(planted) != [(3, "fig3"), (4, "fig4/"), (7, "costmodel/m.json")]:
    fail(f"the scanner missed planted data paths: {planted}")

numbers = [f.NUMBER for f in paper_figures.FIGURES]
if numbers != list(range(1, len(numbers) + 1)):
    fail(f"FIGURES numbered {numbers}, not 1..{len(numbers)} in order")
for f in paper_figures.FIGURES:
    name = f.__name__.rsplit(".", 1)[1]
    if not name.startswith(f"fig{f.NUMBER}_") or f.SPEC != name + ".json":
        fail(f"{name}: figure {f.NUMBER} with experiment file {f.SPEC}: not named alike")
    if not os.path.isfile(os.path.join(src, "scenarios", "experiments", f.SPEC)):
        fail(f"{name}: no scenarios/experiments/{f.SPEC}")
    for fn in ("run", "plot"):
        if not callable(getattr(f, fn, None)):
            fail(f"{name}: no {fn}()")
    with open(f.__file__) as fh:
        for n, lit in data_literals(fh.read()):
            if n != f.NUMBER:
                fail(f"{name} spells figure {n}'s data path {lit!r}")

modules = {f.__name__ for f in paper_figures.FIGURES}
for rows in report.ROWS:
    if rows.__module__ not in modules:
        fail(f"report.ROWS: {rows.__name__} is not a figure module's ({rows.__module__})")
for f in paper_figures.FIGURES:
    for attr in dir(f):
        fn = getattr(f, attr)
        if attr.endswith("rows") and callable(fn) and fn.__module__ == f.__name__:
            if report.ROWS.count(fn) != 1:
                fail(f"{f.__name__}.{attr} is in report.ROWS {report.ROWS.count(fn)} times")

pkg = os.path.join(scripts, "paper_figures")
shared = [os.path.join(scripts, "experiments.py"), os.path.join(scripts, "figures.py")] + [
    os.path.join(pkg, p) for p in sorted(os.listdir(pkg))
    if p.endswith(".py") and not p.startswith("fig")]
for path in shared:
    with open(path) as fh:
        for n, lit in data_literals(fh.read()):
            fail(f"{os.path.relpath(path, src)} spells figure {n}'s data path {lit!r}")

print(f"figure_modules_test: {len(numbers)} figure modules, {len(report.ROWS)} row groups, "
      f"{len(shared)} shared files checked, {len(errors)} problems")
sys.exit(1 if errors else 0)
