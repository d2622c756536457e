// admission.type = "none": every caller is admitted (the engine's behaviour without a controller).
#pragma once

#include "sim/admission/admission_policy.h"

namespace metronome {

class NoAdmission : public AdmissionController {
 public:
  int64_t cap() const override { return kNoCap; }
};

class NoAdmissionPolicy final : public AdmissionPolicy {
 public:
  std::string type() const override { return "none"; }
  void write(nlohmann::json&) const override {}
  std::unique_ptr<AdmissionController> make_controller(double) const override {
    return std::make_unique<NoAdmission>();
  }
  bool limits() const override { return false; }
  static std::shared_ptr<const AdmissionPolicy> parse(JsonSection&) {
    return std::make_shared<NoAdmissionPolicy>();
  }
};

}  // namespace metronome
