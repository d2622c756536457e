// workload.arrival.type = "poisson": callers at rate_per_s, each gap an exponential draw; after
// max_sessions callers (0: until the horizon) no more arrive.
#pragma once

#include <algorithm>

#include "sim/config/config_limits.h"
#include "sim/workload/arrivals.h"

namespace metronome {

class PoissonArrivals final : public ArrivalPolicy {
 public:
  PoissonArrivals(double start_s, double rate_per_s, int64_t max_sessions)
      : start_s_(start_s), rate_per_s_(rate_per_s), max_sessions_(max_sessions) {}

  std::string type() const override { return "poisson"; }
  void write(nlohmann::json& a) const override {
    a["start_s"] = start_s_;
    a["rate_per_s"] = rate_per_s_;
    a["max_sessions"] = max_sessions_;
  }
  std::unique_ptr<ArrivalProcess> make_process() const override {
    return std::make_unique<Process>(rate_per_s_, max_sessions_, start_s_);
  }
  double start_s() const override { return start_s_; }
  bool random() const override { return true; }
  double expected_callers(double horizon_s) const override {
    const double mean = rate_per_s_ * std::max(0.0, horizon_s - start_s_);
    return max_sessions_ > 0 ? std::min(mean, static_cast<double>(max_sessions_)) : mean;
  }
  // Little's law.
  double live_callers(double call_s) const override {
    const double live = rate_per_s_ * call_s;
    return max_sessions_ > 0 ? std::min(live, static_cast<double>(max_sessions_)) : live;
  }
  std::string check_size(double horizon_s) const override {
    if (max_sessions_ > 0 && static_cast<double>(max_sessions_) <= kMaxCallers) return "";
    const double expected = rate_per_s_ * std::max(0.0, horizon_s - start_s_);
    if (expected <= kMaxCallers) return "";
    return "rate_per_s: expected at most 1e7 callers per run, got rate_per_s x horizon_s = " +
           nlohmann::json(expected).dump() + "; lower the rate or the horizon, or set max_sessions";
  }

  static std::shared_ptr<const ArrivalPolicy> parse(JsonSection& a) {
    const double start = parse_start_s(a);
    const double rate = a.in_range("rate_per_s", std::nullopt, 0, 1e9);
    return std::make_shared<PoissonArrivals>(start, rate,
                                             a.integer("max_sessions", 0, 0, 100'000'000));
  }

 private:
  class Process final : public ArrivalProcess {
   public:
    Process(double rate, int64_t max, double start_s) : rate_(rate), max_(max), t_(start_s) {}
    std::optional<Time> next(Rng& rng) override {
      if (rate_ <= 0 || (max_ > 0 && count_ >= max_)) return std::nullopt;
      t_ += rng.exponential(1.0 / rate_);
      if (t_ > kMaxSeconds) return std::nullopt;
      ++count_;
      return from_seconds(t_);
    }

   private:
    double rate_;
    int64_t max_;
    int64_t count_ = 0;
    double t_;
  };

  double start_s_;
  double rate_per_s_;
  int64_t max_sessions_;
};

}  // namespace metronome
