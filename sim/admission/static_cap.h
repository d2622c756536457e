// admission.type = "static": a fixed cap (admission.cap sessions), e.g. from `metronome capacity`.
#pragma once

#include "sim/admission/admission_controller.h"

namespace metronome {

class StaticCap : public AdmissionController {
 public:
  explicit StaticCap(int64_t cap) : cap_(cap) {}
  int64_t cap() const override { return cap_; }

 private:
  int64_t cap_;
};

}  // namespace metronome
