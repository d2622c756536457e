// A long sum in double, in eight running lanes: lane l adds the inputs at l, l + 8, l + 16, ...
// in order, and the lanes are added in one fixed tree at the end. A single chain of adds waits
// each add's latency (4 cycles) per input, the softmax's and log-softmax's largest cost; eight
// lanes are independent chains the compiler vectorizes without reordering any add (no fast-math),
// so the bits are the same on every instruction set and thread count.
#pragma once

#include <cstdint>

namespace metronome::quality {

template <class T>
double lane_sum(const T* x, int64_t n) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) lane[l] += static_cast<double>(x[j + l]);
  }
  for (int l = 0; j < n; ++j, ++l) lane[l] += static_cast<double>(x[j]);
  return ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
}

}  // namespace metronome::quality
