// The largest of many floats, in 32 running lanes: a single chain of maxes waits each max's
// latency (4 cycles) per input, which made the log-softmax's max over a vocabulary row as slow as
// its exps. Lanes are independent chains the compiler vectorizes; max is exact, so any grouping
// gives the same value (a zero's sign aside, which no caller's difference or exp can see).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace metronome::quality {

inline float lane_max(const float* x, int64_t n) {
  constexpr int kLanes = 32;
  float lane[kLanes];
  std::fill(lane, lane + kLanes, -std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) lane[l] = lane[l] < x[j + l] ? x[j + l] : lane[l];
  }
  for (int l = 0; j < n; ++j, ++l) lane[l] = lane[l] < x[j] ? x[j] : lane[l];
  return *std::max_element(lane, lane + kLanes);
}

}  // namespace metronome::quality
