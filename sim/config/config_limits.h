// Bounds every config reader applies: past them a value is a typo, not a workload.
#pragma once

#include <cstdint>

namespace metronome {

inline constexpr int64_t kMaxCount = 1'000'000'000'000LL;
inline constexpr double kMaxBytes = 1e18;
// Callers one run may bring: past it the run's time and memory are unbounded in practice.
inline constexpr double kMaxCallers = 1e7;
// The largest seed a scenario takes (it is written as a JSON integer).
inline constexpr uint64_t kMaxSeed = 9'223'372'036'854'775'807ULL;
// Runs that take seeds seed, seed + 1, ... must stay within it: the last is seed + count - 1.
inline bool seeds_fit(uint64_t seed, int64_t count) {
  return count <= 1 || seed <= kMaxSeed - static_cast<uint64_t>(count - 1);
}

}  // namespace metronome
