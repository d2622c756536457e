// Random frames over a paged KV cache, shared by the CPU and GPU kernel tests.
//
// A frame is built the way an engine reaches it: each session's history is appended in frames of
// random size, interleaved across sessions (so physical blocks interleave), with the windowed
// policy releasing blocks after each history frame. Then every session appends this frame's tokens.
// Cache values are random and rounded to the kernel dtype so that CPU and GPU see identical inputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/block_table.h"
#include "kernels/dtype.h"
#include "kernels/paged_kv.h"
#include "kernels/reference/paged_attention_ref.h"

namespace metronome::kernels::testing {

struct SessionSpec {
  int32_t ctx;    // tokens cached before this frame
  int32_t q_len;  // tokens this frame brings
};

struct FrameSpec {
  int32_t block_size = 16;
  int32_t kv_heads = 2;
  int32_t group = 2;  // query heads per KV head
  int32_t head_dim = 64;
  kv::Window window{};
  std::vector<SessionSpec> sessions;
  Dtype dtype = Dtype::kBF16;
  uint64_t seed = 1;
};

struct Frame {
  FrameSpec spec;
  BlockPool pool{0};
  std::vector<SessionBlocks> sessions;
  reference::HostKvCache cache_before{0, 1, 1, 1};  // state before this frame's append
  std::vector<int32_t> q_start, seq_lens, tables;
  int32_t max_blocks = 0;
  std::vector<float> q;             // [total_q, q_heads, head_dim]
  std::vector<float> k_new, v_new;  // [total_q, kv_heads, head_dim]

  int32_t q_heads() const { return spec.kv_heads * spec.group; }
  int32_t total_q() const { return q_start.back(); }
  FrameBatch batch() const {
    FrameBatch b;
    b.num_sessions = static_cast<int32_t>(seq_lens.size());
    b.q_start = q_start.data();
    b.seq_lens = seq_lens.data();
    b.block_tables = tables.data();
    b.max_blocks = max_blocks;
    for (size_t s = 0; s < seq_lens.size(); ++s) {
      b.max_q_len = std::max(b.max_q_len, q_start[s + 1] - q_start[s]);
      b.max_seq_len = std::max(b.max_seq_len, seq_lens[s]);
    }
    return b;
  }
};

inline Frame make_frame(const FrameSpec& spec) {
  Frame f;
  f.spec = spec;
  std::mt19937_64 rng(spec.seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto rnd = [&] { return round_to(normal(rng), spec.dtype); };
  const int32_t bs = spec.block_size;
  int64_t blocks = 0;
  for (const auto& s : spec.sessions) blocks += kv::ceil_div(s.ctx + s.q_len, bs);
  f.pool = BlockPool(static_cast<int32_t>(blocks));
  f.cache_before =
      reference::HostKvCache(static_cast<int32_t>(blocks), bs, spec.kv_heads, spec.head_dim);
  const size_t row = static_cast<size_t>(spec.kv_heads) * spec.head_dim;
  for (size_t i = 0; i < spec.sessions.size(); ++i) f.sessions.emplace_back(spec.window, bs);

  // History, round robin in random-size chunks.
  std::uniform_int_distribution<int32_t> chunk(1, 37);
  bool pending = true;
  while (pending) {
    pending = false;
    for (size_t i = 0; i < spec.sessions.size(); ++i) {
      SessionBlocks& sb = f.sessions[i];
      const int64_t left = spec.sessions[i].ctx - sb.tokens();
      if (left <= 0) continue;
      const int64_t n = std::min<int64_t>(left, chunk(rng));
      const int64_t first = sb.tokens();
      if (!sb.append(f.pool, n)) throw std::logic_error("make_frame: pool too small");
      auto view = f.cache_before.view();
      for (int64_t p = first; p < first + n; ++p) {
        const int32_t blk = sb.physical_block(p);
        if (blk < 0) throw std::logic_error("make_frame: appended into a released block");
        const int64_t off = view.offset(blk, p % bs, 0);
        for (size_t x = 0; x < row; ++x) {
          view.k[off + static_cast<int64_t>(x)] = rnd();
          view.v[off + static_cast<int64_t>(x)] = rnd();
        }
      }
      sb.release_outside_window(f.pool);
      pending = pending || sb.tokens() < spec.sessions[i].ctx;
    }
  }
  // This frame.
  f.q_start.push_back(0);
  std::vector<const SessionBlocks*> ptrs;
  for (size_t i = 0; i < spec.sessions.size(); ++i) {
    if (!f.sessions[i].append(f.pool, spec.sessions[i].q_len)) {
      throw std::logic_error("make_frame: pool too small for the frame");
    }
    f.q_start.push_back(f.q_start.back() + spec.sessions[i].q_len);
    f.seq_lens.push_back(static_cast<int32_t>(f.sessions[i].tokens()));
    f.max_blocks = std::max(f.max_blocks, static_cast<int32_t>(f.sessions[i].table().size()));
    ptrs.push_back(&f.sessions[i]);
  }
  f.max_blocks = std::max(f.max_blocks, 1);
  f.tables = dense_block_tables(ptrs, f.max_blocks);
  const size_t tq = static_cast<size_t>(f.total_q());
  f.q.resize(tq * f.q_heads() * spec.head_dim);
  for (float& x : f.q) x = rnd();
  f.k_new.resize(tq * row);
  f.v_new.resize(tq * row);
  for (float& x : f.k_new) x = rnd();
  for (float& x : f.v_new) x = rnd();
  return f;
}

// Relative L2 error ||a - b|| / ||b||; NaN if either holds a NaN.
inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double{a[i]} - double{b[i]};
    num += d * d;
    den += double{b[i]} * double{b[i]};
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// Largest error of one output row (one token's one query head, row_len values), each row's
// ||a_r - b_r|| / max(||b_r||, 1e-3 sqrt(row_len)): the whole-output L2 dilutes one wrong row among
// thousands; this does not. NaN if either holds a NaN.
inline double max_row_rel_err(const std::vector<float>& a, const std::vector<float>& b,
                              size_t row_len) {
  double worst = 0;
  const double floor = 1e-3 * std::sqrt(static_cast<double>(row_len));
  for (size_t r = 0; r + row_len <= b.size(); r += row_len) {
    double num = 0, den = 0;
    for (size_t x = r; x < r + row_len; ++x) {
      const double d = double{a[x]} - double{b[x]};
      num += d * d;
      den += double{b[x]} * double{b[x]};
    }
    const double e = std::sqrt(num) / std::max(std::sqrt(den), floor);
    if (std::isnan(e)) return e;
    worst = std::max(worst, e);
  }
  return worst;
}

// The frame's attention as dense attention per session and query head under a mask written out
// here from the definition (causal, and sinks or inside the window), not through kv_window.h:
// the independent check on the paged reference. Output [total_q, q_heads, head_dim].
inline std::vector<float> dense_masked_attention(const Frame& f) {
  const FrameSpec& spec = f.spec;
  const int32_t d = spec.head_dim, qh = f.q_heads(), bs = spec.block_size;
  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  std::vector<float> result(f.q.size(), std::nanf(""));
  const auto view = f.cache_before.view();
  for (size_t s = 0; s < spec.sessions.size(); ++s) {
    const int32_t nk = f.seq_lens[s], nq = spec.sessions[s].q_len, ctx = spec.sessions[s].ctx;
    for (int32_t h = 0; h < qh; ++h) {
      const int32_t g = h / spec.group;
      // Dense K/V of this session: history from cache_before's blocks (released ones are never
      // visible, so zeros stand in), new tokens from k_new/v_new.
      std::vector<float> k(static_cast<size_t>(nk) * d, 0.f), v = k, q(size_t(nq) * d),
                                                              out(size_t(nq) * d);
      for (int32_t p = 0; p < nk; ++p) {
        const float* ks;
        const float* vs;
        if (p < ctx) {
          const int32_t blk = f.tables[s * f.max_blocks + p / bs];
          if (blk < 0) continue;
          ks = view.k + view.offset(blk, p % bs, g);
          vs = view.v + view.offset(blk, p % bs, g);
        } else {
          const size_t t = f.q_start[s] + (p - ctx);
          ks = f.k_new.data() + (t * spec.kv_heads + g) * d;
          vs = f.v_new.data() + (t * spec.kv_heads + g) * d;
        }
        std::copy_n(ks, d, k.begin() + int64_t{p} * d);
        std::copy_n(vs, d, v.begin() + int64_t{p} * d);
      }
      std::vector<uint8_t> mask(static_cast<size_t>(nq) * nk);
      for (int32_t i = 0; i < nq; ++i) {
        const int64_t pos = ctx + i;
        for (int32_t j = 0; j < nk; ++j) {
          const bool causal = j <= pos;
          const bool sink = j < spec.window.sinks;
          const bool in_window = spec.window.window < 0 || pos - spec.window.window <= j;
          mask[size_t(i) * nk + j] = causal && (sink || in_window);
        }
        const size_t t = f.q_start[s] + i;
        std::copy_n(f.q.data() + (t * qh + h) * d, d, q.begin() + int64_t{i} * d);
      }
      reference::masked_attention_ref(q, k, v, mask, nq, nk, d, scale, out);
      for (int32_t i = 0; i < nq; ++i) {
        const size_t t = f.q_start[s] + i;
        std::copy_n(out.begin() + int64_t{i} * d, d, result.begin() + (t * qh + h) * d);
      }
    }
  }
  return result;
}

}  // namespace metronome::kernels::testing
