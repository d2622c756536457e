#include "kernels/reference/paged_attention_ref.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "frame_fixture.h"
#include "kernels/reference/layer_ref.h"

namespace metronome::kernels {
namespace {

using reference::AttentionShape;
using reference::HostKvCache;
using testing::Frame;
using testing::FrameSpec;
using testing::make_frame;

// One session, 1 head, head_dim 2, block 1: cached key 0 = (1, 0), new token 1 has k = (0, 1).
// The query at position 1 is q = (1, 0) with scale 1: scores (1, 0).
struct TwoKeys {
  HostKvCache cache{2, 1, 1, 2};
  std::vector<int32_t> q_start{0, 1}, seq_lens{2}, table{0, 1};
  std::vector<float> q{1, 0}, out{-7, -7};
  TwoKeys() {
    cache.k() = {1, 0, 0, 1};
    cache.v() = {1, 0, 0, 1};  // V = one-hot, so the output is the softmax weights
  }
  FrameBatch batch() const { return {1, q_start.data(), seq_lens.data(), table.data(), 2, 1, 2}; }
  void run(kv::Window w) {
    reference::paged_attention_ref(std::as_const(cache).view(), batch(), w, {1, 1.f}, q, out);
  }
};

TEST(PagedAttentionRef, HandComputedSoftmax) {
  TwoKeys t;
  t.run(kv::Window{});
  const double e = std::exp(1.0);
  EXPECT_NEAR(t.out[0], e / (e + 1), 1e-6);
  EXPECT_NEAR(t.out[1], 1 / (e + 1), 1e-6);
}

TEST(PagedAttentionRef, HandComputedWindowAndSink) {
  TwoKeys t;
  t.run(kv::Window{0, 0});  // sees only itself
  EXPECT_FLOAT_EQ(t.out[0], 0.f);
  EXPECT_FLOAT_EQ(t.out[1], 1.f);
  t.run(kv::Window{0, 1});  // plus the sink at 0: both keys again
  EXPECT_NEAR(t.out[0], std::exp(1.0) / (std::exp(1.0) + 1), 1e-6);
}

TEST(PagedAttentionRef, ScaleEntersTheExponent) {
  TwoKeys t;
  reference::paged_attention_ref(std::as_const(t.cache).view(), t.batch(), kv::Window{}, {1, 0.5f},
                                 t.q, t.out);
  const double e = std::exp(0.5);
  EXPECT_NEAR(t.out[0], e / (e + 1), 1e-6);
}

TEST(PagedAttentionRef, ReadingAReleasedBlockIsAnError) {
  TwoKeys t;
  t.table[0] = -1;
  EXPECT_THROW(t.run(kv::Window{}), std::logic_error);
  // The window that released it does not read it.
  EXPECT_NO_THROW(t.run(kv::Window{0, 0}));
}

std::vector<float> run_ref(const Frame& f, kv::Window w) {
  HostKvCache cache = f.cache_before;
  const FrameBatch b = f.batch();
  reference::append_kv_ref(cache.view(), b, f.k_new, f.v_new);
  std::vector<float> out(f.q.size(), std::nanf(""));
  reference::paged_attention_ref(std::as_const(cache).view(), b, w,
                                 {f.q_heads(), 1.f / std::sqrt(float(f.spec.head_dim))}, f.q, out);
  return out;
}

TEST(PagedAttentionRef, AppendWritesEachTokenWhereTheTableSays) {
  FrameSpec spec;
  spec.block_size = 5;
  spec.window = {12, 3};
  spec.sessions = {{30, 7}, {0, 4}, {11, 1}};
  const Frame f = make_frame(spec);
  HostKvCache cache = f.cache_before;
  const FrameBatch b = f.batch();
  reference::append_kv_ref(cache.view(), b, f.k_new, f.v_new);
  const auto view = std::as_const(cache).view();
  const size_t row = static_cast<size_t>(spec.kv_heads) * spec.head_dim;
  for (int32_t s = 0; s < b.num_sessions; ++s) {
    for (int32_t i = 0; i < b.q_len(s); ++i) {
      const int64_t pos = b.seq_lens[s] - b.q_len(s) + i;
      const int64_t off = view.offset(f.sessions[s].physical_block(pos), pos % 5, 0);
      const size_t src = (b.q_start[s] + i) * row;
      for (size_t x = 0; x < row; ++x) {
        ASSERT_EQ(view.k[off + x], f.k_new[src + x]);
        ASSERT_EQ(view.v[off + x], f.v_new[src + x]);
      }
    }
  }
  // Nothing else changed.
  size_t changed = 0;
  for (size_t x = 0; x < cache.k().size(); ++x) changed += cache.k()[x] != f.cache_before.k()[x];
  EXPECT_LE(changed, f.k_new.size());
  EXPECT_GT(changed, f.k_new.size() / 2);
}

// Windowed with W >= context must equal unbounded (no sinks, and with sinks).
TEST(PagedAttentionRef, WideWindowEqualsUnbounded) {
  for (const int64_t sinks : {0, 4}) {
    FrameSpec spec;
    spec.block_size = 3;
    spec.kv_heads = 2;
    spec.group = 3;
    spec.head_dim = 16;
    spec.sessions = {{40, 5}, {3, 1}, {0, 9}};
    spec.window = {};
    const auto unbounded = run_ref(make_frame(spec), spec.window);
    spec.window = {60, sinks};  // every query position < 50 <= W
    const auto windowed = run_ref(make_frame(spec), spec.window);
    ASSERT_EQ(unbounded.size(), windowed.size());
    for (size_t i = 0; i < unbounded.size(); ++i) ASSERT_FLOAT_EQ(unbounded[i], windowed[i]);
  }
}

// Sinks plus window over the paged cache equals dense attention under a mask written out
// explicitly (not through kv_window.h), for every query head of every session.
TEST(PagedAttentionRef, SinksPlusWindowEqualsExplicitMask) {
  struct Case {
    int32_t block;
    int64_t window, sinks;
  };
  for (const Case c : {Case{16, 8, 4}, Case{1, 5, 0}, Case{7, 20, 9}, Case{4, 0, 2}}) {
    FrameSpec spec;
    spec.block_size = c.block;
    spec.kv_heads = 2;
    spec.group = 2;
    spec.head_dim = 8;
    spec.window = {c.window, c.sinks};
    spec.sessions = {{50, 6}, {2, 3}, {19, 1}};
    spec.seed = 7 + static_cast<uint64_t>(c.block);
    const Frame f = make_frame(spec);
    const auto paged = run_ref(f, spec.window);
    const auto dense = testing::dense_masked_attention(f);
    ASSERT_EQ(paged.size(), dense.size());
    for (size_t x = 0; x < paged.size(); ++x) {
      ASSERT_NEAR(paged[x], dense[x], 1e-6)
          << "block " << c.block << " W " << c.window << " S " << c.sinks << " element " << x;
    }
  }
}

// The same tokens in blocks of 1 and blocks of 16 give the same attention: paging is storage only.
TEST(PagedAttentionRef, BlockSizeDoesNotChangeTheResult) {
  FrameSpec spec;
  spec.kv_heads = 1;
  spec.group = 4;
  spec.head_dim = 32;
  spec.window = {};
  spec.sessions = {{37, 3}, {16, 16}};
  spec.block_size = 1;
  const auto a = run_ref(make_frame(spec), spec.window);
  spec.block_size = 16;
  const auto b = run_ref(make_frame(spec), spec.window);
  // make_frame draws values in a fixed order independent of block size: same inputs.
  for (size_t i = 0; i < a.size(); ++i) ASSERT_FLOAT_EQ(a[i], b[i]);
}

TEST(PagedAttentionRef, RejectsBadGqaRatio) {
  TwoKeys t;
  EXPECT_THROW(reference::paged_attention_ref(std::as_const(t.cache).view(), t.batch(),
                                              kv::Window{}, {0, 1.f}, t.q, t.out),
               std::invalid_argument);
}

TEST(LayerRef, LinearIsXTimesWTransposed) {
  // x = [[1, 2]], w = [[3, 4], [5, 6], [7, 8]] (out 3, in 2): y = [11, 17, 23].
  std::vector<float> x{1, 2}, w{3, 4, 5, 6, 7, 8}, y(3);
  reference::linear_ref(x, w, 1, 3, 2, y);
  EXPECT_EQ(y, (std::vector<float>{11, 17, 23}));
}

TEST(LayerRef, SiluMul) {
  std::vector<float> gu{0.f, 1.f, 2.f, 3.f}, out(2);  // gate (0, 1), up (2, 3)
  reference::silu_mul_ref(gu, 1, 2, out);
  EXPECT_FLOAT_EQ(out[0], 0.f);
  EXPECT_NEAR(out[1], 1.0 / (1.0 + std::exp(-1.0)) * 3.0, 1e-6);
}

}  // namespace
}  // namespace metronome::kernels
