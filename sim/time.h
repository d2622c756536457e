// Simulated time: integer nanoseconds, so that sums of many small steps never drift.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace metronome {

using Time = int64_t;  // nanoseconds since the start of a run

inline constexpr Time kNanosPerSecond = 1'000'000'000;
inline constexpr Time kNever = std::numeric_limits<Time>::max();
// Largest span a scenario may request: about 292 years fits int64 ns; keep headroom for sums.
inline constexpr double kMaxSeconds = 1.0e9;

// Rounds to the nearest nanosecond. Callers validate range (config does) before converting.
inline Time from_seconds(double s) { return static_cast<Time>(std::llround(s * 1e9)); }
inline double to_seconds(Time t) { return static_cast<double>(t) * 1e-9; }

}  // namespace metronome
