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

}  // namespace metronome::kernels::testing
