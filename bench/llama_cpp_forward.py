"""llama.cpp's forward pass on a GGUF, measured as bench/quality_forward.cpp measures metronome's.

    llama_cpp_forward.py MODEL.gguf TEXT.txt THREADS TOKENS CHUNK REPS   (run by quality_forward.sh)

Prints one JSON object: prefill tokens/s (one sequence fed CHUNK tokens a step up to TOKENS, logits
of every token kept, as a perplexity run needs: logits_all) and decode tokens/s (64 tokens one at a
time after a CHUNK-token prompt), each the median of REPS runs after a warm-up, also per CPU second
of the process (all its threads: at one thread on a shared machine, the work's own speed, as
quality_forward reports it), with llama.cpp's own system info (the instruction sets its build uses).
"""
import json
import statistics
import sys
import time

import llama_cpp
from llama_cpp import Llama

model, text_path, threads, tokens, chunk, reps = sys.argv[1:7]
threads, tokens, chunk, reps = int(threads), int(tokens), int(chunk), int(reps)
GEN = 64

llm = Llama(model_path=model, n_ctx=max(tokens, chunk + GEN) + 64, n_batch=chunk, n_ubatch=chunk,
            n_threads=threads, n_threads_batch=threads, logits_all=True, verbose=False)
text = open(text_path, "rb").read()[: 8 * tokens + 64]
ids = llm.tokenize(text, add_bos=False)[: tokens + GEN]
if len(ids) < max(tokens, chunk + GEN):
    sys.exit("llama_cpp_forward: text too short")


def prefill():
    llm.reset()  # eval() drops the cache from position n_tokens (0 after a reset) on
    t0, c0 = time.perf_counter(), time.process_time()
    llm.eval(ids[:tokens])
    return tokens / (time.perf_counter() - t0), tokens / (time.process_time() - c0)


def decode():
    llm.reset()
    llm.eval(ids[:chunk])
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(GEN):
        llm.eval([ids[chunk + i]])
    return GEN / (time.perf_counter() - t0), GEN / (time.process_time() - c0)


prefill()
pf = [prefill() for _ in range(reps)]
decode()
dc = [decode() for _ in range(reps)]
print(json.dumps({
    "version": llama_cpp.__version__,
    "threads": threads,
    "chunk": chunk,
    "tokens": tokens,
    "system_info": llama_cpp.llama_print_system_info().decode(),
    "prefill_tokens_per_s": statistics.median(r[0] for r in pf),
    "decode_tokens_per_s": statistics.median(r[0] for r in dc),
    "prefill_tokens_per_cpu_s": statistics.median(r[1] for r in pf),
    "decode_tokens_per_cpu_s": statistics.median(r[1] for r in dc),
}, indent=2))
