#include "quality/ggml_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace metronome::quality {
namespace {

std::vector<std::byte> bytes(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (const int x : v) out.push_back(static_cast<std::byte>(x));
  return out;
}

TEST(HalfToFloat, ClosedForms) {
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);                  // largest normal
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(half_to_float(0x03FF), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(half_to_float(0x8000), -0.0f);
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
  EXPECT_EQ(half_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
}

TEST(Dequantize, Q4_1IsScaleTimesNibblePlusMin) {
  // d = 0.5 (0x3800), m = -1 (0xBC00); q[j] = j | (15 - j) << 4.
  auto raw = bytes({0x00, 0x38, 0x00, 0xBC});
  for (int j = 0; j < 16; ++j) raw.push_back(static_cast<std::byte>(j | (15 - j) << 4));
  std::vector<float> out(32);
  dequantize(GgmlType::kQ4_1, raw, out);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 0.5f * j - 1.f) << j;
    EXPECT_EQ(out[16 + j], 0.5f * (15 - j) - 1.f) << j;
  }
}

TEST(Dequantize, Q8_0IsScaleTimesSignedByte) {
  auto raw = bytes({0x00, 0x34});  // d = 0.25
  for (int j = 0; j < 32; ++j)
    raw.push_back(static_cast<std::byte>(static_cast<int8_t>(j * 8 - 128)));
  std::vector<float> out(32);
  dequantize(GgmlType::kQ8_0, raw, out);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(out[j], 0.25f * static_cast<float>(j * 8 - 128)) << j;
}

TEST(Dequantize, Q4_0IsCentredOnEight) {
  auto raw = bytes({0x00, 0x40});  // d = 2
  for (int j = 0; j < 16; ++j) raw.push_back(static_cast<std::byte>(j | j << 4));
  std::vector<float> out(32);
  dequantize(GgmlType::kQ4_0, raw, out);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], 2.f * static_cast<float>(j - 8));
    EXPECT_EQ(out[16 + j], 2.f * static_cast<float>(j - 8));
  }
}

TEST(Dequantize, SizesAreChecked) {
  std::vector<float> out(32);
  EXPECT_THROW(dequantize(GgmlType::kQ4_1, bytes({0, 0}), out), std::invalid_argument);
  std::vector<float> odd(31);
  EXPECT_THROW(ggml_bytes(GgmlType::kQ8_0, 31), std::invalid_argument);
  EXPECT_EQ(ggml_bytes(GgmlType::kQ4_1, 64), 40);
  EXPECT_EQ(ggml_bytes(GgmlType::kF16, 3), 6);
}

}  // namespace
}  // namespace metronome::quality
