#include "quality/exp_doubles.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace metronome::quality {

namespace {

constexpr int kBits = 7;  // 128 table entries
constexpr uint64_t kN = uint64_t{1} << kBits;
constexpr double kInvLn2N = 0x1.71547652b82fep7;       // 128 / ln 2
constexpr double kShift = 0x1.8p52;                    // adding it rounds to an integer
constexpr double kNegLn2HiN = -0x1.62e42fefa0000p-8;   // -(ln 2 / 128), high part
constexpr double kNegLn2LoN = -0x1.cf79abc9e3b3ap-47;  // and the rest
constexpr double kC2 = 0x1.ffffffffffdbdp-2;           // the polynomial of e^r - 1 - r
constexpr double kC3 = 0x1.555555555543cp-3;
constexpr double kC4 = 0x1.55555cf172b91p-5;
constexpr double kC5 = 0x1.1111167a4d017p-7;
// Exponent fields (top 12 bits of |x|) of 2^-54 and 512: outside [kLowTop, kHighTop) glibc takes
// its special cases.
constexpr uint64_t kLowTop = 0x3c9, kHighTop = 0x408;

// Entry 2i: T[i], the bits of (2^(i / 128) - H[i]) / H[i] rounded to double; entry 2i + 1: the
// bits of H[i] = 2^(i / 128) rounded to double, less i << 45, so that adding k << 45 puts
// k div 128 into the exponent.
const uint64_t* table() {
  static const std::array<uint64_t, 2 * kN> t = [] {
    std::array<uint64_t, 2 * kN> out{};
    for (uint64_t i = 0; i < kN; ++i) {
      // 2^(i / 128) to 113 bits: long double's 64 bits, then Newton's method on y^128 = 2^i.
      auto y = static_cast<__float128>(std::exp2l(static_cast<long double>(i) / kN));
      __float128 want = 1;
      for (uint64_t b = 0; b < i; ++b) want *= 2;
      for (int step = 0; step < 2; ++step) {
        __float128 p = y;
        for (int s = 0; s < kBits; ++s) p *= p;  // y^128
        y -= (p - want) / (static_cast<__float128>(kN) * (p / y));
      }
      const auto h = static_cast<double>(y);
      out[2 * i] = std::bit_cast<uint64_t>(static_cast<double>((y - h) / h));
      out[2 * i + 1] = std::bit_cast<uint64_t>(h) - (i << (52 - kBits));
    }
    return out;
  }();
  return t.data();
}

bool special(double x) {
  const uint64_t top = (std::bit_cast<uint64_t>(x) >> 52) & 0x7ff;
  return top < kLowTop || top >= kHighTop;
}

}  // namespace

double exp_double(double x) {
  if (special(x)) return std::exp(x);
  const double shifted = std::fma(kInvLn2N, x, kShift);
  const uint64_t ki = std::bit_cast<uint64_t>(shifted);
  const double kd = shifted - kShift;
  const double r = std::fma(kd, kNegLn2LoN, std::fma(kd, kNegLn2HiN, x));
  const uint64_t* t = table() + 2 * (ki % kN);
  const double tail = std::bit_cast<double>(t[0]);
  const double scale = std::bit_cast<double>(t[1] + (ki << (52 - kBits)));
  const double r2 = r * r;
  const double low = std::fma(r2, std::fma(r, kC3, kC2), tail + r);
  const double tmp = std::fma(r2 * r2, std::fma(r, kC5, kC4), low);
  return std::fma(scale, tmp, scale);
}

#if defined(__AVX2__) && defined(__FMA__)

void exp_doubles(const double* x, double* y, int64_t n) {
  const long long* tab = reinterpret_cast<const long long*>(table());
  const __m256i top_mask = _mm256_set1_epi64x(0x7ff), low = _mm256_set1_epi64x(kLowTop - 1),
                high = _mm256_set1_epi64x(kHighTop);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_loadu_pd(x + i);
    const __m256i top = _mm256_and_si256(_mm256_srli_epi64(_mm256_castpd_si256(v), 52), top_mask);
    const __m256i inside =
        _mm256_and_si256(_mm256_cmpgt_epi64(top, low), _mm256_cmpgt_epi64(high, top));
    if (_mm256_movemask_pd(_mm256_castsi256_pd(inside)) != 0xF) {
      for (int64_t j = i; j < i + 4; ++j) y[j] = exp_double(x[j]);
      continue;
    }
    const __m256d shift = _mm256_set1_pd(kShift);
    const __m256d shifted = _mm256_fmadd_pd(_mm256_set1_pd(kInvLn2N), v, shift);
    const __m256i ki = _mm256_castpd_si256(shifted);
    const __m256d kd = _mm256_sub_pd(shifted, shift);
    const __m256d r = _mm256_fmadd_pd(kd, _mm256_set1_pd(kNegLn2LoN),
                                      _mm256_fmadd_pd(kd, _mm256_set1_pd(kNegLn2HiN), v));
    const __m256i idx = _mm256_slli_epi64(_mm256_and_si256(ki, _mm256_set1_epi64x(kN - 1)), 1);
    const __m256d tail = _mm256_castsi256_pd(_mm256_i64gather_epi64(tab, idx, 8));
    const __m256d scale = _mm256_castsi256_pd(_mm256_add_epi64(
        _mm256_i64gather_epi64(tab + 1, idx, 8), _mm256_slli_epi64(ki, 52 - kBits)));
    const __m256d r2 = _mm256_mul_pd(r, r);
    const __m256d lo = _mm256_fmadd_pd(
        r2, _mm256_fmadd_pd(r, _mm256_set1_pd(kC3), _mm256_set1_pd(kC2)), _mm256_add_pd(tail, r));
    const __m256d tmp = _mm256_fmadd_pd(
        _mm256_mul_pd(r2, r2), _mm256_fmadd_pd(r, _mm256_set1_pd(kC5), _mm256_set1_pd(kC4)), lo);
    _mm256_storeu_pd(y + i, _mm256_fmadd_pd(scale, tmp, scale));
  }
  for (; i < n; ++i) y[i] = exp_double(x[i]);
}

#else

void exp_doubles(const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = exp_double(x[i]);
}

#endif

}  // namespace metronome::quality
