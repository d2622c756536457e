"""Figure 8: the quality side of the window. `metronome quality` on a real model and text
(perplexity along the text, and over the W x S grid), and `metronome recommend` per model with
those perplexity ratios as the quality floor."""
import os

import numpy as np

from .plots import (MIN_PT, column_figure, finish, handles_of, label, panel, plain_log,
                    strip_legend)
from .runs import ADMISSION_SCENARIO, ROOT, load, merge, model_scenario, spec

NUMBER = 8
SPEC = "fig8_quality.json"
QUALITY = "fig8/quality.json"  # under data/: metronome quality --json
RECOMMEND = "fig8/recommend"  # under data/: KEY.scenario.json, KEY.recommend.json per model


def run(r, w, quick):
    """The quality side of the window: `metronome quality` on a real model and text, fetched by
    scripts/fetch_quality_assets.sh into .cache/quality (make_figures.sh runs it first)."""
    sp = spec(SPEC, quick)
    # Relative to the output folder (where metronome runs), so the JSON names no path of this machine.
    assets = os.path.relpath(os.path.join(ROOT, ".cache", "quality"), r.out)
    args = ["quality", "--model", os.path.join(assets, sp["model"]),
            "--text", os.path.join(assets, sp["text"]), "--tokens", sp["tokens"],
            "--window", sp["window"], "--sinks", sp["sinks"], "--positions", sp["positions"],
            "--generate", sp["generate_tokens"], "--prompt-tokens", sp["prompt_tokens"],
            "--temperature", sp["temperature"], "--seed", sp["seed"],
            "--grid-windows"] + sp["grid_windows"] + ["--grid-sinks"] + sp["grid_sinks"] + [
            "-j", r.jobs, "--json"]
    r.call(args, r.data(QUALITY))
    recommendations(r, w, sp)


def recommendations(r, w, sp):
    """`metronome recommend` per shipped model, with this figure's perplexity ratios as the quality
    floor: the admission scenario (Poisson demand above capacity, AIMD, the memory guard, spread
    joins) with the model's workload and compute budget, over the quality grid's W x S."""
    rec = sp["recommend"]
    src = load(ADMISSION_SCENARIO)
    src["workload"]["arrival"]["max_sessions"] = 0  # demand until the horizon, as figure 7
    quality = os.path.relpath(r.data(QUALITY), r.out)
    for key in w["models"]:
        s = merge(model_scenario(dict(src, name=f"recommend-{key}"), w, key, w["budget_fraction"]),
                  rec["overrides"][key])
        # Demand above every cap within the first half of the run (caps run to a few thousand).
        s["workload"]["arrival"]["rate_per_s"] = 40
        base = r.data(RECOMMEND, f"{key}.scenario.json")
        path = r.write_scenario(base, s)
        # One model at a time on every job: a recommend's cells and seeds are dozens of similar
        # tasks that keep the cores even, where one call per core waited on the longest model
        # (MiniCPM-o's, about 3 times Moshi's) with the other core idle.
        r.call(["recommend", "--scenario", path, "--quality", quality,
                "--max-ppl-ratio", rec["max_ppl_ratio"], "--seeds", rec["seeds"],
                "--windows"] + sp["grid_windows"] + ["--sinks"] + sp["grid_sinks"] +
               ["-j", r.jobs, "--json"], base.replace(".scenario.json", ".recommend.json"))


def recommend_rows(t, w, quick):
    for key in w["models"]:
        rel = f"{RECOMMEND}/{key}.recommend.json"
        if t.d.json(rel)["best"] is None:
            t.row(f"recommend, {label(w, key)}: best (W, S) meeting the quality floor", "-",
                  "none (max perplexity ratio {:g})",
                  [rel + "#/quality_floor/max_ppl_ratio"])
            continue
        b = rel + "#/best/"
        t.row(f"recommend, {label(w, key)} (windowed KV, AIMD, spread joins; perplexity ratio to "
              "full attention at most the floor): best W; S; N* median (p5 to p95) over "
              "seeds; memory cap; deadline cap; perplexity ratio; silent frames", "-",
              "W = {}, S = {}: N* {:g} ({:g} to {:g}); memory cap {}; deadline cap {}; "
              "ppl x{:.3f}; {:.4f}% silent",
              [b + "window_tokens", b + "sink_tokens", b + "n_star_median",
               b + "n_star_p5", b + "n_star_p95", b + "memory_cap_sessions",
               b + "deadline_cap_sessions", b + "ppl_ratio",
               b + "silent_frame_fraction_mean"], scales=[None] * 8 + [100])


def quality_rows(t, w, quick):
    """The perplexity and generation rows, beside the paper's (and StreamingLLM's) claim."""
    sp = spec(SPEC, quick)
    rel = QUALITY
    q = t.d.json(rel)
    W, S = sp["window"], sp["sinks"]
    idx = {p["name"]: i for i, p in enumerate(q["perplexity"])}
    gen = {g["name"]: i for i, g in enumerate(q["generation"])}
    # The paper's claim is qualitative; the numbers beside it are a reference run of the same model
    # and text outside this project (N = 4096, W = 256).
    claims = {"full": "baseline (reference run elsewhere, N = 4096: 20.2)",
              f"w{W}": "a window alone degrades once it passes the session start (elsewhere: 39.0)",
              f"s{S}w{W}": "a few sinks keep it close to full attention (elsewhere: 22.2 with 4)"}
    for name in ("full", f"w{W}", f"s{S}w{W}"):
        i = idx[name]
        t.row(f"perplexity of Pride and Prejudice, {name}: all N tokens; tokens [W, N)",
              claims[name], "N = {}: {:.2f}; from token {}: {:.2f}",
              [f"{rel}#/config/tokens", f"{rel}#/perplexity/{i}/ppl", f"{rel}#/config/from",
               f"{rel}#/perplexity/{i}/ppl_from"])
    for name in ("full", f"w{W}", f"s{S}w{W}"):
        if name not in gen:
            continue
        i = gen[name]
        t.row(f"free-running generation, {name}: tokens; perplexity under full attention; "
              "share of letters and spaces",
              "sinks keep free-running generation coherent" if name != "full" else "baseline",
              "{} tokens: {:.2f}; {:.3f} (the text itself: {:.3f})",
              [f"{rel}#/config/generate_tokens", f"{rel}#/generation/{i}/ppl_full_model",
               f"{rel}#/generation/{i}/letter_space_share", f"{rel}#/text_letter_space_share"])


def plot(d, w, quick):
    sp = spec(SPEC, quick)
    q = d.json(QUALITY)
    ppl = {p["name"]: p for p in q["perplexity"]}
    W, S = sp["window"], sp["sinks"]
    main = ["full", f"w{W}", f"s{S}w{W}"]
    colors = {"full": "tab:red", f"w{W}": "tab:blue", f"s{S}w{W}": "tab:green"}
    labels = {"full": "full attention", f"w{W}": f"window W = {W}",
              f"s{S}w{W}": f"{S} sinks + W = {W}"}
    gw, gs_ = sp["grid_windows"], sp["grid_sinks"]
    fig, lax, axes = column_figure(3.9, 2, 1, legend_rows=2, height_ratios=[1.2, 1])
    a = axes[0][0]
    bucket = q["config"]["bucket"]
    for name in main:
        b = ppl[name]["bucket_ppl"]
        x = [(i + 0.5) * bucket for i in range(len(b))]
        a.plot(x, b, "-o", ms=2, lw=0.8, color=colors[name], label=labels[name])
    # Key 0 leaves the window of the query at W + 1, which predicts token W + 2.
    a.axvline(W + 2, color="k", ls="--", lw=0.7)
    a.text(W + 2, 0.97, " window passes the\n session start", fontsize=MIN_PT, va="top",
           transform=a.get_xaxis_transform())
    a.set_yscale("log")
    plain_log(a.yaxis, (1.0, 2.0, 5.0))
    a.set_xlabel("token position in the text")
    a.set_ylabel(f"perplexity per {bucket} tokens")
    panel(a, "a", "perplexity along the text")
    a = axes[1][0]
    mat = np.full((len(gs_), len(gw)), np.nan)
    for i, s_ in enumerate(gs_):
        for j, w_ in enumerate(gw):
            name = (f"s{s_}" if s_ else "") + f"w{w_}"
            if name in ppl:
                mat[i, j] = ppl[name]["ppl_from"] / ppl["full"]["ppl_from"]
    im = a.imshow(mat, origin="lower", cmap="magma_r", aspect="auto")
    for i in range(len(gs_)):
        for j in range(len(gw)):
            name = (f"s{gs_[i]}" if gs_[i] else "") + f"w{gw[j]}"
            txt = f"{ppl[name]['ppl_from']:.1f} ({mat[i, j]:.2f}x)" if name in ppl else "-"
            dark = name in ppl and mat[i, j] > np.nanmean(mat)
            a.text(j, i, txt, ha="center", va="center", fontsize=MIN_PT,
                   color="w" if dark else "k")
    a.set_xticks(range(len(gw)))
    a.set_xticklabels([str(v) for v in gw])
    a.set_yticks(range(len(gs_)))
    a.set_yticklabels([str(v) for v in gs_])
    a.set_xlabel("window W (tokens)")
    a.set_ylabel("sinks S (0: window only)")
    panel(a, "b", "perplexity from token "
          f"{q['config']['from']} (ratio to full attention)")
    cb = fig.colorbar(im, ax=a, pad=0.02)
    cb.set_label("ratio to full attention")
    strip_legend(lax, *handles_of(axes[0][0]), ncol=2)
    caption_note = (
        f"SmolLM2-135M-Instruct (GGUF \"{q['model']['name']}\", Q4_1, dequantized to float) on "
        f"Pride and Prejudice ({q['config']['positions']} positions), run on the CPU by "
        f"`metronome quality` over the paged KV cache, {q['config']['chunk']} tokens per step; "
        "measured, not simulated. (a) Perplexity per bucket of tokens along the text under full "
        f"attention, a window alone and sinks + window; the dashed line is where the window "
        f"passes the session start (legend values: perplexity over tokens {q['config']['from']}-"
        f"{q['config']['tokens']}: " + ", ".join(
            f"{labels[n]} {ppl[n]['ppl_from']:.1f}" for n in main) + "). (b) Perplexity over "
        f"tokens [{q['config']['from']}, {q['config']['tokens']}) per window W and sinks S and "
        f"its ratio to full attention ({ppl['full']['ppl_from']:.1f}).")
    return finish(fig, d.out, "fig8_quality", 8, sp["title"], ["none (a measurement)"],
                  caption_note)
