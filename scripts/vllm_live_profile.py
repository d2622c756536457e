#!/usr/bin/env python3
"""Times a running vLLM's steps against their composition, for `metronome calibrate fit`.

The live engine's own step time (scheduling, the forward pass and sampling: what one vLLM iteration
costs) is measured with the step hooks of vllm_live_hooks.py while the profile drives the engine
through AsyncLLM, the serving path of the live runs:
  N requests whose first `ctx` tokens are already cached (an earlier request with the same prefix
  computed them; prefix caching adopts whole blocks) and `q` new tokens each: a prefill chunk, or
  with q = 1 a decode step (one new token on ctx cached ones).
Every step whose requests all share one (q, ctx) is a sample of the grid point (N, q, ctx); points
are visited in a random order, `--reps` times each, and the median per point is written as Google
Benchmark JSON with Metronome's context, which `metronome calibrate fit` reads like any benchmark.

Usage: vllm_live_profile.py --out BENCH.json [--model vllm-tiny] [--reps 5] [--quick]
Exit: 0 done; 1 anything else.
"""

import argparse
import asyncio
import datetime
import json
import os
import platform
import random
import signal
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vllm_live  # noqa: E402  (installs the step hooks in the engine core: see there)

if os.environ.get("METRONOME_LIVE_STEPS") and __name__ == "__mp_main__":
    import vllm_live_hooks

    vllm_live_hooks.install(os.environ["METRONOME_LIVE_STEPS"])

BLOCK = 32
POOL_BLOCKS = 4096
BLOCKER_TOKENS = 2048


def grid(quick):
    sessions = [1, 4, 16] if quick else [1, 2, 4, 8, 16]
    qs = [1, 32, 256] if quick else [1, 16, 64, 256]
    ctxs = [0, 512, 2048] if quick else [0, 256, 1024, 2048]
    pts = []
    for n in sessions:
        for q in qs:
            for c in ctxs:
                if q == 1 and c == 0:
                    continue  # a decode always has its prompt cached
                pts.append((n, q, c))
    return pts


async def profile(args, model_json, steps_path):
    from vllm import SamplingParams
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.inputs import TokensPrompt
    from vllm.sampling_params import RequestOutputKind
    from vllm.v1.engine.async_llm import AsyncLLM

    model_dir = vllm_live.write_model_config(model_json, os.path.join(args.work, "model"))
    engine = AsyncLLM.from_engine_args(AsyncEngineArgs(
        model=model_dir, load_format="dummy", skip_tokenizer_init=True, dtype=args.dtype,
        block_size=BLOCK, num_gpu_blocks_override=POOL_BLOCKS, max_num_seqs=64,
        max_num_batched_tokens=8192, enable_prefix_caching=True,
        max_model_len=8192, seed=0, disable_log_stats=True,
        gpu_memory_utilization=args.gpu_memory_utilization))
    rng = random.Random(1)
    vocab = model_json["vocab_size"]
    counter = [0]

    def ids(n):
        return [rng.randrange(10, vocab) for _ in range(n)]

    async def run(prompt, max_tokens):
        counter[0] += 1
        sp = SamplingParams(max_tokens=max_tokens, min_tokens=max_tokens, ignore_eos=True,
                            temperature=0.0, output_kind=RequestOutputKind.FINAL_ONLY)
        async for _ in engine.generate(TokensPrompt(prompt_token_ids=prompt), sp,
                                       request_id=f"p{counter[0]}"):
            pass

    try:
        for i in range(3):  # warm-up
            await run(ids(64), 4)
        pts = grid(args.quick) * args.reps
        rng.shuffle(pts)
        for k, (n, q, c) in enumerate(pts):
            prefixes = [ids(c) for _ in range(n)]
            if c:
                await asyncio.gather(*(run(p, 1) for p in prefixes))
            # Requests sent one by one reach the engine core between its steps, so a batch would
            # be split over steps. A blocker (one long prefill) holds the engine for a step while
            # the N requests arrive; the step after it takes all N together.
            blocker = asyncio.create_task(run(ids(BLOCKER_TOKENS), 1))
            await asyncio.sleep(0.03)
            await asyncio.gather(blocker, *(run(p + ids(q), 1) for p in prefixes))
            if (k + 1) % 25 == 0:
                print(f"vllm_live_profile: {k + 1}/{len(pts)} points", file=sys.stderr)
        await engine.reset_prefix_cache()
    finally:
        engine.shutdown()


def medians(steps_path, layers):
    by = {}
    with open(steps_path) as f:
        for line in f:
            r = json.loads(line)
            q, c = r["q"], r["c"]
            if not q or len(set(q)) != 1 or len(set(c)) != 1 or r["fail"] or r["pre"]:
                continue
            by.setdefault((len(q), q[0], c[0]), []).append(r["t1"] - r["t0"])
    out = []
    for (n, q, c), ts in sorted(by.items()):
        if len(ts) < 3:
            continue  # a shape seen once or twice (a split batch) is not a measurement
        name = f"step/s:{n}/q:{q}/ctx:{c}/w:-1/sinks:0"
        out.append({"name": name + "_median", "run_name": name, "run_type": "aggregate",
                    "aggregate_name": "median", "repetitions": len(ts),
                    "sessions": n, "q_len": q, "ctx": c, "window": -1, "sinks": 0,
                    "layers": layers, "real_time": statistics.median(ts), "time_unit": "s"})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default=os.path.join(os.path.dirname(__file__), "..",
                                                   "scenarios", "models", "vllm-tiny.json"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.2)
    ap.add_argument("--work", default=None, help="scratch folder (default: beside --out)")
    args = ap.parse_args()
    args.work = args.work or os.path.splitext(args.out)[0] + ".work"
    os.makedirs(args.work, exist_ok=True)
    with open(args.model) as f:
        model_json = json.load(f)
    steps_path = os.path.abspath(os.path.join(args.work, "steps.jsonl"))
    if os.path.exists(steps_path):
        os.remove(steps_path)
    os.environ["METRONOME_LIVE_STEPS"] = steps_path
    load_before = os.getloadavg()[0]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind through engine.shutdown()
    asyncio.run(profile(args, model_json, steps_path))
    import vllm
    bench = medians(steps_path, model_json["layers"])
    doc = {
        "context": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host_name": platform.node(),
            "metronome_model": model_json["name"],
            "metronome_backend": "cpu",
            "metronome_device": f"vLLM {vllm.__version__} CPU backend on {vllm_live.cpu_model()}"
                                f" ({os.environ.get('OMP_NUM_THREADS', '?')} OpenMP thread)",
            "metronome_grid": "live-quick" if args.quick else "live",
            "metronome_protocol": (
                "vLLM engine steps timed in the engine core (vllm_live_hooks.py: schedule() to the "
                "end of update_from_output(), CLOCK_MONOTONIC), driven through AsyncLLM with dummy "
                f"weights ({args.dtype}); steps whose requests share one (q, ctx); median of at "
                f"least 3 per shape; {args.reps} repetitions in random order; load average "
                f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after"),
        },
        "benchmarks": bench,
    }
    vllm_live.write_atomically(args.out, lambda f: f.write(json.dumps(doc, indent=1) + "\n"))
    print(f"vllm_live_profile: {len(bench)} shapes in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
