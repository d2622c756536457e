// admission.type = "gradient": a delay-gradient limiter in the style of Netflix concurrency-limits'
// Gradient2, as a baseline that does not know the deadline. Per control interval, with short = the
// interval's latency quantile and long = its exponential average over long_window intervals:
//   gradient = clamp(tolerance x long / short, 0.5, 1)
//   target   = cap x gradient + sqrt(cap)                      (sqrt(cap): the allowed queue)
//   cap      <- clamp((1 - smoothing) x cap + smoothing x target, floor, max_cap)
// When long > 2 x short (the load dropped), long decays by 5% per interval so it can track down.
// Like AIMD it only grows while the cap is in use (2 x live >= cap), and holds on empty intervals.
#pragma once

#include "sim/admission/admission_policy.h"

namespace metronome {

struct GradientParams {
  ControlLoop loop;
  double tolerance = 1.5;   // how much short-term latency may exceed long-term before shrinking
  double smoothing = 0.2;   // weight of the new target per interval
  double long_window = 60;  // intervals in the long-term average
};

class Gradient : public AdmissionController {
 public:
  explicit Gradient(const GradientParams& c);
  int64_t cap() const override;
  bool adaptive() const override { return true; }
  void on_interval(const ControlSignal& s) override;

 private:
  GradientParams c_;
  double cap_;
  double long_s_ = 0;
  bool primed_ = false;
};

class GradientPolicy final : public AdmissionPolicy {
 public:
  explicit GradientPolicy(const GradientParams& p) : p_(p) {}
  std::string type() const override { return "gradient"; }
  void write(nlohmann::json& section) const override;
  std::unique_ptr<AdmissionController> make_controller(double) const override {
    return std::make_unique<Gradient>(p_);
  }
  const ControlLoop* control_loop() const override { return &p_.loop; }
  static std::shared_ptr<const AdmissionPolicy> parse(JsonSection& a);

 private:
  GradientParams p_;
};

}  // namespace metronome
