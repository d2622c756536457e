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
// The most bytes of rebuilt panels a task holds (a group of panels; at least one panel): with a
// chunk of x, about what a core's L2 keeps.
constexpr int64_t kGroupBytes = 512 * 1024;

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

// Code of input j, column c of a panel's codes: one byte each, or two 4-bit codes a byte (column
// c in the low nibble of byte c, column c + 16 in its high nibble: one load of 16 bytes gives the
// whole panel's codes to AVX-512, 8 bytes give AVX2 two vectors of 8).
int code_at(const int8_t* codes, bool nibbles, int64_t j, int64_t c) {
  if (!nibbles) return codes[j * kP + c];
  return (static_cast<uint8_t>(codes[j * kP / 2 + c % 16]) >> (c / 16 * 4)) & 0xF;
}

// The narrow product's reference: each weight rebuilt from its code as fma(d, q, m), then the same
// chain as tile_scalar. `scales` and `codes` point at one panel's.
void narrow_scalar(const float* x, int64_t ldx, int64_t rows, const float* scales,
                   const int8_t* codes, bool nibbles, int64_t k, float* y, int64_t ldy,
                   int64_t ncols) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < ncols; ++c) {
      float acc = 0.f;
      for (int64_t j = 0; j < k; ++j) {
        const float* dm = scales + (j / 32) * 2 * kP;
        const auto q = static_cast<float>(code_at(codes, nibbles, j, c));
        const float w = std::fma(dm[c], q, dm[kP + c]);
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

// The narrow product on AVX2: MR rows x NV vectors of 8 columns from column h of the panel. A
// decode step's row waits on its own chains, not on memory: each accumulator takes one FMA per
// input, 4 cycles apart, so a kernel must hold enough of them to keep both FMA pipes busy. Half a
// panel for one row (2 chains) ran at half AVX-512's speed; the whole panel (NV = 4) keeps 4 chains
// and 4 weight rebuilds in flight per input, and MR = 4 takes half a panel (8 accumulators of
// AVX2's 16 registers). Each weight is rebuilt once per input and used by every row.
template <int MR, int NV, bool kNibbles>
void narrow_avx2(const float* x, int64_t ldx, const float* scales, const int8_t* codes, int64_t k,
                 float* y, int64_t ldy, int64_t ncols, int64_t h) {
  static_assert(MR >= 1 && MR <= 4 && MR * NV <= 12 && (NV == 2 || NV == 4));
  // Named accumulators (row r, vector v), as in tile_avx2: an array's copy went to the stack.
  __m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00,
         a12 = a00, a13 = a00, a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00;
  for (int64_t kb = 0; kb < k / 32; ++kb) {
    const float* dm = scales + kb * 2 * kP + h;
    for (int64_t j = kb * 32; j < kb * 32 + 32; ++j) {
      const int8_t* q = codes + j * (kNibbles ? kP / 2 : kP);
      const __m256 x0 = _mm256_broadcast_ss(x + j);
      const __m256 x1 = MR > 1 ? _mm256_broadcast_ss(x + ldx + j) : x0;
      const __m256 x2 = MR > 2 ? _mm256_broadcast_ss(x + 2 * ldx + j) : x0;
      const __m256 x3 = MR > 3 ? _mm256_broadcast_ss(x + 3 * ldx + j) : x0;
      // Vector v's 8 weights, rebuilt, into each row's accumulator of that vector.
      const auto vec = [&](int v, __m256& r0, __m256& r1, __m256& r2, __m256& r3) {
        const int64_t c = h + 8 * v;  // the vector's first column in the panel
        __m256i qi;
        if constexpr (kNibbles) {
          qi = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + c % 16)));
          qi = c < 16 ? _mm256_and_si256(qi, _mm256_set1_epi32(0xF)) : _mm256_srli_epi32(qi, 4);
        } else {
          qi = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + c)));
        }
        const __m256 w = _mm256_fmadd_ps(_mm256_loadu_ps(dm + 8 * v), _mm256_cvtepi32_ps(qi),
                                         _mm256_loadu_ps(dm + kP + 8 * v));
        r0 = _mm256_fmadd_ps(x0, w, r0);
        if constexpr (MR > 1) r1 = _mm256_fmadd_ps(x1, w, r1);
        if constexpr (MR > 2) r2 = _mm256_fmadd_ps(x2, w, r2);
        if constexpr (MR > 3) r3 = _mm256_fmadd_ps(x3, w, r3);
      };
      vec(0, a00, a10, a20, a30);
      vec(1, a01, a11, a21, a31);
      if constexpr (NV > 2) {
        vec(2, a02, a12, a22, a30);
        vec(3, a03, a13, a23, a30);
      }
    }
  }
  const __m256 lo0[4] = {a00, a10, a20, a30}, hi0[4] = {a01, a11, a21, a31};
  store_rows_avx2<MR>(lo0, hi0, y, ldy, ncols);
  if (NV > 2 && ncols > 16) {
    const __m256 lo1[4] = {a02, a12, a22, a30}, hi1[4] = {a03, a13, a23, a30};
    store_rows_avx2<MR>(lo1, hi1, y + 16, ldy, ncols - 16);
  }
}

// The narrow product on AVX-512: MR rows (at most 4) x the whole panel.
template <int MR, bool kNibbles>
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
      __m512i q0, q1;
      if constexpr (kNibbles) {
        const __m512i b = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + j * kP / 2)));
        q0 = _mm512_and_si512(b, _mm512_set1_epi32(0xF));
        q1 = _mm512_srli_epi32(b, 4);
      } else {
        const int8_t* q = codes + j * kP;
        q0 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
        q1 = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16)));
      }
      const __m512 w0 = _mm512_fmadd_ps(d0, _mm512_cvtepi32_ps(q0), m0);
      const __m512 w1 = _mm512_fmadd_ps(d1, _mm512_cvtepi32_ps(q1), m1);
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
                const int8_t* codes, bool nibbles, int64_t k, float* y, int64_t ldy,
                int64_t ncols) {
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
  const auto by_layout = [&](auto kernel) {
    return nibbles ? kernel(std::true_type{}) : kernel(std::false_type{});
  };
  if (isa == Isa::kAvx512) {
    return by_layout([&](auto nib) {
      by_rows([&](auto mr) {
        narrow_avx512<decltype(mr)::value, decltype(nib)::value>(x, ldx, scales, codes, k, y, ldy,
                                                                 ncols);
      });
    });
  }
  if (isa == Isa::kAvx2) {
    return by_layout([&](auto nib) {
      constexpr bool kNib = decltype(nib)::value;
      if (rows == 4) {
        for (int64_t h = 0; h < ncols; h += 16)
          narrow_avx2<4, 2, kNib>(x, ldx, scales, codes, k, y + h, ldy, ncols - h, h);
        return;
      }
      by_rows([&](auto mr) {
        narrow_avx2<std::min(decltype(mr)::value, 3), 4, kNib>(x, ldx, scales, codes, k, y, ldy,
                                                               ncols, 0);
      });
    });
  }
#endif
  (void)isa;
  narrow_scalar(x, ldx, rows, scales, codes, nibbles, k, y, ldy, ncols);
}

// A panel's weights rebuilt from its codes, fma(d, q, m) each: the float panel's bytes
// (ggml_blocks.h), into out [k, kP]. A product of many rows multiplies this copy, which stays in
// the core's cache for all its rows, instead of streaming the float panel from memory: 0.75 bytes a
// weight from memory instead of 4, for about a twentieth more work at 64 rows.
void unpack_panel(const float* scales, const int8_t* codes, bool nibbles, int64_t k, float* out) {
#if METRONOME_X86_SIMD
  for (int64_t kb = 0; kb < k / 32; ++kb) {
    const float* dm = scales + kb * 2 * kP;
    const __m256 d0 = _mm256_loadu_ps(dm), d1 = _mm256_loadu_ps(dm + 8),
                 d2 = _mm256_loadu_ps(dm + 16), d3 = _mm256_loadu_ps(dm + 24);
    const __m256 m0 = _mm256_loadu_ps(dm + kP), m1 = _mm256_loadu_ps(dm + kP + 8),
                 m2 = _mm256_loadu_ps(dm + kP + 16), m3 = _mm256_loadu_ps(dm + kP + 24);
    for (int64_t j = kb * 32; j < kb * 32 + 32; ++j) {
      const auto bytes = [](const int8_t* b) {
        return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b));
      };
      __m256i q0, q1, q2, q3;
      if (nibbles) {
        const __m256i lo = _mm256_cvtepu8_epi32(bytes(codes + j * kP / 2)),
                      hi = _mm256_cvtepu8_epi32(bytes(codes + j * kP / 2 + 8));
        const __m256i low4 = _mm256_set1_epi32(0xF);
        q0 = _mm256_and_si256(lo, low4);
        q1 = _mm256_and_si256(hi, low4);
        q2 = _mm256_srli_epi32(lo, 4);
        q3 = _mm256_srli_epi32(hi, 4);
      } else {
        const int8_t* b = codes + j * kP;
        q0 = _mm256_cvtepi8_epi32(bytes(b));
        q1 = _mm256_cvtepi8_epi32(bytes(b + 8));
        q2 = _mm256_cvtepi8_epi32(bytes(b + 16));
        q3 = _mm256_cvtepi8_epi32(bytes(b + 24));
      }
      float* o = out + j * kP;
      _mm256_storeu_ps(o, _mm256_fmadd_ps(d0, _mm256_cvtepi32_ps(q0), m0));
      _mm256_storeu_ps(o + 8, _mm256_fmadd_ps(d1, _mm256_cvtepi32_ps(q1), m1));
      _mm256_storeu_ps(o + 16, _mm256_fmadd_ps(d2, _mm256_cvtepi32_ps(q2), m2));
      _mm256_storeu_ps(o + 24, _mm256_fmadd_ps(d3, _mm256_cvtepi32_ps(q3), m3));
    }
  }
#else
  for (int64_t j = 0; j < k; ++j) {
    const float* dm = scales + (j / 32) * 2 * kP;
    for (int64_t c = 0; c < kP; ++c) {
      out[j * kP + c] =
          std::fma(dm[c], static_cast<float>(code_at(codes, nibbles, j, c)), dm[kP + c]);
    }
  }
#endif
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

void multiply_panels(const float* x, int64_t ldx, int64_t m, const float* panels, int64_t n,
                     int64_t k, float* y, int64_t ldy) {
  const Isa isa = best_isa();
  for (int64_t p = 0; p * kP < n; ++p) {
    rows_any(isa, x, ldx, m, panels + p * k * kP, k, y + p * kP, ldy, std::min(kP, n - p * kP));
  }
}

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
  // Two codes a byte where every code is a nibble (Q4_0, Q4_1): a decode step reads 0.75 bytes a
  // weight instead of 1.25.
  m.nibbles_ = std::all_of(codes.begin(), codes.end(), [](const std::span<const BlockCodes>& c) {
    return std::all_of(c.begin(), c.end(), [](const BlockCodes& bc) {
      return std::all_of(bc.q, bc.q + 32, [](int8_t q) { return q >= 0 && q <= 0xF; });
    });
  });
  const int64_t code_bytes = m.nibbles_ ? kP / 2 : kP;  // a panel's codes of one input
  m.codes_.assign(static_cast<size_t>(m.panels_ * k * code_bytes), 0);
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
        int8_t* q = m.codes_.data() + (p * k + b * 32) * code_bytes;
        for (int64_t j = 0; j < 32; ++j) {
          if (m.nibbles_) {
            q[j * code_bytes + c % 16] =
                static_cast<int8_t>(q[j * code_bytes + c % 16] | bc.q[j] << (c / 16 * 4));
          } else {
            q[j * code_bytes + c] = bc.q[j];
          }
        }
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
  const bool from_codes = narrow() && narrow_on.load(std::memory_order_relaxed);
  const int64_t blocks = k_ / 32, code_bytes = nibbles_ ? kP / 2 : kP;
  if (from_codes && m <= kNarrowRows) {
    const int64_t group = std::max<int64_t>(1, panels_ / (4 * workers.size()));
    workers.for_each((panels_ + group - 1) / group, [&](int64_t task) {
      for (int64_t p = task * group; p < std::min(panels_, (task + 1) * group); ++p) {
        narrow_any(isa, x, ldx, m, scales_.data() + p * blocks * 2 * kP,
                   codes_.data() + p * k_ * code_bytes, nibbles_, k_, y + p * kP, ldy,
                   std::min(kP, n_ - p * kP));
      }
    });
    return;
  }
  // A task is a group of panels for every row: its panels are rebuilt from their codes once, not
  // once per row chunk (a step of 13 sessions of 64 tokens has 9 chunks), and each chunk of x then
  // meets the group's panels while it is in the worker's cache. The group is capped so that its
  // rebuilt panels stay there beside a chunk.
  const int64_t panel_bytes = k_ * kP * static_cast<int64_t>(sizeof(float));
  const int64_t group = std::clamp<int64_t>(panels_ / (4 * workers.size()), 1,
                                            std::max<int64_t>(1, kGroupBytes / panel_bytes));
  const int64_t groups = (panels_ + group - 1) / group;
  workers.for_each(groups, [&](int64_t task) {
    const int64_t p0 = task * group, p1 = std::min(panels_, p0 + group);
    thread_local std::vector<float> unpacked;
    const float* panels = data_.data() + p0 * k_ * kP;
    if (from_codes) {
      unpacked.resize(static_cast<size_t>((p1 - p0) * k_ * kP));
      for (int64_t p = p0; p < p1; ++p) {
        unpack_panel(scales_.data() + p * blocks * 2 * kP, codes_.data() + p * k_ * code_bytes,
                     nibbles_, k_, unpacked.data() + (p - p0) * k_ * kP);
      }
      panels = unpacked.data();
    }
    for (int64_t m0 = 0; m0 < m; m0 += kRowChunk) {
      multiply_panels(x + m0 * ldx, ldx, std::min(kRowChunk, m - m0), panels,
                      std::min(n_, p1 * kP) - p0 * kP, k_, y + m0 * ldy + p0 * kP, ldy);
    }
  });
}

}  // namespace metronome::quality
