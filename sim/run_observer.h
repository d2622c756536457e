// Hooks through which a run streams its time series and trace, so memory does not grow with the
// horizon. The engine calls them; writers (CSV, Perfetto) implement them.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace metronome {

// State at a sample instant and counts over the interval that ended there.
struct Sample {
  double t_s = 0;
  int64_t pool_used_blocks = 0;
  double pool_fraction = 0;
  int64_t live_sessions = 0;
  int64_t stalled_sessions = 0;
  int64_t frames_due = 0;      // frames released in the interval
  int64_t frames_served = 0;   // frames whose output was produced in the interval
  int64_t frames_on_time = 0;  // of those, within the deadline
  int64_t tokens_produced = 0;
  double reported_p50_s = 0, reported_p99_s = 0;  // what a health monitor sees
  double true_p50_s = 0, true_p99_s = 0;          // time to useful output (served frames)
  double reported_miss_rate = 0;                  // reported latency over the deadline
  double silent_fraction = 0;                     // due frames without on-time output
  double tokens_per_frame = 0;                    // tokens produced per due frame
  int64_t admission_cap = -1;     // the admission cap at the sample instant; -1: no cap
  int64_t sessions_rejected = 0;  // callers turned away at the cap in the interval
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void on_sample(const Sample&) {}
  virtual void on_step(Time /*start*/, Time /*end*/, int64_t /*batch*/, int64_t /*pool_used*/) {}
  virtual void on_stall(Time /*t*/, int64_t /*stalled_sessions*/) {}  // a frame found no blocks
  virtual void on_preempt(Time /*t*/, int64_t /*session*/, int64_t /*freed_blocks*/) {}
};

// Fans one run's callbacks out to several observers.
class ObserverList : public RunObserver {
 public:
  void add(RunObserver* o) {
    if (o) list_.push_back(o);
  }
  void on_sample(const Sample& x) override {
    for (auto* o : list_) o->on_sample(x);
  }
  void on_step(Time a, Time b, int64_t n, int64_t u) override {
    for (auto* o : list_) o->on_step(a, b, n, u);
  }
  void on_stall(Time t, int64_t n) override {
    for (auto* o : list_) o->on_stall(t, n);
  }
  void on_preempt(Time t, int64_t s, int64_t f) override {
    for (auto* o : list_) o->on_preempt(t, s, f);
  }
  bool empty() const { return list_.empty(); }

 private:
  std::vector<RunObserver*> list_;
};

}  // namespace metronome
