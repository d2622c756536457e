// workload.duration.type = "lognormal": log(duration) ~ Normal(log(median_s), sigma), so long
// calls have a heavy right tail.
#pragma once

#include <cmath>

#include "sim/workload/durations.h"

namespace metronome {

class LogNormalDuration final : public DurationPolicy {
 public:
  LogNormalDuration(double median_s, double sigma) : median_s_(median_s), sigma_(sigma) {}

  std::string type() const override { return "lognormal"; }
  void write(nlohmann::json& d) const override {
    d["median_s"] = median_s_;
    d["sigma"] = sigma_;
  }
  std::unique_ptr<DurationDistribution> make_distribution() const override {
    return std::make_unique<Distribution>(median_s_, sigma_);
  }
  double typical_s() const override { return median_s_; }

  static std::shared_ptr<const DurationPolicy> parse(JsonSection& d) {
    const double median = parse_call_seconds(d, "median_s");
    return std::make_shared<LogNormalDuration>(median, d.in_range("sigma", std::nullopt, 0, 10));
  }

 private:
  class Distribution final : public DurationDistribution {
   public:
    Distribution(double median, double sigma) : mu_(std::log(median)), sigma_(sigma) {}
    double sample(Rng& rng) override { return std::exp(mu_ + sigma_ * rng.normal()); }
    double mean() const override { return std::exp(mu_ + 0.5 * sigma_ * sigma_); }

   private:
    double mu_;
    double sigma_;
  };

  double median_s_;
  double sigma_;
};

}  // namespace metronome
