// Hooks through which a run streams its time series and trace, so memory does not grow with the
// horizon. The engine calls them; writers (CSV, Perfetto) implement them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "base/time.h"
#include "sim/output/latency_histogram.h"

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
  double true_p50_s = 0, true_p99_s = 0;          // time to useful output (+inf: censored)
  double reported_miss_rate = 0;                  // reported latency over the deadline
  double silent_fraction = 0;                     // due frames without on-time output
  double tokens_per_frame = 0;                    // tokens produced per due frame
  int64_t admission_cap = -1;     // the admission cap at the sample instant; -1: no cap
  int64_t sessions_rejected = 0;  // callers turned away at the cap in the interval
  // The latency the admission controller read at its last control interval (admission.quantile
  // of the interval's frames, e.g. the reported p95); NaN before any, +inf when censored.
  double admission_signal_s = std::numeric_limits<double>::quiet_NaN();
};

// The interval statistics both engines derive the same way: `answered` holds the latencies of the
// frames answered in time, `padded` the frames padded with silence at silence_after_s,
// `answered_late` those answered in time but after the deadline, and `truth` the true latencies
// of the interval's frames (unanswered ones censored); frames_due and tokens_produced are already
// set.
inline void fill_interval_stats(Sample& x, LatencyHistogram answered, const LatencyHistogram& truth,
                                int64_t padded, int64_t answered_late, double silence_after_s,
                                double deadline_s) {
  if (padded > 0) answered.add(silence_after_s, padded);
  x.reported_p50_s = answered.percentile(0.50);
  x.reported_p99_s = answered.percentile(0.99);
  x.true_p50_s = truth.percentile(0.50);
  x.true_p99_s = truth.percentile(0.99);
  const double due = static_cast<double>(std::max<int64_t>(1, x.frames_due));
  const double silent = std::min(1.0, static_cast<double>(padded) / due);
  // Reported over the deadline: answered after it, or padded after it.
  const int64_t missed = answered_late + (silence_after_s > deadline_s ? padded : 0);
  x.reported_miss_rate = x.frames_due > 0 ? std::min(1.0, static_cast<double>(missed) / due) : 0.0;
  x.silent_fraction = x.frames_due > 0 ? silent : 0.0;
  x.tokens_per_frame = x.frames_due > 0 ? static_cast<double>(x.tokens_produced) / due : 0.0;
}

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void on_sample(const Sample&) {}
  virtual void on_step(Time /*start*/, Time /*end*/, int64_t /*batch*/, int64_t /*pool_used*/) {}
  virtual void on_stall(Time /*t*/, int64_t /*stalled_sessions*/) {}  // a frame found no blocks
  virtual void on_preempt(Time /*t*/, int64_t /*session*/, int64_t /*freed_blocks*/) {}
};

// Keeps a run's time series in memory (a replay's, whose runs are bounded).
class SampleCollector : public RunObserver {
 public:
  void on_sample(const Sample& x) override { samples.push_back(x); }
  std::vector<Sample> samples;
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
