// Host-side bf16 / fp16 rounding for CPU references and tests (no CUDA headers needed).
//
// The GPU kernels store K, V, Q and outputs in bf16 (or fp16); a CPU reference fed the same values
// must see exactly what the GPU sees, so tests draw random floats, round them with these functions,
// and give the rounded values to both sides. Round-to-nearest-even, as __float2bfloat16_rn does.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace metronome::kernels {

enum class Dtype { kBF16, kF16 };

inline const char* dtype_name(Dtype d) { return d == Dtype::kBF16 ? "bf16" : "f16"; }

inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);  // keep it a (quiet) NaN
  const uint32_t rounding = 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

inline float bf16_bits_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t{b} << 16); }

// IEEE binary16, round-to-nearest-even, with subnormals and overflow to infinity.
inline uint16_t float_to_f16_bits(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7fffffff;
  if (abs >= 0x7f800000) return static_cast<uint16_t>(sign | (abs > 0x7f800000 ? 0x7e00 : 0x7c00));
  if (abs >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // rounds past 65504
  if (abs < 0x38800000) {  // below 2^-14: subnormal half (or zero)
    // Scale so that the half's subnormal step (2^-24) becomes 1, then round to an integer.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // exact: power of two
    const float r = std::nearbyint(scaled);                        // ties-to-even by default
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(r));
  }
  const uint32_t exp = ((abs >> 23) - 127 + 15);
  uint32_t mant = abs & 0x7fffff;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // carries into the exponent correctly
  return static_cast<uint16_t>(sign | h);
}

inline float f16_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000 | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

inline uint16_t float_to_bits(float f, Dtype d) {
  return d == Dtype::kBF16 ? float_to_bf16_bits(f) : float_to_f16_bits(f);
}
inline float bits_to_float(uint16_t b, Dtype d) {
  return d == Dtype::kBF16 ? bf16_bits_to_float(b) : f16_bits_to_float(b);
}
// The float that storing f in dtype d and reading it back gives.
inline float round_to(float f, Dtype d) { return bits_to_float(float_to_bits(f, d), d); }

}  // namespace metronome::kernels
