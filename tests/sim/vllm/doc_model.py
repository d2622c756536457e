#!/usr/bin/env python3
"""A re-implementation of docs/vllm.md (sections 1-8) without vLLM, checked against the goldens.

It exists to prove that the written semantics are complete and exact: if this model, written from
the document alone, reproduces every golden step for step, the C++ engine can be written from the
document too. It covers what the cases use: one KV group, FCFS, synchronous scheduling, full /
sliding-window / R-SWA KV, prefix caching for per-frame requests. Plain python3, no dependencies.

Usage: doc_model.py [--golden DIR] [NAME ...]   exit 0 when every listed golden matches, 1 otherwise.
"""

import argparse
import json
import os
import sys
from collections import deque


def cdiv(a, b):
    return -(-a // b)


class Pool:
    """Section 1: a free queue of block ids (front = next reused), hashes evicted on reuse."""

    def __init__(self, num_blocks):
        self.free = deque(range(1, num_blocks))  # block 0 is the null block
        self.ref = [0] * num_blocks
        self.hash_of = [None] * num_blocks
        self.by_hash = {}  # hash -> {block: None}, insertion-ordered

    def take(self, k):
        out = []
        for _ in range(k):
            b = self.free.popleft()
            h = self.hash_of[b]
            if h is not None:
                del self.by_hash[h][b]
                if not self.by_hash[h]:
                    del self.by_hash[h]
                self.hash_of[b] = None
            self.ref[b] = 1
            out.append(b)
        return out

    def release(self, ordered):
        first, last = [], []
        for b in ordered:
            if b is None:
                continue
            self.ref[b] -= 1
            if self.ref[b] == 0:
                (first if self.hash_of[b] is None else last).append(b)
        self.free.extendleft(reversed(first))
        self.free.extend(last)

    def touch(self, blocks):
        for b in blocks:
            if self.ref[b] == 0:
                self.free.remove(b)
            self.ref[b] += 1

    def cached(self, h):
        d = self.by_hash.get(h)
        return next(iter(d)) if d else None

    def insert(self, h, b):
        if self.hash_of[b] is None:
            self.hash_of[b] = h
            self.by_hash.setdefault(h, {})[b] = None


class Req:
    def __init__(self, rid, session, tokens, prompt_len, max_tokens, resumable):
        self.rid, self.session = rid, session
        self.tokens = tokens          # one (session, position) per token: block hashes are prefixes
        self.P = prompt_len
        self.max_tokens, self.resumable = max_tokens, resumable
        self.c = 0
        self.outputs = 0
        self.status = "WAITING"
        self.table = []               # block ids, None = null
        self.queue = deque()          # pending chunks: their input tokens
        self.cached_blocks = 0        # section 2, step 4: full blocks hashed so far

    @property
    def T(self):
        return len(self.tokens)


class Model:
    def __init__(self, case):
        self.case = case
        self.bs = case["block_size"]
        self.pool = Pool(case["num_gpu_blocks"])
        self.caching = case["enable_prefix_caching"]
        kv = case["kv"]
        self.kv = kv["type"]
        self.sw = kv.get("sliding_window")
        self.running, self.waiting, self.kv_waiting = [], deque(), deque()
        self.paused = 0
        self.reqs = {}
        self.B = case["max_num_batched_tokens"]
        self.cap = case["max_num_seqs"]
        self.maxlen = 8192

    # -- section 2 -------------------------------------------------------------------------
    def skipped_tokens(self, c):
        return max(0, c - self.sw + 1) if self.kv == "sliding_window" else 0

    def blocks_needed(self, r, N, hits, C, full):
        req = cdiv(N, self.bs)
        if full and self.kv == "sliding_window":
            req = min(req, cdiv(min(self.sw - 1 + self.B, self.maxlen), self.bs) + 1)
        skipped = self.skipped_tokens(C) // self.bs
        evictable = sum(1 for b in hits if self.pool.ref[b] == 0)
        return max(req - max(skipped, len(hits) + len(r.table)), 0) + evictable

    def remove_skipped(self, r, C):
        bs = self.bs
        if self.kv == "sliding_window":
            lo, hi = 0, min(self.skipped_tokens(C) // bs, len(r.table))
        elif self.kv == "sinks":
            lo, hi = cdiv(r.P, bs), max(r.P, C - (self.sw - 1)) // bs
            hi = min(hi, len(r.table))
        else:
            return
        freed = []
        for j in range(hi - 1, lo - 1, -1):
            if r.table[j] is None:
                break
            freed.append(r.table[j])
            r.table[j] = None
        self.pool.release(freed)

    def allocate(self, r, n, hits=(), full=False):
        C = r.c + len(hits) * self.bs
        free = len(self.pool.free)
        if full and self.blocks_needed(r, min(r.T, self.maxlen), hits, C, True) > free:
            return False
        self.remove_skipped(r, C)
        if self.blocks_needed(r, C + n, hits, C, False) > len(self.pool.free):
            return False
        if hits:
            self.pool.touch(hits)
            r.table.extend(hits)
            r.cached_blocks = len(hits)
        k = cdiv(C + n, self.bs) - len(r.table)
        if k > 0:
            r.table.extend(self.pool.take(k))
        if self.caching:
            full_blocks = min(C + n, r.T) // self.bs
            for j in range(r.cached_blocks, full_blocks):
                if r.table[j] is not None:
                    self.pool.insert(self.block_hash(r, j), r.table[j])
            r.cached_blocks = max(r.cached_blocks, full_blocks)
        return True

    def block_hash(self, r, j):
        return tuple(r.tokens[: (j + 1) * self.bs])

    def free(self, r):
        self.pool.release(reversed(r.table))
        r.table = []
        r.cached_blocks = 0

    def lookup(self, r):
        if not self.caching:
            return []
        hits = []
        for j in range((r.T - 1) // self.bs):
            b = self.pool.cached(self.block_hash(r, j))
            if b is None:
                break
            hits.append(b)
        return hits

    # -- sections 3-5 ----------------------------------------------------------------------
    def schedule(self, log):
        budget = self.B
        sched = {}
        preempted = False
        i = 0
        while i < len(self.running) and budget > 0:
            r = self.running[i]
            n = min(r.T - r.c, budget)
            if n == 0:
                i += 1
                continue
            while True:
                ok = self.allocate(r, n)
                if ok:
                    break
                log["alloc_failed"].append(r.session)
                victim = self.running.pop()
                self.preempt(victim, log)
                preempted = True
                if victim is r:
                    break
            if not ok:
                break
            sched[r.rid] = n
            budget -= n
            i += 1
        if not preempted:
            skipped = []
            while budget > 0:
                q = self.kv_waiting if self.kv_waiting else self.waiting
                if not q:
                    break
                if len(self.running) + self.paused >= self.cap:
                    break
                r = q[0]
                if r.status == "PAUSED":
                    skipped.append(q.popleft())
                    continue
                hits = self.lookup(r) if r.c == 0 else []
                n = min(r.T - r.c - len(hits) * self.bs, budget)
                if not self.allocate(r, n, hits, full=True):
                    log["alloc_failed"].append(r.session)
                    break
                q.popleft()
                self.running.append(r)
                r.status = "RUNNING"
                r.c += len(hits) * self.bs
                sched[r.rid] = n
                budget -= n
            self.kv_waiting.extendleft(reversed(skipped))
        for rid, n in sched.items():
            self.reqs[rid].c += n
        return sched

    def preempt(self, r, log):
        log["preempted"].append(r.session)
        self.free(r)
        r.c = 0
        r.status = "PREEMPTED"
        self.waiting.appendleft(r)

    def enqueue(self, r):
        (self.kv_waiting if r.c > 0 else self.waiting).append(r)

    def apply_chunk(self, r, new_tokens):
        del r.tokens[r.T - 1:]                 # drop the last sampled token
        r.tokens.extend(new_tokens)
        r.P = r.T
        r.outputs = 0
        r.status = "WAITING"

    def add(self, r):
        self.reqs[r.rid] = r
        self.enqueue(r)

    def update(self, r, sampled_token):
        """One sampled token for r; True when it ends r's chunk (resumable) or r (per-frame)."""
        r.tokens.append(sampled_token)
        r.outputs += 1
        if r.outputs < r.max_tokens:
            return False
        self.running.remove(r)
        if not r.resumable:
            self.free(r)
            del self.reqs[r.rid]
            return True
        r.c = r.T - 1
        if r.queue:
            self.apply_chunk(r, r.queue.popleft())
        else:
            r.status = "PAUSED"
            self.paused += 1
        self.enqueue(r)
        return True

    def abort(self, r):
        if r.status == "RUNNING":
            self.running.remove(r)
        else:
            if r.status == "PAUSED":
                self.paused -= 1
            for q in (self.waiting, self.kv_waiting):
                if r in q:
                    q.remove(r)
        self.free(r)
        del self.reqs[r.rid]


def replay(case):
    """The driver of tests/sim/vllm/FORMAT.md over the model; returns the golden's steps."""
    m = Model(case)
    sessions = case["sessions"]
    resumable = case["session_model"] == "resumable"
    n = len(sessions)
    hist = [[] for _ in range(n)]
    depart = [s["depart_step"] if s["depart_step"] is not None
              else s["arrival_step"] + s["frames"] * s["period_steps"] for s in sessions]
    gone = [False] * n
    samples = [0] * n
    cur = [None] * n
    nxt = [0] * n
    pending = [0] * n
    steps = []

    def fresh(i, k):
        toks = [(i, len(hist[i]) + j) for j in range(k)]
        hist[i].extend(toks)
        return toks

    for k in range(case["steps"]):
        for i in range(n):
            if depart[i] == k and not gone[i]:
                gone[i] = True
                rid = f"s{i}" if resumable else cur[i]
                if rid in m.reqs:
                    m.abort(m.reqs[rid])
                cur[i] = None
                pending[i] = 0
        for i, s in enumerate(sessions):
            if gone[i] or k < s["arrival_step"]:
                continue
            off = k - s["arrival_step"]
            if off % s["period_steps"] == 0 and off // s["period_steps"] < s["frames"]:
                f = off // s["period_steps"]
                cnt = s["input_tokens"] + (s["prompt_tokens"] if f == 0 else 0)
                if resumable:
                    toks = fresh(i, cnt)
                    if f == 0:
                        m.add(Req(f"s{i}", i, list(toks), len(toks), s["output_tokens"], True))
                    else:
                        r = m.reqs[f"s{i}"]
                        if r.status == "PAUSED":
                            m.paused -= 1
                            m.apply_chunk(r, toks)
                        else:
                            r.queue.append(toks)
                else:
                    pending[i] += 1
            if not resumable and pending[i] > 0 and cur[i] is None:
                f = nxt[i]
                cnt = s["input_tokens"] + (s["prompt_tokens"] if f == 0 else 0)
                fresh(i, cnt)
                rid = f"s{i}f{f}"
                m.add(Req(rid, i, list(hist[i]), len(hist[i]), s["output_tokens"], False))
                cur[i] = rid
                nxt[i] += 1
                pending[i] -= 1
        log = {"preempted": [], "alloc_failed": []}
        sched = m.schedule(log)
        blocks = {}
        for r in m.reqs.values():
            held = sum(1 for b in r.table if b is not None)
            if held:
                blocks[r.session] = blocks.get(r.session, 0) + held
        paused = m.paused
        rec = {"step": k, "scheduled": [[m.reqs[rid].session, t] for rid, t in sched.items()],
               "preempted": log["preempted"], "alloc_failed": log["alloc_failed"],
               "blocks": [[i, blocks[i]] for i in sorted(blocks)], "frames_done": [],
               "running": len(m.running),
               "waiting": len(m.waiting) + len(m.kv_waiting) - paused, "paused": paused,
               "free_blocks": len(m.pool.free)}
        for rid in list(sched):
            r = m.reqs[rid]
            if r.c >= r.T:
                i = r.session
                tok = (i, len(hist[i]))
                hist[i].append(tok)
                ended = m.update(r, tok)
                if resumable:
                    samples[i] += 1
                    if samples[i] % sessions[i]["output_tokens"] == 0:
                        rec["frames_done"].append([i, samples[i] // sessions[i]["output_tokens"] - 1])
                elif ended:
                    rec["frames_done"].append([i, int(rid.split("f")[1])])
                    cur[i] = None
        steps.append(rec)
    return steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--golden", default=os.path.join(here, "golden"))
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    names = args.names or sorted(p[:-5] for p in os.listdir(args.golden) if p.endswith(".json"))
    bad = 0
    for name in names:
        with open(os.path.join(args.golden, name + ".json")) as f:
            g = json.load(f)
        got = replay(g["case"])
        mismatch = next((k for k, (a, b) in enumerate(zip(got, g["steps"])) if a != b), None)
        if mismatch is None and len(got) == len(g["steps"]):
            print(f"{name}: {len(got)} steps match")
        else:
            bad += 1
            print(f"{name}: first mismatch at step {mismatch}\n  model:  {got[mismatch]}\n"
                  f"  golden: {g['steps'][mismatch]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
