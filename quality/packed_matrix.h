// The forward pass's matrix product, y[m, n] = x[m, k] W[n, k]^T (W as GGUF and PyTorch keep a
// linear layer: [out, in]), in float on weights dequantized once into column panels.
//
// Layout: W is cut into panels of kPanel = 32 output columns; panel p holds
//   data[(p k + j) kPanel + c] = W[p kPanel + c, j]   (zero for columns past n),
// so one step of the inner loop reads 32 consecutive weights (two AVX-512 registers; AVX2 takes
// the panel 16 columns at a time) and broadcasts one x value per row into two FMAs: every load is
// sequential, no horizontal sums.
//
// Summation order, the same on every path: each output is one chain of fused multiply-adds
//   acc = 0; for j = 0 .. k-1: acc = fma(x[m, j], W[n, j], acc)
// rounded once per term. Register blocking (how many rows and columns a kernel holds), the vector
// width (AVX-512, AVX2 or the scalar fallback), the thread count and the other rows of the batch
// change which lane or thread computes an output, never its chain: a row's result is the same
// bytes whether it is multiplied alone or with 800 others, on any of those paths.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace metronome::quality {

class Workers;

class PackedMatrix {
 public:
  static constexpr int64_t kPanel = 32;

  PackedMatrix() = default;
  // w: [n, k] row-major.
  PackedMatrix(std::span<const float> w, int64_t n, int64_t k);
  // Rows of several matrices of equal k stacked into one [sum of n, k] (e.g. Wq, Wk, Wv): one
  // product for all, each output computed exactly as by its own matrix.
  static PackedMatrix stack(const std::vector<std::span<const float>>& ws,
                            const std::vector<int64_t>& ns, int64_t k);

  int64_t rows() const { return n_; }  // n: outputs
  int64_t cols() const { return k_; }  // k: inputs
  // W[r, j], for lookups (the token embedding is read by row from the output matrix).
  float at(int64_t r, int64_t j) const {
    return data_[static_cast<size_t>(((r / kPanel) * k_ + j) * kPanel + r % kPanel)];
  }

  // y[i, c] = sum_j x[i, j] W[c, j] for i < m, c < n; x row stride ldx (>= k), y row stride ldy
  // (>= n). Blocks of rows and panels are shared among the workers (each output written by one).
  void multiply(const float* x, int64_t ldx, int64_t m, float* y, int64_t ldy,
                Workers& workers) const;

 private:
  int64_t n_ = 0, k_ = 0, panels_ = 0;
  std::vector<float> data_;  // [panels, k, kPanel]
};

// The instruction set multiply() runs on here: "AVX-512", "AVX2+FMA" or "scalar" (the same bytes
// on each; a bench reports it).
const char* packed_matrix_isa();
// Runs multiply() on a narrower path than the CPU's widest ("" restores the widest): for tests that
// compare the paths' bytes and for benchmarks that compare one instruction set against another.
// False (nothing changed) for a path this CPU or build lacks. Not for use while a product runs.
bool use_packed_matrix_isa(const std::string& isa);

}  // namespace metronome::quality
