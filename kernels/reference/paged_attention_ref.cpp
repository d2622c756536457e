#include "kernels/reference/paged_attention_ref.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace metronome::kernels::reference {

HostKvCache::HostKvCache(int32_t num_blocks, int32_t block_size, int32_t kv_heads, int32_t head_dim)
    : num_blocks_(num_blocks), block_size_(block_size), kv_heads_(kv_heads), head_dim_(head_dim) {
  if (num_blocks < 0 || block_size < 1 || kv_heads < 1 || head_dim < 1) {
    throw std::invalid_argument("HostKvCache: bad shape");
  }
  const size_t n = static_cast<size_t>(num_blocks) * block_size * kv_heads * head_dim;
  k_.assign(n, 0.f);
  v_.assign(n, 0.f);
}

PagedKv<float> HostKvCache::view() {
  return {k_.data(), v_.data(), num_blocks_, block_size_, kv_heads_, head_dim_};
}
PagedKv<const float> HostKvCache::view() const {
  return {k_.data(), v_.data(), num_blocks_, block_size_, kv_heads_, head_dim_};
}

namespace {

void check_batch(const FrameBatch& b) {
  if (b.num_sessions < 0 || !b.q_start || !b.seq_lens || !b.block_tables) {
    throw std::invalid_argument("FrameBatch: null arrays");
  }
  for (int32_t s = 0; s < b.num_sessions; ++s) {
    if (b.q_len(s) < 0 || b.q_len(s) > b.seq_lens[s]) {
      throw std::invalid_argument("FrameBatch: session " + std::to_string(s) +
                                  " has q_len outside [0, seq_len]");
    }
    if (b.seq_lens[s] > 0 && b.max_blocks <= 0) {
      throw std::invalid_argument("FrameBatch: max_blocks must be positive");
    }
  }
}

template <typename T>
int32_t block_of(const PagedKv<T>& kv, const FrameBatch& batch, int32_t s, int64_t pos) {
  if (pos / kv.block_size >= batch.max_blocks) {
    throw std::logic_error("position " + std::to_string(pos) + " beyond the block table");
  }
  const int32_t blk = batch.physical_block(s, pos, kv.block_size);
  if (blk < 0 || blk >= kv.num_blocks) {
    throw std::logic_error("session " + std::to_string(s) + " position " + std::to_string(pos) +
                           " is in released or invalid block " + std::to_string(blk));
  }
  return blk;
}

}  // namespace

void append_kv_ref(PagedKv<float> kv, const FrameBatch& batch, std::span<const float> k_new,
                   std::span<const float> v_new) {
  check_batch(batch);
  const size_t row = static_cast<size_t>(kv.kv_heads) * kv.head_dim;
  if (k_new.size() < batch.total_q() * row || v_new.size() < batch.total_q() * row) {
    throw std::invalid_argument("append_kv_ref: k_new/v_new too small");
  }
  for (int32_t s = 0; s < batch.num_sessions; ++s) {
    const int32_t n = batch.q_len(s);
    for (int32_t i = 0; i < n; ++i) {
      const int64_t pos = batch.seq_lens[s] - n + i;
      const int32_t blk = block_of(kv, batch, s, pos);
      const int64_t dst = kv.offset(blk, pos % kv.block_size, 0);
      const size_t src = static_cast<size_t>(batch.q_start[s] + i) * row;
      std::copy_n(k_new.begin() + static_cast<ptrdiff_t>(src), row, kv.k + dst);
      std::copy_n(v_new.begin() + static_cast<ptrdiff_t>(src), row, kv.v + dst);
    }
  }
}

void paged_attention_ref(PagedKv<const float> kv, const FrameBatch& batch, kv::Window window,
                         AttentionShape shape, std::span<const float> q, std::span<float> out) {
  check_batch(batch);
  if (shape.q_heads < 1 || shape.q_heads % kv.kv_heads != 0) {
    throw std::invalid_argument("paged_attention_ref: q_heads must be a multiple of kv_heads");
  }
  const int32_t d = kv.head_dim;
  const int32_t group = shape.q_heads / kv.kv_heads;
  const size_t need = static_cast<size_t>(batch.total_q()) * shape.q_heads * d;
  if (q.size() < need || out.size() < need) {
    throw std::invalid_argument("paged_attention_ref: q/out too small");
  }
  std::vector<int64_t> keys;
  std::vector<const float*> krow, vrow;
  std::vector<double> score, acc(static_cast<size_t>(d));
  for (int32_t s = 0; s < batch.num_sessions; ++s) {
    const int32_t n = batch.q_len(s);
    for (int32_t i = 0; i < n; ++i) {
      const int64_t p = batch.seq_lens[s] - n + i;
      // Visible keys: sinks left of the window, then the window up to p. Both ranges are derived
      // from kv_window.h and then re-checked key by key against the one rule.
      keys.clear();
      const int64_t start = kv::window_start(p, window);
      const int64_t sink_end = window.unbounded() ? 0 : std::min<int64_t>(window.sinks, start);
      for (int64_t k = 0; k < sink_end; ++k) keys.push_back(k);
      for (int64_t k = start; k <= p; ++k) keys.push_back(k);
      for (const int64_t k : keys) {
        if (!kv::key_visible(p, k, window)) throw std::logic_error("visible-key ranges drifted");
      }
      const int64_t t = batch.q_start[s] + i;
      for (int32_t g = 0; g < kv.kv_heads; ++g) {
        krow.clear();
        vrow.clear();
        for (const int64_t k : keys) {
          const int64_t off = kv.offset(block_of(kv, batch, s, k), k % kv.block_size, g);
          krow.push_back(kv.k + off);
          vrow.push_back(kv.v + off);
        }
        for (int32_t hh = 0; hh < group; ++hh) {
          const int32_t h = g * group + hh;
          const float* qv = q.data() + (t * shape.q_heads + h) * d;
          score.assign(keys.size(), 0.0);
          double mx = -std::numeric_limits<double>::infinity();
          for (size_t j = 0; j < keys.size(); ++j) {
            double dot = 0.0;
            for (int32_t x = 0; x < d; ++x) dot += double{qv[x]} * double{krow[j][x]};
            score[j] = dot * shape.scale;
            mx = std::max(mx, score[j]);
          }
          double sum = 0.0;
          std::fill(acc.begin(), acc.end(), 0.0);
          for (size_t j = 0; j < keys.size(); ++j) {
            const double w = std::exp(score[j] - mx);  // subtract the max: no overflow
            sum += w;
            for (int32_t x = 0; x < d; ++x) acc[static_cast<size_t>(x)] += w * vrow[j][x];
          }
          float* o = out.data() + (t * shape.q_heads + h) * d;
          for (int32_t x = 0; x < d; ++x)
            o[x] = static_cast<float>(acc[static_cast<size_t>(x)] / sum);
        }
      }
    }
  }
}

void masked_attention_ref(std::span<const float> q, std::span<const float> k,
                          std::span<const float> v, std::span<const uint8_t> mask, int32_t nq,
                          int32_t nk, int32_t d, float scale, std::span<float> out) {
  const size_t sq = static_cast<size_t>(nq) * d, sk = static_cast<size_t>(nk) * d;
  if (q.size() < sq || k.size() < sk || v.size() < sk || out.size() < sq ||
      mask.size() < static_cast<size_t>(nq) * nk) {
    throw std::invalid_argument("masked_attention_ref: spans too small");
  }
  std::vector<double> score(static_cast<size_t>(nk));
  for (int32_t i = 0; i < nq; ++i) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int32_t j = 0; j < nk; ++j) {
      if (!mask[static_cast<size_t>(i) * nk + j]) continue;
      double dot = 0.0;
      for (int32_t x = 0; x < d; ++x) dot += double{q[i * d + x]} * double{k[j * d + x]};
      score[static_cast<size_t>(j)] = dot * scale;
      mx = std::max(mx, score[static_cast<size_t>(j)]);
    }
    if (mx == -std::numeric_limits<double>::infinity()) {
      throw std::logic_error("masked_attention_ref: row " + std::to_string(i) + " sees no key");
    }
    double sum = 0.0;
    std::vector<double> acc(static_cast<size_t>(d), 0.0);
    for (int32_t j = 0; j < nk; ++j) {
      if (!mask[static_cast<size_t>(i) * nk + j]) continue;
      const double w = std::exp(score[static_cast<size_t>(j)] - mx);
      sum += w;
      for (int32_t x = 0; x < d; ++x) acc[static_cast<size_t>(x)] += w * v[j * d + x];
    }
    for (int32_t x = 0; x < d; ++x)
      out[i * d + x] = static_cast<float>(acc[static_cast<size_t>(x)] / sum);
  }
}

}  // namespace metronome::kernels::reference
