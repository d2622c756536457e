#include "kernels/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace metronome::kernels {
namespace {

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xc000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even mantissa (1.0).
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_FLOAT_EQ(round_to(3.14159f, Dtype::kBF16), 3.140625f);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
}

TEST(F16, RoundTripsAndSaturates) {
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(float_to_f16_bits(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(0x1p-25f), 0x0000);  // tie to even: zero
  EXPECT_EQ(float_to_f16_bits(-0.5f), 0xb800);
  EXPECT_EQ(float_to_f16_bits(1.0f + 0x1p-11f), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_f16_bits(1.0f + 3 * 0x1p-11f), 0x3c02);
  for (uint32_t b = 0; b < 0x7c00; b += 7) {
    EXPECT_EQ(float_to_f16_bits(f16_bits_to_float(static_cast<uint16_t>(b))), b);
  }
}

}  // namespace
}  // namespace metronome::kernels
