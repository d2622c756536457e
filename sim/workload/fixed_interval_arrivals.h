// workload.arrival.type = "fixed_interval": one caller every interval_s (the paper's story: a new
// caller every 2 s), `sessions` in all.
#pragma once

#include <algorithm>

#include "sim/workload/arrivals.h"

namespace metronome {

class FixedIntervalArrivals final : public ArrivalPolicy {
 public:
  FixedIntervalArrivals(double start_s, int64_t sessions, double interval_s)
      : start_s_(start_s), sessions_(sessions), interval_s_(interval_s) {}

  std::string type() const override { return "fixed_interval"; }
  void write(nlohmann::json& a) const override {
    a["start_s"] = start_s_;
    a["sessions"] = sessions_;
    a["interval_s"] = interval_s_;
  }
  std::unique_ptr<ArrivalProcess> make_process() const override {
    return std::make_unique<Process>(sessions_, start_s_, interval_s_);
  }
  double start_s() const override { return start_s_; }
  bool random() const override { return false; }
  double live_callers(double call_s) const override {
    return std::min(static_cast<double>(sessions_), call_s / interval_s_);
  }
  double expected_callers(double) const override { return static_cast<double>(sessions_); }
  std::string check_size(double) const override { return check_sessions_size(sessions_); }

  static std::shared_ptr<const ArrivalPolicy> parse(JsonSection& a) {
    const double start = parse_start_s(a);
    const int64_t sessions = parse_sessions(a);
    return std::make_shared<FixedIntervalArrivals>(
        start, sessions, a.in_range("interval_s", std::nullopt, 1e-9, kMaxSeconds));
  }

 private:
  class Process final : public ArrivalProcess {
   public:
    Process(int64_t n, double start_s, double interval_s)
        : n_(n), start_(start_s), interval_(interval_s) {}
    std::optional<Time> next(Rng&) override {
      if (i_ >= n_) return std::nullopt;
      // Computed from the index, not accumulated, so the schedule does not drift.
      const double t = start_ + static_cast<double>(i_++) * interval_;
      if (t > kMaxSeconds) return std::nullopt;
      return from_seconds(t);
    }

   private:
    int64_t n_;
    int64_t i_ = 0;
    double start_;
    double interval_;
  };

  double start_s_;
  int64_t sessions_;
  double interval_s_;
};

}  // namespace metronome
