// A replica's own admission policy with a fleet controller's control loop run on it: the engine
// measures the loop's quantile of each interval's frames (reported or true latency) exactly as it
// would for its own AIMD (Engine::gauges().signal_s), and the cap stays the policy's. The fleet's
// gateway reads those measurements (sim/fleet/fleet_aimd.h); the replica decides nothing with
// them. The resolved scenario is the wrapped policy's: type and fields are its own.
#pragma once

#include <memory>
#include <utility>

#include "sim/admission/admission_policy.h"

namespace metronome {

class MeasuredController : public AdmissionController {
 public:
  explicit MeasuredController(std::unique_ptr<AdmissionController> own) : own_(std::move(own)) {}
  int64_t cap() const override { return own_->cap(); }
  bool adaptive() const override { return true; }  // the engine runs the loop only for these

 private:
  std::unique_ptr<AdmissionController> own_;
};

class MeasuredAdmissionPolicy final : public AdmissionPolicy {
 public:
  MeasuredAdmissionPolicy(std::shared_ptr<const AdmissionPolicy> own, const ControlLoop& loop)
      : own_(std::move(own)), loop_(loop) {}
  std::string type() const override { return own_->type(); }
  void write(nlohmann::json& section) const override { own_->write(section); }
  std::unique_ptr<AdmissionController> make_controller(double deadline_s) const override {
    return std::make_unique<MeasuredController>(own_->make_controller(deadline_s));
  }
  bool limits() const override { return own_->limits(); }
  const ControlLoop* control_loop() const override { return &loop_; }
  double congestion_fraction() const override { return own_->congestion_fraction(); }

 private:
  std::shared_ptr<const AdmissionPolicy> own_;
  ControlLoop loop_;
};

}  // namespace metronome
