// The attention test grid, shared by the GPU comparison (kernels_gpu_test, label gpu) and by the
// CPU checks of the grid itself and of the reference on it (kernels_cpu_test, label cpu).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/kv_window.h"
#include "frame_fixture.h"
#include "kernels/dtype.h"

namespace metronome::kernels::testing {

struct AttentionCase {
  FrameSpec spec;
  int32_t num_splits = 0;  // 0: the launcher picks
  // q, k_new and v_new read in place from one fused QKV row (q | k | v | pad), as LayerStep does,
  // through q_row_stride and new_row_stride.
  bool fused_qkv = false;
  std::string name;
};

inline constexpr kv::Window kGridWindows[] = {{-1, 0}, {40, 0}, {40, 4}, {100, 17}, {0, 2}};
inline constexpr int32_t kGridSplits[] = {0, 1, 3, 0, 5};

inline std::vector<AttentionCase> attention_grid() {
  std::vector<AttentionCase> cases;
  const int32_t blocks[] = {1, 16, 7, 32};
  struct Gqa {
    int32_t kv, group;
  };
  // (4, 8) is Qwen3-Omni's 32 query / 4 KV heads; (4, 7) Qwen2.5-Omni's 28 / 4.
  const Gqa gqas[] = {{1, 1}, {2, 4}, {4, 7}, {8, 1}, {4, 8}};
  const int32_t dims[] = {64, 128};
  // Context lengths that cross block and window edges, and q from decode to an audio frame.
  const std::vector<std::vector<SessionSpec>> batches = {
      {{0, 1}, {15, 1}, {16, 1}, {17, 1}, {333, 1}},
      {{100, 8}, {0, 25}, {41, 3}},
      {{141, 25}, {57, 1}, {2, 2}},
      {{300, 1}, {300, 1}, {1, 1}, {44, 4}},
  };
  constexpr int32_t kWindows = sizeof(kGridWindows) / sizeof(kGridWindows[0]);
  int i = 0;
  for (const int32_t b : blocks) {
    for (const Gqa g : gqas) {
      for (const int32_t d : dims) {
        for (const kv::Window w : kGridWindows) {
          AttentionCase c;
          c.spec.block_size = b;
          c.spec.kv_heads = g.kv;
          c.spec.group = g.group;
          c.spec.head_dim = d;
          c.spec.window = w;
          c.spec.sessions = batches[static_cast<size_t>(i) % batches.size()];
          c.spec.dtype = i % 3 == 2 ? Dtype::kF16 : Dtype::kBF16;
          c.spec.seed = 1000 + static_cast<uint64_t>(i);
          // The split count rotates against the window (offset by the window group), so every
          // window meets every forced split count; i % 5 alone would pin one count per window.
          c.num_splits = kGridSplits[(i + i / kWindows) % 5];
          c.fused_qkv = (i / kWindows) % 3 == 1;
          c.name = "bs" + std::to_string(b) + "_kv" + std::to_string(g.kv) + "_g" +
                   std::to_string(g.group) + "_d" + std::to_string(d) + "_W" +
                   (w.unbounded() ? std::string("inf") : std::to_string(w.window)) + "_S" +
                   std::to_string(w.sinks) + "_" + dtype_name(c.spec.dtype) + "_sp" +
                   std::to_string(c.num_splits) + "_b" + std::to_string(i % batches.size()) +
                   (c.fused_qkv ? "_fused" : "");
          cases.push_back(c);
          ++i;
        }
      }
    }
  }
  // Long contexts: the automatic split-KV path with few sessions, at G = 7 and G = 8.
  for (const int32_t group : {7, 8}) {
    for (const kv::Window w : {kv::Window{-1, 0}, kv::Window{1000, 4}}) {
      AttentionCase c;
      c.spec.block_size = 16;
      c.spec.kv_heads = 4;
      c.spec.group = group;
      c.spec.head_dim = 128;
      c.spec.window = w;
      c.spec.sessions = {{6000, 1}, {4099, 1}, {2500, 20}};
      c.spec.seed = 77 + static_cast<uint64_t>(group);
      c.fused_qkv = group == 8;
      c.name = std::string("long_g") + std::to_string(group) + "_" +
               (w.unbounded() ? "unbounded" : "windowed") + (c.fused_qkv ? "_fused" : "");
      cases.push_back(c);
    }
  }
  return cases;
}

}  // namespace metronome::kernels::testing
