#include "quality/exp_floats.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace metronome::quality {

namespace {

// T[i]: the bits of 2^(i / 32) rounded to double, less i << 47, so that adding k << 47 puts
// k div 32 into the exponent (entry for entry glibc's own table, on this project's machine).
const uint64_t* table() {
  static const std::array<uint64_t, 32> t = [] {
    std::array<uint64_t, 32> out{};
    for (uint64_t i = 0; i < out.size(); ++i) {
      const auto v = static_cast<double>(std::exp2l(static_cast<long double>(i) / 32));
      out[i] = std::bit_cast<uint64_t>(v) - (i << 47);
    }
    return out;
  }();
  return t.data();
}
constexpr double kInvLn2N = 0x1.71547652b82fep+5;  // 32 / ln 2
constexpr double kShift = 0x1.8p+52;               // adding it rounds to an integer
constexpr double kC0 = 0x1.c6af84b912394p-20;      // the polynomial in r, scaled by 1 / 32
constexpr double kC1 = 0x1.ebfce50fac4f3p-13;
constexpr double kC2 = 0x1.62e42ff0c52d6p-6;
// |x| >= 88 (the top 12 bits of |x| above 0x42a), infinities and NaN.
constexpr uint32_t kLargeTop = 0x42a;

bool large(float x) { return ((std::bit_cast<uint32_t>(x) >> 20) & 0x7ff) > kLargeTop; }

}  // namespace

float exp_float(float x) {
  if (large(x)) return std::exp(x);
  const double xd = x;
  const double shifted = std::fma(xd, kInvLn2N, kShift);
  const uint64_t ki = std::bit_cast<uint64_t>(shifted);
  const double kd = shifted - kShift;
  const double r = std::fma(kInvLn2N, xd, -kd);
  const double s = std::bit_cast<double>(table()[ki % 32] + (ki << 47));
  const double z = std::fma(r, kC0, kC1);
  const double r2 = r * r;
  double y = std::fma(r, kC2, 1.0);
  y = std::fma(z, r2, y);
  return static_cast<float>(y * s);
}

#if defined(__AVX2__) && defined(__FMA__)

namespace {

// Four lanes, in double: the scalar function above, operation for operation.
__m128 exp4(__m128 x, const uint64_t* table) {
  const __m256d xd = _mm256_cvtps_pd(x);
  const __m256d shift = _mm256_set1_pd(kShift), inv = _mm256_set1_pd(kInvLn2N);
  const __m256d shifted = _mm256_fmadd_pd(xd, inv, shift);
  const __m256i ki = _mm256_castpd_si256(shifted);
  const __m256d kd = _mm256_sub_pd(shifted, shift);
  const __m256d r = _mm256_fmsub_pd(inv, xd, kd);
  const __m256i t = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(table),
                                           _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
  const __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(t, _mm256_slli_epi64(ki, 47)));
  const __m256d z = _mm256_fmadd_pd(r, _mm256_set1_pd(kC0), _mm256_set1_pd(kC1));
  const __m256d r2 = _mm256_mul_pd(r, r);
  __m256d y = _mm256_fmadd_pd(r, _mm256_set1_pd(kC2), _mm256_set1_pd(1.0));
  y = _mm256_fmadd_pd(z, r2, y);
  return _mm256_cvtpd_ps(_mm256_mul_pd(y, s));
}

}  // namespace

void exp_floats(const float* x, float* y, int64_t n) {
  const __m256i top = _mm256_set1_epi32(0x7ff), limit = _mm256_set1_epi32(kLargeTop);
  const uint64_t* tab = table();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i tops = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(v), 20), top);
    const __m256i big = _mm256_cmpgt_epi32(tops, limit);
    if (!_mm256_testz_si256(big, big)) {
      for (int64_t j = i; j < i + 8; ++j) y[j] = exp_float(x[j]);
      continue;
    }
    const __m128 lo = exp4(_mm256_castps256_ps128(v), tab),
                 hi = exp4(_mm256_extractf128_ps(v, 1), tab);
    _mm256_storeu_ps(y + i, _mm256_set_m128(hi, lo));
  }
  for (; i < n; ++i) y[i] = exp_float(x[i]);
}

#else

void exp_floats(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = exp_float(x[i]);
}

#endif

}  // namespace metronome::quality
