#include "quality/window_attention.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "quality/exp_floats.h"
#include "quality/lane_max.h"
#include "quality/lane_sum.h"
#include "quality/packed_matrix.h"
#include "quality/workers.h"

namespace metronome::quality {

namespace {

constexpr int64_t kP = PackedMatrix::kPanel;

// A task's matrices, kept per thread from task to task: allocated fresh, the scores of 192 queries
// x 1024 keys (0.8 MB) came from mmap and went back every task, and clearing the new pages cost
// more than the softmax. Only sized: every element read is written first (the panels' padding
// columns included).
struct Scratch {
  std::vector<float> k, v, q, qs, s, ss, o;
  std::vector<uint32_t> keep;
  static float* take(std::vector<float>& buf, int64_t size) {
    if (buf.size() < static_cast<size_t>(size)) buf.resize(static_cast<size_t>(size));
    return buf.data();
  }
};

// Softmax of one row of scores in place over the keys with keep[j] all ones (masked keys, keep
// 0, weigh exactly 0 and are left out of the max and the sum: adding +0 to a lane that starts at
// +0 changes no bit). The max runs in lanes (lane_max.h), the masking and the exps a vector at a
// time (exp_floats: the scalar std::exp's bits), and the sum in double lanes (lane_sum.h).
void softmax_row(float* row, const uint32_t* keep, int64_t nk) {
  const auto masked = [&](int64_t j, float x) {
    return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & keep[j]);
  };
  const float mx = lane_max(row, keep, nk);
  for (int64_t j = 0; j < nk; ++j) row[j] = masked(j, row[j] - mx);  // masked: +0
  exp_floats(row, row, nk);
  for (int64_t j = 0; j < nk; ++j) row[j] = masked(j, row[j]);  // masked: e^0 dropped
  const float inv = static_cast<float>(1.0 / lane_sum(row, nk));
  for (int64_t j = 0; j < nk; ++j) row[j] *= inv;
}

// One (sequence, KV head) task: gather its keys, score, mask, softmax, weight the values.
void attend(kernels::PagedKv<const float> kv, const kernels::FrameBatch& batch, int32_t s,
            kv::Window w, int32_t g, int32_t q_heads, float scale, const float* q_orig,
            const float* q_sink, float* out) {
  const int32_t n = batch.q_len(s);
  if (n == 0) return;
  const int32_t d = kv.head_dim;
  const int32_t group = q_heads / kv.kv_heads;
  const int64_t p_first = batch.seq_lens[s] - n;
  const int64_t p_last = batch.seq_lens[s] - 1;
  const int64_t start = kv::window_start(p_first, w);
  const int64_t sink_end = w.unbounded() ? 0 : std::min<int64_t>(w.sinks, start);
  const int64_t nk = sink_end + (p_last - start + 1);
  auto key_pos = [&](int64_t j) { return j < sink_end ? j : start + (j - sink_end); };

  // Both products are packed_matrix.h's chains, on the keys and values gathered straight into
  // its panel layout: the scores' weights are the keys (key j is output column j, its d values
  // the inputs), the output's the values (dimension c of value j is output c, input j).
  thread_local Scratch scratch;
  const int64_t key_panels = (nk + kP - 1) / kP, dim_panels = (d + kP - 1) / kP;
  float* const K = scratch.take(scratch.k, key_panels * d * kP);
  float* const V = scratch.take(scratch.v, dim_panels * nk * kP);
  // The padding columns are multiplied but never stored: zeros, not whatever the scratch held
  // (denormals there would slow every FMA that reads them).
  std::fill(K + (key_panels - 1) * d * kP, K + key_panels * d * kP, 0.f);
  for (int64_t j = 0; j < nk; ++j) {
    const int64_t k = key_pos(j);
    const int32_t blk = batch.physical_block(s, k, kv.block_size);
    if (blk < 0 || blk >= kv.num_blocks) {
      throw std::logic_error("window_attention: session " + std::to_string(s) + " key " +
                             std::to_string(k) + " is in released block " + std::to_string(blk));
    }
    const int64_t off = kv.offset(blk, k % kv.block_size, g);
    float* const kcol = K + (j / kP) * d * kP + j % kP;
    for (int32_t c = 0; c < d; ++c) kcol[c * kP] = kv.k[off + c];
    for (int64_t p = 0; p < dim_panels; ++p) {
      float* const vrow = V + (p * nk + j) * kP;
      const int64_t cols = std::min<int64_t>(kP, d - p * kP);
      if (cols == kP) {  // a whole panel row: a fixed-size copy, inlined (not a memmove call)
        std::memcpy(vrow, kv.v + off + p * kP, kP * sizeof(float));
        continue;
      }
      std::copy_n(kv.v + off + p * kP, cols, vrow);
      std::fill(vrow + cols, vrow + kP, 0.f);
    }
  }
  // Rows: query i of the step, head hh of the group: row i * group + hh.
  const int64_t rows = int64_t{n} * group;
  float* const Q = scratch.take(scratch.q, rows * d);
  // Sinks (keys < S) are the first columns in both layouts: [0, sink_end) when the first query's
  // window has left them, else the window's start at 0. Any of them a later query has left
  // behind is scored with q_sink.
  const int64_t sink_cols = w.unbounded() ? 0 : std::min<int64_t>(w.sinks, nk);
  const bool sinks_detach = sink_cols > 0 && q_sink != q_orig;
  float* const Qs = sinks_detach ? scratch.take(scratch.qs, rows * d) : nullptr;
  const int64_t t0 = batch.q_start[s];
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t hh = 0; hh < group; ++hh) {
      const int64_t src = ((t0 + i) * q_heads + g * group + hh) * d;
      const int64_t row = (int64_t{i} * group + hh) * d;
      std::copy_n(q_orig + src, d, Q + row);
      if (sinks_detach) std::copy_n(q_sink + src, d, Qs + row);
    }
  }
  float* const S = scratch.take(scratch.s, rows * nk);
  multiply_panels(Q, d, rows, K, nk, d, S, nk);
  for (int64_t e = 0; e < rows * nk; ++e) S[e] *= scale;
  if (sinks_detach) {
    float* const Ss = scratch.take(scratch.ss, rows * sink_cols);
    multiply_panels(Qs, d, rows, K, sink_cols, d, Ss, sink_cols);
    for (int32_t i = 0; i < n; ++i) {
      const int64_t ws = kv::window_start(p_first + i, w);
      for (int64_t j = 0; j < sink_cols; ++j) {
        if (key_pos(j) >= ws) continue;  // still inside this query's window
        for (int32_t hh = 0; hh < group; ++hh) {
          const int64_t r = int64_t{i} * group + hh;
          S[r * nk + j] = Ss[r * sink_cols + j] * scale;
        }
      }
    }
  }
  // The rule is asked once per query and key, not once per head of the group.
  if (scratch.keep.size() < static_cast<size_t>(nk)) scratch.keep.resize(static_cast<size_t>(nk));
  for (int32_t i = 0; i < n; ++i) {
    const int64_t p = p_first + i;
    for (int64_t j = 0; j < nk; ++j)
      scratch.keep[static_cast<size_t>(j)] = kv::key_visible(p, key_pos(j), w) ? ~0u : 0u;
    for (int32_t hh = 0; hh < group; ++hh)
      softmax_row(S + (int64_t{i} * group + hh) * nk, scratch.keep.data(), nk);
  }
  float* const O = scratch.take(scratch.o, rows * d);
  multiply_panels(S, nk, rows, V, d, nk, O, d);
  for (int32_t i = 0; i < n; ++i) {
    for (int32_t hh = 0; hh < group; ++hh) {
      std::copy_n(O + (int64_t{i} * group + hh) * d, d,
                  out + ((t0 + i) * q_heads + g * group + hh) * d);
    }
  }
}

}  // namespace

void window_attention(kernels::PagedKv<const float> kv, const kernels::FrameBatch& batch,
                      std::span<const kv::Window> windows, int32_t q_heads, float scale,
                      std::span<const float> q_orig, std::span<const float> q_sink,
                      std::span<float> out, Workers* workers) {
  if (q_heads < 1 || kv.kv_heads < 1 || q_heads % kv.kv_heads != 0) {
    throw std::invalid_argument("window_attention: q_heads must be a multiple of kv_heads");
  }
  if (static_cast<int32_t>(windows.size()) != batch.num_sessions) {
    throw std::invalid_argument("window_attention: one window per session");
  }
  const size_t need = static_cast<size_t>(batch.total_q()) * q_heads * kv.head_dim;
  if (q_orig.size() < need || q_sink.size() < need || out.size() < need) {
    throw std::invalid_argument("window_attention: q/out too small");
  }
  const int32_t tasks = batch.num_sessions * kv.kv_heads;
  const auto one = [&](int64_t task) {
    const auto s = static_cast<int32_t>(task / kv.kv_heads);
    attend(kv, batch, s, windows[static_cast<size_t>(s)], static_cast<int32_t>(task % kv.kv_heads),
           q_heads, scale, q_orig.data(), q_sink.data(), out.data());
  };
  if (workers) {
    workers->for_each(tasks, one);
  } else {
    for (int32_t task = 0; task < tasks; ++task) one(task);
  }
}

}  // namespace metronome::quality
