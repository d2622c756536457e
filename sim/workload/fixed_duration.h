// workload.duration.type = "fixed": every call lasts `seconds`.
#pragma once

#include "sim/workload/durations.h"

namespace metronome {

class FixedDuration final : public DurationPolicy {
 public:
  explicit FixedDuration(double seconds) : seconds_(seconds) {}

  std::string type() const override { return "fixed"; }
  void write(nlohmann::json& d) const override { d["seconds"] = seconds_; }
  std::unique_ptr<DurationDistribution> make_distribution() const override {
    return std::make_unique<Distribution>(seconds_);
  }
  std::optional<double> fixed_s() const override { return seconds_; }
  double typical_s() const override { return seconds_; }

  static std::shared_ptr<const DurationPolicy> parse(JsonSection& d) {
    return std::make_shared<FixedDuration>(parse_call_seconds(d, "seconds"));
  }

 private:
  class Distribution final : public DurationDistribution {
   public:
    explicit Distribution(double s) : s_(s) {}
    double sample(Rng&) override { return s_; }
    double mean() const override { return s_; }

   private:
    double s_;
  };

  double seconds_;
};

}  // namespace metronome
