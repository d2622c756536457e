#include "quality/exp_floats.h"

#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace metronome::quality {

namespace {

// glibc's __exp2f_data (sysdeps/ieee754/flt-32/e_exp2f_data.c): T[i] = bits of 2^(i / 32) less
// i << 47, so that adding k << 47 puts k div 32 into the exponent.
constexpr uint64_t kTable[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540};
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
  const double s = std::bit_cast<double>(kTable[ki % 32] + (ki << 47));
  const double z = std::fma(r, kC0, kC1);
  const double r2 = r * r;
  double y = std::fma(r, kC2, 1.0);
  y = std::fma(z, r2, y);
  return static_cast<float>(y * s);
}

#if defined(__AVX2__) && defined(__FMA__)

namespace {

// Four lanes, in double: the scalar function above, operation for operation.
__m128 exp4(__m128 x) {
  const __m256d xd = _mm256_cvtps_pd(x);
  const __m256d shift = _mm256_set1_pd(kShift), inv = _mm256_set1_pd(kInvLn2N);
  const __m256d shifted = _mm256_fmadd_pd(xd, inv, shift);
  const __m256i ki = _mm256_castpd_si256(shifted);
  const __m256d kd = _mm256_sub_pd(shifted, shift);
  const __m256d r = _mm256_fmsub_pd(inv, xd, kd);
  const __m256i t = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTable),
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
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i tops = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(v), 20), top);
    const __m256i big = _mm256_cmpgt_epi32(tops, limit);
    if (!_mm256_testz_si256(big, big)) {
      for (int64_t j = i; j < i + 8; ++j) y[j] = exp_float(x[j]);
      continue;
    }
    const __m128 lo = exp4(_mm256_castps256_ps128(v)), hi = exp4(_mm256_extractf128_ps(v, 1));
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
