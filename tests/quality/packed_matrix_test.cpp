// PackedMatrix against the reference chain (quality/packed_matrix.h): every output is
// fma(x[m, j], W[n, j], acc) summed in order of j from 0, bit for bit, on every instruction-set
// path this machine has, for any thread count and any rows multiplied with it.
#include "quality/packed_matrix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "quality/workers.h"

namespace metronome::quality {
namespace {

struct Case {
  int64_t m, n, k;
};

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = g(rng);
  return v;
}

// The chain the header promises, on scalars.
std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& w, Case c) {
  std::vector<float> y(static_cast<size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t r = 0; r < c.n; ++r) {
      float acc = 0.f;
      for (int64_t j = 0; j < c.k; ++j) {
        acc =
            std::fma(x[static_cast<size_t>(i * c.k + j)], w[static_cast<size_t>(r * c.k + j)], acc);
      }
      y[static_cast<size_t>(i * c.n + r)] = acc;
    }
  }
  return y;
}

class PackedMatrixIsa : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!use_packed_matrix_isa(GetParam())) GTEST_SKIP() << GetParam() << " not on this machine";
  }
  void TearDown() override { use_packed_matrix_isa(""); }
};

TEST_P(PackedMatrixIsa, EqualsTheFmaChainBitForBit) {
  // Shapes with partial panels (n % 32 below and above a half panel), row counts off every
  // register block (1..13), and k = 1.
  for (const Case c : {Case{1, 16, 8}, Case{5, 37, 19}, Case{13, 50, 64}, Case{7, 3, 1},
                       Case{100, 33, 40}, Case{25, 64, 17}, Case{12, 20, 9}}) {
    const auto x = random_values(static_cast<size_t>(c.m * c.k), 1);
    const auto w = random_values(static_cast<size_t>(c.n * c.k), 2);
    const PackedMatrix p(w, c.n, c.k);
    const auto want = reference(x, w, c);
    for (const int threads : {1, 2, 3}) {
      Workers workers(threads);
      std::vector<float> y(static_cast<size_t>(c.m * c.n), std::nanf(""));
      p.multiply(x.data(), c.k, c.m, y.data(), c.n, workers);
      EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0)
          << GetParam() << " m=" << c.m << " n=" << c.n << " k=" << c.k << " threads=" << threads;
    }
    // The same panels laid out by hand (the padding columns of the last panel set to NaN: read,
    // never written out) through multiply_panels, on a row stride past n.
    const int64_t panels = (c.n + PackedMatrix::kPanel - 1) / PackedMatrix::kPanel;
    std::vector<float> laid(static_cast<size_t>(panels * c.k * PackedMatrix::kPanel),
                            std::nanf(""));
    for (int64_t r = 0; r < c.n; ++r) {
      for (int64_t j = 0; j < c.k; ++j) {
        laid[static_cast<size_t>(((r / PackedMatrix::kPanel) * c.k + j) * PackedMatrix::kPanel +
                                 r % PackedMatrix::kPanel)] = w[static_cast<size_t>(r * c.k + j)];
      }
    }
    const int64_t ldy = c.n + 3;
    std::vector<float> y(static_cast<size_t>(c.m * ldy), -1.f);
    multiply_panels(x.data(), c.k, c.m, laid.data(), c.n, c.k, y.data(), ldy);
    for (int64_t i = 0; i < c.m; ++i) {
      EXPECT_EQ(std::memcmp(y.data() + i * ldy, want.data() + i * c.n, c.n * sizeof(float)), 0)
          << GetParam() << " multiply_panels m=" << c.m << " n=" << c.n << " k=" << c.k;
      for (int64_t col = c.n; col < ldy; ++col)
        EXPECT_EQ(y[static_cast<size_t>(i * ldy + col)], -1.f);
    }
    // One row alone gives the bytes it gives among the others.
    Workers one(1);
    std::vector<float> row(static_cast<size_t>(c.n));
    p.multiply(x.data() + (c.m - 1) * c.k, c.k, 1, row.data(), c.n, one);
    EXPECT_EQ(std::memcmp(row.data(), want.data() + (c.m - 1) * c.n, row.size() * sizeof(float)),
              0);
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, PackedMatrixIsa,
                         ::testing::Values("scalar", "AVX2+FMA", "AVX-512"));

// Random raw blocks of a ggml type: real halves for d and m (scales of a trained layer's size),
// random codes. n k / 32 blocks, row by row.
std::vector<std::byte> random_blocks(GgmlType type, int64_t values, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> raw(static_cast<size_t>(ggml_bytes(type, values)));
  for (auto& b : raw) b = static_cast<std::byte>(rng() & 0xFF);
  const int64_t stride = ggml_block_bytes(type);
  for (int64_t b = 0; b < values / 32; ++b) {
    // Halves with exponent 10-14 (about 2^-5 to 2^-1), either sign: finite, normal.
    for (int h = 0; h < (type == GgmlType::kQ4_1 ? 2 : 1); ++h) {
      const auto half =
          static_cast<uint16_t>((rng() & 0x8000u) | ((10u + rng() % 5) << 10) | (rng() & 0x3FFu));
      std::memcpy(raw.data() + b * stride + 2 * h, &half, 2);
    }
  }
  return raw;
}

// Products from block codes (weights rebuilt from them) give the float panels' bytes:
// the same weights (fma(d, q, m) equals the dequantized float) in the same chain, on every path,
// for each block type (Q4_0 and Q4_1 keep their codes two a byte, Q8_0 one a byte, and so does a
// stack with any Q8_0 in it), several matrices stacked, and the last panel full, past half or below
// half (9 columns: one vector of AVX2's 8 and a lane).
TEST_P(PackedMatrixIsa, ProductsFromBlockCodesEqualTheFloatPanels) {
  using T = GgmlType;
  for (const auto& [ta, tb, na, nb] : {std::tuple{T::kQ4_0, T::kQ4_0, int64_t{45}, int64_t{19}},
                                       std::tuple{T::kQ4_1, T::kQ4_1, int64_t{45}, int64_t{19}},
                                       std::tuple{T::kQ8_0, T::kQ8_0, int64_t{45}, int64_t{19}},
                                       std::tuple{T::kQ4_1, T::kQ4_1, int64_t{45}, int64_t{28}},
                                       std::tuple{T::kQ4_1, T::kQ8_0, int64_t{30}, int64_t{21}},
                                       std::tuple{T::kQ8_0, T::kQ8_0, int64_t{30}, int64_t{21}}}) {
    const int64_t k = 96;
    const auto raw_a = random_blocks(ta, na * k, 7), raw_b = random_blocks(tb, nb * k, 8);
    std::vector<float> wa(static_cast<size_t>(na * k)), wb(static_cast<size_t>(nb * k));
    dequantize(ta, raw_a, wa);
    dequantize(tb, raw_b, wb);
    std::vector<BlockCodes> ca(static_cast<size_t>(na * k / 32)),
        cb(static_cast<size_t>(nb * k / 32));
    block_codes(ta, raw_a, ca);
    block_codes(tb, raw_b, cb);
    for (size_t i = 0; i < wa.size(); ++i) {
      const BlockCodes& c = ca[i / 32];
      ASSERT_EQ(std::fma(c.d, static_cast<float>(c.q[i % 32]), c.m), wa[i]) << i;
    }
    const PackedMatrix wide = PackedMatrix::stack({wa, wb}, {na, nb}, k);
    const PackedMatrix narrow = PackedMatrix::stack({wa, wb}, {na, nb}, k, {ca, cb});
    ASSERT_FALSE(wide.narrow());
    ASSERT_TRUE(narrow.narrow());
    const int64_t n = na + nb;
    // Up to kNarrowRows rows read the codes; more multiply each panel rebuilt from its codes
    // (100: two row chunks).
    for (const int64_t m : {1, 2, 3, 4, 5, 13, 100}) {
      const auto x = random_values(static_cast<size_t>(m * k), 9 + static_cast<uint32_t>(m));
      for (const int threads : {1, 3}) {
        Workers workers(threads);
        std::vector<float> yw(static_cast<size_t>(m * n)), yn(yw.size(), std::nanf(""));
        wide.multiply(x.data(), k, m, yw.data(), n, workers);
        narrow.multiply(x.data(), k, m, yn.data(), n, workers);
        EXPECT_EQ(std::memcmp(yw.data(), yn.data(), yw.size() * sizeof(float)), 0)
            << GetParam() << " " << ggml_type_name(static_cast<uint32_t>(ta)) << "+"
            << ggml_type_name(static_cast<uint32_t>(tb)) << " n=" << n << " m=" << m
            << " threads=" << threads;
      }
    }
  }
}

TEST(PackedMatrix, NarrowLayoutOnlyWithEveryMatrixCodedAndWholeBlocks) {
  const auto raw = random_blocks(GgmlType::kQ8_0, 40 * 64, 3);
  std::vector<float> w(40 * 64);
  dequantize(GgmlType::kQ8_0, raw, w);
  std::vector<BlockCodes> c(40 * 2);
  block_codes(GgmlType::kQ8_0, raw, c);
  EXPECT_TRUE(PackedMatrix(w, 40, 64, c).narrow());
  EXPECT_FALSE(PackedMatrix::stack({w, w}, {40, 40}, 64, {c, {}}).narrow());
  EXPECT_THROW(PackedMatrix(w, 40, 64, std::span<const BlockCodes>(c).first(79)),
               std::invalid_argument);
}

TEST(PackedMatrix, StackedMatricesGiveEachItsOwnProduct) {
  const Case a{9, 20, 24}, b{9, 7, 24};
  const auto x = random_values(static_cast<size_t>(a.m * a.k), 3);
  const auto wa = random_values(static_cast<size_t>(a.n * a.k), 4);
  const auto wb = random_values(static_cast<size_t>(b.n * b.k), 5);
  const PackedMatrix s = PackedMatrix::stack({wa, wb}, {a.n, b.n}, a.k);
  ASSERT_EQ(s.rows(), a.n + b.n);
  EXPECT_EQ(s.at(a.n + 2, 5), wb[static_cast<size_t>(2 * b.k + 5)]);
  Workers workers(2);
  std::vector<float> y(static_cast<size_t>(a.m * s.rows()));
  s.multiply(x.data(), a.k, a.m, y.data(), s.rows(), workers);
  const auto ya = reference(x, wa, a), yb = reference(x, wb, b);
  for (int64_t i = 0; i < a.m; ++i) {
    for (int64_t r = 0; r < s.rows(); ++r) {
      const float want = r < a.n ? ya[static_cast<size_t>(i * a.n + r)]
                                 : yb[static_cast<size_t>(i * b.n + r - a.n)];
      EXPECT_EQ(y[static_cast<size_t>(i * s.rows() + r)], want);
    }
  }
}

TEST(PackedMatrix, RejectsWrongShapes) {
  const std::vector<float> w(10);
  EXPECT_THROW(PackedMatrix(w, 3, 3), std::invalid_argument);
}

TEST(Workers, EveryIndexOnceAndErrorsRethrown) {
  Workers workers(3);
  std::vector<int> hits(1000, 0);
  workers.for_range(1000, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) ++hits[static_cast<size_t>(i)];
  });
  workers.for_each(1000, [&](int64_t i) { ++hits[static_cast<size_t>(i)]; });
  for (const int h : hits) EXPECT_EQ(h, 2);
  EXPECT_THROW(workers.for_each(10,
                                [](int64_t i) {
                                  if (i == 7) throw std::runtime_error("task 7");
                                }),
               std::runtime_error);
  // Still usable after an error.
  int64_t sum = 0;
  std::mutex m;
  workers.for_range(10, [&](int64_t a, int64_t b) {
    std::lock_guard<std::mutex> lock(m);
    for (int64_t i = a; i < b; ++i) sum += i;
  });
  EXPECT_EQ(sum, 45);
}

}  // namespace
}  // namespace metronome::quality
