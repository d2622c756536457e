#include "quality/ggml_blocks.h"

#include <bit>
#include <cstring>
#include <stdexcept>

namespace metronome::quality {

bool ggml_type_supported(uint32_t type) {
  return type == 0 || type == 1 || type == 2 || type == 3 || type == 8;
}

std::string ggml_type_name(uint32_t type) {
  switch (type) {
    case 0:
      return "F32";
    case 1:
      return "F16";
    case 2:
      return "Q4_0";
    case 3:
      return "Q4_1";
    case 8:
      return "Q8_0";
    default:
      return "ggml type " + std::to_string(type);
  }
}

int64_t ggml_block_values(GgmlType type) {
  return type == GgmlType::kF32 || type == GgmlType::kF16 ? 1 : 32;
}

int64_t ggml_block_bytes(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
      return 4;
    case GgmlType::kF16:
      return 2;
    case GgmlType::kQ4_0:
      return 18;
    case GgmlType::kQ4_1:
      return 20;
    case GgmlType::kQ8_0:
      return 34;
  }
  throw std::invalid_argument("ggml_block_bytes: unknown type");
}

int64_t ggml_bytes(GgmlType type, int64_t n) {
  const int64_t per = ggml_block_values(type);
  if (n < 0 || n % per != 0) {
    throw std::invalid_argument(ggml_type_name(static_cast<uint32_t>(type)) + ": " +
                                std::to_string(n) + " values is not a whole number of blocks");
  }
  return n / per * ggml_block_bytes(type);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3FFu) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  return std::bit_cast<float>(bits);
}

namespace {

uint16_t read_u16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);  // GGUF is little-endian, as is every host this builds for
  return v;
}

}  // namespace

bool has_block_codes(GgmlType type) {
  return type == GgmlType::kQ4_0 || type == GgmlType::kQ4_1 || type == GgmlType::kQ8_0;
}

void block_codes(GgmlType type, std::span<const std::byte> raw, std::span<BlockCodes> out) {
  const auto n = static_cast<int64_t>(out.size());
  if (!has_block_codes(type) || static_cast<int64_t>(raw.size()) != ggml_bytes(type, 32 * n)) {
    throw std::invalid_argument("block_codes: " + std::to_string(raw.size()) + " bytes for " +
                                std::to_string(n) + " blocks of " +
                                ggml_type_name(static_cast<uint32_t>(type)));
  }
  const std::byte* p = raw.data();
  const int64_t stride = ggml_block_bytes(type);
  for (int64_t b = 0; b < n; ++b, p += stride) {
    BlockCodes& c = out[static_cast<size_t>(b)];
    c.d = half_to_float(read_u16(p));
    if (type == GgmlType::kQ8_0) {
      c.m = 0;
      for (int j = 0; j < 32; ++j) c.q[j] = static_cast<int8_t>(p[2 + j]);
      continue;
    }
    const bool offset = type == GgmlType::kQ4_1;
    c.m = offset ? half_to_float(read_u16(p + 2)) : -8.f * c.d;
    const std::byte* q = p + (offset ? 4 : 2);
    for (int j = 0; j < 16; ++j) {
      const auto byte = static_cast<uint8_t>(q[j]);
      c.q[j] = static_cast<int8_t>(byte & 0xF);
      c.q[16 + j] = static_cast<int8_t>(byte >> 4);
    }
  }
}

void dequantize(GgmlType type, std::span<const std::byte> raw, std::span<float> out) {
  const int64_t n = static_cast<int64_t>(out.size());
  if (static_cast<int64_t>(raw.size()) != ggml_bytes(type, n)) {
    throw std::invalid_argument("dequantize: " + std::to_string(raw.size()) + " bytes for " +
                                std::to_string(n) + " values of " +
                                ggml_type_name(static_cast<uint32_t>(type)));
  }
  const std::byte* p = raw.data();
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(out.data(), p, out.size() * 4);
      return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) out[i] = half_to_float(read_u16(p + 2 * i));
      return;
    case GgmlType::kQ8_0:
      for (int64_t b = 0; b < n / 32; ++b, p += 34) {
        const float d = half_to_float(read_u16(p));
        for (int j = 0; j < 32; ++j) {
          out[b * 32 + j] = d * static_cast<float>(static_cast<int8_t>(p[2 + j]));
        }
      }
      return;
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1: {
      const bool offset = type == GgmlType::kQ4_1;
      const int64_t stride = ggml_block_bytes(type);
      for (int64_t b = 0; b < n / 32; ++b, p += stride) {
        const float d = half_to_float(read_u16(p));
        const float m = offset ? half_to_float(read_u16(p + 2)) : -8.f * d;
        const std::byte* q = p + (offset ? 4 : 2);
        for (int j = 0; j < 16; ++j) {
          const auto byte = static_cast<uint8_t>(q[j]);
          out[b * 32 + j] = d * static_cast<float>(byte & 0xF) + m;
          out[b * 32 + 16 + j] = d * static_cast<float>(byte >> 4) + m;
        }
      }
      return;
    }
  }
  throw std::invalid_argument("dequantize: unsupported type");
}

}  // namespace metronome::quality
