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

}  // namespace metronome::quality
