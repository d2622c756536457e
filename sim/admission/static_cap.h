// admission.type = "static": a fixed cap (admission.cap sessions), e.g. from `metronome capacity`.
#pragma once

#include "sim/admission/admission_policy.h"
#include "sim/config/config_limits.h"

namespace metronome {

class StaticCap : public AdmissionController {
 public:
  explicit StaticCap(int64_t cap) : cap_(cap) {}
  int64_t cap() const override { return cap_; }

 private:
  int64_t cap_;
};

class StaticCapPolicy final : public AdmissionPolicy {
 public:
  explicit StaticCapPolicy(int64_t cap) : cap_(cap) {}
  std::string type() const override { return "static"; }
  void write(nlohmann::json& section) const override { section["cap"] = cap_; }
  std::unique_ptr<AdmissionController> make_controller(double) const override {
    return std::make_unique<StaticCap>(cap_);
  }
  static std::shared_ptr<const AdmissionPolicy> parse(JsonSection& a) {
    return std::make_shared<StaticCapPolicy>(a.integer("cap", std::nullopt, 0, kMaxCount));
  }

 private:
  int64_t cap_;
};

}  // namespace metronome
