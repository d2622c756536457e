// The admission policies: one line each. The fields lists are the keys each type reads (besides
// type), so that under another type they are accepted and ignored.
#include "base/time.h"
#include "sim/admission/admission_policy.h"
#include "sim/admission/aimd.h"
#include "sim/admission/gradient.h"
#include "sim/admission/no_admission.h"
#include "sim/admission/static_cap.h"
#include "sim/config/config_limits.h"

namespace metronome {
namespace {

std::vector<std::string> loop_and(std::initializer_list<const char*> own) {
  std::vector<std::string> f(std::begin(ControlLoop::kFields), std::end(ControlLoop::kFields));
  f.insert(f.end(), own.begin(), own.end());
  return f;
}

}  // namespace

ControlLoop ControlLoop::parse(JsonSection& a) {
  ControlLoop c;
  c.interval_s = a.in_range("interval_s", c.interval_s, 1e-6, kMaxSeconds);
  c.signal = a.one_of("signal", c.signal, {"reported", "true"});
  c.quantile = a.in_range("quantile", c.quantile, 0, 1);
  c.initial_cap = a.integer("initial_cap", c.initial_cap, 0, kMaxCount);
  c.floor = a.integer("floor", c.floor, 0, kMaxCount);
  c.max_cap = a.integer("max_cap", c.max_cap, 1, kMaxCount);
  if (c.floor > c.max_cap) a.fail("floor", "at most max_cap");
  if (c.initial_cap < c.floor || c.initial_cap > c.max_cap) {
    a.fail("initial_cap", "between floor and max_cap");
  }
  return c;
}

void ControlLoop::write(nlohmann::json& section) const {
  section.update({{"interval_s", interval_s},
                  {"signal", signal},
                  {"quantile", quantile},
                  {"initial_cap", initial_cap},
                  {"floor", floor},
                  {"max_cap", max_cap}});
}

PolicyRegistry<AdmissionPolicy>& admission_policies() {
  static PolicyRegistry<AdmissionPolicy> r = [] {
    PolicyRegistry<AdmissionPolicy> p;
    p.add("none", {}, &NoAdmissionPolicy::parse);
    p.add("static", {"cap"}, &StaticCapPolicy::parse);
    p.add("aimd", loop_and({"increase", "decrease_factor", "low_fraction", "high_fraction"}),
          &AimdPolicy::parse);
    p.add("gradient", loop_and({"tolerance", "smoothing", "long_window"}), &GradientPolicy::parse);
    return p;
  }();
  return r;
}

}  // namespace metronome
