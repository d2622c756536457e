// Bounds every config reader applies: past them a value is a typo, not a workload.
#pragma once

#include <cstdint>

namespace metronome {

inline constexpr int64_t kMaxCount = 1'000'000'000'000LL;
inline constexpr double kMaxBytes = 1e18;
// Callers one run may bring: past it the run's time and memory are unbounded in practice.
inline constexpr double kMaxCallers = 1e7;

}  // namespace metronome
