// admission.type = "none": every caller is admitted (the engine's behaviour without a controller).
#pragma once

#include "sim/admission/admission_controller.h"

namespace metronome {

class NoAdmission : public AdmissionController {
 public:
  int64_t cap() const override { return kNoCap; }
};

}  // namespace metronome
