// workload.duration.type = "exponential": call lengths exponential with mean mean_s.
#pragma once

#include "sim/workload/durations.h"

namespace metronome {

class ExponentialDuration final : public DurationPolicy {
 public:
  explicit ExponentialDuration(double mean_s) : mean_s_(mean_s) {}

  std::string type() const override { return "exponential"; }
  void write(nlohmann::json& d) const override { d["mean_s"] = mean_s_; }
  std::unique_ptr<DurationDistribution> make_distribution() const override {
    return std::make_unique<Distribution>(mean_s_);
  }
  double typical_s() const override { return mean_s_; }

  static std::shared_ptr<const DurationPolicy> parse(JsonSection& d) {
    return std::make_shared<ExponentialDuration>(parse_call_seconds(d, "mean_s"));
  }

 private:
  class Distribution final : public DurationDistribution {
   public:
    explicit Distribution(double mean) : mean_(mean) {}
    double sample(Rng& rng) override { return rng.exponential(mean_); }
    double mean() const override { return mean_; }

   private:
    double mean_;
  };

  double mean_s_;
};

}  // namespace metronome
