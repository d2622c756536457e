// window_attention against the project's CPU reference (original positions) and against dense
// masked attention with explicit StreamingLLM cache positions (cache mode).
#include "quality/window_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "kernels/block_table.h"
#include "kernels/reference/paged_attention_ref.h"

namespace metronome::quality {
namespace {

constexpr int32_t kQHeads = 4, kKvHeads = 2, kDim = 8, kBlock = 4;

// A test-side RoPE (adjacent pairs, base 100): rotates v in place to position pos.
void rotate(float* v, int64_t pos) {
  for (int32_t i = 0; i < kDim / 2; ++i) {
    const double a = static_cast<double>(pos) * std::pow(100.0, -2.0 * i / kDim);
    const float x0 = v[2 * i], x1 = v[2 * i + 1];
    v[2 * i] = static_cast<float>(x0 * std::cos(a) - x1 * std::sin(a));
    v[2 * i + 1] = static_cast<float>(x0 * std::sin(a) + x1 * std::cos(a));
  }
}

// One session of `ctx` cached tokens plus a frame of n queries, raw (unrotated) q and k.
struct Fixture {
  int64_t ctx, n;
  kv::Window w;
  std::vector<float> k_raw, v, q_raw;  // [ctx + n, kv_heads, d], same, [n, q_heads, d]
  kernels::BlockPool pool{64};
  kernels::SessionBlocks blocks;
  kernels::reference::HostKvCache cache{64, kBlock, kKvHeads, kDim};
  std::vector<int32_t> q_start, seq_lens, table;

  Fixture(int64_t ctx_, int64_t n_, kv::Window w_) : ctx(ctx_), n(n_), w(w_), blocks(w_, kBlock) {
    std::mt19937 rng(static_cast<uint32_t>(ctx * 131 + n * 7 + w.window * 3 + w.sinks));
    std::normal_distribution<float> g(0.f, 1.f);
    const int64_t total = ctx + n;
    for (int64_t i = 0; i < total * kKvHeads * kDim; ++i) {
      k_raw.push_back(g(rng));
      v.push_back(g(rng));
    }
    for (int64_t i = 0; i < n * kQHeads * kDim; ++i) q_raw.push_back(g(rng));
    // Cache keys rotated at their original positions; then release what the window dropped, as
    // the engine does between frames, so a read outside the rule would throw.
    EXPECT_TRUE(blocks.append(pool, total));
    for (int64_t p = 0; p < total; ++p) {
      for (int32_t h = 0; h < kKvHeads; ++h) {
        const int64_t src = (p * kKvHeads + h) * kDim;
        const int64_t off = cache.view().offset(blocks.physical_block(p), p % kBlock, h);
        std::copy_n(k_raw.begin() + src, kDim, cache.k().begin() + off);
        rotate(cache.k().data() + off, p);
        std::copy_n(v.begin() + src, kDim, cache.v().begin() + off);
      }
    }
    q_start = {0, static_cast<int32_t>(n)};
    seq_lens = {static_cast<int32_t>(total)};
    table = blocks.table();
    // Blocks no query of this frame can see (visible to none of them): mark released.
    for (size_t b = 0; b < table.size(); ++b) {
      bool seen = false;
      for (int64_t p = ctx; p < total; ++p) {
        for (int64_t k = static_cast<int64_t>(b) * kBlock;
             k < std::min<int64_t>(total, (static_cast<int64_t>(b) + 1) * kBlock); ++k) {
          seen = seen || kv::key_visible(p, k, w);
        }
      }
      if (!seen) table[b] = -1;
    }
  }
  kernels::FrameBatch batch() const {
    return {1,
            q_start.data(),
            seq_lens.data(),
            table.data(),
            static_cast<int32_t>(table.size()),
            static_cast<int32_t>(n),
            seq_lens[0]};
  }
  // Queries rotated at a position per query.
  std::vector<float> queries(PositionMode mode) const {
    std::vector<float> q = q_raw;
    for (int64_t i = 0; i < n; ++i) {
      for (int32_t h = 0; h < kQHeads; ++h) {
        rotate(q.data() + (i * kQHeads + h) * kDim, query_rope_position(ctx + i, w, mode));
      }
    }
    return q;
  }
};

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_FALSE(std::isnan(a[i])) << i;
    ASSERT_NEAR(a[i], b[i], tol) << "element " << i;
  }
}

class WindowAttention : public ::testing::TestWithParam<std::tuple<int, int, int, int>> {};

// Original positions: the same as the project's paged reference, for any window, sinks, context
// and frame length (q_sink = q_orig).
TEST_P(WindowAttention, OriginalPositionsEqualThePagedReference) {
  const auto [ctx, n, W, S] = GetParam();
  const kv::Window w = W < 0 ? kv::Window{} : kv::Window{W, S};
  Fixture f(ctx, n, w);
  const std::vector<float> q = f.queries(PositionMode::kOriginal);
  std::vector<float> ours(q.size(), -7.f), ref(q.size(), -7.f);
  const std::vector<kv::Window> windows{w};
  window_attention(std::as_const(f.cache).view(), f.batch(), windows, kQHeads, 0.35f, q, q, ours);
  kernels::reference::paged_attention_ref(std::as_const(f.cache).view(), f.batch(), w,
                                          {kQHeads, 0.35f}, q, ref);
  expect_close(ours, ref, 2e-5);
}

// Cache positions: each query equals dense attention over its visible keys placed at their cache
// slots (sinks 0..S-1, then the window up to the query at visible_keys - 1), from raw q and k.
TEST_P(WindowAttention, CachePositionsEqualDenseAttentionAtCacheSlots) {
  const auto [ctx, n, W, S] = GetParam();
  const kv::Window w = W < 0 ? kv::Window{} : kv::Window{W, S};
  Fixture f(ctx, n, w);
  const std::vector<float> q_orig = f.queries(PositionMode::kOriginal);
  const std::vector<float> q_sink = f.queries(PositionMode::kCache);
  std::vector<float> ours(q_orig.size(), -7.f), ref(q_orig.size(), -7.f);
  const std::vector<kv::Window> windows{w};
  window_attention(std::as_const(f.cache).view(), f.batch(), windows, kQHeads, 0.35f, q_orig,
                   q_sink, ours);
  for (int64_t i = 0; i < f.n; ++i) {
    const int64_t p = f.ctx + i;
    std::vector<int64_t> keys;
    for (int64_t k = 0; k <= p; ++k) {
      if (kv::key_visible(p, k, w)) keys.push_back(k);
    }
    const auto nk = static_cast<int32_t>(keys.size());
    for (int32_t h = 0; h < kQHeads; ++h) {
      const int32_t g = h / (kQHeads / kKvHeads);
      std::vector<float> qd(f.q_raw.begin() + (i * kQHeads + h) * kDim,
                            f.q_raw.begin() + (i * kQHeads + h + 1) * kDim);
      rotate(qd.data(), nk - 1);  // the query's slot
      std::vector<float> kd, vd;
      for (int32_t j = 0; j < nk; ++j) {
        std::vector<float> kr(f.k_raw.begin() + (keys[j] * kKvHeads + g) * kDim,
                              f.k_raw.begin() + (keys[j] * kKvHeads + g + 1) * kDim);
        rotate(kr.data(), j);  // slot j: sinks first, then the window in order
        kd.insert(kd.end(), kr.begin(), kr.end());
        vd.insert(vd.end(), f.v.begin() + (keys[j] * kKvHeads + g) * kDim,
                  f.v.begin() + (keys[j] * kKvHeads + g + 1) * kDim);
      }
      std::vector<uint8_t> mask(static_cast<size_t>(nk), 1);
      kernels::reference::masked_attention_ref(
          qd, kd, vd, mask, 1, nk, kDim, 0.35f,
          std::span<float>(ref.data() + (i * kQHeads + h) * kDim, kDim));
    }
  }
  expect_close(ours, ref, 2e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Windows, WindowAttention,
    ::testing::Values(std::make_tuple(0, 5, -1, 0),   // prefill, unbounded
                      std::make_tuple(20, 1, -1, 0),  // decode, unbounded
                      std::make_tuple(20, 1, 6, 0),   // window only, past the start
                      std::make_tuple(20, 1, 6, 2),   // sinks left behind
                      std::make_tuple(3, 9, 6, 2),    // the window passes the sinks mid-frame
                      std::make_tuple(30, 7, 5, 3),   // a frame wholly past the sinks
                      std::make_tuple(30, 7, 0, 1),   // W = 0: itself and the sink
                      std::make_tuple(2, 3, 8, 4),    // sinks never left behind
                      // Rows of 97 and 47 keys, past lane_max's 32 lanes and into its tail (the
                      // max itself is checked exactly by LaneMax: a softmax hides a wrong one).
                      std::make_tuple(90, 7, -1, 0), std::make_tuple(100, 3, 40, 4)));

TEST(QueryRopePosition, CacheSlotIsVisibleKeysLessOne) {
  const kv::Window w{256, 4};
  EXPECT_EQ(query_rope_position(100, w, PositionMode::kCache), 100);   // nothing dropped yet
  EXPECT_EQ(query_rope_position(257, w, PositionMode::kCache), 257);   // key 0 is a sink
  EXPECT_EQ(query_rope_position(1000, w, PositionMode::kCache), 260);  // S + W
  EXPECT_EQ(query_rope_position(1000, w, PositionMode::kOriginal), 1000);
  EXPECT_EQ(query_rope_position(1000, kv::Window{256, 0}, PositionMode::kCache), 256);
  EXPECT_EQ(query_rope_position(1000, kv::Window{}, PositionMode::kCache), 1000);
}

}  // namespace
}  // namespace metronome::quality
