#!/usr/bin/env python3
"""Times PyTorch's attention on the shapes metronome_kernel_bench timed, bf16, and writes a merged
results table (JSON + text):

  SDPA   torch.nn.functional.scaled_dot_product_attention on contiguous K and V
         ([sessions, kv_heads, keys, head_dim]); windowed shapes get the contiguous sinks + window
         keys they see (SDPA has no paged or windowed mode). Decode (q = 1) needs no mask and uses
         enable_gqa. A frame of q > 1 tokens needs a mask (bottom-right causal), and SDPA's fused
         kernels take no mask with enable_gqa, so a boolean mask with GQA runs the slow math
         backend: instead the G query heads of each KV head are folded into the query length
         ([sessions, kv_heads, G * q, head_dim], the mask repeated G times), which the
         memory-efficient and cuDNN kernels take without copying K or V. The backend is found by
         probing (torch.nn.attention.sdpa_kernel with one backend at a time, in torch's order:
         flash, efficient, cudnn, math) and logged per shape with the layout.
  Flex   torch.nn.attention.flex_attention (compiled) on the session's whole KV with a block mask
         from core/kv_window.h's rule (its port core/kv_window.py: sinks + window), so blocks
         outside sinks + window are skipped; checked against a float64 reference under that mask.
         Each new shape compiles; --flex-limit-s bounds the time spent.

Protocol: warm-up, CUDA events, median of repetitions, inputs rotated over copies larger than
4x L2, output checked against a float64 reference on one session.

  sdpa_compare.py --bench bench.json --json torch.json --results results.json --table results.txt
Without torch or a GPU it writes the table from bench.json alone, says why, and exits 3.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

# The rule's Python port, beside the rule in core/ (the room kernels/ builds on).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "core"))
import kv_window  # noqa: E402

KVH, QH, D = 4, 28, 128  # qwen2.5-omni-7b's attention, as metronome_kernel_bench times it


def parse_window(w):
    if w == "unbounded":
        return None
    wpart, spart = w.split("_")
    return int(wpart[1:]), int(spart[1:])


def visible_keys(ctx, q, window):
    """Keys the frame's queries see, in order: sinks left of the window, then the window."""
    seq = ctx + q
    if window is None:
        return seq
    W, S = window
    start = max(0, ctx - W)  # window of the first query (position ctx)
    return min(S, start) + (seq - start)


def median_ms(torch, run, sets, warm, reps):
    for i in range(warm):
        run(sets[i % len(sets)])
    times = []
    for i in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        s = sets[i % len(sets)]
        a.record()
        run(s)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def reference(torch, q, k, v, allowed):
    """float64 attention of one session: q [H, nq, d], k/v [K, nk, d], allowed [nq, nk] bool."""
    g = q.shape[0] // k.shape[0]
    kd = k.double().repeat_interleave(g, 0)
    vd = v.double().repeat_interleave(g, 0)
    sc = (q.double() @ kd.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    sc = sc.masked_fill(~allowed, float("-inf"))
    return torch.softmax(sc, -1) @ vd


def rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


def sdpa_probe(torch, run):
    """The first backend, in torch's order, that runs this call; (backend, name)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for b in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
              SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH):
        try:
            with sdpa_kernel([b]):
                run()
            torch.cuda.synchronize()
            return b, b.name.lower()
        except RuntimeError:
            continue
    raise RuntimeError("no SDPA backend runs this shape")


def time_sdpa(torch, F, sessions, ctx, q, window, l2_bytes, warm=3, reps=15):
    from torch.nn.attention import sdpa_kernel
    kvh, qh, d, g = KVH, QH, D, QH // KVH
    keys = visible_keys(ctx, q, window)
    dt = torch.bfloat16
    set_bytes = 2 * sessions * kvh * keys * d * 2 + 2 * sessions * qh * q * d * 2
    copies = max(1, min(16, math.ceil(4 * l2_bytes / set_bytes)))
    sets = []
    for _ in range(copies):
        sets.append((torch.randn(sessions, qh, q, d, device="cuda", dtype=dt),
                     torch.randn(sessions, kvh, keys, d, device="cuda", dtype=dt),
                     torch.randn(sessions, kvh, keys, d, device="cuda", dtype=dt)))
    mask = None
    if q > 1:
        # Query i (position ctx + i) sees every key up to its own position: bottom-right causal.
        # A windowed frame also drops keys that fall out of a later query's window; for the
        # frame sizes timed here (q <= W) the first query's window is a superset, as in the kernel.
        i = torch.arange(q, device="cuda")[:, None]
        j = torch.arange(keys, device="cuda")[None, :]
        mask = j <= (keys - q + i)
    if mask is None:
        layout = "enable_gqa"

        def call(s):
            qq, kk, vv = s
            return F.scaled_dot_product_attention(qq, kk, vv, enable_gqa=True)
    else:
        layout = "folded_gqa"
        folded_mask = mask.repeat(g, 1)  # row r = (head in group) * q + query

        def call(s):
            qq, kk, vv = s
            out = F.scaled_dot_product_attention(qq.view(sessions, kvh, g * q, d), kk, vv,
                                                 attn_mask=folded_mask)
            return out.view(sessions, qh, q, d)
    backend, backend_name = sdpa_probe(torch, lambda: call(sets[0]))

    def run(s):
        with sdpa_kernel([backend]):
            return call(s)
    ms = median_ms(torch, run, sets, warm, reps)
    qq, kk, vv = sets[0]
    allowed = mask if mask is not None else torch.ones(q, keys, dtype=torch.bool, device="cuda")
    err = rel_err(run(sets[0])[0], reference(torch, qq[0], kk[0], vv[0], allowed))
    gbps = set_bytes / (ms * 1e-3) / 1e9
    del sets
    torch.cuda.empty_cache()
    return {"ms": ms, "gbps": gbps, "rel_err": err, "backend": backend_name, "layout": layout}


def time_flex(torch, flex, sessions, ctx, q, window, l2_bytes, warm=3, reps=15):
    """flex(q, k, v, block_mask) over the whole KV (ctx + q keys) with the sinks + window mask."""
    from torch.nn.attention.flex_attention import create_block_mask
    kvh, qh, d = KVH, QH, D
    W, S = (-1, 0) if window is None else window
    L = ctx + q
    dt = torch.bfloat16
    # Bytes the mask lets it read: the visible keys (as for SDPA), not the whole KV.
    set_bytes = 2 * sessions * kvh * visible_keys(ctx, q, window) * d * 2 + 2 * sessions * qh * q * d * 2
    whole = 2 * sessions * kvh * L * d * 2
    copies = max(1, min(16, math.ceil(4 * l2_bytes / whole)))
    sets = []
    for _ in range(copies):
        sets.append((torch.randn(sessions, qh, q, d, device="cuda", dtype=dt),
                     torch.randn(sessions, kvh, L, d, device="cuda", dtype=dt),
                     torch.randn(sessions, kvh, L, d, device="cuda", dtype=dt)))
    bm = create_block_mask(kv_window.mask_mod(ctx, W, S), None, None, q, L, device="cuda")

    def run(s):
        qq, kk, vv = s
        return flex(qq, kk, vv, block_mask=bm, enable_gqa=True)
    t0 = time.monotonic()
    run(sets[0])  # compiles
    torch.cuda.synchronize()
    compile_s = time.monotonic() - t0
    ms = median_ms(torch, run, sets, warm, reps)
    qq, kk, vv = sets[0]
    pos = torch.arange(q, device="cuda")[:, None] + ctx
    k = torch.arange(L, device="cuda")[None, :]
    allowed = k <= pos
    if W >= 0:
        allowed = allowed & ((k < S) | (pos - k <= W))
    err = rel_err(run(sets[0])[0], reference(torch, qq[0], kk[0], vv[0], allowed))
    del sets
    torch.cuda.empty_cache()
    return {"ms": ms, "gbps": set_bytes / (ms * 1e-3) / 1e9, "rel_err": err,
            "compile_s": compile_s}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="metronome_kernel_bench --json output")
    ap.add_argument("--json", help="write SDPA timings here")
    ap.add_argument("--results", required=True, help="merged results JSON")
    ap.add_argument("--table", required=True, help="merged readable table")
    ap.add_argument("--flex-limit-s", type=float, default=60,
                    help="stop starting FlexAttention shapes after this many seconds (each compiles)")
    args = ap.parse_args()

    with open(args.bench) as f:
        bench = json.load(f)
    sdpa, flex_rows = {}, {}
    note, status = "", 0
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        torch, note, status = None, f"PyTorch comparison not run: {e}", 3
    if torch is not None and not torch.cuda.is_available():
        note, status = "PyTorch comparison not run: torch sees no CUDA device", 3
    elif torch is not None:
        note = f"torch {torch.__version__}"
        l2 = bench.get("l2_bytes", 50 << 20)
        rows = [r for r in bench["rows"] if r["group"] in ("target", "window", "grid")]
        for r in rows:
            try:
                x = time_sdpa(torch, F, r["sessions"], r["ctx"], r["q"], parse_window(r["window"]), l2)
                sdpa[r["name"]] = x
                print(f"  sdpa {r['name']:<44} {x['ms']:9.4f} ms  {x['gbps']:8.1f} GB/s  err "
                      f"{x['rel_err']:.2e}  {x['backend']} ({x['layout']})", file=sys.stderr)
            except Exception as e:  # one shape's failure must not lose the others
                sdpa[r["name"]] = {"error": f"{type(e).__name__}: {e}"[:300]}
                print(f"  sdpa {r['name']}: {sdpa[r['name']]['error']}", file=sys.stderr)
                torch.cuda.empty_cache()
                status = 1
        try:
            from torch.nn.attention.flex_attention import flex_attention
            for k in ("cache_size_limit", "recompile_limit"):  # one compile per shape
                if hasattr(torch._dynamo.config, k):
                    setattr(torch._dynamo.config, k, 256)
            flex = torch.compile(flex_attention, dynamic=False)
        except Exception as e:
            flex, note = None, note + f"; FlexAttention unavailable: {e}"
            status = 1
        t0 = time.monotonic()
        for r in rows if flex else []:
            if time.monotonic() - t0 > args.flex_limit_s:
                flex_rows[r["name"]] = {"error": f"--flex-limit-s {args.flex_limit_s:g} reached"}
                continue
            try:
                x = time_flex(torch, flex, r["sessions"], r["ctx"], r["q"], parse_window(r["window"]), l2)
                flex_rows[r["name"]] = x
                print(f"  flex {r['name']:<44} {x['ms']:9.4f} ms  {x['gbps']:8.1f} GB/s  err "
                      f"{x['rel_err']:.2e}  (compile {x['compile_s']:.1f} s)", file=sys.stderr)
            except Exception as e:
                flex_rows[r["name"]] = {"error": f"{type(e).__name__}: {e}"[:300]}
                print(f"  flex {r['name']}: {flex_rows[r['name']]['error']}", file=sys.stderr)
                torch.cuda.empty_cache()
                status = 1
        backends = {}
        for x in sdpa.values():
            if "backend" in x:
                key = f"{x['backend']} ({x['layout']})"
                backends[key] = backends.get(key, 0) + 1
        note += f"; SDPA backends: {backends or 'none'}"
    if note:
        print(note, file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"note": note, "rows": sdpa, "flex": flex_rows}, f, indent=1)

    merged = dict(bench)
    merged["sdpa_note"] = note
    lines = [f"device: {bench.get('device')}  SMs {bench.get('sms')}  L2 {bench.get('l2_bytes', 0) / 1e6:.0f} MB",
             f"copy bandwidth (d2d, read+write): {bench.get('copy_gbps', 0):.1f} GB/s",
             f"protocol: {bench.get('warmup')} warm-up, median of {bench.get('reps')}, inputs rotated over > 4x L2",
             f"PyTorch: {note}", "",
             f"{'group':<7} {'name':<44} {'ms':>9} {'GB/s':>8} {'%copy':>6} {'sdpa ms':>9} {'vs sdpa':>8} "
             f"{'flex ms':>9} {'vs flex':>8} {'err':>9}  sdpa backend"]
    for r in merged["rows"]:
        s = sdpa.get(r["name"], {})
        x = flex_rows.get(r["name"], {})
        if "ms" in s:
            r["sdpa_ms"] = s["ms"]
            r["speedup_vs_sdpa"] = s["ms"] / r["ms"] if r["ms"] > 0 else None
            r["sdpa_rel_err"] = s["rel_err"]
            r["sdpa_backend"] = s["backend"]
            r["sdpa_layout"] = s["layout"]
        if "ms" in x:
            r["flex_ms"] = x["ms"]
            r["speedup_vs_flex"] = x["ms"] / r["ms"] if r["ms"] > 0 else None
            r["flex_rel_err"] = x["rel_err"]
        sp = f"{s['ms']:9.4f} {s['ms'] / r['ms']:7.2f}x" if "ms" in s and r["ms"] > 0 else f"{'-':>9} {'-':>8}"
        fx = f"{x['ms']:9.4f} {x['ms'] / r['ms']:7.2f}x" if "ms" in x and r["ms"] > 0 else f"{'-':>9} {'-':>8}"
        err = f"{r['rel_err']:9.2e}" if r.get("rel_err") is not None else f"{'-':>9}"
        gb = f"{r['gbps']:8.1f} {100 * r['frac_copy']:5.1f}%" if r["gbps"] else f"{'-':>8} {'-':>6}"
        lines.append(f"{r['group']:<7} {r['name']:<44} {r['ms']:9.4f} {gb} {sp} {fx} {err}  "
                     f"{s.get('backend', '-')}")
    t = next((r for r in merged["rows"] if r["group"] == "target"), None)
    if t:
        lines += ["", f"decode target (256 x 8k, 28/4 heads, d128, bf16): {100 * t['frac_copy']:.1f}% of copy "
                  f"bandwidth (goal >= 80%)" + (f", {t['speedup_vs_sdpa']:.2f}x SDPA (goal >= 1)" if t.get("speedup_vs_sdpa") else "")]
    win = [r for r in merged["rows"] if r["group"] == "window" and r["name"].endswith("_windowed")]
    if win:
        lines.append("windowed cost vs context (S=4, W=1024): " +
                     ", ".join(f"{r['ctx']}: {r['ms']:.3f} ms" for r in win))
    with open(args.results, "w") as f:
        json.dump(merged, f, indent=1)
    with open(args.table, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main())
