"""What every figure's plot and REPORT rows share: reading metronome's outputs (Data), the
one-column figure layout and its helpers, and the REPORT table (Table), whose every value is read
from the file and JSON pointer printed beside it."""
import csv
import math
import os
import string

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as mticker  # noqa: E402
import numpy as np  # noqa: E402

from .runs import load, replacing  # noqa: E402

COLORS = {"unbounded": "tab:red", "windowed": "tab:blue"}
# No creation date or tool version in the files: a rerun that changes nothing leaves them alone.
STABLE = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Producer": None, "Creator": None}}
MODEL_COLORS = ["tab:purple", "tab:orange", "tab:green", "tab:brown"]
INTERVAL_COLORS = ["#440154", "#31688e", "#35b779", "#b5a300"]  # viridis, the last darkened
# One paper column: 3.5 in wide, no text under 7 pt. Titles and captions live in REPORT.md.
COLUMN_IN = 3.5
MIN_PT = 7
plt.rcParams.update({
    "font.size": MIN_PT, "axes.titlesize": MIN_PT, "axes.labelsize": MIN_PT,
    "xtick.labelsize": MIN_PT, "ytick.labelsize": MIN_PT, "legend.fontsize": MIN_PT,
    "legend.title_fontsize": MIN_PT, "figure.titlesize": MIN_PT,
    "lines.linewidth": 1.0, "lines.markersize": 3, "axes.linewidth": 0.6,
    "xtick.major.width": 0.6, "ytick.major.width": 0.6, "xtick.minor.width": 0.4,
    "ytick.minor.width": 0.4, "legend.handlelength": 1.8, "legend.borderaxespad": 0.2,
    "legend.columnspacing": 1.0, "legend.handletextpad": 0.4, "legend.labelspacing": 0.25,
    "axes.titlepad": 3, "savefig.dpi": 300,
})
# Figures rendered by this process (name, figure) instead of closed, when a test asks for them.
KEEP = None


class DataError(Exception):
    """Data that metronome wrote but a figure cannot show as it stands (e.g. files of one figure
    that disagree): figures.py says so and exits 2, rather than plot a NaN."""


class Data:
    def __init__(self, out):
        self.out = out
        self.root = os.path.join(out, "data")

    def path(self, rel):
        return os.path.join(self.root, rel)

    def json(self, rel):
        return load(self.path(rel))

    def csv(self, rel):
        with open(self.path(rel)) as f:
            return list(csv.DictReader(f))

    def cost_models(self, rels):
        labels = []
        for rel in rels:
            lab = self.json(rel)["cost_model"]
            if lab not in labels:
                labels.append(lab)
        return labels


def num(x):
    return float(x) if x not in ("", None) else math.nan


def pointer(doc, ptr):
    for part in ptr.strip("/").split("/"):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def column_figure(height_in, rows, cols=1, legend_rows=0, height_ratios=None, **kw):
    """A figure one column wide: an optional legend strip on top (legend_rows lines of legend
    text), then a rows x cols grid of axes. Returns (fig, legend axes or None, axes[rows][cols])."""
    legend_in = 0.13 * legend_rows + 0.04 if legend_rows else 0
    fig = plt.figure(figsize=(COLUMN_IN, height_in + legend_in), layout="constrained")
    ratios = ([legend_in] if legend_rows else []) + (height_ratios or [1] * rows)
    scale = height_in / sum(height_ratios or [1] * rows)
    if legend_rows:
        ratios = [legend_in] + [r * scale for r in (height_ratios or [1] * rows)]
    gs = fig.add_gridspec(len(ratios), cols, height_ratios=ratios)
    off = 1 if legend_rows else 0
    lax = None
    if legend_rows:
        lax = fig.add_subplot(gs[0, :])
        lax.axis("off")
    axes = [[None] * cols for _ in range(rows)]
    for i in range(rows):
        for j in range(cols):
            share = {}
            if kw.get("sharex") and i > 0:
                share["sharex"] = axes[0][j]
            axes[i][j] = fig.add_subplot(gs[off + i, j], **share)
    return fig, lax, axes


def strip_legend(lax, handles, labels, ncol=2):
    """The figure's one legend, in its own strip above the data."""
    seen, hs, ls = set(), [], []
    for h, l in zip(handles, labels):
        if l and not l.startswith("_") and l not in seen:
            seen.add(l)
            hs.append(h)
            ls.append(l)
    # Two columns only where the labels fit beside each other in one column's width.
    ncol = ncol if max(len(x) for x in ls) <= 30 else 1
    lax.legend(hs, ls, loc="center", ncol=ncol, frameon=False, borderaxespad=0)


def handles_of(*axes):
    hs, ls = [], []
    for a in axes:
        h, l = a.get_legend_handles_labels()
        hs += h
        ls += l
    return hs, ls


def finish(fig, out, name, number, title, cost_labels, note=""):
    """Saves PNG and PDF; the caption (title, what is shown, cost model) goes to REPORT.md."""
    caption = (f"**Figure {number}. {title}.** " + (note + " " if note else "") +
               "Cost model: " + "; ".join(cost_labels) + ".")
    engine = fig.get_layout_engine()
    engine.set(w_pad=0.02, h_pad=0.02, hspace=0.02, wspace=0.02)
    # The constrained layout is solved once, at the PNG's resolution, and its positions are fixed
    # to 1e-9 of the figure: kiwisolver orders its variables by memory address, so from run to run
    # a position could move in its last bit, and with it one shade of a few anti-aliased pixels
    # (figure 9's PNG differed in about half the runs on identical data).
    dpi = fig.dpi
    fig.set_dpi(plt.rcParams["savefig.dpi"])
    engine.execute(fig)
    fig.set_dpi(dpi)
    for ax in fig.axes:
        ax.set_position([round(v, 9) for v in ax.get_position().bounds])
    fig.set_layout_engine("none")
    os.makedirs(os.path.join(out, "figures"), exist_ok=True)
    for ext in ("png", "pdf"):
        # The format is given: savefig would take it from the temporary name's suffix.
        with replacing(os.path.join(out, "figures", f"{name}.{ext}")) as tmp:
            fig.savefig(tmp, format=ext, metadata=STABLE[ext])
    if KEEP is not None:
        KEEP.append((name, fig))
    else:
        plt.close(fig)
    return f"figures/{name}.png", caption


def plain_log(axis, subs=(1.0,)):
    """Log ticks read as numbers (1, 10, 100, 1000), not 10^k, with unlabelled minor ticks;
    subs=(1, 2, 5) labels 1-2-5 steps too, for an axis spanning about one decade."""
    axis.set_major_locator(mticker.LogLocator(base=10, subs=subs))
    axis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(mticker.NullFormatter())


def integer_ticks(axis):
    axis.set_major_locator(mticker.MaxNLocator(integer=True, nbins=5))


def deadline_line(ax, ms, where="right", color="k"):
    """The deadline, with its value written on it."""
    ax.axhline(ms, color=color, lw=0.7, ls="--", zorder=1)
    x = 0.99 if where == "right" else 0.01
    ax.text(x, ms, f"deadline {ms:g} ms", transform=ax.get_yaxis_transform(),
            ha="right" if where == "right" else "left", va="bottom", fontsize=MIN_PT, color=color)


def censored_markers(ax, x, y, color, label=None, level=0.96, most=None):
    """Points with no value (no output at all) as hollow triangles at the top of the axes; the
    real points' line is never drawn through them (NaN breaks it). most: thin a long run of them
    (a time series) to about that many markers."""
    x = np.asarray(x, float)
    gone = np.isnan(np.asarray(y, float))
    if gone.any():
        xs = x[gone]
        if most and len(xs) > most:
            xs = xs[::int(math.ceil(len(xs) / most))]
        ax.plot(xs, np.full(len(xs), level), "^", mfc="none", mec=color, ms=3.5, mew=0.7,
                ls="none", transform=ax.get_xaxis_transform(), clip_on=False, label=label)


def aligned_samples(period_s, frame_s, interval_s=None, limit=100):
    """Samples per plotted window: the fewest whole samples spanning whole frames (and whole
    arrival intervals), so each window holds the same number of due frames and no zig-zag."""
    for k in range(1, limit + 1):
        span = k * period_s
        ok = abs(span / frame_s - round(span / frame_s)) < 1e-6
        if interval_s:
            ok = ok and abs(span / interval_s - round(span / interval_s)) < 1e-6
        if ok:
            return k
    return 1


COUNTS = ("frames_due", "frames_served", "frames_on_time", "tokens_produced", "sessions_rejected")


def rebin(rows, k):
    """k consecutive samples as one: counts summed, tails (p99) the worst of the k, state
    (pool, live sessions, cap, the controller's last signal) as at the window's end."""
    if k <= 1:
        return rows
    out = []
    for g in range(0, len(rows) - k + 1, k):
        grp = rows[g:g + k]
        r = dict(grp[-1])
        for c in COUNTS:
            if c in r:
                r[c] = str(sum(int(x[c]) for x in grp))
        for c in ("reported_p99_ms", "true_p99_ms"):
            vals = [num(x[c]) for x in grp]
            # A window with any sample of no output is itself censored for the true tail.
            r[c] = "" if any(math.isnan(v) for v in vals) and c.startswith("true") else (
                str(np.nanmax(vals)) if not all(math.isnan(v) for v in vals) else "")
        due = max(1, int(r["frames_due"]))
        r["tokens_per_frame"] = str(int(r["tokens_produced"]) / due)
        silent = sum(num(x["silent_frame_fraction"]) * int(x["frames_due"]) for x in grp)
        r["silent_frame_fraction"] = str(silent / due if int(r["frames_due"]) else 0)
        miss = sum(num(x["deadline_miss_rate_reported"]) * int(x["frames_due"]) for x in grp)
        r["deadline_miss_rate_reported"] = str(miss / due if int(r["frames_due"]) else 0)
        out.append(r)
    return out


def short(label):
    """A model's label on two short lines, for category ticks in one column."""
    s = label.split(" (")[0]
    if " " in s:
        return s.replace(" ", "\n", 1)
    return s.replace("-", "-\n", 1) if "-" in s else s


def panel(ax, letter, text=""):
    ax.set_title(f"({letter}) {text}".rstrip(), loc="left")



class Table:
    """Rows of (quantity, paper's claim, this run's value(s), sources). Each value is read here
    from its source, so the text and the pointer cannot disagree."""

    def __init__(self, d):
        self.d = d
        self.rows = []

    def get(self, ref):
        rel, ptr = ref.split("#", 1)
        return pointer(self.d.json(rel), ptr)

    def row(self, quantity, paper, fmt, refs, scales=None):
        scales = scales or [None] * len(refs)
        vals = []
        for r, sc in zip(refs, scales):
            v = self.get(r)
            vals.append("none" if v is None else v * sc if sc else v)
        src = ", ".join(f"`{r}`" + (f" x{sc:g}" if sc else "") for r, sc in zip(refs, scales))
        # A null value prints "none" whatever its number format (e.g. no stall under a cost model).
        parts = list(string.Formatter().parse(fmt))
        fmt = "".join(lit + ("" if field is None else
                             "{" + ("" if vals[i] == "none" or not spec else ":" + spec) + "}")
                      for i, (lit, field, spec, _) in enumerate(parts))
        self.rows.append((quantity, paper, fmt.format(*vals), src))

    def markdown(self):
        out = ["| quantity | paper (typed from the brief) | this run (read from the simulator's "
               "output) | source (file under data/ # JSON pointer) |", "|---|---|---|---|"]
        out += [f"| {q} | {p} | {v} | {s} |" for q, p, v, s in self.rows]
        return "\n".join(out)



def label(w, key):
    """A model's name in the report (workloads.json)."""
    return w["models"][key]["label"]
