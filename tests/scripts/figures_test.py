#!/usr/bin/python3
"""figures_test.py SOURCE_DIR WORK_DIR: renders every figure from the data checked in under
results/data (each figure module's own plot(), scripts/paper_figures/, into WORK_DIR) and checks what a paper
column needs of each: 3.5 in wide, no text under 7 pt, at most one legend, no title or caption
text baked into the image (those are in REPORT.md), and every text inside the canvas.
Exit 77 (skip) when /usr/bin/python3 lacks matplotlib or the data is not there."""
import os
import sys

src, work = sys.argv[1], sys.argv[2]
try:
    import matplotlib  # noqa: F401
except ImportError:
    print("SKIP: no matplotlib")
    sys.exit(77)
data = os.path.join(src, "results", "data")
if not os.path.isdir(os.path.join(data, "fig1")):
    print(f"SKIP: no figure data under {data}")
    sys.exit(77)
sys.path.insert(0, os.path.join(src, "scripts"))
import paper_figures  # noqa: E402
from paper_figures import plots, runs  # noqa: E402
from matplotlib.legend import Legend  # noqa: E402
from matplotlib.text import Text  # noqa: E402

os.makedirs(work, exist_ok=True)
link = os.path.join(work, "data")
if not os.path.exists(link):
    os.symlink(data, link)
plots.KEEP = []
d = plots.Data(work)
w = runs.load(os.path.join(runs.EXP_DIR, "workloads.json"))
figures = list(paper_figures.FIGURES)
if not os.path.isfile(os.path.join(data, "fig8", "quality.json")):
    figures.remove(paper_figures.fig8_quality)
captions = [f.plot(d, w, False) for f in figures]
errors = []
if len(plots.KEEP) != len(figures):
    errors.append(f"{len(plots.KEEP)} figures kept for {len(figures)} plotted (finish() not used?)")


def fail(msg):
    errors.append(msg)
    print("FAIL: " + msg)


for (name, fig), (png, caption) in zip(plots.KEEP, captions):
    width, height = fig.get_size_inches()
    if abs(width - 3.5) > 1e-6:
        fail(f"{name}: {width:.2f} in wide, not one 3.5 in column")
    if not 1.5 <= height <= 9:
        fail(f"{name}: {height:.2f} in tall")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    for t in texts:
        if t.get_fontsize() < 7 - 1e-9:
            fail(f"{name}: text {t.get_text()!r} at {t.get_fontsize():.1f} pt (< 7)")
    # What is drawn (tick labels outside the view are not) must lie on the canvas: else the saved
    # image cuts it off.
    tb = fig.get_tightbbox(renderer)
    if tb.x0 < -0.02 or tb.y0 < -0.02 or tb.x1 > width + 0.02 or tb.y1 > height + 0.02:
        fail(f"{name}: drawn content {tb} runs off the {width:.2f} x {height:.2f} in canvas")
    legends = [l for l in fig.findobj(Legend) if l.get_visible()]
    if len(legends) > 1:
        fail(f"{name}: {len(legends)} legends, expected one per figure")
    if fig._suptitle is not None and fig._suptitle.get_text():
        fail(f"{name}: a title baked in ({fig._suptitle.get_text()!r})")
    if [t for t in fig.texts if t.get_text().strip()]:
        fail(f"{name}: figure-level text (a caption?) baked in")
    if not caption.startswith("**Figure ") or len(caption) < 80:
        fail(f"{name}: REPORT caption missing or too short: {caption!r}")
    for ext in ("png", "pdf"):
        if not os.path.isfile(os.path.join(work, "figures", f"{name}.{ext}")):
            fail(f"{name}.{ext} not written")

print(f"figures_test: {len(plots.KEEP)} figures checked, {len(errors)} problems")
sys.exit(1 if errors else 0)
