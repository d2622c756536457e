// Wall-clock tests and a loaded machine. A replay's assertions (the cliff at frame 42, saturation
// within 10% of the simulator) hold whenever the engine keeps real time; when the machine cannot
// give it the CPU (load average 11 on 2 cores: steps five times slower than calibrated, the engine
// 3.6 s behind), frames queue, the pool never fills within the horizon, and the run says nothing
// about the engine. The engine measures its own lag (the oldest frame's wait before its step
// began); past one frame period it was not running in real time, and the test is skipped with
// that number instead of failing.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "replay/replay.h"

namespace metronome::replay {

// Empty when the run kept real time; otherwise why not.
inline std::string real_time_lost(const ReplayRun& r) {
  const double period = r.real.workload.frame_period_s;
  if (r.measured.max_start_lag_s <= period) return {};
  return "the machine could not keep real time: the engine started a step " +
         std::to_string(r.measured.max_start_lag_s) + " s after its oldest frame's release (more " +
         "than one frame period, " + std::to_string(period) +
         " s); the assertions need a real-time run (is the machine loaded?)";
}

}  // namespace metronome::replay

// Skips the test (with the measured lag) when `run` did not keep real time.
#define METRONOME_SKIP_UNLESS_REAL_TIME(run)                                            \
  do {                                                                                  \
    if (const std::string why = ::metronome::replay::real_time_lost(run); !why.empty()) \
      GTEST_SKIP() << why;                                                              \
  } while (0)
