#include "quality/packed_matrix.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "quality/workers.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__AVX2__) && defined(__FMA__)
#define METRONOME_X86_SIMD 1
#include <immintrin.h>
#else
#define METRONOME_X86_SIMD 0
#endif

namespace metronome::quality {

namespace {

constexpr int64_t kP = PackedMatrix::kPanel;
// Rows multiplied against one panel before the next: a chunk of x (96 rows of up to 1536 floats,
// 0.6 MB) stays in a core's L2 while the worker's panels stream past it.
constexpr int64_t kRowChunk = 96;

enum class Isa { kScalar, kAvx2, kAvx512 };

Isa widest_isa() {
#if METRONOME_X86_SIMD
  // The library is built for x86-64-v3, so AVX2 and FMA are there; AVX-512 is taken where the CPU
  // has it (the same bytes: see the header), checked once at run time.
  static const Isa isa = __builtin_cpu_supports("avx512f") ? Isa::kAvx512 : Isa::kAvx2;
  return isa;
#else
  return Isa::kScalar;
#endif
}

// A narrower path chosen by use_packed_matrix_isa (tests, benchmarks); -1: the widest.
std::atomic<int> forced_isa{-1};
std::atomic<bool> narrow_on{true};

Isa best_isa() {
  const int f = forced_isa.load(std::memory_order_relaxed);
  return f < 0 ? widest_isa() : static_cast<Isa>(f);
}

// Rows [0, rows) of x against one panel, outputs columns [0, ncols) of y. The reference chain.
void tile_scalar(const float* x, int64_t ldx, int64_t rows, const float* panel, int64_t k, float* y,
                 int64_t ldy, int64_t ncols) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < ncols; ++c) {
      float acc = 0.f;
      for (int64_t j = 0; j < k; ++j) acc = std::fma(x[r * ldx + j], panel[j * kP + c], acc);
      y[r * ldy + c] = acc;
    }
  }
}

// The narrow product's reference: each weight rebuilt from its code as fma(d, q, m), then the same
// chain as tile_scalar. `scales` and `codes` point at one panel's.
void narrow_scalar(const float* x, int64_t ldx, int64_t rows, const float* scales,
                   const int8_t* codes, int64_t k, float* y, int64_t ldy, int64_t ncols) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < ncols; ++c) {
      float acc = 0.f;
      for (int64_t j = 0; j < k; ++j) {
        const float* dm = scales + (j / 32) * 2 * kP;
        const float w = std::fma(dm[c], static_cast<float>(codes[j * kP + c]), dm[kP + c]);
        acc = std::fma(x[r * ldx + j], w, acc);
      }
      y[r * ldy + c] = acc;
    }
  }
}

#if METRONOME_X86_SIMD
// MR rows of a half panel's two accumulators into y, the columns past ncols left alone.
template <int MR>
void store_rows_avx2(const __m256* lo, const __m256* hi, float* y, int64_t ldy, int64_t ncols) {
  for (int r = 0; r < MR; ++r) {
    if (ncols >= 16) {
      _mm256_storeu_ps(y + r * ldy, lo[r]);
      _mm256_storeu_ps(y + r * ldy + 8, hi[r]);
    } else {
      alignas(32) float t[16];
      _mm256_store_ps(t, lo[r]);
      _mm256_store_ps(t + 8, hi[r]);
      std::copy_n(t, ncols, y + r * ldy);
    }
  }
}

// One row's step of a chain against a half panel's two weight vectors.
inline void fma_row_avx2(const float* x, __m256 w0, __m256 w1, __m256& lo, __m256& hi) {
  const __m256 xv = _mm256_broadcast_ss(x);
  lo = _mm256_fmadd_ps(xv, w0, lo);
  hi = _mm256_fmadd_ps(xv, w1, hi);
}

// MR rows x 16 columns (half a panel: `panel` points at the half, its rows kP floats apart) in
// 2 MR ymm accumulators (MR = 6: 12 accumulators, 2 weight registers and a broadcast fill AVX2's
// 16 registers), one FMA per weight and row and step of j. The accumulators are named variables,
// not an array: GCC 12 kept an array's copy on the stack and stored all 12 every step (a third of
// the speed).
template <int MR>
void tile_avx2(const float* x, int64_t ldx, const float* panel, int64_t k, float* y, int64_t ldy,
               int64_t ncols) {
  static_assert(MR >= 1 && MR <= 6);
  __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0,
         a4 = a0, b4 = a0, a5 = a0, b5 = a0;
  for (int64_t j = 0; j < k; ++j) {
    const __m256 w0 = _mm256_loadu_ps(panel + j * kP), w1 = _mm256_loadu_ps(panel + j * kP + 8);
    const auto row = [&](int r, __m256& lo, __m256& hi) {
      fma_row_avx2(x + r * ldx + j, w0, w1, lo, hi);
    };
    row(0, a0, b0);
    if constexpr (MR > 1) row(1, a1, b1);
    if constexpr (MR > 2) row(2, a2, b2);
    if constexpr (MR > 3) row(3, a3, b3);
    if constexpr (MR > 4) row(4, a4, b4);
    if constexpr (MR > 5) row(5, a5, b5);
  }
  const __m256 lo[6] = {a0, a1, a2, a3, a4, a5}, hi[6] = {b0, b1, b2, b3, b4, b5};
  store_rows_avx2<MR>(lo, hi, y, ldy, ncols);
}

// One step of a chain for MR rows against a panel's two halves of weights, and the rows' store
// (masked to the panel's columns): shared by the float panels' and the block codes' kernels.
template <int MR>
__attribute__((target("avx512f"), always_inline)) inline void fma_rows_avx512(
    const float* x, int64_t ldx, int64_t j, __m512 w0, __m512 w1, __m512 (&lo)[MR],
    __m512 (&hi)[MR]) {
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    const __m512 xv = _mm512_set1_ps(x[r * ldx + j]);
    lo[r] = _mm512_fmadd_ps(xv, w0, lo[r]);
    hi[r] = _mm512_fmadd_ps(xv, w1, hi[r]);
  }
}

template <int MR>
__attribute__((target("avx512f"), always_inline)) inline void store_rows_avx512(
    const __m512 (&lo)[MR], const __m512 (&hi)[MR], float* y, int64_t ldy, int64_t ncols) {
  const auto lanes = [](int64_t n) {
    return static_cast<__mmask16>(n >= 16 ? 0xFFFFu : n <= 0 ? 0u : (1u << n) - 1u);
  };
  const __mmask16 mlo = lanes(ncols), mhi = lanes(ncols - 16);
  for (int r = 0; r < MR; ++r) {
    _mm512_mask_storeu_ps(y + r * ldy, mlo, lo[r]);
    _mm512_mask_storeu_ps(y + r * ldy + 16, mhi, hi[r]);
  }
}

// MR rows x 32 columns, two zmm accumulators per row (MR = 12: 24 accumulators, two weight
// registers and a broadcast in AVX-512's 32). Each broadcast of x feeds two FMAs: with one
// 16-column register per row a step made 12 FMAs from 13 loads and waited on loads.
template <int MR>
__attribute__((target("avx512f"))) void tile_avx512(const float* x, int64_t ldx, const float* panel,
                                                    int64_t k, float* y, int64_t ldy,
                                                    int64_t ncols) {
  __m512 lo[MR], hi[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) lo[r] = hi[r] = _mm512_setzero_ps();
  for (int64_t j = 0; j < k; ++j) {
    fma_rows_avx512<MR>(x, ldx, j, _mm512_loadu_ps(panel + j * kP),
                        _mm512_loadu_ps(panel + j * kP + 16), lo, hi);
  }
  store_rows_avx512<MR>(lo, hi, y, ldy, ncols);
}

// The narrow product on AVX2: MR rows (at most 4) x 16 columns (`h` the half), 8 accumulators, the
// half's d and m (4 registers) and its two rebuilt weight vectors.
template <int MR>
void narrow_avx2(const float* x, int64_t ldx, const float* scales, const int8_t* codes, int64_t k,
                 float* y, int64_t ldy, int64_t ncols, int64_t h) {
  static_assert(MR >= 1 && MR <= 4);
  __m256 a0 = _mm256_setzero_ps(), b0 = a0, a1 = a0, b1 = a0, a2 = a0, b2 = a0, a3 = a0, b3 = a0;
  for (int64_t kb = 0; kb < k / 32; ++kb) {
    const float* dm = scales + kb * 2 * kP + h;
    const __m256 d0 = _mm256_loadu_ps(dm), d1 = _mm256_loadu_ps(dm + 8);
    const __m256 m0 = _mm256_loadu_ps(dm + kP), m1 = _mm256_loadu_ps(dm + kP + 8);
    for (int64_t j = kb * 32; j < kb * 32 + 32; ++j) {
      const int8_t* q = codes + j * kP + h;
      const __m256 w0 = _mm256_fmadd_ps(d0,
                                        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q)))),
                                        m0);
      const __m256 w1 = _mm256_fmadd_ps(d1,
                                        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(
                                            reinterpret_cast<const __m128i*>(q + 8)))),
                                        m1);
      const auto row = [&](int r, __m256& lo, __m256& hi) {
        fma_row_avx2(x + r * ldx + j, w0, w1, lo, hi);
      };
      row(0, a0, b0);
      if constexpr (MR > 1) row(1, a1, b1);
      if constexpr (MR > 2) row(2, a2, b2);
      if constexpr (MR > 3) row(3, a3, b3);
    }
  }
  const __m256 lo[4] = {a0, a1, a2, a3}, hi[4] = {b0, b1, b2, b3};
  store_rows_avx2<MR>(lo, hi, y, ldy, ncols);
}

// The narrow product on AVX-512: MR rows (at most 4) x the whole panel.
template <int MR>
__attribute__((target("avx512f"))) void narrow_avx512(const float* x, int64_t ldx,
                                                      const float* scales, const int8_t* codes,
                                                      int64_t k, float* y, int64_t ldy,
                                                      int64_t ncols) {
  __m512 lo[MR], hi[MR];
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) lo[r] = hi[r] = _mm512_setzero_ps();
  for (int64_t kb = 0; kb < k / 32; ++kb) {
    const float* dm = scales + kb * 2 * kP;
    const __m512 d0 = _mm512_loadu_ps(dm), d1 = _mm512_loadu_ps(dm + 16);
    const __m512 m0 = _mm512_loadu_ps(dm + kP), m1 = _mm512_loadu_ps(dm + kP + 16);
    for (int64_t j = kb * 32; j < kb * 32 + 32; ++j) {
      const int8_t* q = codes + j * kP;
      const __m512 w0 = _mm512_fmadd_ps(d0,
                                        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)))),
                                        m0);
      const __m512 w1 = _mm512_fmadd_ps(d1,
                                        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(
                                            reinterpret_cast<const __m128i*>(q + 16)))),
                                        m1);
      fma_rows_avx512<MR>(x, ldx, j, w0, w1, lo, hi);
    }
  }
  store_rows_avx512<MR>(lo, hi, y, ldy, ncols);
}

// A panel 16 columns at a time: AVX2's 16 registers hold 6 rows of half a panel.
template <int MR>
void rows_avx2(const float* x, int64_t ldx, int64_t rows, const float* panel, int64_t k, float* y,
               int64_t ldy, int64_t ncols) {
  int64_t r = 0;
  for (; r + MR <= rows; r += MR) {
    for (int64_t h = 0; h < ncols; h += 16) {
      tile_avx2<MR>(x + r * ldx, ldx, panel + h, k, y + r * ldy + h, ldy,
                    std::min<int64_t>(16, ncols - h));
    }
  }
  if (r < rows) {
    if constexpr (MR > 1)
      rows_avx2<MR - 1>(x + r * ldx, ldx, rows - r, panel, k, y + r * ldy, ldy, ncols);
  }
}

template <int MR>
__attribute__((target("avx512f"))) void rows_avx512(const float* x, int64_t ldx, int64_t rows,
                                                    const float* panel, int64_t k, float* y,
                                                    int64_t ldy, int64_t ncols) {
  int64_t r = 0;
  for (; r + MR <= rows; r += MR) {
    tile_avx512<MR>(x + r * ldx, ldx, panel, k, y + r * ldy, ldy, ncols);
  }
  if (r < rows) {
    if constexpr (MR > 1) {
      rows_avx512<MR - 1>(x + r * ldx, ldx, rows - r, panel, k, y + r * ldy, ldy, ncols);
    }
  }
}
#endif

// At most kNarrowRows rows against one panel's codes.
void narrow_any(Isa isa, const float* x, int64_t ldx, int64_t rows, const float* scales,
                const int8_t* codes, int64_t k, float* y, int64_t ldy, int64_t ncols) {
#if METRONOME_X86_SIMD
  const auto by_rows = [&](auto kernel) {
    switch (rows) {
      case 1:
        return kernel(std::integral_constant<int, 1>{});
      case 2:
        return kernel(std::integral_constant<int, 2>{});
      case 3:
        return kernel(std::integral_constant<int, 3>{});
      default:
        return kernel(std::integral_constant<int, 4>{});
    }
  };
  if (isa == Isa::kAvx512) {
    return by_rows([&](auto mr) {
      narrow_avx512<decltype(mr)::value>(x, ldx, scales, codes, k, y, ldy, ncols);
    });
  }
  if (isa == Isa::kAvx2) {
    return by_rows([&](auto mr) {
      for (int64_t h = 0; h < ncols; h += 16)
        narrow_avx2<decltype(mr)::value>(x, ldx, scales, codes, k, y + h, ldy, ncols - h, h);
    });
  }
#endif
  (void)isa;
  narrow_scalar(x, ldx, rows, scales, codes, k, y, ldy, ncols);
}

void rows_any(Isa isa, const float* x, int64_t ldx, int64_t rows, const float* panel, int64_t k,
              float* y, int64_t ldy, int64_t ncols) {
#if METRONOME_X86_SIMD
  if (isa == Isa::kAvx512) return rows_avx512<12>(x, ldx, rows, panel, k, y, ldy, ncols);
  if (isa == Isa::kAvx2) return rows_avx2<6>(x, ldx, rows, panel, k, y, ldy, ncols);
#endif
  (void)isa;
  tile_scalar(x, ldx, rows, panel, k, y, ldy, ncols);
}

}  // namespace

void use_narrow_products(bool on) { narrow_on.store(on, std::memory_order_relaxed); }

bool use_packed_matrix_isa(const std::string& isa) {
  const Isa widest = widest_isa();
  int f;
  if (isa.empty()) {
    f = -1;
  } else if (isa == "scalar") {
    f = static_cast<int>(Isa::kScalar);
  } else if (isa == "AVX2+FMA" && widest != Isa::kScalar) {
    f = static_cast<int>(Isa::kAvx2);
  } else if (isa == "AVX-512" && widest == Isa::kAvx512) {
    f = static_cast<int>(Isa::kAvx512);
  } else {
    return false;
  }
  forced_isa.store(f, std::memory_order_relaxed);
  return true;
}

const char* packed_matrix_isa() {
  switch (best_isa()) {
    case Isa::kAvx512:
      return "AVX-512";
    case Isa::kAvx2:
      return "AVX2+FMA";
    case Isa::kScalar:
      break;
  }
  return "scalar";
}

PackedMatrix::PackedMatrix(std::span<const float> w, int64_t n, int64_t k,
                           std::span<const BlockCodes> codes)
    : PackedMatrix(codes.empty() ? stack({w}, {n}, k) : stack({w}, {n}, k, {codes})) {}

PackedMatrix PackedMatrix::stack(const std::vector<std::span<const float>>& ws,
                                 const std::vector<int64_t>& ns, int64_t k,
                                 const std::vector<std::span<const BlockCodes>>& codes) {
  if (ws.size() != ns.size() || k < 1 || (!codes.empty() && codes.size() != ws.size())) {
    throw std::invalid_argument("PackedMatrix: bad shapes");
  }
  PackedMatrix m;
  m.k_ = k;
  for (size_t i = 0; i < ws.size(); ++i) {
    if (ns[i] < 1 || static_cast<int64_t>(ws[i].size()) != ns[i] * k) {
      throw std::invalid_argument("PackedMatrix: matrix " + std::to_string(i) + " has " +
                                  std::to_string(ws[i].size()) + " values, expected " +
                                  std::to_string(ns[i]) + " x " + std::to_string(k));
    }
    m.n_ += ns[i];
  }
  m.panels_ = (m.n_ + kP - 1) / kP;
  m.data_.assign(static_cast<size_t>(m.panels_ * k * kP), 0.f);
  int64_t row = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    for (int64_t r = 0; r < ns[i]; ++r, ++row) {
      float* dst = m.data_.data() + (row / kP) * k * kP + row % kP;
      const float* src = ws[i].data() + r * k;
      for (int64_t j = 0; j < k; ++j) dst[j * kP] = src[j];
    }
  }
  const bool narrow = !codes.empty() && k % 32 == 0 &&
                      std::none_of(codes.begin(), codes.end(),
                                   [](const std::span<const BlockCodes>& c) { return c.empty(); });
  if (!narrow) return m;
  const int64_t blocks = k / 32;
  m.scales_.assign(static_cast<size_t>(m.panels_ * blocks * 2 * kP), 0.f);
  m.codes_.assign(static_cast<size_t>(m.panels_ * k * kP), 0);
  row = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    if (static_cast<int64_t>(codes[i].size()) != ns[i] * blocks) {
      throw std::invalid_argument("PackedMatrix: matrix " + std::to_string(i) + " has " +
                                  std::to_string(codes[i].size()) + " blocks, expected " +
                                  std::to_string(ns[i] * blocks));
    }
    for (int64_t r = 0; r < ns[i]; ++r, ++row) {
      const int64_t p = row / kP, c = row % kP;
      for (int64_t b = 0; b < blocks; ++b) {
        const BlockCodes& bc = codes[i][static_cast<size_t>(r * blocks + b)];
        float* dm = m.scales_.data() + (p * blocks + b) * 2 * kP;
        dm[c] = bc.d;
        dm[kP + c] = bc.m;
        int8_t* q = m.codes_.data() + (p * k + b * 32) * kP + c;
        for (int64_t j = 0; j < 32; ++j) q[j * kP] = bc.q[j];
      }
    }
  }
  return m;
}

void PackedMatrix::multiply(const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy,
                            Workers& workers) const {
  if (ldx < k_ || ldy < n_ || m < 0) throw std::invalid_argument("PackedMatrix::multiply: strides");
  if (m == 0) return;
  const Isa isa = best_isa();
  // Tasks are (row chunk, group of panels), handed out one at a time: on a shared machine a worker
  // whose core is taken by another job leaves its share to the others instead of holding up the
  // product (a static split waits for the slowest). Which worker computes an output does not
  // change its chain. About 4 groups per worker keep the tasks even; a group's panels reuse the
  // row chunk from the worker's cache.
  if (narrow() && m <= kNarrowRows && narrow_on.load(std::memory_order_relaxed)) {
    const int64_t blocks = k_ / 32;
    const int64_t group = std::max<int64_t>(1, panels_ / (4 * workers.size()));
    workers.for_each((panels_ + group - 1) / group, [&](int64_t task) {
      for (int64_t p = task * group; p < std::min(panels_, (task + 1) * group); ++p) {
        narrow_any(isa, x, ldx, m, scales_.data() + p * blocks * 2 * kP,
                   codes_.data() + p * k_ * kP, k_, y + p * kP, ldy, std::min(kP, n_ - p * kP));
      }
    });
    return;
  }
  const int64_t chunks = (m + kRowChunk - 1) / kRowChunk;
  const int64_t group = std::max<int64_t>(1, panels_ / (4 * workers.size()));
  const int64_t groups = (panels_ + group - 1) / group;
  workers.for_each(chunks * groups, [&](int64_t task) {
    const int64_t m0 = task / groups * kRowChunk, rows = std::min(kRowChunk, m - m0);
    const int64_t p0 = task % groups * group, p1 = std::min(panels_, p0 + group);
    for (int64_t p = p0; p < p1; ++p) {
      rows_any(isa, x + m0 * ldx, ldx, rows, data_.data() + p * k_ * kP, k_, y + m0 * ldy + p * kP,
               ldy, std::min(kP, n_ - p * kP));
    }
  });
}

}  // namespace metronome::quality
