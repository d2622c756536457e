// CPU references (double accumulation) for the dense parts of a decoder layer.
#pragma once

#include <cstdint>
#include <span>

namespace metronome::kernels::reference {

// Linear layer as PyTorch stores it: y[m, n] = sum_k x[m, k] * w[n, k]  (w is [out, in]).
void linear_ref(std::span<const float> x, std::span<const float> w, int32_t m, int32_t n, int32_t k,
                std::span<float> y);

// SwiGLU: out[m, j] = silu(gate_up[m, j]) * gate_up[m, f + j], gate_up: [m, 2f], out: [m, f].
void silu_mul_ref(std::span<const float> gate_up, int32_t m, int32_t f, std::span<float> out);

}  // namespace metronome::kernels::reference
