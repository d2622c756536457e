#include "sim/admission/admission_controller.h"

#include "sim/admission/aimd.h"
#include "sim/admission/gradient.h"
#include "sim/admission/no_admission.h"
#include "sim/admission/static_cap.h"
#include "sim/config_error.h"

namespace metronome {

std::unique_ptr<AdmissionController> make_admission_controller(const AdmissionConfig& c,
                                                               double deadline_s) {
  if (c.type == "none") return std::make_unique<NoAdmission>();
  if (c.type == "static") return std::make_unique<StaticCap>(c.cap);
  if (c.type == "aimd") return std::make_unique<Aimd>(c, deadline_s);
  if (c.type == "gradient") return std::make_unique<Gradient>(c);
  throw ConfigError("admission.type \"" + c.type + "\": unknown controller");
}

}  // namespace metronome
