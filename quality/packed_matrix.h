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
//
// A decode step multiplies a few rows: then every weight is read for a handful of FMAs and the
// product waits on memory. A matrix built with its GGUF block codes (ggml_blocks.h) keeps them too,
// in the same panels (per 32 inputs: each column's d and m, then 32 x 32 codes, one byte each, or
// two a byte where every code is 4-bit as in Q4_0 and Q4_1: 1.25 or 0.75 bytes a weight against
// 4), and a product of at most kNarrowRows rows reads those, rebuilding each weight as
// fma(d, q, m), the dequantized float bit for bit, in the same chain. A product of more rows
// rebuilds each panel so into a copy in the worker's cache and multiplies that: on this project's
// machine one core read memory at 3-6 GB/s (other jobs running), and the float panels of the
// logits alone are 113 MB.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "quality/ggml_blocks.h"

namespace metronome::quality {

class Workers;

class PackedMatrix {
 public:
  static constexpr int64_t kPanel = 32;
  // Products of at most this many rows read the block codes where the matrix has them.
  static constexpr int64_t kNarrowRows = 4;

  PackedMatrix() = default;
  // w: [n, k] row-major; codes: w's blocks (n k / 32, row by row) or empty.
  PackedMatrix(std::span<const float> w, int64_t n, int64_t k,
               std::span<const BlockCodes> codes = {});
  // Rows of several matrices of equal k stacked into one [sum of n, k] (e.g. Wq, Wk, Wv): one
  // product for all, each output computed exactly as by its own matrix. `codes`: one per matrix,
  // or empty; the narrow layout is kept only when every matrix has codes and k is a multiple of 32.
  static PackedMatrix stack(const std::vector<std::span<const float>>& ws,
                            const std::vector<int64_t>& ns, int64_t k,
                            const std::vector<std::span<const BlockCodes>>& codes = {});
  // Whether products of few rows read block codes.
  bool narrow() const { return !codes_.empty(); }

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
  std::vector<float> data_;    // [panels, k, kPanel]
  std::vector<float> scales_;  // [panels, k / 32, 2, kPanel]: each column's d, then its m
  bool nibbles_ = false;       // codes two a byte
  std::vector<int8_t> codes_;  // [panels, k, kPanel] bytes, or [panels, k, kPanel / 2] nibbles
};

// The same product on the calling thread, for weights laid out anew by each call (attention's keys
// and values, gathered from the paged cache straight into panels): `panels` holds W [n, k] as
// PackedMatrix lays out its float panels, ceil(n / kPanel) of them, kPanel x k floats each (the
// columns past n of the last panel are read but their outputs not written). The same chains and
// bytes as multiply().
void multiply_panels(const float* x, int64_t ldx, int64_t m, const float* panels, int64_t n,
                     int64_t k, float* y, int64_t ldy);

// The instruction set multiply() runs on here: "AVX-512", "AVX2+FMA" or "scalar" (the same bytes
// on each; a bench reports it).
const char* packed_matrix_isa();
// Runs multiply() on a narrower path than the CPU's widest ("" restores the widest): for tests that
// compare the paths' bytes and for benchmarks that compare one instruction set against another.
// False (nothing changed) for a path this CPU or build lacks. Not for use while a product runs.
bool use_packed_matrix_isa(const std::string& isa);
// Off: every product reads the float panels, as before block codes were kept (the same bytes, by
// construction): for benchmarks that compare the two. Not for use while a product runs.
void use_narrow_products(bool on);

}  // namespace metronome::quality
