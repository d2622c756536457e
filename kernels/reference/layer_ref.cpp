#include "kernels/reference/layer_ref.h"

#include <cmath>
#include <stdexcept>

namespace metronome::kernels::reference {

void linear_ref(std::span<const float> x, std::span<const float> w, int32_t m, int32_t n, int32_t k,
                std::span<float> y) {
  const size_t mk = static_cast<size_t>(m) * k, nk = static_cast<size_t>(n) * k;
  if (x.size() < mk || w.size() < nk || y.size() < static_cast<size_t>(m) * n) {
    throw std::invalid_argument("linear_ref: spans too small");
  }
  for (int32_t i = 0; i < m; ++i) {
    const float* xi = x.data() + static_cast<size_t>(i) * k;
    for (int32_t j = 0; j < n; ++j) {
      const float* wj = w.data() + static_cast<size_t>(j) * k;
      double acc = 0.0;
      for (int32_t t = 0; t < k; ++t) acc += double{xi[t]} * double{wj[t]};
      y[static_cast<size_t>(i) * n + j] = static_cast<float>(acc);
    }
  }
}

void silu_mul_ref(std::span<const float> gate_up, int32_t m, int32_t f, std::span<float> out) {
  if (gate_up.size() < static_cast<size_t>(m) * 2 * f || out.size() < static_cast<size_t>(m) * f) {
    throw std::invalid_argument("silu_mul_ref: spans too small");
  }
  for (int32_t i = 0; i < m; ++i) {
    for (int32_t j = 0; j < f; ++j) {
      const double g = gate_up[static_cast<size_t>(i) * 2 * f + j];
      const double u = gate_up[static_cast<size_t>(i) * 2 * f + f + j];
      out[static_cast<size_t>(i) * f + j] = static_cast<float>(g / (1.0 + std::exp(-g)) * u);
    }
  }
}

}  // namespace metronome::kernels::reference
