#include "sim/workload/durations.h"

#include <cmath>

namespace metronome {
namespace {

class Fixed final : public DurationDistribution {
 public:
  explicit Fixed(double s) : s_(s) {}
  double sample(Rng&) override { return s_; }
  double mean() const override { return s_; }

 private:
  double s_;
};

class Exponential final : public DurationDistribution {
 public:
  explicit Exponential(double mean) : mean_(mean) {}
  double sample(Rng& rng) override { return rng.exponential(mean_); }
  double mean() const override { return mean_; }

 private:
  double mean_;
};

// log(duration) ~ Normal(log(median), sigma): long calls have a heavy right tail.
class LogNormal final : public DurationDistribution {
 public:
  LogNormal(double median, double sigma) : mu_(std::log(median)), sigma_(sigma) {}
  double sample(Rng& rng) override { return std::exp(mu_ + sigma_ * rng.normal()); }
  double mean() const override { return std::exp(mu_ + 0.5 * sigma_ * sigma_); }

 private:
  double mu_;
  double sigma_;
};

}  // namespace

std::unique_ptr<DurationDistribution> make_duration_distribution(const DurationConfig& c) {
  if (c.type == "fixed") return std::make_unique<Fixed>(c.seconds);
  if (c.type == "exponential") return std::make_unique<Exponential>(c.mean_s);
  return std::make_unique<LogNormal>(c.median_s, c.sigma);
}

}  // namespace metronome
