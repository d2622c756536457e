// Dequantization of the ggml block formats a GGUF file stores its tensors in (the layouts of
// ggml-common.h, described here from the format, not copied):
//   F32   4 bytes per value.
//   F16   IEEE half, 2 bytes per value.
//   Q8_0  blocks of 32 values: half d, int8 q[32];            x[j] = d * q[j]            (34 bytes)
//   Q4_0  blocks of 32 values: half d, uint8 q[16];           x[j] = d * (nib[j] - 8)    (18 bytes)
//   Q4_1  blocks of 32 values: half d, half m, uint8 q[16];   x[j] = d * nib[j] + m      (20 bytes)
// where nib[j] is the low nibble of q[j] for j < 16 and the high nibble of q[j - 16] for j >= 16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace metronome::quality {

// ggml_type codes as they appear in a GGUF tensor header.
enum class GgmlType : uint32_t { kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8 };

// True for the types above; others (K-quants, ...) are not needed by the model this reads.
bool ggml_type_supported(uint32_t type);
std::string ggml_type_name(uint32_t type);
// Values per block (1 for F32/F16) and bytes per block.
int64_t ggml_block_values(GgmlType type);
int64_t ggml_block_bytes(GgmlType type);
// Bytes holding n values (n a multiple of the block size; throws otherwise).
int64_t ggml_bytes(GgmlType type, int64_t n);

float half_to_float(uint16_t h);

// out.size() values from the raw bytes (exactly ggml_bytes(type, out.size()) of them).
void dequantize(GgmlType type, std::span<const std::byte> raw, std::span<float> out);

// A block of 32 values as codes: value[j] = fma(d, q[j], m), equal bit for bit to dequantize()'s
// value (d * q is exact in float: an 11-bit half times an integer of at most 8 bits, so the add is
// the only rounding, fused or not). Q8_0: m = 0 and q its int8; Q4_0: q the nibble, m = -8 d;
// Q4_1: q the nibble and its m. A decode step reads these (1.25 bytes a value) instead of the
// dequantized floats (4 bytes): PackedMatrix's narrow product.
struct BlockCodes {
  float d = 0, m = 0;
  int8_t q[32] = {};
};
// True for the block types (Q4_0, Q4_1, Q8_0).
bool has_block_codes(GgmlType type);
// One entry per 32 values of the raw bytes (exactly ggml_bytes(type, 32 out.size()) of them).
void block_codes(GgmlType type, std::span<const std::byte> raw, std::span<BlockCodes> out);

}  // namespace metronome::quality
