#!/usr/bin/env python3
"""Replays Metronome vLLM-peer cases through vLLM V1's real Scheduler and KVCacheManager.

No GPU, no weights, no network: the Scheduler is built directly from a VllmConfig whose
ModelConfig reads a tiny Llama config.json written to a temporary directory, with a KVCacheConfig
of the case's block count, and each step's model output is faked (one sampled token for every
scheduled request whose known tokens are all computed). Case format, driver and golden format:
tests/sim/vllm/FORMAT.md.

Usage: vllm_peer.py --cases DIR --out DIR [--date YYYY-MM-DD] [--check] [NAME ...]
"""

import argparse
import datetime
import json
import os
import sys
import tempfile

from atomic_file import write_atomically

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
# Block hashes then do not depend on a per-process random seed (prefix-cache hits are by content).
os.environ.setdefault("PYTHONHASHSEED", "0")

# A vocabulary large enough for 1000 token ids per session (see token_id below).
VOCAB = 32000
MAX_SESSIONS = (VOCAB - 10) // 1000
MAX_MODEL_LEN = 8192

CASE_KEYS = {
    "name", "comment", "block_size", "num_gpu_blocks", "max_num_seqs", "max_num_batched_tokens",
    "enable_prefix_caching", "kv", "session_model", "steps", "sessions",
}
SESSION_KEYS = {
    "arrival_step", "frames", "period_steps", "prompt_tokens", "input_tokens", "output_tokens",
    "depart_step",
}


class CaseError(Exception):
    pass


def fail(path, field, expected):
    raise CaseError(f"{path}: field '{field}': expected {expected}")


def check_int(path, obj, key, lo, what=None):
    v = obj.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < lo:
        fail(path, key, what or f"an integer >= {lo}")
    return v


def load_case(path):
    with open(path) as f:
        case = json.load(f)
    if not isinstance(case, dict):
        fail(path, "<root>", "a JSON object")
    for k in case:
        if k not in CASE_KEYS:
            fail(path, k, f"one of {sorted(CASE_KEYS)} (unknown key)")
    for k in CASE_KEYS:
        if k not in case:
            fail(path, k, "present")
    check_int(path, case, "block_size", 1)
    check_int(path, case, "num_gpu_blocks", 2)
    check_int(path, case, "max_num_seqs", 1)
    check_int(path, case, "max_num_batched_tokens", 1)
    check_int(path, case, "steps", 1)
    if not isinstance(case["enable_prefix_caching"], bool):
        fail(path, "enable_prefix_caching", "true or false")
    if case["session_model"] not in ("resumable", "per_frame_request"):
        fail(path, "session_model", '"resumable" or "per_frame_request"')
    kv = case["kv"]
    if not isinstance(kv, dict) or kv.get("type") not in ("full", "sliding_window", "sinks"):
        fail(path, "kv.type", '"full", "sliding_window" or "sinks"')
    allowed = {"full": {"type"}, "sliding_window": {"type", "sliding_window"},
               "sinks": {"type", "sink_tokens", "sliding_window"}}[kv["type"]]
    for k in kv:
        if k not in allowed:
            fail(path, f"kv.{k}", f"one of {sorted(allowed)} for kv.type {kv['type']}")
    if kv["type"] != "full":
        check_int(path, kv, "sliding_window", 2, "an integer >= 2 (kv.sliding_window)")
    if kv["type"] == "sinks":
        check_int(path, kv, "sink_tokens", 1, "an integer >= 1 (kv.sink_tokens)")
    sessions = case["sessions"]
    if not isinstance(sessions, list) or not 1 <= len(sessions) <= MAX_SESSIONS:
        fail(path, "sessions", f"a list of 1..{MAX_SESSIONS} sessions")
    for i, s in enumerate(sessions):
        sp = f"{path} sessions[{i}]"
        if not isinstance(s, dict):
            fail(sp, "<session>", "an object")
        for k in s:
            if k not in SESSION_KEYS:
                fail(sp, k, f"one of {sorted(SESSION_KEYS)} (unknown key)")
        check_int(sp, s, "arrival_step", 0)
        check_int(sp, s, "frames", 1)
        check_int(sp, s, "period_steps", 1)
        check_int(sp, s, "prompt_tokens", 0)
        check_int(sp, s, "input_tokens", 0)
        check_int(sp, s, "output_tokens", 1)
        if s["prompt_tokens"] + s["input_tokens"] < 1:
            fail(sp, "prompt_tokens", "prompt_tokens + input_tokens >= 1 (frame 0 needs a prompt)")
        if s.get("depart_step") is not None:
            check_int(sp, s, "depart_step", s["arrival_step"] + 1,
                      "null or an integer > arrival_step")
        elif "depart_step" not in s:
            fail(sp, "depart_step", "present (null: arrival_step + frames * period_steps)")
        if kv["type"] == "sinks" and s["prompt_tokens"] != kv["sink_tokens"]:
            # R-SWA keeps the request's prompt: the sinks are kept only if they are the prompt.
            fail(sp, "prompt_tokens", f"equal to kv.sink_tokens ({kv['sink_tokens']}) for kv.type sinks")
    return case


def token_id(session, position):
    """Deterministic and distinct per session, so a prefix-cache hit can only be on its own history."""
    return 10 + 1000 * session + position % 997


def write_model_dir(d):
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_attention_heads": 2, "num_key_value_heads": 1,
        "num_hidden_layers": 1, "vocab_size": VOCAB, "max_position_embeddings": MAX_MODEL_LEN,
        "rms_norm_eps": 1e-5, "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2,
    }
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)


class Peer:
    """One case run against vLLM's Scheduler, step-synchronous."""

    def __init__(self, case, model_dir):
        import torch
        from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
        from vllm.sampling_params import SamplingParams
        from vllm.utils.hashing import sha256
        from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
        from vllm.v1.core.sched.scheduler import Scheduler
        from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
        from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig,
                                                KVCacheGroupSpec, RSWASpec, SlidingWindowSpec)
        from vllm.v1.outputs import ModelRunnerOutput
        from vllm.v1.request import Request
        from vllm.v1.structured_output import StructuredOutputManager

        self.case = case
        self.SamplingParams, self.Request, self.ModelRunnerOutput = (
            SamplingParams, Request, ModelRunnerOutput)
        bs = case["block_size"]
        model_config = ModelConfig(model=model_dir, tokenizer=model_dir, skip_tokenizer_init=True,
                                   dtype="float32", max_model_len=MAX_MODEL_LEN, seed=0)
        cache_config = CacheConfig(block_size=bs, enable_prefix_caching=case["enable_prefix_caching"])
        cache_config.num_gpu_blocks = case["num_gpu_blocks"]
        scheduler_config = SchedulerConfig(
            max_num_seqs=case["max_num_seqs"],
            max_num_batched_tokens=case["max_num_batched_tokens"],
            max_model_len=MAX_MODEL_LEN, enable_chunked_prefill=True,
            is_encoder_decoder=False)
        # The scheduler runs on the host; naming the device avoids platform auto-detection, which
        # finds no accelerator on a CPU-only machine.
        vllm_config = VllmConfig(model_config=model_config, cache_config=cache_config,
                                 scheduler_config=scheduler_config,
                                 device_config=DeviceConfig(device="cpu"))
        register_all_kvcache_specs(vllm_config)
        kv = case["kv"]
        common = dict(block_size=bs, num_kv_heads=1, head_size=16, dtype=torch.float32)
        if kv["type"] == "full":
            spec = FullAttentionSpec(**common)
        elif kv["type"] == "sliding_window":
            spec = SlidingWindowSpec(sliding_window=kv["sliding_window"], **common)
        else:
            # R-SWA keeps the prompt; its window counts keys before the query, so sliding_window
            # (which counts the query) maps to rswa_window = sliding_window - 1.
            spec = RSWASpec(rswa_window=kv["sliding_window"] - 1, **common)
        kv_cache_config = KVCacheConfig(
            num_blocks=case["num_gpu_blocks"], kv_cache_tensors=[],
            kv_cache_groups=[KVCacheGroupSpec(["layers.0.self_attn"], spec)])
        self.sched = Scheduler(
            vllm_config=vllm_config, kv_cache_config=kv_cache_config,
            structured_output_manager=StructuredOutputManager(vllm_config),
            block_size=bs, log_stats=False)
        init_none_hash(sha256)
        self.block_hasher = get_request_block_hasher(bs, sha256)
        self.vllm_config = vllm_config

        # Observation hooks: they call through to vLLM and only record.
        self.step_preempted = []
        self.step_alloc_failed = []
        self.req_session = {}
        orig_preempt = self.sched._preempt_request
        orig_alloc = self.sched.kv_cache_manager.allocate_slots

        def preempt(request, *a, **kw):
            self.step_preempted.append(self.req_session[request.request_id])
            return orig_preempt(request, *a, **kw)

        def alloc(request, *a, **kw):
            r = orig_alloc(request, *a, **kw)
            if r is None:
                self.step_alloc_failed.append(self.req_session[request.request_id])
            return r

        self.sched._preempt_request = preempt
        self.sched.kv_cache_manager.allocate_slots = alloc

    # -- sessions ----------------------------------------------------------------------------
    def run(self):
        case = self.case
        sessions = case["sessions"]
        resumable = case["session_model"] == "resumable"
        n = len(sessions)
        # history[i]: every token id of session i in order (prompt, inputs, outputs).
        self.history = [[] for _ in range(n)]
        depart = [s["depart_step"] if s["depart_step"] is not None
                  else s["arrival_step"] + s["frames"] * s["period_steps"] for s in sessions]
        departed = [False] * n
        # Resumable: frame being served (outputs sampled so far per session).
        samples = [0] * n
        frames_done_total = 0
        # per_frame_request: id of the current unfinished frame request, frames released/queued.
        current_req = [None] * n
        next_frame = [0] * n
        pending = [0] * n       # frames due but not yet submitted (previous frame unfinished)
        deferred_releases = 0
        steps = []
        preemptions = 0
        first_fail = first_pre = first_stall = None
        req_frame = {}

        for k in range(case["steps"]):
            # 1. Departures.
            for i, s in enumerate(sessions):
                if depart[i] == k and not departed[i]:
                    departed[i] = True
                    ids = ([f"s{i}"] if resumable else
                           ([current_req[i]] if current_req[i] is not None else []))
                    from vllm.v1.request import RequestStatus
                    self.sched.finish_requests(ids, RequestStatus.FINISHED_ABORTED)
                    current_req[i] = None
                    pending[i] = 0
            # 2. Releases.
            for i, s in enumerate(sessions):
                if departed[i] or k < s["arrival_step"]:
                    continue
                off = k - s["arrival_step"]
                if off % s["period_steps"] == 0 and off // s["period_steps"] < s["frames"]:
                    f = off // s["period_steps"]
                    if resumable:
                        self.submit_resumable(i, f)
                    else:
                        pending[i] += 1
                if not resumable and pending[i] > 0 and current_req[i] is None:
                    f = next_frame[i]
                    if k != s["arrival_step"] + f * s["period_steps"]:
                        deferred_releases += 1
                    current_req[i] = self.submit_per_frame(i, f)
                    req_frame[current_req[i]] = (i, f)
                    next_frame[i] += 1
                    pending[i] -= 1
            # 3. schedule().
            self.step_preempted, self.step_alloc_failed = [], []
            out = self.sched.schedule()
            scheduled = [[self.req_session[r], t] for r, t in out.num_scheduled_tokens.items()]
            blocks = self.blocks_by_session(n, resumable, current_req)
            running = len(self.sched.running)
            paused = self.sched.num_waiting_for_streaming_input
            waiting = len(self.sched.waiting) + len(self.sched.kv_holding_waiting) - paused
            free_blocks = self.sched.kv_cache_manager.block_pool.get_num_free_blocks()
            # 4. Fake model output, 5. update_from_output().
            req_ids, sampled, frames_done = [], [], []
            for r in out.num_scheduled_tokens:
                req = self.sched.requests[r]
                req_ids.append(r)
                i = self.req_session[r]
                if req.num_computed_tokens >= req.num_tokens:
                    tok = token_id(i, len(self.history[i]))
                    self.history[i].append(tok)
                    sampled.append([tok])
                    if resumable:
                        samples[i] += 1
                        if samples[i] % sessions[i]["output_tokens"] == 0:
                            frames_done.append([i, samples[i] // sessions[i]["output_tokens"] - 1])
                    elif req.num_output_tokens + 1 >= sessions[i]["output_tokens"]:
                        frames_done.append([i, req_frame[r][1]])
                        current_req[i] = None
                else:
                    sampled.append([])
            mro = self.ModelRunnerOutput(req_ids=req_ids,
                                         req_id_to_index={r: j for j, r in enumerate(req_ids)},
                                         sampled_token_ids=sampled)
            self.sched.update_from_output(out, mro)
            frames_done_total += len(frames_done)
            preemptions += len(self.step_preempted)
            if first_fail is None and self.step_alloc_failed:
                first_fail = {"step": k, "session": self.step_alloc_failed[0]}
            if first_pre is None and self.step_preempted:
                first_pre = {"step": k, "victim": self.step_preempted[0]}
            if first_stall is None and waiting > 0 and not scheduled:
                first_stall = k
            steps.append({
                "step": k, "scheduled": scheduled, "preempted": list(self.step_preempted),
                "alloc_failed": list(self.step_alloc_failed), "blocks": blocks,
                "frames_done": frames_done, "running": running, "waiting": waiting,
                "paused": paused, "free_blocks": free_blocks,
            })
        summary = {"first_alloc_failure": first_fail, "first_preemption": first_pre,
                   "first_stall_step": first_stall, "frames_done": frames_done_total,
                   "preemptions": preemptions}
        if not resumable:
            summary["deferred_releases"] = deferred_releases
        return steps, summary

    def new_request(self, rid, session, prompt, max_tokens, resumable):
        sp = self.SamplingParams(max_tokens=max_tokens, ignore_eos=True)
        self.req_session[rid] = session
        return self.Request(request_id=rid, prompt_token_ids=prompt, sampling_params=sp,
                            pooling_params=None, arrival_time=0.0,
                            block_hasher=self.block_hasher, resumable=resumable)

    def fresh_tokens(self, i, count):
        h = self.history[i]
        toks = [token_id(i, len(h) + j) for j in range(count)]
        h.extend(toks)
        return toks

    def submit_resumable(self, i, f):
        s = self.case["sessions"][i]
        count = s["input_tokens"] + (s["prompt_tokens"] if f == 0 else 0)
        toks = self.fresh_tokens(i, count)
        self.sched.add_request(self.new_request(f"s{i}", i, toks, s["output_tokens"], True))

    def submit_per_frame(self, i, f):
        s = self.case["sessions"][i]
        count = s["input_tokens"] + (s["prompt_tokens"] if f == 0 else 0)
        self.fresh_tokens(i, count)
        rid = f"s{i}f{f}"
        self.sched.add_request(
            self.new_request(rid, i, list(self.history[i]), s["output_tokens"], False))
        return rid

    def blocks_by_session(self, n, resumable, current_req):
        mgr = self.sched.kv_cache_manager
        held = []
        for i in range(n):
            rids = [f"s{i}"] if resumable else [r for r, s in self.req_session.items() if s == i]
            count = 0
            for r in rids:
                for blk in mgr.coordinator.get_blocks(r)[0]:
                    if not blk.is_null:
                        count += 1
            if count:
                held.append([i, count])
        return held


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--date", default=None, help="YYYY-MM-DD written as 'generated' (default: today, UTC)")
    ap.add_argument("--check", action="store_true",
                    help="only check the arguments and the cases (no vLLM needed), then exit")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    # Everything is checked before vLLM is imported, and every golden is computed before any is
    # written: a bad case or argument exits 2 with all committed goldens as they were.
    if args.date is not None:
        try:
            datetime.datetime.strptime(args.date, "%Y-%m-%d")
        except ValueError:
            ap.error(f"--date: expected YYYY-MM-DD, got '{args.date}'")
    try:
        names = args.names or sorted(p[:-5] for p in os.listdir(args.cases) if p.endswith(".json"))
    except OSError as e:
        ap.error(f"--cases {args.cases}: {e.strerror}")
    if not names:
        ap.error(f"--cases {args.cases}: no case files (NAME.json)")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        ap.error(f"--out {args.out}: expected a folder")
    cases = {}
    for name in names:
        path = os.path.join(args.cases, name + ".json")
        try:
            case = load_case(path)
        except (CaseError, json.JSONDecodeError, OSError) as e:
            print(f"vllm_peer: {e}", file=sys.stderr)
            return 2
        if case["name"] != name:
            print(f"vllm_peer: {path}: field 'name': expected \"{name}\" (the file name)",
                  file=sys.stderr)
            return 2
        cases[name] = case
    if args.check:
        print(f"vllm_peer: {len(cases)} cases checked", file=sys.stderr)
        return 0
    import vllm

    date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    goldens = {}
    with tempfile.TemporaryDirectory() as model_dir:
        write_model_dir(model_dir)
        for name, case in cases.items():
            peer = Peer(case, model_dir)
            steps, summary = peer.run()
            golden = {"vllm_version": vllm.__version__, "generated": date, "case": case,
                      "usable_blocks": case["num_gpu_blocks"] - 1, "steps": steps,
                      "summary": summary}
            goldens[name] = (format_golden(golden), summary)
    os.makedirs(args.out, exist_ok=True)
    for name, (text, summary) in goldens.items():
        write_atomically(os.path.join(args.out, name + ".json"), lambda f, text=text: f.write(text))
        print(f"{name}: {json.dumps(summary)}")
    return 0


def format_golden(g):
    """One step per line, so a behaviour change is a readable diff."""
    head = {k: v for k, v in g.items() if k not in ("steps", "summary")}
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=False)},")
    lines.append('  "steps": [')
    for j, s in enumerate(g["steps"]):
        sep = "," if j + 1 < len(g["steps"]) else ""
        lines.append("    " + json.dumps(s, separators=(",", ":")) + sep)
    lines.append("  ],")
    lines.append(f'  "summary": {json.dumps(g["summary"])}')
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
