// The largest of many floats, in 32 running lanes: a single chain of maxes waits each max's
// latency (4 cycles) per input, which made the log-softmax's max over a vocabulary row, and the
// attention softmax's over its keys, cost as much as their exps. Lanes are independent chains the
// compiler vectorizes; max is exact, so any grouping gives the same value (but for the sign of a
// zero max, which changes no exp and no difference with a non-zero input).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

namespace metronome::quality {

namespace detail {
template <class Input>
float lanes_max(int64_t n, Input at) {
  constexpr int kLanes = 32;
  float lane[kLanes];
  std::fill(lane, lane + kLanes, -std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float v = at(j + l);
      lane[l] = lane[l] < v ? v : lane[l];
    }
  }
  for (int l = 0; j < n; ++j, ++l) {
    const float v = at(j);
    lane[l] = lane[l] < v ? v : lane[l];
  }
  // Halves folded onto halves (vectors, not a chain of 31 compares: short rows would pay them).
  for (int w = kLanes / 2; w >= 1; w /= 2) {
    for (int l = 0; l < w; ++l) lane[l] = lane[l] < lane[l + w] ? lane[l + w] : lane[l];
  }
  return lane[0];
}
}  // namespace detail

// max of x[0, n); -inf when n is 0.
inline float lane_max(const float* x, int64_t n) {
  return detail::lanes_max(n, [x](int64_t j) { return x[j]; });
}

// The same over the inputs whose keep[j] is all ones (the softmax's mask: all ones or zero); -inf
// when none is. A select of bits, not a branch: every input is read, and the loop vectorizes.
inline float lane_max(const float* x, const uint32_t* keep, int64_t n) {
  constexpr uint32_t kMinusInf = std::bit_cast<uint32_t>(-std::numeric_limits<float>::infinity());
  return detail::lanes_max(n, [x, keep](int64_t j) {
    return std::bit_cast<float>((std::bit_cast<uint32_t>(x[j]) & keep[j]) | (kMinusInf & ~keep[j]));
  });
}

}  // namespace metronome::quality
