#!/usr/bin/env python3
"""The KV visibility rule of core/kv_window.h, in Python for the PyTorch device path.

A query at absolute position q sees key k iff k <= q and (unbounded or k < S or q - k <= W): the
S attention-sink tokens, the W tokens before the query, and the query itself (W < 0: unbounded).
core/kv_window.h is the rule; this port sits beside it (core/ is the room every layer reads, the
PyTorch paths of calibrate/ and kernels/bench/ both import it) and is checked against a table the
C++ rule wrote (kv_window_table.json, pinned by tests/calibrate/torch_path_test.cpp):

    python3 core/kv_window.py --check core/kv_window_table.json
"""
import argparse
import json
import sys


def key_visible(q, k, window, sinks):
    return k <= q and (window < 0 or k < sinks or q - k <= window)


def window_start(q, window):
    if window < 0 or q <= window:
        return 0
    return q - window


def visible_keys(q, window, sinks):
    start = window_start(q, window)
    return min(start, sinks) + (q + 1 - start)


def mask_mod(ctx, window, sinks):
    """FlexAttention mask_mod for a step whose first query sits at absolute position ctx (query
    index i is position ctx + i; key index j is position j of the session's KV)."""
    def mod(b, h, q_idx, kv_idx):
        q = q_idx + ctx
        visible = kv_idx <= q
        if window < 0:
            return visible
        return visible & ((kv_idx < sinks) | (q - kv_idx <= window))
    return mod


def check(path):
    with open(path) as f:
        table = json.load(f)
    bad = 0
    for case in table["cases"]:
        w, s, q = case["window"], case["sinks"], case["q"]
        mask = "".join("1" if key_visible(q, k, w, s) else "0" for k in range(q + 1))
        if mask != case["mask"] or visible_keys(q, w, s) != case["visible_keys"]:
            bad += 1
            print(f"kv_window.py: W={w} S={s} q={q}: port gives {mask} "
                  f"({visible_keys(q, w, s)} keys), the C++ rule {case['mask']} "
                  f"({case['visible_keys']})", file=sys.stderr)
    print(f"kv_window.py: {len(table['cases']) - bad} of {len(table['cases'])} cases agree with "
          f"core/kv_window.h")
    return 1 if bad else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", required=True, help="kv_window_table.json")
    sys.exit(check(ap.parse_args().check))
