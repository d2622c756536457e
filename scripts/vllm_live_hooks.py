"""What vLLM's engine core does, step by step, written where the live driver can read it.

vLLM's Prometheus metrics say how full the pool is, not when an allocation was refused or what each
step computed. These hooks wrap three methods of the engine core's scheduler (read in vLLM 0.32's
vllm/v1/core/sched/scheduler.py and vllm/v1/core/kv_cache_manager.py) and append one JSON line per
step to $METRONOME_LIVE_STEPS:

  t0, t1   CLOCK_MONOTONIC seconds at schedule() and at the end of update_from_output(): the
           step's wall time, scheduling and the forward pass included (the driver's clock is the
           same system clock, so the two timelines line up)
  q, c     per scheduled request: tokens computed this step, tokens already computed before it
  id       per scheduled request: the driver's request id (vLLM's internal id up to its first "-")
  fail     allocate_slots() calls that returned None in this step (a refused allocation)
  pre      requests preempted in this step
  free     free blocks after the step (vLLM's count, cached-but-free blocks included)
  run, wait, paused   requests running, waiting (both queues), paused streaming sessions
A step that computed nothing because allocations were refused is written once per run of such
steps (the stall's onset), not once per pass of the engine core's loop.

install() runs in the engine core process: vLLM's CPU platform starts it by spawn, which imports
the driver's main module again there (vllm_live.py installs the hooks when imported so). The hooks change nothing
the scheduler decides; they cost one small write per step (measured in docs/live.md).
"""

import json
import os
import time


def install(path):
    from vllm.v1.core.kv_cache_manager import KVCacheManager
    from vllm.v1.core.sched.scheduler import Scheduler

    state = {"fail": 0, "file": None, "t0": 0.0, "out": None}

    def out_file():
        if state["file"] is None or state["pid"] != os.getpid():
            state["file"] = open(path, "a", buffering=1)
            state["pid"] = os.getpid()
        return state["file"]

    state["pid"] = None
    alloc = KVCacheManager.allocate_slots

    def allocate_slots(self, *a, **k):
        r = alloc(self, *a, **k)
        if r is None:
            state["fail"] += 1
        return r

    schedule = Scheduler.schedule

    def schedule_hook(self, *a, **k):
        state["fail"] = 0
        state["t0"] = time.monotonic()
        so = schedule(self, *a, **k)
        state["out"] = so
        state["fail_in_schedule"] = state["fail"]
        return so

    update = Scheduler.update_from_output

    def update_hook(self, scheduler_output, *a, **k):
        r = update(self, scheduler_output, *a, **k)
        t1 = time.monotonic()
        so = scheduler_output
        # A stalled engine core schedules nothing step after step: only the first of such a run
        # is written (with "fail"), so a stall costs one line, not one per loop.
        empty = so.total_num_scheduled_tokens == 0
        write = not empty or (state.get("fail_in_schedule", 0) > 0 and not state.get("empty"))
        state["empty"] = empty
        if write:
            q, c, ids = [], [], []
            for nr in so.scheduled_new_reqs:
                q.append(so.num_scheduled_tokens[nr.req_id])
                c.append(nr.num_computed_tokens)
                ids.append(nr.req_id.split("-")[0])
            cr = so.scheduled_cached_reqs
            for rid, comp in zip(cr.req_ids, cr.num_computed_tokens):
                q.append(so.num_scheduled_tokens[rid])
                c.append(comp)
                ids.append(rid.split("-")[0])
            row = {
                "t0": round(state["t0"], 6), "t1": round(t1, 6), "q": q, "c": c, "id": ids,
                "fail": state.get("fail_in_schedule", 0),
                "pre": len(so.preempted_req_ids or ()),
                "free": self.kv_cache_manager.block_pool.get_num_free_blocks(),
                "run": len(self.running),
                "wait": len(self.waiting) + len(getattr(self, "kv_holding_waiting", ())),
                "paused": getattr(self, "num_waiting_for_streaming_input", 0),
            }
            out_file().write(json.dumps(row, separators=(",", ":")) + "\n")
        return r

    KVCacheManager.allocate_slots = allocate_slots
    Scheduler.schedule = schedule_hook
    Scheduler.update_from_output = update_hook
