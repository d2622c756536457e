#include "sim/admission/aimd.h"

#include <algorithm>
#include <cmath>

namespace metronome {

Aimd::Aimd(const AimdParams& c, double deadline_s)
    : c_(c),
      low_s_(c.low_fraction * deadline_s),
      high_s_(c.high_fraction * deadline_s),
      cap_(static_cast<double>(c.loop.initial_cap)) {}

int64_t Aimd::cap() const { return static_cast<int64_t>(std::floor(cap_ + 1e-9)); }

void Aimd::on_interval(const ControlSignal& s) {
  if (s.frames == 0) return;
  const double floor = static_cast<double>(c_.loop.floor);
  const double max_cap = static_cast<double>(c_.loop.max_cap);
  if (s.latency_s > high_s_) {
    if (cap_ >= static_cast<double>(s.live)) cap_ = std::max(floor, cap_ * c_.decrease_factor);
  } else if (s.latency_s < low_s_ && 2.0 * static_cast<double>(s.live) >= cap_ &&
             s.settled_latency_s() < low_s_) {
    cap_ = std::min(max_cap, cap_ + c_.increase);
  }
}

std::shared_ptr<const AdmissionPolicy> AimdPolicy::parse(JsonSection& a) {
  AimdParams p;
  p.loop = ControlLoop::parse(a);
  p.increase = a.in_range("increase", p.increase, 0, 1e9);
  p.decrease_factor = a.in_range("decrease_factor", p.decrease_factor, 0, 1);
  // Fractions of the deadline, not percentages: 90 would wait for 90 deadlines, which the
  // reported signal (at most silence_after_s) never reaches.
  p.low_fraction = a.in_range("low_fraction", p.low_fraction, 0, 10);
  p.high_fraction = a.in_range("high_fraction", p.high_fraction, 0, 10);
  if (!(p.decrease_factor > 0 && p.decrease_factor < 1))
    a.fail("decrease_factor", "a factor in (0, 1)");
  if (!(p.low_fraction < p.high_fraction)) a.fail("low_fraction", "less than high_fraction");
  return std::make_shared<AimdPolicy>(p);
}

void AimdPolicy::write(nlohmann::json& section) const {
  p_.loop.write(section);
  section.update({{"increase", p_.increase},
                  {"decrease_factor", p_.decrease_factor},
                  {"low_fraction", p_.low_fraction},
                  {"high_fraction", p_.high_fraction}});
}

}  // namespace metronome
