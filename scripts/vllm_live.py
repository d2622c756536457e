#!/usr/bin/env python3
"""Drives a running vLLM in wall-clock time with a Metronome scenario, as a serving layer would.

Two engines:
  self-contained (default): vLLM's AsyncLLM in this process with its engine core in a child process
      (the serving path of `vllm serve`), dummy weights from a local config.json, the scenario's pool
      (num_gpu_blocks_override = engine.num_blocks), block size, max_num_seqs,
      max_num_batched_tokens, prefix caching and sliding window (kv_policy windowed, sinks 0).
  endpoint (--endpoint URL): a user's own `vllm serve` over HTTP (/v1/completions with token ids,
      /metrics); per-frame requests only, since streaming-input sessions are not on the HTTP API.

Sessions follow the scenario: fixed_interval or all_at_once arrivals, fixed call lengths, a frame of
input_tokens_per_frame every frame_period_s, answered with output_tokens_per_frame sampled tokens.
  resumable: one streaming-input request per session (AsyncLLM.generate over an async generator of
      StreamingInput); each frame is one chunk; the session keeps its KV between frames.
  per_frame_request: each frame is a new request whose prompt is the whole history (earlier inputs
      and outputs and this frame's input); the next is sent when the frame is released and the
      previous one has finished (one request per session in the engine at a time).
A caller hangs up at arrival + call length: its request is aborted (its blocks go back).

Records (the run's own books; `metronome book` turns them into summary.json and
timeseries.csv with the simulator's FrameLedger):
  frames.csv   session, frame, release_s, submit_s, first_token_s, done_s, tokens
  metrics.csv  every sample_period_s: what the engine's Prometheus endpoint says at that instant
               (vllm:kv_cache_usage_perc, num_requests_running/waiting, num_preemptions_total)
  run.json     vLLM version, machine, load, the driver's lateness (how far behind the wall clock
               its releases ran), wall time, and whether the run kept real time

A call that ends in an error (the engine's, or an HTTP error from the server) is not a frame the
engine left unanswered: the run goes on to the horizon, its records are written, run.json lists the
errors (call_errors, call_errors_first) with a NOT VALID verdict, and the exit status is 1. Calls
cancelled at their hang-up or at the horizon are the plan, not errors.

Usage: vllm_live.py --scenario RESOLVED.json --out DIR [--model-dir DIR] [--endpoint URL] [--check]
  --check  only check the scenario (before vLLM is imported) and exit
Exit: 0 done (valid or not: run.json says), 2 bad input, 1 a call failed, or anything else.
"""

import argparse
import asyncio
import csv
import datetime
import json
import math
import os
import platform
import random
import signal
import sys
import time

from atomic_file import write_atomically

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("PYTHONHASHSEED", "0")

# vLLM's CPU platform starts its engine core by spawn, which imports this file again in the child
# as __mp_main__: the step hooks (vllm_live_hooks.py) are installed there, where the scheduler runs.
if os.environ.get("METRONOME_LIVE_STEPS") and __name__ == "__mp_main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import vllm_live_hooks

    vllm_live_hooks.install(os.environ["METRONOME_LIVE_STEPS"])

# A release later than this behind its wall-clock instant means the driver, not the engine, set
# the timing: the run is then marked not real time.
MAX_LATENESS_S = 0.010
# Fraction of releases that may be later than MAX_LATENESS_S before the run is invalid.
MAX_LATE_FRACTION = 0.01


class InputError(Exception):
    pass


KINDS = {"number": "a finite number", "int": "an integer", "str": "a string",
         "bool": "true or false", "object": "an object"}


def need(obj, path, key, kind, source, least=None, above=None):
    """obj[key] checked as the driver uses it: of its kind, finite, at least `least` or above
    `above` (a frame period of 0 or a NaN horizon would never end a loop of the run)."""
    if key not in obj:
        raise InputError(f"{source}: field '{path}{key}': missing")
    v = obj[key]
    if kind == "number":
        ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
    elif kind == "int":
        ok = not isinstance(v, bool) and isinstance(v, int)
    else:
        ok = isinstance(v, {"str": str, "bool": bool, "object": dict}[kind])
    want = KINDS[kind]
    if ok and least is not None and v < least:
        ok, want = False, f"{want} of at least {least}"
    if ok and above is not None and v <= above:
        ok, want = False, f"{want} above {above}"
    if not ok:
        got = repr(v) if len(repr(v)) <= 40 else f"a {type(v).__name__}"
        raise InputError(f"{source}: field '{path}{key}': expected {want}, got {got}")
    return v


class Plan:
    """What the driver does, read from a resolved scenario (`metronome simulate --out` writes one).
    Every field is checked here, before vLLM is imported, so bad input costs no engine start-up."""

    def __init__(self, s, source):
        if not isinstance(s, dict):
            raise InputError(f"{source}: expected a JSON object (a resolved scenario), got a "
                             f"{type(s).__name__}")
        e = need(s, "", "engine", "object", source)
        w = need(s, "", "workload", "object", source)
        kv = need(s, "", "kv_policy", "object", source)
        self.name = need(s, "", "name", "str", source)
        self.seed = need(s, "", "seed", "int", source)
        self.horizon = need(s, "", "horizon_s", "number", source, above=0)
        out = need(s, "", "output", "object", source)
        self.sample_period = need(out, "output.", "sample_period_s", "number", source, above=0)
        self.block_size = need(e, "engine.", "block_size", "int", source, least=32)
        if self.block_size % 32:
            raise InputError(f"{source}: field 'engine.block_size': expected a multiple of 32 "
                             f"(vLLM's CPU attention), got {self.block_size}")
        if "num_blocks" not in e:
            raise InputError(f"{source}: field 'engine.num_blocks': a live run needs an explicit "
                             "pool size (the CPU engine's memory is not a GPU's)")
        # At least vLLM's null block and one usable block.
        self.num_blocks = need(e, "engine.", "num_blocks", "int", source, least=2)
        if e.get("scheduler") != "vllm_v1":
            raise InputError(f"{source}: field 'engine.scheduler': expected \"vllm_v1\" (a live "
                             f"run is vLLM's scheduler), got {e.get('scheduler')!r}")
        self.max_num_seqs = need(e, "engine.", "max_num_seqs", "int", source, least=1)
        self.max_batched = need(e, "engine.", "max_num_batched_tokens", "int", source, least=1)
        self.session_model = need(e, "engine.", "session_model", "str", source)
        if self.session_model not in ("resumable", "per_frame_request"):
            raise InputError(f"{source}: field 'engine.session_model': expected resumable or "
                             f"per_frame_request, got {self.session_model!r}")
        self.prefix_caching = (need(e, "engine.", "enable_prefix_caching", "bool", source)
                               if "enable_prefix_caching" in e else True)
        self.kv_type = need(kv, "kv_policy.", "type", "str", source)
        self.window = None
        if self.kv_type == "windowed":
            self.window = need(kv, "kv_policy.", "window_tokens", "int", source, least=1)
            if kv.get("sink_tokens", 0) != 0:
                raise InputError(f"{source}: field 'kv_policy.sink_tokens': expected 0 on a live "
                                 "vLLM (0.32 has no sink-keeping KV manager for streaming "
                                 "sessions; docs/live.md)")
        elif self.kv_type != "unbounded":
            raise InputError(f"{source}: field 'kv_policy.type': expected unbounded or windowed")
        arr = need(w, "workload.", "arrival", "object", source)
        self.arrival_type = need(arr, "workload.arrival.", "type", "str", source)
        self.start = (need(arr, "workload.arrival.", "start_s", "number", source, least=0)
                      if "start_s" in arr else 0.0)
        if self.arrival_type == "all_at_once":
            self.sessions = need(arr, "workload.arrival.", "sessions", "int", source, least=1)
            self.interval = 0.0
        elif self.arrival_type == "fixed_interval":
            self.sessions = need(arr, "workload.arrival.", "sessions", "int", source, least=1)
            self.interval = need(arr, "workload.arrival.", "interval_s", "number", source, above=0)
        else:
            raise InputError(f"{source}: field 'workload.arrival.type': expected all_at_once or "
                             f"fixed_interval on a live run (the simulator's random streams are "
                             f"not replayed here), got {self.arrival_type!r}")
        dur = need(w, "workload.", "duration", "object", source)
        if dur.get("type") != "fixed":
            raise InputError(f"{source}: field 'workload.duration.type': expected fixed on a live "
                             "run")
        self.call = need(dur, "workload.duration.", "seconds", "number", source, above=0)
        self.period = need(w, "workload.", "frame_period_s", "number", source, above=0)
        # A live frame needs at least one input and one output token.
        self.n_in = need(w, "workload.", "input_tokens_per_frame", "int", source, least=1)
        self.n_out = need(w, "workload.", "output_tokens_per_frame", "int", source, least=1)
        self.prompt = need(w, "workload.", "prompt_tokens", "int", source, least=0)
        # frame_jitter_s is how late frames reach the engine in the simulation of a live run (the
        # serving path's delivery spread); the live path has its own, so the driver adds none.
        self.admission = (need(s, "", "admission", "object", source) if "admission" in s
                          else {"type": "none"})
        if self.admission.get("type", "none") != "none":
            if self.session_model != "resumable":
                raise InputError(f"{source}: field 'admission.type': a live run admits callers "
                                 "only with engine.session_model resumable")
            if self.admission.get("memory_guard", "auto") != "off":
                raise InputError(f"{source}: field 'admission.memory_guard': expected \"off\" on "
                                 "a live run (the driver applies the controller alone)")
            if self.admission.get("join", "arrival") != "arrival":
                raise InputError(f"{source}: field 'admission.join': expected \"arrival\" on a "
                                 "live run")
            need(self.admission, "admission.", "interval_s", "number", source, above=0)
            if "quantile" in self.admission:
                q = need(self.admission, "admission.", "quantile", "number", source, above=0)
                if q > 1:
                    raise InputError(f"{source}: field 'admission.quantile': expected a number "
                                     f"in (0, 1], got {q!r}")
        self.silence = need(e, "engine.", "silence_after_s", "number", source, above=0)
        self.model = need(s, "", "model", "object", source)
        if self.model.get("experts", 0):
            raise InputError(f"{source}: field 'model.experts': expected 0 (a live run's model is "
                             "a dense Llama)")
        for k in ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim", "ffn_size"):
            need(self.model, "model.", k, "int", source, least=1)
        # Token ids are drawn above the special tokens (token_ids).
        self.vocab = need(self.model, "model.", "vocab_size", "int", source, least=11)

    def arrivals(self):
        return [self.start + i * self.interval for i in range(self.sessions)]

    def frames_of(self, arrival):
        """Release instants of one caller's frames due by the horizon: released before the caller
        hangs up and at or before the horizon, as the simulator counts frames due."""
        out, k = [], 0
        while (arrival + k * self.period < arrival + self.call
               and arrival + k * self.period <= self.horizon):
            out.append(arrival + k * self.period)
            k += 1
        return out


class Clock:
    def __init__(self):
        self.t0 = time.monotonic()

    def now(self):
        return time.monotonic() - self.t0

    async def until(self, t):
        d = t - self.now()
        if d > 0:
            await asyncio.sleep(d)
        return self.now() - t  # lateness


class Books:
    def __init__(self):
        self.frames = {}  # (session, frame) -> record
        self.lateness = []
        self.errors = []  # exceptions calls ended with (hang_up_at)

    @staticmethod
    def got_tokens(rec, n, t, n_out):
        """`n` output tokens of a frame reached the driver at `t`."""
        if n and rec["first_token_s"] is None:
            rec["first_token_s"] = t
        rec["tokens"] += n
        if rec["tokens"] >= n_out and rec["done_s"] is None:
            rec["done_s"] = t

    def frame(self, s, k, release):
        r = {"session": s, "frame": k, "release_s": release, "submit_s": None,
             "first_token_s": None, "done_s": None, "tokens": 0}
        self.frames[(s, k)] = r
        return r


class Gate:
    """Admission at the serving layer: the scenario's controller, run by `metronome admit` (the
    object the simulator's engine runs), fed each control interval's latency signal as the
    simulator's FrameLedger defines it: the admission.quantile over the frames answered within
    silence_after_s in the interval and the frames whose silence deadline passed unanswered in it
    (at silence_after_s for the reported signal, censored for the true one)."""

    def __init__(self, plan, metronome, scenario_path):
        import subprocess
        self.plan, self.live, self.rejected, self.log = plan, 0, 0, []
        self.cap = -1
        self.proc = None
        if plan.admission.get("type", "none") != "none":
            try:
                self.proc = subprocess.Popen([metronome, "admit", "--scenario", scenario_path],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             text=True)
                self.cap = self.read_cap()
            except (OSError, RuntimeError) as e:
                raise InputError(f"--metronome {metronome}: `admit` did not start: {e}")

    def read_cap(self):
        line = self.proc.stdout.readline()
        if not line:  # admit's own message is on stderr, above
            raise RuntimeError(f"metronome admit ended (exit {self.proc.wait()})")
        return json.loads(line)["cap"]

    def admit(self):
        if self.cap >= 0 and self.live >= self.cap:
            self.rejected += 1
            return False
        self.live += 1
        return True

    def leave(self):
        self.live -= 1

    def signal(self, books, t):
        a, p = self.plan.admission, self.plan
        lo = t - a["interval_s"]
        lat = []
        for f in books.frames.values():
            done, rel = f["done_s"], f["release_s"]
            if done is not None and lo < done <= t and done - rel <= p.silence:
                lat.append(done - rel)
            elif lo < rel + p.silence <= t and (done is None or done - rel > p.silence):
                lat.append(p.silence if a.get("signal", "reported") == "reported" else math.inf)
        if not lat:
            return None, 0
        lat.sort()
        k = max(0, min(len(lat) - 1, math.ceil(a.get("quantile", 0.95) * len(lat)) - 1))
        return lat[k], len(lat)

    async def control(self, books, clock):
        if self.proc is None:
            return
        a = self.plan.admission
        k = 1
        while k * a["interval_s"] <= self.plan.horizon + 1e-9:
            await clock.until(k * a["interval_s"])
            t = k * a["interval_s"]
            q, n = self.signal(books, t)
            line = {"now_s": t, "latency_ms": (None if q is not None and math.isinf(q)
                                               else 1e3 * (q or 0.0)),
                    "frames": n, "live": self.live}
            self.proc.stdin.write(json.dumps(line) + "\n")
            self.proc.stdin.flush()
            self.cap = self.read_cap()
            self.log.append({"t_s": t, "signal_ms": line["latency_ms"], "frames": n,
                             "live": self.live, "cap": self.cap, "rejected": self.rejected})
            k += 1

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)


def token_ids(rng, vocab, n):
    # Ids above the special tokens; distinct sessions draw from their own generator, so no two
    # sessions share a prefix-cache block by content.
    return [rng.randrange(10, vocab) for _ in range(n)]


# ---------------------------------------------------------------------------------------------
# Self-contained engine: AsyncLLM


async def run_resumable_session(engine, plan, books, clock, s, arrival, sp_factory, gate):
    releases = plan.frames_of(arrival)
    if not releases:
        return
    await clock.until(arrival)
    if not gate.admit():
        return  # turned away: a rejected caller's frames are not due
    try:
        await resumable_call(engine, plan, books, clock, s, arrival, sp_factory, releases)
    finally:
        gate.leave()


async def resumable_call(engine, plan, books, clock, s, arrival, sp_factory, releases):
    from vllm.engine.protocol import StreamingInput
    from vllm.inputs import TokensPrompt

    rng = random.Random(plan.seed * 1_000_003 + s)
    records = [books.frame(s, k, r) for k, r in enumerate(releases)]
    hang_up = arrival + plan.call

    async def chunks():
        for k, r in enumerate(releases):
            late = await clock.until(r)
            books.lateness.append(late)
            ids = token_ids(rng, plan.vocab, plan.n_in + (plan.prompt if k == 0 else 0))
            records[k]["submit_s"] = clock.now()
            yield StreamingInput(prompt=TokensPrompt(prompt_token_ids=ids),
                                 sampling_params=sp_factory())
        # Keep the stream open until the caller hangs up: closing it would end the session early.
        await clock.until(min(hang_up, plan.horizon))

    got = 0

    async def consume():
        nonlocal got
        async for out in engine.generate(prompt=chunks(), sampling_params=sp_factory(),
                                         request_id=f"s{s}"):
            t = clock.now()
            n = len(out.outputs[0].token_ids) if out.outputs else 0
            for _ in range(n):
                if got // plan.n_out < len(records):
                    Books.got_tokens(records[got // plan.n_out], 1, t, plan.n_out)
                got += 1

    task = asyncio.create_task(consume())
    try:
        await clock.until(min(hang_up, plan.horizon))
        if not task.done():
            await engine.abort(f"s{s}")
    finally:
        # Also when the horizon cancels this call first: how the stream ended is read either way.
        task.cancel()
        await asyncio.wait([task])
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # an engine error: the call failed (hang_up_at counts it)


async def run_per_frame_session(submit, plan, books, clock, s, arrival):
    await clock.until(arrival)
    releases = plan.frames_of(arrival)
    records = [books.frame(s, k, r) for k, r in enumerate(releases)]
    rng = random.Random(plan.seed * 1_000_003 + s)
    history = []
    hang_up = min(arrival + plan.call, plan.horizon)
    for k, r in enumerate(releases):
        if clock.now() >= hang_up:
            break
        if clock.now() < r:  # a timer the driver sleeps on: its overshoot is the driver's
            books.lateness.append(await clock.until(r))
        history += token_ids(rng, plan.vocab, plan.n_in + (plan.prompt if k == 0 else 0))
        records[k]["submit_s"] = clock.now()
        try:
            out = await asyncio.wait_for(submit(f"s{s}f{k}", list(history), records[k]),
                                         timeout=max(0.0, hang_up - clock.now()))
        except asyncio.TimeoutError:
            if clock.now() < hang_up - 1e-3:
                raise  # the engine's or the server's own timeout, not the caller hanging up
            break
        history += out


async def hang_up_at(clock, horizon, calls):
    """At the horizon, cancels the calls still running and waits until each has ended. Returns
    the errors calls ended with: a call cancelled here hung up as planned, but any other exception
    (an engine error, the server's HTTP 500) is a failed call, not a frame left unanswered."""
    await clock.until(horizon)
    for c in calls:
        if not c.done():
            c.cancel()
    ended = await asyncio.gather(*calls, return_exceptions=True)
    return [e for e in ended if isinstance(e, Exception)]


async def self_contained(plan, args, books, clock_box, gate):
    from vllm import SamplingParams
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.inputs import TokensPrompt
    from vllm.sampling_params import RequestOutputKind
    from vllm.v1.engine.async_llm import AsyncLLM

    model_dir = args.model_dir or write_model_config(plan.model, os.path.join(args.out, "model"))
    os.environ["METRONOME_LIVE_STEPS"] = os.path.abspath(os.path.join(args.out, "steps.jsonl"))
    hf_overrides = {}
    if plan.window is not None:
        # vLLM's sliding window counts the query: W earlier tokens kept is sliding_window W + 1.
        hf_overrides["sliding_window"] = plan.window + 1
    # vLLM refuses a max_model_len whose one request would not fit the pool under full attention.
    max_len = args.max_model_len
    if plan.window is None:
        max_len = min(max_len, (plan.num_blocks - 1) * plan.block_size)
    eargs = AsyncEngineArgs(
        model=model_dir, load_format="dummy", skip_tokenizer_init=True, dtype=args.dtype,
        block_size=plan.block_size, num_gpu_blocks_override=plan.num_blocks,
        max_num_seqs=plan.max_num_seqs, max_num_batched_tokens=plan.max_batched,
        enable_prefix_caching=plan.prefix_caching, max_model_len=max_len, seed=plan.seed,
        hf_overrides=hf_overrides, disable_log_stats=False,
        gpu_memory_utilization=args.gpu_memory_utilization,
    )
    engine = AsyncLLM.from_engine_args(eargs)
    try:
        def sp():
            return SamplingParams(max_tokens=plan.n_out, min_tokens=plan.n_out, ignore_eos=True,
                                  temperature=0.0, output_kind=RequestOutputKind.DELTA)

        # Warm-up outside the clock: the first forward passes compile and allocate.
        for i in range(3):
            async for _ in engine.generate(TokensPrompt(prompt_token_ids=[11 + i] * 40), sp(),
                                           request_id=f"warm{i}"):
                pass
        await engine.reset_prefix_cache()
        clock = Clock()
        clock_box.append(clock)
        sampler = asyncio.create_task(sample_metrics(plan, clock, books, prom_local))
        controller = asyncio.create_task(gate.control(books, clock))
        tasks = []
        if plan.session_model == "resumable":
            for s, a in enumerate(plan.arrivals()):
                tasks.append(asyncio.create_task(
                    run_resumable_session(engine, plan, books, clock, s, a, sp, gate)))
        else:
            async def submit(rid, prompt, rec):
                outs = []
                async for out in engine.generate(TokensPrompt(prompt_token_ids=prompt), sp(),
                                                 request_id=rid):
                    new = list(out.outputs[0].token_ids) if out.outputs else []
                    outs += new
                    Books.got_tokens(rec, len(new), clock.now(), plan.n_out)
                return outs

            for s, a in enumerate(plan.arrivals()):
                tasks.append(asyncio.create_task(
                    run_per_frame_session(submit, plan, books, clock, s, a)))
        books.errors = await hang_up_at(clock, plan.horizon, tasks)
        await sampler
        await controller
        return engine_info_local(engine, plan)
    finally:
        engine.shutdown()


def write_model_config(m, folder):
    """A LlamaForCausalLM config.json with the scenario model's shapes (dummy weights: no hub)."""
    if m.get("experts", 0):  # Plan refuses these first; vllm_live_profile.py has no Plan
        raise InputError("model: a live run's model is a dense Llama; experts are not supported")
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "num_hidden_layers": m["layers"], "hidden_size": m["hidden_size"],
        "num_attention_heads": m["attention_heads"], "num_key_value_heads": m["kv_heads"],
        "head_dim": m["head_dim"], "intermediate_size": m["ffn_size"],
        "vocab_size": m["vocab_size"], "max_position_embeddings": 65536,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
        "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "bos_token_id": 1, "eos_token_id": 2,
    }
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    return folder


def prom_local():
    from prometheus_client import REGISTRY, generate_latest
    return generate_latest(REGISTRY).decode()


def engine_info_local(engine, plan):
    import vllm
    return {"vllm_version": vllm.__version__, "mode": "self-contained",
            "engine": "AsyncLLM (engine core in a child process)"}


# ---------------------------------------------------------------------------------------------
# Endpoint mode: a user's `vllm serve` over HTTP


async def endpoint(plan, args, books, clock_box, gate):
    import aiohttp

    base = args.endpoint.rstrip("/")
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as http:
        try:
            async with http.get(base + "/v1/models") as r:
                r.raise_for_status()
                models = (await r.json())["data"]
            model = args.served_model or models[0]["id"]
        except (aiohttp.ClientError, ValueError, LookupError, TypeError) as e:
            raise InputError(f"--endpoint {args.endpoint}: expected a vLLM server listing its "
                             f"models at /v1/models: {e}")

        async def prom():
            async with http.get(base + "/metrics") as r:
                return await r.text()

        clock = Clock()
        clock_box.append(clock)

        async def submit(rid, prompt, rec):
            body = {"model": model, "prompt": prompt, "max_tokens": plan.n_out,
                    "min_tokens": plan.n_out, "ignore_eos": True, "temperature": 0.0,
                    "stream": True, "return_token_ids": True}
            outs = []
            async with http.post(base + "/v1/completions", json=body) as r:
                if r.status != 200:
                    raise RuntimeError(f"{base}/v1/completions: HTTP {r.status}: "
                                       f"{(await r.text())[:300]}")
                async for line in r.content:
                    line = line.strip()
                    if not line.startswith(b"data:") or line == b"data: [DONE]":
                        continue
                    new = json.loads(line[5:])["choices"][0].get("token_ids") or []
                    outs += new
                    Books.got_tokens(rec, len(new), clock.now(), plan.n_out)
            return outs

        sampler = asyncio.create_task(sample_metrics_async(plan, clock, books, prom))
        tasks = [asyncio.create_task(run_per_frame_session(submit, plan, books, clock, s, a))
                 for s, a in enumerate(plan.arrivals())]
        books.errors = await hang_up_at(clock, plan.horizon, tasks)
        await sampler
    return {"vllm_version": "server at " + base, "mode": "endpoint", "engine": model}


# ---------------------------------------------------------------------------------------------
# Prometheus samples

WANTED = {
    "vllm:kv_cache_usage_perc": "kv_cache_usage_perc",
    "vllm:num_requests_running": "num_requests_running",
    "vllm:num_requests_waiting": "num_requests_waiting",
    "vllm:num_preemptions": "num_preemptions_total",
}


def parse_prom(text):
    from prometheus_client.parser import text_string_to_metric_families
    got = {}
    for fam in text_string_to_metric_families(text):
        for smp in fam.samples:
            key = smp.name[:-len("_total")] if smp.name.endswith("_total") else smp.name
            if key in WANTED:
                got[WANTED[key]] = got.get(WANTED[key], 0.0) + smp.value
    return got


async def sample_metrics(plan, clock, books, read):
    await sample_metrics_async(plan, clock, books, lambda: asyncio.sleep(0, read()))


async def sample_metrics_async(plan, clock, books, read):
    books.metrics = []
    k = 1
    while k * plan.sample_period <= plan.horizon + 1e-9:
        await clock.until(k * plan.sample_period)
        row = {"t_s": round(k * plan.sample_period, 6), "read_at_s": clock.now()}
        row.update(parse_prom(await read()))
        books.metrics.append(row)
        k += 1


# ---------------------------------------------------------------------------------------------


def write_csv(path, cols, rows):
    def write(f):
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([fmt(r.get(c)) for c in cols])
    write_atomically(path, write)


def write_outputs(plan, args, books, info, wall_s, load_before, load_after, gate):
    """The records, run.json last: a folder without run.json is a run that did not finish."""
    os.makedirs(args.out, exist_ok=True)
    write_csv(os.path.join(args.out, "frames.csv"),
              ["session", "frame", "release_s", "submit_s", "first_token_s", "done_s", "tokens"],
              [books.frames[key] for key in sorted(books.frames)])
    write_csv(os.path.join(args.out, "metrics.csv"),
              ["t_s", "read_at_s", "kv_cache_usage_perc", "num_requests_running",
               "num_requests_waiting", "num_preemptions_total"], getattr(books, "metrics", []))
    if gate.log:
        write_csv(os.path.join(args.out, "admission.csv"),
                  ["t_s", "signal_ms", "frames", "live", "cap", "rejected"], gate.log)
    late = sorted(books.lateness)
    n_late = sum(1 for x in late if x > MAX_LATENESS_S)
    real_time = bool(late) and n_late <= MAX_LATE_FRACTION * len(late)
    errors = [f"{type(e).__name__}: {e}"[:300] for e in books.errors]
    if errors:
        verdict = (f"NOT VALID: {len(errors)} call(s) failed with an error (first: "
                   f"{errors[0]}): their unanswered frames are not the engine's silence")
    elif real_time:
        verdict = "valid: the driver kept real time"
    else:
        verdict = (f"NOT VALID: {n_late} of {len(late)} releases were more than "
                   f"{MAX_LATENESS_S * 1e3:.0f} ms late (the machine was too busy to keep real "
                   "time)")
    run = dict(info)
    run.update({
        "scenario": plan.name,
        # What vLLM was started with: book checks a scenario's pool against it.
        "engine_config": {"num_gpu_blocks": plan.num_blocks, "block_size": plan.block_size,
                          "max_num_seqs": plan.max_num_seqs,
                          "max_num_batched_tokens": plan.max_batched,
                          "kept_window_tokens": plan.window,
                          "enable_prefix_caching": plan.prefix_caching},
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()} {cpu_model()}, {os.cpu_count()} cores",
        "load_average_before": load_before, "load_average_after": load_after,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "sessions_arrived": len(plan.arrivals()), "sessions_rejected": gate.rejected,
        "dtype": args.dtype,
        "wall_s": round(wall_s, 3),
        "releases": len(late),
        "release_lateness_p50_ms": round(1e3 * late[len(late) // 2], 3) if late else None,
        "release_lateness_p99_ms": round(1e3 * late[min(len(late) - 1, int(0.99 * len(late)))], 3)
        if late else None,
        "release_lateness_max_ms": round(1e3 * late[-1], 3) if late else None,
        "releases_late": n_late,
        "late_threshold_ms": MAX_LATENESS_S * 1e3,
        "real_time": real_time,
        "verdict": verdict,
    })
    if errors:
        run.update({"call_errors": len(errors), "call_errors_first": errors[:5]})
    write_atomically(os.path.join(args.out, "run.json"),
                     lambda f: f.write(json.dumps(run, indent=2) + "\n"))
    return run


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6f}"
    return str(v)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", required=True, help="resolved scenario JSON")
    ap.add_argument("--out", required=True, help="folder for frames.csv, metrics.csv, run.json")
    ap.add_argument("--model-dir", help="a model folder for vLLM (default: a config.json of the "
                    "scenario's model, dummy weights)")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--max-model-len", type=int, default=32768)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.2,
                    help="on vLLM's CPU backend, the fraction of the NUMA node's memory it may "
                    "reserve (its check, not the pool: the pool is engine.num_blocks)")
    ap.add_argument("--endpoint", help="URL of a running vLLM server (endpoint mode)")
    ap.add_argument("--metronome", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                       "metronome"),
                    help="the metronome binary whose `admit` runs the admission controller")
    ap.add_argument("--served-model", help="model name on the server (default: its first)")
    ap.add_argument("--check", action="store_true",
                    help="check the scenario and exit (vllm_live.sh, before it builds the venv)")
    args = ap.parse_args()
    try:
        try:
            with open(args.scenario) as f:
                doc = json.load(f)
        except OSError as e:
            raise InputError(f"{args.scenario}: cannot read ({e.strerror})")
        except ValueError as e:
            raise InputError(f"{args.scenario}: not JSON ({e})")
        plan = Plan(doc, args.scenario)
        if args.endpoint and plan.admission.get("type", "none") != "none":
            raise InputError(f"{args.scenario}: field 'admission.type': expected none with "
                             "--endpoint (admission drives resumable sessions, which the HTTP API "
                             "does not have)")
        if args.endpoint and plan.session_model != "per_frame_request":
            raise InputError(f"{args.scenario}: field 'engine.session_model': expected "
                             "per_frame_request with --endpoint (streaming-input sessions are not "
                             "on vLLM's HTTP API)")
        if args.check:
            return 0
        try:
            os.makedirs(args.out, exist_ok=True)
        except OSError as e:
            raise InputError(f"--out {args.out}: cannot create ({e.strerror})")
    except InputError as e:
        print(f"vllm_live: {e}", file=sys.stderr)
        return 2
    import importlib.util
    wanted = ["aiohttp", "prometheus_client"] if args.endpoint else ["vllm"]
    missing = [m for m in wanted if importlib.util.find_spec(m) is None]
    if missing:
        print(f"vllm_live: {', '.join(missing)} not importable by {sys.executable}: run it with "
              "the venv of scripts/vllm_cpu_venv.sh (scripts/vllm_live.sh does)", file=sys.stderr)
        return 1
    # A stopped driver must stop its engine: SIGTERM unwinds through engine.shutdown() (a killed
    # parent would leave vLLM's engine core and worker running, and every later run sharing the
    # CPU with them).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    books = Books()
    clock_box = []
    load_before = os.getloadavg()[0]
    t = time.monotonic()
    try:
        runner = endpoint if args.endpoint else self_contained
        gate = Gate(plan, args.metronome, args.scenario)
        try:
            info = asyncio.run(runner(plan, args, books, clock_box, gate))
        finally:
            gate.close()
    except InputError as e:
        print(f"vllm_live: {e}", file=sys.stderr)
        return 2
    wall = time.monotonic() - t
    if clock_box:
        info["clock_origin_monotonic_s"] = round(clock_box[0].t0, 6)
    run = write_outputs(plan, args, books, info, wall, load_before, os.getloadavg()[0], gate)
    print(f"vllm_live: {plan.name}: {len(books.frames)} frames recorded in {run['wall_s']} s; "
          f"{run['verdict']}", file=sys.stderr)
    # A failed call fails the run: its records are kept for reading, but nothing should book them.
    return 1 if books.errors else 0


if __name__ == "__main__":
    sys.exit(main())
