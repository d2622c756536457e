// The real-time engine's clock: integer nanoseconds since start(), as the simulator counts time
// (base/time.h). WallClock reads std::chrono::steady_clock and really sleeps; tests substitute a
// clock that jumps, so the engine's accounting can be checked without waiting.
#pragma once

#include <chrono>
#include <thread>

#include "base/time.h"

namespace metronome::replay {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual void start() = 0;              // time 0 is now
  virtual Time now() const = 0;          // ns since start()
  virtual void sleep_until(Time t) = 0;  // returns at or after t (at once if t <= now)
};

class WallClock final : public Clock {
 public:
  void start() override { origin_ = std::chrono::steady_clock::now(); }
  Time now() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                origin_)
        .count();
  }
  void sleep_until(Time t) override {
    std::this_thread::sleep_until(origin_ + std::chrono::nanoseconds(t));
  }

 private:
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
};

}  // namespace metronome::replay
