#!/usr/bin/env python3
"""Does the corrected roofline transfer across layer shapes? (issue 32, exploration)

Reads Vidur's H100 mlp.csv profiles (tensor parallel 1), prices every profiled op with the
bytes/FLOPs of sim/cost/layer_ops.cpp (re-derived here, same formulas), and compares forms of the
correction: the shipped one (h100.json) and refits, leave-one-profile-out. Pure Python (no numpy on
the build machine): weighted least squares by normal equations, few parameters.
Usage: roofline_transfer.py CSV... (each a Vidur mlp.csv of one model on one H100)
"""
import csv, sys

B, F = 3.35e12, 989e12  # H100 SXM datasheet, as scenarios/gpus/h100.json
OPS = ["input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
       "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"]
GEMMS = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"}


def load(path):
    rows = []
    with open(path) as fh:
        for r in csv.DictReader(fh):
            if int(r["num_tensor_parallel_workers"]) != 1:
                continue
            h, nh, kv, f = (int(r[k]) for k in ("n_embd", "n_head", "n_kv_head", "n_expanded_embd"))
            rows.append(dict(shape=(h, nh, kv, h // nh, f), n=int(r["num_tokens"]),
                             t={o: float(r[f"time_stats.{o}.median"]) * 1e-3 for o in OPS}))
    return rows


def op_cost(shape, op, n):
    """(bytes, flops, gemm (k, nout) or None) of one op at n tokens, as sim/cost/layer_ops.cpp."""
    h, nh, kv, hd, f = shape
    q, qkv, rope = nh * hd, (nh + 2 * kv) * hd, (nh + kv) * hd
    g = {"attn_pre_proj": (h, qkv), "attn_post_proj": (q, h), "mlp_up_proj": (h, 2 * f),
         "mlp_down_proj": (f, h)}
    if op in g:
        k, m = g[op]
        return 2 * k * m + 2 * (k + m) * n, 2 * k * m * n, (k, m)
    pw = {"input_layernorm": 2 * h + 4 * h * n, "post_attention_layernorm": 2 * h + 4 * h * n,
          "attn_rope": 4 * rope * n, "mlp_act": 2 * 3 * f * n, "add": 6 * h * n}
    return pw[op], 0, None


# A form: features(shape, op, n) -> list of seconds-valued features; time = sum(coef * feature).
def old_features(shape, op, n):
    """The shipped form: GEMM bytes, pointwise bytes, FLOPs, one overhead per kernel."""
    b, fl, g = op_cost(shape, op, n)
    return [b / B if g else 0, 0 if g else b / B, fl / F, 1.0]


PW_KIND = {"input_layernorm": 0, "post_attention_layernorm": 0, "attn_rope": 1, "mlp_act": 2,
           "add": 3}


def new_features(shape, op, n):
    """GEMM: a memory-bound and a compute-bound rate chosen by the datasheet ridge, plus a share of
    the smaller of the two (the 64-512-token band where neither hides the other: the additive form
    counts it whole and over-predicts there as the shape grows, max() counts none), one overhead.
    Pointwise: a rate per kind (norm, rope, activation, residual add) and its own overhead; one
    shared rate priced `add` at 2x, norms at 0.7-0.9x."""
    b, fl, g = op_cost(shape, op, n)
    if g:
        mem, comp = b / B, fl / F
        return [mem if mem >= comp else 0, comp if comp > mem else 0, min(mem, comp), 1.0,
                0, 0, 0, 0, 0]
    v = [0.0] * 9
    v[4 + PW_KIND[op]] = b / B
    v[8] = 1.0
    return v


def solve(xs, ys, ws):
    p = len(xs[0])
    if len(xs) < p:
        raise SystemExit(f"{len(xs)} points for {p} parameters: refusing to fit")
    a = [[sum(w * x[i] * x[j] for x, w in zip(xs, ws)) for j in range(p)] for i in range(p)]
    b = [sum(w * x[i] * y for x, y, w in zip(xs, ys, ws)) for i in range(p)]
    for i in range(p):  # Gauss-Jordan with partial pivoting
        piv = max(range(i, p), key=lambda r: abs(a[r][i]))
        a[i], a[piv], b[i], b[piv] = a[piv], a[i], b[piv], b[i]
        for r in range(p):
            if r != i and a[i][i]:
                c = a[r][i] / a[i][i]
                a[r] = [u - c * v for u, v in zip(a[r], a[i])]
                b[r] -= c * b[i]
    return [b[i] / a[i][i] for i in range(p)]


def fit(form, profiles):
    xs, ys, ws = [], [], []
    for rows in profiles:
        for r in rows:
            layer = sum(r["t"].values())
            for op in OPS:
                xs.append(form(r["shape"], op, r["n"]))
                ys.append(r["t"][op])
                ws.append(1 / layer ** 2)  # relative error of the layer
    coef = solve(xs, ys, ws)
    yhat = [sum(c * x for c, x in zip(coef, xv)) for xv in xs]
    ybar = sum(w * y for y, w in zip(ys, ws)) / sum(ws)
    ss_res = sum(w * (y - yh) ** 2 for y, yh, w in zip(ys, yhat, ws))
    ss_tot = sum(w * (y - ybar) ** 2 for y, w in zip(ys, ws))
    return coef, 1 - ss_res / ss_tot


def predict(form, coef, shape, op, n):
    return sum(c * x for c, x in zip(coef, form(shape, op, n)))


def q(v, p):
    v = sorted(v)
    pos = p * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def report(name, form, coef, rows):
    err, ratio, band, per_op = [], [], {}, {o: [] for o in OPS}
    for r in rows:
        pred = {o: predict(form, coef, r["shape"], o, r["n"]) for o in OPS}
        p, m = sum(pred.values()), sum(r["t"].values())
        err.append(abs(p - m) / m)
        ratio.append(p / m)
        key = "<64" if r["n"] < 64 else "64-512" if r["n"] <= 512 else ">512"
        band.setdefault(key, []).append(p / m)
        for o in OPS:
            per_op[o].append(pred[o] / r["t"][o])
    bands = "  ".join(f"{k} x{q(v, .5):.2f}" for k, v in band.items())
    ops = " ".join(f"{o.replace('attn_', '').replace('mlp_', '').replace('_layernorm', 'LN')}"
                   f" x{q(v, .5):.2f}" for o, v in per_op.items())
    print(f"  {name:<28} {len(rows):3d} rows  median {100*q(err,.5):5.1f}%  p90 {100*q(err,.9):5.1f}%"
          f"  max {100*max(err):5.1f}%  pred/meas x{q(ratio,.5):.2f}  by tokens: {bands}")
    print(f"  {'':<28} per op pred/meas: {ops}")
    return q(err, .5), q(err, .9)


def trust(shape, fitted):
    """How far a shape's GEMMs are from the fitted ones: each GEMM dimension (hidden, QKV width,
    FFN) against the fitted range, as the largest factor outside it (1.0: inside every range)."""
    def dims(s):
        h, nh, kv, hd, f = s
        return {"hidden": h, "qkv": (nh + 2 * kv) * hd, "ffn": f}
    worst, what = 1.0, []
    for k, v in dims(shape).items():
        lo = min(dims(s)[k] for s in fitted)
        hi = max(dims(s)[k] for s in fitted)
        out = max(lo / v, v / hi, 1.0)
        worst = max(worst, out)
        what.append(f"{k} {v} in [{lo}, {hi}]" + (f" (x{out:.2f} outside)" if out > 1 else ""))
    return worst, "; ".join(what)


def main(paths):
    profs = {p.split("/")[-1].replace("_mlp.csv", ""): load(p) for p in paths}
    # The shipped correction (h100.json): per kernel 3.533 us, fractions 1.0 / 0.5642 / 0.8916.
    shipped = [1 / 1.0, 1 / 0.5642, 1 / 0.8916, 3.532681800996087e-6]
    print("shipped h100 correction (fitted on Llama-2-7B):")
    for n, rows in profs.items():
        report(n, old_features, shipped, rows)
    names = list(profs)
    for label, form in (("old form refitted", old_features), ("new form", new_features)):
        print(f"\n{label}:")
        coef, r2 = fit(form, list(profs.values()))
        print(f" fit on all {len(names)}: coef {[f'{c:.4g}' for c in coef]} R2 {r2:.4f}")
        for n in names:
            report(n, form, coef, profs[n])
        for out in names:
            coef, r2 = fit(form, [profs[n] for n in names if n != out])
            print(f" fit without {out}: coef {[f'{c:.4g}' for c in coef]} R2 {r2:.4f}; held out:")
            far, why = trust(profs[out][0]["shape"], [profs[n][0]["shape"] for n in names if n != out])
            print(f"  trust: {why}")
            report(out, form, coef, profs[out])


if __name__ == "__main__":
    main(sys.argv[1:])
