#include "calibrate/grid.h"

#include <initializer_list>

namespace metronome::calibrate {

std::string_view to_string(BenchKind k) {
  switch (k) {
    case BenchKind::kStep:
      return "step";
    case BenchKind::kAttention:
      return "attention";
    case BenchKind::kGemm:
      return "gemm";
  }
  return "?";
}

std::optional<BenchKind> bench_kind_from(std::string_view s) {
  for (auto k : {BenchKind::kStep, BenchKind::kAttention, BenchKind::kGemm}) {
    if (to_string(k) == s) return k;
  }
  return std::nullopt;
}

std::string point_name(const GridPoint& p) {
  return std::string(to_string(p.kind)) + "/s:" + std::to_string(p.sessions) +
         "/q:" + std::to_string(p.q_len) + "/ctx:" + std::to_string(p.ctx) +
         "/w:" + std::to_string(p.window) + "/sinks:" + std::to_string(p.sinks);
}

namespace {

void cross(std::vector<GridPoint>& out, BenchKind kind, std::initializer_list<int32_t> sessions,
           std::initializer_list<int32_t> q_lens, std::initializer_list<int32_t> ctxs,
           int64_t window = -1, int64_t sinks = 0) {
  for (int32_t s : sessions) {
    for (int32_t q : q_lens) {
      for (int32_t c : ctxs) out.push_back({kind, s, q, c, window, sinks});
    }
  }
}

// The fit has up to six terms (fixed, sessions, query_tokens, kv_read_tokens, qk_pairs, MoE
// experts); each grid varies sessions, tokens per session and context independently so that every
// term moves while the others stay put, and holds out a quarter of the points.
Grid ci_grid() {
  Grid g{"ci", "tiny CPU grid for CI: every term identifiable, a few seconds in all", 0.005, 3, 1,
         {}};
  cross(g.points, BenchKind::kStep, {1, 3, 6}, {1, 4}, {32, 192});
  cross(g.points, BenchKind::kStep, {2, 5}, {1, 4}, {320}, 64, 4);
  cross(g.points, BenchKind::kAttention, {3}, {4}, {192});
  cross(g.points, BenchKind::kGemm, {3}, {4}, {192});
  return g;
}

Grid cpu_grid() {
  Grid g{"cpu", "CPU reference kernels, tiny model: decode and 8-token frames, contexts to 1k",
         0.05,  5,
         2,     {}};
  cross(g.points, BenchKind::kStep, {1, 2, 4, 8, 16}, {1, 8}, {64, 256, 1024});
  cross(g.points, BenchKind::kStep, {4, 16}, {1, 8}, {1024}, 128, 4);
  cross(g.points, BenchKind::kAttention, {1, 16}, {1, 8}, {1024});
  cross(g.points, BenchKind::kGemm, {1, 16}, {1, 8}, {64});
  return g;
}

// Device grid for one model. Time budget (H200): about 60 s to build the standalone kernels, then
// per point one LayerStep allocation and random fill (well under 0.5 s even at 256 x 8k context)
// plus 2 warm-ups and 5 repetitions of >= 40 ms: about 0.5 s, so 40 points take well under 2
// minutes. The largest KV set (moshi, 32 KV heads: 16 KiB per token per layer; 256 sessions x 8k
// tokens; 2 rotating pools) is 64 GiB, inside the card's 139 GiB.
Grid gpu_grid() {
  Grid g{
      "gpu", "device grid: decode at 1..256 sessions, 16-token frames, contexts 512..8k, windowed",
      0.04,  5,
      2,     {}};
  cross(g.points, BenchKind::kStep, {1, 8, 32, 128, 256}, {1}, {512, 2048, 8192});
  cross(g.points, BenchKind::kStep, {1, 8, 32, 64}, {16}, {512, 4096});
  cross(g.points, BenchKind::kStep, {16, 256}, {1, 16}, {8192}, 1024, 16);
  // Few tokens, where MoE expert coverage E (1 - (1 - k/E)^tokens) still rises steeply: separates
  // it from the per-session term, which decode alone ties to the token count.
  cross(g.points, BenchKind::kStep, {2, 4}, {1, 4}, {2048});
  cross(g.points, BenchKind::kAttention, {32, 256}, {1, 16}, {4096});
  cross(g.points, BenchKind::kGemm, {1, 32, 256}, {1, 16}, {512});
  return g;
}

Grid gpu_quick_grid() {
  Grid g{"gpu-quick", "device smoke grid: the smallest set the six-term fit accepts", 0.02, 3, 1,
         {}};
  cross(g.points, BenchKind::kStep, {1, 16, 128}, {1, 16}, {512, 4096});
  cross(g.points, BenchKind::kStep, {64}, {1}, {8192}, 1024, 16);
  return g;
}

}  // namespace

std::optional<Grid> find_grid(std::string_view name) {
  if (name == "ci") return ci_grid();
  if (name == "cpu") return cpu_grid();
  if (name == "gpu") return gpu_grid();
  if (name == "gpu-quick") return gpu_quick_grid();
  return std::nullopt;
}

std::vector<std::string> grid_names() { return {"ci", "cpu", "gpu", "gpu-quick"}; }

}  // namespace metronome::calibrate
