// Speed of `metronome quality`'s forward pass (quality/llama_model.h), for
// bench/quality_forward.sh.
//   quality_forward MODEL.gguf TEXT.txt [--threads N] [--tokens N] [--chunk N] [--reps N]
//                   [--isa AVX2+FMA|AVX-512|scalar]   (default: the widest the CPU has)
//                   [--wide-decode]   (every product on the float panels, not the block codes)
// Prints one JSON object on stdout:
//   prefill: one sequence, unbounded KV, fed `chunk` tokens a step up to `tokens` (what a
//     perplexity run does; logits of every token), tokens/s as the median of `reps` runs;
//   decode: one sequence generating one token a step after a `chunk`-token prompt, tokens/s;
//   both also per CPU second of the process (prefill_tokens_per_cpu_s, decode_tokens_per_cpu_s):
//     at one thread on a shared machine, the speed of the work itself;
//   products: each weight matrix's product alone at `chunk` rows, GFLOP/s (2 m n k per product,
//     the median of repetitions over fresh output), and the instruction set it ran on;
//   peak: the machine's fp32 FLOP/s per instruction set, measured on one thread ("one core") and on
//     `threads` threads at once ("all"; on a shared machine another job's use of a core lowers it,
//     so the roofline to compare with is threads x one core):
//     12 independent FMA chains per thread in registers (no memory operand), enough to cover the
//     FMA latency on every x86 core of the last decade (8 to 24 chains measure the same on this
//     project's Zen 5 EPYC: throughput-bound), 2 FLOP per lane per FMA. This is the roofline's
//     flat part as the cores run it (their actual clock, turbo and all), not a datasheet number.
// The first run of each is a warm-up, not counted.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "quality/bpe_tokenizer.h"
#include "quality/gguf_file.h"
#include "quality/llama_model.h"
#include "quality/packed_matrix.h"
#include "quality/workers.h"

namespace q = metronome::quality;

namespace {

// FLOP of `iters` steps of 12 chains of width-lane FMAs: 12 * lanes * 2 per step.
template <int kLanes>
double chain_flop(int64_t iters) {
  return 24.0 * kLanes * static_cast<double>(iters);
}

__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iters) {
  __m256 a[12];
  for (auto& x : a) x = _mm256_set1_ps(1.f);
  const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (auto& x : a) x = _mm256_fmadd_ps(x, m, c);
  }
  float out = 0;
  for (auto& x : a) out += _mm256_cvtss_f32(x);
  return out;
}

__attribute__((target("avx512f"))) float fma_chains_avx512(int64_t iters) {
  __m512 a[12];
  for (auto& x : a) x = _mm512_set1_ps(1.f);
  const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (auto& x : a) x = _mm512_fmadd_ps(x, m, c);
  }
  float out = 0;
  for (auto& x : a) out += _mm512_cvtss_f32(x);
  return out;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds of the whole process (every thread). On a shared machine a run's wall clock is
// mostly a measure of the other jobs; at one thread, tokens per CPU second is the work's own speed.
double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// A run's tokens per wall and per CPU second.
struct Rate {
  double wall, cpu;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: quality_forward MODEL.gguf TEXT.txt [--threads N] [--tokens N] "
                 "[--chunk N] [--reps N]\n";
    return 2;
  }
  int threads = 2, reps = 3;
  std::string isa;
  int64_t tokens = 512, chunk = 64;
  bool narrow = true;
  for (int i = 3; i < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--wide-decode") {
      narrow = false;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "quality_forward: " << a << " needs a value\n";
      return 2;
    }
    if (a == "--isa") {
      isa = argv[i + 1];
      continue;
    }
    const long long v = std::stoll(argv[i + 1]);
    if (a == "--threads")
      threads = static_cast<int>(v);
    else if (a == "--tokens")
      tokens = v;
    else if (a == "--chunk")
      chunk = v;
    else if (a == "--reps")
      reps = static_cast<int>(v);
    else {
      std::cerr << "quality_forward: unknown option " << a << "\n";
      return 2;
    }
  }
  if (!q::use_packed_matrix_isa(isa)) {
    std::cerr << "quality_forward: --isa " << isa << " is not available here\n";
    return 2;
  }
  q::use_narrow_products(narrow);
  const q::GgufFile gguf(argv[1]);
  const q::LlamaModel model(gguf);
  const q::BpeTokenizer tok(gguf);
  std::ifstream in(argv[2]);
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<int32_t> ids = tok.encode(text.str().substr(0, 8 * static_cast<size_t>(tokens) + 64));
  ids.resize(static_cast<size_t>(tokens));
  const q::LlamaConfig& c = model.config();
  q::Workers workers(threads);

  auto prefill = [&] {
    q::KvBatch kv(c, q::KvBatch::blocks_needed({}, tokens, chunk, 16), 16);
    kv.add({}, q::PositionMode::kCache);
    const double t0 = now_s(), c0s = cpu_s();
    for (int64_t c0 = 0; c0 < tokens; c0 += chunk) {
      model.step(
          kv, {std::vector<int32_t>(ids.begin() + c0, ids.begin() + std::min(tokens, c0 + chunk))},
          workers);
    }
    const auto n = static_cast<double>(tokens);
    return Rate{n / (now_s() - t0), n / (cpu_s() - c0s)};
  };
  const int64_t gen = 64;
  auto decode = [&] {
    q::KvBatch kv(c, q::KvBatch::blocks_needed({}, chunk + gen, chunk, 16), 16);
    kv.add({}, q::PositionMode::kCache);
    model.step(kv, {std::vector<int32_t>(ids.begin(), ids.begin() + chunk)}, workers);
    const double t0 = now_s(), c0s = cpu_s();
    for (int64_t i = 0; i < gen; ++i)
      model.step(kv, {{ids[static_cast<size_t>(chunk + i)]}}, workers);
    const auto n = static_cast<double>(gen);
    return Rate{n / (now_s() - t0), n / (cpu_s() - c0s)};
  };
  std::vector<double> pf, dc, pf_cpu, dc_cpu;
  prefill();
  for (int r = 0; r < reps; ++r) {
    const Rate x = prefill();
    pf.push_back(x.wall);
    pf_cpu.push_back(x.cpu);
  }
  decode();
  for (int r = 0; r < reps; ++r) {
    const Rate x = decode();
    dc.push_back(x.wall);
    dc_cpu.push_back(x.cpu);
  }

  // The layer shapes alone, random-free inputs (values do not change the speed).
  nlohmann::json products = nlohmann::json::array();
  const int64_t h = c.hidden, f = c.ffn, kvd = int64_t{c.kv_heads} * c.head_dim;
  struct Shape {
    const char* name;
    int64_t n, k;
  };
  for (const Shape s : {Shape{"qkv", h + 2 * kvd, h}, Shape{"wo", h, h}, Shape{"gate_up", 2 * f, h},
                        Shape{"down", h, f}, Shape{"logits", c.vocab, h}}) {
    std::vector<float> w(static_cast<size_t>(s.n * s.k)), x(static_cast<size_t>(chunk * s.k)),
        y(static_cast<size_t>(chunk * s.n));
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) * 0.01f;
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 5) * 0.1f;
    const q::PackedMatrix m(w, s.n, s.k);
    std::vector<double> gf;
    for (int r = 0; r < 6; ++r) {
      const double t0 = now_s();
      m.multiply(x.data(), s.k, chunk, y.data(), s.n, workers);
      const double dt = now_s() - t0;
      if (r > 0) gf.push_back(2.0 * static_cast<double>(chunk * s.n * s.k) / dt / 1e9);
    }
    products.push_back({{"matrix", s.name}, {"n", s.n}, {"k", s.k}, {"gflops", median(gf)}});
  }
  // Peak: the best of 20 runs of about 20 ms on every worker at once (short runs, best of many:
  // on a shared machine a longer run is mostly a measure of the other jobs).
  nlohmann::json peak = nlohmann::json::object(), peak_one = nlohmann::json::object();
  const auto measure = [&](auto chains, double flop_per_iter, int on) {
    const int64_t iters = 2'000'000;
    double best = 0;
    std::vector<float> sink(static_cast<size_t>(threads));
    for (int r = 0; r < 20; ++r) {
      const double t0 = now_s();
      workers.run([&](int w) {
        if (w < on) sink[static_cast<size_t>(w)] = chains(iters);
      });
      best = std::max(best, flop_per_iter * static_cast<double>(iters) * on / (now_s() - t0));
    }
    return best / 1e9;
  };
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    peak["AVX2+FMA"] = measure(fma_chains_avx2, chain_flop<8>(1), threads);
    peak_one["AVX2+FMA"] = measure(fma_chains_avx2, chain_flop<8>(1), 1);
  }
  if (__builtin_cpu_supports("avx512f")) {
    peak["AVX-512"] = measure(fma_chains_avx512, chain_flop<16>(1), threads);
    peak_one["AVX-512"] = measure(fma_chains_avx512, chain_flop<16>(1), 1);
  }
  const double flop_per_token = [&] {
    // 2 n k per weight matrix and token: the layers' products and the logits.
    const double layer = static_cast<double>((h + 2 * kvd) * h + h * h + 2 * f * h + h * f);
    return 2.0 * (layer * c.layers + static_cast<double>(c.vocab) * h);
  }();
  // Attention's products in the prefill, per token: the token at position p (0-based) scores p + 1
  // keys and sums as many values, 2 x 2 x q_heads x head_dim x (p + 1) per layer; p averages
  // (tokens - 1) / 2 over the sequence. Softmax, norms and RoPE are not counted.
  const double attention_flop_per_token =
      4.0 * c.q_heads * c.head_dim * c.layers * (static_cast<double>(tokens - 1) / 2.0 + 1.0);
  const nlohmann::json out{{"threads", threads},
                           {"chunk", chunk},
                           {"tokens", tokens},
                           {"isa", q::packed_matrix_isa()},
                           {"decode_on_block_codes", narrow},
                           {"weight_flop_per_token", flop_per_token},
                           {"prefill_attention_flop_per_token", attention_flop_per_token},
                           {"prefill_tokens_per_s", median(pf)},
                           {"decode_tokens_per_s", median(dc)},
                           {"prefill_tokens_per_cpu_s", median(pf_cpu)},
                           {"decode_tokens_per_cpu_s", median(dc_cpu)},
                           {"products", products},
                           {"peak_gflops", peak},
                           {"peak_gflops_one_thread", peak_one}};
  std::cout << out.dump(2) << "\n";
  return 0;
}
