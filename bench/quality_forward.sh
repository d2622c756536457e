#!/usr/bin/env bash
# Side by side on this machine, in one run: tokens/s of `metronome quality`'s forward pass
# (build/bench/quality_forward) against llama.cpp's (PyPI's llama-cpp-python, built from source by
# bench/llama_cpp_venv.sh for AVX2/FMA) on the same GGUF (SmolLM2-135M-Instruct Q4_1), the same
# thread count, the same 64-token steps, and against the machine's fp32 FLOP roofline (measured by
# quality_forward with FMA chains in registers: the thread count times one core's peak, and beside
# it what all the threads reach at once, which a VM whose threads share a core's vector units, or a
# busy machine, holds lower). A script, not a test: speed is never asserted. Prints a Markdown
# table (what README.md shows) and keeps the JSON of each side.
#   bench/quality_forward.sh [--threads N] [--tokens N] [--reps N] [--out DIR]
# Needs: scripts/setup.sh --tests (builds build/bench/quality_forward); fetches the model and text
# (scripts/fetch_quality_assets.sh) and builds the llama.cpp environment (minutes, once) if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=2 tokens=512 reps=3 out=out/bench_quality
while (($#)); do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "quality_forward.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
chunk=64
bin=build/bench/quality_forward
[[ -x $bin ]] || { echo "quality_forward.sh: $bin missing: scripts/setup.sh --tests" >&2; exit 2; }
scripts/fetch_quality_assets.sh
bench/llama_cpp_venv.sh
model=.cache/quality/smollm2-135m-instruct-q4_1.gguf text=.cache/quality/prideprejudice.txt
mkdir -p "$out"
common=(--threads "$threads" --tokens "$tokens" --chunk "$chunk" --reps "$reps")
echo "quality_forward.sh: metronome (widest instruction set)" >&2
"$bin" "$model" "$text" "${common[@]}" >"$out/metronome.json"
echo "quality_forward.sh: metronome (AVX2+FMA, llama.cpp's build)" >&2
"$bin" "$model" "$text" "${common[@]}" --isa AVX2+FMA >"$out/metronome_avx2.json"
echo "quality_forward.sh: llama.cpp" >&2
.cache/llama-cpp-venv/bin/python bench/llama_cpp_forward.py "$model" "$text" "$threads" "$tokens" \
  "$chunk" "$reps" >"$out/llama_cpp.json"
/usr/bin/python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
m = json.load(open(os.path.join(out, "metronome.json")))
m2 = json.load(open(os.path.join(out, "metronome_avx2.json")))
l = json.load(open(os.path.join(out, "llama_cpp.json")))
weights = m["weight_flop_per_token"]
attention = m["prefill_attention_flop_per_token"]
# Both sides run the same model on the same tokens, so one count prices every row.
flop = weights + attention
t = m["threads"]
# The roofline: threads x one core's measured peak (the all-threads-at-once measurement is shown
# too; on a shared machine it is lower whenever another job holds a core).
peak = {k: t * v for k, v in m["peak_gflops_one_thread"].items()}
top = max(peak, key=peak.get)
cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
print(f"{cpu}, {m['threads']} threads, one sequence of {m['tokens']} tokens fed {m['chunk']} a step "
      f"(logits of every token), then 64 decoded one at a time; median of the runs. "
      f"Prefill FLOP per token {flop / 1e9:.3f} G: the weights' products {weights / 1e9:.3f} G (2 x their "
      f"parameters) and attention's {attention / 1e9:.4f} G (scores and weighted values at the "
      f"sequence's mean position; softmax, norms and RoPE not counted). "
      f"Measured fp32 peak of one core: " +
      ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in m["peak_gflops_one_thread"].items()) +
      f"; roofline {t} x that; on {t} threads at once: " +
      ", ".join(f"{k} {v:.0f}" for k, v in m["peak_gflops"].items()) + ".\n")
# Per CPU second (all the process's threads): on a shared machine the wall-clock rates measure the
# other jobs too; at one thread the CPU rate is the work's own speed.
print("| forward pass | instruction set | prefill tokens/s | per CPU s | prefill GFLOP/s | of the AVX2 peak | of the machine's peak | decode tokens/s | per CPU s |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
def row(name, isa, d):
    g = d["prefill_tokens_per_s"] * flop / 1e9
    cpu = lambda k: f"{d[k]:.0f}" if k in d else "-"
    print(f"| {name} | {isa} | {d['prefill_tokens_per_s']:.0f} | {cpu('prefill_tokens_per_cpu_s')} | {g:.0f} | "
          f"{g / peak['AVX2+FMA']:.0%} | {g / peak[top]:.0%} | {d['decode_tokens_per_s']:.0f} | "
          f"{cpu('decode_tokens_per_cpu_s')} |")
row("metronome quality", m["isa"], m)
row("metronome quality", m2["isa"], m2)
isa = "AVX2+FMA" if "AVX2 = 1" in l["system_info"] and "AVX512 = 1" not in l["system_info"] else l["system_info"]
row(f"llama.cpp (llama-cpp-python {l['version']}, Q4_1 dot products)", isa, l)
PY
