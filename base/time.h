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
// llround's result (halves away from zero) without its libm call, which every engine step makes:
// below 2^63 the truncation and the remainder are exact.
inline Time from_seconds(double s) {
  const double ns = s * 1e9;
  if (!(std::fabs(ns) < 9.2e18)) return static_cast<Time>(std::llround(ns));
  Time t = static_cast<Time>(ns);
  const double rest = ns - static_cast<double>(t);
  if (rest >= 0.5) ++t;
  if (rest <= -0.5) --t;
  return t;
}
constexpr double to_seconds(Time t) { return static_cast<double>(t) * 1e-9; }

}  // namespace metronome
