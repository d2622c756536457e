#!/usr/bin/env python3
"""Times a decoder step with PyTorch's production attention (SDPA, FlexAttention) over the same grid
as our CUDA kernels, and writes the same benchmark JSON, so `metronome calibrate fit` takes either.

Why: our CUDA attention kernel runs on CUDA cores only, so a calibration from it alone would make
frame ingest (25-60-token frames) look far costlier than in a production engine. This path times,
per grid point (calibrate/torch/grids.json, written from calibrate/grid.cpp):

  step       all layers: QKV GEMM, attention, O GEMM, gate+up GEMM, SiLU x up, down GEMM
  attention  one layer's attention over the cached KV
  gemm       one layer's linears

Attention, both ways, sinks + window from the rule of core/kv_window.h (core/kv_window.py, its
tested port): SDPA on the keys the step can see (the sinks and the window, gathered: what a paged engine
holds), with a boolean mask where the queries need one (GQA then folded into the query length, since the
fused SDPA kernels take no mask with enable_gqa); FlexAttention on the session's whole KV
with a block mask built from the same rule (blocks outside sinks + window are skipped). With
--attention both the faster of the two is kept per shape and the benchmark says which
(attention_impl); the SDPA backend that ran (flash, efficient, cudnn or math) is logged per point.
KV is one dense tensor per step, reused by every layer (far larger than L2 at the device grid's
sizes); not paged. MoE models are refused (their experts are not timed here).

Protocol: CUDA events on the current stream (perf_counter on a CPU); `warmup` untimed runs; then
`repetitions` repetitions, each the mean of as many runs as fill `min_time_s`; the median is the
benchmark's median aggregate.

    python3 calibrate/torch/torch_bench.py --model moshi --grid gpu --out bench_torch.json
    python3 calibrate/torch/torch_bench.py --dry-run --out bench_dry.json   # CPU, tiny, grid ci

Bad arguments exit 2, checked first; then, without torch, it exits 77 with a message (ctest reads
77 as skipped).
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import socket
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "core"))  # the rule's Python port, beside the rule
import kv_window  # noqa: E402

SKIP = 77


def load_model(ap, name):
    path = os.path.join(ROOT, "scenarios", "models", name + ".json")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) or not os.path.isfile(path):
        ap.error(f"--model {name}: no {path}")
    try:
        with open(path) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        ap.error(f"--model {name}: {path}: {e}")
    if m.get("experts", 0) > 0:
        ap.error(f"--model {name}: an MoE model; this path does not time experts (use the CUDA "
                 "kernels' benchmark)")
    return m


class Unsupported(RuntimeError):
    """This device's torch has no kernel for the shape."""


def skippable(torch):
    """What means this machine cannot time a point: a piece of torch missing here (FlexAttention,
    or the compiler's backend such as Triton), no kernel for the shape, or too little device
    memory. Such a point is recorded as skipped; any other exception is a bug and stops the run."""
    kinds = [ImportError, Unsupported, torch.cuda.OutOfMemoryError]
    try:
        from torch._dynamo.exc import BackendCompilerFailed
        kinds.append(BackendCompilerFailed)
    except ImportError:
        pass
    return tuple(kinds)


class Timer:
    def __init__(self, torch, device):
        self.torch, self.cuda = torch, device.type == "cuda"

    def run(self, fn, n):
        if self.cuda:
            t = self.torch
            a, b = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(n):
                fn()
            b.record()
            b.synchronize()
            return a.elapsed_time(b) * 1e-3 / n
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n

    def median(self, fn, warmup, repetitions, min_time_s):
        for _ in range(warmup):
            self.run(fn, 1)
        one = max(self.run(fn, 1), 1e-7)
        n = max(1, int(min_time_s / one))
        return statistics.median(self.run(fn, n) for _ in range(repetitions))


class Step:
    """One grid point's tensors; attention(impl) and the step's parts as closures."""

    def __init__(self, torch, m, p, device, dtype):
        self.t, self.p = torch, p
        h, H, K, d, F = (m["hidden_size"], m["attention_heads"], m["kv_heads"], m["head_dim"],
                         m["ffn_size"])
        self.H, self.K, self.d = H, K, d
        B, q, ctx, W, S = p["sessions"], p["q_len"], p["ctx"], p["window"], p["sinks"]
        T = B * q
        g = torch.Generator(device="cpu").manual_seed(1)
        rnd = lambda *shape: (torch.randn(*shape, generator=g) * 0.02).to(device, dtype)  # noqa
        self.x = rnd(T, h)
        self.w_qkv, self.w_o = rnd(h, (H + 2 * K) * d), rnd(H * d, h)
        self.w_gu, self.w_d = rnd(h, 2 * F), rnd(F, h)
        self.q = rnd(B, H, q, d)
        # Whole KV for FlexAttention (positions 0 .. ctx + q - 1) ...
        L = ctx + q
        self.k_full, self.v_full = rnd(B, K, L, d), rnd(B, K, L, d)
        # ... and the keys the step can see, gathered, for SDPA: sinks, then the window onward.
        start = kv_window.window_start(ctx, W)
        sinks = min(S, start)
        idx = list(range(sinks)) + list(range(start, L))
        self.positions = idx
        ix = torch.tensor(idx, device=device)
        self.k_vis = self.k_full.index_select(2, ix).contiguous()
        self.v_vis = self.v_full.index_select(2, ix).contiguous()
        # Boolean mask [q, keys] where some query cannot see some gathered key; None when all can
        # (decode: one query, and every gathered key is visible to it).
        allowed = [[kv_window.key_visible(ctx + i, k, W, S) for k in idx] for i in range(q)]
        self.mask = None if all(all(r) for r in allowed) else torch.tensor(allowed, device=device)
        # SDPA's fused kernels take no mask with enable_gqa (a mask with GQA runs the math backend):
        # with a mask, the G query heads of a KV head are folded into the query length instead
        # ([B, K, G * q, d], the mask repeated G times), which the efficient and cuDNN kernels take
        # without copying K or V.
        self.G = H // K
        self.sdpa_layout = "enable_gqa" if self.mask is None or self.G == 1 else "folded_gqa"
        if self.sdpa_layout == "folded_gqa":
            self.mask = self.mask.repeat(self.G, 1)
        self.block_mask = None
        self.device = device

    def sdpa(self, backend):
        t = self.t
        from torch.nn.attention import sdpa_kernel
        F = t.nn.functional

        B, q = self.q.shape[0], self.q.shape[2]

        def run():
            with sdpa_kernel([backend]):
                if self.sdpa_layout == "folded_gqa":
                    out = F.scaled_dot_product_attention(
                        self.q.view(B, self.K, self.G * q, self.d), self.k_vis, self.v_vis,
                        attn_mask=self.mask)
                    return out.view(B, self.H, q, self.d)
                return F.scaled_dot_product_attention(self.q, self.k_vis, self.v_vis,
                                                      attn_mask=self.mask,
                                                      enable_gqa=self.H != self.K)
        return run

    def flex(self, compiled):
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        p = self.p
        if self.block_mask is None:
            self.block_mask = create_block_mask(
                kv_window.mask_mod(p["ctx"], p["window"], p["sinks"]), None, None, p["q_len"],
                p["ctx"] + p["q_len"], device=str(self.device))
        fa = compiled(flex_attention) if compiled else flex_attention

        def run():
            return fa(self.q, self.k_full, self.v_full, block_mask=self.block_mask,
                      enable_gqa=self.H != self.K)
        return run

    def gemms(self):
        t = self.t
        F = t.nn.functional

        def run():
            qkv = self.x @ self.w_qkv
            o = qkv[:, : self.H * self.d] @ self.w_o
            gu = o @ self.w_gu
            g, u = gu.chunk(2, dim=-1)
            return (F.silu(g) * u) @ self.w_d
        return run

    def step(self, attention, layers):
        gemms = self.gemms()

        def run():
            for _ in range(layers):
                attention()
                gemms()
        return run


def sdpa_backend(torch, step):
    """The first SDPA backend, in torch's own preference order, that accepts this shape."""
    from torch.nn.attention import SDPBackend
    order = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
             SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH]
    for b in order:
        try:
            step.sdpa(b)()
            if step.device.type == "cuda":
                torch.cuda.synchronize()
            return b, f"{b.name.lower()} ({step.sdpa_layout})"
        except RuntimeError:
            continue
    raise Unsupported("no SDPA backend accepts this shape")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="moshi")
    ap.add_argument("--grid", default="gpu")
    ap.add_argument("--out", required=True)
    ap.add_argument("--attention", choices=["sdpa", "flex", "both"], default="both")
    ap.add_argument("--dry-run", action="store_true",
                    help="on this machine's CPU: model tiny, grid ci, float32, short timings")
    ap.add_argument("--limit-s", type=float, default=0,
                    help="stop timing new points after this many seconds (0: no limit)")
    a = ap.parse_args()
    # Checked before torch is imported: without torch the run is skipped (77), and a bad argument
    # must not pass for a skip.
    m = load_model(ap, a.model)
    with open(os.path.join(HERE, "grids.json")) as f:
        grids = json.load(f)["grids"]
    if a.grid not in grids:
        ap.error(f"--grid {a.grid}: unknown (known: {', '.join(grids)})")
    if not (math.isfinite(a.limit_s) and a.limit_s >= 0):
        ap.error(f"--limit-s: expected seconds >= 0 (0: no limit), got {a.limit_s:g}")
    out_dir = os.path.dirname(os.path.abspath(a.out))
    if os.path.isdir(a.out) or not os.path.isdir(out_dir) or not os.access(out_dir, os.W_OK):
        ap.error(f"--out {a.out}: expected a file in an existing, writable folder")
    try:
        import torch
    except ImportError:
        print("torch_bench: SKIP: this python has no torch (pip install torch in a venv, or run "
              "on the device machine where it is installed)", file=sys.stderr)
        return SKIP
    if a.dry_run:
        a.model, a.grid = "tiny", "ci"
        m = load_model(ap, a.model)
        device, dtype = torch.device("cpu"), torch.float32
        torch.set_num_threads(1)  # a shared CI core: threads only add contention to the timings
    else:
        if not torch.cuda.is_available():
            print("torch_bench: no CUDA device: nothing timed (use --dry-run on a CPU)",
                  file=sys.stderr)
            return 3
        device, dtype = torch.device("cuda"), torch.bfloat16
    grid = grids[a.grid]
    warmup, reps, min_t = grid["warmup"], grid["repetitions"], grid["min_time_s"]
    if a.dry_run:
        warmup, reps, min_t = 1, 3, 0.005
    timer = Timer(torch, device)
    compiled = torch.compile if device.type == "cuda" else None
    impls = ["sdpa", "flex"] if a.attention == "both" else [a.attention]
    benchmarks, backends = [], {}
    skip_kinds = skippable(torch)
    t_start = time.monotonic()
    for p in grid["points"]:
        name = "torch/" + p["name"]
        if a.limit_s and time.monotonic() - t_start > a.limit_s:
            benchmarks.append({"name": name, "run_name": name, "error_occurred": True,
                               "error_message": f"--limit-s {a.limit_s:g} reached"})
            continue
        try:
            s = Step(torch, m, p, device, dtype)
            layers = m["layers"] if p["kind"] == "step" else 1
            times, backend = {}, None
            if p["kind"] == "gemm":
                times["none"] = timer.median(s.gemms(), warmup, reps, min_t)
            else:
                for impl in impls:
                    if impl == "sdpa":
                        b, backend = sdpa_backend(torch, s)
                        att = s.sdpa(b)
                    else:
                        att = s.flex(compiled)
                    fn = att if p["kind"] == "attention" else s.step(att, layers)
                    times[impl] = timer.median(fn, warmup, reps, min_t)
            best = min(times, key=times.get)
            if backend:
                backends[backend] = backends.get(backend, 0) + 1
            benchmarks.append({
                "name": name + "/median", "run_name": name, "run_type": "aggregate",
                "aggregate_name": "median", "repetitions": reps, "real_time": times[best],
                "cpu_time": times[best], "time_unit": "s",
                "sessions": p["sessions"], "q_len": p["q_len"], "ctx": p["ctx"],
                "window": p["window"], "sinks": p["sinks"], "layers": layers,
                "attention_impl": best, "sdpa_backend": backend,
                "seconds_by_impl": times})
            print(f"torch_bench: {name}: {times[best] * 1e3:.3f} ms ({best}"
                  + (f", sdpa backend {backend}" if backend else "") + ")", file=sys.stderr)
        except skip_kinds as e:  # a shape this machine cannot run: skip it, keep the sweep going
            if device.type == "cuda":
                torch.cuda.empty_cache()
            benchmarks.append({"name": name, "run_name": name, "error_occurred": True,
                               "error_message": f"{type(e).__name__}: {e}"[:400]})
            print(f"torch_bench: {name}: skipped: {type(e).__name__}: {e}"[:300], file=sys.stderr)
    dev = (torch.cuda.get_device_name(0) if device.type == "cuda"
           else platform.processor() or platform.machine())
    ctx = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host_name": socket.gethostname(),
        "metronome_model": a.model,
        "metronome_backend": "gpu" if device.type == "cuda" else "cpu",
        "metronome_device": dev + (" (PyTorch)" if device.type == "cuda" else
                                   " (PyTorch on a CPU: a dry run, not a GPU)"),
        "metronome_driver": "",
        "metronome_cuda_runtime": torch.version.cuda or "",
        "metronome_grid": a.grid,
        "metronome_torch": torch.__version__,
        "metronome_sdpa_backends": backends,
        "metronome_protocol": (
            f"PyTorch {torch.__version__} ({device.type}, {str(dtype).split('.')[-1]}): "
            f"attention by {' and '.join(impls)}"
            + (", the faster kept per shape (attention_impl)" if len(impls) > 1 else "")
            + f"; SDPA backends that ran: {backends or 'none'}; sinks + window from "
            "core/kv_window.h's rule; dense per-step KV (not paged); "
            + ("CUDA events" if device.type == "cuda" else "perf_counter")
            + f", {warmup} warm-ups, median of {reps} repetitions of >= {min_t:g} s"),
    }
    # Through a temporary file: an interrupted write leaves no benchmark JSON that looks complete.
    with open(a.out + ".tmp", "w") as f:
        json.dump({"context": ctx, "benchmarks": benchmarks}, f, indent=1)
        f.write("\n")
    os.replace(a.out + ".tmp", a.out)
    ok = sum(1 for b in benchmarks if not b.get("error_occurred"))
    print(f"torch_bench: {ok} of {len(benchmarks)} points timed -> {a.out}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
